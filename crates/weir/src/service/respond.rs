//! Writing a tower service's `http::Response<B>` through weir's response writer.
//!
//! Status and headers go into weir's [`Response`](crate::Response) builder (encoded straight
//! into the write buffer; `Content-Length` and `Transfer-Encoding` are weir's, derived from the
//! body's exact size, else from the `Content-Length` the app states, which the body must then
//! match). The fields are `http`'s `HeaderName`s and `HeaderValue`s, whose constructors checked
//! what weir's builder checks (a token name, a value without control characters), so they go
//! through its unchecked entry (`valid_header`); `connection`, `date` and `server` still mean
//! what they mean through `header`. The body: a [`FileBody`] takes the file path
//! (`sendfile`); a body of exact or stated size is sent with `Content-Length`; any other is
//! chunked on HTTP/1.1 (DATA frames on HTTP/2). Each data frame is written from the frame's own
//! memory (`Buf::chunk`), so no copy beyond weir's write coalescing of small writes; whenever the body has no next frame ready, what is
//! buffered is flushed first (as hyper does), so an event stream's frames leave as they come.
//! While the body is polled, orders of the request's body handles are carried out (a response
//! that streams the request body back).
//!
//! A body's trailers frame becomes the response's trailer section
//! ([`BodyWriter::finish_with_trailers`](crate::BodyWriter::finish_with_trailers): over HTTP/2,
//! and over HTTP/1.1 when the body's length was unknown, hence chunked). Not carried:
//! `101 Switching Protocols` (refused: see the module docs of `service`).

use super::FileBody;
use super::handle::Current;
use super::link::{drive, poll_within};
use crate::{Error, Exchange};
use bytes::Buf;
use http::{HeaderMap, Method, StatusCode, header};
use std::any::Any;
use std::future::poll_fn;
use std::pin::{Pin, pin};
use std::task::Poll;

/// Sends `response` on `exchange`; its header map, cleared, goes to `spare_headers` (the next
/// request's: `pool`).
pub(crate) async fn write<B>(
    exchange: &mut Exchange<'_>,
    current: &Current,
    response: http::Response<B>,
    spare_headers: &mut HeaderMap,
) -> Result<(), Error>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Send + Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut parts, body) = response.into_parts();
    let head_only =
        exchange.request().method() == Method::HEAD || parts.status == StatusCode::NOT_MODIFIED;
    let exact = body.size_hint().exact();
    let file = match (&body as &dyn Any).downcast_ref::<FileBody>() {
        Some(file) => Some(file.clone()),
        None if exact == Some(0) => parts.extensions.remove::<FileBody>(),
        None => None,
    };
    let stated = || {
        parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
    };
    // A HEAD (or 304) answer carries the length of the body it stands for, not its own: the
    // length the app states (axum states it for a GET body of exact size), or a body it gave
    // anyway; an empty body says nothing of the GET's (axum empties it for HEAD), so no length
    // is sent for it. Any other: the body's exact size, else the length the app states (a
    // download streamed in pieces keeps it, as on hyper; weir fails the response if the body
    // does not match it).
    let declared = if head_only {
        stated().or(exact.filter(|&len| len > 0))
    } else {
        exact.or_else(stated)
    };

    let mut builder = exchange.respond(parts.status);
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        builder = builder.valid_header(name, value);
    }
    parts.headers.clear();
    *spare_headers = parts.headers;
    if let Some(file) = file {
        let (file, offset, len) = file.rest();
        return builder.file(file, offset, len).await;
    }
    let mut writer = builder.stream(declared).await?;
    let mut body = pin!(body);
    let mut trailers = None;
    // A body that tells it has ended (`is_end_stream`: a `Full` once its one frame is taken) is
    // not polled again for the `None` it would answer.
    if declared != Some(0) && !head_only {
        while !body.is_end_stream() {
            let mut next = poll_fn(|cx| body.as_mut().poll_frame(cx));
            // Polled once first: a frame that is ready never needs `drive`'s future.
            let frame = match poll_within(current, Pin::new(&mut next)).await {
                Poll::Ready(frame) => frame,
                Poll::Pending => {
                    // What the body gave so far (and the head) leaves before waiting for more:
                    // small frames wait in the write buffer to be coalesced, and an event
                    // stream's next frame may be minutes away.
                    writer.flush().await?;
                    drive(writer.exchange(), current, Pin::new(&mut next)).await
                }
            };
            let Some(frame) = frame else { break };
            let frame = frame.map_err(Error::user)?;
            match frame.into_data() {
                Ok(mut data) => {
                    while data.has_remaining() {
                        let chunk = data.chunk();
                        let n = chunk.len();
                        writer.write(chunk).await?;
                        data.advance(n);
                    }
                }
                Err(frame) => {
                    if let Ok(fields) = frame.into_trailers() {
                        trailers = Some(fields);
                    }
                }
            }
        }
    }
    match trailers {
        Some(fields) => writer.finish_with_trailers(&fields).await,
        None => writer.finish().await,
    }
}
