//! The S3-compatible API (`weir serve --s3-api`, `serve/routes/s3/`) with real clients:
//! boto3, aws-cli, rclone and s3cmd (`clients.py`, which runs them and checks every transfer
//! byte for byte)
//! against the real `weir` binary on 127.0.0.1, on the local store and on the S3 store
//! (`--store s3://` over SeaweedFS's `weed mini`), over HTTP and, for the `aws-chunked` bodies
//! with checksum trailers that boto3 sends only over TLS, HTTPS.
//!
//! Each test starts its own server (and `weed`) with a token file of two S3 credentials: a
//! writer (read, write, delete) and a reader (read only). Needs `python3` with boto3, aws-cli,
//! rclone, s3cmd, and `weed` for the S3 store: skipped with a loud line without them, failed under
//! `WEIR_REQUIRE_TOOLS=1` (`scripts/test` installs them).
//!
//! Ceph's s3-tests run in `s3_tests.rs`, beside this one.

#[allow(dead_code)] // only `start_weed` is used here
#[path = "../s3_nodes/mod.rs"]
mod s3_nodes;
mod server;

use server::{Server, Store};
use std::path::Path;
use std::process::Command;
use weir_testkit::cert::TestCert;
use weir_testkit::tools;

const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/s3_api/clients.py");

/// The test's S3 credentials (token file lines: token, scopes, `name=` = access key id).
const TOKENS: &str = "writer-secret-0123 read,write,delete name=writer\n\
                      reader-secret-4567 read name=reader\n";

/// Whether boto3 (and, with `aws_cli`, aws-cli) are there; else skipped or failed.
fn clients_present(aws_cli: bool) -> bool {
    let boto3 = tools::python_imports("boto3");
    if !tools::require("boto3", boto3, "pip install boto3") {
        return false;
    }
    !aws_cli
        || tools::require(
            "aws-cli",
            tools::on_path("aws").is_some(),
            "pip install awscli",
        )
}

/// A server on the local store with the test's credentials.
fn start(store: Store, cert: Option<&TestCert>) -> Server {
    assert!(store == Store::Local);
    server::start(TOKENS, None, cert)
}

/// Runs `clients.py`'s `checks` against `server`; fails with its output and the server's log.
fn run(server: &Server, checks: &str, cert: Option<&TestCert>) {
    let root = server
        .root
        .as_deref()
        .map_or("-".into(), |p: &Path| p.display().to_string());
    let mut cmd = Command::new("python3");
    cmd.args([CLIENTS, &server.endpoint, checks, &root])
        .env("WRITER_KEY", "writer")
        .env("WRITER_SECRET", "writer-secret-0123")
        .env("READER_KEY", "reader")
        .env("READER_SECRET", "reader-secret-4567")
        // Nothing from the environment's own AWS configuration.
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL");
    if let Some(cert) = cert {
        cmd.env("AWS_CA_BUNDLE", &cert.cert_path);
    }
    let out = cmd.output().unwrap();
    let log = std::fs::read_to_string(server.dir.path().join("stderr.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "clients.py {checks} failed:\n{}{}\n--- server log ---\n{log}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    for check in checks.split(',') {
        let line = format!("ok: {check}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&line),
            "{check} did not run"
        );
    }
}

#[test]
fn local_boto3_signed_chunks_and_bad_input() {
    if !clients_present(false) {
        return;
    }
    // The access log names the verified caller of each S3 request, and what it stored.
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let log_arg = log.display().to_string();
    let server = server::start_with(TOKENS, None, None, &["--access-log", &log_arg]);
    run(&server, "boto3,bad_input,chunked_signed", None);
    drop(server);
    let lines = std::fs::read_to_string(&log).unwrap();
    let stored = "method=PUT path=/boto3-bucket/dir/sub/obj-1 status=200";
    let line = lines.lines().find(|l| l.contains(stored)).expect(stored);
    assert!(
        line.contains("token=writer") && line.contains("files=boto3-bucket/dir/sub/obj-1"),
        "{line}"
    );
    // A request with a wrong secret names nobody.
    let refused = lines.lines().find(|l| l.contains("status=403")).unwrap();
    assert!(!refused.contains("token="), "{refused}");
}

#[test]
fn local_virtual_hosted_style() {
    if !clients_present(false) {
        return;
    }
    let server = server::start_with(TOKENS, None, None, &["--s3-api-domain", "s3.weir.test"]);
    run(&server, "virtual_host", None);
}

#[test]
fn local_aws_cli() {
    if !clients_present(true) {
        return;
    }
    let server = start(Store::Local, None);
    run(&server, "aws_cli", None);
}

#[test]
fn local_rclone() {
    if !clients_present(false) || !rclone_present() {
        return;
    }
    let server = start(Store::Local, None);
    run(&server, "rclone", None);
}

#[test]
fn s3_store_rclone() {
    if !clients_present(false) || !rclone_present() {
        return;
    }
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let server = server::start(TOKENS, Some(weed), None);
    run(&server, "rclone", None);
}

#[test]
fn local_s3cmd() {
    if !clients_present(false) || !s3cmd_present() {
        return;
    }
    let server = start(Store::Local, None);
    run(&server, "s3cmd", None);
}

#[test]
fn s3_store_s3cmd() {
    if !clients_present(false) || !s3cmd_present() {
        return;
    }
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let server = server::start(TOKENS, Some(weed), None);
    run(&server, "s3cmd", None);
}

/// Whether s3cmd is there (the Debian package); else skipped or failed.
fn s3cmd_present() -> bool {
    let found = tools::on_path("s3cmd").is_some();
    tools::require("s3cmd", found, "apt-get install s3cmd")
}

/// Whether rclone is there (the Debian package); else skipped or failed.
fn rclone_present() -> bool {
    let found = tools::on_path("rclone").is_some();
    tools::require("rclone", found, "apt-get install rclone")
}

#[test]
fn local_https_checksum_trailers() {
    if !clients_present(false) {
        return;
    }
    let cert = TestCert::new();
    let server = start(Store::Local, Some(&cert));
    run(&server, "tls_trailer,boto3", Some(&cert));
}

#[test]
fn s3_store_boto3_signed_chunks_and_bad_input() {
    if !clients_present(false) {
        return;
    }
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let server = server::start(TOKENS, Some(weed), None);
    run(&server, "boto3,bad_input,chunked_signed", None);
}

#[test]
fn s3_store_aws_cli() {
    if !clients_present(true) {
        return;
    }
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let server = server::start(TOKENS, Some(weed), None);
    run(&server, "aws_cli", None);
}

#[test]
fn s3_store_https_checksum_trailers() {
    if !clients_present(false) {
        return;
    }
    let cert = TestCert::new();
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let server = server::start(TOKENS, Some(weed), Some(&cert));
    run(&server, "tls_trailer", Some(&cert));
}

/// boto3's default PutObject over HTTPS (a CRC32 trailer) of an object several
/// `--s3-part-size` long: the S3 store keeps the trailer's checksum though the object's backend
/// multipart upload was created before it came, and gives it to no later version.
#[test]
fn s3_store_https_trailer_checksum_past_one_part() {
    if !clients_present(false) {
        return;
    }
    let cert = TestCert::new();
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let parts = ["--s3-part-size", "5MiB"];
    let server = server::start_with(TOKENS, Some(weed), Some(&cert), &parts);
    run(&server, "tls_trailer_parts", Some(&cert));
}
