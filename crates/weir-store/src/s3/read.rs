//! `S3Object` and `S3Reader`: a version found by `HeadObject`, read by ranged `GetObject`s
//! pinned to its S3 ETag (see the parent module's docs).
//!
//! Two ways to read: [`StoreObject::read`] through hyper's pooled client (frames as `Bytes`),
//! and [`StoreObject::read_socket`] for a plain-`http://` endpoint: the signed `GetObject` is
//! written on a connection of its own, its answer head parsed here, and the connection handed
//! out positioned at the body, so that `weir serve` splices it to its client (no user-space
//! copy of the bytes, neither hyper's read nor the response's write). The connection serves
//! that one request (`Connection: close`): the cost of a connect is nothing against the
//! large ranges it is used for.

use super::*;
use crate::SocketBody;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest answer head accepted on a [`StoreObject::read_socket`] connection.
const MAX_HEAD: usize = 64 * 1024;

/// An object as [`Store::open`] found it.
#[derive(Debug)]
pub struct S3Object {
    pub(super) store: S3Store,
    pub(super) key: String,
    pub(super) head: Head,
}

impl StoreObject for S3Object {
    type Reader = S3Reader;

    fn meta(&self) -> &FileMeta {
        &self.head.meta
    }

    fn props(&self) -> Option<Vec<u8>> {
        self.head.props.clone()
    }

    fn object_meta(&self) -> Option<ObjectMeta> {
        self.head.object_meta.clone()
    }

    fn media_type(&self) -> Option<&MediaType> {
        self.head.media_type.as_ref()
    }

    async fn read(self, range: Range<u64>) -> Result<S3Reader, StoreError> {
        if range.start >= range.end {
            return Ok(S3Reader {
                body: None,
                timeout: Duration::ZERO,
            });
        }
        let i = &self.store.inner;
        let mut action = i.bucket.get_object(Some(&i.credentials), &self.key);
        let range_value = format!("bytes={}-{}", range.start, range.end - 1);
        action.headers_mut().insert("range", range_value.as_str());
        action
            .headers_mut()
            .insert("if-match", self.head.etag.as_str());
        let url = action.sign(SIGNED_FOR);
        let headers = [
            ("range", range_value.as_str()),
            ("if-match", self.head.etag.as_str()),
        ];
        let resp = self
            .store
            .send("get object", Method::GET, url, &headers, Bytes::new())
            .await?;
        match resp.status() {
            StatusCode::OK | StatusCode::PARTIAL_CONTENT => Ok(S3Reader {
                body: Some(resp.into_body()),
                timeout: self.store.inner.request_timeout,
            }),
            StatusCode::NOT_FOUND => Err(StoreError::NotFound),
            StatusCode::PRECONDITION_FAILED => Err(StoreError::Backend {
                op: "get object",
                message: "the object was replaced while being read".into(),
            }),
            _ => Err(failure("get object", resp).await),
        }
    }

    async fn read_socket(&self, range: Range<u64>) -> Result<Option<SocketBody>, StoreError> {
        let i = &self.store.inner;
        if range.start >= range.end || i.bucket.base_url().scheme() != "http" {
            return Ok(None);
        }
        let timeout = i.request_timeout;
        match tokio::time::timeout(timeout, self.get_on_socket(range)).await {
            Ok(answer) => answer.map(Some),
            Err(_) => Err(StoreError::Backend {
                op: "get object",
                message: format!("no answer within {timeout:?}"),
            }),
        }
    }
}

impl S3Object {
    /// The signed, ranged, pinned `GetObject` on a new connection; its answer head read.
    async fn get_on_socket(&self, range: Range<u64>) -> Result<SocketBody, StoreError> {
        let i = &self.store.inner;
        let fail = |message: String| StoreError::Backend {
            op: "get object",
            message,
        };
        let len = range.end - range.start;
        let mut action = i.bucket.get_object(Some(&i.credentials), &self.key);
        let range_value = format!("bytes={}-{}", range.start, range.end - 1);
        action.headers_mut().insert("range", range_value.as_str());
        action
            .headers_mut()
            .insert("if-match", self.head.etag.as_str());
        let url = action.sign(SIGNED_FOR);
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(fail(format!("no host in {url}")));
        };
        // The `Host` the signature covers: the URL's authority (its port only when not 80).
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let mut stream = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| fail(format!("connect to {authority}: {e}")))?;
        let _ = stream.set_nodelay(true);
        // ALLOCATION: the request head, once per read.
        let request = format!(
            "GET {target} HTTP/1.1\r\nhost: {authority}\r\nrange: {range_value}\r\n\
             if-match: {}\r\nconnection: close\r\n\r\n",
            self.head.etag
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| fail(e.to_string()))?;
        // ALLOCATION: the answer head's buffer; the bytes after the head in it are the range's
        // first ones, handed out as they are.
        let mut buf = BytesMut::with_capacity(16 * 1024);
        let (status, head_len, length) = loop {
            if stream
                .read_buf(&mut buf)
                .await
                .map_err(|e| fail(e.to_string()))?
                == 0
            {
                return Err(fail(
                    "the store closed the connection before its answer".into(),
                ));
            }
            let mut fields = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut fields);
            match resp.parse(&buf) {
                Ok(httparse::Status::Complete(head_len)) => {
                    let mut length = None;
                    for f in resp.headers.iter() {
                        if f.name.eq_ignore_ascii_case("content-length") {
                            length = std::str::from_utf8(f.value)
                                .ok()
                                .and_then(|v| v.trim().parse::<u64>().ok());
                        } else if f.name.eq_ignore_ascii_case("transfer-encoding") {
                            return Err(fail("a chunked answer to a ranged read".into()));
                        }
                    }
                    break (resp.code.unwrap_or(0), head_len, length);
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {
                    buf.reserve(16 * 1024);
                }
                Ok(httparse::Status::Partial) => return Err(fail("answer head too long".into())),
                Err(e) => return Err(fail(format!("malformed answer: {e}"))),
            }
        };
        match status {
            200 | 206 => {}
            404 => return Err(StoreError::NotFound),
            412 => return Err(fail("the object was replaced while being read".into())),
            _ => {
                let body = buf.split_off(head_len);
                return Err(fail(format!("{status} {}", error_code(&body))));
            }
        }
        if length != Some(len) {
            return Err(fail(format!(
                "answered {length:?} bytes for a range of {len}"
            )));
        }
        let mut head = buf.split_off(head_len).freeze();
        head.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        Ok(SocketBody {
            rest: len - head.len() as u64,
            head,
            stream,
            idle_timeout: i.request_timeout,
        })
    }
}

/// The body of a `GetObject`, frame by frame.
#[derive(Debug)]
pub struct S3Reader {
    body: Option<Incoming>,
    /// Longest wait for the next frame ([`S3Config::request_timeout`]).
    timeout: Duration,
}

impl StoreReader for S3Reader {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, StoreError> {
        let Some(body) = self.body.as_mut() else {
            return Ok(None);
        };
        loop {
            let Ok(frame) = tokio::time::timeout(self.timeout, body.frame()).await else {
                return Err(StoreError::Backend {
                    op: "get object",
                    message: format!("no data within {:?}", self.timeout),
                });
            };
            match frame {
                None => {
                    self.body = None;
                    return Ok(None);
                }
                Some(Err(e)) => {
                    return Err(StoreError::Backend {
                        op: "get object",
                        message: e.to_string(),
                    });
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(Some(data));
                        }
                    }
                }
            }
        }
    }
}
