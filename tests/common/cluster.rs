//! Test support: a throwaway MariaDB cluster (one master + N GTID replicas on free
//! loopback ports) and a `sluice` process pointed at it.
//!
//! Everything here is synchronous and talks to the servers through the `mariadb` CLI, so
//! it can be called from plain `#[test]`s and from inside `#[tokio::test]`s alike (no
//! nested tokio runtime). Tests talk to the servers/sluice with mysql_async via the
//! `url()` helpers.
//!
//! # Process lifetime (why the `sh` guard)
//! Every server (and sluice) is started under a tiny `/bin/sh` guard (see [`GUARD_SCRIPT`])
//! whose stdin is a pipe held only by this test process (Rust creates pipes with
//! `O_CLOEXEC`, so no other child inherits it). The guard starts the real program in the
//! background, prints its PID, and blocks in `read`:
//! - normal stop: we write `stop\n`; the guard sends SIGCONT+SIGTERM, waits, and SIGKILLs
//!   after a grace period;
//! - the test process dies in any way (panic=abort, SIGKILL by nextest after a timeout,
//!   Ctrl-C): the kernel closes the pipe, `read` hits EOF, and the guard stops the program
//!   the same way *and removes its temp directory*.
//!
//! Because the guard is the program's parent, the program's PID cannot be recycled while
//! the guard lives, so signalling it by PID (pause/resume/kill) is safe. The guard runs in
//! its own process group so a terminal Ctrl-C reaches only the test process, and its
//! stdio never inherits the test's stdout/stderr (nextest's leak detection stays quiet).
//! This also covers [`shared_cluster`]: it lives in a `static`, which is never dropped;
//! its servers go away when the test process exits and closes the pipes.
//!
//! # Sharing a cluster
//! [`shared_cluster`] is built once per *process* (`OnceLock`). Under `cargo test` that
//! is once per test binary; under cargo-nextest every test is its own process. To avoid a
//! cluster per test there, `scripts/test` starts one cluster for the whole run
//! (`scripts/cluster`, same options as below) and exports
//! `SLUICE_TEST_CLUSTER=<master_port>,<replica_port>,...`; [`shared_cluster`] then attaches
//! to it instead of starting its own. The shared cluster is used concurrently by many
//! tests, so tests using it must only create objects with unique names
//! ([`unique_name`]) and must never stop/pause/kill servers or replication threads:
//! tests that inject faults or lag use their own [`Cluster::start`].
#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Account with ALL PRIVILEGES WITH GRANT OPTION on every server (created on the master,
/// replicated to the replicas). sluice's backend user in [`Sluice::config_for`].
pub const SLUICE_USER: &str = "sluice";
pub const SLUICE_PASSWORD: &str = "sluice";
/// Replication account used by the replicas.
pub const REPL_USER: &str = "repl";
pub const REPL_PASSWORD: &str = "repl";
/// Database created on the master (and replicated) by [`Cluster::start`].
pub const TEST_DB: &str = "sluice_test";
/// Client users configured by [`Sluice::config_for`].
pub const APP_USER: &str = "app";
pub const APP_PASSWORD: &str = "app";
/// Configured with `password_hash` (SHA1(SHA1(pw))), not the cleartext.
pub const HASH_USER: &str = "hashuser";
pub const HASH_PASSWORD: &str = "hashpw";
/// Replicas in [`shared_cluster`] (and in the cluster `scripts/test` starts).
pub const SHARED_REPLICAS: usize = 2;
/// `master_port,replica_port,...` of an externally managed cluster (see module docs).
pub const SHARED_CLUSTER_ENV: &str = "SLUICE_TEST_CLUSTER";

const NOT_INSTALLED: &str = "MariaDB is not installed: run `sudo apt-get install -y mariadb-server mariadb-client` (or scripts/test, which installs it)";
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const SERVER_STOP_GRACE_SECS: u64 = 10;
const SLUICE_STOP_GRACE_SECS: u64 = 5;

/// Options given to `mariadb-install-db` (the template datadir depends on them).
const INSTALL_ARGS: &[&str] = &[
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
    "--innodb-log-file-size=16M",
];

/// Server options shared by every server. Keep in sync with `SERVER_OPTS` in
/// scripts/cluster.
const SERVER_ARGS: &[&str] = &[
    "--bind-address=127.0.0.1",
    "--log-bin=binlog",
    "--relay-log=relay-bin",
    "--binlog-format=ROW",
    "--log-slave-updates",
    "--gtid-strict-mode=1",
    "--skip-name-resolve",
    "--max-allowed-packet=64M",
    "--max-connections=3000",
    "--max-connect-errors=1000000",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=2",
    "--innodb-doublewrite=0",
    // Native AIO/io_uring can be unavailable in containers (seccomp, aio-max-nr); the
    // simulated AIO is plenty for tests and never fails at startup.
    "--innodb-use-native-aio=0",
    "--innodb-buffer-pool-dump-at-shutdown=0",
    "--innodb-buffer-pool-load-at-startup=0",
    "--sync-binlog=0",
    "--slave-net-timeout=10",
];

/// The guard wrapper; see the module docs. Arguments:
/// `$1` log file for the program's stdout/stderr (the program's exit status is written
/// to `$1.exit` once it has been reaped), `$2` grace seconds between SIGTERM and SIGKILL, `$3` directory to remove if the test process died (may be empty), `$4` parent
/// directory to `rmdir` afterwards if it became empty (may be empty), `$5...` the program.
/// Prints the program's PID on stdout, then waits for a line (normal stop) or EOF (test
/// process gone) on stdin.
pub const GUARD_SCRIPT: &str = r#"
log=$1; grace=$2; cleanup=$3; cleanup_parent=$4; shift 4
"$@" </dev/null >>"$log" 2>&1 &
pid=$!
trap '' INT QUIT HUP PIPE
echo "$pid"
abrupt=1
if read -r _line; then abrupt=; fi
kill -s CONT "$pid" 2>/dev/null
kill -s TERM "$pid" 2>/dev/null
( sleep "$grace"; kill -s KILL "$pid" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
killer=$!
wait "$pid"
status=$?
kill "$killer" 2>/dev/null
echo "$status" >"$log.exit" 2>/dev/null
if [ -n "$abrupt" ] && [ -n "$cleanup" ]; then
  rm -rf "$cleanup"
  if [ -n "$cleanup_parent" ]; then rmdir "$cleanup_parent" 2>/dev/null; fi
fi
exit 0
"#;

// ---------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------

struct Binaries {
    mariadbd: PathBuf,
    install_db: PathBuf,
    client: PathBuf,
}

fn find_program(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in [
        "/usr/sbin",
        "/usr/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
        "/sbin",
        "/bin",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| {
        fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

fn binaries() -> &'static Binaries {
    static BINS: OnceLock<Binaries> = OnceLock::new();
    BINS.get_or_init(|| {
        match (
            find_program("mariadbd"),
            find_program("mariadb-install-db"),
            find_program("mariadb"),
        ) {
            (Some(mariadbd), Some(install_db), Some(client)) => Binaries {
                mariadbd,
                install_db,
                client,
            },
            _ => panic!("{NOT_INSTALLED}"),
        }
    })
}

fn is_root() -> bool {
    // Effective UID: second field of the "Uid:" line (no libc needed).
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A loopback port that was free a moment ago (bind port 0, read it, release it).
/// Callers retry on "address in use" since another process may grab it in between.
/// A process's peak resident set size (VmHWM of /proc/PID/status), in kB.
pub fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// A name unique across concurrently running tests and processes, for tables/databases
/// created on the shared cluster: `{prefix}_{pid}_{n}`.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// `*` + upper-case hex of SHA1(SHA1(password)): MariaDB's mysql_native_password hash,
/// as written in sluice's `password_hash`.
pub fn native_password_hash(password: &str) -> String {
    use sha1::{Digest, Sha1};
    let stage2 = Sha1::digest(Sha1::digest(password.as_bytes()));
    let mut s = String::from("*");
    for b in stage2.iter() {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

/// Is `pid` a live (not zombie) process? Linux /proc based.
fn pid_alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => match stat.rfind(')') {
            Some(i) => !matches!(stat[i + 1..].trim_start().chars().next(), Some('Z' | 'X') | None),
            None => false,
        },
        Err(_) => false,
    }
}

/// Send a signal by name (`STOP`, `CONT`, `TERM`, `KILL`, `HUP`) with the shell's builtin
/// `kill` (works even where procps is not installed).
fn send_signal(pid: u32, sig: &str) -> bool {
    Command::new("/bin/sh")
        .args(["-c", "kill -s \"$0\" \"$1\" 2>/dev/null", sig, &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Contents of `p` from byte `from` on (lossy UTF-8).
fn read_from(p: &Path, from: u64) -> String {
    let mut out = Vec::new();
    if let Ok(mut f) = fs::File::open(p) {
        let _ = f.seek(SeekFrom::Start(from));
        let _ = f.read_to_end(&mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The last `n` lines of a file, for panic messages.
pub fn tail(p: &Path, n: usize) -> String {
    let text = read_from(p, 0);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    format!(
        "--- last {} lines of {} ---\n{}",
        lines.len() - start,
        p.display(),
        lines[start..].join("\n")
    )
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}

/// Directory for per-cluster temp dirs; short, because unix socket paths must stay
/// under ~100 bytes.
fn short_tmp() -> PathBuf {
    let t = std::env::temp_dir();
    if t.as_os_str().len() > 48 {
        PathBuf::from("/tmp")
    } else {
        t
    }
}

/// A pristine datadir made by `mariadb-install-db`, built once and cached (atomically,
/// via rename) under the cargo target tmp dir, keyed by server version + install options.
/// Copying it (~30 MB) is much faster than running install-db for every server. Copies
/// are correct replicas-to-be: install-db runs without a binlog, so the template carries
/// no GTID state (empty gtid_binlog_pos and mysql.gtid_slave_pos); server_id is given on
/// the command line.
fn template_datadir() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let bins = binaries();
        let base = option_env!("CARGO_TARGET_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        fs::create_dir_all(&base).unwrap_or_else(|e| panic!("create {}: {e}", base.display()));
        let version = Command::new(&bins.mariadbd)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut h = DefaultHasher::new();
        (version.trim(), INSTALL_ARGS, is_root()).hash(&mut h);
        let done = base.join(format!("mariadb-template-{:016x}", h.finish()));
        if done.join("ok").is_file() && done.join("data/mysql").is_dir() {
            return done.join("data");
        }
        let _ = fs::remove_dir_all(&done); // incomplete leftovers (should not happen)
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let build = base.join(format!(".mariadb-template-build-{}-{nanos}", std::process::id()));
        let data = build.join("data");
        fs::create_dir_all(&build).unwrap_or_else(|e| panic!("create {}: {e}", build.display()));
        let mut cmd = Command::new(&bins.install_db);
        cmd.arg("--no-defaults");
        if is_root() {
            cmd.arg("--user=root");
        }
        let out = cmd
            .args(INSTALL_ARGS)
            .arg(format!("--datadir={}", data.display()))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", bins.install_db.display()));
        if !out.status.success() {
            let _ = fs::remove_dir_all(&build);
            panic!(
                "mariadb-install-db failed ({}):\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        fs::write(build.join("ok"), version.as_bytes()).expect("write template marker");
        if fs::rename(&build, &done).is_err() {
            // Another process won the race; use its (complete) template.
            let _ = fs::remove_dir_all(&build);
            assert!(
                done.join("ok").is_file(),
                "template datadir {} is incomplete",
                done.display()
            );
        }
        done.join("data")
    })
}

// ---------------------------------------------------------------------------------------
// Guarded child processes
// ---------------------------------------------------------------------------------------

/// A program running under [`GUARD_SCRIPT`].
struct Guarded {
    wrapper: Child,
    stdin: Option<ChildStdin>,
    /// PID of the program itself (not of the wrapper).
    pid: u32,
    grace: Duration,
}

impl Guarded {
    fn spawn(
        program: &Path,
        args: &[OsString],
        log: &Path,
        grace_secs: u64,
        cleanup: Option<&Path>,
        cleanup_parent: Option<&Path>,
    ) -> Guarded {
        let wrapper_err = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("open {}: {e}", log.display()));
        let empty = Path::new("");
        let mut wrapper = Command::new("/bin/sh")
            .arg("-c")
            .arg(GUARD_SCRIPT)
            .arg("sluice-guard")
            .arg(log)
            .arg(grace_secs.to_string())
            .arg(cleanup.unwrap_or(empty))
            .arg(cleanup_parent.unwrap_or(empty))
            .arg(program)
            .args(args)
            // POST /reload needs the admin token (tests/common/http.rs sends it).
            .env(super::http::ADMIN_TOKEN_ENV, super::http::TEST_ADMIN_TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(wrapper_err)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn /bin/sh guard for {}: {e}", program.display()));
        let mut line = String::new();
        let stdout = wrapper.stdout.take().expect("guard stdout");
        let _ = BufReader::new(stdout).read_line(&mut line);
        let pid: u32 = match line.trim().parse() {
            Ok(p) => p,
            Err(_) => {
                let _ = wrapper.kill();
                let _ = wrapper.wait();
                panic!(
                    "guard for {} did not report a PID\n{}",
                    program.display(),
                    tail(log, 30)
                );
            }
        };
        Guarded {
            stdin: wrapper.stdin.take(),
            wrapper,
            pid,
            grace: Duration::from_secs(grace_secs),
        }
    }

    fn alive(&self) -> bool {
        pid_alive(self.pid)
    }

    /// SIGTERM (after SIGCONT), wait up to the grace period, then SIGKILL; reaps the guard.
    fn stop(&mut self) {
        let Some(mut stdin) = self.stdin.take() else {
            return;
        };
        let _ = stdin.write_all(b"stop\n");
        drop(stdin);
        let deadline = Instant::now() + self.grace + Duration::from_secs(5);
        loop {
            match self.wrapper.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        // The guard is still alive, so it has not reaped the program: its PID is safe.
        send_signal(self.pid, "KILL");
        let _ = self.wrapper.kill();
        let _ = self.wrapper.wait();
    }

    /// SIGKILL the program now, then reap it.
    fn kill(&mut self) {
        if self.stdin.is_some() {
            send_signal(self.pid, "KILL");
        }
        self.stop();
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------
// MariaDB servers
// ---------------------------------------------------------------------------------------

enum LaunchError {
    PortInUse,
    Failed(String),
}

/// One mariadbd. Methods take `&self` (a shared cluster is `&'static`); the process
/// handle sits behind a mutex.
pub struct Server {
    pub port: u16,
    pub server_id: u32,
    pub is_replica: bool,
    /// `<dir>/data`; empty for a server attached from `SLUICE_TEST_CLUSTER`.
    pub datadir: PathBuf,
    /// `<dir>/mysql.sock`; empty for an attached server.
    pub socket: PathBuf,
    /// Holds data/, mysql.sock, mysqld.pid, error.log, stdout.log.
    dir: PathBuf,
    /// Started (and therefore stoppable/killable) by this process.
    owned: bool,
    /// Options after [`SERVER_ARGS`] (see [`Cluster::start_with_args`]).
    extra_args: Vec<String>,
    proc: Mutex<Option<Guarded>>,
}

impl Server {
    fn new(dir: &Path, port: u16, server_id: u32, is_replica: bool, extra_args: &[String]) -> Server {
        Server {
            port,
            server_id,
            is_replica,
            datadir: dir.join("data"),
            socket: dir.join("mysql.sock"),
            dir: dir.to_path_buf(),
            owned: true,
            extra_args: extra_args.to_vec(),
            proc: Mutex::new(None),
        }
    }

    fn attached(port: u16, server_id: u32, is_replica: bool) -> Server {
        Server {
            port,
            server_id,
            is_replica,
            datadir: PathBuf::new(),
            socket: PathBuf::new(),
            dir: PathBuf::new(),
            owned: false,
            extra_args: Vec::new(),
            proc: Mutex::new(None),
        }
    }

    /// Start a server on a fresh free port, retrying on "address in use".
    fn start_new(dir: &Path, server_id: u32, is_replica: bool, extra_args: &[String]) -> Server {
        let mut last = String::new();
        for _ in 0..8 {
            let s = Server::new(dir, free_port(), server_id, is_replica, extra_args);
            match s.launch() {
                Ok(()) => return s,
                Err(LaunchError::PortInUse) => last = format!("port {} in use", s.port),
                Err(LaunchError::Failed(msg)) => panic!("{msg}"),
            }
        }
        panic!(
            "could not start mariadbd in {}: {last} (8 attempts)",
            dir.display()
        );
    }

    fn lock(&self) -> MutexGuard<'_, Option<Guarded>> {
        self.proc.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn assert_owned(&self, what: &str) {
        assert!(
            self.owned,
            "{what} on 127.0.0.1:{}: this server belongs to an external cluster ({SHARED_CLUSTER_ENV}); fault-injecting tests must use their own Cluster::start",
            self.port
        );
    }

    fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["--no-defaults".into()];
        if is_root() {
            a.push("--user=root".into());
        }
        a.push(format!("--datadir={}", self.datadir.display()).into());
        a.push(format!("--socket={}", self.socket.display()).into());
        a.push(format!("--pid-file={}", self.dir.join("mysqld.pid").display()).into());
        // A temp dir of its own: servers sharing /tmp were seen failing
        // ("Error on delete of '/tmp/#sql-temptable-...'") under parallel tests.
        let tmp = self.dir.join("tmp");
        let _ = std::fs::create_dir_all(&tmp);
        a.push(format!("--tmpdir={}", tmp.display()).into());
        a.push(format!("--log-error={}", self.error_log_path().display()).into());
        a.push(format!("--port={}", self.port).into());
        a.push(format!("--server-id={}", self.server_id).into());
        a.extend(SERVER_ARGS.iter().map(OsString::from));
        if self.is_replica {
            a.push("--read-only=1".into());
        }
        a.extend(self.extra_args.iter().map(OsString::from));
        a
    }

    /// Spawn mariadbd on `self.port` and wait until it answers a query.
    fn launch(&self) -> Result<(), LaunchError> {
        let mut guard = self.lock();
        assert!(
            guard.is_none(),
            "server 127.0.0.1:{} is already running",
            self.port
        );
        let log_from = file_len(&self.error_log_path());
        let mut g = Guarded::spawn(
            &binaries().mariadbd,
            &self.args(),
            &self.dir.join("stdout.log"),
            SERVER_STOP_GRACE_SECS,
            Some(&self.dir),
            self.dir.parent(),
        );
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if !g.alive() {
                g.stop();
                let log = read_from(&self.error_log_path(), log_from);
                if log.contains("Address already in use")
                    || log.contains("already have another server running")
                {
                    return Err(LaunchError::PortInUse);
                }
                return Err(LaunchError::Failed(format!(
                    "mariadbd (port {}) exited during startup\n{}\n{}",
                    self.port,
                    tail(&self.error_log_path(), 40),
                    tail(&self.dir.join("stdout.log"), 10)
                )));
            }
            if self.socket_sql("SELECT 1").is_ok() {
                *guard = Some(g);
                return Ok(());
            }
            if Instant::now() >= deadline {
                g.kill();
                return Err(LaunchError::Failed(format!(
                    "mariadbd (port {}) not ready after {:?}\n{}",
                    self.port,
                    READY_TIMEOUT,
                    tail(&self.error_log_path(), 40)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `127.0.0.1:PORT`
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// mysql_async URL: `mysql://user:password@127.0.0.1:PORT/db` (db may be "").
    /// `prefer_socket=false`: otherwise mysql_async asks for `@@socket` and
    /// silently moves to the server's unix socket.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!(
            "mysql://{user}:{password}@127.0.0.1:{}/{db}?prefer_socket=false",
            self.port
        )
    }

    /// URL for the all-privileged `sluice` account.
    pub fn sluice_url(&self, db: &str) -> String {
        self.url(SLUICE_USER, SLUICE_PASSWORD, db)
    }

    pub fn error_log_path(&self) -> PathBuf {
        self.dir.join("error.log")
    }

    /// The last `n` lines of the error log (for assertion messages).
    pub fn error_log_tail(&self, n: usize) -> String {
        tail(&self.error_log_path(), n)
    }

    fn client(&self, conn: &[String], db: Option<&str>, sql: &str) -> Result<String, String> {
        let mut cmd = Command::new(&binaries().client);
        cmd.arg("--no-defaults")
            .args(conn)
            .arg("--connect-timeout=10")
            .arg("--default-character-set=utf8mb4");
        if let Some(db) = db {
            cmd.arg(format!("--database={db}"));
        }
        let out = cmd
            .args(["-N", "-B", "-e", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run mariadb client: {e}"))?;
        if out.status.success() {
            let s = String::from_utf8_lossy(&out.stdout);
            Ok(s.trim_end_matches('\n').to_string())
        } else {
            Err(format!(
                "mariadb client on 127.0.0.1:{} failed ({}): {}\nSQL: {sql}",
                self.port,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    fn tcp_conn(&self) -> Vec<String> {
        vec![
            "--protocol=tcp".into(),
            "--host=127.0.0.1".into(),
            format!("--port={}", self.port),
            format!("--user={SLUICE_USER}"),
            format!("--password={SLUICE_PASSWORD}"),
        ]
    }

    fn socket_sql(&self, sql: &str) -> Result<String, String> {
        let conn = vec![
            "--protocol=socket".to_string(),
            format!("--socket={}", self.socket.display()),
            "--user=root".to_string(),
        ];
        self.client(&conn, None, sql)
    }

    /// Root over the socket when we own the server (works before the `sluice` user exists
    /// and regardless of replication), else the `sluice` user over TCP.
    fn admin_sql(&self, sql: &str) -> Result<String, String> {
        if self.owned {
            self.socket_sql(sql)
        } else {
            self.client(&self.tcp_conn(), None, sql)
        }
    }

    /// Run statements as `sluice` over TCP with the `mariadb` CLI (`-N -B`: tab-separated
    /// rows, no header, NULL as `NULL`, special characters escaped). Returns stdout without
    /// the final newline; panics with the client's stderr on failure.
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Server::sql`] with `db` as the default database.
    pub fn sql_in(&self, db: &str, sql: &str) -> String {
        self.client(&self.tcp_conn(), Some(db), sql)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Server::sql`] but returns the error text instead of panicking.
    pub fn try_sql(&self, sql: &str) -> Result<String, String> {
        self.client(&self.tcp_conn(), None, sql)
    }

    /// `STOP SLAVE SQL_THREAD`: the replica keeps receiving the binlog but stops applying
    /// it, i.e. lag on demand.
    pub fn stop_sql_thread(&self) {
        self.admin_sql("STOP SLAVE SQL_THREAD")
            .unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn start_sql_thread(&self) {
        self.admin_sql("START SLAVE SQL_THREAD")
            .unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn gtid_binlog_pos(&self) -> String {
        self.sql("SELECT @@GLOBAL.gtid_binlog_pos")
    }

    pub fn gtid_slave_pos(&self) -> String {
        self.sql("SELECT @@GLOBAL.gtid_slave_pos")
    }

    /// Wait (MASTER_GTID_WAIT) until this replica has applied `gtid_pos`; panics with
    /// `SHOW SLAVE STATUS` after `timeout`.
    pub fn wait_for_gtid(&self, gtid_pos: &str, timeout: Duration) {
        let secs = timeout.as_secs_f64().max(0.001);
        let sql = format!("SELECT MASTER_GTID_WAIT('{gtid_pos}', {secs})");
        match self.admin_sql(&sql) {
            Ok(r) if r.trim() == "0" => {}
            other => panic!(
                "replica 127.0.0.1:{} did not reach GTID '{gtid_pos}' within {timeout:?} ({other:?})\n{}",
                self.port,
                self.admin_sql("SHOW SLAVE STATUS\\G").unwrap_or_else(|e| e)
            ),
        }
    }

    /// PID of the mariadbd process (panics if not started by this process or stopped).
    pub fn pid(&self) -> u32 {
        self.assert_owned("pid()");
        self.lock()
            .as_ref()
            .map(|g| g.pid)
            .unwrap_or_else(|| panic!("server 127.0.0.1:{} is not running", self.port))
    }

    pub fn is_running(&self) -> bool {
        self.lock().as_ref().is_some_and(|g| g.alive())
    }

    /// SIGSTOP: the server keeps its sockets but answers nothing (a hung backend).
    pub fn pause(&self) {
        send_signal(self.pid(), "STOP");
    }

    /// SIGCONT after [`Server::pause`].
    pub fn resume(&self) {
        send_signal(self.pid(), "CONT");
    }

    /// SIGKILL (crash). [`Server::restart`] brings it back on the same port and datadir.
    pub fn kill(&self) {
        self.assert_owned("kill()");
        if let Some(mut g) = self.lock().take() {
            g.kill();
        }
    }

    /// Clean shutdown (SIGTERM, SIGKILL after 10 s).
    pub fn stop(&self) {
        self.assert_owned("stop()");
        if let Some(mut g) = self.lock().take() {
            g.stop();
        }
    }

    /// Stop (if running) and start again on the same port and datadir; returns when it
    /// answers queries. A replica resumes replication by itself (MASTER_CONNECT_RETRY=1).
    pub fn restart(&self) {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.launch() {
                Ok(()) => return,
                // The old socket may linger for a moment after a crash.
                Err(LaunchError::PortInUse) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                Err(LaunchError::PortInUse) => {
                    panic!("restart: port {} is taken by another process", self.port)
                }
                Err(LaunchError::Failed(msg)) => panic!("restart: {msg}"),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut g) = self.lock().take() {
            g.stop();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------------------

/// A master and `replicas.len()` GTID replicas (`MASTER_USE_GTID=slave_pos`,
/// `read_only=1`), users `sluice`/`sluice` (ALL, WITH GRANT OPTION) and `repl`/`repl`,
/// database `sluice_test`. Dropping it stops the servers and removes the temp dir.
pub struct Cluster {
    pub master: Server,
    pub replicas: Vec<Server>,
    /// Wall time [`Cluster::start`] took.
    pub startup: Duration,
    // Declared after the servers: dropped after they have stopped.
    root: Option<tempfile::TempDir>,
}

impl Cluster {
    /// Start a fresh cluster with `n_replicas` replicas; panics with a clear message on
    /// failure. About a second once the template datadir is cached.
    pub fn start(n_replicas: usize) -> Cluster {
        Self::start_with_args(n_replicas, &[])
    }

    /// [`Cluster::start`] with more server options for every server (e.g.
    /// `--ssl-cert=...`), given after the harness's own.
    pub fn start_with_args(n_replicas: usize, extra_args: &[String]) -> Cluster {
        let t0 = Instant::now();
        let _ = binaries();
        let template = template_datadir();
        let root = tempfile::Builder::new()
            .prefix("sluice-cluster-")
            .tempdir_in(short_tmp())
            .expect("create cluster temp dir");
        let root_path = root.path().to_path_buf();

        // Copy the template and boot every server in parallel.
        let results: Vec<std::thread::Result<Server>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..=n_replicas)
                .map(|i| {
                    let dir = root_path.join(if i == 0 {
                        "master".to_string()
                    } else {
                        format!("replica{i}")
                    });
                    s.spawn(move || {
                        copy_dir(template, &dir.join("data"))
                            .unwrap_or_else(|e| panic!("copy template datadir to {}: {e}", dir.display()));
                        Server::start_new(&dir, i as u32 + 1, i > 0, extra_args)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut servers = Vec::new();
        let mut failure = None;
        for r in results {
            match r {
                Ok(s) => servers.push(s),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            drop(servers);
            std::panic::resume_unwind(e);
        }
        let mut servers = servers.into_iter();
        let master = servers.next().expect("master");
        let cluster = Cluster {
            master,
            replicas: servers.collect(),
            startup: Duration::ZERO,
            root: Some(root),
        };

        cluster
            .master
            .admin_sql(&format!(
                "CREATE USER '{SLUICE_USER}'@'%' IDENTIFIED BY '{SLUICE_PASSWORD}';
                 GRANT ALL PRIVILEGES ON *.* TO '{SLUICE_USER}'@'%' WITH GRANT OPTION;
                 CREATE USER '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}';
                 GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%';
                 CREATE DATABASE {TEST_DB};"
            ))
            .unwrap_or_else(|e| panic!("master setup: {e}"));
        for r in &cluster.replicas {
            r.admin_sql(&format!(
                "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, MASTER_USER='{REPL_USER}',
                   MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
                 START SLAVE;",
                cluster.master.port
            ))
            .unwrap_or_else(|e| panic!("replica setup: {e}"));
        }
        cluster.wait_replicas_caught_up();
        for r in &cluster.replicas {
            let dbs = r.sql(&format!(
                "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='{TEST_DB}'"
            ));
            assert_eq!(
                dbs, "1",
                "replica 127.0.0.1:{} has no {TEST_DB} after catching up",
                r.port
            );
        }
        let mut cluster = cluster;
        cluster.startup = t0.elapsed();
        eprintln!(
            "[cluster] master 127.0.0.1:{} replicas {:?} ready in {:.2?} ({})",
            cluster.master.port,
            cluster.replicas.iter().map(|r| r.port).collect::<Vec<_>>(),
            cluster.startup,
            root_path.display()
        );
        cluster
    }

    /// Use an already running cluster (see [`SHARED_CLUSTER_ENV`]): `spec` is
    /// `master_port,replica_port,...`. Nothing is stopped on drop.
    pub fn attach(spec: &str) -> Cluster {
        let ports: Vec<u16> = spec
            .split([',', ' '])
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{SHARED_CLUSTER_ENV}={spec:?}: bad port {p:?}"))
            })
            .collect();
        assert!(!ports.is_empty(), "{SHARED_CLUSTER_ENV} is empty");
        let mut servers = ports
            .iter()
            .enumerate()
            .map(|(i, &p)| Server::attached(p, i as u32 + 1, i > 0));
        let master = servers.next().expect("master");
        let c = Cluster {
            master,
            replicas: servers.collect(),
            startup: Duration::ZERO,
            root: None,
        };
        for s in std::iter::once(&c.master).chain(&c.replicas) {
            let n = s
                .try_sql(&format!(
                    "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='{TEST_DB}'"
                ))
                .unwrap_or_else(|e| {
                    panic!("{SHARED_CLUSTER_ENV}={spec}: server 127.0.0.1:{} is not usable (start it with scripts/test or unset the variable): {e}", s.port)
                });
            assert_eq!(
                n, "1",
                "{SHARED_CLUSTER_ENV}: 127.0.0.1:{} has no database {TEST_DB}",
                s.port
            );
        }
        c
    }

    /// All servers, master first.
    pub fn servers(&self) -> impl Iterator<Item = &Server> {
        std::iter::once(&self.master).chain(self.replicas.iter())
    }

    /// Wait until every replica has applied everything in the master's binlog (30 s).
    pub fn wait_replicas_caught_up(&self) {
        self.wait_replicas_caught_up_within(Duration::from_secs(30));
    }

    pub fn wait_replicas_caught_up_within(&self, timeout: Duration) {
        let pos = self
            .master
            .admin_sql("SELECT @@GLOBAL.gtid_binlog_pos")
            .unwrap_or_else(|e| panic!("{e}"));
        for r in &self.replicas {
            r.wait_for_gtid(&pos, timeout);
        }
    }

    /// The temp dir holding the servers' directories (None when attached).
    pub fn root_dir(&self) -> Option<&Path> {
        self.root.as_ref().map(|r| r.path())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Stop all servers in parallel; the TempDir field is removed afterwards.
        std::thread::scope(|s| {
            for srv in std::iter::once(&self.master).chain(self.replicas.iter()) {
                s.spawn(move || {
                    if let Some(mut g) = srv.lock().take() {
                        g.stop();
                    }
                });
            }
        });
    }
}

/// Whether process `pid` holds the listening socket of 127.0.0.1:`port` (from
/// /proc/net/tcp and the process's descriptors).
fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(tcp) = fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let want = format!("0100007F:{port:04X}");
    let inodes: Vec<String> = tcp
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 9 && f[1] == want && f[3] == "0A").then(|| format!("socket:[{}]", f[9]))
        })
        .collect();
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        fs::read_link(fd.path())
            .map(|t| inodes.iter().any(|i| t.as_os_str() == i.as_str()))
            .unwrap_or(false)
    })
}

/// What every test sluice's configuration gets unless it names the key itself:
/// [`without_auto_install`], and `reload.watch: false`, so a test that rewrites its file
/// and then reloads by SIGHUP or `POST /reload` (tests/reload.rs) is not raced by the
/// watcher reloading first (tests/reload_watch.rs turns it on).
pub fn harness_defaults(body: String) -> String {
    let mut body = without_auto_install(body);
    if !body.lines().any(|l| l.starts_with("reload:")) {
        body.push_str("reload:\n  watch: false\n");
    }
    body
}

/// `freshness.auto_install` is off in every test sluice unless the test's config names it:
/// otherwise every sluice on the shared cluster would install triggers in every schema the
/// other tests create (DDL that makes replicas briefly stale and races tests that install
/// their own). tests/freshness_auto.rs opts in with `auto_install: true`.
pub fn without_auto_install(body: String) -> String {
    if body.contains("auto_install") {
        return body;
    }
    let mut out = String::with_capacity(body.len() + 40);
    let mut seen = false;
    for line in body.lines() {
        if line == "freshness:" {
            out.push_str("freshness:\n  auto_install: false\n");
            seen = true;
        } else if let Some(rest) = line.strip_prefix("freshness: {") {
            out.push_str(&format!("freshness: {{ auto_install: false,{rest}\n"));
            seen = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !seen {
        out.push_str("freshness:\n  auto_install: false\n");
    }
    out
}

/// One cluster (1 master + [`SHARED_REPLICAS`] replicas) per test process, or the
/// external one named by `SLUICE_TEST_CLUSTER` (started by scripts/test). Read-only with
/// respect to servers and replication: see the module docs.
pub fn shared_cluster() -> &'static Cluster {
    static SHARED: OnceLock<Cluster> = OnceLock::new();
    SHARED.get_or_init(|| match std::env::var(SHARED_CLUSTER_ENV) {
        Ok(spec) if !spec.trim().is_empty() => Cluster::attach(&spec),
        _ => Cluster::start(SHARED_REPLICAS),
    })
}

// ---------------------------------------------------------------------------------------
// sluice
// ---------------------------------------------------------------------------------------

/// A running `sluice serve` (the binary cargo built for this test). Stopped on drop.
pub struct Sluice {
    pub port: u16,
    pub admin_port: u16,
    pid: u32,
    log: PathBuf,
    config_path: PathBuf,
    proc: Mutex<Option<Guarded>>,
    dir: tempfile::TempDir,
}

impl Sluice {
    /// `users:` with `app`/`app` (cleartext) and `hashuser` (password_hash of "hashpw").
    pub fn users_yaml() -> String {
        format!(
            "users:\n  - {{ name: {APP_USER}, password: {APP_PASSWORD}, backend: group }}\n  - {{ name: {HASH_USER}, password_hash: \"{}\", backend: group }}\n",
            native_password_hash(HASH_PASSWORD)
        )
    }

    /// One `groups:` list item for `cluster`, backends using the `sluice` account.
    pub fn group_yaml(name: &str, cluster: &Cluster) -> String {
        let mut y = format!(
            "  - name: {name}\n    master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n",
            cluster.master.addr()
        );
        if cluster.replicas.is_empty() {
            y.push_str("    replicas: []\n");
        } else {
            y.push_str("    replicas:\n");
            for r in &cluster.replicas {
                y.push_str(&format!(
                    "      - {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD}, weight: 1 }}\n",
                    r.addr()
                ));
            }
        }
        y
    }

    /// `users:` + `groups:` (one group `main` = `cluster`); no listen addresses, no
    /// log/backend sections (append your own).
    pub fn config_for(cluster: &Cluster) -> String {
        format!(
            "{}groups:\n{}",
            Self::users_yaml(),
            Self::group_yaml("main", cluster)
        )
    }

    /// [`Sluice::config_for`] + `extra_yaml` (extra top-level keys such as `log:`,
    /// `backend:`, `tls:`; not `users:`/`groups:` — use [`Sluice::start`] for those).
    pub fn start_for(cluster: &Cluster, extra_yaml: &str) -> Sluice {
        let mut cfg = Self::config_for(cluster);
        cfg.push_str(extra_yaml);
        Self::start(&cfg)
    }

    /// Run `sluice serve --config FILE` with `config_yaml`, whose top-level `listen:` and
    /// `admin_listen:` lines (if any) are replaced by free loopback ports. Returns once
    /// the MySQL port accepts TCP connections.
    pub fn start(config_yaml: &str) -> Sluice {
        Self::start_with(config_yaml, |dir, text| {
            let path = dir.join("sluice.yaml");
            fs::write(&path, text).expect("write sluice config");
            path
        })
    }

    /// [`Sluice::start`] with the configuration text put in place by `publish(dir, text)`,
    /// which returns the path sluice is started with (e.g. a symlink into a kubelet-style
    /// `..data` directory).
    pub fn start_with(config_yaml: &str, publish: impl Fn(&Path, &str) -> PathBuf) -> Sluice {
        let dir = tempfile::Builder::new()
            .prefix("sluice-proc-")
            .tempdir_in(short_tmp())
            .expect("create sluice temp dir");
        let body: String = config_yaml
            .lines()
            .filter(|l| !l.starts_with("listen:") && !l.starts_with("admin_listen:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let body = harness_defaults(body);
        let mut config_path;
        let log = dir.path().join("sluice.log");
        // SLUICE_TEST_BIN runs the tests against another build (e.g. an older one, to show a test fails there).
        let bin_override = std::env::var_os("SLUICE_TEST_BIN");
        let bin = bin_override
            .as_deref()
            .map(Path::new)
            .unwrap_or(Path::new(env!("CARGO_BIN_EXE_sluice")));
        let mut last = String::new();
        for attempt in 1..=5 {
            let port = free_port();
            let mut admin_port = free_port();
            while admin_port == port {
                admin_port = free_port();
            }
            config_path = publish(
                dir.path(),
                &format!("listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin_port}\n{body}"),
            );
            let log_from = file_len(&log);
            let args: Vec<OsString> = vec!["serve".into(), "--config".into(), config_path.clone().into()];
            let mut g = Guarded::spawn(bin, &args, &log, SLUICE_STOP_GRACE_SECS, Some(dir.path()), None);
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + READY_TIMEOUT;
            loop {
                // The port must be *this* process's: another sluice that took the
                // same free port first would answer the connect while this one exits
                // on its failed bind, and the test would talk to the wrong process.
                if listens_on(g.pid, port)
                    && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                {
                    return Sluice {
                        port,
                        admin_port,
                        pid: g.pid,
                        log,
                        config_path,
                        proc: Mutex::new(Some(g)),
                        dir,
                    };
                }
                if !g.alive() {
                    g.stop();
                    let out = read_from(&log, log_from);
                    let lower = out.to_lowercase();
                    if lower.contains("address already in use") || lower.contains("addrinuse") {
                        last = format!("attempt {attempt}: port in use");
                        break;
                    }
                    panic!(
                        "sluice exited during startup\n--- config ---\n{}\n--- log ---\n{out}",
                        read_from(&config_path, 0)
                    );
                }
                if Instant::now() >= deadline {
                    g.kill();
                    panic!(
                        "sluice did not accept connections on {addr} within {READY_TIMEOUT:?}\n{}",
                        tail(&log, 60)
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("could not start sluice: {last}");
    }

    /// mysql_async URL through sluice. `prefer_socket=false`: otherwise
    /// mysql_async asks for `@@socket` and would bypass sluice through the
    /// master's unix socket.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!(
            "mysql://{user}:{password}@127.0.0.1:{}/{db}?prefer_socket=false",
            self.port
        )
    }

    /// URL for the `app` user.
    pub fn app_url(&self, db: &str) -> String {
        self.url(APP_USER, APP_PASSWORD, db)
    }

    /// `http://127.0.0.1:ADMIN_PORT{path}` (path starts with `/`).
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin_port)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// sluice's stdout+stderr.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    pub fn log(&self) -> String {
        read_from(&self.log, 0)
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn is_running(&self) -> bool {
        self.proc
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|g| g.alive())
    }

    /// Send a signal by name (e.g. "HUP") while it runs.
    pub fn signal(&self, sig: &str) {
        if self.is_running() {
            send_signal(self.pid, sig);
        }
    }

    /// SIGTERM, SIGKILL after 5 s; waits for exit.
    pub fn stop(&self) {
        if let Some(mut g) = self.proc.lock().unwrap_or_else(|e| e.into_inner()).take() {
            g.stop();
        }
    }

    /// Waits up to `timeout` for the process to exit by itself (e.g. after
    /// `signal("TERM")`), then reaps it; returns its exit status (`None`: still running
    /// after `timeout`, then stopped like [`Sluice::stop`]).
    pub fn wait_exit(&self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while self.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let exited = !self.is_running();
        self.stop();
        if !exited {
            return None;
        }
        let path = PathBuf::from(format!("{}.exit", self.log.display()));
        fs::read_to_string(&path).ok()?.trim().parse().ok()
    }

    /// SIGKILL now.
    pub fn kill(&self) {
        if let Some(mut g) = self.proc.lock().unwrap_or_else(|e| e.into_inner()).take() {
            g.kill();
        }
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        self.stop();
    }
}
