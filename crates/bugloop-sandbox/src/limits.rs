//! Resource limits of a sandboxed command: processes, file size, the private `/tmp` and the
//! workspace's disk use, each reported when it was hit.
//!
//! - Processes: `RLIMIT_NPROC` (through util-linux's `prlimit`, since `pre_exec` would need unsafe
//!   code); inside the sandbox's user namespace the kernel counts only the sandbox's own processes.
//!   That is not enforced for a namespace created by root, so as root a `pids` cgroup holds the
//!   command as well.
//! - File size: `RLIMIT_FSIZE` (a larger write gets `SIGXFSZ`).
//! - `/tmp`: a tmpfs of a fixed size (bubblewrap's `--size`).
//! - Workspace: a watchdog measures the workspace's disk use while a command runs and kills the
//!   command when it grew by more than the limit since the task's first command.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::owner::unclaimed_leftovers;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Processes (and threads) at once inside the sandbox.
    pub max_processes: u64,
    /// The largest file a command may write.
    pub max_file_bytes: u64,
    /// Size of the private `/tmp`.
    pub tmp_bytes: u64,
    /// How much the workspace's disk use may grow, counted from the first command of a task.
    pub workspace_growth_bytes: u64,
    /// Memory of all the sandbox's processes together (where cgroups can hold it: as root).
    pub max_memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_processes: 1024,
            max_file_bytes: 1 << 30,
            tmp_bytes: 512 << 20,
            workspace_growth_bytes: 4 << 30,
            max_memory_bytes: 8 << 30,
        }
    }
}

/// A limit a command ran into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "limit")]
pub enum LimitHit {
    Processes { max: u64 },
    FileSize { max_bytes: u64 },
    Tmp { max_bytes: u64 },
    Workspace { max_growth_bytes: u64 },
    Memory { max_bytes: u64 },
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Processes { max } => write!(
                f,
                "the process limit ({max} processes, sandbox.max_processes) was reached"
            ),
            LimitHit::FileSize { max_bytes } => write!(
                f,
                "a file grew past the file size limit ({} MiB, sandbox.max_file_size_mb)",
                max_bytes >> 20
            ),
            LimitHit::Tmp { max_bytes } => write!(
                f,
                "a command found no space left on a device: the private /tmp holds {} MiB (sandbox.tmp_size_mb)",
                max_bytes >> 20
            ),
            LimitHit::Memory { max_bytes } => write!(
                f,
                "a process was killed at the memory limit ({} MiB, sandbox.max_memory_mb)",
                max_bytes >> 20
            ),
            LimitHit::Workspace { max_growth_bytes } => write!(
                f,
                "the command was stopped: the workspace grew by more than {} MiB (sandbox.workspace_growth_mb)",
                max_growth_bytes >> 20
            ),
        }
    }
}

static CGROUP_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The cgroups of one command (root only; removed on drop): a `pids` limit and a memory limit,
/// each where this machine's cgroup hierarchy offers the controller.
#[derive(Debug, Default)]
pub(crate) struct Cgroups {
    /// (directory, controls pids, controls memory)
    dirs: Vec<(PathBuf, bool, bool)>,
}

/// Where root can make cgroups for `controller`: cgroup v1's hierarchy of that name, or v2's
/// unified one when the controller is enabled there. The bool says v2.
fn controller_root(controller: &str) -> Option<(PathBuf, bool)> {
    if !nix::unistd::Uid::effective().is_root() {
        return None;
    }
    let v1 = Path::new("/sys/fs/cgroup").join(controller);
    if v1.join("cgroup.procs").exists() {
        return Some((v1, false));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.subtree_control")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == controller)
        .then(|| (v2.to_path_buf(), true))
}

/// Where `pids` cgroups can be made (for `bugloop doctor`).
pub(crate) fn pids_cgroup_root() -> Option<PathBuf> {
    controller_root("pids").map(|(root, _)| root)
}

/// Where memory cgroups can be made (for `bugloop doctor`).
pub(crate) fn memory_cgroup_root() -> Option<PathBuf> {
    controller_root("memory").map(|(root, _)| root)
}

impl Cgroups {
    pub(crate) fn create(limits: &Limits) -> Cgroups {
        let mut cgroups = Cgroups::default();
        // A random part too: two runs whose owners read alike (process 1 of two containers,
        // started in the same tick) never make the same one, which the second could not make
        // and would run without.
        let name = format!(
            "bugloop-{}-{}-{:016x}",
            crate::owner::token(),
            CGROUP_SEQUENCE.fetch_add(1, Ordering::Relaxed),
            fastrand::u64(..)
        );
        for (controller, pids) in [("pids", true), ("memory", false)] {
            let Some((root, v2)) = controller_root(controller) else {
                continue;
            };
            // A run killed before its drop (Ctrl-C, SIGKILL) left its cgroups: empty once its
            // processes died with it, so the kernel lets them go. No lock can stand beside a
            // cgroup: only those a minute old go (one a run in another PID namespace made, whose
            // owner looks gone from here, is empty only until its command joins it).
            for stale in unclaimed_leftovers(&root, "bugloop-") {
                let _ = std::fs::remove_dir(stale);
            }
            let dir = root.join(&name);
            if !cgroups.dirs.iter().any(|(d, _, _)| *d == dir) {
                if std::fs::create_dir(&dir).is_err() {
                    continue;
                }
                crate::owner::hold(crate::owner::Held::Cgroup(dir.clone()));
                cgroups.dirs.push((dir.clone(), false, false));
            }
            let written = if pids {
                std::fs::write(dir.join("pids.max"), limits.max_processes.to_string()).is_ok()
            } else if v2 {
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                std::fs::write(dir.join("memory.max"), limits.max_memory_bytes.to_string()).is_ok()
            } else {
                let ok = std::fs::write(
                    dir.join("memory.limit_in_bytes"),
                    limits.max_memory_bytes.to_string(),
                )
                .is_ok();
                // Swap counts too where the kernel accounts it.
                let _ = std::fs::write(
                    dir.join("memory.memsw.limit_in_bytes"),
                    limits.max_memory_bytes.to_string(),
                );
                ok
            };
            if written && let Some(entry) = cgroups.dirs.iter_mut().find(|(d, _, _)| *d == dir) {
                if pids {
                    entry.1 = true;
                } else {
                    entry.2 = true;
                }
            }
        }
        cgroups
    }

    /// The directories whose `cgroup.procs` the command joins.
    pub(crate) fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|(d, _, _)| d.as_path()).collect()
    }

    fn counter(&self, file: &str, key: &str) -> bool {
        self.dirs.iter().any(|(dir, _, _)| {
            std::fs::read_to_string(dir.join(file)).is_ok_and(|text| {
                text.lines().any(|l| {
                    l.strip_prefix(key)
                        .and_then(|n| n.trim().parse::<u64>().ok())
                        .is_some_and(|n| n > 0)
                })
            })
        })
    }

    /// Whether a fork was refused for the limit.
    pub(crate) fn pids_hit(&self) -> bool {
        self.counter("pids.events", "max ")
    }

    /// Whether the kernel killed a process for the memory limit.
    pub(crate) fn memory_hit(&self) -> bool {
        self.counter("memory.oom_control", "oom_kill ")
            || self.counter("memory.events", "oom_kill ")
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        // The processes die with the sandbox's PID namespace; give the kernel a moment.
        for (dir, _, _) in &self.dirs {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            crate::owner::release(&crate::owner::Held::Cgroup(dir.clone()));
        }
    }
}

/// What each entry costs beyond its data: an inode and a directory slot. Counting it stops a
/// command from exhausting the file system's inodes with empty files.
const ENTRY_COST: u64 = 4096;

/// Disk use of a tree in bytes, not following symlinks: the larger of a file's size and its
/// allocated blocks (a sparse file counts at its size: the host may read all of it), plus
/// [`ENTRY_COST`] per entry. Directories are opened relative to their parent's handle, so a tree
/// deeper than a path can be long is measured too.
pub(crate) fn disk_use(root: &Path) -> u64 {
    use nix::dir::Dir;
    use nix::fcntl::{AtFlags, OFlag};
    use nix::sys::stat::{Mode, SFlag, fstatat};
    use std::rc::Rc;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let Ok(top) = Dir::open(root, flags, Mode::empty()) else {
        return 0;
    };
    let mut total = 0u64;
    let mut first = Some(top);
    // Directories still to read: (parent handle, name). A parent stays open only while children
    // of it are pending, so open handles grow with the depth, not the width.
    let mut pending: Vec<(Rc<Dir>, std::ffi::CString)> = Vec::new();
    loop {
        let mut dir = match first.take() {
            Some(dir) => dir,
            None => {
                let Some((parent, name)) = pending.pop() else {
                    break;
                };
                match Dir::openat(parent.as_ref(), name.as_c_str(), flags, Mode::empty()) {
                    Ok(dir) => dir,
                    Err(_) => continue,
                }
            }
        };
        let mut children = Vec::new();
        for entry in dir.iter().flatten() {
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            children.push(name.to_owned());
        }
        let dir = Rc::new(dir);
        for name in children {
            let Ok(stat) = fstatat(dir.as_ref(), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            let size = u64::try_from(stat.st_size).unwrap_or(0);
            let blocks = u64::try_from(stat.st_blocks)
                .unwrap_or(0)
                .saturating_mul(512);
            total = total
                .saturating_add(size.max(blocks))
                .saturating_add(ENTRY_COST);
            if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR {
                pending.push((dir.clone(), name));
            }
        }
    }
    total
}

/// Watches the workspace while a command runs; returns when the growth limit is crossed (never
/// otherwise: the caller drops it when the command ends).
pub(crate) async fn watch_workspace(root: PathBuf, start: u64, limit: u64) {
    let mut interval = Duration::from_millis(500);
    loop {
        tokio::time::sleep(interval).await;
        let path = root.clone();
        let began = Instant::now();
        let Ok(now) = tokio::task::spawn_blocking(move || disk_use(&path)).await else {
            return std::future::pending().await;
        };
        if now.saturating_sub(start) > limit {
            return;
        }
        // A large tree is measured less often, so the watchdog never costs more than ~5%.
        interval = (began.elapsed() * 20).max(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cgroup a killed run left (its process gone) is removed by the next run's; a live
    /// process's is kept, and so is one made moments ago (another PID namespace's, maybe).
    #[test]
    fn a_killed_runs_cgroups_are_removed_by_the_next_run() {
        let Some((root, _)) = controller_root("pids") else {
            eprintln!("skipped: no pids cgroup this user may make");
            return;
        };
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let left = root.join(format!("bugloop-{gone}-0"));
        let live = root.join(format!("bugloop-{}-999999", crate::owner::token()));
        let fresh = root.join(format!("bugloop-{gone}-1"));
        for dir in [&left, &live, &fresh] {
            std::fs::create_dir(dir).unwrap();
        }
        // Made two minutes ago (`touch -d`: the file system keeps the time it is given).
        let touched = std::process::Command::new("touch")
            .args(["-d", "2 minutes ago"])
            .args([&left, &live])
            .status()
            .unwrap();
        assert!(touched.success());
        let cgroups = Cgroups::create(&Limits::default());
        let there = [&left, &live, &fresh].map(|dir| dir.exists());
        drop(cgroups);
        for dir in [&live, &fresh] {
            let _ = std::fs::remove_dir(dir);
        }
        assert_eq!(
            there,
            [false, true, true],
            "a killed run's old cgroup is removed; a live run's, and a just-made one, are kept"
        );
    }
}
