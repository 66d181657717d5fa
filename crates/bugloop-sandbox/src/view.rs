//! What a sandboxed process sees of the file system: a minimal read-only view of the system (the
//! directories programs and toolchains need, `/etc` without anything that is not world-readable
//! or that holds credentials), the configured home directories with credentials files masked, the
//! workspace, and a sanitized git directory in place of the repository's own. Everything else of
//! the host (other repositories, `/run` and its sockets, `/root`, `/var`) is simply not there.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::run::{Policy, SandboxSettings};

/// System directories shown read-only (when they exist). `/etc` is filtered (see [`etc_view`]).
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix",
];

/// Where the repository's object store is shown inside the sandbox; the sanitized git directory's
/// `objects/info/alternates` points here.
pub const OBJECTS_MOUNT: &str = "/run/bugloop/git-objects";

/// Entries of `/etc` never shown, even when world-readable: system-wide git configuration (it can
/// name credential helpers and programs), environment files (proxies with passwords), and
/// everything about authentication.
const ETC_DENIED: &[&str] = &[
    "gitconfig",
    "environment",
    "netrc",
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "security",
    "docker",
    "containerd",
    "kubernetes",
    "wireguard",
    "NetworkManager",
    "ppp",
    "letsencrypt",
    "krb5.keytab",
    "credstore",
    "credstore.encrypted",
    "subuid",
    "subgid",
    "machine-id",
];

/// File names under visible home directories that hold credentials and are never shown.
const CREDENTIAL_NAMES: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.json",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "hosts.yml",
    "auth.json",
    ".docker",
    ".ssh",
    ".gnupg",
    ".aws",
    ".kube",
];

/// A sanitized git directory shown at the workspace's `.git` (see `ShadowGit`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GitMount {
    /// The sanitized git directory on the host.
    pub shadow: PathBuf,
    /// The repository's object directory on the host, shown read-only at [`OBJECTS_MOUNT`].
    pub objects: PathBuf,
    /// Object directories the repository itself borrows from (its own alternates).
    pub alternates: Vec<PathBuf>,
}

fn world_readable(metadata: &std::fs::Metadata) -> bool {
    let mode = metadata.permissions().mode();
    if metadata.is_dir() {
        mode & 0o005 == 0o005
    } else {
        mode & 0o004 != 0
    }
}

fn is_credential_name(name: &str) -> bool {
    CREDENTIAL_NAMES.contains(&name)
        || name.ends_with(".pem")
        || name.ends_with(".key")
        || name.ends_with(".token")
        || name.starts_with("id_")
}

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
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.file_type().is_symlink() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let hide = !world_readable(&metadata) || (credentials && is_credential_name(&name));
        if hide {
            if metadata.is_dir() {
                into.masked_dirs.push(path);
            } else {
                into.masked_files.push(path);
            }
        } else if metadata.is_dir() && depth > 1 {
            collect_masks(&path, depth - 1, credentials, into);
        }
    }
}

/// `/etc` as the sandbox sees it: its world-readable entries but the denied ones; inside them,
/// whatever is not world-readable masked. Computed once per process (the walk costs a few ms).
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

/// A visible home directory with credentials masked.
fn home_view(dir: &Path) -> Filtered {
    let mut view = Filtered::default();
    view.shown.push((dir.to_path_buf(), None));
    collect_masks(dir, 2, true, &mut view);
    view
}

fn push_filtered(args: &mut Vec<String>, view: &Filtered) {
    for (path, target) in &view.shown {
        match target {
            Some(target) => args.extend([
                "--symlink".into(),
                target.display().to_string(),
                path.display().to_string(),
            ]),
            None => args.extend([
                "--ro-bind".into(),
                path.display().to_string(),
                path.display().to_string(),
            ]),
        }
    }
    for dir in &view.masked_dirs {
        args.extend(["--tmpfs".into(), dir.display().to_string()]);
        args.extend(["--remount-ro".into(), dir.display().to_string()]);
    }
    for file in &view.masked_files {
        args.extend([
            "--ro-bind".into(),
            "/dev/null".into(),
            file.display().to_string(),
        ]);
    }
}

/// The home directory, when there is one worth hiding.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_dir() && h != Path::new("/"))
}

/// bubblewrap's arguments for a command in `workspace` with working directory `cwd`.
pub(crate) fn bwrap_arguments(
    settings: &SandboxSettings,
    workspace: &Path,
    cwd: &Path,
) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    let mut args: Vec<String> = Vec::new();
    // Root of the sandbox is bubblewrap's own empty tmpfs; only what is listed here exists.
    for system in SYSTEM_PATHS.iter().map(Path::new) {
        match std::fs::symlink_metadata(system) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(system) {
                    args.extend(["--symlink".into(), path(&target), path(system)]);
                }
            }
            Ok(m) if m.is_dir() => args.extend(["--ro-bind".into(), path(system), path(system)]),
            _ => {}
        }
    }
    push_filtered(&mut args, etc_view());
    for extra in &settings.system_paths {
        if extra.exists() {
            args.extend(["--ro-bind".into(), path(extra), path(extra)]);
        }
    }
    args.extend([
        "--dev".into(),
        "/dev".into(),
        "--proc".into(),
        "/proc".into(),
    ]);
    args.extend([
        "--size".into(),
        settings.limits.tmp_bytes.to_string(),
        "--tmpfs".into(),
        "/tmp".into(),
    ]);
    // The home directory exists (programs expect $HOME) but is empty and read-only, but for the
    // configured directories, shown read-only with their credentials masked.
    if let Some(home) = settings
        .home_dir
        .as_ref()
        .filter(|h| h.is_dir() && h.as_path() != Path::new("/"))
    {
        args.extend(["--tmpfs".into(), path(home)]);
        for dir in &settings.visible_home_dirs {
            let shown = home.join(dir);
            if shown.is_dir() && !shown.is_symlink() {
                push_filtered(&mut args, &home_view(&shown));
            }
        }
        args.extend(["--remount-ro".into(), path(home)]);
    }
    for shown in &settings.read_only_paths {
        if shown.exists() {
            args.extend(["--ro-bind".into(), path(shown), path(shown)]);
        }
    }
    let bind = match settings.policy {
        Policy::WorkspaceWrite => "--bind",
        Policy::ReadOnly => "--ro-bind",
    };
    args.extend([bind.into(), path(workspace), path(workspace)]);
    // The repository's own git directory (its config holds tokens on CI, its hooks run on the
    // host) is never shown: a sanitized one takes its place.
    let dot_git = workspace.join(".git");
    match &settings.git {
        Some(git) => {
            args.extend(["--ro-bind".into(), path(&git.objects), OBJECTS_MOUNT.into()]);
            for alternate in &git.alternates {
                args.extend(["--ro-bind".into(), path(alternate), path(alternate)]);
            }
            if dot_git.is_file() {
                // A linked worktree's `.git` file: replace it by one naming the shadow.
                let file = git.shadow.with_extension("gitfile");
                args.extend(["--ro-bind".into(), path(&git.shadow), path(&git.shadow)]);
                args.extend(["--ro-bind".into(), path(&file), path(&dot_git)]);
            } else {
                args.extend(["--ro-bind".into(), path(&git.shadow), path(&dot_git)]);
            }
        }
        None if dot_git.is_dir() => {
            args.extend(["--tmpfs".into(), path(&dot_git)]);
            args.extend(["--remount-ro".into(), path(&dot_git)]);
        }
        None if dot_git.exists() => {
            args.extend(["--ro-bind".into(), "/dev/null".into(), path(&dot_git)]);
        }
        None => {}
    }
    args.extend(["--remount-ro".into(), "/".into()]);
    args.extend(
        [
            // A user namespace in which the command is an unprivileged user with no capability,
            // also when bugloop runs as root, and which cannot make further namespaces.
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
            "--clearenv",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    args.extend(["--chdir".into(), path(cwd)]);
    args
}
