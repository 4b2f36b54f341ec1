//! Unit tests of [`TlsStream`](super::TlsStream) over a real loopback connection, a rustls
//! client on the other end: what the integration tests over TLS cannot pin (how much one write
//! takes, what `Debug` shows, how a read meets a cut connection, a full send queue or a failed
//! send) and the send queue's bookkeeping.

use super::*;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Client = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// Closes the client's socket (dropped here) with a reset (SO_LINGER 0), not a FIN, and no TLS
/// close.
fn reset_close(client: Client) {
    let (client_tcp, _) = client.into_inner();
    socket2::SockRef::from(&client_tcp)
        .set_linger(Some(std::time::Duration::ZERO))
        .unwrap();
}

/// A handshaken pair: weir's server side and a rustls client, offering `alpn`.
async fn pair(alpn: &[&[u8]], tls12: bool) -> (TlsStream, Client) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let tls = crate::TlsConfig::from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let acceptor = tls.acceptor(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut io = Stream::Tcp(tcp);
        let mut rx = RecordBuf::new();
        super::super::tls_handshake::receive_client_hello(&mut io, &mut rx)
            .await
            .unwrap();
        super::super::tls_handshake::accept(io, rx, acceptor)
            .await
            .unwrap()
    });
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(crate::TlsConfig::crypto_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let client = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    (server.await.unwrap(), client)
}

#[tokio::test]
async fn one_write_seals_up_to_the_queue_limit_and_every_byte_arrives() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    let body: Vec<u8> = (0..(1usize << 20)).map(|i| (i % 251) as u8).collect();
    // A write takes at most the queue's limit (256 KiB) at once, whatever the socket takes:
    // a caller of a large write gets one return per 256 KiB, not one per record.
    let taken = server.write(&body).await.unwrap();
    assert_eq!(taken, 256 * 1024);
    let reader = tokio::spawn(async move {
        let mut got = vec![0; body.len()];
        client.read_exact(&mut got).await.unwrap();
        assert!(got == body, "the plaintext arrives whole and in order");
    });
    let rest: Vec<u8> = (taken..(1usize << 20)).map(|i| (i % 251) as u8).collect();
    server.write_all(&rest).await.unwrap();
    server.flush().await.unwrap();
    reader.await.unwrap();
}

#[tokio::test]
async fn debug_says_what_the_connection_is() {
    let (server, _client) = pair(&[b"http/1.1"], false).await;
    let shown = format!("{server:?}");
    assert!(shown.starts_with("TlsStream {"), "{shown}");
    assert!(shown.contains("version: TLSv1_3"), "{shown}");
    assert!(shown.contains("read: Open"), "{shown}");
}

#[tokio::test]
async fn the_version_and_protocol_are_the_negotiated_ones() {
    let (server, _client) = pair(&[b"h2"], true).await;
    assert_eq!(server.protocol_version(), ProtocolVersion::TLSv1_2);
    assert_eq!(server.alpn_protocol(), Some(&b"h2"[..]));
    let (server, _client) = pair(&[], false).await;
    assert_eq!(server.protocol_version(), ProtocolVersion::TLSv1_3);
    assert_eq!(server.alpn_protocol(), None);
}

#[test]
fn the_send_queue_hands_out_unsent_bytes_in_order() {
    let mut queue = TxQueue::default();
    assert!(queue.is_empty());
    queue.push(vec![1, 2, 3]);
    queue.push(vec![4, 5]);
    queue.push(vec![6, 7, 8, 9]);
    assert_eq!(queue.len(), 9);
    let flat = |queue: &TxQueue, room: usize| {
        let mut slices = [IoSlice::new(&[]); 8];
        let filled = queue.slices(&mut slices[..room]);
        slices[..filled]
            .iter()
            .flat_map(|s| s.iter().copied())
            .collect::<Vec<u8>>()
    };
    assert_eq!(flat(&queue, 8), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(flat(&queue, 2), [1, 2, 3, 4, 5], "no more slices than room");
    // Part of the first record sent: the rest of it comes first.
    queue.advance(2);
    assert_eq!(queue.len(), 7);
    assert_eq!(flat(&queue, 8), [3, 4, 5, 6, 7, 8, 9]);
    // Across a record boundary, ending inside the next one.
    queue.advance(3);
    assert_eq!(queue.len(), 4);
    assert_eq!(flat(&queue, 8), [6, 7, 8, 9]);
    // Exactly the end of a record: it is released at once (an idle connection keeps no
    // buffer), not when the next send passes it.
    queue.advance(4);
    assert!(queue.is_empty());
    assert!(queue.records.is_empty(), "a record wholly sent is released");
    assert_eq!(flat(&queue, 8), Vec::<u8>::new());
    queue.push(vec![10]);
    assert_eq!(
        flat(&queue, 8),
        [10],
        "a new record starts at its beginning"
    );
}

/// Polls `future` once, with a waker that does nothing.
fn poll_once<F: std::future::Future>(future: F) -> Poll<F::Output> {
    let mut future = std::pin::pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
}

#[tokio::test]
async fn records_the_socket_has_not_taken_make_the_stream_readable() {
    let (mut server, _client) = pair(&[b"http/1.1"], false).await;
    assert!(
        poll_once(server.readable()).is_pending(),
        "nothing at hand, nothing queued: wait for the socket"
    );
    // The client reads nothing: write until the socket is full and records stay queued.
    fill_the_send_queue(&mut server);
    // A read sends queued records, so an idle connection waiting to read must not wait for
    // the client first: the client may be waiting for those very bytes.
    assert!(poll_once(server.readable()).is_ready());
}

#[tokio::test]
async fn plaintext_or_ciphertext_at_hand_makes_the_stream_readable() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    // Two records; wait until both lie in the server's socket (27 and 28 bytes in TLS 1.3:
    // header, plaintext, content type, tag), so that the first read takes them both.
    client.write_all(b"first").await.unwrap();
    client.flush().await.unwrap();
    client.write_all(b"second").await.unwrap();
    client.flush().await.unwrap();
    let Stream::Tcp(tcp) = &server.io else {
        unreachable!("a TCP pair")
    };
    let mut peeked = [0u8; 64];
    while tcp.peek(&mut peeked).await.unwrap() < 27 + 28 {
        tokio::task::yield_now().await;
    }
    // Taken a byte at a time: the rest of the record waits as plaintext, the next record as
    // ciphertext, and each must count as at hand (no byte more is coming from the socket).
    let mut one = [0u8; 1];
    server.read_exact(&mut one).await.unwrap();
    assert_eq!(&one, b"f");
    assert!(!server.rx.plaintext().is_empty());
    assert!(poll_once(server.readable()).is_ready(), "plaintext at hand");
    let mut rest = [0u8; 4];
    server.read_exact(&mut rest).await.unwrap();
    assert_eq!(&rest, b"irst");
    assert!(server.rx.plaintext().is_empty() && server.rx.has_ciphertext());
    assert!(
        poll_once(server.readable()).is_ready(),
        "ciphertext at hand"
    );
    let mut second = [0u8; 6];
    server.read_exact(&mut second).await.unwrap();
    assert_eq!(&second, b"second");
    assert!(poll_once(server.readable()).is_pending(), "nothing at hand");
}

/// At the suite's confidentiality limit, the next application-data record goes under a new key:
/// TLS 1.3 sends a `KeyUpdate` first and seals from sequence 0 again; TLS 1.2, which cannot
/// rekey, refuses to seal. (The limit is millions of records: the count is set, not reached.)
#[tokio::test]
async fn at_the_confidentiality_limit_tls13_rekeys_and_tls12_stops() {
    let (mut server, _client) = pair(&[b"http/1.1"], false).await;
    server.keys.tx_seq = server.keys.confidentiality_limit();
    assert_eq!(server.write(b"x").await.unwrap(), 1);
    // The KeyUpdate (under the old key), then the record from sequence 0 under the new one.
    assert_eq!(server.keys.tx_seq, 1);

    let (mut server, _client) = pair(&[b"http/1.1"], true).await;
    server.keys.tx_seq = server.keys.confidentiality_limit();
    assert!(server.write(b"x").await.is_err());
}

/// Our last record being a `KeyUpdate` is what lets a client's further requests for one go
/// unanswered; application data sent since ends that, so the next request is answered again.
#[tokio::test]
async fn application_data_sent_ends_the_key_update_already_answered() {
    let (mut server, _client) = pair(&[b"http/1.1"], false).await;
    server.update_tx_key().unwrap();
    assert!(server.key_updated_since_data);
    server.write_all(b"data").await.unwrap();
    assert!(!server.key_updated_since_data);
    // An alert is no application data: it does not end it.
    server.update_tx_key().unwrap();
    server
        .seal_alert(1, AlertDescription::NoRenegotiation)
        .unwrap();
    assert!(server.key_updated_since_data);
}

#[tokio::test]
async fn a_read_sends_the_records_the_socket_did_not_take() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    // The client reads nothing at first: write until the socket is full and records stay
    // queued behind it.
    let written = fill_the_send_queue(&mut server);
    // Now the client reads everything it was sent. The server only reads (as a connection
    // waiting for its next request does): its reads must send the queued records, or the
    // client waits for bytes that never leave.
    let reader = tokio::spawn(async move {
        let mut got = vec![0u8; written];
        client.read_exact(&mut got).await.unwrap();
        assert!(got.iter().all(|&b| b == 7));
        client // kept open: its end would end the server's read
    });
    let mut buf = [0u8; 16];
    // The read waits for a request that never comes; while it waits it must send the queue,
    // or the client never finishes (and the test hangs: no clock decides here).
    tokio::select! {
        read = server.read(&mut buf) => panic!("nothing was sent to read: {read:?}"),
        done = reader => drop(done.unwrap()),
    }
    assert!(server.tx.is_empty());
}

/// The server's TCP socket under `server`.
fn tcp(server: &TlsStream) -> &tokio::net::TcpStream {
    let Stream::Tcp(tcp) = &server.io else {
        unreachable!("a TCP pair")
    };
    tcp
}

/// Waits until `bytes` bytes lie unread in the server's socket.
async fn until_at_hand(server: &TlsStream, bytes: usize) {
    let mut peeked = vec![0u8; bytes];
    while tcp(server).peek(&mut peeked).await.unwrap() < bytes {
        tokio::task::yield_now().await;
    }
}

/// Writes sevens until the socket is full and at least the queue's limit waits behind it
/// (the client reads nothing); returns how much was written.
fn fill_the_send_queue(server: &mut TlsStream) -> usize {
    let chunk = vec![7u8; 256 * 1024];
    let mut written = 0;
    while let Poll::Ready(n) = poll_once(server.write(&chunk)) {
        written += n.unwrap();
        assert!(written < 1 << 30, "the socket never filled");
    }
    assert!(
        server.tx.len() >= TX_MAX,
        "a write stops at the queue's limit"
    );
    written
}

/// Sizes of TLS 1.3 records as they travel: header, plaintext, content type, tag.
const fn record(plaintext: usize) -> usize {
    5 + plaintext + 1 + 16
}

#[tokio::test]
async fn bytes_before_a_cut_are_read_and_the_cut_is_an_error_after_them() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    client.write_all(b"hello").await.unwrap();
    client.flush().await.unwrap();
    // The client's TCP closes without a close_notify (a truncation, as an attacker cutting
    // the connection would make it); wait until the server's socket has seen the end too, so
    // that one read meets the record and the end.
    let (mut client_tcp, _) = client.into_inner();
    client_tcp.shutdown().await.unwrap();
    until_at_hand(&server, record(5)).await;
    until_closed(&server).await;
    // The bytes decrypted before the end are the caller's: they come first, then the cut, as
    // an error: not an orderly end of the stream.
    let cut = read_after(&mut server, b"hello").await.unwrap_err();
    assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof);
    let again = server.read(&mut [0u8; 64]).await.unwrap_err();
    assert_eq!(again.kind(), io::ErrorKind::UnexpectedEof, "and it stays");
}

/// Reads `first` whole in one read (the bytes decrypted before a failure: they come first,
/// when any), then returns what the next read gives.
async fn read_after(server: &mut TlsStream, first: &[u8]) -> io::Result<usize> {
    let mut buf = [0u8; 64];
    if !first.is_empty() {
        assert_eq!(server.read(&mut buf).await.unwrap(), first.len());
        assert_eq!(&buf[..first.len()], first);
    }
    server.read(&mut buf).await
}

/// Waits until the runtime has seen the client's end of the connection (a FIN or a reset).
async fn until_closed(server: &TlsStream) {
    while !tcp(server)
        .ready(tokio::io::Interest::READABLE)
        .await
        .unwrap()
        .is_read_closed()
    {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// A socket error met by a read: the bytes already decrypted in the same read come first,
/// then the error; with none, the error at once (never an orderly end).
#[tokio::test]
async fn bytes_before_a_reset_are_read_and_the_reset_is_an_error_after_them() {
    for data_first in [true, false] {
        let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
        if data_first {
            client.write_all(b"hello").await.unwrap();
            client.flush().await.unwrap();
            until_at_hand(&server, record(5)).await;
        }
        reset_close(client);
        until_closed(&server).await;
        let first: &[u8] = if data_first { b"hello" } else { b"" };
        let reset = read_after(&mut server, first).await;
        assert_eq!(
            reset.map_err(|e| e.kind()),
            Err(io::ErrorKind::ConnectionReset),
            "data first: {data_first}"
        );
    }
}

#[tokio::test]
async fn a_full_send_queue_alone_does_not_stop_reading() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    fill_the_send_queue(&mut server);
    // Nothing is owed to the client's records: its request is read although our response
    // waits (a client that sends before it reads must not deadlock against us).
    client.write_all(b"ping").await.unwrap();
    client.flush().await.unwrap();
    until_at_hand(&server, record(4)).await;
    let mut buf = [0u8; 16];
    match poll_once(server.read(&mut buf)) {
        Poll::Ready(Ok(4)) => assert_eq!(&buf[..4], b"ping"),
        other => panic!("the request was not read: {other:?}"),
    }
}

#[tokio::test]
async fn an_owed_answer_behind_a_full_queue_stops_reading_until_the_client_takes_it() {
    let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
    let written = fill_the_send_queue(&mut server);
    // The client sends a request, asks for a key update (which owes it one of ours) and
    // sends more: each such record read could queue another answer, so with the queue full
    // no record after the update is read.
    client.write_all(b"before").await.unwrap();
    client.flush().await.unwrap();
    client.get_mut().1.refresh_traffic_keys().unwrap();
    client.write_all(b"after").await.unwrap();
    client.flush().await.unwrap();
    until_at_hand(&server, record(6) + record(5) + record(5)).await;
    let mut buf = [0u8; 16];
    // The bytes read before the update are the caller's at once...
    match poll_once(server.read(&mut buf)) {
        Poll::Ready(Ok(6)) => assert_eq!(&buf[..6], b"before"),
        other => panic!("the bytes before the update: {other:?}"),
    }
    // ...then pending: not an end of stream and not the next record.
    assert!(poll_once(server.read(&mut buf)).is_pending());
    assert!(server.answer_queued, "the key update was read");
    assert!(server.rx.has_ciphertext(), "the record after it was not");
    // Once the client takes what it was sent, reading goes on.
    let reader = tokio::spawn(async move {
        let mut got = vec![0u8; written];
        client.read_exact(&mut got).await.unwrap();
        client
    });
    // (A stream that never reads again hangs here: no clock decides.)
    let (read, reader) = tokio::join!(server.read(&mut buf), reader);
    assert_eq!(read.unwrap(), 5);
    assert_eq!(&buf[..5], b"after");
    drop(reader.unwrap());
}

/// A write error met while an owed answer holds reading: the bytes already decrypted in the
/// same read come first, then the error; with none, the error at once (never an orderly end).
#[tokio::test]
async fn a_failed_send_of_an_owed_answer_comes_after_the_bytes_read_before_it() {
    for data_first in [true, false] {
        let (mut server, mut client) = pair(&[b"http/1.1"], false).await;
        fill_the_send_queue(&mut server);
        let mut at_hand = record(5);
        if data_first {
            client.write_all(b"data").await.unwrap();
            client.flush().await.unwrap();
            at_hand += record(4);
        }
        client.get_mut().1.refresh_traffic_keys().unwrap();
        client.flush().await.unwrap();
        until_at_hand(&server, at_hand).await;
        // Our sending side fails from now on (EPIPE); reading still works.
        socket2::SockRef::from(tcp(&server))
            .shutdown(std::net::Shutdown::Write)
            .unwrap();
        // Wait until the runtime has seen the socket turn writable (a shut down side polls
        // writable), so that the read's send meets the error instead of waiting.
        tcp(&server).writable().await.unwrap();
        let first: &[u8] = if data_first { b"data" } else { b"" };
        let failed = read_after(&mut server, first).await;
        assert!(
            failed.is_err(),
            "data first: {data_first}: the failed send reads as {failed:?}"
        );
    }
}

#[tokio::test]
async fn a_flush_sends_every_queued_record() {
    let (mut server, mut client) = pair(&[b"h2"], false).await;
    // Vectored: h2's writer sends a DATA frame's payload without first copying it into its
    // own buffer only to a stream that says so.
    assert!(server.is_write_vectored());
    let written = fill_the_send_queue(&mut server);
    let reader = tokio::spawn(async move {
        let mut got = vec![0u8; written];
        client.read_exact(&mut got).await.unwrap();
    });
    // A flush returns once every record has left: what an HTTP/2 connection relies on before
    // it waits for the client.
    server.flush().await.unwrap();
    assert!(server.tx.is_empty());
    reader.await.unwrap();
}

#[tokio::test]
async fn a_shutdown_once_the_client_is_gone_is_done_not_an_error() {
    let (mut server, client) = pair(&[b"http/1.1"], false).await;
    // Our close_notify and FIN go out; the client answers with a reset.
    server.shutdown().await.unwrap();
    reset_close(client);
    until_closed(&server).await;
    // The socket itself now refuses a shutdown (ENOTCONN: the connection is gone)...
    let raw = socket2::SockRef::from(tcp(&server)).shutdown(std::net::Shutdown::Write);
    assert_eq!(raw.map_err(|e| e.kind()), Err(io::ErrorKind::NotConnected));
    // ...and the stream's is done: what a shutdown is for has happened.
    server.shutdown().await.unwrap();
}
