//! What the S3 tests share: `weir serve --store s3://` nodes as child processes on a SeaweedFS
//! bucket (`weir_testkit::seaweed`), and a client of that bucket as the nodes see it.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};
use weir_testkit::h1::Resp;
use weir_testkit::seaweed::{self, Seaweed};

pub const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// One `weir serve` process on the bucket; killed on drop.
pub struct Node {
    pub child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A current-thread runtime, for the store's `async` calls from a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Waits until `weed mini` has its bucket (it creates it shortly after its port opens); the
/// 30 s bound only turns a `weed` that never gets there into a failure with its log.
fn wait_for_bucket(weed: &Seaweed) {
    let store = direct(weed);
    let deadline = Instant::now() + Duration::from_secs(30);
    runtime().block_on(async {
        while let Err(e) = store.create_bucket_if_missing().await {
            assert!(Instant::now() < deadline, "bucket: {e}\n{}", weed.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

/// `weed mini` with its bucket ready; `None` (skipped) without `weed`.
pub fn start_weed() -> Option<Seaweed> {
    let weed = Seaweed::start()?;
    wait_for_bucket(&weed);
    Some(weed)
}

/// Starts a node serving `store` (an `s3://` URL on `weed`'s bucket) with `args`, with its own
/// state directory and the bucket's credentials in its environment.
pub fn start_node(weed: &Seaweed, store: &str, args: &[&str]) -> Node {
    start_node_via(&weed.endpoint, store, args)
}

/// [`start_node`] reaching `weed`'s S3 gateway at `endpoint` (a proxy in front of it).
pub fn start_node_via(endpoint: &str, store: &str, args: &[&str]) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("state");
    let mut all = vec!["--store", store, "--s3-endpoint", endpoint];
    all.extend_from_slice(args);
    let env = [
        ("AWS_ACCESS_KEY_ID", seaweed::ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", seaweed::SECRET_KEY),
        // The `Host` names of the tests' raw requests (`host: t`, weir-testkit's `host: test`):
        // a loopback listener serves only loopback names by default (`serve/host_check.rs`).
        ("WEIR_ALLOWED_HOST", "t,test"),
    ];
    let (child, addr) =
        weir_testkit::serve_binary::spawn(Path::new(WEIR), &root, dir.path(), &all, &env)
            .unwrap_or_else(|stderr| panic!("weir serve did not start: {stderr}"));
    Node {
        child,
        addr,
        _dir: dir,
    }
}

/// A client of `weed`'s bucket, as the nodes see it (no prefix, 5 MiB parts, one in flight).
pub fn direct(weed: &Seaweed) -> weir_store::S3Store {
    direct_under(weed, "")
}

/// [`direct`] under `prefix` of the bucket.
#[allow(dead_code)] // only s3_serve.rs looks under a prefix
pub fn direct_under(weed: &Seaweed, prefix: &str) -> weir_store::S3Store {
    weir_store::S3Store::new(weir_store::S3Config {
        prefix: prefix.into(),
        part_size: 5 << 20,
        parts_in_flight: 1,
        ..weir_store::S3Config::new(
            &weed.endpoint,
            seaweed::BUCKET,
            seaweed::ACCESS_KEY,
            seaweed::SECRET_KEY,
        )
    })
    .unwrap()
}

/// An answer's body as JSON (panics with the body when it is not).
pub fn json(r: &Resp) -> serde_json::Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&r.body)))
}

/// `len` bytes of a pattern that differs with `seed` and does not repeat within a part.
pub fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(131).wrapping_add(seed) ^ (i >> 13) as u8)
        .collect()
}

/// Lowercase hex.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Standard base64 with padding (a `Repr-Digest` value).
pub fn base64_of(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The process's peak RSS (`VmHWM`), in KiB.
#[allow(dead_code)] // s3_resumable.rs measures no memory
pub fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
