//! One file up or down over one new HTTP/1.1 connection, checked: a `PUT` whose answer must be
//! a success, a `GET` whose every byte is compared with the body sent. Shared by the scenarios
//! that drive outside servers (`webdav`, `services`), which time these from connect to the
//! last byte.
//!
//! The body is [`Pattern`]'s: sent from one buffer and compared in place, so neither direction
//! copies or allocates per byte (only the `GET`'s read buffer, once per request).

use super::s3::{PERIOD, Pattern, read_response};
use crate::clock;
use crate::wire;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read or write may wait: a server that stops answering fails the run instead of
/// hanging it.
pub(in crate::scenario) const STALL: Duration = Duration::from_secs(120);

/// A new connection to `addr`, with [`STALL`] as its timeouts.
pub(in crate::scenario) fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(STALL))?;
    s.set_write_timeout(Some(STALL))?;
    Ok(s)
}

/// One request on a new connection whose answer is small: its status.
pub(in crate::scenario) fn small(addr: SocketAddr, head: &str, body: &[u8]) -> io::Result<u16> {
    let mut s = connect(addr)?;
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    Ok(read_response(&mut s)?.0)
}

/// Sends `PUT {path}` of `size` body bytes on `s` (`extra`: more header lines, each ending in
/// CRLF) and reads the answer: its status and body.
pub(in crate::scenario) fn put_on(
    s: &mut TcpStream,
    path: &str,
    p: &Pattern,
    size: u64,
    extra: &str,
) -> io::Result<(u16, Vec<u8>)> {
    let head =
        format!("PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n{extra}\r\n");
    s.write_all(head.as_bytes())?;
    let mut at = 0;
    while at < size {
        let n = (size - at).min(PERIOD as u64) as usize;
        s.write_all(p.at(at, n))?;
        at += n as u64;
    }
    read_response(s)
}

/// `PUT` of `size` body bytes at `path`, timed from connect to the answer; an answer other than
/// 200, 201 or 204 is an error.
pub(in crate::scenario) fn put(
    addr: SocketAddr,
    path: &str,
    p: &Pattern,
    size: u64,
) -> io::Result<f64> {
    let start = clock::monotonic_ns();
    let mut s = connect(addr)?;
    let (status, body) = put_on(&mut s, path, p, size, "Connection: close\r\n")?;
    if !matches!(status, 200 | 201 | 204) {
        return Err(io::Error::other(format!(
            "PUT {path}: {status} {}",
            String::from_utf8_lossy(&body).trim()
        )));
    }
    Ok((clock::monotonic_ns() - start) as f64 / 1e9)
}

/// `GET` of `path` whole (`200`, `Content-Length: size`), every byte compared with the body,
/// read `buf_len` bytes at a time; timed from connect to the last byte.
pub(in crate::scenario) fn get(
    addr: SocketAddr,
    path: &str,
    p: &Pattern,
    size: u64,
    buf_len: usize,
) -> io::Result<f64> {
    let start = clock::monotonic_ns();
    let mut s = connect(addr)?;
    let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(head.as_bytes())?;
    // One buffer the head is found in, then the body compared in place: no copy of the body.
    let mut buf = vec![0u8; buf_len.max(16 << 10)];
    let mut filled = 0;
    let head_len = loop {
        if filled == buf.len() {
            return Err(io::Error::other(format!("GET {path}: head too long")));
        }
        let n = s.read(&mut buf[filled..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
        if let Some(h) = wire::head_len(&buf[..filled]) {
            break h;
        }
    };
    let head = &buf[..head_len];
    if !head.starts_with(b"HTTP/1.1 200") || wire::content_length(head) != Some(size) {
        return Err(io::Error::other(format!(
            "GET {path}: {:?}",
            String::from_utf8_lossy(head)
        )));
    }
    let mut at = 0u64;
    let mut from = head_len;
    while at < size {
        let bytes = &buf[from..filled];
        if !p.matches(at, bytes) {
            return Err(io::Error::other(format!(
                "GET {path}: bytes differ near {at}"
            )));
        }
        at += bytes.len() as u64;
        if at >= size {
            break;
        }
        from = 0;
        filled = s.read(&mut buf)?;
        if filled == 0 {
            return Err(io::Error::other(format!(
                "GET {path}: EOF at {at} of {size}"
            )));
        }
    }
    if at != size {
        return Err(io::Error::other(format!(
            "GET {path}: {at} bytes for a length of {size}"
        )));
    }
    Ok((clock::monotonic_ns() - start) as f64 / 1e9)
}

/// Sends `request` (a whole request, `Connection: close`) on a new connection and reads the
/// answer to its end: its head and its body, dechunked when chunked. For answers of a few MiB
/// at most (listings): the whole answer is kept, since counting its entries needs it.
pub(in crate::scenario) fn fetch(
    addr: SocketAddr,
    request: &str,
) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut s = connect(addr)?;
    s.write_all(request.as_bytes())?;
    let mut all = Vec::new();
    s.read_to_end(&mut all)?;
    let head_len = wire::head_len(&all).ok_or_else(|| io::Error::other("no head"))?;
    let body = if wire::is_chunked(&all[..head_len]) {
        dechunk(&all[head_len..])?
    } else {
        all[head_len..].to_vec()
    };
    all.truncate(head_len);
    Ok((all, body))
}

/// The data of a chunked body.
pub(in crate::scenario) fn dechunk(mut b: &[u8]) -> io::Result<Vec<u8>> {
    let bad = || io::Error::other("bad chunked framing");
    let mut out = Vec::with_capacity(b.len());
    loop {
        let nl = memchr::memchr(b'\n', b).ok_or_else(bad)?;
        let line = std::str::from_utf8(&b[..nl]).map_err(|_| bad())?;
        let hex = line.split(';').next().unwrap_or("").trim();
        let n = usize::from_str_radix(hex, 16).map_err(|_| bad())?;
        if n == 0 {
            return Ok(out);
        }
        let data = b.get(nl + 1..nl + 1 + n).ok_or_else(bad)?;
        out.extend_from_slice(data);
        b = b.get(nl + 1 + n + 2..).ok_or_else(bad)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_err());
    }
}
