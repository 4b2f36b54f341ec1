//! The `s3api` scenario's client, the same for every server: blocking HTTP/1.1 over loopback,
//! one thread per connection, bodies written from the scenario's 2 MiB pattern buffer (no
//! per-request body allocation: every write is a slice of it) and downloads compared in place
//! with it, 1 MiB reads into one buffer per request.
//!
//! S3 requests are signed with Signature V4 and `UNSIGNED-PAYLOAD` ([`super::sigv4`]), so the
//! client hashes nothing per byte; weir's `/files/` requests carry the same credential as a
//! bearer token. A multipart upload sends its parts on `parallel` connections at once, each
//! connection kept alive across the parts it takes (parts are handed out in order from a shared
//! counter), then completes with every part's ETag.

use super::sigv4::{self, Credentials, UNSIGNED};
use crate::client::response;
use crate::scenario::s3::Pattern;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The pattern's period: any slice of up to this many bytes is contiguous in it.
const PIECE: u64 = 1 << 20;

/// A small answer: status, head and body.
pub struct Reply {
    pub status: u16,
    pub head: Vec<u8>,
    pub body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &[u8]) -> Option<String> {
        crate::wire::header(&self.head, name).map(|v| String::from_utf8_lossy(v).into_owned())
    }

    fn check(self, what: &str, ok: &[u16]) -> io::Result<Reply> {
        if ok.contains(&self.status) {
            Ok(self)
        } else {
            Err(io::Error::other(format!(
                "{what}: {} {}",
                self.status,
                String::from_utf8_lossy(&self.body).trim()
            )))
        }
    }
}

/// One keep-alive connection.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn connect(addr: SocketAddr) -> io::Result<Self> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(Self {
            s,
            buf: Vec::with_capacity(4096),
        })
    }

    /// Sends `head`, then the pattern's bytes `[at, at + len)` of `body`, then `extra`; reads
    /// the answer.
    fn send(
        &mut self,
        head: &str,
        body: Option<(&Pattern, u64, u64)>,
        extra: &[u8],
    ) -> io::Result<Reply> {
        self.s.write_all(head.as_bytes())?;
        if let Some((p, at, len)) = body {
            let mut off = 0;
            while off < len {
                let n = (len - off).min(PIECE) as usize;
                self.s.write_all(p.at(at + off, n))?;
                off += n as u64;
            }
        }
        self.s.write_all(extra)?;
        self.read_reply()
    }

    /// Reads one answer (its body buffered: the answers to uploads are small).
    fn read_reply(&mut self) -> io::Result<Reply> {
        let mut filled = self.buf.len();
        let parsed = loop {
            if let Some(p) = response::parse(&self.buf[..filled])
                .map_err(|_| io::Error::other("malformed response"))?
            {
                break p;
            }
            self.buf.resize(filled.max(2048) * 2, 0);
            let n = self.s.read(&mut self.buf[filled..])?;
            self.buf.truncate(filled + n);
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            filled += n;
        };
        let head = self.buf[..parsed.head_len].to_vec();
        let body = self.buf[parsed.head_len..parsed.len].to_vec();
        self.buf.drain(..parsed.len);
        Ok(Reply {
            status: parsed.status,
            head,
            body,
        })
    }

    /// Sends `head` (a `GET`), expects `200` with `size` body bytes, and compares every byte
    /// with the pattern, in place in one 1 MiB buffer.
    fn get_compare(&mut self, head: &str, p: &Pattern, size: u64) -> io::Result<()> {
        self.s.write_all(head.as_bytes())?;
        let mut buf = vec![0u8; PIECE as usize];
        let mut filled = 0;
        let head_len = loop {
            let n = self.s.read(&mut buf[filled..])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            filled += n;
            if let Some(h) = crate::wire::head_len(&buf[..filled]) {
                break h;
            }
        };
        let status_ok = buf.starts_with(b"HTTP/1.1 200");
        if !status_ok || crate::wire::content_length(&buf[..head_len]) != Some(size) {
            return Err(io::Error::other(format!(
                "GET answered {:?}",
                String::from_utf8_lossy(&buf[..filled.min(2048)])
            )));
        }
        let mut at = 0u64;
        let mut from = head_len;
        loop {
            if !p.matches(at, &buf[from..filled]) {
                return Err(io::Error::other(format!("GET: bytes differ near {at}")));
            }
            at += (filled - from) as u64;
            if at >= size {
                break;
            }
            from = 0;
            let want = ((size - at).min(PIECE)) as usize;
            filled = self.s.read(&mut buf[..want])?;
            if filled == 0 {
                return Err(io::Error::other(format!(
                    "GET: {at} of {size} bytes, then EOF"
                )));
            }
        }
        Ok(())
    }
}

/// An S3 endpoint: the address, the credential, the bucket.
pub struct S3Target {
    pub addr: SocketAddr,
    pub access_key: String,
    pub secret: String,
    pub bucket: String,
}

impl S3Target {
    /// A signed request head for `method /bucket/key?query`.
    fn head(&self, method: &str, key: &str, query: &[(&str, &str)], length: Option<u64>) -> String {
        let host = self.addr.to_string();
        let path = format!("/{}/{key}", self.bucket);
        let date = sigv4::amz_date(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        let c = Credentials {
            access_key: &self.access_key,
            secret: &self.secret,
            region: "us-east-1",
        };
        let auth = sigv4::sign(
            &c,
            method,
            &path,
            query,
            &[
                ("host", &host),
                ("x-amz-content-sha256", UNSIGNED),
                ("x-amz-date", &date),
            ],
            &date,
            UNSIGNED,
        );
        let q = sigv4::query_string(query);
        let sep = if q.is_empty() { "" } else { "?" };
        let length = length.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
        format!(
            "{method} {path}{sep}{q} HTTP/1.1\r\nHost: {host}\r\nx-amz-content-sha256: {UNSIGNED}\r\n\
             x-amz-date: {date}\r\nAuthorization: {auth}\r\n{length}\r\n"
        )
    }

    /// PutObject of the pattern's first `size` bytes on a fresh connection; the ETag answered.
    pub fn put_object(&self, key: &str, p: &Pattern, size: u64) -> io::Result<String> {
        let mut c = Conn::connect(self.addr)?;
        let head = self.head("PUT", key, &[], Some(size));
        let r = c
            .send(&head, Some((p, 0, size)), &[])?
            .check("PutObject", &[200])?;
        r.header(b"etag")
            .ok_or_else(|| io::Error::other("PutObject: no ETag"))
    }

    /// A multipart upload of the pattern's first `size` bytes in parts of `part_size`, sent on
    /// `parallel` connections at once, from CreateMultipartUpload to CompleteMultipartUpload's
    /// answer; returns the seconds the completion took (from its request to its answer).
    pub fn multipart(
        &self,
        key: &str,
        p: &Pattern,
        size: u64,
        part_size: u64,
        parallel: usize,
    ) -> io::Result<f64> {
        let mut c = Conn::connect(self.addr)?;
        let head = self.head("POST", key, &[("uploads", "")], Some(0));
        let r = c
            .send(&head, None, &[])?
            .check("CreateMultipartUpload", &[200])?;
        let upload_id = xml_text(&r.body, "UploadId")
            .ok_or_else(|| io::Error::other("CreateMultipartUpload: no UploadId"))?;
        let parts = size.div_ceil(part_size) as usize;
        let next = AtomicUsize::new(0);
        let etags = Mutex::new(vec![String::new(); parts]);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..parallel.min(parts))
                .map(|_| {
                    s.spawn(|| -> io::Result<()> {
                        let mut c = Conn::connect(self.addr)?;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= parts {
                                return Ok(());
                            }
                            let at = i as u64 * part_size;
                            let len = part_size.min(size - at);
                            let number = (i + 1).to_string();
                            let q = [("partNumber", number.as_str()), ("uploadId", &upload_id)];
                            let head = self.head("PUT", key, &q, Some(len));
                            let r = c
                                .send(&head, Some((p, at, len)), &[])?
                                .check("UploadPart", &[200])?;
                            let etag = r
                                .header(b"etag")
                                .ok_or_else(|| io::Error::other("UploadPart: no ETag"))?;
                            etags.lock().expect("no worker panics holding it")[i] = etag;
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("part worker panicked"))
        })?;
        let etags = etags.into_inner().expect("workers done");
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            xml.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{etag}</ETag></Part>",
                i + 1
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let q = [("uploadId", upload_id.as_str())];
        let head = self.head("POST", key, &q, Some(xml.len() as u64));
        let t0 = crate::clock::monotonic_ns();
        let r = c
            .send(&head, None, xml.as_bytes())?
            .check("CompleteMultipartUpload", &[200])?;
        let complete_s = (crate::clock::monotonic_ns() - t0) as f64 / 1e9;
        // S3 may answer 200 and put an error in the body.
        if xml_text(&r.body, "ETag").is_none() {
            return Err(io::Error::other(format!(
                "CompleteMultipartUpload: {}",
                String::from_utf8_lossy(&r.body)
            )));
        }
        Ok(complete_s)
    }

    /// HeadObject's `Content-Length`.
    pub fn length(&self, key: &str) -> io::Result<Option<u64>> {
        let mut c = Conn::connect(self.addr)?;
        let head = self.head("HEAD", key, &[], None);
        c.s.write_all(head.as_bytes())?;
        // A HEAD answer has no body whatever its Content-Length: read the head alone.
        let mut buf = vec![0u8; 8192];
        let mut filled = 0;
        loop {
            let n = c.s.read(&mut buf[filled..])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            filled += n;
            if let Some(h) = crate::wire::head_len(&buf[..filled]) {
                return Ok(crate::wire::content_length(&buf[..h]));
            }
        }
    }

    /// GetObject of the whole object, every byte compared with the pattern.
    pub fn get_object(&self, key: &str, p: &Pattern, size: u64) -> io::Result<()> {
        let mut c = Conn::connect(self.addr)?;
        c.get_compare(&self.head("GET", key, &[], None), p, size)
    }

    /// DeleteObject.
    pub fn delete(&self, key: &str) -> io::Result<()> {
        let mut c = Conn::connect(self.addr)?;
        let head = self.head("DELETE", key, &[], None);
        c.send(&head, None, &[])?
            .check("DeleteObject", &[200, 204])
            .map(drop)
    }
}

/// weir's own API: `/files/BUCKET/KEY` with the credential as a bearer token.
pub struct FilesTarget {
    pub addr: SocketAddr,
    pub token: String,
    pub bucket: String,
}

impl FilesTarget {
    fn head(&self, method: &str, key: &str, length: Option<u64>) -> String {
        let length = length.map_or(String::new(), |n| format!("Content-Length: {n}\r\n"));
        format!(
            "{method} /files/{}/{key} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n{length}\r\n",
            self.bucket, self.addr, self.token
        )
    }

    /// `PUT /files/…` of the pattern's first `size` bytes; the SHA-256 weir answered.
    pub fn put(&self, key: &str, p: &Pattern, size: u64) -> io::Result<String> {
        let mut c = Conn::connect(self.addr)?;
        let r = c
            .send(&self.head("PUT", key, Some(size)), Some((p, 0, size)), &[])?
            .check("PUT /files/", &[200, 201])?;
        let j: serde_json::Value = serde_json::from_slice(&r.body).map_err(io::Error::other)?;
        j["sha256"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| io::Error::other("PUT /files/: no sha256"))
    }

    /// `GET /files/…`, every byte compared with the pattern.
    pub fn get(&self, key: &str, p: &Pattern, size: u64) -> io::Result<()> {
        let mut c = Conn::connect(self.addr)?;
        c.get_compare(&self.head("GET", key, None), p, size)
    }
}

/// The text of the first `<tag>…</tag>` in an XML body (no entities in what the bench reads:
/// upload ids and ETags).
fn xml_text(body: &[u8], tag: &str) -> Option<String> {
    let s = std::str::from_utf8(body).ok()?;
    let open = format!("<{tag}>");
    let start = s.find(&open)? + open.len();
    let end = start + s[start..].find(&format!("</{tag}>"))?;
    Some(s[start..end].replace("&quot;", "\"").replace("&#34;", "\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_xml_text() {
        let b = b"<R><Bucket>b</Bucket><UploadId>abc/1</UploadId><ETag>&quot;x&quot;</ETag></R>";
        assert_eq!(xml_text(b, "UploadId").as_deref(), Some("abc/1"));
        assert_eq!(xml_text(b, "ETag").as_deref(), Some("\"x\""));
        assert_eq!(xml_text(b, "Key"), None);
    }
}
