//! How long the embedded model's idle threads spin. llama.cpp runs its threads through OpenMP,
//! and libgomp lets a waiting thread spin 300,000 times before it sleeps: when another process
//! takes a core (a second review, a build, another CI job), each of the model's many barriers a
//! token waits for a thread that is not running while the others spin, and generation slowed
//! fourfold and more here (BENCHMARKS.md, "The embedded model under load"). libgomp reads its
//! settings once, as it is loaded, before `main`: so bugloop runs itself again, once, with a
//! short spin, before it does anything else. A user's own `GOMP_SPINCOUNT` or
//! `OMP_WAIT_POLICY` is kept.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The spin that measured as fast as libgomp's default on an idle machine and kept the model's
/// speed with both cores taken.
const SPIN_COUNT: &str = "1000";

/// Runs this process again with [`SPIN_COUNT`] when nothing chose libgomp's wait; returns only
/// when that is not needed or cannot be done (then the run goes on as it is: slower under load,
/// not wrong).
pub(crate) fn spin_briefly() {
    if !cfg!(feature = "local")
        || std::env::var_os("GOMP_SPINCOUNT").is_some()
        || std::env::var_os("OMP_WAIT_POLICY").is_some()
    {
        return;
    }
    let mut args = std::env::args_os();
    let mut command = Command::new("/proc/self/exe");
    if let Some(name) = args.next() {
        command.arg0(name);
    }
    // `exec` returns only its error: /proc is not mounted, or the binary is gone.
    let _ = command.args(args).env("GOMP_SPINCOUNT", SPIN_COUNT).exec();
}
