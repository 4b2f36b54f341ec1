//! The load generator: many keep-alive connections, pipelined, pre-encoded requests.
//!
//! `connections` sockets are spread over `threads` threads; each thread runs one epoll loop over
//! its sockets. A connection sends `depth` copies of the request in one `write` (pre-encoded
//! once), then waits until all `depth` responses are in before sending the next batch, as wrk's
//! pipelining does. Responses are framed by [`response::parse`] (status line, `Content-Length`
//! or chunked end) and nothing else. After start-up nothing allocates: each connection has a
//! fixed read buffer, each thread a pre-sized latency histogram.
//!
//! Latency is measured per response, from the `write` of its batch to the `read` that completed
//! it, so with `depth > 1` it includes waiting behind the batch's earlier responses, as a client
//! of a pipelined server sees it.
//!
//! Without a rate the load is closed-loop: each connection sends its next batch as soon as the
//! last one is answered, so the run saturates whichever side is slower and latency mostly shows
//! queueing. With [`LoadSpec::rate`] it is paced: each connection sends on a fixed schedule
//! (staggered across connections), and latency runs from the *scheduled* send time, so a server
//! that stalls is charged for the requests that would have been sent meanwhile (no coordinated
//! omission). Latency under a given load is the paced figure. Histograms record only while [`Load::record`] is on, so a
//! warm-up can be left out; the completed count is published per thread and can be sampled at any
//! time for throughput over intervals.

use super::response;
use super::stream::Stream;
use crate::server::Endpoint;
use hdrhistogram::Histogram;
use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::io::Errno;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Read buffer per connection.
const READ_BUF: usize = 64 << 10;
/// epoll key of a paced thread's timerfd.
const TIMER: u64 = u64::MAX;
/// Longest latency the histograms hold (60 s, in ns).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// What to send, where, and how hard.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Where the server listens.
    pub endpoint: Endpoint,
    /// Keep-alive connections.
    pub connections: usize,
    /// Client threads the connections are spread over.
    pub threads: usize,
    /// Requests in flight per connection.
    pub depth: usize,
    /// One complete request, pre-encoded.
    pub request: Vec<u8>,
    /// Paced load: batches per second over all connections; `None`: closed loop.
    pub rate: Option<f64>,
    /// The body every response must have: one with another counts as an error (a file served
    /// under load is checked, not only its status). `None`: any body.
    pub expect: Option<Arc<[u8]>>,
}

#[repr(align(64))]
struct Counter(AtomicU64);

struct Shared {
    stop: AtomicBool,
    record: AtomicBool,
    completed: Vec<Counter>,
}

/// A running load.
pub struct Load {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<io::Result<ThreadResult>>>,
}

/// The outcome of a load, over the time it recorded.
pub struct LoadResult {
    /// Responses that were not 2xx, malformed responses, and connections lost.
    pub errors: u64,
    /// Latency of every response received while recording, in ns.
    pub latency: Histogram<u64>,
}

struct ThreadResult {
    errors: u64,
    latency: Histogram<u64>,
}

impl Load {
    /// Connects every connection, then starts sending; returns once all are sending.
    pub fn start(spec: &LoadSpec) -> io::Result<Load> {
        let threads = spec.threads.clamp(1, spec.connections.max(1));
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            record: AtomicBool::new(false),
            completed: (0..threads).map(|_| Counter(AtomicU64::new(0))).collect(),
        });
        let barrier = Arc::new(Barrier::new(threads + 1));
        let batch: Arc<[u8]> = spec.request.repeat(spec.depth.max(1)).into();
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            // Spread connections as evenly as possible.
            let n = spec.connections / threads + usize::from(t < spec.connections % threads);
            let mut conns = Vec::with_capacity(n);
            for _ in 0..n {
                conns.push(Stream::connect(&spec.endpoint)?.into_fd());
            }
            let (shared, barrier, batch) = (shared.clone(), barrier.clone(), batch.clone());
            let expect = spec.expect.clone();
            let depth = spec.depth.max(1);
            // Each connection sends every `connections / rate` seconds.
            let interval = spec
                .rate
                .filter(|r| *r > 0.0)
                .map(|r| Duration::from_secs_f64(spec.connections as f64 / r));
            handles.push(std::thread::spawn(move || {
                barrier.wait();
                let cfg = ThreadCfg {
                    batch: &batch,
                    depth,
                    interval,
                    expect: expect.as_deref(),
                };
                run_thread(t, conns, &cfg, &shared)
            }));
        }
        barrier.wait();
        Ok(Load {
            shared,
            threads: handles,
        })
    }

    /// Responses received so far, on every connection.
    pub fn completed(&self) -> u64 {
        self.shared
            .completed
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }

    /// Turns latency recording on or off.
    pub fn record(&self, on: bool) {
        self.shared.record.store(on, Ordering::Relaxed);
    }

    /// Stops sending, waits for the threads, merges their results.
    pub fn finish(self) -> io::Result<LoadResult> {
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut latency = new_histogram();
        let mut errors = 0;
        for h in self.threads {
            let r = h
                .join()
                .map_err(|_| io::Error::other("load thread panicked"))??;
            errors += r.errors;
            latency
                .add(&r.latency)
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
        Ok(LoadResult { errors, latency })
    }
}

fn new_histogram() -> Histogram<u64> {
    // Cannot fail: the bounds are constants within hdrhistogram's range.
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("histogram bounds")
}

struct Conn {
    fd: OwnedFd,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Responses still expected from the current batch.
    outstanding: usize,
    /// Bytes of the current batch already written.
    written: usize,
    /// Whether the socket is registered for `EPOLLOUT` (the batch did not fit).
    out_armed: bool,
    /// When the current batch was sent (paced: when it was scheduled).
    sent_at: Instant,
    /// Paced: when the next batch is due.
    next_send: Instant,
    /// Paced: whether the connection is in the thread's queue of idle connections by due time.
    queued: bool,
}

impl Conn {
    fn idle(&self, batch: &[u8]) -> bool {
        self.outstanding == 0 && self.written == batch.len()
    }
}

/// What every connection of a thread sends, and how often.
struct ThreadCfg<'a> {
    batch: &'a [u8],
    depth: usize,
    /// Paced: time between a connection's batches.
    interval: Option<Duration>,
    /// The body every response must have.
    expect: Option<&'a [u8]>,
}

fn run_thread(
    t: usize,
    fds: Vec<OwnedFd>,
    cfg: &ThreadCfg<'_>,
    shared: &Shared,
) -> io::Result<ThreadResult> {
    let ep = epoll::create(CreateFlags::CLOEXEC)?;
    let mut conns = Vec::with_capacity(fds.len());
    // Paced: the idle connections by due time, so that finding the next one costs O(log n)
    // whatever the number of connections (a scan of 10,000 per event would be the bottleneck).
    let mut due: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::with_capacity(fds.len());
    let mut result = ThreadResult {
        errors: 0,
        latency: new_histogram(),
    };
    let n = fds.len().max(1) as u32;
    let start = Instant::now();
    for (i, fd) in fds.into_iter().enumerate() {
        rustix::io::ioctl_fionbio(&fd, true)?;
        epoll::add(&ep, &fd, EventData::new_u64(i as u64), EventFlags::IN)?;
        let mut c = Conn {
            fd,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            outstanding: 0,
            written: cfg.batch.len(),
            out_armed: false,
            sent_at: start,
            // Paced connections start staggered over one interval.
            next_send: start + cfg.interval.map_or(Duration::ZERO, |d| d * i as u32 / n),
            queued: cfg.interval.is_some(),
        };
        if c.queued {
            due.push(Reverse((c.next_send, i)));
        }
        if cfg.interval.is_none() {
            send_batch(&ep, i, &mut c, cfg, Instant::now())?;
        }
        conns.push(Some(c));
    }
    let mut completed = 0u64;
    let mut live = conns.len();
    let mut events = Vec::with_capacity(conns.len() + 1);
    // Paced: a timerfd wakes the loop when the next batch is due. (`epoll_wait`'s own timeout
    // has millisecond resolution, which would delay sends and be charged as latency.)
    let timer = match cfg.interval {
        Some(_) => {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            epoll::add(&ep, &fd, EventData::new_u64(TIMER), EventFlags::IN)?;
            Some(fd)
        }
        None => None,
    };
    while live > 0 && !shared.stop.load(Ordering::Relaxed) {
        // Wake at least every 20 ms to see `stop`; paced, also when a batch is due.
        let mut wait = Duration::from_millis(20);
        if let Some(timer) = &timer {
            let now = Instant::now();
            let next = due
                .peek()
                .map(|Reverse((at, _))| at.saturating_duration_since(now));
            if let Some(due) = next {
                wait = Duration::ZERO;
                if !due.is_zero() {
                    let value = Itimerspec {
                        it_interval: Timespec {
                            tv_sec: 0,
                            tv_nsec: 0,
                        },
                        it_value: Timespec {
                            tv_sec: due.as_secs() as _,
                            tv_nsec: due.subsec_nanos() as _,
                        },
                    };
                    timerfd_settime(timer, TimerfdTimerFlags::empty(), &value)?;
                    wait = Duration::from_millis(20);
                }
            }
        }
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: wait.as_nanos() as _,
        };
        events.clear();
        match epoll::wait(
            &ep,
            rustix::buffer::spare_capacity(&mut events),
            Some(&timeout),
        ) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let record = shared.record.load(Ordering::Relaxed);
        for ev in &events {
            if ev.data.u64() == TIMER {
                if let Some(timer) = &timer {
                    let _ = rustix::io::read(timer, &mut [0u8; 8]);
                }
                continue;
            }
            let i = ev.data.u64() as usize;
            let Some(c) = conns[i].as_mut() else { continue };
            let flags = ev.flags;
            let ok = if flags.contains(EventFlags::OUT) {
                continue_batch(&ep, i, c, cfg.batch)
            } else {
                on_readable(&ep, i, c, cfg, record, &mut result, &mut completed)
            };
            if ok && cfg.interval.is_some() && !c.queued && c.idle(cfg.batch) {
                c.queued = true;
                due.push(Reverse((c.next_send, i)));
            }
            if !ok {
                result.errors += 1;
                conns[i] = None;
                live -= 1;
            }
        }
        if let Some(interval) = cfg.interval {
            let now = Instant::now();
            while let Some(&Reverse((at, i))) = due.peek() {
                if at > now {
                    break;
                }
                due.pop();
                let slot = &mut conns[i];
                let Some(c) = slot else { continue };
                c.queued = false;
                c.next_send += interval;
                if send_batch(&ep, i, c, cfg, at).is_err() {
                    result.errors += 1;
                    *slot = None;
                    live -= 1;
                }
            }
        }
        shared.completed[t].0.store(completed, Ordering::Relaxed);
    }
    Ok(result)
}

/// Reads and frames responses; in a closed loop, starts the next batch when this one is done.
/// `false`: drop the connection.
fn on_readable(
    ep: &OwnedFd,
    i: usize,
    c: &mut Conn,
    cfg: &ThreadCfg<'_>,
    record: bool,
    result: &mut ThreadResult,
    completed: &mut u64,
) -> bool {
    if c.end == c.buf.len() {
        if c.start == 0 {
            return false; // a response larger than the buffer: not one the bench asks for
        }
        c.buf.copy_within(c.start..c.end, 0);
        c.end -= c.start;
        c.start = 0;
    }
    match rustix::io::read(&c.fd, &mut c.buf[c.end..]) {
        Ok(0) => return false,
        Ok(n) => c.end += n,
        Err(Errno::AGAIN | Errno::INTR) => return true,
        Err(_) => return false,
    }
    let now = Instant::now();
    loop {
        match response::parse(&c.buf[c.start..c.end]) {
            Ok(Some(p)) => {
                let body = &c.buf[c.start + p.head_len..c.start + p.len];
                let wrong = cfg.expect.is_some_and(|e| e != body);
                c.start += p.len;
                if !(200..300).contains(&p.status) || wrong {
                    result.errors += 1;
                }
                *completed += 1;
                c.outstanding = c.outstanding.saturating_sub(1);
                if record {
                    let ns = now.duration_since(c.sent_at).as_nanos() as u64;
                    result.latency.saturating_record(ns.max(1));
                }
            }
            Ok(None) => break,
            Err(_) => return false,
        }
    }
    if c.start == c.end {
        c.start = 0;
        c.end = 0;
    }
    if cfg.interval.is_none() && c.idle(cfg.batch) {
        return send_batch(ep, i, c, cfg, now).is_ok();
    }
    true
}

/// Starts a batch; `sent_at` is now (closed loop) or when it was due (paced).
fn send_batch(
    ep: &OwnedFd,
    i: usize,
    c: &mut Conn,
    cfg: &ThreadCfg<'_>,
    sent_at: Instant,
) -> io::Result<()> {
    c.outstanding = cfg.depth;
    c.written = 0;
    c.sent_at = sent_at;
    if continue_batch(ep, i, c, cfg.batch) {
        Ok(())
    } else {
        Err(io::Error::other("write failed"))
    }
}

/// Writes what is left of the batch; waits for `EPOLLOUT` if the socket is full.
fn continue_batch(ep: &OwnedFd, i: usize, c: &mut Conn, batch: &[u8]) -> bool {
    while c.written < batch.len() {
        match rustix::io::write(&c.fd, &batch[c.written..]) {
            Ok(n) => c.written += n,
            Err(Errno::AGAIN) if c.out_armed => return true,
            Err(Errno::AGAIN) => {
                c.out_armed = true;
                let flags = EventFlags::IN | EventFlags::OUT;
                return epoll::modify(ep, &c.fd, EventData::new_u64(i as u64), flags).is_ok();
            }
            Err(Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    if c.out_armed {
        c.out_armed = false;
        return epoll::modify(ep, &c.fd, EventData::new_u64(i as u64), EventFlags::IN).is_ok();
    }
    true
}

/// Runs a load for `warmup`, then records for `window`; returns the result and the throughput
/// over the window.
pub fn run_for(
    spec: &LoadSpec,
    warmup: Duration,
    window: Duration,
) -> io::Result<(LoadResult, f64)> {
    let load = Load::start(spec)?;
    std::thread::sleep(warmup);
    let (n0, t0) = (load.completed(), Instant::now());
    load.record(true);
    std::thread::sleep(window);
    let (n1, t1) = (load.completed(), Instant::now());
    load.record(false);
    let result = load.finish()?;
    Ok((result, (n1 - n0) as f64 / (t1 - t0).as_secs_f64()))
}
