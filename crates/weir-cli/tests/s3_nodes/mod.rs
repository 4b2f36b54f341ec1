//! What the S3 tests share: `weir serve --store s3://` nodes as child processes on a SeaweedFS
//! bucket (`weir_testkit::seaweed`), and a client of that bucket as the nodes see it.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::Duration;
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

/// Starts a node serving `store` (an `s3://` URL on `weed`'s bucket) with `args`, with its own
/// state directory and the bucket's credentials in its environment.
pub fn start_node(weed: &Seaweed, store: &str, args: &[&str]) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("state");
    let mut all = vec!["--store", store, "--s3-endpoint", &weed.endpoint];
    all.extend_from_slice(args);
    let env = [
        ("AWS_ACCESS_KEY_ID", seaweed::ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", seaweed::SECRET_KEY),
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
    weir_store::S3Store::new(weir_store::S3Config {
        endpoint: weed.endpoint.clone(),
        region: "us-east-1".into(),
        bucket: seaweed::BUCKET.into(),
        prefix: String::new(),
        access_key: seaweed::ACCESS_KEY.into(),
        secret_key: seaweed::SECRET_KEY.into(),
        session_token: None,
        part_size: 5 << 20,
        parts_in_flight: 1,
        path_style: true,
        request_timeout: Duration::from_secs(60),
    })
    .unwrap()
}
