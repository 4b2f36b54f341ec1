//! The upload client: one connection, one request, the body written from memory in large writes.
//!
//! curl tops out near 1 GB/s on loopback, a quarter of what the socket can do, so throughput is
//! measured with this instead: the body is a [`CHUNK`]-sized buffer (filled with a non-constant
//! pattern and touched up front) written again and again with blocking `write`s of the whole
//! buffer, so the client spends its time in the kernel copying, like the raw baseline's peer.

use super::response;
use super::stream::Stream;
use crate::clock;
use crate::server::Endpoint;
use crate::server::trace::UploadTrace;
use std::io::{self, Read, Write};

/// Longest a single read or write of the upload may block.
const STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Size of each body write.
pub const CHUNK: usize = 8 << 20;

/// One finished upload.
#[derive(Clone, Copy, Debug)]
pub struct Upload {
    /// `CLOCK_MONOTONIC` ns before connecting.
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC` ns after the whole response was read.
    pub end_ns: u64,
    /// What the server reported.
    pub trace: UploadTrace,
}

impl Upload {
    /// Wall time of the upload in seconds.
    pub fn seconds(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / 1e9
    }
}

/// Holds the body buffer across uploads.
pub struct Uploader {
    chunk: Vec<u8>,
}

impl Default for Uploader {
    fn default() -> Self {
        Self::new()
    }
}

impl Uploader {
    /// Allocates and fills the body buffer.
    pub fn new() -> Self {
        let chunk = (0..CHUNK).map(|i| (i * 31 + i / 4096) as u8).collect();
        Self { chunk }
    }

    /// POSTs `size` bytes to `/upload` on `endpoint` and checks the server got all of them.
    pub fn upload(&self, endpoint: &Endpoint, size: u64) -> io::Result<Upload> {
        let start_ns = clock::monotonic_ns();
        let mut s = Stream::connect(endpoint)?;
        // A server that stops reading or never answers fails the run instead of hanging it.
        s.set_timeouts(Some(STALL_TIMEOUT))?;
        let head =
            format!("POST /upload HTTP/1.1\r\nHost: bench\r\nContent-Length: {size}\r\n\r\n");
        s.write_all(head.as_bytes())?;
        let mut left = size;
        while left > 0 {
            let n = (self.chunk.len() as u64).min(left) as usize;
            s.write_all(&self.chunk[..n])?;
            left -= n as u64;
        }
        let mut buf = vec![0u8; 4096];
        let mut filled = 0;
        let parsed = loop {
            if let Some(p) = response::parse(&buf[..filled])
                .map_err(|_| io::Error::other("malformed response"))?
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
        let end_ns = clock::monotonic_ns();
        let body = &buf[parsed.head_len..parsed.len];
        if parsed.status != 200 {
            return Err(io::Error::other(format!(
                "status {}: {}",
                parsed.status,
                String::from_utf8_lossy(body)
            )));
        }
        let trace = UploadTrace::parse(body).ok_or_else(|| io::Error::other("bad trace"))?;
        if trace.bytes != size {
            return Err(io::Error::other(format!(
                "server received {} of {size} bytes",
                trace.bytes
            )));
        }
        Ok(Upload {
            start_ns,
            end_ns,
            trace,
        })
    }
}
