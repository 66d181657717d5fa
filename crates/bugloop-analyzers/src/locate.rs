//! Where the analyzers' programs are: bugloop's analyzers directory first (what
//! `scripts/setup` installs at pinned versions), then `PATH`. A program found outside the
//! system paths the sandbox shows is shown to it read-only, the file alone.

use std::path::{Path, PathBuf};

/// A program found on the host, and what the sandbox must be shown to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// As found (a toolchain's proxy keeps its name: rustup's `cargo` is a link to `rustup`).
    pub path: PathBuf,
    /// Shown read-only in the sandbox (the analyzers directory, or the program and what its
    /// link points to), when outside the system paths.
    pub mounts: Vec<PathBuf>,
}

/// Where programs are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolbox {
    /// bugloop's analyzers directory (its `bin/` holds the programs).
    pub dir: Option<PathBuf>,
    /// The directories of `PATH`.
    pub path: Vec<PathBuf>,
}

impl Toolbox {
    /// `BUGLOOP_ANALYZERS_DIR`, else `$XDG_DATA_HOME/bugloop/analyzers`, else
    /// `~/.local/share/bugloop/analyzers`; and `PATH`.
    pub fn from_env() -> Toolbox {
        let dir = std::env::var_os("BUGLOOP_ANALYZERS_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_DATA_HOME")
                    .map(PathBuf::from)
                    .filter(|d| d.is_absolute())
                    .map(|d| d.join("bugloop/analyzers"))
            })
            .or_else(|| {
                // Never a relative home: it would be inside the repository under review.
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|h| h.is_absolute())
                    .map(|h| h.join(".local/share/bugloop/analyzers"))
            });
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        Toolbox { dir, path }
    }

    /// Why `program` was not found: where it was looked for, and how to install it (`install`).
    /// The analyzers directory is named, so a run with another `HOME` says where it looked.
    pub fn not_found(&self, program: &str, install: &str) -> String {
        if Path::new(program).is_absolute() {
            return format!("{program} is not there ({install})");
        }
        match &self.dir {
            Some(dir) => format!(
                "{program} is not installed: not in {} nor on PATH ({install}; \
                 BUGLOOP_ANALYZERS_DIR or XDG_DATA_HOME chooses the directory)",
                dir.join("bin").display()
            ),
            None => format!("{program} is not installed: not on PATH ({install})"),
        }
    }

    /// The program `name`, if installed.
    pub fn find(&self, name: &str) -> Option<Installed> {
        if Path::new(name).is_absolute() {
            let path = PathBuf::from(name);
            return is_executable(&path).then(|| Installed {
                mounts: outside_system_paths(&path),
                path,
            });
        }
        if let Some(dir) = &self.dir {
            let candidate = dir.join("bin").join(name);
            if is_executable(&candidate) {
                return Some(Installed {
                    path: candidate,
                    mounts: vec![dir.clone()],
                });
            }
        }
        for dir in &self.path {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Some(Installed {
                    mounts: outside_system_paths(&candidate),
                    path: candidate,
                });
            }
        }
        None
    }
}

/// What the sandbox must be shown to run `program`: it and what its link points to, those of
/// them outside the system paths it shows anyway.
fn outside_system_paths(program: &Path) -> Vec<PathBuf> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let system = |p: &Path| {
        bugloop_sandbox::SYSTEM_PATHS
            .iter()
            .any(|s| p.starts_with(s))
    };
    let mut mounts: Vec<PathBuf> = [program.to_path_buf(), real]
        .into_iter()
        .filter(|p| !system(p))
        .collect();
    mounts.dedup();
    mounts
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Each built-in analyzer's program and version, or why it is not there (for `bugloop doctor`).
pub fn installed_versions(toolbox: &Toolbox) -> Vec<(&'static str, Result<String, String>)> {
    crate::BUILT_IN
        .iter()
        .map(|tool| {
            let Some(installed) = toolbox.find(tool.program) else {
                return (
                    tool.name,
                    Err(toolbox.not_found(tool.program, tool.install)),
                );
            };
            // Our own pinned binary or a system toolchain's, asked only for its version.
            let output = std::process::Command::new(&installed.path)
                .args(tool.version_args)
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .output();
            let version = match output {
                Ok(out) if out.status.success() => {
                    let text = String::from_utf8_lossy(&out.stdout);
                    // The first line that names a version (shellcheck's first is its title).
                    let first = text
                        .lines()
                        .find(|l| l.chars().any(|c| c.is_ascii_digit()))
                        .unwrap_or_default()
                        .trim()
                        .to_owned();
                    Ok(format!("{first} ({})", installed.path.display()))
                }
                Ok(out) => Err(format!(
                    "{} does not answer `{}`: {}",
                    installed.path.display(),
                    tool.version_args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or_default()
                )),
                Err(error) => Err(format!("{}: {error}", installed.path.display())),
            };
            (tool.name, version)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_analyzers_directory_comes_before_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (ours, path) = (dir.path().join("ours"), dir.path().join("path"));
        std::fs::create_dir_all(ours.join("bin")).unwrap();
        std::fs::create_dir_all(&path).unwrap();
        for file in [
            ours.join("bin/ruff"),
            path.join("ruff"),
            path.join("shellcheck"),
        ] {
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(path.join("zizmor"), "not executable").unwrap();
        let toolbox = Toolbox {
            dir: Some(ours.clone()),
            path: vec![path],
        };
        let ruff = toolbox.find("ruff").unwrap();
        assert_eq!(
            (ruff.path, ruff.mounts),
            (ours.join("bin/ruff"), vec![ours])
        );
        let shellcheck = toolbox.find("shellcheck").unwrap();
        assert_eq!(shellcheck.mounts, vec![shellcheck.path.clone()]);
        assert_eq!(toolbox.find("zizmor"), None);
        assert_eq!(toolbox.find("hadolint"), None);
    }
}
