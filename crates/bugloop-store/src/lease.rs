//! Leases on work that one run at a time may do (solving one issue): an exclusive lock on a file
//! beside the store, taken without waiting. The system releases it when the holding process
//! ends, however it ends (`kill -9` too), so a lease never outlives its run and never needs an
//! expiry. The file says who holds it, for the run that is refused.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// Held while it lives.
#[derive(Debug)]
pub struct Lease {
    _lock: Flock<std::fs::File>,
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another run holds it; `holder` is what that run wrote (its process and start).
    #[error("{what} is held by another run ({holder}); it stops when that run ends")]
    Held { what: String, holder: String },
    #[error("the lease file {path}: {message}")]
    Io { path: PathBuf, message: String },
}

impl Lease {
    /// Takes the lease `name` in `dir` (created if missing) for `what` ("issue #3"), or says who
    /// holds it.
    pub fn take(dir: &Path, name: &str, what: &str) -> Result<Lease, LeaseError> {
        let path = dir.join(format!("{name}.lock"));
        let io = |error: std::io::Error| LeaseError::Io {
            path: path.clone(),
            message: error.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut lock) => {
                let holder = format!(
                    "process {} since {}",
                    std::process::id(),
                    jiff::Timestamp::now()
                        .round(jiff::Unit::Second)
                        .unwrap_or_else(|_| jiff::Timestamp::now())
                );
                lock.set_len(0).map_err(io)?;
                lock.rewind().map_err(io)?;
                lock.write_all(holder.as_bytes()).map_err(io)?;
                Ok(Lease { _lock: lock, path })
            }
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                Err(LeaseError::Held {
                    what: what.to_owned(),
                    holder: if holder.trim().is_empty() {
                        "a run that is starting".to_owned()
                    } else {
                        holder.trim().to_owned()
                    },
                })
            }
            Err((_, errno)) => Err(io(std::io::Error::from(errno))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_released_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let lease = Lease::take(dir.path(), "solve-3", "issue #3").unwrap();
        let refused = Lease::take(dir.path(), "solve-3", "issue #3").unwrap_err();
        let said = refused.to_string();
        assert!(
            said.starts_with("issue #3 is held by another run (process "),
            "{said}"
        );
        assert!(said.contains(&std::process::id().to_string()), "{said}");
        // Another issue is another lease.
        let _other = Lease::take(dir.path(), "solve-4", "issue #4").unwrap();
        drop(lease);
        Lease::take(dir.path(), "solve-3", "issue #3").unwrap();
    }
}
