//! Heap allocations of `weir serve` per append, counted: an append (IETF `PATCH /uploads/{id}`,
//! tus `PATCH /tus/{id}`) allocates a fixed number of times per request, whatever its size, as a
//! `PUT` does; nothing is allocated per body chunk, on the hashed path (direct reads into pooled
//! buffers, hashing thread) or the spliced one (`--no-hash`).
//!
//! The server (`weir_cli::serve::Service` on a 2-worker runtime) runs in this process, under a
//! counting global allocator that counts every thread (the hashing threads and tokio's blocking
//! pool included). The client is a raw socket on the test thread that allocates nothing while a
//! request is measured: the request head is formatted before, the body is written from one
//! buffer, the answer is read into another. A measurement is the count from before the request
//! is written to after its whole answer is read; each is taken [`REPS`] times after a warm-up
//! and the smallest kept, since a background thread waking (the expiry sweep) can only add;
//! what varies by timing inside a request is allowed for ([`HANDOFF`]). Bodies stay under `weir_store::CHECKPOINT_BYTES` (64 MiB): an append of that much
//! checkpoints once on its way, which is counted apart ([`CHECKPOINT`]).
//!
//! One test function: the counter counts the whole process, so nothing else may run meanwhile.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use weir_testkit::alloc::{Counting, allocations};
use weir_testkit::server::ServerThread;

#[global_allocator]
static ALLOC: Counting = Counting;

const MIB: u64 = 1 << 20;
/// Body sizes compared: 1 MiB (two reads' worth; a `PUT` that small is hashed inline), 4 MiB
/// (past the 2 MiB after which a hashed body's hashing is pipelined), and the largest that
/// does not reach a checkpoint.
const SMALL: u64 = MIB;
const MID: u64 = 4 * MIB;
const LARGE: u64 = 63 * MIB;
/// The allocations of a pipelined hashing lane (`hasher::LaneHandle::new`: the lane, its queue,
/// its free list), once per request whose hashed body passes 2 MiB: a hashed `PUT` of 4 MiB
/// makes them and one of 1 MiB does not. An append is past 2 MiB of its upload whatever its
/// size once the upload is (the threshold counts the upload's bytes), as it is here.
const LANE: u64 = 3;
/// An append of exactly one checkpoint's worth: one checkpoint, at its end.
const CHECKPOINT: u64 = 64 * MIB;
/// Measurements per size; the smallest is kept.
const REPS: usize = 3;

/// Allocations that depend on timing, not on the body: tokio's `block_in_place` (the request's
/// fsyncs: a commit, an append's last record) may spawn a task to hand the worker's other
/// connections to a new worker, or find that it need not (0 or 1 per request); with the
/// connection buffer pool, 2 more were seen between sizes on CI's machine (not yet pinned
/// down). Far less than a chunk's worth: a per-chunk allocation adds at least 118 between
/// [`MID`] and [`LARGE`].
const HANDOFF: u64 = 3;

/// What one checkpoint adds to an append: its blocking task, its copy of the upload's state
/// (the target path), its outcome's slot, the record's text.
const PER_CHECKPOINT: u64 = 4;

/// What tokio allocates to start one of its blocking threads (its handle, name and packet)
/// rather than wake an idle one, measured in this process: the checkpoint's blocking task finds
/// every thread busy when the fsyncs' `block_in_place` hand-offs have taken the idle ones, which
/// depends on timing (seen on a loaded machine: 24 allocations with a checkpoint against 16
/// without, 4 past [`PER_CHECKPOINT`] and [`HANDOFF`]). The smallest of a few tries, each on a
/// fresh runtime, less the same task on a thread left idle: never more than a thread's start.
fn blocking_thread_start() -> u64 {
    let mut best = u64::MAX;
    for _ in 0..REPS {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = allocations();
        runtime.block_on(runtime.spawn_blocking(|| ())).unwrap();
        let started = allocations() - before;
        // Long enough for the thread to be idle again; if it is not, the difference is 0 and
        // the bound only stricter.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = allocations();
        runtime.block_on(runtime.spawn_blocking(|| ())).unwrap();
        let woken = allocations() - before;
        best = best.min(started.saturating_sub(woken));
    }
    best
}

/// Allocations per request may not exceed this, on any path (the figures, and what each
/// allocation is, are in docs/BENCHMARKS.md). An append was 161 (hashed) before its record
/// was formatted into one sized string: one `String` per byte of the 113-byte SHA-256 state.
const MAX_PER_REQUEST: u64 = 32;

struct Serve {
    addr: SocketAddr,
    server: Option<ServerThread>,
    _dir: tempfile::TempDir,
}

impl Serve {
    fn start(hash: bool) -> Self {
        use weir_cli::serve::{Auth, ResumableOptions, Service, ServiceOptions};
        let dir = tempfile::tempdir().unwrap();
        let store =
            weir_store::LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
        let service = Service::new(
            store,
            ServiceOptions {
                max_upload: 4 << 30,
                hash,
                auth: Auth::new(None, false),
                limited_storage: false,
            },
        )
        .with_resumable(ResumableOptions::default())
        .unwrap();
        let (server, addr) = ServerThread::start(
            weir::Config::default(),
            std::sync::Arc::new(service),
            async |server| server.listen_tcp("127.0.0.1:0").await.unwrap(),
        );
        Self {
            addr,
            server: Some(server),
            _dir: dir,
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = s.join();
        }
    }
}

/// A keep-alive connection whose requests allocate nothing on the client side.
struct Conn {
    stream: TcpStream,
    chunk: Vec<u8>,
    answer: Vec<u8>,
}

/// An answer in `Conn::answer`: the status and where its head ends.
struct Answer {
    status: u16,
    head_end: usize,
}

impl Conn {
    fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            chunk: (0..MIB).map(|i| (i * 7 % 251) as u8).collect(),
            answer: vec![0; 64 << 10],
        }
    }

    /// Sends `head` (which ends with the empty line) and `len` body bytes, reads the final
    /// answer (skipping interim ones).
    fn exchange(&mut self, head: &[u8], len: u64) -> Answer {
        self.stream.write_all(head).unwrap();
        let mut left = len;
        while left > 0 {
            let n = left.min(self.chunk.len() as u64) as usize;
            self.stream.write_all(&self.chunk[..n]).unwrap();
            left -= n as u64;
        }
        let mut filled = 0;
        loop {
            let (head_end, status) = loop {
                if let Some(end) = find(&self.answer[..filled], b"\r\n\r\n") {
                    let status = parse_u64(&self.answer[9..12]) as u16;
                    break (end + 4, status);
                }
                let n = self.stream.read(&mut self.answer[filled..]).unwrap();
                assert!(n > 0, "connection closed");
                filled += n;
            };
            if (100..200).contains(&status) {
                self.answer.copy_within(head_end..filled, 0);
                filled -= head_end;
                continue;
            }
            let body = header(&self.answer[..head_end], b"content-length").map_or(0, parse_u64);
            let total = head_end + body as usize;
            while filled < total {
                let n = self.stream.read(&mut self.answer[filled..]).unwrap();
                assert!(n > 0, "connection closed");
                filled += n;
            }
            assert_eq!(filled, total, "more than one answer");
            return Answer { status, head_end };
        }
    }

    fn header(&self, a: &Answer, name: &[u8]) -> String {
        let v = header(&self.answer[..a.head_end], name).expect("header");
        String::from_utf8(v.to_vec()).unwrap()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon]
            .eq_ignore_ascii_case(name)
            .then(|| line[colon + 1..].trim_ascii())
    })
}

fn parse_u64(v: &[u8]) -> u64 {
    v.iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0, |n, &b| n * 10 + u64::from(b - b'0'))
}

/// The allocations of one exchange, the smallest of [`REPS`] after a warm-up. `next` gives
/// each request's head (formatted before its count starts) and checks its answer.
fn count(
    conn: &mut Conn,
    len: u64,
    mut head: impl FnMut() -> String,
    mut check: impl FnMut(&Conn, &Answer),
) -> u64 {
    let mut best = u64::MAX;
    for rep in 0..=REPS {
        let h = head();
        let before = allocations();
        let a = conn.exchange(h.as_bytes(), len);
        let n = allocations() - before;
        check(conn, &a);
        if rep > 0 {
            best = best.min(n);
        }
    }
    best
}

/// The counts of one kind of request at [`SMALL`], [`MID`], [`LARGE`] and [`CHECKPOINT`] bytes.
#[derive(Debug)]
struct Row {
    small: u64,
    mid: u64,
    large: u64,
    checkpoint: Option<u64>,
}

fn put_row(addr: SocketAddr) -> Row {
    let mut conn = Conn::open(addr);
    let mut one = |len| {
        count(
            &mut conn,
            len,
            || format!("PUT /files/put.bin HTTP/1.1\r\nhost: t\r\ncontent-length: {len}\r\n\r\n"),
            |_, a| assert!(a.status == 200 || a.status == 201, "PUT: {}", a.status),
        )
    };
    Row {
        small: one(SMALL),
        mid: one(MID),
        large: one(LARGE),
        checkpoint: None,
    }
}

fn ietf_row(addr: SocketAddr) -> Row {
    let mut conn = Conn::open(addr);
    let create = "PUT /files/ietf.bin HTTP/1.1\r\nhost: t\r\nupload-complete: ?0\r\n\
                  content-length: 0\r\n\r\n";
    let a = conn.exchange(create.as_bytes(), 0);
    assert_eq!(a.status, 201);
    let location = conn.header(&a, b"location");
    let mut offset = 0;
    let mut one = |len| {
        count(
            &mut conn,
            len,
            || {
                let head = format!(
                    "PATCH {location} HTTP/1.1\r\nhost: t\r\n\
                     content-type: application/partial-upload\r\nupload-offset: {offset}\r\n\
                     upload-complete: ?0\r\ncontent-length: {len}\r\n\r\n"
                );
                offset += len;
                head
            },
            |_, a| assert_eq!(a.status, 204, "IETF PATCH"),
        )
    };
    let row = Row {
        small: one(SMALL),
        mid: one(MID),
        large: one(LARGE),
        checkpoint: Some(one(CHECKPOINT)),
    };
    let delete = format!("DELETE {location} HTTP/1.1\r\nhost: t\r\ncontent-length: 0\r\n\r\n");
    assert_eq!(conn.exchange(delete.as_bytes(), 0).status, 204);
    row
}

fn tus_row(addr: SocketAddr) -> Row {
    let mut conn = Conn::open(addr);
    // filename "tus.bin", base64.
    let create = "POST /tus/ HTTP/1.1\r\nhost: t\r\ntus-resumable: 1.0.0\r\n\
                  upload-length: 4000000000\r\nupload-metadata: filename dHVzLmJpbg==\r\n\
                  content-length: 0\r\n\r\n";
    let a = conn.exchange(create.as_bytes(), 0);
    assert_eq!(a.status, 201);
    let location = conn.header(&a, b"location");
    let mut offset = 0;
    let mut one = |len| {
        count(
            &mut conn,
            len,
            || {
                let head = format!(
                    "PATCH {location} HTTP/1.1\r\nhost: t\r\ntus-resumable: 1.0.0\r\n\
                     content-type: application/offset+octet-stream\r\nupload-offset: {offset}\r\n\
                     content-length: {len}\r\n\r\n"
                );
                offset += len;
                head
            },
            |_, a| assert_eq!(a.status, 204, "tus PATCH"),
        )
    };
    let row = Row {
        small: one(SMALL),
        mid: one(MID),
        large: one(LARGE),
        checkpoint: Some(one(CHECKPOINT)),
    };
    let delete = format!(
        "DELETE {location} HTTP/1.1\r\nhost: t\r\ntus-resumable: 1.0.0\r\ncontent-length: 0\r\n\r\n"
    );
    assert_eq!(conn.exchange(delete.as_bytes(), 0).status, 204);
    row
}

#[test]
fn appends_allocate_per_request_not_per_chunk_like_a_put() {
    let thread_start = blocking_thread_start();
    eprintln!("a blocking thread's start: {thread_start} allocations");
    for hash in [true, false] {
        let serve = Serve::start(hash);
        let rows = [
            ("PUT", put_row(serve.addr)),
            ("IETF PATCH", ietf_row(serve.addr)),
            ("tus PATCH", tus_row(serve.addr)),
        ];
        drop(serve);
        let mode = if hash { "hashed" } else { "--no-hash" };
        for (what, row) in &rows {
            eprintln!("{mode} {what}: {row:?}");
        }
        for (what, row) in &rows {
            // Nothing per chunk: 63 MiB is 126 reads of 512 KiB, 4 MiB is 8 (and 2 MiB more
            // of an append is a chunk's worth too).
            assert!(
                row.large.abs_diff(row.mid) <= HANDOFF,
                "{mode} {what}: allocations grow with the body ({} for {} MiB, {} for {} MiB)",
                row.large,
                LARGE / MIB,
                row.mid,
                MID / MIB
            );
            let lane = if hash && *what == "PUT" { LANE } else { 0 };
            assert!(
                row.mid.abs_diff(row.small + lane) <= HANDOFF,
                "{mode} {what}: {} allocations for {} MiB, {} for {} MiB",
                row.mid,
                MID / MIB,
                row.small,
                SMALL / MIB
            );
            if let Some(checkpointed) = row.checkpoint {
                assert!(
                    checkpointed <= row.large + PER_CHECKPOINT + HANDOFF + thread_start,
                    "{mode} {what}: {checkpointed} allocations with a checkpoint, {} without",
                    row.large
                );
            }
            assert!(
                row.mid.max(row.large) <= MAX_PER_REQUEST,
                "{mode} {what}: {} allocations per request",
                row.mid.max(row.large)
            );
        }
    }
}
