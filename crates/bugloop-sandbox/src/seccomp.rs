//! A seccomp filter for every sandboxed command: the system calls a build or a test suite never
//! needs and that sandbox escapes are made of (kernel keyrings, ptrace, io_uring, BPF, perf,
//! userfaultfd, file handles, the new mount API, module and kexec loading, clock setting, TIOCSTI)
//! fail with EPERM; a call made through another architecture's ABI (32-bit calls on x86-64)
//! kills the process. bubblewrap installs it (`--seccomp FD`) just before it starts the command,
//! so no unsafe code of ours runs between fork and exec.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use crate::SandboxError;

/// Denied on every architecture bugloop builds for.
const DENIED: &[&str] = &[
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "pivot_root",
    "mount",
    "umount2",
    "setns",
    "unshare",
    "vhangup",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "lookup_dcookie",
];

/// Denied where they exist (x86-64 only).
const DENIED_X86_64: &[&str] = &["ioperm", "iopl", "modify_ldt", "uselib"];

/// `ioctl(fd, TIOCSTI, ...)` pushes input into a terminal's queue.
const TIOCSTI: u32 = 0x5412;

fn policy(arch: &str) -> serde_json::Value {
    let mut rules: Vec<serde_json::Value> = DENIED
        .iter()
        .chain(if arch == "x86_64" { DENIED_X86_64 } else { &[] })
        .map(|name| serde_json::json!({ "syscall": name }))
        .collect();
    rules.push(serde_json::json!({
        "syscall": "ioctl",
        "args": [{ "index": 1, "type": "dword", "op": "eq", "val": TIOCSTI }]
    }));
    serde_json::json!({
        "sandbox": {
            "mismatch_action": "allow",
            "match_action": { "errno": nix::errno::Errno::EPERM as u32 },
            "filter": rules
        }
    })
}

/// The compiled filter as the kernel reads it (`struct sock_filter`s, native byte order), or why
/// there is none on this machine. Compiled once per process.
pub(crate) fn program() -> Result<&'static [u8], &'static str> {
    static PROGRAM: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            let arch = std::env::consts::ARCH;
            let target = seccompiler::TargetArch::try_from(arch)
                .map_err(|_| format!("no seccomp filter for {arch}"))?;
            let text = policy(arch).to_string();
            let mut filters = seccompiler::compile_from_json(text.as_bytes(), target)
                .map_err(|e| format!("the seccomp filter does not compile: {e}"))?;
            let program = filters
                .remove("sandbox")
                .ok_or_else(|| "the seccomp filter is missing".to_owned())?;
            let mut bytes = Vec::with_capacity(program.len() * 8);
            for instruction in program {
                bytes.extend_from_slice(&instruction.code.to_ne_bytes());
                bytes.push(instruction.jt);
                bytes.push(instruction.jf);
                bytes.extend_from_slice(&instruction.k.to_ne_bytes());
            }
            Ok(bytes)
        })
        .as_ref()
        .map(Vec::as_slice)
        .map_err(String::as_str)
}

/// A file descriptor holding the filter, inheritable, for `bwrap --seccomp FD`. Close it once the
/// command started.
pub(crate) fn descriptor(program: &[u8]) -> Result<OwnedFd, SandboxError> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    let io = |e: nix::errno::Errno| SandboxError::Io(format!("seccomp filter: {e}"));
    let fd =
        nix::sys::memfd::memfd_create(c"bugloop-seccomp", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
            .map_err(io)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(program)
        .map_err(|e| SandboxError::Io(format!("seccomp filter: {e}")))?;
    nix::unistd::lseek(&file, 0, nix::unistd::Whence::SeekSet).map_err(io)?;
    let fd = OwnedFd::from(file);
    fcntl(&fd, FcntlArg::F_SETFD(FdFlag::empty())).map_err(io)?;
    Ok(fd)
}
