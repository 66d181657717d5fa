//! What this machine can do to confine a process (for the runner and `bugloop doctor`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;

use serde::Serialize;

/// The result of trying each confinement mechanism once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// The `bwrap` binary, if installed.
    pub bwrap: Option<PathBuf>,
    /// `bwrap` started a process with new user/network/PID namespaces and a read-only root.
    pub bwrap_works: bool,
    /// Why confinement is unavailable, when it is.
    pub problem: Option<String>,
}

impl Capabilities {
    pub fn can_confine(&self) -> bool {
        self.bwrap_works
    }
}

/// Probes once per process (the answer does not change while we run).
pub fn probe() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(probe_now)
}

fn probe_now() -> Capabilities {
    let bwrap = find_in_path("bwrap");
    let Some(path) = bwrap.clone() else {
        return Capabilities {
            bwrap: None,
            bwrap_works: false,
            problem: Some(
                "bubblewrap (bwrap) is not installed; on Debian/Ubuntu: apt-get install bubblewrap"
                    .into(),
            ),
        };
    };
    // The very arguments the runner uses, so a probe that passes means commands will start.
    let workspace = std::env::temp_dir();
    let settings = crate::run::SandboxSettings::new(&workspace, crate::run::Policy::ReadOnly);
    let trial = std::process::Command::new(&path)
        .args(crate::run::bwrap_arguments(
            &settings, &workspace, &workspace,
        ))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match trial {
        Ok(output) if output.status.success() => Capabilities {
            bwrap,
            bwrap_works: true,
            problem: None,
        },
        Ok(output) => Capabilities {
            bwrap,
            bwrap_works: false,
            problem: Some(format!(
                "bwrap cannot create namespaces here: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )),
        },
        Err(error) => Capabilities {
            bwrap,
            bwrap_works: false,
            problem: Some(format!("bwrap does not start: {error}")),
        },
    }
}

pub(crate) fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
