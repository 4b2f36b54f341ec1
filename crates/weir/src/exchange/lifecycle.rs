//! [`ResponseLifecycle`]: where a response stands, and what a handler may do next, for both
//! protocols. The drivers do the writes (HTTP/1.1 into its write buffer and socket, HTTP/2 as
//! HEADERS and DATA frames); every decision about whether a write is allowed, whether it ends
//! the body, what a file response does without a body, and what to do with a body the handler
//! left open is made here, once. No I/O.
//!
//! ```text
//! NotStarted ──start_head──▶ Head ──head_sent──▶ Body ──finish / last bytes──▶ Complete
//!      ▲                      │                   │
//!      └──────abort_head──────┘                   └──fail (write error, wrong length)──▶ Failed
//! ```
//!
//! Invariants: a head is started at most once per exchange; body bytes are accepted only while
//! the body is open and never beyond a declared length; a declared length is complete before
//! the body can end cleanly.

use crate::error::Misuse;
use http::StatusCode;

/// Where the response of an exchange stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    NotStarted,
    /// A head is being built (HTTP/1.1: in the write buffer; HTTP/2: in a header map).
    Head,
    /// The head is written (perhaps still buffered); body bytes may follow.
    Body {
        /// No body goes on the wire (HEAD, 204, 304): written bytes are dropped.
        no_body: bool,
        /// Bytes still owed under a declared length; `None` for a body of unknown length.
        remaining: Option<u64>,
    },
    Complete,
    /// Writing failed, or the handler broke the framing: the response cannot be completed.
    Failed,
}

/// What a driver does with body bytes the lifecycle accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Nothing goes on the wire (no body for this response, or an empty write after the end).
    Drop,
    /// Send the bytes; `last` when they complete a declared length (HTTP/2 ends the stream
    /// with them).
    Send { last: bool },
}

/// What a driver does to end a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Write the end of the body (HTTP/1.1: the last chunk if chunked; HTTP/2: END_STREAM),
    /// unless `no_body`, then call [`ResponseLifecycle::complete`].
    End { no_body: bool },
    /// The body was already complete.
    Done,
}

/// What a driver does with a file response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileSend {
    /// No body goes on the wire: the response is complete already.
    Skip,
    /// Send the file's bytes, then call [`ResponseLifecycle::complete`].
    Send,
}

/// The protocol-neutral state of one response.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResponseLifecycle {
    state: State,
    /// The status of the final head started (kept after the head is sent, for access logs).
    status: Option<StatusCode>,
    /// Body bytes accepted for the wire (writes, and each piece of a file as the driver hands
    /// it to the connection: [`ResponseLifecycle::file_sent`]; not those dropped for a response
    /// without a body). A file is not counted whole when its sending starts: a client that
    /// leaves after 10 MB of a 1 GiB file was logged and counted as sent 1 GiB (issue 35).
    body_bytes: u64,
}

impl Default for ResponseLifecycle {
    fn default() -> Self {
        Self {
            state: State::NotStarted,
            status: None,
            body_bytes: 0,
        }
    }
}

impl ResponseLifecycle {
    /// For the next exchange on a connection.
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The status of the final response head, once one is started.
    pub(crate) fn status(&self) -> Option<StatusCode> {
        self.status
    }

    /// Body bytes accepted for the wire so far (see the field).
    pub(crate) fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Whether a final response head has been sent (or failed to be).
    pub(crate) fn is_started(&self) -> bool {
        !matches!(self.state, State::NotStarted | State::Head)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.state == State::Complete
    }

    /// Starts a final response head.
    pub(crate) fn start_head(&mut self, status: StatusCode) -> Result<(), Misuse> {
        if self.state != State::NotStarted {
            return Err(Misuse::AlreadySent);
        }
        if status.is_informational() {
            return Err(Misuse::InformationalStatus);
        }
        self.state = State::Head;
        self.status = Some(status);
        Ok(())
    }

    /// A head that was not sent is taken back; true if there was one.
    pub(crate) fn abort_head(&mut self) -> bool {
        let building = self.state == State::Head;
        if building {
            self.state = State::NotStarted;
            self.status = None;
        }
        building
    }

    /// The head went out: `no_body` when nothing may follow it on the wire, `len` the declared
    /// length of the body (`None`: until the end).
    pub(crate) fn head_sent(&mut self, no_body: bool, len: Option<u64>) {
        self.state = State::Body {
            no_body,
            remaining: if no_body { None } else { len },
        };
    }

    /// Whether an informational (1xx) response may be sent now.
    pub(crate) fn check_informational(&self, status: StatusCode) -> Result<(), Misuse> {
        if !status.is_informational() || status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(Misuse::NotInformational);
        }
        if self.is_started() {
            return Err(Misuse::AlreadySent);
        }
        Ok(())
    }

    /// Accounts `len` body bytes about to be written. `Err(BodyTooLong)` means the handler
    /// wrote past its declared length: the driver fails the response (nothing of it is sent).
    pub(crate) fn before_write(&mut self, len: u64) -> Result<Write, Misuse> {
        let write = self.before_forward(len)?;
        if let Write::Send { .. } = write {
            self.body_bytes += len;
        }
        Ok(write)
    }

    /// [`before_write`](Self::before_write) for `len` bytes that the driver moves in pieces
    /// and counts as they go ([`sent`](Self::sent)): a forwarded body (HTTP/1.1 `splice`), which
    /// a client that leaves may cut short.
    pub(crate) fn before_forward(&mut self, len: u64) -> Result<Write, Misuse> {
        match self.state {
            State::Body { no_body: true, .. } => Ok(Write::Drop),
            State::Body {
                remaining: Some(left),
                ..
            } if left < len => Err(Misuse::BodyTooLong),
            State::Body {
                no_body,
                remaining: Some(left),
            } => {
                self.state = State::Body {
                    no_body,
                    remaining: Some(left - len),
                };
                Ok(Write::Send { last: left == len })
            }
            State::Body {
                remaining: None, ..
            } => Ok(Write::Send { last: false }),
            State::Complete if len == 0 => Ok(Write::Drop),
            _ => Err(Misuse::NoBodyOpen),
        }
    }

    /// Whether the body may end now. `Err(BodyTooShort)` means a declared length is not
    /// complete: the driver fails the response, so the client sees it is truncated.
    pub(crate) fn before_finish(&self) -> Result<Finish, Misuse> {
        match self.state {
            State::Body {
                no_body: false,
                remaining: Some(1..),
            } => Err(Misuse::BodyTooShort),
            State::Body { no_body, .. } => Ok(Finish::End { no_body }),
            State::Complete => Ok(Finish::Done),
            State::NotStarted | State::Head | State::Failed => Err(Misuse::NoBodyOpen),
        }
    }

    /// Whether the handler returned with the body still open: the driver then ends it
    /// ([`Finish`]), which completes a body of unknown length and fails a short declared one.
    pub(crate) fn left_open(&self) -> bool {
        matches!(self.state, State::Body { .. })
    }

    /// Whether `len` bytes of a file may be sent as the body now; a response without a body
    /// is completed here. (An empty file may find its response complete already: HTTP/2 ends
    /// the stream with a head that declares a length of 0.)
    pub(crate) fn before_file(&mut self, len: u64) -> Result<FileSend, Misuse> {
        match self.state {
            State::Body { no_body: true, .. } => {
                self.state = State::Complete;
                Ok(FileSend::Skip)
            }
            State::Body { .. } => Ok(FileSend::Send),
            State::Complete if len == 0 => Ok(FileSend::Skip),
            _ => Err(Misuse::NoBodyOpen),
        }
    }

    /// `len` bytes of a file [`before_file`](Self::before_file) or of a forwarded body
    /// [`before_forward`](Self::before_forward) let through were handed to the connection.
    pub(crate) fn sent(&mut self, len: u64) {
        self.body_bytes += len;
    }

    /// The body is complete on the wire.
    pub(crate) fn complete(&mut self) {
        self.state = State::Complete;
    }

    /// The response failed; true if it had not failed before (HTTP/2 resets the stream once).
    pub(crate) fn fail(&mut self) -> bool {
        let first = self.state != State::Failed;
        self.state = State::Failed;
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(no_body: bool, len: Option<u64>) -> ResponseLifecycle {
        let mut l = ResponseLifecycle::default();
        l.start_head(StatusCode::OK).unwrap();
        assert!(!l.is_started());
        l.head_sent(no_body, len);
        assert!(l.is_started());
        l
    }

    #[test]
    fn a_head_is_started_once_and_can_be_taken_back() {
        let mut l = ResponseLifecycle::default();
        assert_eq!(
            l.start_head(StatusCode::CONTINUE),
            Err(Misuse::InformationalStatus)
        );
        l.start_head(StatusCode::OK).unwrap();
        assert_eq!(l.start_head(StatusCode::OK), Err(Misuse::AlreadySent));
        assert!(l.abort_head());
        l.start_head(StatusCode::OK).unwrap();
        l.head_sent(false, None);
        assert!(!l.abort_head());
        assert_eq!(
            l.check_informational(StatusCode::EARLY_HINTS),
            Err(Misuse::AlreadySent)
        );
    }

    #[test]
    fn a_declared_length_is_neither_exceeded_nor_cut_short() {
        let mut l = sent(false, Some(5));
        assert_eq!(l.before_write(3), Ok(Write::Send { last: false }));
        assert_eq!(l.before_finish(), Err(Misuse::BodyTooShort));
        assert_eq!(l.before_write(3), Err(Misuse::BodyTooLong));
        assert_eq!(l.before_write(2), Ok(Write::Send { last: true }));
        assert_eq!(l.before_finish(), Ok(Finish::End { no_body: false }));
        l.complete();
        assert_eq!(l.before_write(0), Ok(Write::Drop));
        assert_eq!(l.before_write(1), Err(Misuse::NoBodyOpen));
        assert_eq!(l.before_finish(), Ok(Finish::Done));
    }

    #[test]
    fn without_a_body_writes_are_dropped_and_files_skipped() {
        let mut l = sent(true, Some(100));
        assert_eq!(l.before_write(100), Ok(Write::Drop));
        assert_eq!(l.before_finish(), Ok(Finish::End { no_body: true }));
        assert_eq!(l.before_file(100), Ok(FileSend::Skip));
        assert!(l.is_complete());
        assert_eq!(l.before_file(0), Ok(FileSend::Skip));
        assert_eq!(l.before_file(1), Err(Misuse::NoBodyOpen));
    }

    #[test]
    fn a_body_left_open_is_ended_and_failure_is_reported_once() {
        let mut l = sent(false, None);
        assert!(l.left_open());
        assert_eq!(l.before_file(10), Ok(FileSend::Send));
        assert!(l.fail());
        assert!(!l.fail());
        assert!(!l.left_open());
        assert_eq!(l.before_finish(), Err(Misuse::NoBodyOpen));
    }

    #[test]
    fn status_and_body_bytes_are_kept_for_the_access_log() {
        let mut l = ResponseLifecycle::default();
        assert_eq!(l.status(), None);
        l.start_head(StatusCode::NOT_FOUND).unwrap();
        assert!(l.abort_head());
        assert_eq!(l.status(), None, "a head taken back has no status");
        l.start_head(StatusCode::OK).unwrap();
        l.head_sent(false, Some(10));
        assert_eq!(l.before_write(4), Ok(Write::Send { last: false }));
        assert_eq!(l.before_write(7), Err(Misuse::BodyTooLong));
        assert_eq!(l.before_write(6), Ok(Write::Send { last: true }));
        assert_eq!((l.status(), l.body_bytes()), (Some(StatusCode::OK), 10));
        let mut l = sent(false, None);
        assert_eq!(l.before_file(5), Ok(FileSend::Send));
        assert_eq!(l.body_bytes(), 0, "a file counts as its pieces go out");
        l.sent(2);
        assert_eq!(l.before_write(3), Ok(Write::Send { last: false }));
        assert_eq!(l.body_bytes(), 5);
        let mut l = sent(true, Some(100));
        assert_eq!(l.before_write(100), Ok(Write::Drop));
        assert_eq!(l.before_file(100), Ok(FileSend::Skip));
        assert_eq!(l.body_bytes(), 0, "nothing went on the wire");
        l.reset();
        assert_eq!((l.status(), l.body_bytes()), (None, 0));
    }
}
