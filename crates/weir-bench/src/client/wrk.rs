//! The wrk cross-check: the same plaintext load measured by wrk, to show that the load generator
//! is not what limits the figures.
//!
//! wrk pipelines with a Lua script ([`SCRIPT`], with `DEPTH` replaced) that concatenates `depth`
//! requests; its `Requests/sec` line is the figure. wrk is optional (not installed in CI): without it the cross-check reports why.

use crate::server::Endpoint;
use std::io;
use std::process::Command;
use std::time::Duration;

/// The Lua script that makes wrk send `DEPTH` requests per batch.
pub const SCRIPT: &str = "init = function(args)\n  local r = {}\n  for i = 1, DEPTH do \
r[i] = wrk.format(nil, \"/plaintext\") end\n  req = table.concat(r)\nend\n\
request = function() return req end\n";

/// One wrk run.
pub struct WrkRun {
    /// The command, to print beside the figure.
    pub command: String,
    /// wrk's `Requests/sec`.
    pub requests_per_sec: f64,
}

/// Runs wrk against `GET /plaintext` on `endpoint` (TCP only).
pub fn run(
    endpoint: &Endpoint,
    connections: usize,
    threads: usize,
    depth: usize,
    duration: Duration,
) -> io::Result<WrkRun> {
    let Endpoint::Tcp(addr) = endpoint else {
        return Err(io::Error::other("wrk speaks TCP only"));
    };
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("pipeline.lua");
    std::fs::write(&script, SCRIPT.replace("DEPTH", &depth.to_string()))?;
    let secs = duration.as_secs().max(1);
    let args = [
        format!("-t{threads}"),
        format!("-c{connections}"),
        format!("-d{secs}s"),
        "-s".into(),
        script.display().to_string(),
        format!("http://{addr}/plaintext"),
    ];
    let out = Command::new("wrk").args(&args).output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run wrk ({e}); apt-get install -y wrk"),
        )
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no Requests/sec in wrk output: {text}")))?;
    Ok(WrkRun {
        command: format!(
            "wrk -t{threads} -c{connections} -d{secs}s -s pipeline.lua http://<server>/plaintext"
        ),
        requests_per_sec: rps,
    })
}
