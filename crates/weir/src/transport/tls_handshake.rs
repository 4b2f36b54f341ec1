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
//! rustls is shown the client's records one at a time, and none after the one that completes the
//! handshake: what follows (a `KeyUpdate` in the same flight as the client's `Finished`, the
//! first request) is the record layer's. Had rustls taken such a `KeyUpdate`, it would have
//! queued its answer where the hand-over cannot send it and moved to its next key anyway.
//!
//! Before any of that, [`receive_client_hello`] waits for a whole `ClientHello` without
//! rustls and without a buffer while nothing arrives: the caller bounds that wait on its own,
//! and takes a handshake slot only after it (`TlsAccept::handshake`).
//!
//! A handshake that fails is answered with rustls's alert when it has one.

use super::Stream;
use super::tls_records::{HEADER_LEN, MAX_CIPHERTEXT, RecordBuf};
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

/// The largest `ClientHello` waited for (rustls refuses larger handshake messages anyway).
const MAX_CLIENT_HELLO: usize = 0xffff;

/// Receives into `rx` until a whole `ClientHello` is at hand, or bytes that cannot start one
/// (rustls then answers them). No buffer is taken while the client sends nothing.
pub(super) async fn receive_client_hello(io: &mut Stream, rx: &mut RecordBuf) -> io::Result<()> {
    while !client_hello_at_hand(rx.ciphertext()) {
        io.readable().await?;
        receive(io, rx).await?;
    }
    Ok(())
}

/// Whether `ciphertext` starts with a whole `ClientHello` (in one or more handshake records),
/// or with something that is no `ClientHello` at all; `false` while one is still coming.
fn client_hello_at_hand(ciphertext: &[u8]) -> bool {
    // The handshake message's header (type, then its length in 3 bytes), and how many of its
    // bytes the records so far hold.
    let mut header = [0u8; 4];
    let mut payload = 0;
    let mut records = ciphertext;
    loop {
        let [typ, _, _, hi, lo, ..] = *records else {
            return false;
        };
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        if typ != 22 || len == 0 || len > MAX_CIPHERTEXT {
            return true;
        }
        let body = &records[HEADER_LEN..records.len().min(HEADER_LEN + len)];
        for (at, &byte) in body
            .iter()
            .enumerate()
            .take(header.len().saturating_sub(payload))
        {
            header[payload + at] = byte;
        }
        payload += body.len();
        if payload >= header.len() {
            let [kind, a, b, c] = header;
            let message = header.len() + u32::from_be_bytes([0, a, b, c]) as usize;
            if kind != 1 || message > MAX_CLIENT_HELLO || payload >= message {
                return true;
            }
        }
        if body.len() < len {
            return false;
        }
        records = &records[HEADER_LEN + len..];
    }
}

/// Runs the handshake on `io`, from the `ClientHello` [`receive_client_hello`] left in `rx`.
/// Errors: the client's (malformed, refused by rustls, closed) as `InvalidData` or
/// `UnexpectedEof`, or the socket's.
pub(super) async fn accept(
    mut io: Stream,
    mut rx: RecordBuf,
    config: Arc<ServerConfig>,
) -> io::Result<TlsStream> {
    let mut conn = UnbufferedServerConnection::new(config).map_err(invalid)?;
    let mut out = Vec::new();
    // The front of `rx`'s ciphertext shown to rustls: whole records, one more each time it
    // asks for more while handshaking (see the module docs).
    let mut shown = 0;
    loop {
        let status = conn.process_tls_records(&mut rx.ciphertext_mut()[..shown]);
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
        shown -= discard;
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
            Next::Receive => match next_record(&rx.ciphertext()[shown..]) {
                Some(len) => shown += len,
                None => receive(&mut io, &mut rx).await?,
            },
        }
    }
    let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
    let (secrets, kernel) = conn.dangerous_into_kernel_connection().map_err(invalid)?;
    TlsStream::new(io, rx, alpn, kernel, secrets).map_err(invalid)
}

/// The length of the record `ciphertext` starts with, if it is whole; all of `ciphertext` if
/// its header announces more than a record may hold (for rustls to refuse).
fn next_record(ciphertext: &[u8]) -> Option<usize> {
    let [_, _, _, hi, lo, ..] = *ciphertext else {
        return None;
    };
    let len = HEADER_LEN + usize::from(u16::from_be_bytes([hi, lo]));
    if len > HEADER_LEN + MAX_CIPHERTEXT {
        return Some(ciphertext.len());
    }
    (len <= ciphertext.len()).then_some(len)
}

/// Receives what the socket has into `rx` (waiting for at least a byte).
async fn receive(io: &mut Stream, rx: &mut RecordBuf) -> io::Result<()> {
    let n = io.read(rx.spare()).await?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "tls handshake eof",
        ));
    }
    rx.filled(n);
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `ClientHello` of `len` body bytes in handshake records of at most `per_record` bytes.
    fn hello_records(len: usize, per_record: usize) -> Vec<u8> {
        let mut message = vec![1, 0, (len >> 8) as u8, len as u8];
        message.extend((0..len).map(|i| i as u8));
        let mut wire = Vec::new();
        for part in message.chunks(per_record) {
            wire.extend([22, 3, 1]);
            wire.extend((part.len() as u16).to_be_bytes());
            wire.extend(part);
        }
        wire
    }

    #[test]
    fn a_client_hello_is_whole_only_with_its_last_byte_in_any_split() {
        for per_record in [4000, 100, 3, 1] {
            let wire = hello_records(1500, per_record);
            for cut in 0..wire.len() {
                assert!(
                    !client_hello_at_hand(&wire[..cut]),
                    "{per_record} per record, {cut} of {}",
                    wire.len()
                );
            }
            assert!(client_hello_at_hand(&wire));
            // What follows it (a client need not wait) changes nothing.
            let mut more = wire.clone();
            more.extend([23, 3, 3, 0, 9]);
            assert!(client_hello_at_hand(&more));
        }
    }

    #[test]
    fn what_cannot_start_a_client_hello_goes_to_rustls_at_once() {
        // Plain HTTP, another record type, an empty or oversized record, another handshake
        // message, a message longer than rustls takes.
        for wire in [
            &b"GET / HTTP/1.1\r\n"[..],
            &[21, 3, 3, 0, 2][..],
            &[22, 3, 1, 0, 0][..],
            &[22, 3, 1, 0x48, 1][..],
            &[22, 3, 1, 0, 4, 2, 0, 0, 9][..],
            &[22, 3, 1, 0, 4, 1, 1, 0, 0][..],
        ] {
            assert!(client_hello_at_hand(wire), "{wire:?}");
        }
    }

    #[test]
    fn records_are_shown_whole() {
        let wire = hello_records(40, 20);
        assert_eq!(next_record(&wire), Some(25));
        assert_eq!(next_record(&wire[..24]), None);
        assert_eq!(next_record(&wire[..4]), None);
        assert_eq!(next_record(&[23, 3, 3, 0x48, 1, 0]), Some(6));
    }
}
