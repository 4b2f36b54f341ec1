//! `weir-bench`: whole-system benchmarks of weir against hyper, raw sockets and memcpy.
//!
//! One subcommand per scenario (`upload`, `timeline`, `plaintext`, `local`, `resume`, `s3`, and
//! outside `all`: `scale`, `s3api`, `webdav`, `services`, `serve-versions`) and `all`.
//! Each starts its servers as child processes of this binary (the hidden `__serve`
//! subcommand), runs the systems interleaved over several rounds, prints its table and writes
//! its section of `docs/BENCHMARKS.md` with an SVG chart beside it. See `README.md` in this
//! crate for how to run them and what each figure means.

mod client;
mod clock;
mod memcpy;
mod prefault;
mod procfs;
mod report;
mod scenario;
mod server;
mod stats;
mod tempwatch;
mod tls;
mod wire;

use clap::{Args, Parser, Subcommand};
use scenario::{Mode, Settings};
use std::path::PathBuf;

/// Every process of this binary, servers included, counts its heap allocations.
#[global_allocator]
static ALLOC: weir_testkit::alloc::Counting = weir_testkit::alloc::Counting;

#[derive(Parser)]
#[command(version, about = "weir's whole-system benchmarks")]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args)]
struct Common {
    /// Smaller sizes and fewer rounds: each scenario in under a minute.
    #[arg(long, global = true)]
    quick: bool,
    /// Tiny sizes and one round, for the smoke test; the figures mean nothing.
    #[arg(long, global = true, hide = true)]
    tiny: bool,
    /// The Markdown report to update; charts go beside it. Default: docs/BENCHMARKS.md for a
    /// full run; a scratch file for `--quick` (its figures must never replace a full run's).
    #[arg(long, global = true)]
    report: Option<PathBuf>,
    /// Rounds per scenario (default: 5 full, 3 quick; fewer for the longer scenarios).
    #[arg(long, global = true)]
    rounds: Option<usize>,
    /// Worker threads of every server (default: nproc).
    #[arg(long, global = true)]
    server_threads: Option<usize>,
    /// Load-generator threads (default: 1; see README.md for why).
    #[arg(long, global = true, default_value_t = 1)]
    client_threads: usize,
}

#[derive(Subcommand)]
enum Cmd {
    /// Seed 000: one large upload, pause-threshold sweep, discard / file / splice sinks.
    Upload(scenario::upload::UploadArgs),
    /// Seed 002: when the handler sees the head and the body, RSS at each point, temp files.
    Timeline(scenario::timeline::TimelineArgs),
    /// Seed 003: plaintext requests/s, pipelined and not, allocations per request.
    Plaintext(scenario::plaintext::PlaintextArgs),
    /// Seed 004: 2 KB POST latency; CPU per byte of 50/100/200 MiB POSTs against raw and memcpy.
    Local(scenario::local::LocalArgs),
    /// Issue 13: a large upload cut at random offsets and resumed, against uninterrupted ones.
    Resume(scenario::resume::ResumeArgs),
    /// Issue 17: a large object through `weir serve --store s3://` and with `S3Store` directly,
    /// on SeaweedFS (skipped without `weed`, unless `WEIR_REQUIRE_TOOLS=1`).
    S3(scenario::s3::S3Args),
    /// Issue 33: a 1 GiB object through weir's S3 API (PutObject, multipart, GetObject) against
    /// SeaweedFS's S3 gateway and weir's `/files/`, server CPU and peak RSS beside throughput.
    /// Not part of `all` (needs `weed`, and several GiB of disk per round).
    S3api(scenario::s3api::S3ApiArgs),
    /// Issue 18 item 7: server CPU per request and per GiB as keep-alive connections grow
    /// (1 to 10,000), weir with 1 and 2 threads and per core, hyper. Not part of `all`.
    Scale(scenario::scale::ScaleArgs),
    /// Issue 34: WebDAV PUT and GET of 1 GiB and PROPFIND of 10,000 entries, weir serve
    /// against dufs and `rclone serve webdav` (rows of a missing peer left empty). Not part of
    /// `all`.
    Webdav(scenario::webdav::WebdavArgs),
    /// Issue 37: weir serve against nginx, dufs, copyparty, SeaweedFS's filer and rclone serve
    /// (large PUT and GET, many small PUTs, concurrent GETs, a listing under load, small GETs),
    /// and the access log's cost. Not part of `all` (rows of a missing peer left empty).
    Services(scenario::services::ServicesArgs),
    /// Issue 32: two `weir` binaries' `weir serve` interleaved (`--old`, `--new`): large `PUT`s
    /// (SHA-256, `--no-hash`, HTTPS, HTTP/2), the large `GET`, small `GET`s at depth 1 and 16,
    /// the S3 store's `PUT` and `GET`, allocations and system calls per `GET`. Not part of
    /// `all`.
    #[command(name = "serve-versions")]
    ServeVersions(scenario::versions::VersionsArgs),
    /// Every scenario, with its default options.
    All,
    /// Runs one server under test (used by the scenarios).
    #[command(name = "__serve", hide = true)]
    Serve(server::ServeArgs),
    /// The `s3` scenario's direct client (one upload or download with `S3Store`).
    #[command(name = "__s3_direct", hide = true)]
    S3Direct(scenario::s3::direct::DirectArgs),
}

/// Where a run writes its report when not told: a full run updates the committed figures, a
/// quick or tiny one a scratch copy under the temporary directory.
fn default_report(mode: Mode) -> PathBuf {
    match mode {
        Mode::Full => concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/BENCHMARKS.md").into(),
        Mode::Quick | Mode::Tiny => std::env::temp_dir().join("weir-bench-quick/BENCHMARKS.md"),
    }
}

fn main() {
    // Every process of the suite (servers of every system, clients) runs with the allocator
    // settings `weir` runs with (weir::malloc): the same for hyper as for weir.
    weir::malloc::tune_for_streaming();
    let cli = Cli::parse();
    if let Cmd::Serve(args) = &cli.cmd {
        server::run_child(args);
    }
    if let Cmd::S3Direct(args) = &cli.cmd {
        scenario::s3::direct::run_child(args);
    }
    let settings = settings(&cli.common);
    let result = match cli.cmd {
        Cmd::Upload(a) => scenario::upload::run(&settings, &a),
        Cmd::Timeline(a) => scenario::timeline::run(&settings, &a),
        Cmd::Plaintext(a) => scenario::plaintext::run(&settings, &a),
        Cmd::Local(a) => scenario::local::run(&settings, &a),
        Cmd::Resume(a) => scenario::resume::run(&settings, &a),
        Cmd::S3(a) => scenario::s3::run(&settings, &a),
        Cmd::S3api(a) => scenario::s3api::run(&settings, &a),
        Cmd::Scale(a) => scenario::scale::run(&settings, &a),
        Cmd::Webdav(a) => scenario::webdav::run(&settings, &a),
        Cmd::Services(a) => scenario::services::run(&settings, &a),
        Cmd::ServeVersions(a) => scenario::versions::run(&settings, &a),
        Cmd::All => scenario::upload::run(&settings, &scenario::upload::UploadArgs::default())
            .and_then(|()| scenario::timeline::run(&settings, &Default::default()))
            .and_then(|()| scenario::plaintext::run(&settings, &Default::default()))
            .and_then(|()| scenario::local::run(&settings, &Default::default()))
            .and_then(|()| scenario::resume::run(&settings, &Default::default()))
            .and_then(|()| scenario::s3::run(&settings, &Default::default())),
        Cmd::Serve(_) | Cmd::S3Direct(_) => unreachable!("handled above"),
    };
    if let Err(e) = result {
        eprintln!("weir-bench: {e}");
        std::process::exit(1);
    }
    eprintln!("weir-bench: report in {}", settings.target.path.display());
}

fn settings(c: &Common) -> Settings {
    let mode = match (c.tiny, c.quick) {
        (true, _) => Mode::Tiny,
        (false, true) => Mode::Quick,
        (false, false) => Mode::Full,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = if cfg!(debug_assertions) {
        ""
    } else {
        " --release"
    };
    let command = format!("cargo run{profile} -p weir-bench -- {}", args.join(" "));
    Settings {
        mode,
        rounds: c.rounds,
        server_threads: c.server_threads.unwrap_or_else(procfs::nproc),
        client_threads: c.client_threads,
        target: report::Target {
            path: normalize(&c.report.clone().unwrap_or_else(|| default_report(mode))),
            command,
        },
    }
}

/// Removes `..` components lexically, so the report path prints cleanly.
fn normalize(p: &std::path::Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_run_never_writes_over_the_committed_figures() {
        let committed = normalize(&default_report(Mode::Full));
        assert!(committed.ends_with("docs/BENCHMARKS.md"));
        for mode in [Mode::Quick, Mode::Tiny] {
            assert_ne!(normalize(&default_report(mode)), committed);
        }
        let told = Cli::parse_from(["weir-bench", "--quick", "--report", "x.md", "all"]);
        assert_eq!(settings(&told.common).target.path, PathBuf::from("x.md"));
        let untold = Cli::parse_from(["weir-bench", "--quick", "all"]);
        assert_ne!(settings(&untold.common).target.path, committed);
    }
}
