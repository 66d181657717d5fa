//! What a sandboxed process sees of the file system: a minimal read-only view of the system (the
//! directories programs and toolchains need, `/etc` without anything that is not world-readable
//! or that holds credentials), the configured home directories with credentials files masked, the
//! workspace, and a sanitized git directory in place of the repository's own. Everything else of
//! the host (other repositories, `/run` and its sockets, `/root`, `/var`) is simply not there.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::etc::ETC_DENIED;
use crate::reach::world_readable;
use crate::settings::{OBJECTS_MOUNT, Policy, SandboxSettings};

/// System directories shown read-only (when they exist). `/etc` is filtered (see [`etc_view`]).
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix",
];

/// The system directory under which `path` is shown, read-only, to every command the sandbox
/// runs (`/opt`, `/usr`, ...), if it is, as given or once its links are followed: what one
/// repository's code must not read (the server's clones, their tokens, its queue) cannot be
/// there.
pub fn shown_to_every_command(path: &Path) -> Option<&'static str> {
    // The nearest part of the path that exists, its links followed, and the rest as given.
    let resolved = path.ancestors().find_map(|existing| {
        let real = existing.canonicalize().ok()?;
        Some(real.join(path.strip_prefix(existing).ok()?))
    });
    SYSTEM_PATHS.iter().copied().find(|system| {
        path.starts_with(system) || resolved.as_ref().is_some_and(|r| r.starts_with(system))
    })
}

/// File names under visible home directories that hold credentials and are never shown.
const CREDENTIAL_NAMES: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.json",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".boto",
    ".s3cfg",
    ".htpasswd",
    ".env",
    ".envrc",
    ".histfile",
    "settings-security.xml",
    "service_principal_entries.json",
    "hosts.yml",
    "auth.json",
    ".docker",
    ".ssh",
    ".gnupg",
    ".aws",
    ".kube",
];

/// Files that are configuration but may hold a token or password (cargo's `config.toml`,
/// git's, pip's, Maven's `settings.xml`, yarn's, hub's, Terraform's): hidden when they do.
const MAYBE_SECRET_CONFIG: &[&str] = &[
    "config.toml",
    "config",
    "pip.conf",
    ".gitconfig",
    "settings.xml",
    ".yarnrc",
    ".yarnrc.yml",
    ".condarc",
    ".gemrc",
    ".terraformrc",
    "hub",
];

fn holds_a_secret(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| {
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        ["token", "password", "secret", "authorization", "_auth"]
            .iter()
            .any(|word| text.contains(word))
    })
}

/// A name that says it holds a secret, whatever its case: the listed ones, any name with
/// `credential` or `secret` in it (gcloud's `credentials.db` and
/// `application_default_credentials.json`, `client_secret.json`), tokens, keys and key stores,
/// SSH private keys by their usual names (`id_*`, `*_ed25519`, `*_rsa`, ...), `.env` files and
/// shell histories (a password typed once stays there).
fn is_credential_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_NAMES.contains(&name.as_str())
        || name.contains("credential")
        || name.contains("secret")
        || name.contains("token")
        || name.starts_with("id_")
        || name.starts_with(".env.")
        || [
            ".pem",
            ".key",
            ".token",
            ".p12",
            ".pfx",
            ".jks",
            ".keystore",
            ".ppk",
            ".kdbx",
            "_ed25519",
            "_ecdsa",
            "_rsa",
            "_dsa",
            "_key",
            "_history",
            ".tfstate",
            "rclone.conf",
            "gradle.properties",
        ]
        .iter()
        .any(|ending| name.ends_with(ending))
}

/// Inside an `.ssh` directory shown on purpose, only what names other hosts is shown: host keys
/// and public keys; a private key is not named by any rule.
fn hidden_in_ssh(dir: &Path, name: &str) -> bool {
    dir.file_name().is_some_and(|d| d == ".ssh")
        && !(name.starts_with("known_hosts") || name == "config" || name.ends_with(".pub"))
}

/// Trees of downloaded packages and toolchains (cargo's registry and git checkouts, rustup's
/// toolchains, go's module cache, npm's cache): code as public as the workspace, whose names
/// (`cancellation_token/`, `allow_credentials.rs`) would read as secrets. Not walked, and shown.
const PACKAGE_TREES: &[&str] = &[
    "registry/src",
    "registry/cache",
    "registry/index",
    "git/checkouts",
    "git/db",
    ".rustup/toolchains",
    "pkg/mod",
    ".npm/_cacache",
];

fn is_package_tree(dir: &Path) -> bool {
    let text = dir.to_string_lossy();
    PACKAGE_TREES.iter().any(|tree| text.ends_with(tree))
}

/// How deep a shown home directory is walked for credentials, and how many entries at most:
/// a directory the walk does not reach is hidden whole, so nothing deeper goes unchecked.
const HOME_DEPTH: usize = 16;
const HOME_ENTRIES: usize = 200_000;

/// What is shown of one tree: the entries to bind and, inside them, what to hide again.
#[derive(Debug, Default, Clone)]
struct Filtered {
    /// (host path, symlink target) for symlinks, (host path, None) for binds.
    shown: Vec<(PathBuf, Option<PathBuf>)>,
    /// Files (masked by an empty file) and directories (masked by an empty tmpfs).
    masked_files: Vec<PathBuf>,
    masked_dirs: Vec<PathBuf>,
}

/// Walks `dir` up to `depth` levels and collects what must be hidden inside it: anything that is
/// not world-readable (root inside a user namespace still owns root's files) and, where
/// `credentials` is set, files named like credentials.
fn collect_masks(dir: &Path, depth: usize, credentials: bool, into: &mut Filtered) {
    let mut left = usize::MAX;
    walk_masks(dir, depth, credentials, &mut left, into);
}

/// [`collect_masks`] with `left` entries to go; for credentials, a directory past the depth or
/// the entries is hidden whole.
fn walk_masks(dir: &Path, depth: usize, credentials: bool, left: &mut usize, into: &mut Filtered) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        // A directory it cannot list is not known to be free of credentials.
        if credentials {
            into.masked_dirs.push(dir.to_path_buf());
        }
        return;
    };
    for entry in entries {
        *left = left.saturating_sub(1);
        let Ok(entry) = entry else {
            if credentials {
                into.masked_dirs.push(dir.to_path_buf());
                return;
            }
            continue;
        };
        let path = entry.path();
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if credentials && metadata.is_dir() && is_package_tree(&path) {
            continue;
        }
        if metadata.file_type().is_symlink() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let unreached = credentials && metadata.is_dir() && (depth <= 1 || *left == 0);
        let hide = !world_readable(&metadata)
            || unreached
            || (credentials && (is_credential_name(&name) || hidden_in_ssh(dir, &name)))
            || (credentials
                && metadata.is_file()
                && MAYBE_SECRET_CONFIG.contains(&name.as_str())
                && holds_a_secret(&path));
        if hide {
            if metadata.is_dir() {
                into.masked_dirs.push(path);
            } else {
                into.masked_files.push(path);
            }
        } else if metadata.is_dir() && depth > 1 {
            walk_masks(&path, depth - 1, credentials, left, into);
        }
    }
}

/// `/etc` as the sandbox sees it when no copy of it can be made (see `etc`): its
/// world-readable entries but the denied ones; inside them, whatever is not world-readable
/// masked. Computed once per process (the walk costs a few ms).
fn etc_view() -> &'static Filtered {
    static ETC: OnceLock<Filtered> = OnceLock::new();
    ETC.get_or_init(|| {
        let mut view = Filtered::default();
        let Ok(entries) = std::fs::read_dir("/etc") else {
            return view;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if ETC_DENIED.contains(&name.as_str()) {
                continue;
            }
            let path = entry.path();
            let Ok(metadata) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if metadata.file_type().is_symlink() {
                if let Ok(target) = std::fs::read_link(&path) {
                    view.shown.push((path, Some(target)));
                }
                continue;
            }
            if !world_readable(&metadata) {
                continue;
            }
            if metadata.is_dir() {
                collect_masks(&path, 8, false, &mut view);
            }
            view.shown.push((path, None));
        }
        view
    })
}

/// A visible home directory with credentials masked (cached: a toolchain directory is large and
/// does not change while bugloop runs).
fn home_view(dir: &Path) -> Filtered {
    static VIEWS: OnceLock<std::sync::Mutex<std::collections::HashMap<PathBuf, Filtered>>> =
        OnceLock::new();
    let views = VIEWS.get_or_init(Default::default);
    let mut views = views
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    views
        .entry(dir.to_path_buf())
        .or_insert_with(|| {
            let mut view = Filtered::default();
            view.shown.push((dir.to_path_buf(), None));
            let mut left = HOME_ENTRIES;
            walk_masks(dir, HOME_DEPTH, true, &mut left, &mut view);
            view
        })
        .clone()
}

/// bubblewrap's arguments.
#[derive(Debug, Default)]
pub(crate) struct Arguments {
    pub args: Vec<String>,
    /// Where sources are staged (bugloop as root, see `stage`): each bind's source is then
    /// `<stage>/<n>`, and `staged[n]` is the real source the caller mounts there first.
    stage: Option<PathBuf>,
    pub staged: Vec<PathBuf>,
}

impl Arguments {
    fn push(&mut self, items: &[&str]) {
        self.args.extend(items.iter().map(|s| (*s).to_owned()));
    }

    fn path(&mut self, option: &str, path: &Path) {
        self.args.push(option.to_owned());
        self.args.push(path.display().to_string());
    }

    /// Shows `source` at `dest`, read-only unless `writable`; from the stage when there is one
    /// and the sandbox's user cannot open `source` itself.
    fn bind(&mut self, source: &Path, dest: &Path, writable: bool) {
        let option = if writable { "--bind" } else { "--ro-bind" };
        self.args.push(option.to_owned());
        match &self.stage {
            Some(stage) if !crate::reach::sandbox_can_open(source, writable) => {
                self.args.push(
                    stage
                        .join(self.staged.len().to_string())
                        .display()
                        .to_string(),
                );
                self.staged.push(source.to_path_buf());
            }
            _ => self.args.push(source.display().to_string()),
        }
        self.args.push(dest.display().to_string());
    }

    /// `world`: the entries are world-readable system files, bound by path whoever binds them.
    fn filtered(&mut self, view: &Filtered, world: bool) {
        for (path, target) in &view.shown {
            match target {
                Some(target) => {
                    self.path("--symlink", target);
                    self.args.push(path.display().to_string());
                }
                None if world => self.path_bind(path),
                None => self.bind(path, path, false),
            }
        }
        for dir in &view.masked_dirs {
            self.path("--tmpfs", dir);
            self.path("--remount-ro", dir);
        }
        for file in &view.masked_files {
            self.args.push("--ro-bind".into());
            self.args.push("/dev/null".into());
            self.args.push(file.display().to_string());
        }
    }

    fn path_bind(&mut self, path: &Path) {
        self.args.push("--ro-bind".into());
        self.args.push(path.display().to_string());
        self.args.push(path.display().to_string());
    }
}

/// bubblewrap's arguments for a command in `workspace` with working directory `cwd`; with a
/// `stage`, every source that is not a world-readable system path is bound from there.
///
/// The order of the parts is the security of the view: a later mount shadows an earlier one, so
/// the masks come after what they mask and the git directory after the workspace it hides in.
pub(crate) fn bwrap_arguments(
    settings: &SandboxSettings,
    workspace: &Path,
    cwd: &Path,
    stage: Option<&Path>,
) -> Arguments {
    let mut a = Arguments {
        stage: stage.map(Path::to_path_buf),
        ..Arguments::default()
    };
    system_view(&mut a, settings);
    devices_proc_and_tmp(&mut a, settings);
    let home = hidden_home(&mut a, settings);
    for shown in &settings.read_only_paths {
        if shown.exists() {
            a.bind(shown, shown, false);
        }
    }
    a.bind(
        workspace,
        workspace,
        settings.policy == Policy::WorkspaceWrite,
    );
    sanitized_git_directory(&mut a, settings, workspace);
    // The home directory's tmpfs is made read-only only now: what is bound above may sit inside
    // it (a repository under $HOME, its task trees in its git directory), and a read-only tmpfs
    // has no room for their mount points. A remount changes that one mount, not those inside
    // it. A workspace that is the home directory, or holds it, covers it whole.
    if let Some(home) = home.filter(|home| !home.starts_with(workspace)) {
        a.path("--remount-ro", &home);
    }
    a.push(&["--remount-ro", "/"]);
    isolation(&mut a);
    a.path("--chdir", cwd);
    a
}

/// The system directories, `/etc` filtered and the configured extra system paths: the root of
/// the sandbox is bubblewrap's own empty tmpfs, so only what is listed here exists.
fn system_view(a: &mut Arguments, settings: &SandboxSettings) {
    for system in SYSTEM_PATHS.iter().map(Path::new) {
        match std::fs::symlink_metadata(system) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(system) {
                    a.path("--symlink", &target);
                    a.args.push(system.display().to_string());
                }
            }
            Ok(m) if m.is_dir() => a.path_bind(system),
            _ => {}
        }
    }
    // One filtered copy bound whole; where none can be made, each entry on its own.
    match crate::etc::etc_copy(&settings.workspace) {
        Some(copy) => {
            a.args.push("--ro-bind".into());
            a.args.push(copy.display().to_string());
            a.args.push("/etc".into());
        }
        None => a.filtered(etc_view(), true),
    }
    for extra in &settings.system_paths {
        if extra.exists() {
            a.bind(extra, extra, false);
        }
    }
}

/// A fresh /dev with its shared memory sized and the rest read-only; a fresh /proc whose kernel
/// settings are read-only (the host's, which they are anyway); a sized /tmp.
fn devices_proc_and_tmp(a: &mut Arguments, settings: &SandboxSettings) {
    a.push(&["--dev", "/dev"]);
    a.push(&[
        "--size",
        &settings.limits.tmp_bytes.to_string(),
        "--tmpfs",
        "/dev/shm",
    ]);
    a.push(&["--remount-ro", "/dev", "--proc", "/proc"]);
    for kernel in [
        "/proc/sys",
        "/proc/sysrq-trigger",
        "/proc/irq",
        "/proc/bus",
        "/proc/fs",
    ] {
        if Path::new(kernel).exists() {
            a.push(&["--ro-bind", kernel, kernel]);
        }
    }
    a.push(&[
        "--size",
        &settings.limits.tmp_bytes.to_string(),
        "--tmpfs",
        "/tmp",
    ]);
}

/// The home directory exists (programs expect $HOME) but is empty, but for the configured
/// directories, shown read-only with their credentials masked. Returns the home directory,
/// whose tmpfs the caller makes read-only once everything inside it is mounted.
fn hidden_home(a: &mut Arguments, settings: &SandboxSettings) -> Option<PathBuf> {
    let home = settings
        .home_dir
        .as_ref()
        .filter(|h| h.is_dir() && h.as_path() != Path::new("/"))?;
    a.path("--tmpfs", home);
    for dir in &settings.visible_home_dirs {
        let shown = home.join(dir);
        if shown.is_dir() && !shown.is_symlink() {
            a.filtered(&home_view(&shown), false);
        }
    }
    Some(home.clone())
}

/// The repository's own git directory (its config holds tokens on CI, its hooks run on the
/// host) is never shown: a sanitized one takes its place, or without one, nothing.
fn sanitized_git_directory(a: &mut Arguments, settings: &SandboxSettings, workspace: &Path) {
    let dot_git = workspace.join(".git");
    match &settings.git {
        Some(git) => {
            a.bind(&git.objects, Path::new(OBJECTS_MOUNT), false);
            for alternate in &git.alternates {
                a.bind(alternate, alternate, false);
            }
            if dot_git.is_file() {
                // A linked worktree's `.git` file: replace it by one naming the shadow.
                let file = git.shadow.with_extension("gitfile");
                a.bind(&git.shadow, &git.shadow, false);
                a.bind(&file, &dot_git, false);
            } else {
                a.bind(&git.shadow, &dot_git, false);
            }
        }
        None if dot_git.is_dir() => {
            a.path("--tmpfs", &dot_git);
            a.path("--remount-ro", &dot_git);
        }
        None if dot_git.exists() => {
            a.args.push("--ro-bind".into());
            a.args.push("/dev/null".into());
            a.args.push(dot_git.display().to_string());
        }
        None => {}
    }
}

/// The namespaces and identity the command runs with.
fn isolation(a: &mut Arguments) {
    a.push(&[
        // A user namespace in which the command is an unprivileged user with no capability and
        // which cannot make further namespaces. As root, the namespace maps that user to root on
        // the host (bubblewrap maps its caller), which is why the view mounted before this
        // shows nothing root-owned writable and nothing that is not world-readable, and /proc's
        // kernel settings and /dev read-only.
        "--unshare-user",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
    ]);
}
