//! [`H2Stream`]: one HTTP/2 request and its response, as the exchange's HTTP/2 backend.
//!
//! Each stream runs its handler on a task of its own (spawned by the connection driver), so
//! that streams of one connection proceed independently. The stream owns its request head, the
//! `h2` handles of its two directions and its body and response state; the handler borrows it
//! through [`Exchange`](crate::Exchange) exactly as it borrows an HTTP/1.1 connection.
//!
//! A response that ends before the request body does not end the stream at once: the stream
//! waits, at most `DISCARD_LIMIT`, for what the client already sent of the body, so that h2
//! answers a fault in it (a wrong `content-length`, malformed trailers) the same whether the
//! handler answered first or not.
//!
//! Unlike HTTP/1.1, a stream allocates: `h2` allocates each stream's state and header maps
//! itself, and a task per stream is the price of independent streams. weir's own parts (the
//! request head's buffers, small response payloads, repeated field values) are kept per thread
//! and reused (`reuse`).

use super::body::BodyIn;
use super::response::ResponseOut;
use crate::error::Misuse;
use crate::exchange::Shared;
use crate::exchange::backend::{Backend, HeadFlags, poll_once};
use crate::exchange::body::BodyPolicy;
use crate::exchange::extra_headers::ExtraHeaders;
use crate::exchange::lifecycle::ResponseLifecycle;
use crate::transport::PeerAddr;
use crate::{Error, Request};
use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::{Method, StatusCode, Version};
use std::fs::File;
use std::sync::Arc;
use std::time::Duration;
use weir_proto::Framing;

/// How long a stream whose response is complete waits for the rest of a body its handler left
/// unread (see `discard_rest`) before h2 resets it with NO_ERROR. The frames this is for were
/// sent before the client saw the response, so they are one round trip away; the limit only
/// bounds a client that stops sending, whose stream still counts against the connection's
/// handler bound meanwhile.
const DISCARD_LIMIT: Duration = Duration::from_secs(1);

/// One stream: request head, body in, response out.
pub(crate) struct H2Stream {
    pub(crate) head: Request,
    pub(crate) peer: PeerAddr,
    /// The request's `:scheme` (`http` and `https` are `http`'s constants: no allocation).
    pub(crate) scheme: Option<http::uri::Scheme>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) body: BodyIn,
    pub(crate) resp: ResponseOut,
    /// `Exchange::add_response_header`'s fields (a stream is one exchange).
    pub(crate) extra_headers: ExtraHeaders,
}

impl H2Stream {
    /// A stream for `request`, whose body may run `initial` bytes ahead of the handler (the
    /// stream's flow-control window when it opened) until the handler reads, then `window`.
    pub(crate) fn new(
        request: http::Request<RecvStream>,
        respond: SendResponse<Bytes>,
        initial: u32,
        window: u32,
        peer: PeerAddr,
        shared: Arc<Shared>,
    ) -> Self {
        let (parts, recv) = request.into_parts();
        // A head kept by this thread from an earlier stream: its buffers have their capacity.
        let mut head = super::reuse::take_head();
        fill_head(&mut head, &parts, recv.is_end_stream());
        // An `Arc` clone per stream (no allocation): the body keeps the server's gauge.
        let body = BodyIn::new(
            recv,
            &head,
            initial as usize,
            window as usize,
            shared.clone(),
        );
        let resp = ResponseOut::new(respond, &parts.method);
        Self {
            head,
            peer,
            scheme: parts.uri.scheme().cloned(),
            shared,
            body,
            resp,
            extra_headers: ExtraHeaders::default(),
        }
    }

    /// Sends `100 Continue` before the first body read if the client asked for it (and no
    /// response has started: then the client must not be told to go on).
    pub(crate) fn send_continue_if_expected(&mut self) -> Result<(), Error> {
        if self.body.policy.take_continue(self.resp.is_started()) {
            self.resp.send_informational(StatusCode::CONTINUE, &[])?;
        }
        Ok(())
    }

    /// Sends a 1xx response; a `100 Continue` answers `Expect: 100-continue`.
    pub(crate) fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        self.resp.send_informational(status, headers)?;
        if status == StatusCode::CONTINUE {
            self.body.policy.note_continue_sent();
        }
        Ok(())
    }

    /// After the handler returned: answers an error or a missing response, completes a body
    /// left open, or resets the stream when the response cannot be completed.
    pub(crate) async fn finish(&mut self, result: Result<(), Error>) {
        self.shared
            .stats
            .record_body_buffered(self.body.policy.stats.peak_buffered);
        match (&result, self.resp.is_started()) {
            (Err(e), false) if e.is_disconnect() => {
                // The client reset the stream or the connection is gone: nothing to answer.
                self.resp.reset(Reason::CANCEL);
            }
            (Err(e), false) => {
                tracing::debug!(error = %e, "handler failed before responding (h2)");
                let _ = self.write_error_response(e.status_code(), e).await;
            }
            (Err(e), true) => {
                tracing::debug!(error = %e, "handler failed while responding (h2)");
                if !self.resp.is_complete() {
                    self.resp.reset(Reason::INTERNAL_ERROR);
                }
            }
            (Ok(()), false) => {
                tracing::warn!(
                    path = self.head.path(),
                    "handler returned without responding"
                );
                let e = Error::invalid_response(Misuse::NoResponse);
                let _ = self
                    .write_error_response(StatusCode::INTERNAL_SERVER_ERROR, &e)
                    .await;
            }
            (Ok(()), true) => Backend::complete_if_open(self),
        }
        if let (true, Some(recv)) = (self.resp.is_complete(), self.body.unfinished()) {
            let _ = tokio::time::timeout(DISCARD_LIMIT, discard_rest(recv)).await;
        }
        // Dropping the request body now makes h2 tell the client to stop sending it:
        // RST_STREAM(NO_ERROR) after a complete response (RFC 9113 §8.1), CANCEL otherwise.
    }

    /// Sends the response head (see `ResponseOut::finish_head`).
    pub(crate) fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> Result<(), Error> {
        self.resp
            .finish_head(status, len, flags, &self.shared.config.server_header)
    }
}

impl Drop for H2Stream {
    fn drop(&mut self) {
        // `Request::new` allocates nothing: the head's buffers go to the next stream.
        super::reuse::give_head(std::mem::replace(&mut self.head, Request::new()));
    }
}

impl Backend for H2Stream {
    fn request(&self) -> &Request {
        &self.head
    }

    fn peer_addr(&self) -> PeerAddr {
        self.peer
    }

    fn scheme(&self) -> Option<&http::uri::Scheme> {
        self.scheme.as_ref()
    }

    fn body_policy(&self) -> &BodyPolicy {
        &self.body.policy
    }

    fn body_policy_mut(&mut self) -> &mut BodyPolicy {
        &mut self.body.policy
    }

    fn response(&self) -> &ResponseLifecycle {
        self.resp.lifecycle()
    }

    fn extra_headers_mut(&mut self) -> &mut ExtraHeaders {
        &mut self.extra_headers
    }

    async fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.send_continue_if_expected()?;
        self.body.read(buf).await
    }

    async fn wait_body(&mut self) -> Result<bool, Error> {
        self.send_continue_if_expected()?;
        self.body.wait().await
    }

    fn try_read_body(&mut self, buf: &mut [u8]) -> Option<Result<usize, Error>> {
        if let Err(e) = self.send_continue_if_expected() {
            return Some(Err(e));
        }
        poll_once(self.body.read(buf))
    }

    async fn read_body_chunk(&mut self) -> Result<Option<Bytes>, Error> {
        self.send_continue_if_expected()?;
        self.body.read_chunk().await
    }

    async fn body_to_file(&mut self, file: &mut File, limit: u64) -> Result<u64, Error> {
        self.send_continue_if_expected()?;
        self.body.write_to_file(file, limit).await
    }

    fn set_pause_threshold(&mut self, bytes: usize) {
        self.body.set_pause_threshold(bytes);
    }

    fn pause_threshold(&self) -> usize {
        self.body.effective_threshold()
    }

    fn is_body_complete(&self) -> bool {
        self.body.is_done()
    }

    fn body_at_hand(&self) -> u64 {
        self.body.at_hand()
    }

    async fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        H2Stream::send_informational(self, status, headers)
    }

    fn start_head(&mut self, status: StatusCode) -> Result<usize, Error> {
        self.resp.start_head(status).map(|()| 0)
    }

    fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), Error> {
        self.resp
            .push_header(name, value, flags)
            .map_err(|()| Error::invalid_response(Misuse::InvalidHeader))
    }

    fn abort_head(&mut self, _mark: usize) {
        self.resp.abort_head();
    }

    fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> Result<(), Error> {
        H2Stream::finish_head(self, status, len, flags)
    }

    async fn write_body(&mut self, data: &[u8]) -> Result<(), Error> {
        self.resp.write_body(data, &self.shared).await
    }

    fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error> {
        self.resp.finish_body(trailers)
    }

    async fn flush_response(&mut self) -> Result<(), Error> {
        // h2's connection task writes queued frames as soon as it can.
        Ok(())
    }

    async fn send_file(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        self.resp.send_file(file, offset, len, &self.shared).await
    }
}

/// After a complete response to a request whose body the handler left unread: lets the rest
/// the client may already send arrive, so that h2 judges it as on a stream whose handler still
/// reads, whether or not the response was faster (RST_STREAM(PROTOCOL_ERROR) for DATA beyond
/// `content-length` or trailers without END_STREAM or with a pseudo-header field,
/// FLOW_CONTROL_ERROR for a stream WINDOW_UPDATE past 2³¹−1). The bytes are dropped and their
/// capacity is not given back, so the client can send no more than its window already allows.
/// Returns when the client ends the stream, h2 resets it, or the window is used up; the caller
/// bounds the wait, then drops the stream (h2 sends RST_STREAM(NO_ERROR) if it is still open).
async fn discard_rest(recv: &mut RecvStream) {
    while recv.flow_control().available_capacity() > 0 {
        match recv.data().await {
            // Dropped unread: the response is already complete.
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return,
        }
    }
}

/// Fills `head` from an HTTP/2 request: the target is the `:path` (or the authority for
/// CONNECT), `:authority` becomes `host` when the client sent no `host`, and the body framing
/// is its `content-length`, or [`Framing::Unknown`] (until the end of the stream), or empty
/// when HEADERS ended the stream.
pub(crate) fn fill_head(head: &mut Request, parts: &http::request::Parts, end_of_stream: bool) {
    let uri = &parts.uri;
    let target = if parts.method == Method::CONNECT {
        uri.authority().map_or("", |a| a.as_str())
    } else {
        uri.path_and_query().map_or("/", |pq| pq.as_str())
    };
    let head = head.head_mut();
    head.set_request_line(parts.method.clone(), target, Version::HTTP_2);
    if !parts.headers.contains_key(http::header::HOST) {
        if let Some(authority) = uri.authority() {
            head.push_header("host", authority.as_str().as_bytes());
        }
    }
    for (name, value) in &parts.headers {
        head.push_header(name.as_str(), value.as_bytes());
    }
    let length = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| weir_proto::framing::parse_content_length(v.as_bytes()).ok());
    head.set_framing(match (length, end_of_stream) {
        (_, true) => Framing::Length(0),
        (Some(n), false) => Framing::Length(n),
        (None, false) => Framing::Unknown,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(req: http::Request<()>, end_of_stream: bool) -> Request {
        let (parts, ()) = req.into_parts();
        let mut head = Request::new();
        fill_head(&mut head, &parts, end_of_stream);
        head
    }

    #[test]
    fn head_from_pseudo_headers() {
        let req = http::Request::builder()
            .method("PUT")
            .uri("https://example.com:8443/files/a?x=1")
            .version(Version::HTTP_2)
            .header("content-length", "12")
            .body(())
            .unwrap();
        let head = head_of(req, false);
        assert_eq!(head.method(), Method::PUT);
        assert_eq!(head.target(), "/files/a?x=1");
        assert_eq!(head.path(), "/files/a");
        assert_eq!(head.version(), Version::HTTP_2);
        assert_eq!(head.header("host"), Some(&b"example.com:8443"[..]));
        assert_eq!(head.content_length(), Some(12));
    }

    #[test]
    fn framing_without_length() {
        let req = || {
            http::Request::builder()
                .method("POST")
                .uri("http://h/u")
                .body(())
                .unwrap()
        };
        assert_eq!(head_of(req(), false).framing(), crate::Framing::Unknown);
        assert_eq!(head_of(req(), false).content_length(), None);
        assert_eq!(head_of(req(), true).framing(), crate::Framing::Length(0));
    }

    #[test]
    fn expect_continue_reads_as_over_http1() {
        let req = |expect: &str| {
            http::Request::builder()
                .method("PUT")
                .uri("http://h/u")
                .header("expect", expect)
                .body(())
                .unwrap()
        };
        let head = head_of(req("100-Continue"), false);
        assert!(head.expect_continue());
        assert!(head.keep_alive());
        assert!(!head_of(req("something-else"), false).expect_continue());
        let mut reused = head;
        fill_head(&mut reused, &http::Request::new(()).into_parts().0, true);
        assert!(
            !reused.expect_continue(),
            "a reused head forgets the expectation"
        );
    }
}
