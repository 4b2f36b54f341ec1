//! The server side of the TLS handshake, driven through rustls's unbuffered API
//! (`UnbufferedServerConnection`) on weir's own buffers, then handed to weir's record layer
//! ([`TlsStream`]).
//!
//! rustls reads the client's flights in place from the connection's [`RecordBuf`] (the buffer
//! the stream keeps reading into afterwards, so bytes the client sent behind its `Finished` are
//! not lost) and encodes its own flights into a local `Vec`, written out with `write_all`.
//! Certificate choice (SNI, the reloadable resolver), ALPN, versions and cipher suites are all the
//! `ServerConfig`'s. Once the handshake is complete and nothing is left to send, the connection
//! becomes a `KernelConnection` and its traffic keys go to [`TlsStream`]; this needs
//! `ServerConfig::enable_secret_extraction`, which `TlsConfig` sets on its listener copies.
//!
//! A handshake that fails is answered with rustls's alert when it has one.

use super::Stream;
use super::tls_records::RecordBuf;
use super::tls_stream::TlsStream;
use rustls::ServerConfig;
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncodeTlsData};
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What to do after a state was handled (the state borrows the connection and the buffer, so
/// the I/O waits until it is dropped).
enum Next {
    /// Ask rustls again.
    Process,
    /// Send the encoded flight, then tell rustls it went.
    Transmit,
    /// Receive more from the client, unless the handshake is complete (then hand over to the
    /// record layer).
    Receive,
}

/// Runs the handshake on `io`. Errors: the client's (malformed, refused by rustls, closed) as
/// `InvalidData` or `UnexpectedEof`, or the socket's.
pub(super) async fn accept(mut io: Stream, config: Arc<ServerConfig>) -> io::Result<TlsStream> {
    let mut conn = UnbufferedServerConnection::new(config).map_err(invalid)?;
    let mut rx = RecordBuf::new();
    let mut out = Vec::new();
    let mut early = Vec::new();
    loop {
        let status = conn.process_tls_records(rx.ciphertext_mut());
        let discard = status.discard;
        let next = match status.state {
            Err(e) => {
                rx.discard(discard);
                send_alert(&mut conn, &mut rx, &mut io, &mut out).await;
                return Err(invalid(e));
            }
            Ok(ConnectionState::EncodeTlsData(mut encode)) => {
                encode_into(&mut encode, &mut out)?;
                Next::Process
            }
            Ok(ConnectionState::TransmitTlsData(transmit)) => {
                // Told now, sent right after the state is dropped: nothing in between can
                // observe the difference, and a failed send ends the handshake anyway.
                transmit.done();
                Next::Transmit
            }
            // `WriteTraffic` comes once the server may send (TLS 1.3: before the client's
            // `Finished`); whether the handshake is complete is asked below.
            Ok(ConnectionState::BlockedHandshake | ConnectionState::WriteTraffic(_)) => {
                Next::Receive
            }
            Ok(ConnectionState::ReadTraffic(mut records)) => {
                // Records behind the client's `Finished` that rustls decrypted before it
                // reported the handshake done: kept for the stream's first reads (a few at
                // most, once per connection; the copy is rustls's way here).
                while let Some(record) = records.next_record() {
                    early.extend_from_slice(record.map_err(invalid)?.payload);
                }
                Next::Process
            }
            Ok(ConnectionState::ReadEarlyData(mut records)) => {
                // 0-RTT data (only with a user's configuration that enables it): dropped, as
                // tokio-rustls's server stream did; the client sends it again after the
                // handshake.
                while let Some(record) = records.next_record() {
                    record.map_err(invalid)?;
                }
                Next::Process
            }
            Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "tls handshake eof",
                ));
            }
            Ok(other) => {
                return Err(invalid(format!("unexpected TLS state {other:?}")));
            }
        };
        rx.discard(discard);
        match next {
            Next::Process => {}
            Next::Transmit => {
                io.write_all(&out).await?;
                out.clear();
                if !conn.is_handshaking() {
                    break;
                }
            }
            Next::Receive if !conn.is_handshaking() => break,
            Next::Receive => {
                let n = io.read(rx.spare()).await?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "tls handshake eof",
                    ));
                }
                rx.filled(n);
            }
        }
    }
    let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
    let (secrets, kernel) = conn.dangerous_into_kernel_connection().map_err(invalid)?;
    TlsStream::new(io, rx, early, alpn, kernel, secrets).map_err(invalid)
}

/// Appends the record `encode` holds to `out`.
fn encode_into(
    encode: &mut EncodeTlsData<'_, rustls::server::ServerConnectionData>,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let at = out.len();
    // A first guess; rustls says the exact size when it does not fit.
    out.resize(at + 4096, 0);
    let n = match encode.encode(&mut out[at..]) {
        Ok(n) => n,
        Err(EncodeError::InsufficientSize(size)) => {
            out.resize(at + size.required_size, 0);
            encode.encode(&mut out[at..]).map_err(invalid)?
        }
        Err(e) => return Err(invalid(e)),
    };
    out.truncate(at + n);
    Ok(())
}

/// After rustls refused the handshake: sends the alert it queued, if any (best effort).
async fn send_alert(
    conn: &mut UnbufferedServerConnection,
    rx: &mut RecordBuf,
    io: &mut Stream,
    out: &mut Vec<u8>,
) {
    let status = conn.process_tls_records(rx.ciphertext_mut());
    if let Ok(ConnectionState::EncodeTlsData(mut encode)) = status.state {
        if encode_into(&mut encode, out).is_ok() {
            let _ = io.write_all(out).await;
        }
    }
}

fn invalid(e: impl ToString) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
