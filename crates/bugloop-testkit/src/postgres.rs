//! A real PostgreSQL server for the tests, from the machine's packages (`scripts/setup --test`
//! installs Debian's): `initdb` in a temporary directory, `postgres` on a free port of
//! 127.0.0.1, trust authentication for the user `bugloop`. As root, the server runs as the
//! `postgres` user (or `nobody`), since PostgreSQL refuses to run as root.
//!
//! The server is started under a small shell that stops it (and removes its directory) once its
//! standard input closes: when the [`Postgres`] is dropped, or when the test process ends in any
//! way, so no server outlives the tests even when a test binary aborts.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running PostgreSQL server.
#[derive(Debug)]
pub struct Postgres {
    port: u16,
    bin: PathBuf,
    dir: PathBuf,
    /// The shell that owns the server: closing its standard input stops it.
    keeper: Child,
    databases: AtomicUsize,
}

const SCRIPT: &str = r#"set -e
"$BIN/initdb" -D "$DIR/data" -U bugloop -A trust -E UTF8 --no-sync >"$DIR/initdb.log" 2>&1
"$BIN/postgres" -D "$DIR/data" -p "$PORT" -c listen_addresses=127.0.0.1 \
  -c unix_socket_directories="$DIR" -c fsync="$FSYNC" -c synchronous_commit="$FSYNC" \
  -c full_page_writes="$FSYNC" -c max_connections=200 >"$DIR/server.log" 2>&1 &
server=$!
cat >/dev/null || true
kill -INT "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
rm -rf "$DIR"
"#;

impl Postgres {
    /// One server for the whole test process, started on first use (durability off: tests do
    /// not need it, and it saves them seconds).
    pub fn shared() -> &'static Postgres {
        static SHARED: OnceLock<Postgres> = OnceLock::new();
        SHARED.get_or_init(|| Postgres::start(false))
    }

    /// A server of its own; `durable` keeps PostgreSQL's fsync on (for benchmarks).
    pub fn start(durable: bool) -> Postgres {
        let bin = binaries();
        let dir = tempfile::Builder::new()
            .prefix("bugloop-pg-")
            .tempdir()
            .unwrap_or_else(|error| panic!("cannot make PostgreSQL's directory: {error}"))
            .keep();
        let port = free_port();
        let mut command = Command::new("sh");
        if crate::users::is_root() {
            let (uid, gid) = unprivileged_user();
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .unwrap_or_else(|error| panic!("cannot give {} away: {error}", dir.display()));
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            command = Command::new("setpriv");
            command.args([
                &format!("--reuid={uid}"),
                &format!("--regid={gid}"),
                "--clear-groups",
                "sh",
            ]);
        }
        let keeper = command
            .args(["-c", SCRIPT])
            .env("BIN", &bin)
            .env("DIR", &dir)
            .env("PORT", port.to_string())
            .env("FSYNC", if durable { "on" } else { "off" })
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start PostgreSQL: {error}"));
        let server = Postgres {
            port,
            bin,
            dir,
            keeper,
            databases: AtomicUsize::new(0),
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "PostgreSQL did not start within a minute:\n{}\n{}",
                    std::fs::read_to_string(self.dir.join("initdb.log")).unwrap_or_default(),
                    std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Where the server keeps its files (its logs are there while it runs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new, empty database on this server, by its URL.
    pub fn database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("test_{}_{n}", std::process::id());
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// The URL of `database` on this server.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://bugloop@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs one SQL statement with `psql` and returns what it printed (unaligned, no headers).
    pub fn psql(&self, database: &str, statement: &str) -> String {
        let output = crate::run_ok(
            Command::new(self.bin.join("psql"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", "bugloop", "-d", database, "-X", "-A", "-t", "-q"])
                .args(["-v", "ON_ERROR_STOP=1", "-c", statement]),
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Closing its input stops the server; waiting for the shell means it has stopped.
        drop(self.keeper.stdin.take());
        let _ = self.keeper.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where PostgreSQL's programs are: on `PATH`, or Debian's `/usr/lib/postgresql/VERSION/bin`
/// (the newest).
fn binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").is_file()))
    {
        // A link on PATH (as Debian's `postgresql-common` may make) points into the real bin.
        let initdb = std::fs::canonicalize(dir.join("initdb")).unwrap_or(dir.join("initdb"));
        if let Some(bin) = initdb.parent().filter(|bin| bin.join("postgres").is_file()) {
            return bin.to_path_buf();
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql); \
             `scripts/setup --test` installs it"
        )
    })
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The `postgres` user's ids, or `nobody`'s.
fn unprivileged_user() -> (u32, u32) {
    for user in ["postgres", "nobody"] {
        let id = |flag: &str| -> Option<u32> {
            let output = Command::new("id").args([flag, user]).output().ok()?;
            if !output.status.success() {
                return None;
            }
            String::from_utf8_lossy(&output.stdout).trim().parse().ok()
        };
        if let (Some(uid), Some(gid)) = (id("-u"), id("-g")) {
            return (uid, gid);
        }
    }
    (65534, 65534)
}
