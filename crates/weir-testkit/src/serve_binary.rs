//! The `weir serve` binary as a child process on a port the OS chose.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Spawns `WEIR serve --root ROOT --listen 127.0.0.1:0 ARGS` (stderr to `LOGS/server-stderr.log`,
/// `WEIR_TOKEN` removed from the environment, then `env` added) and waits for its "serving"
/// line; on failure returns its stderr.
///
/// `weir` is the binary's path: `env!("CARGO_BIN_EXE_weir")`, which Cargo sets only for
/// weir-cli's own tests, so callers pass it.
pub fn spawn(
    weir: &Path,
    root: &Path,
    logs: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(Child, SocketAddr), String> {
    let stderr = std::fs::File::create(logs.join("server-stderr.log")).unwrap();
    let mut cmd = Command::new(weir);
    cmd.arg("serve")
        .arg("--root")
        .arg(root)
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("WEIR_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .rsplit_once(" on http://")
        .or_else(|| line.trim().rsplit_once(" on https://"));
    match addr {
        Some((_, addr)) => Ok((child, addr.parse().unwrap())),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(std::fs::read_to_string(logs.join("server-stderr.log")).unwrap_or_default())
        }
    }
}
