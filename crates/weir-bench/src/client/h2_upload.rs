//! The HTTP/2 upload client (h2c by prior knowledge, or over TLS with ALPN `h2`): one stream,
//! the body handed to the `h2` crate in pieces as large as flow control allows.
//!
//! What keeps the client from being the limit:
//! - body pieces are slices of the uploader's [`Bytes`] buffer: no copy in the client's code;
//! - the client asks for up to [`SEND_BUFFER`] of capacity at a time and raises `h2`'s send
//!   buffer to match (its default, 400 KiB, would hand over less than one 1 MiB stream window
//!   at a time); the server's windows are then what decides how much is in flight;
//! - `h2` cuts DATA frames at the server's `SETTINGS_MAX_FRAME_SIZE` (256 KiB on both servers,
//!   see [`crate::server::h2_settings`]), not at the protocol's 16 KiB default;
//! - the client's own receive windows (the response direction) are [`CLIENT_WINDOW`], so the
//!   response is never held up;
//! - over TLS, rustls queues up to [`CLIENT_SEND_BUFFER`] of records per write, as for HTTPS.

use super::upload::{STALL_TIMEOUT, Target};
use crate::server::trace::UploadTrace;
use crate::tls::{self, ALPN_H2, CLIENT_SEND_BUFFER};
use bytes::Bytes;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// Capacity asked for at a time, and `h2`'s send buffer per stream.
pub const SEND_BUFFER: usize = 8 << 20;

/// The client's receive windows, stream and connection (only the response uses them).
pub const CLIENT_WINDOW: u32 = 16 << 20;

/// Largest frame the client accepts (for the response; the body's frames are the server's).
const CLIENT_MAX_FRAME: u32 = 1 << 20;

/// Uploads `size` bytes to `target` at `addr`, over TLS when `tls` is given; returns the
/// server's trace and, over TLS, the version and cipher suite negotiated.
pub async fn upload(
    addr: SocketAddr,
    tls: Option<Arc<ClientConfig>>,
    target: &Target<'_>,
    chunk: &Bytes,
    size: u64,
) -> io::Result<(UploadTrace, Option<String>)> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    match tls {
        None => Ok((exchange(tcp, target, chunk, size).await?, None)),
        Some(config) => {
            let name = ServerName::try_from(tls::SERVER_NAME).map_err(io::Error::other)?;
            let mut s =
                stalls(tokio_rustls::TlsConnector::from(config).connect(name, tcp)).await??;
            let (_, conn) = s.get_mut();
            conn.set_buffer_limit(Some(CLIENT_SEND_BUFFER));
            let negotiated = super::upload::negotiated(conn, ALPN_H2)?;
            Ok((exchange(s, target, chunk, size).await?, Some(negotiated)))
        }
    }
}

/// Fails with `TimedOut` when `f` makes no progress for [`STALL_TIMEOUT`].
async fn stalls<F: Future>(f: F) -> io::Result<F::Output> {
    tokio::time::timeout(STALL_TIMEOUT, f)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "HTTP/2 upload stalled"))
}

fn h2_error(e: h2::Error) -> io::Error {
    io::Error::other(format!("HTTP/2: {e}"))
}

/// One request on a new HTTP/2 connection over `io`.
async fn exchange<S>(
    io: S,
    target: &Target<'_>,
    chunk: &Bytes,
    size: u64,
) -> io::Result<UploadTrace>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (client, conn) = stalls(
        h2::client::Builder::new()
            .initial_window_size(CLIENT_WINDOW)
            .initial_connection_window_size(CLIENT_WINDOW)
            .max_frame_size(CLIENT_MAX_FRAME)
            .max_send_buffer_size(SEND_BUFFER)
            .handshake::<_, Bytes>(io),
    )
    .await?
    .map_err(h2_error)?;
    // The connection is driven on this thread too (current-thread runtime); the uploader drops
    // the runtime, and with it this task, after the upload.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = stalls(client.ready()).await?.map_err(h2_error)?;
    let mut request = http::Request::builder()
        .method(target.method)
        .uri(format!("http://localhost{}", target.path))
        .header(http::header::CONTENT_LENGTH, size);
    if target.debug {
        request = request.header("weir-debug", "1");
    }
    let request = request.body(()).map_err(io::Error::other)?;
    let (response, mut send) = client.send_request(request, false).map_err(h2_error)?;
    if size == 0 {
        send.send_data(Bytes::new(), true).map_err(h2_error)?;
    }
    let mut left = size;
    while left > 0 {
        send.reserve_capacity(left.min(SEND_BUFFER as u64) as usize);
        let granted = stalls(std::future::poll_fn(|cx| send.poll_capacity(cx)))
            .await?
            .ok_or_else(|| io::Error::other("HTTP/2 stream closed during the upload"))?
            .map_err(h2_error)?;
        let mut granted = granted as u64;
        while granted > 0 && left > 0 {
            let n = granted.min(left).min(chunk.len() as u64) as usize;
            left -= n as u64;
            granted -= n as u64;
            // A slice of the shared buffer: a reference count, not a copy.
            send.send_data(chunk.slice(..n), left == 0)
                .map_err(h2_error)?;
        }
    }
    let response = stalls(response).await?.map_err(h2_error)?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut text = Vec::new();
    while let Some(data) = stalls(body.data()).await? {
        let data = data.map_err(h2_error)?;
        let _ = body.flow_control().release_capacity(data.len());
        text.extend_from_slice(&data);
    }
    (target.trace)(status, &text)
}
