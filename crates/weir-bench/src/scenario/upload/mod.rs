//! Seed 000: one large upload over one connection, swept over weir's pause threshold, and the
//! same upload over HTTPS and HTTP/2 (issues #3 and #5).
//!
//! Rows: raw TCP into each sink (discard; file with `write`; file with `splice`), weir at each
//! pause threshold into each sink, hyper and actix-web into each sink, one axum `Router` on weir
//! and on hyper, all over plain HTTP/1.1; then weir and
//! hyper over HTTPS (HTTP/1.1 over TLS), h2c and HTTP/2 over TLS into the discard and file
//! sinks, with weir's default configuration ([`protocols`]). Per round and row: wall time and
//! throughput as the client sees them, the server's peak RSS (reset before the upload), its RSS
//! growth over the upload, and the CPU time of server and client, also per GiB (TLS is
//! CPU-bound, and CPU per GiB is steadier than wall time on a shared machine). Ratios are to
//! raw TCP into the same sink, taken round by round (file rows, splice included, against raw
//! TCP → file with `write`); the protocol rows also get their own ratio table.

mod axum_rows;
mod protocols;
mod put;
pub(super) mod service;

use super::{Peer, Settings, order, size_label, unavailable_note};
use crate::client::upload::{BodySend, Protocol, Upload, Uploader};
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::h2_settings::H2Settings;
use crate::server::sink::empty_dir;
use crate::server::trace::BodyPath;
use crate::server::{Endpoint, ServeArgs, Sink, System};
use crate::stats::Samples;
use crate::tls::BenchCert;
use clap::Args;
use put::PutSources;
use service::WeirServe;
use std::io;
use std::path::{Path, PathBuf};

/// `weir-bench upload` options.
#[derive(Args, Clone, Debug)]
pub struct UploadArgs {
    /// Body size, e.g. `700M` (default: 700 MiB; `--quick`: 200 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// weir pause thresholds to sweep.
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size,
          default_value = "64K,256K,1M,4M")]
    pub thresholds: Vec<usize>,
    /// Extra raw → discard rows with these read buffer sizes (to tune the baseline).
    #[arg(long, value_delimiter = ',', value_parser = super::parse_size, hide = true)]
    pub raw_read_bufs: Vec<usize>,
    /// Protocols besides plain HTTP/1.1 to measure weir and hyper over.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "https,h2c,h2-tls"
    )]
    pub protocols: Vec<Protocol>,
    /// Leave out the HTTPS and HTTP/2 rows.
    #[arg(long, conflicts_with = "protocols")]
    pub no_protocols: bool,
    /// Only the rows whose label contains one of these (e.g. `--rows "weir serve,hyper → file"`),
    /// plus the raw baselines they are compared with. Default: every row.
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<String>,
    /// The `weir` binary for the `weir serve` rows (default: `weir` next to this executable,
    /// which `cargo build --release -p weir-cli` puts there).
    #[arg(long)]
    pub weir: Option<PathBuf>,
    /// Pause the kernel's free page reporting (virtio-balloon) for the run, and restore it after:
    /// on a VM that has it, freed page cache goes back to the host and is faulted in again on
    /// reuse, which makes file rows swing several-fold (`prefault.rs`). Needs root.
    #[arg(long)]
    pub pause_page_reporting: bool,
    /// How the bench's client puts plain HTTP/1.1 bodies into the socket: `write` (the kernel
    /// copies each byte in), or `splice` (the buffer's pages by reference: no client copy, so
    /// rows faster than the `write` client can show it). Every row gets the same client.
    #[arg(long, value_enum, default_value_t = BodySend::Write)]
    pub client_send: BodySend,
}

struct Row {
    peer: Peer,
    system: System,
    sink: Sink,
    protocol: Protocol,
    /// weir's pause threshold, where the command line sets one.
    pause: Option<usize>,
    client: Client,
    /// Index of the row this one is compared with.
    baseline: usize,
    seconds: Samples,
    gib_s: Samples,
    peak_mib: Samples,
    growth_mib: Samples,
    cpu_s: Samples,
    /// Server CPU seconds per GiB of body.
    cpu_per_gib: Samples,
    /// Client CPU seconds per GiB of body.
    client_per_gib: Samples,
    /// The last round's body path, where the server reports one.
    path: Option<BodyPath>,
    /// The TLS version and suite the last round negotiated.
    tls: Option<String>,
}

/// Who uploads in a row, and how.
enum Client {
    /// weir-bench's own client: `POST /upload` over the row's protocol.
    Bench,
    /// weir-bench's own client: `PUT /files/…` to `weir serve`, which stores under this root.
    Service(PathBuf),
    /// The `weir` binary's `weir put`, sending the way it says.
    WeirPut(PathBuf, put::Send),
}

impl Row {
    /// One upload of `size` bytes to this row's server.
    fn upload(&self, clients: &Clients, endpoint: &Endpoint, size: u64) -> io::Result<Upload> {
        match &self.client {
            Client::Bench => clients.uploader.upload_over(self.protocol, endpoint, size),
            Client::Service(..) => clients
                .uploader
                .put_file(endpoint, service::STORED_NAME, size),
            Client::WeirPut(weir, send) => clients.put.upload(weir, *send, endpoint, size),
        }
    }
}

/// The clients of the rows: the bench's own, and `weir put`'s files.
struct Clients {
    uploader: Uploader,
    put: PutSources,
}

/// The sinks of the HTTPS and HTTP/2 rows.
const PROTOCOL_SINKS: [Sink; 2] = [Sink::Discard, Sink::File];

/// Labels of the two baselines every other row is compared with.
const RAW_DISCARD: &str = "raw TCP → discard";
const RAW_FILE: &str = "raw TCP → file (write)";

/// How a row's server is started.
enum Start {
    /// A `weir-bench __serve` child, uploaded to over `Protocol`.
    Bench(ServeArgs, Protocol),
    /// The `weir` binary's `weir serve`.
    Service(WeirServe),
    /// A `weir-bench __serve` child, uploaded to by `weir put`.
    Put(ServeArgs, put::Send),
}

fn rows(
    s: &Settings,
    a: &UploadArgs,
    dir: &Path,
    cert: Option<&BenchCert>,
) -> io::Result<Vec<Row>> {
    let mut specs: Vec<(String, Start)> = Vec::new();
    let h1 = Protocol::H1;
    let bench = |args: ServeArgs, protocol: Protocol| Start::Bench(args, protocol);
    for sink in [Sink::Discard, Sink::File, Sink::Splice] {
        let args = s.serve_args(System::RawUpload, sink, dir);
        specs.push((format!("raw TCP → {sink}"), bench(args, h1)));
    }
    // The honest baselines for the service: hashing inline costs one core SHA-256 on top of the
    // copy; durability costs the writeback that `fsync` waits for.
    let mut args = s.serve_args(System::RawUpload, Sink::File, dir);
    args.sha256 = true;
    specs.push(("raw TCP → file + SHA-256 (write)".into(), bench(args, h1)));
    let mut args = s.serve_args(System::RawUpload, Sink::File, dir);
    args.fsync = true;
    specs.push(("raw TCP → file (write + fsync)".into(), bench(args, h1)));
    // The same work as `weir serve`'s hashed PUT done the simplest way on two cores: write each
    // buffer, hash it on a second thread while the next one is read, `fsync` at the end.
    let mut args = s.serve_args(System::RawUpload, Sink::File, dir);
    args.sha256_thread = true;
    args.fsync = true;
    specs.push((service::RAW_SHA_THREAD.into(), bench(args, h1)));
    for &b in &a.raw_read_bufs {
        let mut args = s.serve_args(System::RawUpload, Sink::Discard, dir);
        args.read_buf = Some(b);
        let label = format!("raw TCP → discard, {} reads", size_label(b as u64));
        specs.push((label, bench(args, h1)));
    }
    let weir_h1 = |t: usize, sink: Sink| {
        let mut args = s.serve_args(System::Weir, sink, dir);
        args.pause_threshold = Some(t);
        let label = format!("weir, pause {} → {sink}", size_label(t as u64));
        (label, Start::Bench(args, h1))
    };
    for &t in &a.thresholds {
        for sink in [Sink::Discard, Sink::Chunks, Sink::File, Sink::Splice] {
            specs.push(weir_h1(t, sink));
        }
    }
    let protocols = a.protocols();
    // The protocol rows are compared with weir's plain HTTP/1.1 at its default pause threshold
    // (the configuration they run with): measure that even when the sweep leaves it out.
    let default_pause = weir::Config::default().pause_threshold;
    if !protocols.is_empty() && !a.thresholds.contains(&default_pause) {
        for sink in PROTOCOL_SINKS {
            specs.push(weir_h1(default_pause, sink));
        }
    }
    for sink in [Sink::Discard, Sink::File] {
        let args = s.serve_args(System::Hyper, sink, dir);
        specs.push((format!("hyper → {sink}"), bench(args, h1)));
    }
    // actix-web 4, a peer row (issue 14): its `Payload` stream into the same sinks.
    for sink in [Sink::Discard, Sink::File] {
        let args = s.serve_args(System::ActixWeb, sink, dir);
        specs.push((axum_rows::label(axum_rows::ACTIX, sink), bench(args, h1)));
    }
    // One axum `Router` on weir and on hyper (issue 14): weir's default configuration (pause
    // threshold included), as an axum user moving to weir gets it.
    for (system, name, sinks) in [
        (
            System::WeirAxum,
            axum_rows::WEIR,
            &[Sink::Discard, Sink::File, Sink::Splice][..],
        ),
        (
            System::HyperAxum,
            axum_rows::HYPER,
            &[Sink::Discard, Sink::File][..],
        ),
    ] {
        for &sink in sinks {
            let args = s.serve_args(system, sink, dir);
            specs.push((axum_rows::label(name, sink), bench(args, h1)));
        }
    }
    // `weir put` to the server of weir's default discard row (added here when the sweep
    // leaves that row out, so the two clients are always compared on the same server).
    let mut args = s.serve_args(System::Weir, Sink::Discard, dir);
    args.pause_threshold = Some(default_pause);
    if !specs.iter().any(|(label, _)| label == put::SAME_SERVER) {
        specs.push(weir_h1(default_pause, Sink::Discard));
    }
    for send in put::Send::ALL {
        specs.push((send.label().into(), Start::Put(args.clone(), send)));
    }
    for mode in [WeirServe::Sha256, WeirServe::NoHash] {
        specs.push((mode.label().into(), Start::Service(mode)));
    }
    for &protocol in &protocols {
        for system in [System::Weir, System::Hyper] {
            for sink in PROTOCOL_SINKS {
                let mut args = s.serve_args(system, sink, dir);
                if protocol.is_tls() {
                    let cert =
                        cert.ok_or_else(|| io::Error::other("TLS rows need a certificate"))?;
                    args.tls_cert = Some(cert.cert.clone());
                    args.tls_key = Some(cert.key.clone());
                }
                args.h2c = protocol == Protocol::H2c;
                let name = if system == System::Weir {
                    "weir"
                } else {
                    "hyper"
                };
                specs.push((
                    format!("{name}, {protocol} → {sink}"),
                    bench(args, protocol),
                ));
            }
        }
    }
    // `--rows`: keep the rows asked for, and the baselines they are compared with.
    let put_asked = a.rows.iter().any(|r| {
        put::Send::ALL
            .iter()
            .any(|s| s.label().contains(r.as_str()))
    });
    specs.retain(|(label, _)| {
        a.rows.is_empty()
            || label == RAW_DISCARD
            || label == RAW_FILE
            || (put_asked && label == put::SAME_SERVER)
            || a.rows.iter().any(|r| label.contains(r.as_str()))
    });
    let weir_bin = if specs
        .iter()
        .any(|(_, k)| matches!(k, Start::Service(_) | Start::Put(..)))
    {
        Some(service::weir_binary(a.weir.as_deref())?)
    } else {
        None
    };
    let mut rows = Vec::new();
    for (i, (label, start)) in specs.into_iter().enumerate() {
        let weir = || {
            weir_bin
                .clone()
                .ok_or_else(|| io::Error::other("no weir binary"))
        };
        let (peer, system, sink, protocol, pause, client) = match start {
            Start::Bench(args, protocol) => (
                Peer::start(label, &args)?,
                args.system,
                args.sink,
                protocol,
                args.pause_threshold,
                Client::Bench,
            ),
            Start::Put(args, put::Send::Curl) if !put::curl_available() => (
                Peer {
                    label,
                    server: Err("`curl` is not installed".into()),
                },
                args.system,
                args.sink,
                h1,
                args.pause_threshold,
                Client::WeirPut(PathBuf::new(), put::Send::Curl),
            ),
            Start::Put(args, send) => (
                Peer::start(label, &args)?,
                args.system,
                args.sink,
                h1,
                args.pause_threshold,
                Client::WeirPut(weir()?, send),
            ),
            Start::Service(mode) => {
                let root = dir.join(format!("weir-serve-{i}"));
                let peer = Peer::start_weir_serve(label, &weir()?, &root, mode.args())?;
                (
                    peer,
                    System::Weir,
                    mode.sink(),
                    h1,
                    None,
                    Client::Service(root),
                )
            }
        };
        rows.push(Row {
            peer,
            system,
            sink,
            protocol,
            pause,
            client,
            baseline: 0,
            seconds: Samples::default(),
            gib_s: Samples::default(),
            peak_mib: Samples::default(),
            growth_mib: Samples::default(),
            cpu_s: Samples::default(),
            cpu_per_gib: Samples::default(),
            client_per_gib: Samples::default(),
            path: None,
            tls: None,
        });
    }
    let find = |label: &str| rows.iter().position(|r| r.peer.label == label);
    let (discard, file) = (find(RAW_DISCARD), find(RAW_FILE));
    for r in &mut rows {
        let file_row = matches!(r.sink, Sink::File | Sink::Splice);
        r.baseline = if file_row { file } else { discard }.unwrap_or(0);
    }
    Ok(rows)
}

/// Removes what the last upload stored (files of the file sinks, the `weir serve` rows'
/// stored file), then `syncfs`: outside the timing, so that no row pays for another's.
fn clean_up(dir: &Path, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        if let Client::Service(root) = &r.client {
            service::remove_stored(root)?;
        }
    }
    empty_dir(dir)
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &UploadArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(700 << 20, 200 << 20, 4 << 20)) as u64;
    let rounds = s.rounds(5, 3);
    let data = tempfile::tempdir()?;
    let protocols = a.protocols();
    // Full runs only touch free memory: a quick run's files are small, and its seconds count.
    let (_reporting_pause, memory_note) =
        crate::prefault::prepare(a.pause_page_reporting, s.pick(true, false, false))?;
    let cert = if protocols.iter().any(|p| p.is_tls()) {
        Some(BenchCert::generate()?)
    } else {
        None
    };
    let mut rows = rows(s, a, data.path(), cert.as_ref())?;
    let clients = Clients {
        uploader: match &cert {
            Some(c) => Uploader::new().with_tls(c),
            None => Uploader::new(),
        }
        .with_send(a.client_send),
        // Beside the directory the rounds empty, not in it.
        put: PutSources::new(data.path().join("put-sources"))?,
    };
    // One small upload per server first, so that no row pays for first-touch page faults.
    for r in &rows {
        if let Ok(p) = &r.peer.server {
            r.upload(&clients, p.endpoint(), size / 8 + 1)
                .map_err(|e| io::Error::other(format!("{}: {e}", r.peer.label)))?;
        }
    }
    let gib = size as f64 / (1u64 << 30) as f64;
    clean_up(data.path(), &rows)?;
    let mut peak_note = String::new();
    for round in 0..rounds {
        for i in order(rows.len(), round) {
            let Ok(p) = &mut rows[i].peer.server else {
                continue;
            };
            // Without permission to write clear_refs the peak is since the server started,
            // which only overstates it; say so in the report rather than fail.
            if let Err(e) = p.reset_peak() {
                peak_note = format!(
                    " (Could not reset the peak here: {e}; peaks are since each server started.)"
                );
            }
            let before = p.stats()?;
            let endpoint = p.endpoint().clone();
            let up = rows[i]
                .upload(&clients, &endpoint, size)
                .map_err(|e| io::Error::other(format!("{}: {e}", rows[i].peer.label)))?;
            let after = match &mut rows[i].peer.server {
                Ok(p) => p.stats()?,
                Err(_) => continue,
            };
            clean_up(data.path(), &rows)?;
            let r = &mut rows[i];
            let secs = up.seconds();
            r.seconds.push(secs);
            r.gib_s.push(gib / secs);
            r.peak_mib.push(after.peak_kib as f64 / 1024.0);
            r.growth_mib
                .push(after.peak_kib.saturating_sub(before.rss_kib) as f64 / 1024.0);
            let cpu_s = after.cpu_ns.saturating_sub(before.cpu_ns) as f64 / 1e9;
            r.cpu_s.push(cpu_s);
            r.cpu_per_gib.push(cpu_s / gib);
            r.client_per_gib.push(up.client_cpu_ns as f64 / 1e9 / gib);
            r.path = up.trace.path;
            r.tls = up.tls;
        }
        eprintln!("upload: round {}/{rounds} done", round + 1);
    }
    let mut t = Table::new(&[
        "System → sink",
        "Time (s)",
        "GiB/s",
        "× raw (same sink)",
        "Peak RSS (MiB)",
        "RSS growth (MiB)",
        "Server CPU (s)",
        "Server CPU (s/GiB)",
        "Client CPU (s/GiB)",
        "Body path: direct / copied / spliced (MiB), peak read-ahead (KiB)",
    ]);
    let mut bars = Vec::new();
    for r in &rows {
        match &r.peer.server {
            Ok(_) => {
                let ratio = r.gib_s.ratio_to(&rows[r.baseline].gib_s);
                t.row(vec![
                    r.peer.label.clone(),
                    r.seconds.show(3),
                    r.gib_s.show(2),
                    ratio.show(2),
                    r.peak_mib.show(1),
                    r.growth_mib.show(1),
                    r.cpu_s.show(3),
                    r.cpu_per_gib.show(3),
                    r.client_per_gib.show(3),
                    r.path.map_or("—".into(), |p| {
                        let mib = |n: u64| n as f64 / (1u64 << 20) as f64;
                        format!(
                            "{:.1} / {:.1} / {:.1}, {}",
                            mib(p.direct),
                            mib(p.copied),
                            mib(p.spliced),
                            p.peak_ahead >> 10
                        )
                    }),
                ]);
                bars.push(Bar {
                    label: r.peer.label.clone(),
                    value: Some((r.gib_s.median(), r.gib_s.min(), r.gib_s.max())),
                });
            }
            Err(why) => {
                t.row(vec![r.peer.label.clone(), unavailable_note(why)]);
                bars.push(Bar {
                    label: r.peer.label.clone(),
                    value: None,
                });
            }
        }
    }
    let body = format!(
        "One connection uploads {} (`Content-Length`) from memory, {}; \
         {rounds} rounds, systems interleaved; servers use {} worker threads. \
         Sinks: discard (reads into a 1 MiB buffer; weir reads the socket straight into it, so \
         its pause threshold does not come into play), discard of the server's chunks (weir's \
         `read_body_chunk`: pieces of at most the pause threshold, the sink on which the \
         threshold matters), file (`std::fs` writes of 256 KiB on the \
         connection's task; raw fills each 256 KiB buffer before writing it), splice \
         (socket → pipe → file: raw with `splice(2)` through a 1 MiB pipe, weir with \
         `Exchange::body_to_file`). Files go to a temporary directory ({}) and are removed after \
         each upload, then `syncfs`, outside the timing (so no row pays for the filesystem work \
         of the one before).{memory_note} Peak RSS is `VmHWM`, reset before each upload; growth \
         is the peak minus the RSS before the upload.{peak_note} Server CPU is user + system time \
         of the server process over the upload, also per GiB of body; client CPU is the time of \
         the client's thread (which also drives its HTTP/2 connection), per GiB.{}\n\n{}\n\
         Body path (weir only, from its `BodyStats`, last round): bytes read from the socket \
         straight into the handler's buffer, bytes read ahead into weir's buffer and copied \
         out, bytes spliced to the file, and the most body bytes held ahead of the handler.\n\n\
         Ratios are GiB/s over the raw row of the same round: discard and chunk rows against \
         raw → discard, file and splice rows against raw → file (write){}.\n{}{}{}{}",
        size_label(size),
        match a.client_send {
            BodySend::Write => format!(
                "in {} writes",
                size_label(crate::client::upload::CHUNK as u64)
            ),
            BodySend::Splice => "its plain HTTP/1.1 bodies spliced (`--client-send splice`: the \
                 buffer's pages `vmsplice`d into a 1 MiB pipe, then `splice`d to the socket, so \
                 the client copies nothing and what is left of its work is TCP's; TLS and \
                 HTTP/2 bodies are written)"
                .to_string(),
        },
        s.server_threads,
        data.path().parent().unwrap_or(data.path()).display(),
        protocol_note(&rows),
        t.markdown(),
        if protocols.is_empty() {
            ""
        } else {
            "; the HTTPS and HTTP/2 rows too (raw is plain TCP)"
        },
        put::ratio_note(&rows).unwrap_or_default(),
        axum_rows::ratio_table(&rows)
            .map(|t| format!(
                "\nOne axum `Router` (`src/server/axum_app.rs`) served by weir \
                 (`weir::ServiceHandler`, its default configuration) and by hyper \
                 (`http1::Builder` with hyper-util's `TowerToHyperService`): discard drains the \
                 body's `http_body` frames, file (write) writes each frame with `std::fs`, file \
                 (splice) is weir's `ExchangeHandle::to_file` from the handler. Medians of \
                 round-by-round ratios (for server CPU per GiB, above 1 means the first costs \
                 more CPU per byte):\n\n{t}"
            ))
            .unwrap_or_default(),
        protocols::ratio_table(&rows)
            .map(|t| format!(
                "\nHTTPS and HTTP/2 against plain HTTP/1.1 on the same server, and weir against \
                 hyper on the same protocol (medians of round-by-round ratios; for server CPU per \
                 GiB, above 1 means the first costs more CPU per byte; weir's HTTP/1.1 row is the \
                 one at its default pause threshold, {}):\n\n{t}",
                size_label(weir::Config::default().pause_threshold as u64)
            ))
            .unwrap_or_default(),
        service::ratio_table(&rows)
            .map(|t| format!(
                "\nThe service: `weir serve` (the `weir` binary, its defaults: {} pause threshold, \
                 one runtime worker per core) storing a `PUT /files/{}` from the same client; \
                 SHA-256 (default: the body is read into pooled buffers, written, and hashed on a \
                 hashing thread beside the connection's task past the first MiBs) or `--no-hash` \
                 (splice). It answers after its commit: `fsync` of the file, rename, `fsync` of \
                 the directory; raw → file (write) does none of that, raw → file (write + fsync) \
                 syncs its file before answering, raw → file + SHA-256 hashes each 256 KiB \
                 buffer inline before writing it, raw → file + SHA-256 thread (write + fsync) \
                 writes each 256 KiB buffer and hands it to a hashing thread while it reads the \
                 next (three buffers take turns), then syncs the file. Server CPU of `weir serve` is read from \
                 `/proc/<pid>/stat` (10 ms ticks). Medians of round-by-round ratios:\n\n{t}",
                size_label(weir::Config::default().pause_threshold as u64),
                service::STORED_NAME,
            ))
            .unwrap_or_default()
    );
    let section = Section {
        scenario: "upload",
        title: if protocols.is_empty() {
            "upload: one large HTTP/1.1 upload, pause-threshold sweep (seed 000)".into()
        } else {
            "upload: one large upload, pause-threshold sweep; HTTPS and HTTP/2 (seed 000)".into()
        },
        body,
        charts: vec![Chart {
            name: "upload".into(),
            title: format!("{} upload over one loopback connection", size_label(size)),
            unit: "GiB/s (median; whisker: min–max)".into(),
            bars,
        }],
    };
    drop(rows); // stop the servers: the report counts their CPU as the bench's own
    report::publish(&s.target, &ctx, &section)
}

/// How the HTTPS and HTTP/2 rows were run, for the report; empty when none ran.
fn protocol_note(rows: &[Row]) -> String {
    if !rows.iter().any(|r| r.protocol != Protocol::H1) {
        return String::new();
    }
    let mut negotiated: Vec<&str> = rows.iter().filter_map(|r| r.tls.as_deref()).collect();
    negotiated.sort_unstable();
    negotiated.dedup();
    let negotiated = if negotiated.is_empty() {
        "—".to_string()
    } else {
        negotiated.join(", ")
    };
    format!(
        "\n\nHTTPS and HTTP/2 rows run weir with its default configuration and hyper 1.x \
         (`http1::Builder`, or `http2::Builder` with hyper-util's `TokioExecutor`); over TLS \
         both use rustls with the ring provider, AES-128-GCM first and the server's order of \
         suites, and a self-signed certificate for `localhost` generated for the run (rcgen); \
         negotiated: {negotiated}. HTTP/2 settings of both servers (weir's defaults, given to \
         hyper's builder): {}. Clients: HTTPS writes the same pieces through a blocking rustls \
         stream with a send buffer of {} (1 MiB of records and their overheads: one `writev` per MiB, as `weir put`); \
         HTTP/2 (h2c by prior knowledge, or ALPN `h2`) is the `h2` crate on one stream, asking \
         for {} of send capacity at a time, its own receive windows {}, DATA frames at the \
         server's largest frame size. Each TLS client offers one ALPN protocol and fails if the \
         server picks another.",
        H2Settings::weir_defaults(),
        size_label(crate::tls::CLIENT_SEND_BUFFER as u64),
        size_label(crate::client::h2_upload::SEND_BUFFER as u64),
        size_label(crate::client::h2_upload::CLIENT_WINDOW.into()),
    )
}

impl UploadArgs {
    /// The protocols besides plain HTTP/1.1 this run measures.
    fn protocols(&self) -> Vec<Protocol> {
        if self.no_protocols {
            return Vec::new();
        }
        // `H1` cannot be named on the command line (the sweep is HTTP/1.1), only in code.
        let mut p: Vec<Protocol> = Vec::new();
        for &q in &self.protocols {
            if q != Protocol::H1 && !p.contains(&q) {
                p.push(q);
            }
        }
        p
    }
}

impl Default for UploadArgs {
    fn default() -> Self {
        Self {
            size: None,
            thresholds: vec![64 << 10, 256 << 10, 1 << 20, 4 << 20],
            raw_read_bufs: Vec::new(),
            protocols: vec![Protocol::Https, Protocol::H2c, Protocol::H2Tls],
            no_protocols: false,
            rows: Vec::new(),
            weir: None,
            pause_page_reporting: false,
            client_send: BodySend::Write,
        }
    }
}
