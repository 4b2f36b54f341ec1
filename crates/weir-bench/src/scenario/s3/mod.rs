//! Issue 17: `weir serve --store s3://…` against the S3 client library it is built on
//! (`weir_store::S3Store`) used directly, both on one SeaweedFS (`weed mini` on loopback,
//! weir-testkit's launcher), with the same bytes, part size and parts in flight, in the same
//! rounds.
//!
//! Every round, interleaved (forward, then backward):
//! - uploads: `PUT /files/<key>` of the body to `weir serve` over loopback HTTP/1.1 (the
//!   bench's client, from memory), and the `__s3_direct put` child writing the same bytes
//!   through `S3Upload` (multipart, then the commit);
//! - downloads: `GET /files/<key>` through `weir serve`, and the `__s3_direct get` child
//!   reading the object through `S3Reader`; both clients compare every byte with the body.
//!
//! Peak RSS: `weir serve`'s `VmHWM`, reset before each request; the direct child's own `VmHWM`
//! (a fresh process per operation, so its runtime and HTTP client are counted, as `weir
//! serve`'s are). Upload checks: both SHA-256s (computed by the store while streaming, as
//! always) must be the body's. Both objects are deleted after every round.
//!
//! Without `weed` the scenario is skipped with a loud message (weir-testkit's `tools`),
//! unless `WEIR_REQUIRE_TOOLS=1`: then it fails.

pub mod direct;

use super::upload::service::weir_binary;
use super::{Peer, Settings, order, size_label};
use crate::client::response;
use crate::clock;
use crate::report::chart::{Bar, Chart};
use crate::report::table::Table;
use crate::report::{self, Section};
use crate::server::Endpoint;
use crate::stats::Samples;
use clap::Args;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use weir_testkit::seaweed::{self, Seaweed};

/// The bucket `weed mini` creates, and the prefix both rows store under.
const STORE_BUCKET: &str = seaweed::BUCKET;
const STORE_PREFIX: &str = "bench";
/// The S3 identity `weed mini` is started with.
const CREDENTIALS: (&str, &str) = (seaweed::ACCESS_KEY, seaweed::SECRET_KEY);

/// `weir-bench s3` options.
#[derive(Args, Clone, Debug, Default)]
pub struct S3Args {
    /// Object size (default: 1 GiB; `--quick`: 256 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub size: Option<usize>,
    /// Multipart part size, of both rows (default: `weir serve`'s, 8 MiB).
    #[arg(long, value_parser = super::parse_size)]
    pub part_size: Option<usize>,
    /// Parts in flight per upload, of both rows (default: `weir serve`'s, 2).
    #[arg(long)]
    pub parts_in_flight: Option<usize>,
    /// The `weir` binary (default: `weir` next to this executable).
    #[arg(long)]
    pub weir: Option<PathBuf>,
}

/// The period of `client::upload::body_pattern`: `(i * 31 + i / 4096) as u8` repeats every
/// 4096 × 256 bytes.
pub(super) const PERIOD: usize = 1 << 20;

/// The body: `body_pattern` bytes, from one buffer of two periods, so that any slice of up to
/// one period at any offset is contiguous (no copy to send or to compare).
pub(in crate::scenario) struct Pattern(Vec<u8>);

impl Pattern {
    pub(in crate::scenario) fn new() -> Self {
        Self(crate::client::upload::body_pattern(2 * PERIOD))
    }

    /// The `n ≤ PERIOD` body bytes at offset `at`.
    pub(in crate::scenario) fn at(&self, at: u64, n: usize) -> &[u8] {
        let start = (at % PERIOD as u64) as usize;
        &self.0[start..start + n]
    }

    /// Whether `bytes` are the body's bytes at offset `at`.
    pub(in crate::scenario) fn matches(&self, mut at: u64, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            let n = bytes.len().min(PERIOD);
            if bytes[..n] != *self.at(at, n) {
                return false;
            }
            at += n as u64;
            bytes = &bytes[n..];
        }
        true
    }

    /// SHA-256 of the first `size` body bytes, hex.
    pub(in crate::scenario) fn sha256(&self, size: u64) -> String {
        let mut h = Sha256::new();
        let mut at = 0;
        while at < size {
            let n = (size - at).min(PERIOD as u64) as usize;
            h.update(self.at(at, n));
            at += n as u64;
        }
        hex(&h.finalize())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One operation's figures.
struct Measured {
    seconds: f64,
    peak_kib: u64,
}

#[derive(Default)]
struct Row {
    seconds: Samples,
    gib_s: Samples,
    peak_mib: Samples,
}

const WEIR_PUT: &str = "upload: PUT through weir serve";
const DIRECT_PUT: &str = "upload: S3Store direct (baseline)";
const WEIR_GET: &str = "download: GET through weir serve";
const DIRECT_GET: &str = "download: S3Store direct (baseline)";

/// Reads one response from `s` (head and body buffered: answers to a `PUT` are small).
pub(in crate::scenario) fn read_response(s: &mut TcpStream) -> io::Result<(u16, Vec<u8>)> {
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    let parsed = loop {
        if let Some(p) =
            response::parse(&buf[..filled]).map_err(|_| io::Error::other("malformed response"))?
        {
            break p;
        }
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = s.read(&mut buf[filled..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
    };
    buf.truncate(parsed.len);
    buf.drain(..parsed.head_len);
    Ok((parsed.status, buf))
}

/// `PUT /files/<key>` of `size` body bytes; returns the seconds from connect to the answer and
/// the SHA-256 the service answered.
fn weir_put(addr: SocketAddr, key: &str, p: &Pattern, size: u64) -> io::Result<(f64, String)> {
    let start = clock::monotonic_ns();
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let (status, body) = super::transfer::put_on(&mut s, &format!("/files/{key}"), p, size, "")?;
    let seconds = (clock::monotonic_ns() - start) as f64 / 1e9;
    let bad = || {
        io::Error::other(format!(
            "weir serve answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        ))
    };
    if status != 200 && status != 201 {
        return Err(bad());
    }
    let j: serde_json::Value = serde_json::from_slice(&body).map_err(|_| bad())?;
    if j["size"].as_u64() != Some(size) {
        return Err(bad());
    }
    let sha = j["sha256"].as_str().ok_or_else(bad)?.to_owned();
    Ok((seconds, sha))
}

/// `GET /files/<key>` through `weir serve`, every byte compared with the body, read in pieces
/// of the size `S3Reader` hands out at most (one period); timed from connect to the last byte.
fn weir_get(addr: SocketAddr, key: &str, p: &Pattern, size: u64) -> io::Result<f64> {
    super::transfer::get(addr, &format!("/files/{key}"), p, size, PERIOD)
}

/// `DELETE /files/<key>` through `weir serve` (either row's object: both are under its prefix).
fn weir_delete(addr: SocketAddr, key: &str) -> io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    let head = format!("DELETE /files/{key} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    s.write_all(head.as_bytes())?;
    match read_response(&mut s)? {
        (200 | 204, _) => Ok(()),
        (status, body) => Err(io::Error::other(format!(
            "DELETE {key}: {status} {}",
            String::from_utf8_lossy(&body).trim()
        ))),
    }
}

/// Runs `weir-bench __s3_direct` and parses its line.
fn direct(
    op: direct::Op,
    endpoint: &str,
    key: &str,
    size: u64,
    part_size: usize,
    parts_in_flight: usize,
) -> io::Result<(Measured, Option<String>)> {
    let op = match op {
        direct::Op::Put => "put",
        direct::Op::Get => "get",
    };
    let out = Command::new(std::env::current_exe()?)
        .args([
            "__s3_direct",
            "--op",
            op,
            "--endpoint",
            endpoint,
            "--key",
            key,
        ])
        .arg(format!("--size={size}"))
        .arg(format!("--part-size={part_size}"))
        .arg(format!("--parts-in-flight={parts_in_flight}"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    let line = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = line.split_whitespace().collect();
    match (out.status.success(), fields.as_slice()) {
        (true, [secs, peak, sha]) => {
            let seconds = secs.parse().map_err(io::Error::other)?;
            let peak_kib = peak.parse().map_err(io::Error::other)?;
            let sha = (*sha != "-").then(|| sha.to_string());
            Ok((Measured { seconds, peak_kib }, sha))
        }
        _ => Err(io::Error::other(format!(
            "__s3_direct {op} {key} failed ({}): {line}",
            out.status
        ))),
    }
}

/// `weir serve`'s flags to store under `prefix` in the bucket of the `weed mini` whose S3
/// gateway is at `endpoint`, with the identity it was started with.
pub(in crate::scenario) fn store_flags(endpoint: &str, prefix: &str) -> Vec<String> {
    [
        "--store",
        &format!("s3://{STORE_BUCKET}/{prefix}"),
        "--s3-endpoint",
        endpoint,
        "--s3-access-key-id",
        CREDENTIALS.0,
        "--s3-secret-access-key",
        CREDENTIALS.1,
    ]
    .map(String::from)
    .into()
}

/// Runs the scenario and publishes its section.
pub fn run(s: &Settings, a: &S3Args) -> io::Result<()> {
    let Some(weed) = Seaweed::start() else {
        eprintln!("s3: SKIPPED (no `weed`); the other scenarios run");
        return Ok(());
    };
    direct::wait_for_bucket(&weed.endpoint)?;
    let ctx = report::Context::capture();
    let size = a.size.unwrap_or(s.pick(1 << 30, 256 << 20, 12 << 20)) as u64;
    let part_size = a.part_size.unwrap_or(8 << 20);
    let parts_in_flight = a.parts_in_flight.unwrap_or(2);
    let rounds = s.rounds(3, 2);
    let weir = weir_binary(a.weir.as_deref())?;
    let data = tempfile::tempdir()?;
    let root = data.path().join("root");
    std::fs::create_dir(&root)?;
    let mut args = store_flags(&weed.endpoint, STORE_PREFIX);
    args.extend([
        "--s3-part-size".into(),
        part_size.to_string(),
        "--s3-parts-in-flight".into(),
        parts_in_flight.to_string(),
        "--no-access-log".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut peer = Peer::start_weir_serve("weir serve", &weir, &root, &args)?;
    let server = peer
        .server
        .as_mut()
        .map_err(|why| io::Error::other(why.clone()))?;
    let Endpoint::Tcp(addr) = *server.endpoint() else {
        return Err(io::Error::other("weir serve listens on TCP"));
    };
    let pattern = Pattern::new();
    let expected = pattern.sha256(size);
    let gib = size as f64 / (1u64 << 30) as f64;
    let (weir_key, direct_key) = ("s3-weir.bin", "s3-direct.bin");
    // A small object each way first: the store's volumes are created and both clients' first
    // connections made outside the measured rounds.
    let warm = (size / 8).max(1);
    weir_put(addr, weir_key, &pattern, warm)?;
    weir_get(addr, weir_key, &pattern, warm)?;
    direct(
        direct::Op::Put,
        &weed.endpoint,
        direct_key,
        warm,
        part_size,
        parts_in_flight,
    )?;
    weir_delete(addr, weir_key)?;
    weir_delete(addr, direct_key)?;
    let labels = [WEIR_PUT, DIRECT_PUT, WEIR_GET, DIRECT_GET];
    let mut rows: Vec<Row> = labels.iter().map(|_| Row::default()).collect();
    for round in 0..rounds {
        // Uploads (rows 0 and 1), then downloads (rows 2 and 3), each pair interleaved.
        for pair in [0, 2] {
            for i in order(2, round).map(|i| pair + i) {
                let measured = match i {
                    0 | 2 => {
                        server.reset_peak()?;
                        let seconds = if i == 0 {
                            let (seconds, sha) = weir_put(addr, weir_key, &pattern, size)?;
                            if sha != expected {
                                return Err(io::Error::other(format!(
                                    "weir serve stored SHA-256 {sha}, expected {expected}"
                                )));
                            }
                            seconds
                        } else {
                            weir_get(addr, weir_key, &pattern, size)?
                        };
                        let peak_kib = server.stats()?.peak_kib;
                        Measured { seconds, peak_kib }
                    }
                    _ => {
                        let op = if i == 1 {
                            direct::Op::Put
                        } else {
                            direct::Op::Get
                        };
                        let (m, sha) = direct(
                            op,
                            &weed.endpoint,
                            direct_key,
                            size,
                            part_size,
                            parts_in_flight,
                        )?;
                        if i == 1 && sha.as_deref() != Some(expected.as_str()) {
                            return Err(io::Error::other(format!(
                                "S3Store direct stored SHA-256 {sha:?}, expected {expected}"
                            )));
                        }
                        m
                    }
                };
                let r = &mut rows[i];
                r.seconds.push(measured.seconds);
                r.gib_s.push(gib / measured.seconds);
                r.peak_mib.push(measured.peak_kib as f64 / 1024.0);
            }
        }
        weir_delete(addr, weir_key)?;
        weir_delete(addr, direct_key)?;
        eprintln!("s3: round {}/{rounds} done", round + 1);
    }
    drop(peer); // stop the server: the report counts its CPU as the bench's own
    drop(weed); // and the store, with its data
    let section = section(size, part_size, parts_in_flight, &labels, &rows);
    report::publish(&s.target, &ctx, &section)
}

/// The report's section.
fn section(
    size: u64,
    part_size: usize,
    parts_in_flight: usize,
    labels: &[&str],
    rows: &[Row],
) -> Section {
    let rounds = rows[0].seconds.0.len();
    let mut t = Table::new(&["Row", "Time (s)", "GiB/s", "Peak RSS (MiB)"]);
    let mut bars = Vec::new();
    for (label, r) in labels.iter().zip(rows) {
        t.row(vec![
            label.to_string(),
            r.seconds.show(3),
            r.gib_s.show(2),
            r.peak_mib.show(1),
        ]);
        bars.push(Bar {
            label: label.to_string(),
            value: Some((r.gib_s.median(), r.gib_s.min(), r.gib_s.max())),
        });
    }
    let mut ratios = Table::new(&[
        "Ratio (median of round-by-round ratios, min–max)",
        "Value",
        "Target",
    ]);
    ratios.row(vec![
        "GiB/s: upload through weir serve ÷ S3Store direct".into(),
        rows[0].gib_s.ratio_to(&rows[1].gib_s).show(3),
        "≥ 0.9".into(),
    ]);
    ratios.row(vec![
        "GiB/s: download through weir serve ÷ S3Store direct".into(),
        rows[2].gib_s.ratio_to(&rows[3].gib_s).show(3),
        "≥ 0.9".into(),
    ]);
    let body = format!(
        "One SeaweedFS (`weed mini`, weir-testkit's launcher: master, volume, filer and S3 \
         gateway in one process, on loopback) holds both rows' objects; one `weir serve --store \
         s3://{STORE_BUCKET}/{STORE_PREFIX}` (the `weir` binary, default configuration: \
         SHA-256 on) in front of it. Object: {}, parts of {}, {parts_in_flight} in flight, the \
         same for both rows; {rounds} rounds, each pair of rows interleaved (forward, then \
         backward). Through weir serve: the bench's client sends a `PUT` (`Content-Length`, \
         from memory, {} writes) over loopback HTTP/1.1, timed from connect to the answer, and \
         a `GET`, timed from connect to the last byte. Direct: a child process of the bench \
         (`weir-bench __s3_direct`) runs `S3Store` on a multi-threaded tokio runtime, writing \
         the same bytes to `S3Upload` in 256 KiB pieces (what `weir serve` hands it at most), \
         timed from `begin` to the end of the commit, or reading the object with `S3Reader`, \
         timed from `open` to the last chunk. Both clients compare every downloaded byte with \
         the body, and both uploads' SHA-256 (computed by `S3Upload` while streaming) are \
         checked against the body's. Peak RSS: `weir serve`'s `VmHWM`, reset before each \
         request (the whole server: runtime, connection buffers, the upload's parts); the \
         direct child's own `VmHWM` at its end (its runtime, HTTP client and parts, and the \
         bench's 2 MiB body pattern). Both objects are deleted after every round. SeaweedFS \
         runs on the same CPUs, so a large share of every row's time is the store's own. On a \
         shared machine (the CPU pressure above says how busy this one was), trust the \
         round-by-round ratios, not the absolute times.\n\n{}\n{}",
        size_label(size),
        size_label(part_size as u64),
        size_label(PERIOD as u64),
        t.markdown(),
        ratios.markdown(),
    );
    Section {
        scenario: "s3",
        title: format!(
            "s3: a {} object through weir serve and directly, on SeaweedFS (issue 17)",
            size_label(size)
        ),
        body,
        charts: vec![Chart {
            name: "s3".into(),
            title: format!("{} to and from SeaweedFS", size_label(size)),
            unit: "GiB/s (median; whisker: min–max)".into(),
            bars,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_repeats_every_period() {
        let long = crate::client::upload::body_pattern(3 * PERIOD + 7);
        let p = Pattern::new();
        assert!(p.matches(0, &long));
        assert!(p.matches(5, &long[5..]));
        assert!(!p.matches(1, &long));
        assert_eq!(p.at(PERIOD as u64 + 3, 10), &long[3..13]);
    }
}
