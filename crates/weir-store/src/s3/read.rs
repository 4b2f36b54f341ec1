//! `S3Object` and `S3Reader`: a version found by `HeadObject`, read by ranged `GetObject`s
//! pinned to its S3 ETag (see the parent module's docs).

use super::*;

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
