//! The raw upload receiver: socket → sink with nothing in between.
//!
//! One blocking thread per connection (the fastest way to move one large stream: no readiness
//! round trips, one `read` per buffer). The request head is found with [`wire::head_len`] and
//! its `Content-Length` read, so the client sends the very same bytes as to the HTTP servers;
//! then the body goes to the sink:
//! - discard: `read` into a [`DISCARD_BUF`] buffer until the body is in;
//! - file: fill a [`FILE_WRITE`] buffer with as many reads as it takes, then `write` it whole
//!   (always-full writes are the best plain Rust can do; the HTTP servers write what each read
//!   returned); with `--sha256`, each buffer is hashed just before it is written, on the same
//!   thread (`sha2`, SHA-NI where the CPU has it); with `--sha256-thread`, each buffer is
//!   written, then handed to a hashing thread (one per upload, scoped) while the next buffer is
//!   filled, [`HASH_BUFFERS`] taking turns (the simplest way to hash on a second core); with
//!   `--fsync`, the file is synced before the answer (with `--sha256-thread`, while the hashing
//!   thread finishes the last buffers);
//! - splice: socket → pipe → file with `splice(2)`, through a 1 MiB pipe.
//!
//! The answer is a minimal HTTP response carrying the [`UploadTrace`].

use crate::server::sink::{DISCARD_BUF, FILE_WRITE, create_upload_file};
use crate::server::trace::UploadTrace;
use crate::server::{Endpoint, ServeArgs, Sink, StartError, listen};
use crate::wire;
use rustix::pipe::{PipeFlags, SpliceFlags};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;

/// Buffer for the request head.
const HEAD_BUF: usize = 16 << 10;
/// Pipe capacity for splice; 1 MiB is the default `/proc/sys/fs/pipe-max-size`.
const PIPE_SIZE: usize = 1 << 20;
/// Buffers of [`FILE_WRITE`] bytes in play with `--sha256-thread`: one being filled, one being
/// hashed, one queued for the hashing thread.
const HASH_BUFFERS: usize = 3;
// The body bytes read with the head fit in the first buffer.
const _: () = assert!(HEAD_BUF <= FILE_WRITE);

/// Binds and starts the accept thread.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    if args.sink == Sink::Chunks {
        return Err(StartError::Unavailable(
            "the raw receiver has no chunk API".into(),
        ));
    }
    let (listener, endpoint) = listen::bind(args)?;
    let sink = args.sink;
    let file_opts = FileOpts {
        sha256: args.sha256,
        sha256_thread: args.sha256_thread,
        fsync: args.fsync,
    };
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
                        serve_connection(s, sink, file_opts, read_buf, &dir)
                    } else {
                        serve_connection(UnixStream::from(fd), sink, file_opts, read_buf, &dir)
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

/// What the file sink does besides writing.
#[derive(Clone, Copy, Debug)]
struct FileOpts {
    sha256: bool,
    sha256_thread: bool,
    fsync: bool,
}

fn serve_connection<S: Read + Write + AsFd>(
    mut s: S,
    sink: Sink,
    file_opts: FileOpts,
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
    // `--sha256-thread`'s buffers, kept for the connection's next upload.
    let mut spare = Vec::new();
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
            Sink::File if file_opts.sha256_thread => {
                trace.received(early);
                let mut file = create_upload_file(dir)?;
                let early = &head[early_range];
                let digest = to_file_hashing_beside(
                    &mut s,
                    rest,
                    early,
                    &mut spare,
                    &mut file,
                    file_opts.fsync,
                    &mut trace,
                )?;
                std::hint::black_box(digest);
            }
            Sink::File => {
                body[..early].copy_from_slice(&head[early_range]);
                trace.received(early);
                let mut file = create_upload_file(dir)?;
                let mut sha = file_opts.sha256.then(Sha256::new);
                to_file(
                    &mut s, rest, &mut body, early, &mut file, &mut sha, &mut trace,
                )?;
                if file_opts.fsync {
                    file.sync_all()?;
                }
                // The digest is computed; what it is does not matter here.
                std::hint::black_box(sha.map(Sha256::finalize));
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
    sha: &mut Option<Sha256>,
    t: &mut UploadTrace,
) -> io::Result<()> {
    let mut write = |bytes: &[u8]| {
        if let Some(h) = sha.as_mut() {
            h.update(bytes);
        }
        file.write_all(bytes)
    };
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
            write(buf)?;
            filled = 0;
        }
    }
    write(&buf[..filled])
}

/// The file sink with `--sha256-thread`: each [`FILE_WRITE`] buffer is filled (the early
/// bytes first), written, then sent to a hashing thread, which sends it back once hashed; the
/// task fills a spare buffer meanwhile, or waits for one. With `fsync`, the file is synced
/// after the last write, while the thread hashes what is left. Returns the SHA-256.
fn to_file_hashing_beside<S: Read>(
    s: &mut S,
    mut rest: u64,
    early: &[u8],
    spare: &mut Vec<Vec<u8>>,
    file: &mut File,
    fsync: bool,
    t: &mut UploadTrace,
) -> io::Result<[u8; 32]> {
    while spare.len() < HASH_BUFFERS {
        spare.push(vec![0; FILE_WRITE]);
    }
    // At most `HASH_BUFFERS` buffers exist, so neither channel ever blocks a sender.
    let (queue, jobs) = mpsc::sync_channel::<(Vec<u8>, usize)>(HASH_BUFFERS);
    let (give_back, returned) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let hasher = scope.spawn(move || {
            let mut h = Sha256::new();
            for (buf, n) in jobs {
                h.update(&buf[..n]);
                // The receiver is gone only when the upload failed: nothing to give back to.
                let _ = give_back.send(buf);
            }
            <[u8; 32]>::from(h.finalize())
        });
        let mut received = || -> io::Result<()> {
            let mut buf = spare.pop().unwrap_or_else(|| vec![0; FILE_WRITE]);
            // The early bytes fit: they come from the head buffer, smaller than this one.
            buf[..early.len()].copy_from_slice(early);
            let mut filled = early.len();
            loop {
                while filled < buf.len() && rest > 0 {
                    let want = (buf.len() - filled).min(rest as usize);
                    let n = s.read(&mut buf[filled..filled + want])?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    t.received(n);
                    rest -= n as u64;
                    filled += n;
                }
                file.write_all(&buf[..filled])?;
                let gone = || io::Error::other("the hashing thread is gone");
                queue.send((buf, filled)).map_err(|_| gone())?;
                if rest == 0 {
                    return Ok(());
                }
                buf = match spare.pop() {
                    Some(b) => b,
                    None => returned.recv().map_err(|_| gone())?,
                };
                filled = 0;
            }
        };
        let result = received();
        drop(queue);
        let synced = if fsync && result.is_ok() {
            file.sync_all()
        } else {
            Ok(())
        };
        let digest = hasher
            .join()
            .map_err(|_| io::Error::other("the hashing thread panicked"));
        spare.extend(returned.try_iter());
        result?;
        synced?;
        digest
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    /// One upload through `--sha256-thread`'s file sink over a Unix socket pair: returns the
    /// digest and the file's bytes.
    fn upload(body: &[u8], early: usize, spare: &mut Vec<Vec<u8>>) -> ([u8; 32], Vec<u8>) {
        let (mut ours, mut theirs) = UnixStream::pair().unwrap();
        let rest = body[early..].to_vec();
        let sender = std::thread::spawn(move || theirs.write_all(&rest).unwrap());
        let mut file = tempfile::tempfile().unwrap();
        let mut trace = UploadTrace::start();
        let digest = to_file_hashing_beside(
            &mut ours,
            (body.len() - early) as u64,
            &body[..early],
            spare,
            &mut file,
            true,
            &mut trace,
        )
        .unwrap();
        sender.join().unwrap();
        let mut stored = Vec::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut stored).unwrap();
        (digest, stored)
    }

    #[test]
    fn the_second_thread_baseline_stores_and_hashes_every_byte_with_three_buffers() {
        // Not a multiple of the buffer: the last one is partly filled.
        let body: Vec<u8> = (0..5 * FILE_WRITE + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut spare = Vec::new();
        let (digest, stored) = upload(&body, 1000, &mut spare);
        assert_eq!(digest, <[u8; 32]>::from(Sha256::digest(&body)));
        assert!(stored == body, "the file differs from the body");
        // Every buffer came back from the hashing thread, and no more were made.
        assert_eq!(spare.len(), HASH_BUFFERS);
        // The next upload on the connection allocates none: the same three buffers.
        let before: Vec<*const u8> = spare.iter().map(|b| b.as_ptr()).collect();
        let (digest, stored) = upload(&body[..FILE_WRITE * 2], 0, &mut spare);
        assert_eq!(
            digest,
            <[u8; 32]>::from(Sha256::digest(&body[..FILE_WRITE * 2]))
        );
        assert_eq!(stored.len(), FILE_WRITE * 2);
        let mut after: Vec<*const u8> = spare.iter().map(|b| b.as_ptr()).collect();
        let mut before = before;
        before.sort_unstable();
        after.sort_unstable();
        assert_eq!(before, after);
        // A body that all came with the head.
        let (digest, stored) = upload(&body[..100], 100, &mut spare);
        assert_eq!(digest, <[u8; 32]>::from(Sha256::digest(&body[..100])));
        assert_eq!(stored, &body[..100]);
    }
}
