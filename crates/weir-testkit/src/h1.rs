//! A raw HTTP/1.1 client for tests: exact bytes out, responses parsed back without a library that
//! would hide what the server sent (framing, header order, bytes after a close).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Sends `head` (request line and headers, without the final CRLF; `Connection: close`, and
/// `Content-Length` unless `head` has one, are added) and `body` on a new connection to `addr`,
/// and reads the response. The read timeout is 60 s: large uploads are answered after their
/// commit's fsyncs. A server that answers early (413, 507) and stops reading still has its
/// answer read.
pub fn request(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> Resp {
    let mut client = Client::new(TcpStream::connect(addr).unwrap());
    client
        .stream()
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut req = format!("{head}\r\nhost: test\r\nconnection: close\r\n");
    if !head.to_ascii_lowercase().contains("content-length") && !body.is_empty() {
        req.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    client.send(req.as_bytes());
    let _ = client.try_send(body);
    client.read_response_for(head.starts_with("HEAD "))
}

/// A `multipart/form-data` body with boundary `XX` and one file part (field `f`) per
/// `(filename, content)`.
pub fn form_body<N: AsRef<str>, C: AsRef<[u8]>>(parts: &[(N, C)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, content) in parts {
        let name = name.as_ref();
        body.extend_from_slice(
            format!(
                "--XX\r\ncontent-disposition: form-data; name=\"f\"; filename=\"{name}\"\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(content.as_ref());
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--XX--\r\n");
    body
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Resp {
    /// The status code.
    pub status: u16,
    /// The header fields in wire order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, framing removed.
    pub body: Vec<u8>,
}

impl Resp {
    /// The first field named `name` (case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A raw HTTP/1.1 client over a blocking socket (10 s read timeout, so a bug fails the test
/// instead of hanging it).
pub struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    /// Wraps a connected stream.
    pub fn new(stream: TcpStream) -> Self {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            reader: BufReader::new(stream),
        }
    }

    /// Sends `bytes`; panics if the write fails.
    pub fn send(&mut self, bytes: &[u8]) -> &mut Self {
        self.reader.get_mut().write_all(bytes).unwrap();
        self
    }

    /// Sends, ignoring errors (the server may have closed).
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.reader.get_mut().write_all(bytes)
    }

    /// The socket, for shutdowns and timeouts.
    pub fn stream(&mut self) -> &mut TcpStream {
        self.reader.get_mut()
    }

    /// Reads one response; `head_only` for responses to HEAD.
    pub fn read_response_for(&mut self, head_only: bool) -> Resp {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 "), "bad status line {line:?}");
        let status: u16 = line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).unwrap();
            assert!(h.ends_with("\r\n"), "bad header line {h:?}");
            if h == "\r\n" {
                break;
            }
            let (n, v) = h.trim_end().split_once(':').unwrap();
            headers.push((n.to_string(), v.trim().to_string()));
        }
        let mut resp = Resp {
            status,
            headers,
            body: Vec::new(),
        };
        if head_only || status / 100 == 1 || status == 204 || status == 304 {
            return resp;
        }
        if let Some(len) = resp.header("content-length") {
            let mut body = vec![0; len.parse().unwrap()];
            self.reader.read_exact(&mut body).unwrap();
            resp.body = body;
        } else if resp.header("transfer-encoding") == Some("chunked") {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim_end(), 16).unwrap();
                let mut data = vec![0; size + 2];
                self.reader.read_exact(&mut data).unwrap();
                assert_eq!(&data[size..], b"\r\n");
                if size == 0 {
                    break;
                }
                resp.body.extend_from_slice(&data[..size]);
            }
        } else {
            self.reader.read_to_end(&mut resp.body).unwrap();
        }
        resp
    }

    /// Reads one response to a request other than HEAD.
    pub fn read_response(&mut self) -> Resp {
        self.read_response_for(false)
    }

    /// Asserts the server closed the connection (EOF, or a reset after it closed), with no
    /// further response.
    pub fn assert_closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(
                rest.is_empty(),
                "unexpected bytes after close: {:?}",
                String::from_utf8_lossy(&rest)
            ),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connection not closed: {e}"),
        }
    }
}

/// Parses consecutive responses (`Content-Length` or chunked bodies); returns them and the
/// bytes left over.
pub fn parse_responses(mut data: &[u8]) -> (Vec<Resp>, Vec<u8>) {
    let mut out = Vec::new();
    while !data.is_empty() {
        match parse_one(data) {
            Some((resp, used)) => {
                out.push(resp);
                data = &data[used..];
            }
            None => break,
        }
    }
    (out, data.to_vec())
}

/// One response at the start of `data` and its length; `None` if incomplete or not a response.
fn parse_one(data: &[u8]) -> Option<(Resp, usize)> {
    let head_end = data.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&data[..head_end - 4]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line
        .strip_prefix("HTTP/1.1 ")?
        .get(..3)?
        .parse()
        .ok()?;
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap_or((l, ""));
            (n.to_string(), v.trim().to_string())
        })
        .collect();
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &data[head_end..];
    if status / 100 == 1 {
        return Some((resp, head_end));
    }
    if let Some(len) = resp.header("content-length") {
        let len: usize = len.parse().ok()?;
        resp.body = rest.get(..len)?.to_vec();
        return Some((resp, head_end + len));
    }
    if resp.header("transfer-encoding") == Some("chunked") {
        let mut pos = 0;
        loop {
            let line_end = rest[pos..].windows(2).position(|w| w == b"\r\n")? + pos;
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[pos..line_end]).ok()?, 16).ok()?;
            pos = line_end + 2;
            if size == 0 {
                // No trailers from weir: the final CRLF follows.
                return Some((resp, head_end + pos + 2));
            }
            resp.body.extend_from_slice(rest.get(pos..pos + size)?);
            pos += size + 2;
        }
    }
    // Close-delimited: the rest is the body.
    resp.body = rest.to_vec();
    Some((resp, data.len()))
}
