//! The raw upload receiver: socket → sink with nothing in between.
//!
//! One blocking thread per connection (the fastest way to move one large stream: no readiness
//! round trips, one `read` per buffer). The request head is found with [`wire::head_len`] and
//! its `Content-Length` read, so the client sends the very same bytes as to the HTTP servers;
//! then the body goes to the sink:
//! - discard: `read` into a [`DISCARD_BUF`] buffer until the body is in;
//! - file: fill a [`FILE_WRITE`] buffer with as many reads as it takes, then `write` it whole
//!   (always-full writes are the best plain Rust can do; the HTTP servers write what each read
//!   returned);
//! - splice: socket → pipe → file with `splice(2)`, through a 1 MiB pipe.
//!
//! The answer is a minimal HTTP response carrying the [`UploadTrace`].

use crate::server::sink::{DISCARD_BUF, FILE_WRITE, create_upload_file};
use crate::server::trace::UploadTrace;
use crate::server::{Endpoint, ServeArgs, Sink, StartError, listen};
use crate::wire;
use rustix::pipe::{PipeFlags, SpliceFlags};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Buffer for the request head.
const HEAD_BUF: usize = 16 << 10;
/// Pipe capacity for splice; 1 MiB is the default `/proc/sys/fs/pipe-max-size`.
const PIPE_SIZE: usize = 1 << 20;

/// Binds and starts the accept thread.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    if args.sink == Sink::Chunks {
        return Err(StartError::Unavailable(
            "the raw receiver has no chunk API".into(),
        ));
    }
    let (listener, endpoint) = listen::bind(args)?;
    let sink = args.sink;
    let read_buf = args.read_buf.unwrap_or(DISCARD_BUF);
    let dir = args.data_dir.clone();
    let tcp = matches!(endpoint, Endpoint::Tcp(_));
    std::thread::spawn(move || {
        loop {
            let fd = match rustix::net::accept(&listener) {
                Ok(fd) => fd,
                Err(e) => {
                    eprintln!("raw upload: accept: {e}");
                    continue;
                }
            };
            let dir = dir.clone();
            let spawned = std::thread::Builder::new()
                .name("raw-upload".into())
                .spawn(move || {
                    let result = if tcp {
                        let s = TcpStream::from(fd);
                        let _ = s.set_nodelay(true);
                        serve_connection(s, sink, read_buf, &dir)
                    } else {
                        serve_connection(UnixStream::from(fd), sink, read_buf, &dir)
                    };
                    if let Err(e) = result {
                        eprintln!("raw upload: {e}");
                    }
                });
            if let Err(e) = spawned {
                eprintln!("raw upload: spawn: {e}");
            }
        }
    });
    Ok(endpoint)
}

fn serve_connection<S: Read + Write + AsFd>(
    mut s: S,
    sink: Sink,
    read_buf: usize,
    dir: &Path,
) -> io::Result<()> {
    let mut head = vec![0u8; HEAD_BUF];
    let mut filled = 0;
    let mut body = vec![
        0u8;
        if sink == Sink::Discard {
            read_buf
        } else {
            FILE_WRITE
        }
    ];
    let mut pipe = None;
    loop {
        // Read until a complete head is buffered.
        let head_len = loop {
            if let Some(n) = wire::head_len(&head[..filled]) {
                break n;
            }
            if filled == head.len() {
                return Err(io::Error::other("request head too large"));
            }
            let n = s.read(&mut head[filled..])?;
            if n == 0 {
                return Ok(()); // the client closed between requests
            }
            filled += n;
        };
        let mut trace = UploadTrace::start();
        let len = wire::content_length(&head[..head_len])
            .ok_or_else(|| io::Error::other("no Content-Length"))?;
        // Body bytes that came in with the head.
        let early = (filled - head_len).min(len as usize);
        let early_range = head_len..head_len + early;
        let rest = len - early as u64;
        match sink {
            Sink::Discard => {
                trace.received(early);
                discard(&mut s, rest, &mut body, &mut trace)?;
            }
            Sink::File => {
                body[..early].copy_from_slice(&head[early_range]);
                trace.received(early);
                let mut file = create_upload_file(dir)?;
                to_file(&mut s, rest, &mut body, early, &mut file, &mut trace)?;
            }
            Sink::Chunks => unreachable!("refused in start"),
            Sink::Splice => {
                let mut file = create_upload_file(dir)?;
                file.write_all(&head[early_range])?;
                trace.received(early);
                if pipe.is_none() {
                    pipe = Some(new_pipe()?);
                }
                if let Some((r, w)) = &pipe {
                    splice_to_file(&s, rest, (r, w), &file, &mut trace)?;
                }
            }
        }
        trace.finish();
        respond(&mut s, &trace)?;
        // Keep whatever followed the body for the next request.
        let used = head_len + early;
        head.copy_within(used..filled, 0);
        filled -= used;
    }
}

fn discard<S: Read>(
    s: &mut S,
    mut rest: u64,
    buf: &mut [u8],
    t: &mut UploadTrace,
) -> io::Result<()> {
    while rest > 0 {
        let want = buf.len().min(rest as usize);
        let n = s.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        t.received(n);
        rest -= n as u64;
    }
    Ok(())
}

fn to_file<S: Read>(
    s: &mut S,
    mut rest: u64,
    buf: &mut [u8],
    mut filled: usize,
    file: &mut File,
    t: &mut UploadTrace,
) -> io::Result<()> {
    while rest > 0 {
        let want = (buf.len() - filled).min(rest as usize);
        let n = s.read(&mut buf[filled..filled + want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        t.received(n);
        rest -= n as u64;
        filled += n;
        if filled == buf.len() {
            file.write_all(buf)?;
            filled = 0;
        }
    }
    file.write_all(&buf[..filled])
}

fn new_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    // A smaller pipe only means more splice calls; keep going if the limit is lower.
    let _ = rustix::pipe::fcntl_setpipe_size(&w, PIPE_SIZE);
    Ok((r, w))
}

fn splice_to_file<S: AsFd>(
    s: &S,
    mut rest: u64,
    (pr, pw): (&OwnedFd, &OwnedFd),
    file: &File,
    t: &mut UploadTrace,
) -> io::Result<()> {
    let flags = SpliceFlags::MOVE | SpliceFlags::MORE;
    while rest > 0 {
        let want = PIPE_SIZE.min(rest as usize);
        let n = rustix::pipe::splice(s, None, pw, None, want, flags)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        t.received(n);
        rest -= n as u64;
        let mut left = n;
        while left > 0 {
            left -= rustix::pipe::splice(pr, None, file, None, left, flags)?;
        }
    }
    Ok(())
}

fn respond<S: Write>(s: &mut S, trace: &UploadTrace) -> io::Result<()> {
    let body = trace.encode();
    let msg = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}",
        body.len()
    );
    s.write_all(msg.as_bytes())
}
