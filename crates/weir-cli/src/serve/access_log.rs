//! The access log: one line per request, as logfmt-style text (`key=value`, the default) or as
//! one JSON object per line (`--log-format json`), to stderr or a file (`--access-log`).
//!
//! Fields: `time` (UTC, RFC 3339, milliseconds; when the request's handler started), `client`
//! (`ip:port`, or `unix`), `method`, `path` (the request target as received), `status` (`-` /
//! `null` when the client went away before any answer), `bytes_in` (request body bytes
//! received), `bytes_out` (response body bytes; not the head), `duration` (seconds, from the
//! handler's start until it returned), `token` (the name of the known token the request
//! carried, never the token; absent without one), for a request that stored files `stored`
//! (bytes), `sha256` (hex, when computed; the last file's for a form with several), `files`
//! (the store paths) and `replaced` (how many of them replaced a file, when any did), and for
//! a request that deleted `deleted` (the store paths). Text lists are comma-separated, a comma
//! inside a path written `\x2c`; JSON lists are arrays.
//!
//! Cost, by design: no `tracing` event (its formatting layer builds each event through dynamic
//! dispatch and field visitors); each line is formatted with `write!` into a buffer kept per
//! thread and reused, then copied whole into a shared pending buffer under a mutex held only
//! for that copy (lines never interleave). The pending buffer is written out with one
//! `write(2)` when it holds [`FLUSH_AT`] bytes, by a background thread every [`FLUSH_EVERY`],
//! and at shutdown ([`AccessLog::flush`]): a `write(2)` per line was measured to cost more
//! than the rest of a small request (docs/archive/BENCHMARKS-history.md, "Access log cost"). So a
//! line reaches the file at most [`FLUSH_EVERY`] after its request, and a process killed by SIGKILL
//! loses at most that much of the log. ALLOCATION: none per line once the thread's buffer and the
//! pending buffer have grown (to the longest line, and to [`FLUSH_AT`] plus a line). A failed write
//! is dropped: logging never fails a request.

use super::stored::Stored;
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use weir::transport::PeerAddr;

/// The line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `time=… client=… method=… path=… status=…`, space-separated.
    Text,
    /// One JSON object per line.
    Json,
}

/// Pending bytes written out as soon as there are this many.
pub const FLUSH_AT: usize = 64 * 1024;
/// The longest a line waits in the pending buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Where lines go and how they look.
#[derive(Debug)]
pub struct AccessLog {
    format: LogFormat,
    sink: Arc<Sink>,
}

/// The destination and the lines not yet written to it.
#[derive(Debug)]
struct Sink {
    /// `None`: stderr.
    file: Option<File>,
    pending: Mutex<Vec<u8>>,
}

impl Sink {
    /// Writes out `pending` (the caller holds its lock, so lines keep their order).
    fn write_out(&self, pending: &mut Vec<u8>) {
        if pending.is_empty() {
            return;
        }
        let _ = match &self.file {
            Some(file) => (&*file).write_all(pending),
            None => io::stderr().lock().write_all(pending),
        };
        pending.clear();
    }
}

/// Writes the pending lines every [`FLUSH_EVERY`] until the log is dropped.
fn start_flusher(sink: Weak<Sink>) {
    let spawned = std::thread::Builder::new()
        .name("weir-access-log".into())
        .spawn(move || {
            loop {
                std::thread::sleep(FLUSH_EVERY);
                let Some(sink) = sink.upgrade() else { return };
                if let Ok(mut pending) = sink.pending.lock() {
                    sink.write_out(&mut pending);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no access log flusher thread: lines wait for a full buffer");
    }
}

/// One answered request, as the access log sees it.
pub(super) struct Entry<'a> {
    pub time: SystemTime,
    pub client: PeerAddr,
    pub method: &'a str,
    /// The request target as received (bytes: a refused head's may not be UTF-8).
    pub path: &'a [u8],
    pub status: Option<u16>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration: Duration,
    pub stored: &'a Stored,
    /// The name of the token the request carried, if known.
    pub token: Option<&'a str>,
    /// The server refused the head before any handler ran (`weir::Refused`).
    pub refused: bool,
}

thread_local! {
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl AccessLog {
    /// Lines to stderr.
    pub fn stderr(format: LogFormat) -> Self {
        Self::to(format, None)
    }

    /// Lines appended to `path` (created if missing).
    pub fn file(format: LogFormat, path: &Path) -> io::Result<Self> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(Self::to(format, Some(file)))
    }

    fn to(format: LogFormat, file: Option<File>) -> Self {
        let sink = Arc::new(Sink {
            file,
            pending: Mutex::new(Vec::with_capacity(FLUSH_AT + 1024)),
        });
        start_flusher(Arc::downgrade(&sink));
        Self { format, sink }
    }

    /// Writes out the pending lines now (at shutdown).
    pub fn flush(&self) {
        if let Ok(mut pending) = self.sink.pending.lock() {
            self.sink.write_out(&mut pending);
        }
    }

    /// Writes `entry` as one line.
    pub(super) fn write(&self, entry: &Entry<'_>) {
        LINE.with(|line| {
            let Ok(mut line) = line.try_borrow_mut() else {
                return;
            };
            line.clear();
            // Writing into a Vec cannot fail.
            let _ = match self.format {
                LogFormat::Text => text(&mut line, entry),
                LogFormat::Json => json(&mut line, entry),
            };
            let Ok(mut pending) = self.sink.pending.lock() else {
                return;
            };
            pending.extend_from_slice(&line);
            if pending.len() >= FLUSH_AT {
                self.sink.write_out(&mut pending);
            }
        });
    }
}

fn text(out: &mut Vec<u8>, e: &Entry<'_>) -> io::Result<()> {
    out.extend_from_slice(b"time=");
    timestamp(out, e.time);
    out.extend_from_slice(b" client=");
    client(out, e.client)?;
    out.extend_from_slice(b" method=");
    escaped(out, e.method.as_bytes(), Escape::Text)?;
    out.extend_from_slice(b" path=");
    escaped(out, e.path, Escape::Text)?;
    out.extend_from_slice(b" status=");
    match e.status {
        Some(status) => number(out, status.into(), 1),
        None => out.push(b'-'),
    }
    out.extend_from_slice(b" bytes_in=");
    number(out, e.bytes_in, 1);
    out.extend_from_slice(b" bytes_out=");
    number(out, e.bytes_out, 1);
    out.extend_from_slice(b" duration=");
    seconds(out, e.duration);
    if let Some(token) = e.token {
        out.extend_from_slice(b" token=");
        escaped(out, token.as_bytes(), Escape::Text)?;
    }
    if e.stored.files > 0 {
        out.extend_from_slice(b" stored=");
        number(out, e.stored.bytes, 1);
        if let Some(sum) = &e.stored.sha256 {
            out.extend_from_slice(b" sha256=");
            hex(out, sum);
        }
        out.extend_from_slice(b" files=");
        text_list(out, &e.stored.paths)?;
        if e.stored.replaced > 0 {
            out.extend_from_slice(b" replaced=");
            number(out, e.stored.replaced.into(), 1);
        }
    }
    if !e.stored.deleted.is_empty() {
        out.extend_from_slice(b" deleted=");
        text_list(out, &e.stored.deleted)?;
    }
    if e.refused {
        out.extend_from_slice(b" refused=true");
    }
    out.push(b'\n');
    Ok(())
}

fn json(out: &mut Vec<u8>, e: &Entry<'_>) -> io::Result<()> {
    out.extend_from_slice(b"{\"time\":\"");
    timestamp(out, e.time);
    out.extend_from_slice(b"\",\"client\":\"");
    client(out, e.client)?;
    out.extend_from_slice(b"\",\"method\":\"");
    escaped(out, e.method.as_bytes(), Escape::Json)?;
    out.extend_from_slice(b"\",\"path\":\"");
    escaped(out, e.path, Escape::Json)?;
    out.extend_from_slice(b"\",\"status\":");
    match e.status {
        Some(status) => number(out, status.into(), 1),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"bytes_in\":");
    number(out, e.bytes_in, 1);
    out.extend_from_slice(b",\"bytes_out\":");
    number(out, e.bytes_out, 1);
    out.extend_from_slice(b",\"duration\":");
    seconds(out, e.duration);
    if let Some(token) = e.token {
        out.extend_from_slice(b",\"token\":\"");
        escaped(out, token.as_bytes(), Escape::Json)?;
        out.push(b'"');
    }
    if e.stored.files > 0 {
        out.extend_from_slice(b",\"stored\":");
        number(out, e.stored.bytes, 1);
        if let Some(sum) = &e.stored.sha256 {
            out.extend_from_slice(b",\"sha256\":\"");
            hex(out, sum);
            out.push(b'"');
        }
        out.extend_from_slice(b",\"files\":");
        json_list(out, &e.stored.paths)?;
        if e.stored.replaced > 0 {
            out.extend_from_slice(b",\"replaced\":");
            number(out, e.stored.replaced.into(), 1);
        }
    }
    if !e.stored.deleted.is_empty() {
        out.extend_from_slice(b",\"deleted\":");
        json_list(out, &e.stored.deleted)?;
    }
    if e.refused {
        out.extend_from_slice(b",\"refused\":true");
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// Store paths, comma-separated, each escaped as text with its commas as `\x2c` (so the list
/// splits back on commas).
fn text_list(out: &mut Vec<u8>, paths: &[String]) -> io::Result<()> {
    for (i, path) in paths.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        for piece in path.as_bytes().split_inclusive(|&b| b == b',') {
            match piece.strip_suffix(b",") {
                Some(before) => {
                    escaped(out, before, Escape::Text)?;
                    out.extend_from_slice(b"\\x2c");
                }
                None => escaped(out, piece, Escape::Text)?,
            }
        }
    }
    Ok(())
}

/// Store paths as a JSON array of strings.
fn json_list(out: &mut Vec<u8>, paths: &[String]) -> io::Result<()> {
    out.push(b'[');
    for (i, path) in paths.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        escaped(out, path.as_bytes(), Escape::Json)?;
        out.push(b'"');
    }
    out.push(b']');
    Ok(())
}

fn client(out: &mut Vec<u8>, peer: PeerAddr) -> io::Result<()> {
    match peer {
        PeerAddr::Tcp(std::net::SocketAddr::V4(addr)) => {
            for (i, octet) in addr.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                number(out, octet.into(), 1);
            }
            out.push(b':');
            number(out, addr.port().into(), 1);
            Ok(())
        }
        PeerAddr::Tcp(addr) => write!(out, "{addr}"),
        PeerAddr::Unix => {
            out.extend_from_slice(b"unix");
            Ok(())
        }
        // A transport weir may add later.
        _ => {
            out.extend_from_slice(b"-");
            Ok(())
        }
    }
}

/// Seconds with microseconds: `0.001234`.
fn seconds(out: &mut Vec<u8>, d: Duration) {
    number(out, d.as_secs(), 1);
    out.push(b'.');
    number(out, d.subsec_micros().into(), 6);
}

/// `n` in decimal, zero-padded to `width` digits: `write!`'s formatting machinery (a trait
/// object per piece, padding logic) was a visible part of a line's cost.
fn number(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    while n > 0 || start == digits.len() {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    start = start.min(digits.len().saturating_sub(width));
    out.extend_from_slice(&digits[start..]);
}

fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}

#[derive(Clone, Copy)]
enum Escape {
    /// Visible ASCII but `"` and `\` as is; everything else `\xHH` (so a value never holds a
    /// space and a line splits on spaces).
    Text,
    /// JSON string contents: `"`, `\` and control bytes escaped; other non-ASCII bytes as
    /// `\u00HH` too, so that a target that is not UTF-8 still makes valid JSON.
    Json,
}

fn escaped(out: &mut Vec<u8>, bytes: &[u8], escape: Escape) -> io::Result<()> {
    for &b in bytes {
        let plain = matches!(b, 0x21..=0x7e) && b != b'"' && b != b'\\'
            || (b == b' ' && matches!(escape, Escape::Json));
        if plain {
            out.push(b);
        } else {
            match escape {
                Escape::Text => write!(out, "\\x{b:02x}")?,
                Escape::Json => write!(out, "\\u{:04x}", u16::from(b))?,
            }
        }
    }
    Ok(())
}

/// `2026-11-30T19:48:30.123Z`.
fn timestamp(out: &mut Vec<u8>, time: SystemTime) {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(secs / 86_400);
    let of_day = secs % 86_400;
    let parts = [
        (year, 4, b'-'),
        (month, 2, b'-'),
        (day, 2, b'T'),
        (of_day / 3600, 2, b':'),
        (of_day / 60 % 60, 2, b':'),
        (of_day % 60, 2, b'.'),
        (since.subsec_millis().into(), 3, b'Z'),
    ];
    for (value, width, after) in parts {
        number(out, value, width);
        out.push(after);
    }
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(path: &'a str, stored: &'a Stored) -> Entry<'a> {
        Entry {
            time: UNIX_EPOCH + Duration::from_millis(1_709_251_199_007),
            client: PeerAddr::Tcp("127.0.0.1:4000".parse().unwrap()),
            method: "PUT",
            path: path.as_bytes(),
            status: Some(201),
            bytes_in: 5,
            bytes_out: 7,
            duration: Duration::from_micros(1_000_042),
            stored,
            token: None,
            refused: false,
        }
    }

    #[test]
    fn numbers() {
        let mut out = Vec::new();
        for (n, width) in [(0, 1), (7, 3), (1234, 2), (u64::MAX, 1), (42, 6)] {
            number(&mut out, n, width);
            out.push(b' ');
        }
        assert_eq!(out, b"0 007 1234 18446744073709551615 000042 ");
    }

    #[test]
    fn dates_across_leap_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(19_783), (2024, 3, 1));
        assert_eq!(civil_from_days(20_818), (2026, 12, 31));
    }

    #[test]
    fn text_line() {
        let mut out = Vec::new();
        let stored = Stored {
            files: 2,
            bytes: 5,
            sha256: Some([0xab; 32]),
            paths: vec!["a b".into(), "c,d".into()],
            replaced: 1,
            deleted: Vec::new(),
        };
        let mut e = entry("/files/a b\"\\é", &stored);
        e.token = Some("alice");
        text(&mut out, &e).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            format!(
                "time=2024-02-29T23:59:59.007Z client=127.0.0.1:4000 method=PUT \
                 path=/files/a\\x20b\\x22\\x5c\\xc3\\xa9 status=201 bytes_in=5 bytes_out=7 \
                 duration=1.000042 token=alice stored=5 sha256={} files=a\\x20b,c\\x2cd \
                 replaced=1\n",
                "ab".repeat(32)
            )
        );
    }

    #[test]
    fn json_line_parses_with_the_same_fields() {
        let mut out = Vec::new();
        json(&mut out, &entry("/files/a b\"\\\u{1}", &Stored::default())).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["path"], "/files/a b\"\\\u{1}");
        assert_eq!(v["time"], "2024-02-29T23:59:59.007Z");
        assert_eq!(v["status"], 201);
        assert_eq!(v["duration"], 1.000042);
        assert!(v.get("stored").is_none() && v.get("sha256").is_none());
        let mut out = Vec::new();
        let deleted = Stored {
            deleted: vec!["x/\"y".into()],
            ..Stored::default()
        };
        let mut e = entry("/", &deleted);
        e.token = Some("bob");
        e.status = None;
        e.client = PeerAddr::Unix;
        json(&mut out, &e).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v["status"].is_null());
        assert_eq!(v["client"], "unix");
        assert_eq!(v["token"], "bob");
        assert_eq!(v["deleted"], serde_json::json!(["x/\"y"]));
        assert!(v.get("files").is_none());
    }
}
