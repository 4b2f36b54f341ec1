//! The life of an HTTP/1.1 connection, and the decision to keep it open after each exchange.
//!
//! ```text
//!   ┌─────────────┐ head parsed ┌──────────┐ handler returned ┌───────────┐
//!   │ ReadingHead ├────────────▶│ Exchange ├─────────────────▶│ Finishing │
//!   └──▲───┬──────┘             └──────────┘                  └──┬─────┬──┘
//!      │   │ EOF, timeout, bad head                 keep alive   │     │ close
//!      │   ▼                                                     │     ▼
//!      │ Closing ◀───────────────────────────────────────────────┼── Closing
//!      └─────────────────────────────────────────────────────────┘
//! ```
//!
//! - *ReadingHead*: waiting for (the rest of) a request head, under the idle or head timeout.
//! - *Exchange*: the handler runs; it reads the body (the socket is read only when it asks) and
//!   writes the response.
//! - *Finishing*: the response is completed, any body the handler left unread is drained if it
//!   is small enough ([`Persistence::after_exchange`]), and pipelined responses are flushed.
//! - *Closing*: flush, shut down the write side, and briefly discard what the client still sends
//!   so that the close does not reset the connection before the client reads the last response.
//!
//! The driver in the `weir` crate implements these states as the straight-line code of one
//! async function; this module holds the decisions, so they can be tested without sockets.

use crate::encode::ResponseFraming;
use crate::request::RequestHead;
use http::Version;

/// What is left of the request body when the handler is done with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLeft {
    /// The body was read to its end (or there was none).
    Nothing,
    /// This many payload bytes were not read (`Content-Length` body).
    Known(u64),
    /// A chunked body was not read to its end: its length is unknown.
    Unknown,
    /// The body is unusable: a framing error, a limit breach or a disconnect. The bytes on the
    /// connection can no longer be trusted to delimit a request.
    Broken,
}

/// What `Connection` header the response head must carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionHeader {
    /// None: HTTP/1.1 default persistence.
    None,
    /// `Connection: close`.
    Close,
    /// `Connection: keep-alive` (HTTP/1.0 clients that asked for it).
    KeepAlive,
}

/// What the connection does after an exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read the next request.
    ReadNext,
    /// Read and discard this many more body bytes (at most), then read the next request; if the
    /// body does not end within them, close.
    Drain,
    /// Close the connection.
    Close,
}

/// Tracks whether the connection may carry another request.
#[derive(Clone, Copy, Debug)]
pub struct Persistence {
    version: Version,
    request_keep_alive: bool,
    expect_continue: bool,
    /// Decided to close (announced or not).
    close: bool,
}

impl Persistence {
    /// Starts tracking an exchange.
    pub fn new(head: &RequestHead) -> Self {
        Self {
            version: head.version(),
            request_keep_alive: head.keep_alive(),
            expect_continue: head.expect_continue(),
            close: !head.keep_alive(),
        }
    }

    /// Marks the connection for closing (shutdown, or an error the driver knows about).
    pub fn close(&mut self) {
        self.close = true;
    }

    /// Whether the connection is marked for closing.
    pub fn will_close(&self) -> bool {
        self.close
    }

    /// Decides the `Connection` header when the response head is written.
    ///
    /// `body` is what is left of the request body at that moment; `continue_sent` whether a
    /// `100 Continue` went out; `drain_limit` how much unread body the server will drain to keep
    /// the connection.
    pub fn on_response_head(
        &mut self,
        framing: ResponseFraming,
        body: BodyLeft,
        continue_sent: bool,
        drain_limit: u64,
    ) -> ConnectionHeader {
        let keep = self.can_keep(body, continue_sent, drain_limit)
            && framing != ResponseFraming::CloseDelimited;
        if !keep {
            self.close = true;
        }
        match (self.close, self.version) {
            (true, _) => ConnectionHeader::Close,
            (false, Version::HTTP_10) => ConnectionHeader::KeepAlive,
            (false, _) => ConnectionHeader::None,
        }
    }

    /// Decides what to do once the exchange is over. `response_complete`: the response was
    /// written in full, framing included.
    pub fn after_exchange(
        &mut self,
        response_complete: bool,
        body: BodyLeft,
        continue_sent: bool,
        drain_limit: u64,
    ) -> Next {
        if self.close || !response_complete || !self.can_keep(body, continue_sent, drain_limit) {
            self.close = true;
            return Next::Close;
        }
        match body {
            BodyLeft::Nothing => Next::ReadNext,
            _ => Next::Drain,
        }
    }

    fn can_keep(&self, body: BodyLeft, continue_sent: bool, drain_limit: u64) -> bool {
        if !self.request_keep_alive {
            return false;
        }
        match body {
            BodyLeft::Nothing => true,
            BodyLeft::Broken => false,
            // A client that waits for 100 Continue and never got it may or may not send the
            // body: the next bytes cannot be told apart from a request. Close (RFC 9110 §10.1.1).
            _ if self.expect_continue && !continue_sent => false,
            BodyLeft::Known(n) => n <= drain_limit,
            BodyLeft::Unknown => drain_limit > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, parse::HeadParser};

    fn head(raw: &[u8]) -> RequestHead {
        let mut head = RequestHead::new();
        HeadParser::new()
            .parse(raw, &Limits::default(), &mut head)
            .unwrap()
            .unwrap();
        head
    }

    const LEN: ResponseFraming = ResponseFraming::Length(2);

    #[test]
    fn http11_keeps_alive() {
        let mut p = Persistence::new(&head(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Nothing, false, 0),
            ConnectionHeader::None
        );
        assert_eq!(
            p.after_exchange(true, BodyLeft::Nothing, false, 0),
            Next::ReadNext
        );
    }

    #[test]
    fn close_requested() {
        let mut p = Persistence::new(&head(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        ));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Nothing, false, 0),
            ConnectionHeader::Close
        );
        assert_eq!(
            p.after_exchange(true, BodyLeft::Nothing, false, 0),
            Next::Close
        );
    }

    #[test]
    fn http10() {
        let mut p = Persistence::new(&head(b"GET / HTTP/1.0\r\n\r\n"));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Nothing, false, 0),
            ConnectionHeader::Close
        );
        let mut p = Persistence::new(&head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Nothing, false, 0),
            ConnectionHeader::KeepAlive
        );
        let close_delimited = ResponseFraming::CloseDelimited;
        assert_eq!(
            p.on_response_head(close_delimited, BodyLeft::Nothing, false, 0),
            ConnectionHeader::Close
        );
    }

    #[test]
    fn unread_body() {
        let raw = b"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n";
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.after_exchange(true, BodyLeft::Known(100), false, 100),
            Next::Drain
        );
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Known(101), false, 100),
            ConnectionHeader::Close
        );
        assert_eq!(
            p.after_exchange(true, BodyLeft::Known(101), false, 100),
            Next::Close
        );
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.after_exchange(true, BodyLeft::Broken, false, 100),
            Next::Close
        );
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.after_exchange(false, BodyLeft::Nothing, false, 100),
            Next::Close
        );
    }

    #[test]
    fn unanswered_expectation_closes() {
        let raw = b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.on_response_head(LEN, BodyLeft::Known(5), false, 100),
            ConnectionHeader::Close
        );
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.after_exchange(true, BodyLeft::Known(5), true, 100),
            Next::Drain
        );
        let mut p = Persistence::new(&head(raw));
        assert_eq!(
            p.after_exchange(true, BodyLeft::Nothing, false, 100),
            Next::ReadNext
        );
    }
}
