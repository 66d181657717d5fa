//! Ctrl-C during a job, and what the stopped run leaves on disk.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Result;
use bugloop_app::Verdict;
use bugloop_app::leftovers::{self, Held};
use clap::Args;

use crate::terminal;

/// Ctrl-C (SIGINT) during a job: says that it stopped and what stays, hands what the run holds
/// on disk to a remover of its own, then ends with 130, the shell's status for an interrupted
/// command. Every write bugloop makes is whole or not made (a comment, a commit landed by moving
/// a ref, a store transaction), so stopping anywhere leaves nothing half-written, and a run
/// again goes on from what was done.
pub(crate) fn say_when_interrupted(job: &'static str) {
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
        else {
            return;
        };
        if runtime.block_on(tokio::signal::ctrl_c()).is_err() {
            return;
        }
        let _ = writeln!(
            terminal::stderr(),
            "\ninterrupted: `bugloop {job}` stopped. What it had finished stays (comments \
             published, a commit landed); nothing is half-written, and running it again goes on \
             from there."
        );
        hand_over_leftovers();
        std::process::exit(130);
    });
}

/// Starts `bugloop remove-leftovers` for what this run holds: it waits for this process to let
/// go (its exit, right after), so nothing this run still does races the removal. What cannot be
/// handed over stays for the next run, which clears it.
fn hand_over_leftovers() {
    let (owner, held) = leftovers::held();
    if held.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = Command::new(exe);
    command.args(["remove-leftovers", "--owner", owner]);
    for entry in &held {
        match entry {
            Held::Dir(dir) => command.arg("--dir").arg(dir),
            Held::Cgroup(dir) => command.arg("--cgroup").arg(dir),
        };
    }
    // Its own process group: a second Ctrl-C at the terminal does not stop it.
    let _ = std::os::unix::process::CommandExt::process_group(&mut command, 0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// `bugloop remove-leftovers` (not listed): what an interrupted run handed over.
#[derive(Debug, Args)]
pub(crate) struct RemoveLeftoversArgs {
    /// The run, as its directories name it.
    #[arg(long)]
    owner: String,
    /// A directory it claimed.
    #[arg(long = "dir")]
    dirs: Vec<PathBuf>,
    /// A cgroup it made.
    #[arg(long = "cgroup")]
    cgroups: Vec<PathBuf>,
}

pub(crate) fn remove_leftovers(args: &RemoveLeftoversArgs) -> Result<Verdict> {
    let entries: Vec<Held> = (args.dirs.iter().cloned().map(Held::Dir))
        .chain(args.cgroups.iter().cloned().map(Held::Cgroup))
        .collect();
    leftovers::remove_when_released(&args.owner, &entries);
    Ok(Verdict::Done)
}
