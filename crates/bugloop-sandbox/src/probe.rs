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
    // The very arguments the runner uses, so a probe that passes means commands will start; in
    // a directory that exists whatever TMPDIR says (a TMPDIR that is gone is no kernel's fault).
    let workspace = crate::reach::stage_root();
    // The probe must not depend on the caller's home directories or git directory.
    let settings =
        crate::settings::SandboxSettings::new(&workspace, crate::settings::Policy::ReadOnly);
    let trial = std::process::Command::new(&path)
        .args(crate::view::bwrap_arguments(&settings, &workspace, &workspace, None).args)
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
            problem: Some(namespaces_refused(
                String::from_utf8_lossy(&output.stderr).trim(),
                userns_restricted(),
            )),
        },
        Err(error) => Capabilities {
            bwrap,
            bwrap_works: false,
            problem: Some(format!("bwrap does not start: {error}")),
        },
    }
}

/// Where the kernel says whether AppArmor restricts unprivileged user namespaces;
/// `BUGLOOP_USERNS_SYSCTL` names another file (tests, on machines without AppArmor).
fn userns_sysctl() -> PathBuf {
    std::env::var_os("BUGLOOP_USERNS_SYSCTL").map_or_else(
        || PathBuf::from("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        PathBuf::from,
    )
}

fn userns_restricted() -> bool {
    std::fs::read_to_string(userns_sysctl()).is_ok_and(|value| value.trim() == "1")
}

/// Why bwrap could not make its namespaces, and what to do: on Ubuntu 24.04 (GitHub's
/// `ubuntu-latest`) AppArmor keeps unconfined programs from using user namespaces, and bwrap says
/// only "setting up uid map: Permission denied".
fn namespaces_refused(said: &str, restricted: bool) -> String {
    let apparmor = restricted
        || said.contains("setting up uid map: Permission denied")
        || said.contains("Failed RTM_NEWADDR");
    if !apparmor {
        return format!("bwrap cannot create namespaces here: {said}");
    }
    let cause = if restricted {
        "AppArmor restricts unprivileged user namespaces on this machine \
         (kernel.apparmor_restrict_unprivileged_userns = 1, the default of Ubuntu 24.04 and of \
         GitHub's ubuntu-latest)"
    } else {
        "this is how bwrap fails where AppArmor restricts unprivileged user namespaces \
         (kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04's default)"
    };
    format!(
        "bwrap cannot create namespaces here ({said}): {cause}. Fix: load an AppArmor profile \
         that lets bwrap alone make them: run `scripts/action-apparmor` from bugloop's repository \
         as root (the GitHub Action does this itself on hosted runners), or load Ubuntu's \
         `bwrap-userns-restrict` profile (package apparmor-profiles). Setting the sysctl to 0 \
         also works, but lifts the protection for every program on the machine"
    )
}

pub(crate) fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// One protection and whether it is in force here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protection {
    pub name: &'static str,
    pub active: bool,
    pub detail: String,
}

/// The protections every sandboxed command gets on this machine, for `bugloop doctor`.
pub fn protections() -> Vec<Protection> {
    let capabilities = probe();
    let confined = capabilities.can_confine();
    let root = nix::unistd::Uid::effective().is_root();
    let prlimit = find_in_path("prlimit").is_some();
    let pids_cgroup = crate::limits::pids_cgroup_root();
    let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .map(|n| n.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let defaults = crate::Limits::default();
    vec![
        Protection {
            name: "user namespace",
            active: confined,
            detail: format!(
                "commands run as uid 65534 in a user namespace of their own, no nested namespaces (max_user_namespaces = {userns}){}",
                if root { "; bugloop runs as root, and root outside is no one inside" } else { "" }
            ),
        },
        Protection {
            name: "capabilities",
            active: confined,
            detail: "every capability dropped (bubblewrap --cap-drop ALL), no new privileges".into(),
        },
        Protection {
            name: "file system view",
            active: confined,
            detail: "read-only system directories, /etc without credentials or anything not world-readable, configured home directories with credentials masked, the workspace, a sanitized .git; nothing else of the host".into(),
        },
        Protection {
            name: "network",
            active: confined,
            detail: "a network namespace of its own: no network, not even the host's loopback or abstract sockets".into(),
        },
        Protection {
            name: "seccomp",
            active: confined && crate::seccomp::program().is_ok(),
            detail: match crate::seccomp::program() {
                Ok(_) => "keyrings, ptrace, io_uring, BPF, perf, userfaultfd, file handles, the new mount API, module loading and TIOCSTI refused; other architectures' system calls kill".into(),
                Err(reason) => reason.to_owned(),
            },
        },
        Protection {
            name: "process limit",
            active: prlimit || pids_cgroup.is_some(),
            detail: match (&pids_cgroup, prlimit) {
                (Some(root), _) => format!("{} processes (a pids cgroup under {}, and RLIMIT_NPROC)", defaults.max_processes, root.display()),
                (None, true) if root => "RLIMIT_NPROC only, which the kernel does not enforce for root's namespaces: no pids cgroup is available here".into(),
                (None, true) => format!("{} processes (RLIMIT_NPROC, counted per sandbox)", defaults.max_processes),
                (None, false) => "prlimit (util-linux) is missing".into(),
            },
        },
        Protection {
            name: "memory limit",
            active: confined && crate::limits::memory_cgroup_root().is_some(),
            detail: match crate::limits::memory_cgroup_root() {
                Some(root) => format!("{} MiB for all of a command's processes (a memory cgroup under {}, swap included)", defaults.max_memory_bytes >> 20, root.display()),
                None => "none: a memory limit needs a cgroup, which only root can make here".into(),
            },
        },
        Protection {
            name: "file size limit",
            active: prlimit,
            detail: if prlimit { "RLIMIT_FSIZE through prlimit".into() } else { "prlimit (util-linux) is missing".into() },
        },
        Protection {
            name: "private /tmp",
            active: confined,
            detail: format!("a tmpfs of {} MiB", defaults.tmp_bytes >> 20),
        },
        Protection {
            name: "workspace disk use",
            active: true,
            detail: format!("a watchdog stops a command whose workspace grows by more than {} MiB", defaults.workspace_growth_bytes >> 20),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apparmor_is_named_with_the_fix() {
        let said = namespaces_refused("bwrap: setting up uid map: Permission denied", false);
        assert!(said.contains("AppArmor"), "{said}");
        assert!(said.contains("scripts/action-apparmor"), "{said}");
        assert!(said.contains("every program on the machine"), "{said}");
        let restricted = namespaces_refused("bwrap: loopback: Failed RTM_NEWADDR", true);
        assert!(restricted.contains("restricts unprivileged user namespaces on this machine"));
        let other = namespaces_refused("bwrap: No permissions to create new namespace", false);
        assert!(!other.contains("AppArmor"), "{other}");
    }
}
