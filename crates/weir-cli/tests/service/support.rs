//! Test support: the real `weir` binary as a server on a free port, raw HTTP requests, curl,
//! deterministic test data.

use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use weir_testkit::h1::parse_responses;
use weir_testkit::server::ServerThread;

pub const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// A `weir serve` process on 127.0.0.1 with a fresh root, killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Server {
    /// Starts `weir serve` with `args` on a new root.
    pub fn start(args: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        Self::start_at(dir, root, args)
    }

    /// Starts `weir serve` on `root` (kept in `dir`).
    pub fn start_at(dir: tempfile::TempDir, root: PathBuf, args: &[&str]) -> Server {
        let (child, addr) = spawn(&root, dir.path(), args, &[]).unwrap_or_else(|e| panic!("{e}"));
        Server {
            child,
            addr,
            dir,
            root,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The `https://` URL of `path` (for a server started with `--tls-cert`).
    pub fn https_url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server and hands back its directory and root (to restart on them).
    pub fn into_parts(mut self) -> (tempfile::TempDir, PathBuf) {
        self.kill();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        (dir, self.root.clone())
    }

    /// A request over a new connection; see [`request`].
    pub fn request(&self, head: &str, body: &[u8]) -> Resp {
        request(self.addr, head, body)
    }

    /// Temporary upload files anywhere under the root.
    pub fn temps(&self) -> Vec<PathBuf> {
        temps(&self.root)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `Host` names the tests' raw requests use (`host: t`, and weir-testkit's `host: test`),
/// allowed on every server `spawn` starts unless its environment says otherwise: the tests
/// speak to a loopback listener, which serves only loopback names by default
/// (`serve/host_check.rs`; `rebinding.rs` tests that default).
pub const TEST_HOSTS: (&str, &str) = ("WEIR_ALLOWED_HOST", "t,test");

/// Spawns `weir serve --root ROOT --listen 127.0.0.1:0 ARGS` (with [`TEST_HOSTS`] in its
/// environment, then `env`) and waits for its "serving" line; on failure returns its stderr.
pub fn spawn(
    root: &Path,
    logs: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(Child, SocketAddr), String> {
    let mut all = vec![TEST_HOSTS];
    all.extend_from_slice(env);
    weir_testkit::serve_binary::spawn(Path::new(WEIR), root, logs, args, &all)
}

/// A response as read off the wire: weir-testkit's (status, fields in wire order, body).
pub use weir_testkit::h1::Resp;

/// What the service tests read from a response beyond the kit's accessors.
pub trait JsonBody {
    /// The body parsed as JSON; panics, showing the body, when it is not.
    fn json(&self) -> serde_json::Value;
}

impl JsonBody for Resp {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

pub use weir_testkit::h1::request;

/// The first response in `raw` (bytes read from a connection, not in answer to HEAD).
pub fn parse_response(raw: &[u8]) -> Resp {
    let (mut responses, _) = parse_responses(raw);
    assert!(
        !responses.is_empty(),
        "no whole response in {:?}",
        String::from_utf8_lossy(raw)
    );
    responses.remove(0)
}

/// Runs curl with `args` (silent, showing errors) and returns its output.
pub fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "120"])
        .args(args)
        .output()
        .unwrap()
}

/// Runs curl and returns (status, body); `-w` appends the status after the body.
pub fn curl_status(args: &[&str]) -> (u16, Vec<u8>) {
    let mut all = vec!["-w", "\n%{http_code}"];
    all.extend_from_slice(args);
    let out = curl(&all);
    let text = out.stdout;
    let split = text.iter().rposition(|&b| b == b'\n').unwrap();
    let status = String::from_utf8_lossy(&text[split + 1..]).parse().unwrap();
    (status, text[..split].to_vec())
}

/// Runs `weir ARGS` and returns its output.
pub fn weir(args: &[&str]) -> Output {
    Command::new(WEIR)
        .args(args)
        .env_remove("WEIR_TOKEN")
        // `weir put` keeps the state of an upload in progress there: not in the user's home.
        .env(
            "XDG_STATE_HOME",
            std::env::temp_dir().join("weir-tests-state"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Deterministic pseudo-random bytes (xorshift), different per seed.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; len];
    fill(&mut out, seed);
    out
}

fn fill(buf: &mut [u8], seed: u64) -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    x
}

/// A 256 MiB file of test data, made once and kept in the target directory between runs.
pub fn big_file() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        const LEN: u64 = 256 << 20;
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("weir-cli-256MiB.bin");
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(LEN) {
            let partial = path.with_extension("partial");
            let mut f = std::fs::File::create(&partial).unwrap();
            let mut buf = vec![0u8; 1 << 20];
            for i in 0..(LEN >> 20) {
                fill(&mut buf, 1000 + i);
                f.write_all(&buf).unwrap();
            }
            f.sync_all().unwrap();
            std::fs::rename(&partial, &path).unwrap();
        }
        path
    })
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> String {
    let mut f = std::fs::File::open(path).unwrap();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    hex(&h.finalize())
}

pub fn sha256(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `.weir-upload-*` files under `root`.
pub fn temps(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with(".weir-upload-") {
                out.push(e.path());
            }
        }
    }
    out
}

/// A field of `/proc/PID/status` in KiB (`VmHWM`, `VmRSS`).
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Polls `cond` every 10 ms for up to 30 s.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `weir serve`'s handler (`weir_cli::serve::Service`) in this process, on a 2-worker runtime,
/// over a fresh store opened with `options`: for tests that reach into the store (injected
/// faults, a gate on hash jobs) where a child process cannot.
pub struct InProcessServe {
    pub addr: SocketAddr,
    pub service: std::sync::Arc<weir_cli::serve::Service>,
    pub root: PathBuf,
    server: Option<ServerThread>,
    _dir: tempfile::TempDir,
}

impl InProcessServe {
    pub fn start(options: weir_store::LocalOptions) -> Self {
        Self::start_with(options, weir::Config::default())
    }

    /// As [`InProcessServe::start`], with the server configured by `config`.
    pub fn start_with(options: weir_store::LocalOptions, config: weir::Config) -> Self {
        Self::start_service(options, config, |service| service)
    }

    /// As [`InProcessServe::start`], with resumable uploads (and tus) on, as `weir serve` has
    /// them by default.
    pub fn start_resumable(options: weir_store::LocalOptions) -> Self {
        Self::start_service(options, weir::Config::default(), |service| {
            service
                .with_resumable(weir_cli::serve::ResumableOptions::default())
                .unwrap()
        })
    }

    /// As [`InProcessServe::start`], also listening on the Unix socket `unix`, where it takes
    /// passed files (`Config::accept_passed_fds`, as `weir serve` does by default).
    pub fn start_unix(options: weir_store::LocalOptions, unix: &Path) -> Self {
        let mut config = weir::Config::default();
        config.accept_passed_fds = true;
        Self::start_listening(options, config, |service| service, Some(unix.to_owned()))
    }

    fn start_service(
        options: weir_store::LocalOptions,
        config: weir::Config,
        prepare: impl FnOnce(weir_cli::serve::Service) -> weir_cli::serve::Service,
    ) -> Self {
        Self::start_listening(options, config, prepare, None)
    }

    fn start_listening(
        options: weir_store::LocalOptions,
        config: weir::Config,
        prepare: impl FnOnce(weir_cli::serve::Service) -> weir_cli::serve::Service,
        unix: Option<PathBuf>,
    ) -> Self {
        use weir_cli::serve::{Auth, Service, ServiceOptions};
        let dir = tempfile::tempdir().unwrap();
        let store = weir_store::LocalStore::open(dir.path().join("root"), options).unwrap();
        let root = store.root().to_owned();
        let service = std::sync::Arc::new(prepare(Service::new(
            store,
            ServiceOptions {
                max_upload: 1 << 30,
                hash: true,
                auth: Auth::new(None, false),
                limited_storage: false,
            },
        )));
        let serving = std::sync::Arc::clone(&service);
        let (server, addr) = ServerThread::start(config, serving, async move |server| {
            if let Some(path) = unix {
                server.listen_unix(path).unwrap();
            }
            server.listen_tcp("127.0.0.1:0").await.unwrap()
        });
        Self {
            addr,
            service,
            root,
            server: Some(server),
            _dir: dir,
        }
    }

    /// Shuts the server down and fails if its thread panicked.
    pub fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

impl Drop for InProcessServe {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// Whether process `pid` is running: `/proc/PID` exists and is not a zombie (a killed process
/// stays one until its parent, or init, reaps it).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's name, which is in parentheses and may hold spaces.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
    })
}

/// The pid a hook script wrote into `path` (waits for it to be written).
pub fn pid_in(path: &Path) -> u32 {
    let mut pid = 0;
    wait_for("the hook to write its pid file", || {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        pid = text.trim().parse().unwrap_or(0);
        text.ends_with('\n') && pid > 0
    });
    pid
}
