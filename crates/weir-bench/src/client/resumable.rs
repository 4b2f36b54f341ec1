//! The resumable-upload client of the `resume` scenario: `PUT` uploads to `weir serve`, plain
//! or with the fields of draft-ietf-httpbis-resumable-upload-12 (interop version 8), and the
//! same upload cut by the client at chosen offsets and resumed the way the draft says: `HEAD`
//! the upload resource for its `Upload-Offset`, then `PATCH` the rest from there.
//!
//! A cut is an abortive close (`SO_LINGER` 0: the kernel sends RST and drops what the client's
//! socket still holds), which is what a broken path does to the bytes in flight: whatever the
//! server had not received when the connection went is lost, and the client sends it again.
//! Every count here is measured, not assumed: body bytes are counted as `write(2)` accepts them,
//! offsets are the server's answers.
//!
//! Every request with a body sends `Expect: 100-continue` and waits for the go-ahead, so a
//! refused append (`409` while the server still finishes the cut request) costs no body bytes,
//! and the `104` announcing the upload resource is read before the body, as a client that
//! wants to resume must. The body is a [`CHUNK`]-sized pattern repeated (the upload client's):
//! byte `p` of the upload is `chunk[p % CHUNK]`, whichever request carries it.

use super::response;
use super::upload::CHUNK;
use crate::clock;
use crate::server::Endpoint;
use crate::wire;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The interop version of the draft revision `weir serve` implements.
pub const INTEROP_VERSION: &str = "8";

/// Longest a single read or write may block: a stuck server fails the run.
const STALL: Duration = Duration::from_secs(60);

/// Wait before asking again after an append was refused with `409` (the server was still
/// recording the cut request).
const CONFLICT_WAIT: Duration = Duration::from_millis(2);

/// Appends refused with `409` in a row before the run fails.
const MAX_CONFLICTS: u32 = 5000;

/// The upload's bytes: `size` bytes of `chunk` repeated.
#[derive(Clone, Copy)]
pub struct Body<'a> {
    /// [`CHUNK`] bytes of the pattern.
    pub chunk: &'a [u8],
    /// The upload's length.
    pub size: u64,
}

/// One cut and what followed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Body bytes the client had written (accepted by the kernel) when it cut.
    pub at: u64,
    /// The offset the server reported afterwards, where the next append began.
    pub resumed_from: u64,
}

impl Cut {
    /// Bytes the client sent that the server did not keep: sent again by the next append.
    pub fn sent_twice(&self) -> u64 {
        self.at - self.resumed_from
    }
}

/// One finished upload.
#[derive(Debug)]
pub struct Outcome {
    /// From the first connect to the end of the final answer.
    pub seconds: f64,
    /// Time from each cut to the next append's `100 Continue` (connect, `HEAD`, refused
    /// appends), summed.
    pub reconnect_seconds: f64,
    /// From the last body byte written to the end of the final answer: what the server does
    /// after receiving (hashing what it did not hash while receiving, syncing, renaming).
    pub after_last_byte_seconds: f64,
    /// Body bytes `write(2)` accepted over every request.
    pub body_bytes_sent: u64,
    /// The cuts, in order.
    pub cuts: Vec<Cut>,
    /// Appends answered `409` (the server still finishing the request that was cut).
    pub conflicts: u32,
    /// The service's JSON answer to the request that completed the upload.
    pub answer: serde_json::Value,
}

/// How an upload is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `PUT` with `Content-Length` only: weir's ordinary upload.
    Plain,
    /// `PUT` with `Upload-Complete: ?1`: the draft's creation, sent whole.
    Resumable,
}

/// An HTTP/1.1 connection with its read buffer.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    filled: usize,
}

/// One response: status, head text, body.
struct Response {
    status: u16,
    head: Vec<u8>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        wire::header(&self.head, name.as_bytes()).and_then(|v| std::str::from_utf8(v).ok())
    }

    fn error(&self, what: &str) -> io::Error {
        io::Error::other(format!(
            "{what}: status {}: {}",
            self.status,
            String::from_utf8_lossy(&self.body).trim()
        ))
    }
}

impl Conn {
    fn connect(endpoint: &Endpoint) -> io::Result<Conn> {
        let Endpoint::Tcp(addr) = endpoint else {
            return Err(io::Error::other("the resume scenario runs over TCP"));
        };
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(STALL))?;
        stream.set_write_timeout(Some(STALL))?;
        Ok(Conn {
            stream,
            buf: vec![0; 16 << 10],
            filled: 0,
        })
    }

    /// Reads the next response (interim ones included).
    fn response(&mut self) -> io::Result<Response> {
        loop {
            let parsed = response::parse(&self.buf[..self.filled])
                .map_err(|_| io::Error::other("malformed response"))?;
            if let Some(p) = parsed {
                let r = Response {
                    status: p.status,
                    head: self.buf[..p.head_len].to_vec(),
                    body: self.buf[p.head_len..p.len].to_vec(),
                };
                self.buf.copy_within(p.len..self.filled, 0);
                self.filled -= p.len;
                return Ok(r);
            }
            if self.filled == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self.stream.read(&mut self.buf[self.filled..])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.filled += n;
        }
    }

    /// The next final response, passing `104`s to `announced`.
    fn final_response(&mut self, announced: &mut Option<String>) -> io::Result<Response> {
        loop {
            let r = self.response()?;
            // A `104` names the resource, or (without `Location`) reports progress.
            if let Some(location) = r.header("location").filter(|_| r.status == 104) {
                *announced = Some(location.to_owned());
            }
            if !(100..200).contains(&r.status) {
                return Ok(r);
            }
        }
    }

    /// Writes the body from `from` to `to`, counting into `sent` what `write(2)` accepted.
    fn send_body(&mut self, body: Body<'_>, from: u64, to: u64, sent: &mut u64) -> io::Result<()> {
        let mut pos = from;
        while pos < to {
            let at = (pos % CHUNK as u64) as usize;
            let n = ((CHUNK - at) as u64).min(to - pos) as usize;
            let piece = &body.chunk[at..at + n];
            let mut done = 0;
            while done < n {
                match self.stream.write(&piece[done..]) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(k) => {
                        done += k;
                        *sent += k as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            pos += n as u64;
        }
        Ok(())
    }

    /// The cut: RST instead of FIN, dropping whatever the socket still holds.
    fn abort(self) -> io::Result<()> {
        rustix::net::sockopt::set_socket_linger(&self.stream, Some(Duration::ZERO))?;
        drop(self.stream);
        Ok(())
    }
}

/// The go-ahead of a request sent with `Expect: 100-continue`: `Ok(None)` on `100 Continue`
/// (a `104` before it names the upload resource, into `announced`), `Ok(Some(final))` when the
/// server answered without reading the body.
fn go_ahead(conn: &mut Conn, announced: &mut Option<String>) -> io::Result<Option<Response>> {
    loop {
        let r = conn.response()?;
        match r.status {
            100 => return Ok(None),
            104 => {
                if let Some(location) = r.header("location") {
                    *announced = Some(location.to_owned());
                }
            }
            101..=199 => {}
            _ => return Ok(Some(r)),
        }
    }
}

/// The final answer of a completed upload, as JSON; an error for anything but 200/201.
fn completed(r: &Response) -> io::Result<serde_json::Value> {
    if r.status != 200 && r.status != 201 {
        return Err(r.error("upload not completed"));
    }
    serde_json::from_slice(&r.body).map_err(|_| r.error("answer is not JSON"))
}

/// One uninterrupted `PUT` of `body` to `target` (e.g. `/files/resume.bin`).
pub fn put(endpoint: &Endpoint, target: &str, body: Body<'_>, mode: Mode) -> io::Result<Outcome> {
    put_cut(endpoint, target, body, mode, &[])
}

/// A `PUT` of `body` to `target`, cut at each offset of `cuts` (increasing, each below the
/// body's size) and resumed after each: `HEAD` for the offset, then `PATCH` from it. With no
/// cuts this is one uninterrupted `PUT`; with cuts, `mode` must be [`Mode::Resumable`].
pub fn put_cut(
    endpoint: &Endpoint,
    target: &str,
    body: Body<'_>,
    mode: Mode,
    cuts: &[u64],
) -> io::Result<Outcome> {
    if !cuts.is_empty() && mode != Mode::Resumable {
        return Err(io::Error::other("a plain PUT cannot be resumed"));
    }
    if cuts.windows(2).any(|w| w[0] >= w[1]) || cuts.iter().any(|&c| c == 0 || c >= body.size) {
        return Err(io::Error::other(format!(
            "cut offsets {cuts:?} must increase within 1..{}",
            body.size
        )));
    }
    let start_ns = clock::monotonic_ns();
    let mut out = Outcome {
        seconds: 0.0,
        reconnect_seconds: 0.0,
        after_last_byte_seconds: 0.0,
        body_bytes_sent: 0,
        cuts: Vec::new(),
        conflicts: 0,
        answer: serde_json::Value::Null,
    };
    let mut conn = Conn::connect(endpoint)?;
    let resumable = match mode {
        Mode::Plain => String::new(),
        Mode::Resumable => {
            format!("Upload-Complete: ?1\r\nUpload-Draft-Interop-Version: {INTEROP_VERSION}\r\n")
        }
    };
    let head = format!(
        "PUT {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\
         Content-Type: application/octet-stream\r\n{resumable}Expect: 100-continue\r\n\r\n",
        body.size
    );
    conn.stream.write_all(head.as_bytes())?;
    let mut location = None;
    if let Some(early) = go_ahead(&mut conn, &mut location)? {
        return Err(early.error("PUT refused"));
    }
    if mode == Mode::Resumable && location.is_none() {
        return Err(io::Error::other(
            "no 104 with the upload resource's Location",
        ));
    }
    let mut from = 0;
    for &at in cuts {
        conn.send_body(body, from, at, &mut out.body_bytes_sent)?;
        conn.abort()?;
        let cut_ns = clock::monotonic_ns();
        let upload = location.as_deref().unwrap_or_default();
        let (next, offset) = resume(endpoint, upload, body.size, &mut out.conflicts)?;
        out.reconnect_seconds += (clock::monotonic_ns() - cut_ns) as f64 / 1e9;
        out.cuts.push(Cut {
            at,
            resumed_from: offset,
        });
        conn = next;
        from = offset;
    }
    conn.send_body(body, from, body.size, &mut out.body_bytes_sent)?;
    let last_byte_ns = clock::monotonic_ns();
    let answer = conn.final_response(&mut location)?;
    let end_ns = clock::monotonic_ns();
    out.seconds = (end_ns - start_ns) as f64 / 1e9;
    out.after_last_byte_seconds = (end_ns - last_byte_ns) as f64 / 1e9;
    out.answer = completed(&answer)?;
    Ok(out)
}

/// After a cut: the upload's offset (`HEAD`), then a `PATCH` from it that completes the upload,
/// up to its `100 Continue`. A `409` means the server has not finished with the cut request
/// (its lock is held, or it recorded a later offset than the `HEAD` saw): ask again.
fn resume(
    endpoint: &Endpoint,
    upload: &str,
    size: u64,
    conflicts: &mut u32,
) -> io::Result<(Conn, u64)> {
    loop {
        let mut conn = Conn::connect(endpoint)?;
        let head = format!(
            "HEAD {upload} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Upload-Draft-Interop-Version: {INTEROP_VERSION}\r\n\r\n"
        );
        conn.stream.write_all(head.as_bytes())?;
        let r = conn.final_response(&mut None)?;
        let offset = match (r.status, r.header("upload-offset")) {
            (204, Some(o)) => o.parse::<u64>().ok(),
            _ => None,
        }
        .filter(|&o| o <= size)
        .ok_or_else(|| r.error("HEAD of the upload resource"))?;
        if r.header("upload-complete") != Some("?0") {
            return Err(r.error("the upload is complete before its last byte was sent"));
        }
        let patch = format!(
            "PATCH {upload} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\
             Content-Type: application/partial-upload\r\nUpload-Offset: {offset}\r\n\
             Upload-Complete: ?1\r\nUpload-Draft-Interop-Version: {INTEROP_VERSION}\r\n\
             Expect: 100-continue\r\n\r\n",
            size - offset
        );
        conn.stream.write_all(patch.as_bytes())?;
        match go_ahead(&mut conn, &mut None)? {
            None => return Ok((conn, offset)),
            Some(r) if r.status == 409 && *conflicts < MAX_CONFLICTS => {
                *conflicts += 1;
                std::thread::sleep(CONFLICT_WAIT);
            }
            Some(r) => return Err(r.error("PATCH refused")),
        }
    }
}
