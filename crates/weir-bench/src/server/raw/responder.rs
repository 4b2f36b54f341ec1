//! The raw responder: the fastest plain-Rust answer to many small keep-alive requests.
//!
//! `threads` event loops, each with its own epoll set and its own connections, and one acceptor
//! thread that deals accepted connections to the loops in turn (through a queue and an eventfd),
//! so that every loop gets its share. (A listener shared by the loops with `EPOLLEXCLUSIVE` put all
//! 64 connections on one loop: exclusive wake-ups go to the first waiter.) Per readable event:
//! one `read` into the connection's fixed buffer, then for each complete request found
//! (`\r\n\r\n`, plus `Content-Length` bytes skipped for requests other than `GET`) the
//! pre-encoded plaintext response is appended to the connection's output, which goes out in one
//! `write`. Pipelined requests therefore get one `write` per batch. Nothing allocates per request
//! once the buffers have grown.

use crate::server::plaintext::Encoded;
use crate::server::{Endpoint, ServeArgs, StartError, listen};
use crate::wire;
use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::event::{EventfdFlags, eventfd};
use rustix::io::Errno;
use rustix::net::SocketFlags;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Per-connection read buffer: far above any request head the bench sends, and large enough for
/// a 16-deep pipeline of 2 KB POSTs to arrive in one read.
const READ_BUF: usize = 64 << 10;
/// epoll key of a loop's eventfd: new connections are waiting in its inbox.
const WAKE: u64 = u64::MAX;

/// What the acceptor shares with one event loop.
struct Loop {
    wake: OwnedFd,
    inbox: Mutex<Vec<OwnedFd>>,
}

/// Binds, starts the event loops and the acceptor.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    let (listener, endpoint) = listen::bind(args)?;
    let tcp = matches!(endpoint, Endpoint::Tcp(_));
    let mut loops = Vec::new();
    for _ in 0..args.threads.max(1) {
        let ep = epoll::create(CreateFlags::CLOEXEC).map_err(io::Error::from)?;
        let wake =
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(io::Error::from)?;
        epoll::add(&ep, &wake, EventData::new_u64(WAKE), EventFlags::IN)
            .map_err(io::Error::from)?;
        let l = Arc::new(Loop {
            wake,
            inbox: Mutex::new(Vec::new()),
        });
        loops.push(Arc::clone(&l));
        std::thread::Builder::new()
            .name("raw-responder".into())
            .spawn(move || {
                if let Err(e) = event_loop(&ep, &l) {
                    eprintln!("raw responder: {e}");
                }
            })?;
    }
    std::thread::Builder::new()
        .name("raw-acceptor".into())
        .spawn(move || accept_loop(&listener, tcp, &loops))?;
    Ok(endpoint)
}

fn accept_loop(listener: &OwnedFd, tcp: bool, loops: &[Arc<Loop>]) {
    for n in 0.. {
        let fd = match rustix::net::accept_with(
            listener,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        ) {
            Ok(fd) => fd,
            Err(Errno::INTR | Errno::CONNABORTED) => continue,
            Err(e) => {
                eprintln!("raw responder: accept: {e}");
                return;
            }
        };
        if tcp && rustix::net::sockopt::set_tcp_nodelay(&fd, true).is_err() {
            continue;
        }
        let l = &loops[n % loops.len()];
        l.inbox.lock().unwrap_or_else(|p| p.into_inner()).push(fd);
        let _ = rustix::io::write(&l.wake, &1u64.to_ne_bytes());
    }
}

struct Conn {
    fd: OwnedFd,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Body bytes of the current request still to skip.
    skip: u64,
    out: Vec<u8>,
    out_pos: usize,
}

enum Next {
    Keep,
    Close,
}

fn event_loop(ep: &OwnedFd, l: &Loop) -> rustix::io::Result<()> {
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = Vec::with_capacity(256);
    let mut response = Encoded::new();
    loop {
        events.clear();
        match epoll::wait(ep, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
        response.refresh(SystemTime::now());
        for ev in &events {
            let key = ev.data.u64();
            if key == WAKE {
                adopt(ep, l, &mut conns)?;
                continue;
            }
            let i = key as usize;
            let Some(conn) = conns.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let flags = ev.flags;
            let next = if flags.contains(EventFlags::OUT) {
                on_writable(ep, i, conn)
            } else {
                on_readable(ep, i, conn, response.bytes())
            };
            if let Next::Close = next {
                // Closing the fd removes it from the epoll set.
                conns[i] = None;
            }
        }
    }
}

/// Registers the connections the acceptor dealt to this loop.
fn adopt(ep: &OwnedFd, l: &Loop, conns: &mut Vec<Option<Conn>>) -> rustix::io::Result<()> {
    let mut count = [0u8; 8];
    let _ = rustix::io::read(&l.wake, &mut count);
    let new: Vec<OwnedFd> = std::mem::take(&mut *l.inbox.lock().unwrap_or_else(|p| p.into_inner()));
    for fd in new {
        let i = conns.iter().position(Option::is_none).unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        epoll::add(ep, &fd, EventData::new_u64(i as u64), EventFlags::IN)?;
        conns[i] = Some(Conn {
            fd,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            skip: 0,
            out: Vec::with_capacity(4096),
            out_pos: 0,
        });
    }
    Ok(())
}

fn on_readable(ep: &OwnedFd, key: usize, c: &mut Conn, response: &[u8]) -> Next {
    if c.end == c.buf.len() {
        if c.start == 0 {
            return Next::Close; // a head larger than the buffer: not something the bench sends
        }
        c.buf.copy_within(c.start..c.end, 0);
        c.end -= c.start;
        c.start = 0;
    }
    match rustix::io::read(&c.fd, &mut c.buf[c.end..]) {
        Ok(0) => return Next::Close,
        Ok(n) => c.end += n,
        Err(Errno::AGAIN | Errno::INTR) => return Next::Keep,
        Err(_) => return Next::Close,
    }
    parse_requests(c, response);
    if c.out.is_empty() {
        return Next::Keep;
    }
    match flush(c) {
        Ok(true) => Next::Keep,
        // The socket is full: stop reading until it drains.
        Ok(false) => {
            match epoll::modify(ep, &c.fd, EventData::new_u64(key as u64), EventFlags::OUT) {
                Ok(()) => Next::Keep,
                Err(_) => Next::Close,
            }
        }
        Err(_) => Next::Close,
    }
}

fn on_writable(ep: &OwnedFd, key: usize, c: &mut Conn) -> Next {
    match flush(c) {
        Ok(true) => {
            match epoll::modify(ep, &c.fd, EventData::new_u64(key as u64), EventFlags::IN) {
                Ok(()) => Next::Keep,
                Err(_) => Next::Close,
            }
        }
        Ok(false) => Next::Keep,
        Err(_) => Next::Close,
    }
}

/// Appends one response per complete request in the buffer.
fn parse_requests(c: &mut Conn, response: &[u8]) {
    while c.start < c.end {
        if c.skip > 0 {
            let k = c.skip.min((c.end - c.start) as u64);
            c.start += k as usize;
            c.skip -= k;
            continue;
        }
        let Some(n) = wire::head_len(&c.buf[c.start..c.end]) else {
            break;
        };
        let head = &c.buf[c.start..c.start + n];
        if !head.starts_with(b"GET ") {
            c.skip = wire::content_length(head).unwrap_or(0);
        }
        c.out.extend_from_slice(response);
        c.start += n;
    }
    if c.start == c.end {
        c.start = 0;
        c.end = 0;
    }
}

/// Writes pending output; `Ok(true)` when all of it is out.
fn flush(c: &mut Conn) -> rustix::io::Result<bool> {
    while c.out_pos < c.out.len() {
        match rustix::io::write(&c.fd, &c.out[c.out_pos..]) {
            Ok(n) => c.out_pos += n,
            Err(Errno::AGAIN) => return Ok(false),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    c.out.clear();
    c.out_pos = 0;
    Ok(true)
}
