//! `weir serve --s3-api 127.0.0.1:0` as a child process, for the tests of the S3 API
//! (`s3_api/main.rs`, `s3_tests.rs`): on the local store, or with `--store s3://` on a
//! `weed mini`; HTTPS with a test certificate; the S3 API's address read from its start line.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use weir_testkit::cert::TestCert;
use weir_testkit::seaweed::{self, Seaweed};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// Which store the server writes to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Local,
    S3,
}

/// A `weir serve --s3-api` child process; killed on drop.
pub struct Server {
    child: Child,
    /// `http(s)://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The local store's root (`None` for the S3 store).
    pub root: Option<PathBuf>,
    /// Holds the root, the token file and `stderr.log`.
    pub dir: tempfile::TempDir,
    _weed: Option<Seaweed>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server with the token file `tokens`, on `weed`'s bucket if given (else the
/// local store), with HTTPS when `cert` is given.
pub fn start(tokens: &str, weed: Option<Seaweed>, cert: Option<&TestCert>) -> Server {
    start_with(tokens, weed, cert, &[])
}

/// [`start`] with more arguments for `weir serve`.
pub fn start_with(
    tokens: &str,
    weed: Option<Seaweed>,
    cert: Option<&TestCert>,
    args: &[&str],
) -> Server {
    let store = if weed.is_some() {
        Store::S3
    } else {
        Store::Local
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, tokens).unwrap();
    let mut cmd = Command::new(WEIR);
    cmd.arg("serve")
        .arg("--root")
        .arg(&root)
        .args(["--listen", "127.0.0.1:0", "--s3-api", "127.0.0.1:0"])
        .arg("--token-file")
        .arg(&token_file)
        .args(args)
        .env_remove("WEIR_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("stderr.log")).unwrap());
    if let Some(cert) = cert {
        cmd.arg("--tls-cert")
            .arg(&cert.cert_path)
            .arg("--tls-key")
            .arg(&cert.key_path);
    }
    if let Some(weed) = &weed {
        cmd.args(["--store", &format!("s3://{}/s3-api", seaweed::BUCKET)])
            .args(["--s3-endpoint", &weed.endpoint])
            .env("AWS_ACCESS_KEY_ID", seaweed::ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", seaweed::SECRET_KEY);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The S3 API's line comes after the serving lines.
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("weir: S3 API on ").map(str::to_owned));
    let Some(endpoint) = endpoint else {
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
        panic!("weir serve --s3-api did not start: {log}");
    };
    Server {
        child,
        endpoint,
        root: (store == Store::Local).then_some(root),
        dir,
        _weed: weed,
    }
}
