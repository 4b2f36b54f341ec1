//! The `weir serve` the WebDAV tests (`webdav.rs`, `webdav_clients.rs`) talk to: the real
//! binary on 127.0.0.1 with a fresh root, killed on drop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;

pub const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The token the tests' servers are given (`--token`), and the clients' Basic password.
pub const TOKEN: &str = "s3cret";

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub root: PathBuf,
    /// Holds the root and the server's logs (`server-stderr.log`).
    pub dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `weir serve ARGS` on a new root.
pub fn start(args: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let (child, addr) =
        weir_testkit::serve_binary::spawn(Path::new(WEIR), &root, dir.path(), args, &[])
            .unwrap_or_else(|e| panic!("{e}"));
    Server {
        child,
        addr,
        root,
        dir,
    }
}
