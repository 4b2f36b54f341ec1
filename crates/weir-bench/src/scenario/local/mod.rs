//! Seed 004: local requests, small and large, over TCP and Unix sockets.
//!
//! (a) Latency of a 2 KB POST (p50/p90/p99/max): one connection sending sequentially; then
//! `connections` connections in a closed loop (throughput at saturation); then the same
//! connections paced at `--rate` requests/s, latency from the scheduled send time. On an idle VM
//! a single connection's latency is dominated by CPU wake-ups, the same for every server, so the
//! paced p99 against the raw responder's is the figure that tells servers apart.
//!
//! (b) CPU cost per byte of large POSTs (50, 100, 200 MiB by default): the server's CPU time
//! (user + system, whole process) and the wall time, for each system and size, against a raw
//! receiver on the same transport and a memcpy of the same size in this process. The slope of CPU
//! time over the sizes is the cost per byte; `(slope − raw slope) / memcpy slope` estimates the
//! extra copies per byte a server makes beyond the one every receiver makes (kernel → user).

mod cpu;
mod latency;

use super::Settings;
use crate::report::{self, Section};
use crate::server::{ServeArgs, Sink, System};
use clap::Args;
use std::io;
use std::path::Path;
use std::time::Duration;

/// `weir-bench local` options.
#[derive(Args, Clone, Debug)]
pub struct LocalArgs {
    /// POST body size for the latency runs.
    #[arg(long, value_parser = super::parse_size, default_value = "2048")]
    pub post_size: usize,
    /// Connections for the loaded latency runs.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Total request rate of the paced latency run: well under every system's capacity on a
    /// 2-core machine shared with the client, so that latency, not saturation, is measured.
    #[arg(long, default_value_t = 20_000.0)]
    pub rate: f64,
    /// Large POST sizes (default: 50M,100M,200M; `--quick`: 25M,50M,100M).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size)]
    pub sizes: Vec<usize>,
    /// Measured window per latency run (default: 5s; `--quick`: 1s).
    #[arg(long, value_parser = super::parse_duration)]
    pub window: Option<Duration>,
    /// Only the paced latency table (no sequential or closed-loop run, no large POSTs): for
    /// many rounds of the figure that compares servers.
    #[arg(long)]
    pub paced_only: bool,
}

impl Default for LocalArgs {
    fn default() -> Self {
        Self {
            post_size: 2048,
            connections: 64,
            rate: 20_000.0,
            sizes: Vec::new(),
            window: None,
            paced_only: false,
        }
    }
}

/// Systems and transports compared; the first two of each group are the raw baselines. With
/// `per_core`, weir also as one current-thread runtime per thread (`Server::serve_per_core`),
/// the model the raw responder follows (an event loop per thread).
fn specs(
    s: &Settings,
    system: System,
    dir: &Path,
    per_core: bool,
) -> Vec<(String, ServeArgs, bool)> {
    let mut out = Vec::new();
    let base = match system {
        System::RawResponder => "raw responder",
        System::RawUpload => "raw",
        _ => unreachable!("only raw systems are baselines"),
    };
    for (label, sys) in [
        (base, system),
        ("weir", System::Weir),
        ("hyper", System::Hyper),
    ] {
        for unix in [false, true] {
            let mut args = s.serve_args(sys, Sink::Discard, dir);
            if unix {
                args.unix = Some(dir.join(format!("{label}.sock").replace(' ', "-")));
            }
            let transport = if unix { "Unix" } else { "TCP" };
            out.push((format!("{label} {transport}"), args, unix));
        }
    }
    if per_core {
        for unix in [false, true] {
            let mut args = s.serve_args(System::Weir, Sink::Discard, dir);
            args.per_core = true;
            let transport = if unix {
                args.unix = Some(dir.join("weir-per-core.sock"));
                "Unix"
            } else {
                "TCP"
            };
            out.push((format!("weir per-core {transport}"), args, unix));
        }
    }
    out
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &LocalArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let dir = tempfile::tempdir()?;
    let mut body = latency::run(s, a, dir.path())?;
    let mut charts = vec![body.1];
    if !a.paced_only {
        let (cpu_text, chart) = cpu::run(s, a, dir.path())?;
        body.0.push_str(&cpu_text);
        charts.insert(0, chart);
    }
    let section = Section {
        scenario: "local",
        title: "local: small-POST latency and CPU per byte of large POSTs (seed 004)".into(),
        body: body.0,
        charts,
    };
    report::publish(&s.target, &ctx, &section)
}
