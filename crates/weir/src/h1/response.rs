//! Writing the response: head into the write buffer, body coalesced or written from the
//! caller's memory, chunk framing on the stack, files with `sendfile`.
//!
//! Small responses (head + body up to `Config::write_coalesce_limit`, from memory or from a
//! file) are assembled in the write buffer and leave in one write, together with any other
//! pipelined responses, when the connection next waits for input. Larger bodies go out with
//! one vectored write of the buffered head and the caller's slice, so they are never copied in
//! user space; larger files with `sendfile` after the head. A body forwarded from another
//! socket (`forward_body`) goes socket → pipes → socket with `splice`.

use super::conn::Conn;
use crate::error::Misuse;
use crate::exchange::backend::HeadFlags;
use crate::exchange::lifecycle::{FileSend, Finish, Write};
use crate::{Error, zero_copy};
use http::{Method, StatusCode, Version};
use std::fs::File;
use weir_proto::conn::ConnectionHeader;
use weir_proto::encode::{self, ChunkHeader, InvalidHeader, ResponseFraming};

/// Pipes a forwarded body passes through (`Conn::forward_body`): the connection's own and
/// three more, so up to four pipes' worth is held between the two sockets.
const FORWARD_PIPES: usize = 4;

impl Conn {
    /// Starts a response head in the write buffer; returns where it starts (to undo it).
    pub(crate) fn start_head(&mut self, status: StatusCode) -> Result<usize, Error> {
        self.resp
            .start_head(status)
            .map_err(Error::invalid_response)?;
        let mark = self.io.wbuf.len();
        encode::status_line(&mut self.io.wbuf, status);
        Ok(mark)
    }

    /// Adds a handler's header to the head being built.
    pub(crate) fn push_header(
        &mut self,
        name: &[u8],
        value: &[u8],
        flags: &mut HeadFlags,
    ) -> Result<(), InvalidHeader> {
        if name.eq_ignore_ascii_case(b"connection") {
            // weir owns the Connection header (it knows about draining and shutdown); a
            // handler's `close` is honoured, anything else is dropped.
            if value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
            {
                self.persistence.close();
            }
            return Ok(());
        }
        flags.date |= name.eq_ignore_ascii_case(b"date");
        flags.server |= name.eq_ignore_ascii_case(b"server");
        encode::header(&mut self.io.wbuf, name, value)
    }

    /// [`Conn::push_header`] for a name and value made by `http`'s checked constructors
    /// (`Backend::push_valid_header`): the name is a lowercase token and not a framing field,
    /// the value has no control character, so neither is checked again; the names weir owns or
    /// watches are compared as lowercase.
    #[cfg(feature = "tower")]
    pub(crate) fn push_valid_header(&mut self, name: &[u8], value: &[u8], flags: &mut HeadFlags) {
        debug_assert!(
            weir_proto::chars::is_token(name) && weir_proto::chars::is_field_value(value),
            "an http::HeaderName and HeaderValue are valid by construction"
        );
        if name == b"connection" {
            if value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
            {
                self.persistence.close();
            }
            return;
        }
        flags.date |= name == b"date";
        flags.server |= name == b"server";
        encode::header_unchecked(&mut self.io.wbuf, name, value);
    }

    /// Undoes a head that was not sent (builder dropped or header rejected).
    pub(crate) fn abort_head(&mut self, mark: usize) {
        if self.resp.abort_head() {
            self.io.wbuf.truncate(mark);
        }
    }

    /// Completes the head: framing, `Date`, `Server`, `Connection`. `len` is the body length
    /// when known.
    pub(crate) fn finish_head(
        &mut self,
        status: StatusCode,
        len: Option<u64>,
        flags: HeadFlags,
    ) -> ResponseFraming {
        let method = self.head.method();
        let framing = ResponseFraming::choose(method, self.head.version(), status, len);
        // A HEAD response announces the length a GET would get, when it is known.
        let head_len = (*method == Method::HEAD && encode::status_has_body(status))
            .then_some(len)
            .flatten();
        let wbuf = &mut self.io.wbuf;
        encode::framing_header(wbuf, framing, head_len);
        if !flags.date {
            let date = self.date.value_at(crate::clock::unix_seconds());
            encode::header_unchecked(wbuf, b"date", date);
        }
        if let (false, Some(server)) = (flags.server, &self.shared.config.server_header) {
            encode::header_unchecked(wbuf, b"server", server.as_bytes());
        }
        if self.shared.is_shutting_down() {
            self.persistence.close();
        }
        let body_left = self.body_left();
        let connection = self.persistence.on_response_head(
            framing,
            body_left,
            self.body.policy.continue_sent,
            self.shared.config.drain_limit,
        );
        let wbuf = &mut self.io.wbuf;
        match connection {
            ConnectionHeader::None => {}
            ConnectionHeader::Close => encode::header_unchecked(wbuf, b"connection", b"close"),
            ConnectionHeader::KeepAlive => {
                encode::header_unchecked(wbuf, b"connection", b"keep-alive")
            }
        }
        encode::end_head(wbuf);
        self.resp_framing = framing;
        let declared = match framing {
            ResponseFraming::Length(n) => Some(n),
            _ => None,
        };
        self.resp
            .head_sent(framing == ResponseFraming::NoBody, declared);
        framing
    }

    /// Writes body bytes of a started response.
    pub(crate) async fn write_body(&mut self, data: &[u8]) -> Result<(), Error> {
        match self.resp.before_write(data.len() as u64) {
            Ok(Write::Send { .. }) if !data.is_empty() => {}
            // HEAD, 204, 304: there is no body on the wire; the bytes are dropped.
            Ok(_) => return Ok(()),
            Err(misuse) => return Err(self.refuse(misuse)),
        }
        let framing = self.resp_framing;
        let chunked = framing == ResponseFraming::Chunked;
        let chunk_header = chunked.then(|| ChunkHeader::new(data.len() as u64));
        let limit = self.shared.config.write_coalesce_limit;
        if self.io.wbuf.len() + data.len() <= limit {
            // COPY: a small body joins the head (and other pipelined responses) in the write
            // buffer, so that they leave in one system call.
            if let Some(h) = &chunk_header {
                self.io.wbuf.extend_from_slice(h.as_bytes());
            }
            self.io.wbuf.extend_from_slice(data);
            if chunked {
                self.io.wbuf.extend_from_slice(encode::CHUNK_END);
            }
            return Ok(());
        }
        if let Some(h) = &chunk_header {
            self.io.wbuf.extend_from_slice(h.as_bytes());
        }
        let end: &[u8] = if chunked { encode::CHUNK_END } else { &[] };
        self.write_out(&[data, end]).await
    }

    /// Ends the body: the last chunk for chunked framing; checks a `Content-Length` body is
    /// complete (if not, the response fails and the connection will close).
    pub(crate) fn finish_body(&mut self, trailers: Option<&http::HeaderMap>) -> Result<(), Error> {
        match self.resp.before_finish() {
            Ok(Finish::End { no_body }) => {
                if !no_body && self.resp_framing == ResponseFraming::Chunked {
                    match trailers {
                        Some(fields) => self.write_last_chunk_with(fields),
                        None => self.io.wbuf.extend_from_slice(encode::LAST_CHUNK),
                    }
                }
                self.resp.complete();
                Ok(())
            }
            Ok(Finish::Done) => Ok(()),
            Err(misuse) => Err(self.refuse(misuse)),
        }
    }

    /// The last chunk with a trailer section (RFC 9112 §7.1.2). Fields that must not be
    /// trailers (framing, connection management) and invalid ones are left out: the body is
    /// already sent, so a bad field cannot fail the response.
    fn write_last_chunk_with(&mut self, fields: &http::HeaderMap) {
        self.io.wbuf.extend_from_slice(b"0\r\n");
        for (name, value) in fields {
            if !crate::exchange::backend::allowed_in_trailers(name) {
                continue;
            }
            let mark = self.io.wbuf.len();
            if encode::header(
                &mut self.io.wbuf,
                name.as_str().as_bytes(),
                value.as_bytes(),
            )
            .is_err()
            {
                self.io.wbuf.truncate(mark);
            }
        }
        self.io.wbuf.extend_from_slice(b"\r\n");
    }

    /// The handler misused the response API: a wrong body length fails the response (the
    /// client must not take it for complete); other misuses only report.
    fn refuse(&mut self, misuse: Misuse) -> Error {
        if matches!(misuse, Misuse::BodyTooLong | Misuse::BodyTooShort) {
            self.fail_response();
        }
        Error::invalid_response(misuse)
    }

    /// Sends `len` bytes of `file` from `offset` as the body: `sendfile` on plain sockets on
    /// Linux (no user-space copy), else read into the write buffer in pieces.
    pub(crate) async fn send_file(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        match self.resp.before_file(len) {
            // HEAD, 204, 304: the head is all there is.
            Ok(FileSend::Skip) => return Ok(()),
            Ok(FileSend::Send) => {}
            Err(misuse) => return Err(Error::invalid_response(misuse)),
        }
        let limit = self.shared.config.write_coalesce_limit as u64;
        if (self.io.wbuf.len() as u64).saturating_add(len) <= limit {
            // COPY: a small file joins its head (and other pipelined responses) in the write
            // buffer, as a small body from memory does: one write, one TCP segment, where the
            // head's write and then `sendfile` send two and wake the client twice.
            self.file_into_write_buffer(file, offset, len as usize)?;
            self.resp.sent(len);
        } else {
            self.write_out(&[]).await?;
            self.file_pieces(file, offset, len).await?;
        }
        self.resp.complete();
        Ok(())
    }

    /// Appends `len` bytes of `file` from `offset` to the write buffer. A file that ends early
    /// (truncated since its length was taken) or cannot be read fails the response; the head
    /// already buffered then leaves alone, before the connection closes.
    fn file_into_write_buffer(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
    ) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        let start = self.io.wbuf.len();
        self.io.wbuf.resize(start + len, 0);
        if let Err(e) = file.read_exact_at(&mut self.io.wbuf[start..], offset) {
            self.io.wbuf.truncate(start);
            self.fail_response();
            return Err(Error::from(e));
        }
        Ok(())
    }

    /// Sends `len` bytes of `file` from `offset` as body bytes of a body that stays open: one
    /// chunk under chunked framing (its header, the file's bytes by `sendfile` or through the
    /// write buffer, its end), counted against a declared length otherwise.
    pub(crate) async fn send_file_in_body(
        &mut self,
        file: &File,
        offset: u64,
        len: u64,
    ) -> Result<(), Error> {
        match self.resp.before_write(len) {
            Ok(Write::Send { .. }) if len > 0 => {}
            // HEAD, 204, 304: nothing goes on the wire.
            Ok(_) => return Ok(()),
            Err(misuse) => return Err(self.refuse(misuse)),
        }
        let chunked = self.resp_framing == ResponseFraming::Chunked;
        if chunked {
            let header = ChunkHeader::new(len);
            self.io.wbuf.extend_from_slice(header.as_bytes());
        }
        // What is buffered (earlier body bytes, the chunk header) leaves first; the pieces
        // below start from an empty write buffer.
        self.write_out(&[]).await?;
        self.file_pieces(file, offset, len).await?;
        if chunked {
            self.io.wbuf.extend_from_slice(encode::CHUNK_END);
        }
        Ok(())
    }

    /// Writes `len` bytes of `file` from `offset` to the socket, the write buffer being empty:
    /// `sendfile` on plain sockets on Linux, else read into the write buffer in pieces. A file
    /// that ends early fails the response.
    async fn file_pieces(&mut self, file: &File, offset: u64, len: u64) -> Result<(), Error> {
        let mut sent = 0u64;
        while sent < len {
            let piece = (len - sent).min(8 * 1024 * 1024) as usize;
            let n = if zero_copy::can_sendfile(&self.io.stream) {
                let started = tokio::time::Instant::now();
                let deadline = self.io.write_clock.deadline(self.write_rate(), started);
                let (stream, timer) = self.io.stream_and_timer();
                let send = zero_copy::sendfile(stream, file, offset + sent, piece);
                let sent_now = super::io::Io::timed(timer, deadline, send).await;
                let moved = match &sent_now {
                    Some(Ok(n)) => *n,
                    _ => 0,
                };
                self.io.write_clock.record(moved, started);
                match sent_now {
                    Some(Ok(n)) => n,
                    Some(Err(e)) => {
                        self.fail_response();
                        return Err(Error::from_conn_io(e));
                    }
                    None => {
                        self.fail_response();
                        return Err(Error::timeout());
                    }
                }
            } else {
                self.copy_file_piece(file, offset + sent, piece.min(64 * 1024))
                    .await?
            };
            if n == 0 {
                // The file is shorter than announced (truncated while being sent).
                self.fail_response();
                return Err(Error::from(std::io::Error::from(
                    std::io::ErrorKind::UnexpectedEof,
                )));
            }
            sent += n as u64;
            self.resp.sent(n as u64);
        }
        Ok(())
    }

    /// Forwards `len` body bytes read from the socket `src`: on a plain connection with
    /// `splice` through the connection's pipe (the bytes never enter user space), else through
    /// the write buffer. A `src` that ends early or stays silent for `src_timeout` fails the
    /// response (the connection closes: the client sees a cut body).
    pub(crate) async fn forward_body(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        // Counted as the pieces go out (`ResponseLifecycle::sent`): a client may leave mid-way.
        match self.resp.before_forward(len) {
            Ok(Write::Send { .. }) if len > 0 => {}
            Ok(_) => return Ok(()),
            Err(misuse) => return Err(self.refuse(misuse)),
        }
        let chunked = self.resp_framing == ResponseFraming::Chunked;
        if chunked {
            let header = ChunkHeader::new(len);
            self.io.wbuf.extend_from_slice(header.as_bytes());
        }
        if self.pipe.is_none() && zero_copy::can_splice(&self.io.stream) {
            self.pipe = zero_copy::Pipe::new().ok();
        }
        let moved = match self.pipe.take() {
            Some(pipe) => {
                // The head (and anything buffered) leaves first.
                self.write_out(&[]).await?;
                let moved = self.splice_pieces(src, &pipe, len, src_timeout).await;
                if moved.is_ok() {
                    // Empty again: kept for the connection's next splice.
                    self.pipe = Some(pipe);
                }
                moved
            }
            None => self.copy_pieces(src, len, src_timeout).await,
        };
        if let Err(e) = moved {
            self.fail_response();
            return Err(e);
        }
        if chunked {
            self.io.wbuf.extend_from_slice(encode::CHUNK_END);
        }
        Ok(())
    }

    /// `forward_body` on a plain socket: `src` → pipes → client, both at once through a ring
    /// of [`FORWARD_PIPES`] pipes: empty ones are filled from `src` while full ones drain to
    /// the client in order, so the store's socket is read while the client's is written,
    /// within one task, and a wake-up moves as much as the sockets hold. A pipe is filled only
    /// when empty: an `EAGAIN` from the fill is then always the socket's (a pipe out of slots
    /// would also answer `EAGAIN`, and waiting for the socket's next readiness could then wait
    /// for ever). The connection's pipe is empty again when this returns `Ok`.
    async fn splice_pieces(
        &mut self,
        src: &tokio::net::TcpStream,
        pipe: &zero_copy::Pipe,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        enum Step {
            In(std::io::Result<usize>),
            Out(std::io::Result<usize>),
        }
        // ALLOCATION: the ring's other pipes (two descriptors each) per forwarded body, only
        // for bodies large enough to be forwarded (the caller decides). Without them (out of
        // descriptors), the body is copied instead.
        let made = || -> std::io::Result<[zero_copy::Pipe; FORWARD_PIPES - 1]> {
            Ok([
                zero_copy::Pipe::new()?,
                zero_copy::Pipe::new()?,
                zero_copy::Pipe::new()?,
            ])
        };
        let Ok(extra) = made() else {
            return self.copy_pieces(src, len, src_timeout).await;
        };
        let ring: [&zero_copy::Pipe; FORWARD_PIPES] = [pipe, &extra[0], &extra[1], &extra[2]];
        // Bytes in each pipe; the next to drain and the next to fill (full when it holds any).
        let mut held = [0usize; FORWARD_PIPES];
        let (mut head, mut tail) = (0usize, 0usize);
        let mut left = len;
        let mut src_seen = tokio::time::Instant::now();
        while left > 0 || held[head] > 0 {
            let want_in = left > 0 && held[tail] == 0;
            let want_out = held[head] > 0;
            let (fill, drain) = (ring[tail], ring[head]);
            let room = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(fill.capacity());
            let draining = held[head];
            let started = tokio::time::Instant::now();
            let write_deadline = if want_out {
                self.io.write_clock.deadline(self.write_rate(), started)
            } else {
                None
            };
            let src_deadline = want_in.then(|| src_seen + src_timeout);
            let deadline = match (write_deadline, src_deadline) {
                (Some(w), Some(s)) => Some(w.min(s)),
                (w, s) => w.or(s),
            };
            let (stream, timer) = self.io.stream_and_timer();
            let step = async {
                tokio::select! {
                    biased;
                    r = zero_copy::splice_pipe_to_socket(stream, drain, draining), if want_out => {
                        Step::Out(r)
                    }
                    r = zero_copy::splice_socket_to_pipe(src, fill, room), if want_in => {
                        Step::In(r)
                    }
                }
            };
            match super::io::Io::timed(timer, deadline, step).await {
                None => return Err(Error::timeout()),
                Some(Step::In(Ok(0))) => {
                    return Err(Error::from(std::io::Error::from(
                        std::io::ErrorKind::UnexpectedEof,
                    )));
                }
                Some(Step::In(Ok(n))) => {
                    left -= n as u64;
                    held[tail] = n;
                    tail = (tail + 1) % FORWARD_PIPES;
                    src_seen = tokio::time::Instant::now();
                }
                Some(Step::In(Err(e))) => return Err(Error::from(e)),
                Some(Step::Out(Ok(0))) => {
                    return Err(Error::from_conn_io(std::io::ErrorKind::WriteZero.into()));
                }
                Some(Step::Out(Ok(n))) => {
                    self.resp.sent(n as u64);
                    held[head] -= n;
                    if held[head] == 0 {
                        head = (head + 1) % FORWARD_PIPES;
                    }
                    self.io.write_clock.record(n, started);
                }
                Some(Step::Out(Err(e))) => return Err(Error::from_conn_io(e)),
            }
        }
        Ok(())
    }

    /// `forward_body` where `splice` cannot be used (TLS, other platforms): pieces of up to
    /// 256 KiB read from `src` into the write buffer and written from there.
    async fn copy_pieces(
        &mut self,
        src: &tokio::net::TcpStream,
        len: u64,
        src_timeout: std::time::Duration,
    ) -> Result<(), Error> {
        let mut left = len;
        while left > 0 {
            let start = self.io.wbuf.len();
            let piece = usize::try_from(left).unwrap_or(usize::MAX).min(256 * 1024);
            // COPY: the bytes pass through user space here (the write buffer, grown to a
            // piece once per connection), as TLS needs them to.
            self.io.wbuf.resize(start + piece, 0);
            let deadline = tokio::time::Instant::now() + src_timeout;
            let read = async {
                loop {
                    src.readable().await?;
                    match src.try_read(&mut self.io.wbuf[start..]) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        other => return other,
                    }
                }
            };
            let got = match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(0)) => Err(Error::from(std::io::Error::from(
                    std::io::ErrorKind::UnexpectedEof,
                ))),
                Ok(Ok(n)) => Ok(n),
                Ok(Err(e)) => Err(Error::from(e)),
                Err(_) => Err(Error::timeout()),
            };
            let n = match got {
                Ok(n) => n,
                Err(e) => {
                    self.io.wbuf.truncate(start);
                    return Err(e);
                }
            };
            self.io.wbuf.truncate(start + n);
            self.write_out(&[]).await?;
            self.resp.sent(n as u64);
            left -= n as u64;
        }
        Ok(())
    }

    /// The fallback of `send_file`: one piece through the (empty) write buffer.
    async fn copy_file_piece(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
    ) -> Result<usize, Error> {
        use std::os::unix::fs::FileExt;
        let wbuf = &mut self.io.wbuf;
        wbuf.resize(len, 0);
        let n = match file.read_at(wbuf, offset) {
            Ok(n) => n,
            Err(e) => {
                wbuf.clear();
                self.fail_response();
                return Err(Error::from(e));
            }
        };
        wbuf.truncate(n);
        self.write_out(&[]).await?;
        Ok(n)
    }

    /// Sends a 1xx response now (100, 103, ...). Ignored for HTTP/1.0 clients, which must not
    /// receive them.
    pub(crate) async fn send_informational(
        &mut self,
        status: StatusCode,
        headers: &[(&str, &[u8])],
    ) -> Result<(), Error> {
        self.resp
            .check_informational(status)
            .map_err(Error::invalid_response)?;
        if self.head.version() == Version::HTTP_10 {
            return Ok(());
        }
        let mark = self.io.wbuf.len();
        encode::status_line(&mut self.io.wbuf, status);
        for (name, value) in headers {
            if encode::header(&mut self.io.wbuf, name.as_bytes(), value).is_err() {
                self.io.wbuf.truncate(mark);
                return Err(Error::invalid_response(Misuse::InvalidHeader));
            }
        }
        encode::end_head(&mut self.io.wbuf);
        if status == StatusCode::CONTINUE {
            self.body.policy.note_continue_sent();
        }
        self.write_out(&[]).await
    }

    /// Flushes what is buffered.
    pub(crate) async fn flush_response(&mut self) -> Result<(), Error> {
        if self.io.wbuf.is_empty() {
            Ok(())
        } else {
            self.write_out(&[]).await
        }
    }

    /// Writes the write buffer and `tail` now, under the response data rate.
    async fn write_out(&mut self, tail: &[&[u8]]) -> Result<(), Error> {
        match self.io.write_all(tail, self.write_rate()).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.fail_response();
                Err(Error::timeout())
            }
            Err(e) => {
                self.fail_response();
                Err(Error::from_conn_io(e))
            }
        }
    }

    fn fail_response(&mut self) {
        self.resp.fail();
        self.persistence.close();
    }
}
