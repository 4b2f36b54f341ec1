//! The rows with many requests at once, driven against one server: many small `PUT`s over
//! keep-alive connections, many concurrent `GET`s of one file, a listing under several
//! clients, and a small file's `GET` under a closed-loop load (the load generator of
//! `client::load`, with every body checked). Each checks every answer: a `PUT`'s status, a
//! `GET`'s bytes, a listing's count.
//!
//! Blocking threads, one per connection (the `GET` fan-out's with small stacks): the client's
//! work per byte is a compare, and a thread per connection keeps each request's code the
//! one-connection code of `transfer.rs`.

use super::listing::{Format, list_all};
use crate::client::load::{Load, LoadSpec};
use crate::clock;
use crate::scenario::child::{Server, Usage, usage};
use crate::scenario::s3::{Pattern, read_response};
use crate::scenario::transfer;
use crate::server::Endpoint;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Stack of each fan-out thread: it holds a 64 KiB read buffer on the heap and little else.
const FAN_STACK: usize = 256 << 10;
/// Read buffer of each fan-out connection.
const FAN_BUF: usize = 64 << 10;

/// Runs `f(i)` for `i` in `0..n` on `n` threads started together; the seconds from the start
/// to the last thread's end, or the first error.
fn together(
    n: usize,
    stack: usize,
    f: impl Fn(usize) -> io::Result<()> + Send + Sync + 'static,
) -> io::Result<f64> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(n + 1));
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let (f, barrier) = (f.clone(), barrier.clone());
        handles.push(
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn(move || {
                    barrier.wait();
                    f(i)
                })?,
        );
    }
    barrier.wait();
    let start = clock::monotonic_ns();
    let mut first_error = None;
    for h in handles {
        let r = h
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("client thread panicked")));
        if let (Err(e), None) = (r, &first_error) {
            first_error = Some(e);
        }
    }
    let seconds = (clock::monotonic_ns() - start) as f64 / 1e9;
    first_error.map_or(Ok(seconds), Err)
}

/// `n` `PUT`s of `size` bytes each at `{base}f-{i:05}` (`base` ends in `/`), over `conns`
/// keep-alive connections, each sending its share one after the other; every answer must be
/// 200, 201 or 204. The seconds for all of them.
pub fn puts(
    addr: SocketAddr,
    base: &str,
    n: usize,
    size: usize,
    conns: usize,
    p: &Arc<Pattern>,
) -> io::Result<f64> {
    let (base, p) = (Arc::<str>::from(base), p.clone());
    together(conns, FAN_STACK, move |t| {
        let mut s = transfer::connect(addr)?;
        for i in (t..n).step_by(conns) {
            let head = format!(
                "PUT {base}f-{i:05} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n\r\n"
            );
            // Head and body in one write: one segment for a small file, as a client sends it.
            let mut req = Vec::with_capacity(head.len() + size);
            req.extend_from_slice(head.as_bytes());
            req.extend_from_slice(p.at(0, size));
            s.write_all(&req)?;
            // read_response allocates its buffer per answer: a client-side cost, alike for all.
            let (status, body) = read_response(&mut s)?;
            if !matches!(status, 200 | 201 | 204) {
                return Err(io::Error::other(format!(
                    "PUT {base}f-{i:05}: {status} {}",
                    String::from_utf8_lossy(&body).trim()
                )));
            }
        }
        Ok(())
    })
}

/// `conns` concurrent `GET`s of `path` (`size` bytes), each on its own connection, every byte
/// compared. The seconds from the first connect to the last byte of the last one.
pub fn fan_out(
    addr: SocketAddr,
    path: &str,
    size: u64,
    conns: usize,
    p: &Arc<Pattern>,
) -> io::Result<f64> {
    let (path, p) = (Arc::<str>::from(path), p.clone());
    together(conns, FAN_STACK, move |_| {
        transfer::get(addr, &path, &p, size, FAN_BUF).map(|_| ())
    })
}

/// `clients` clients each listing folder `dir` whole `each` times, one after the other; every
/// listing must count `expected` entries. The seconds for all of them.
pub fn listings(
    addr: SocketAddr,
    prefix: &'static str,
    dir: &'static str,
    format: Format,
    (clients, each): (usize, usize),
    expected: usize,
) -> io::Result<f64> {
    together(clients, 1 << 20, move |_| {
        for _ in 0..each {
            let n = list_all(addr, prefix, dir, format)?;
            if n != expected {
                return Err(io::Error::other(format!(
                    "{format:?}: listed {n} entries of {expected}"
                )));
            }
        }
        Ok(())
    })
}

/// The warm-up and the measured window of a closed-loop load ([`small_gets`]) at the run's
/// size.
pub fn load_times(s: &crate::scenario::Settings) -> (Duration, Duration) {
    s.pick(
        (Duration::from_secs(1), Duration::from_secs(5)),
        (Duration::from_millis(300), Duration::from_secs(1)),
        (Duration::from_millis(100), Duration::from_millis(300)),
    )
}

/// A closed-loop load's figures over its measured window.
pub struct Window {
    pub rps: f64,
    /// Answers received in the window.
    pub requests: u64,
    pub p99_us: f64,
    /// Non-2xx answers, wrong bodies, lost connections.
    pub errors: u64,
}

/// `GET {path}` (whose body is `body`) on `conns` keep-alive connections, `depth` requests in
/// flight on each, from `threads` client threads; after `warmup`, measured over `window`, the
/// server's usage with it.
pub fn small_gets(
    server: &Server,
    path: &str,
    body: &[u8],
    (conns, depth, threads): (usize, usize, usize),
    (warmup, window): (Duration, Duration),
) -> io::Result<(Window, Usage)> {
    let spec = LoadSpec {
        endpoint: Endpoint::Tcp(server.addr),
        connections: conns,
        threads,
        depth,
        request: format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes(),
        rate: None,
        expect: Some(body.into()),
    };
    let load = Load::start(&spec)?;
    std::thread::sleep(warmup);
    load.record(true);
    let measured = usage(server, || {
        let (n0, t0) = (load.completed(), Instant::now());
        std::thread::sleep(window);
        Ok((load.completed() - n0, t0.elapsed()))
    });
    load.record(false);
    let result = load.finish()?;
    let ((n, elapsed), used) = measured?;
    Ok((
        Window {
            rps: n as f64 / elapsed.as_secs_f64(),
            requests: n,
            p99_us: result.latency.value_at_quantile(0.99) as f64 / 1e3,
            errors: result.errors,
        },
        used,
    ))
}
