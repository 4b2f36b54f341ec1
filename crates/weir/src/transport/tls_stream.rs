//! [`TlsStream`]: a server-side TLS connection after the handshake, with weir's own record
//! layer: records decrypted in place in weir's read buffer, plaintext copied once.
//!
//! rustls drives the handshake (`tls_handshake`, on its unbuffered API) and keeps the secrets
//! (a `rustls::kernel::KernelConnection`, the API made for kTLS: it derives the next keys on a
//! TLS 1.3 key update). The record protection itself is the negotiated provider's (its
//! `MessageDecrypter` / `MessageEncrypter`, built from the extracted keys): weir only frames
//! records, counts sequence numbers and handles the few messages that may follow a handshake.
//!
//! Why not rustls's own read path: in rustls 0.23 both its buffered connection and its
//! unbuffered `ReadTraffic` copy every record's plaintext into a new `Vec` (`received_plaintext`)
//! before the caller copies it again. That allocation per record is also what made the copy
//! slow on some CPUs: glibc's `rep movsb` runs many times slower when the destination lies a few
//! bytes past the source modulo 4 KiB, which is where the heap put the `Vec` right behind
//! rustls's record buffer (docs/archive/BENCHMARKS-history.md, "HTTP/2 over TLS uploads: the
//! cause").
//!
//! Reads ([`RecordBuf`], `tls_records.rs`): one `recv` of up to 256 KiB of ciphertext into a
//! buffer the connection keeps; each record decrypted where it lies; its plaintext copied into
//! the caller's buffer (COPY: the only one), as many records per call as the caller has room
//! for and ciphertext is at hand. No allocation per record.
//!
//! Writes: plaintext from the caller's slices is sealed into records of at most 16 KiB
//! (COPY and ALLOCATION, inside the provider: each record's plaintext into the `Vec` it is
//! encrypted in), queued, and sent with one `writev` of up to 64 records per call. What the
//! socket does not take waits in the queue; it goes out on the next write, flush or shutdown,
//! and a read sends it too (a response's tail must not wait for the client's next request).
//!
//! What follows the handshake, as rustls would do it: `close_notify` is the end of the stream
//! (reads return 0 after it, the write side stays open); an end of the socket without it is
//! `UnexpectedEof`; any other alert, a record that fails authentication, or a malformed one is
//! an error (`InvalidData`), and the bad record is answered with a fatal alert. A TLS 1.3
//! `KeyUpdate` installs the client's next key, and one that asks for it is answered with ours;
//! weir also updates its own key before the cipher suite's confidentiality limit. A TLS 1.2
//! client's renegotiation attempt is refused with a `no_renegotiation` warning. Handshake
//! messages must lie in one record each (real clients' `KeyUpdate` does).
//!
//! Answers to the client's records are bounded, since a client need not read them: requests for
//! a key update while our last record was already one get no second answer (RFC 8446 §4.6.3),
//! a third renegotiation attempt ends the connection, and while the queue is past its limit
//! with an answer in it, no further record is read until the client takes it.

use super::tls_records::{Opened, RecordBuf, RecordError};
use super::{PeerAddr, Stream};
use rustls::crypto::cipher::{
    AeadKey, Iv, MessageDecrypter, MessageEncrypter, OutboundChunks, OutboundPlainMessage,
};
use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;
use rustls::{
    AlertDescription, ConnectionTrafficSecrets, ContentType, ExtractedSecrets, ProtocolVersion,
    SupportedCipherSuite,
};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most plaintext in one record (RFC 8446 §5.1).
const MAX_FRAGMENT: usize = 16384;

/// Sealed bytes queued before a write waits for the socket.
const TX_MAX: usize = 256 * 1024;

/// The most records in one `writev`, and the most caller slices sealed in one write.
const MAX_IOV: usize = 64;

/// Records in a row that carry no application data (alerts, key updates, empty records)
/// tolerated before the client is taken for hostile.
const MAX_IDLE_RECORDS: u32 = 64;

/// TLS 1.2 renegotiation attempts refused with a warning on one connection; the next one is
/// answered with a fatal alert. A real client that tries gives up after the first refusal; one
/// that keeps trying inside a request body (where application data resets the idle count) is
/// taken for hostile.
const MAX_RENEGOTIATION_ATTEMPTS: u32 = 2;

/// An established TLS connection (server side), over TCP or a Unix socket.
pub struct TlsStream {
    io: Stream,
    rx: RecordBuf,
    keys: Keys,
    tx: TxQueue,
    read: ReadState,
    /// A socket error met after some plaintext was handed out, for the next read.
    deferred: Option<io::Error>,
    sent_close_notify: bool,
    alpn: Option<Vec<u8>>,
    idle_records: u32,
    renegotiation_attempts: u32,
    /// Our last record was a `KeyUpdate`: a client's request for one is already answered (RFC
    /// 8446 §4.6.3: a side that receives several while silent answers once). So a client that
    /// never reads cannot make us queue an answer per request.
    key_updated_since_data: bool,
    /// The read path queued an answer (a `KeyUpdate`, a warning) that has not left yet: while
    /// the queue is past [`TX_MAX`], reading stops until the client takes it.
    answer_queued: bool,
}

impl fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsStream")
            .field("io", &self.io)
            .field("version", &self.keys.version)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum ReadState {
    Open,
    /// The client sent `close_notify`: the end of its stream.
    Closed,
    /// The socket ended without `close_notify`, or the client broke the protocol: every read
    /// fails so.
    Failed(io::ErrorKind, String),
}

/// The record protection in both directions, and rustls's secrets behind it.
struct Keys {
    kernel: KernelConnection<ServerConnectionData>,
    suite: SupportedCipherSuite,
    version: ProtocolVersion,
    open: Box<dyn MessageDecrypter>,
    rx_seq: u64,
    seal: Box<dyn MessageEncrypter>,
    tx_seq: u64,
}

impl Keys {
    fn new(
        kernel: KernelConnection<ServerConnectionData>,
        secrets: ExtractedSecrets,
    ) -> Result<Self, rustls::Error> {
        let suite = kernel.negotiated_cipher_suite();
        let version = kernel.protocol_version();
        let ((tx_seq, tx), (rx_seq, rx)) = (secrets.tx, secrets.rx);
        Ok(Self {
            open: decrypter(suite, rx)?,
            seal: encrypter(suite, tx)?,
            kernel,
            suite,
            version,
            rx_seq,
            tx_seq,
        })
    }

    fn tls13(&self) -> bool {
        self.version == ProtocolVersion::TLSv1_3
    }

    fn confidentiality_limit(&self) -> u64 {
        match self.suite {
            SupportedCipherSuite::Tls13(s) => s.common.confidentiality_limit,
            SupportedCipherSuite::Tls12(s) => s.common.confidentiality_limit,
        }
    }
}

fn key_and_iv(secrets: ConnectionTrafficSecrets) -> Result<(AeadKey, Iv), rustls::Error> {
    match secrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv }
        | ConnectionTrafficSecrets::Aes256Gcm { key, iv }
        | ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => Ok((key, iv)),
        _ => Err(rustls::Error::General(
            "cipher suite not supported by weir's record layer".into(),
        )),
    }
}

fn decrypter(
    suite: SupportedCipherSuite,
    secrets: ConnectionTrafficSecrets,
) -> Result<Box<dyn MessageDecrypter>, rustls::Error> {
    let (key, iv) = key_and_iv(secrets)?;
    Ok(match suite {
        SupportedCipherSuite::Tls13(s) => s.aead_alg.decrypter(key, iv),
        SupportedCipherSuite::Tls12(s) => {
            // The extracted IV is the fixed part then the explicit nonce's start (TLS 1.2
            // AES-GCM: 4 + 8 bytes; ChaCha20: 12 + 0); a decrypter takes the fixed part.
            let fixed = s.aead_alg.key_block_shape().fixed_iv_len;
            s.aead_alg.decrypter(key, &iv.as_ref()[..fixed])
        }
    })
}

fn encrypter(
    suite: SupportedCipherSuite,
    secrets: ConnectionTrafficSecrets,
) -> Result<Box<dyn MessageEncrypter>, rustls::Error> {
    let (key, iv) = key_and_iv(secrets)?;
    Ok(match suite {
        SupportedCipherSuite::Tls13(s) => s.aead_alg.encrypter(key, iv),
        SupportedCipherSuite::Tls12(s) => {
            let shape = s.aead_alg.key_block_shape();
            let (fixed, explicit) = iv.as_ref().split_at(shape.fixed_iv_len);
            s.aead_alg
                .encrypter(key, fixed, &explicit[..shape.explicit_nonce_len])
        }
    })
}

/// A protocol error from the client: the alert to answer with (if any) and what to report.
struct Fault {
    alert: Option<AlertDescription>,
    what: String,
}

impl Fault {
    fn new(alert: impl Into<Option<AlertDescription>>, what: impl Into<String>) -> Self {
        Self {
            alert: alert.into(),
            what: what.into(),
        }
    }
}

impl From<rustls::Error> for Fault {
    fn from(e: rustls::Error) -> Self {
        Self::new(AlertDescription::InternalError, e.to_string())
    }
}

impl TlsStream {
    /// The stream after a handshake on `io`: `rx` holds what the client sent after it.
    pub(super) fn new(
        io: Stream,
        rx: RecordBuf,
        alpn: Option<Vec<u8>>,
        kernel: KernelConnection<ServerConnectionData>,
        secrets: ExtractedSecrets,
    ) -> Result<Self, rustls::Error> {
        Ok(Self {
            io,
            rx,
            keys: Keys::new(kernel, secrets)?,
            tx: TxQueue::default(),
            read: ReadState::Open,
            deferred: None,
            sent_close_notify: false,
            alpn,
            idle_records: 0,
            renegotiation_attempts: 0,
            key_updated_since_data: false,
            answer_queued: false,
        })
    }

    /// The client's address.
    pub fn peer_addr(&self) -> PeerAddr {
        self.io.peer_addr()
    }

    /// The protocol the client chose by ALPN, if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.alpn.as_deref()
    }

    /// The negotiated TLS version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.keys.version
    }

    /// Waits until a read may find something: at once when anything is at hand (plaintext,
    /// ciphertext, a deferred error, sealed records the socket has not taken: a read sends
    /// them), else until the socket is readable. What an idle HTTP/1.1 connection waits on
    /// after giving its buffers back (`h1::conn`).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        if !self.rx.plaintext().is_empty()
            || self.rx.has_ciphertext()
            || self.deferred.is_some()
            || !self.tx.is_empty()
        {
            return Ok(());
        }
        match &self.io {
            // As `Stream::readable`: one waker slot, not a waiter list.
            Stream::Tcp(s) => std::future::poll_fn(|cx| s.poll_read_ready(cx)).await,
            Stream::Unix(s) => std::future::poll_fn(|cx| s.poll_read_ready(cx)).await,
            // Never nested: the handshake wraps a plain stream.
            Stream::Tls(_) => Ok(()),
        }
    }

    /// Decrypts the next record at hand and acts on it; `false` when no whole record is.
    fn open_record(&mut self) -> Result<bool, Fault> {
        let seq = self.keys.rx_seq;
        let tls13 = self.keys.tls13();
        let opened = match self.rx.open_next(&mut *self.keys.open, seq, tls13) {
            Ok(None) => return Ok(false),
            Ok(Some(opened)) => opened,
            Err(RecordError::Overflow) => {
                return Err(Fault::new(
                    AlertDescription::RecordOverflow,
                    "record too large",
                ));
            }
            Err(RecordError::OuterType) => {
                return Err(Fault::new(
                    AlertDescription::UnexpectedMessage,
                    "TLS 1.3 record of a type other than application data",
                ));
            }
            Err(RecordError::Header) => {
                return Err(Fault::new(
                    AlertDescription::DecodeError,
                    "malformed record header",
                ));
            }
            Err(RecordError::Decrypt(e)) => {
                let alert = match e {
                    rustls::Error::PeerSentOversizedRecord => AlertDescription::RecordOverflow,
                    rustls::Error::DecryptError => AlertDescription::BadRecordMac,
                    _ => AlertDescription::DecodeError,
                };
                return Err(Fault::new(alert, e.to_string()));
            }
        };
        self.keys.rx_seq += 1;
        let Opened { typ, range } = opened;
        match typ {
            ContentType::ApplicationData => {
                if range.is_empty() {
                    self.idle()?;
                } else {
                    self.idle_records = 0;
                }
                self.rx.set_plaintext(range);
            }
            ContentType::Alert => {
                let &[level, description] = self.rx.bytes(range) else {
                    return Err(Fault::new(AlertDescription::DecodeError, "malformed alert"));
                };
                match AlertDescription::from(description) {
                    AlertDescription::CloseNotify => {
                        // Nothing after it counts (RFC 8446 §6.1).
                        self.read = ReadState::Closed;
                        self.rx.drop_ciphertext();
                    }
                    AlertDescription::UserCanceled => self.idle()?,
                    // TLS 1.2 warnings are not fatal; in TLS 1.3 every other alert is.
                    _ if level == 1 && !self.keys.tls13() => self.idle()?,
                    other => {
                        return Err(Fault::new(None, format!("received fatal alert: {other:?}")));
                    }
                }
            }
            ContentType::Handshake => self.handshake_message(range)?,
            other => {
                return Err(Fault::new(
                    AlertDescription::UnexpectedMessage,
                    format!("unexpected {other:?} record after the handshake"),
                ));
            }
        }
        Ok(true)
    }

    /// A handshake message after the handshake: a TLS 1.3 `KeyUpdate`, or a TLS 1.2 client's
    /// renegotiation attempt.
    fn handshake_message(&mut self, range: std::ops::Range<usize>) -> Result<(), Fault> {
        let unexpected = |what: &str| Fault::new(AlertDescription::UnexpectedMessage, what);
        let message = self.rx.bytes(range);
        let [typ, a, b, c, body @ ..] = message else {
            return Err(unexpected("handshake message split across records"));
        };
        if u32::from_be_bytes([0, *a, *b, *c]) as usize != body.len() {
            return Err(unexpected(
                "handshake message split across or joined in records",
            ));
        }
        match (*typ, body) {
            (24, &[requested]) if self.keys.tls13() => {
                let requested = match requested {
                    0 => false,
                    1 => true,
                    _ => {
                        return Err(Fault::new(
                            AlertDescription::IllegalParameter,
                            "malformed KeyUpdate",
                        ));
                    }
                };
                self.idle()?;
                let (seq, secrets) = self.keys.kernel.update_rx_secret()?;
                self.keys.open = decrypter(self.keys.suite, secrets)?;
                self.keys.rx_seq = seq;
                if requested && !self.sent_close_notify && !self.key_updated_since_data {
                    self.update_tx_key()?;
                    self.answer_queued = true;
                }
                Ok(())
            }
            (1, _) if !self.keys.tls13() => {
                self.idle()?;
                self.renegotiation_attempts += 1;
                if self.renegotiation_attempts > MAX_RENEGOTIATION_ATTEMPTS {
                    return Err(Fault::new(
                        AlertDescription::HandshakeFailure,
                        "renegotiation attempted again after it was refused",
                    ));
                }
                self.seal_alert(1, AlertDescription::NoRenegotiation)?;
                self.answer_queued = true;
                Ok(())
            }
            _ => Err(unexpected(
                "unexpected handshake message after the handshake",
            )),
        }
    }

    /// One more record without application data in a row.
    fn idle(&mut self) -> Result<(), Fault> {
        self.idle_records += 1;
        if self.idle_records > MAX_IDLE_RECORDS {
            return Err(Fault::new(
                AlertDescription::UnexpectedMessage,
                "too many records without application data",
            ));
        }
        Ok(())
    }

    /// Sends a TLS 1.3 `KeyUpdate` (not asking for the client's) and seals with the next key
    /// from then on.
    fn update_tx_key(&mut self) -> Result<(), rustls::Error> {
        self.seal_record(
            ContentType::Handshake,
            OutboundChunks::Single(&[24, 0, 0, 1, 0]),
        )?;
        let (seq, secrets) = self.keys.kernel.update_tx_secret()?;
        self.keys.seal = encrypter(self.keys.suite, secrets)?;
        self.keys.tx_seq = seq;
        self.key_updated_since_data = true;
        Ok(())
    }

    fn seal_alert(&mut self, level: u8, alert: AlertDescription) -> Result<(), rustls::Error> {
        let bytes = [level, u8::from(alert)];
        self.seal_record(ContentType::Alert, OutboundChunks::Single(&bytes))
    }

    /// Seals one record into the send queue.
    fn seal_record(
        &mut self,
        typ: ContentType,
        payload: OutboundChunks<'_>,
    ) -> Result<(), rustls::Error> {
        if self.keys.tx_seq >= self.keys.confidentiality_limit() && typ != ContentType::Handshake {
            if !self.keys.tls13() {
                return Err(rustls::Error::EncryptError);
            }
            self.update_tx_key()?;
        }
        let message = OutboundPlainMessage {
            typ,
            version: ProtocolVersion::TLSv1_2,
            payload,
        };
        // ALLOCATION and COPY (the provider's): the plaintext into the record's own `Vec`,
        // encrypted there.
        let sealed = self.keys.seal.encrypt(message, self.keys.tx_seq)?;
        self.keys.tx_seq += 1;
        if typ == ContentType::ApplicationData {
            self.key_updated_since_data = false;
        }
        self.tx.push(sealed.encode());
        Ok(())
    }

    /// Ends reading with `fault`, answering with its alert if it has one (best effort: the
    /// connection is over).
    fn fail(&mut self, cx: &mut Context<'_>, fault: Fault) -> io::Error {
        if let Some(alert) = fault.alert
            && !self.sent_close_notify
            && self.seal_alert(2, alert).is_ok()
        {
            self.sent_close_notify = true;
            let _ = self.poll_send(cx);
        }
        self.rx.drop_ciphertext();
        self.read = ReadState::Failed(io::ErrorKind::InvalidData, fault.what.clone());
        io::Error::new(io::ErrorKind::InvalidData, fault.what)
    }

    /// Sends the queue; `Ready(Ok)` once it is empty.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.tx.is_empty() {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let count = self.tx.slices(&mut slices);
            let n = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..count]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.tx.advance(n);
        }
        self.answer_queued = false;
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for TlsStream {
    /// Decrypts records into `buf` until it is full or no more ciphertext is at hand.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.tx.is_empty() {
            // Sealed bytes the socket did not take before: they go out now (a write error
            // shows on the next write).
            let _ = this.poll_send(cx);
        }
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let start = out.filled().len();
        let produced = |out: &ReadBuf<'_>| out.filled().len() > start;
        loop {
            let plain = this.rx.plaintext();
            if !plain.is_empty() {
                let n = plain.len().min(out.remaining());
                // COPY: the record's plaintext, from where it was decrypted into the caller's
                // buffer (the only copy of it).
                out.put_slice(&plain[..n]);
                this.rx.consume(n);
                if out.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            if let Some(e) = this.deferred.take() {
                return Poll::Ready(Err(e));
            }
            match &this.read {
                ReadState::Open => {}
                ReadState::Closed => return Poll::Ready(Ok(())),
                ReadState::Failed(..) if produced(out) => return Poll::Ready(Ok(())),
                ReadState::Failed(kind, what) => {
                    return Poll::Ready(Err(io::Error::new(*kind, what.clone())));
                }
            }
            if this.answer_queued && this.tx.len() >= TX_MAX {
                // Answers to the client's records are owed and the client does not take them:
                // read no further records (each could owe another) until it does.
                match this.poll_send(cx) {
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(e)) if produced(out) => {
                        this.deferred = Some(e);
                        return Poll::Ready(Ok(()));
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending if produced(out) => return Poll::Ready(Ok(())),
                    Poll::Pending => return Poll::Pending,
                }
            }
            match this.open_record() {
                Ok(true) => {
                    if !this.tx.is_empty() {
                        // A key update's answer or a warning.
                        let _ = this.poll_send(cx);
                    }
                    continue;
                }
                Ok(false) => {}
                Err(fault) => {
                    let e = this.fail(cx, fault);
                    if produced(out) {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Ready(Err(e));
                }
            }
            // No whole record at hand: receive more ciphertext.
            let mut fill = ReadBuf::new(this.rx.spare());
            match Pin::new(&mut this.io).poll_read(cx, &mut fill) {
                Poll::Ready(Ok(())) => {
                    let n = fill.filled().len();
                    this.rx.filled(n);
                    if n == 0 {
                        this.rx.drop_ciphertext();
                        this.read = ReadState::Failed(
                            io::ErrorKind::UnexpectedEof,
                            "peer closed connection without sending TLS close_notify".into(),
                        );
                    }
                }
                Poll::Ready(Err(e)) if produced(out) => {
                    this.deferred = Some(e);
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    // The client has gone quiet: an idle connection keeps no buffer.
                    this.rx.nothing_received();
                    if produced(out) {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    /// Seals up to 256 KiB of `bufs` into records, then sends what the socket takes at once.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.sent_close_notify {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "TLS connection closed for writing",
            )));
        }
        if this.tx.len() >= TX_MAX {
            ready!(this.poll_send(cx))?;
        }
        let mut parts: [&[u8]; MAX_IOV] = [&[]; MAX_IOV];
        let mut count = 0;
        let mut total = 0;
        for buf in bufs.iter().filter(|b| !b.is_empty()).take(MAX_IOV) {
            parts[count] = buf;
            count += 1;
            total += buf.len();
        }
        let take = total.min(TX_MAX);
        if take == 0 {
            return Poll::Ready(Ok(0));
        }
        let mut at = 0;
        while at < take {
            let end = (at + MAX_FRAGMENT).min(take);
            let payload = if count == 1 {
                OutboundChunks::Single(&parts[0][at..end])
            } else {
                OutboundChunks::Multiple {
                    chunks: &parts[..count],
                    start: at,
                    end,
                }
            };
            this.seal_record(ContentType::ApplicationData, payload)
                .map_err(|e| io::Error::other(e.to_string()))?;
            at = end;
        }
        // What the socket does not take now stays queued (see the module docs).
        if let Poll::Ready(Err(e)) = this.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(take))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    /// Sends `close_notify`, then shuts the socket's write side. Reading goes on.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.sent_close_notify {
            this.sent_close_notify = true;
            this.seal_alert(1, AlertDescription::CloseNotify)
                .map_err(|e| io::Error::other(e.to_string()))?;
        }
        ready!(this.poll_send(cx))?;
        // A connection the client has already reset is done, not an error: tokio's sockets
        // answer its `ENOTCONN` so (tested: `a_shutdown_once_the_client_is_gone_is_done_...`).
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// Sealed records waiting for the socket, in order; `offset` bytes of the first are sent.
#[derive(Default)]
struct TxQueue {
    records: VecDeque<Vec<u8>>,
    offset: usize,
    len: usize,
}

impl TxQueue {
    fn push(&mut self, record: Vec<u8>) {
        self.len += record.len();
        self.records.push_back(record);
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Fills `slices` with the unsent bytes, in order; returns how many it filled.
    fn slices<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        let mut count = 0;
        for (i, record) in self.records.iter().enumerate().take(slices.len()) {
            let from = if i == 0 { self.offset } else { 0 };
            slices[i] = IoSlice::new(&record[from..]);
            count += 1;
        }
        count
    }

    fn advance(&mut self, mut n: usize) {
        self.len -= n;
        while n > 0 {
            let front = self.records.front().map_or(0, Vec::len) - self.offset;
            if n < front {
                self.offset += n;
                return;
            }
            n -= front;
            self.records.pop_front();
            self.offset = 0;
        }
    }
}

#[cfg(test)]
#[path = "tls_stream_tests.rs"]
mod tests;
