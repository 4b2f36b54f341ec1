//! Issue 13: resumable uploads against uninterrupted ones, on one `weir serve` in its default
//! configuration (SHA-256 on), with one file's bytes, in the same rounds.
//!
//! Rows, run interleaved (forward, then backward) every round:
//! - the baseline: a plain `PUT` (`Content-Length` only), uninterrupted;
//! - the same `PUT` with `Upload-Complete: ?1` (the draft's creation, sent whole);
//! - that creation cut by the client at `--cuts` offsets drawn from a seeded generator (printed
//!   in the report), each cut followed by `HEAD` for the offset and `PATCH` from it
//!   (`client::resumable`);
//! - `weir put --no-resumable` (a plain `PUT`) and `weir put` (its default, the draft's fields
//!   on), both `--no-digest`, uninterrupted, timed from spawn to exit.
//!
//! The bench's client cuts, not a proxy: it knows to the byte where it cut and how much the
//! kernel accepted, and no relay copies the baseline's bytes too. After every upload the stored
//! file is read back from the store's directory and its size and SHA-256 compared with the
//! body's (outside the timing), and the service's own SHA-256 too where it answers one.

mod cuts;

use super::upload::service::weir_binary;
use super::{Peer, Settings, order, size_label};
use crate::client::resumable::{self, Body, Cut, Mode, Outcome};
use crate::client::upload::{CHUNK, body_pattern};
use crate::clock;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::Endpoint;
use crate::server::sink::empty_dir;
use crate::stats::Samples;
use clap::Args;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `weir-bench resume` options.
#[derive(Args, Clone, Debug)]
pub struct ResumeArgs {
    /// Upload size (default: 700 MiB; `--quick`: 200 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Cuts per resumed upload.
    #[arg(long, default_value_t = 3)]
    pub cuts: usize,
    /// Seed of the cut offsets.
    #[arg(long, default_value_t = 13)]
    pub seed: u64,
    /// The `weir` binary (default: `weir` next to this executable).
    #[arg(long)]
    pub weir: Option<PathBuf>,
}

impl Default for ResumeArgs {
    fn default() -> Self {
        Self {
            size: None,
            cuts: 3,
            seed: 13,
            weir: None,
        }
    }
}

/// The name every upload is stored under (removed after each).
const STORED: &str = "resume.bin";

/// Who uploads in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    /// The bench's client, uninterrupted.
    Whole(Mode),
    /// The bench's client, cut and resumed.
    Cut,
    /// `weir put --no-digest`, with the draft's fields (`true`) or `--no-resumable`.
    WeirPut(bool),
}

const PLAIN: &str = "PUT, uninterrupted (baseline)";
const CREATION: &str = "PUT + Upload-Complete: ?1, uninterrupted";
const WEIR_PUT_PLAIN: &str = "weir put --no-resumable";
const WEIR_PUT: &str = "weir put (resumable, its default)";

fn label(c: Client, cuts: usize) -> String {
    match c {
        Client::Whole(Mode::Plain) => PLAIN.into(),
        Client::Whole(Mode::Resumable) => CREATION.into(),
        Client::Cut => format!("PUT + Upload-Complete: ?1, cut {cuts}×, resumed (HEAD + PATCH)"),
        Client::WeirPut(false) => WEIR_PUT_PLAIN.into(),
        Client::WeirPut(true) => WEIR_PUT.into(),
    }
}

struct Row {
    client: Client,
    label: String,
    seconds: Samples,
    gib_s: Samples,
    /// Server CPU seconds over the upload.
    cpu_s: Samples,
    /// The bench's rows: from the last body byte written to the final answer.
    after_last_s: Samples,
    /// Cut rows: time from each cut to the next append's go-ahead, summed per upload.
    reconnect_s: Samples,
    /// Cut rows: body bytes sent minus the file's size, per upload (MiB).
    sent_twice_mib: Samples,
    /// Cut rows: appends refused with 409 per upload.
    conflicts: Samples,
}

/// What one round of one row measured.
struct Measured {
    seconds: f64,
    outcome: Option<Outcome>,
}

/// The file `weir put` sends: the same bytes as the bench client's body.
fn write_source(path: &Path, chunk: &[u8], size: u64) -> io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let mut left = size;
    while left > 0 {
        let n = (chunk.len() as u64).min(left) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// SHA-256 of `size` bytes of `chunk` repeated.
fn body_sha256(chunk: &[u8], size: u64) -> String {
    let mut h = Sha256::new();
    let mut left = size;
    while left > 0 {
        let n = (chunk.len() as u64).min(left) as usize;
        h.update(&chunk[..n]);
        left -= n as u64;
    }
    hex(&h.finalize())
}

/// SHA-256 and size of the file at `path`.
fn file_sha256(path: &Path) -> io::Result<(String, u64)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok((hex(&h.finalize()), size));
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `weir put --no-digest [--no-resumable] FILE URL`, timed from spawn to exit.
fn weir_put(weir: &Path, state: &Path, file: &Path, url: &str, resumable: bool) -> io::Result<f64> {
    let mut cmd = Command::new(weir);
    cmd.arg("put").arg("--no-digest");
    if !resumable {
        cmd.arg("--no-resumable");
    }
    cmd.arg(file)
        .arg(url)
        .env_remove("WEIR_TOKEN")
        // Its resume state goes to the run's directory, not the user's.
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = clock::monotonic_ns();
    let out = cmd.spawn()?.wait_with_output()?;
    let seconds = (clock::monotonic_ns() - start) as f64 / 1e9;
    let said = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !said.starts_with("Uploaded") || said.contains("resumed") {
        return Err(io::Error::other(format!(
            "weir put failed or resumed ({}): {}",
            out.status,
            said.trim()
        )));
    }
    Ok(seconds)
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &ResumeArgs) -> io::Result<()> {
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(700 << 20, 200 << 20, 4 << 20)) as u64;
    let rounds = s.rounds(3, 3);
    let weir = weir_binary(a.weir.as_deref())?;
    let data = tempfile::tempdir()?;
    let root = data.path().join("root");
    let state = data.path().join("state");
    let source = data.path().join("source.bin");
    let chunk = body_pattern(CHUNK);
    let body = Body {
        chunk: &chunk,
        size,
    };
    write_source(&source, &chunk, size)?;
    let expected = body_sha256(&chunk, size);
    let mut peer = Peer::start_weir_serve("weir serve", &weir, &root, &[])?;
    let endpoint = match &peer.server {
        Ok(p) => p.endpoint().clone(),
        Err(why) => return Err(io::Error::other(why.clone())),
    };
    let Endpoint::Tcp(addr) = endpoint else {
        return Err(io::Error::other("weir serve listens on TCP"));
    };
    let target = format!("/files/{STORED}");
    let url = format!("http://{addr}{target}");
    let clients = [
        Client::Whole(Mode::Plain),
        Client::Whole(Mode::Resumable),
        Client::Cut,
        Client::WeirPut(false),
        Client::WeirPut(true),
    ];
    let mut rows: Vec<Row> = clients
        .iter()
        .map(|&client| Row {
            client,
            label: label(client, a.cuts),
            seconds: Samples::default(),
            gib_s: Samples::default(),
            cpu_s: Samples::default(),
            after_last_s: Samples::default(),
            reconnect_s: Samples::default(),
            sent_twice_mib: Samples::default(),
            conflicts: Samples::default(),
        })
        .collect();
    let mut rng = cuts::Rng::new(a.seed);
    let mut all_cuts: Vec<(usize, Vec<Cut>)> = Vec::new();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let gib = size as f64 / (1u64 << 30) as f64;
    // One small upload first, so that no row pays for the server's first-touch page faults.
    let warm = Body {
        chunk: &chunk,
        size: size / 8 + 1,
    };
    resumable::put(&endpoint, &target, warm, Mode::Plain)?;
    empty_dir(&root)?;
    for round in 0..rounds {
        let offsets = rng.cuts(size, a.cuts);
        for i in order(rows.len(), round) {
            let client = rows[i].client;
            let Ok(server) = &mut peer.server else {
                unreachable!("checked above")
            };
            let before = server.stats()?;
            let measured = match client {
                Client::Whole(mode) => {
                    let o = resumable::put(&endpoint, &target, body, mode)?;
                    Measured {
                        seconds: o.seconds,
                        outcome: Some(o),
                    }
                }
                Client::Cut => {
                    let o =
                        resumable::put_cut(&endpoint, &target, body, Mode::Resumable, &offsets)?;
                    Measured {
                        seconds: o.seconds,
                        outcome: Some(o),
                    }
                }
                Client::WeirPut(resumable) => Measured {
                    seconds: weir_put(&weir, &state, &source, &url, resumable)?,
                    outcome: None,
                },
            };
            let after = server.stats()?;
            // Verified outside the timing: the service's answer, then the stored file itself.
            let row = &rows[i].label;
            if let Some(o) = &measured.outcome {
                let said = o.answer["sha256"].as_str().unwrap_or_default();
                if said != expected || o.answer["size"].as_u64() != Some(size) {
                    return Err(io::Error::other(format!(
                        "{row}: the service answered {}, expected size {size} and SHA-256 {expected}",
                        o.answer
                    )));
                }
            }
            let (stored, stored_size) = file_sha256(&root.join(STORED))?;
            if stored != expected || stored_size != size {
                return Err(io::Error::other(format!(
                    "{row}: stored {stored_size} bytes with SHA-256 {stored}, expected {size} \
                     bytes with {expected}"
                )));
            }
            empty_dir(&root)?;
            let r = &mut rows[i];
            r.seconds.push(measured.seconds);
            r.gib_s.push(gib / measured.seconds);
            r.cpu_s
                .push(after.cpu_ns.saturating_sub(before.cpu_ns) as f64 / 1e9);
            if let Some(o) = &measured.outcome {
                r.after_last_s.push(o.after_last_byte_seconds);
            }
            if let Some(o) = measured.outcome.filter(|_| client == Client::Cut) {
                let twice: u64 = o.cuts.iter().map(Cut::sent_twice).sum();
                if o.body_bytes_sent != size + twice {
                    return Err(io::Error::other(format!(
                        "{}: sent {} body bytes for {size} with {twice} sent twice",
                        r.label, o.body_bytes_sent
                    )));
                }
                r.reconnect_s.push(o.reconnect_seconds);
                r.sent_twice_mib.push(mib(o.body_bytes_sent - size));
                r.conflicts.push(f64::from(o.conflicts));
                all_cuts.push((round, o.cuts));
            }
        }
        eprintln!("resume: round {}/{rounds} done", round + 1);
    }
    drop(peer); // stop the server: the report counts its CPU as the bench's own
    let section = section(a, size, &rows, &all_cuts);
    report::publish(&s.target, &ctx, &section)
}

fn find<'r>(rows: &'r [Row], label: &str) -> &'r Row {
    rows.iter()
        .find(|r| r.label == label)
        .expect("every row is measured")
}

/// The report's section.
fn section(a: &ResumeArgs, size: u64, rows: &[Row], all_cuts: &[(usize, Vec<Cut>)]) -> Section {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let rounds = rows[0].seconds.0.len();
    let mut t = Table::new(&[
        "Upload",
        "Time (s)",
        "GiB/s",
        "Server CPU (s)",
        "After the last byte (s)",
        "Reconnects (s)",
        "Sent − size (MiB)",
        "409s",
    ]);
    let mut bars = Vec::new();
    for r in rows {
        let cut = r.client == Client::Cut;
        let only_cut = |x: &Samples, p: usize| if cut { x.show(p) } else { "—".into() };
        t.row(vec![
            r.label.clone(),
            r.seconds.show(3),
            r.gib_s.show(2),
            r.cpu_s.show(2),
            if r.after_last_s.is_empty() {
                "—".into()
            } else {
                r.after_last_s.show(3)
            },
            only_cut(&r.reconnect_s, 3),
            only_cut(&r.sent_twice_mib, 2),
            only_cut(&r.conflicts, 0),
        ]);
        bars.push(Bar {
            label: r.label.clone(),
            value: Some((r.gib_s.median(), r.gib_s.min(), r.gib_s.max())),
        });
    }
    let plain = find(rows, PLAIN);
    let creation = find(rows, CREATION);
    let cut = rows
        .iter()
        .find(|r| r.client == Client::Cut)
        .expect("the cut row");
    let net = Samples(
        cut.seconds
            .0
            .iter()
            .zip(&cut.reconnect_s.0)
            .map(|(t, r)| t - r)
            .collect(),
    );
    let mut ratios = Table::new(&[
        "Ratio (median of round-by-round ratios, min–max)",
        "Value",
        "Target",
    ]);
    ratios.row(vec![
        format!("time: {CREATION} ÷ baseline"),
        creation.seconds.ratio_to(&plain.seconds).show(3),
        "—".into(),
    ]);
    ratios.row(vec![
        format!("time: cut {}× and resumed ÷ baseline", a.cuts),
        cut.seconds.ratio_to(&plain.seconds).show(3),
        "—".into(),
    ]);
    ratios.row(vec![
        format!(
            "time less the reconnects: cut {}× and resumed ÷ baseline",
            a.cuts
        ),
        net.ratio_to(&plain.seconds).show(3),
        "≤ 1.15".into(),
    ]);
    ratios.row(vec![
        "server CPU: cut and resumed ÷ baseline".into(),
        cut.cpu_s.ratio_to(&plain.cpu_s).show(3),
        "—".into(),
    ]);
    ratios.row(vec![
        "server CPU: creation sent whole ÷ baseline".into(),
        creation.cpu_s.ratio_to(&plain.cpu_s).show(3),
        "—".into(),
    ]);
    ratios.row(vec![
        format!("GiB/s: {WEIR_PUT} ÷ {WEIR_PUT_PLAIN}"),
        find(rows, WEIR_PUT)
            .gib_s
            .ratio_to(&find(rows, WEIR_PUT_PLAIN).gib_s)
            .show(3),
        "≥ 0.95".into(),
    ]);
    let per_cut = Samples(
        all_cuts
            .iter()
            .flat_map(|(_, c)| c.iter().map(|c| mib(c.sent_twice())))
            .collect(),
    );
    let mut cut_lines = String::new();
    for (round, cuts) in all_cuts {
        let list: Vec<String> = cuts
            .iter()
            .map(|c| {
                format!(
                    "{:.3} → {:.3} ({:.2} MiB again)",
                    mib(c.at),
                    mib(c.resumed_from),
                    mib(c.sent_twice())
                )
            })
            .collect();
        cut_lines.push_str(&format!(
            "- round {}: cut at → resumed from (MiB): {}\n",
            round + 1,
            list.join("; ")
        ));
    }
    let body = format!(
        "One `weir serve` (the `weir` binary, default configuration: SHA-256 on, {} pause \
         threshold) receives a {} upload of the same bytes in every row, \
         over loopback HTTP/1.1; {rounds} rounds, rows interleaved (forward, then backward). \
         The bench's client sends from memory in {} writes, with `Expect: 100-continue` on \
         every request with a body (the resumable creation reads its `104` with the upload's \
         `Location` before the body). The cut row cuts from the client side: after writing \
         up to each offset it closes with `SO_LINGER` 0 (RST: the client's unsent socket \
         buffer is dropped, as bytes in flight are on a broken path), then `HEAD`s the upload \
         resource for `Upload-Offset` and `PATCH`es the rest from there with `Upload-Complete: \
         ?1`; an append refused with `409` (the server still recording the cut request) is \
         asked again after 2 ms. Reconnects: from each cut to the next append's `100 \
         Continue`, summed. After the last byte: from the client's last body write to the end of \
         the final answer (what the server does once it has the whole body). Sent − size: body bytes the kernel accepted from the client over \
         every request, minus the file's size (measured, and checked equal to the sum over the \
         cuts of cut offset − resumed offset). Cut offsets are drawn uniformly over the upload \
         by SplitMix64, seed {} (`--seed`), new ones each round, the same for every run with \
         that seed. `weir put` rows: `weir put --no-digest FILE URL` (the same bytes, from the \
         page cache), timed from spawn to exit. After every upload the stored file is read \
         back (outside the timing) and its size and SHA-256 checked against the body's; the \
         bench's rows also check the service's answer. Server CPU from `/proc/<pid>/stat` (10 \
         ms ticks). On a shared machine (the CPU pressure above says how busy this one was), \
         trust the round-by-round ratios, not the absolute times.\n\n\
         What the server does differently: a resumable request fdatasyncs its data and rewrites \
         its record (temporary, fsync, rename, directory fsync) at every checkpoint inside a \
         request (`weir_store::CHECKPOINT_BYTES`, on the blocking pool while the connection \
         goes on receiving; one at a time) and at its end (after the one out); a plain `PUT` \
         syncs once, at its commit. Every request hashes while receiving: the SHA-256 state of \
         exactly the recorded offset is kept in the record (`weir-store`'s `sha256_state.rs`), \
         so a resumed request goes on from it and completion reads nothing back; a checkpoint \
         gets the state at its offset from the hashing thread as it passes it, and at a cut the \
         hashing thread first catches up with the bytes written.\n\n{}\n{}\n\
         Bytes sent twice per cut ({} cuts): {} MiB (median, min–max); target ≤ 8 MiB.\n\n{cut_lines}",
        size_label(weir::Config::default().pause_threshold as u64),
        size_label(size),
        size_label(CHUNK as u64),
        a.seed,
        t.markdown(),
        ratios.markdown(),
        per_cut.0.len(),
        per_cut.show(2),
    );
    Section {
        scenario: "resume",
        title: format!(
            "resume: a {} upload cut {} times and resumed (issue 13)",
            size_label(size),
            a.cuts
        ),
        body,
        charts: vec![Chart {
            name: "resume".into(),
            title: format!("{} upload to weir serve, resumed or not", size_label(size)),
            unit: "GiB/s (median; whisker: min–max)".into(),
            bars,
        }],
    }
}
