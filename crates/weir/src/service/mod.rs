//! Serving a tower [`Service`] (an axum `Router`, a tower-http stack) with weir
//! (Cargo feature `tower`, on by default).
//!
//! [`ServiceHandler`] adapts a service into a [`Handler`], so every protocol weir speaks
//! (HTTP/1.1, h2c, TLS with HTTP/2 or HTTP/1.1) serves it with no protocol-specific code. Per
//! request it clones the service (as hyper-util's server does: an axum `Router` clone is a
//! reference count), builds an `http::Request<`[`Body`]`>` from weir's head (`request`), awaits
//! `poll_ready` and `call`, and writes the `http::Response<B>` through weir's response writer
//! (`respond`). [`MakeServiceHandler`] serves a make service the same way (axum's
//! `into_make_service_with_connect_info`, for its `ConnectInfo` extractor), each request's
//! service made from the client's address (`make`).
//!
//! **One task.** The service's future runs on the connection's task (HTTP/1.1) or the stream's
//! (HTTP/2), inside the handler's future. The body does not own the connection: polling it
//! places an order in the request's link (`link`), and the adapter, which polls the service's
//! future and holds the [`Exchange`], carries the order out on the exchange in the same poll
//! (the socket read happens right there, no hop to another task) and hands the bytes back. So
//! the socket is read only while the service polls its body, at most the pause threshold
//! ahead: weir's backpressure holds, and an HTTP/2 handler that never reads holds back only
//! its own stream's window. A body moved to another task works too: its orders wake the
//! connection's task, which carries them out, also after the response (a service that answers
//! `202` at once and reads the body in a task of its own, as on hyper): the adapter then serves
//! that body until it is dropped or complete, and the connection's next request waits for that
//! (`link`). The [`ExchangeHandle`] does not move: it works where the adapter runs the service
//! for its request (`handle`).
//!
//! **What it costs.** This is an adoption path: the `http::Request` owns its URI, header map
//! and extensions. What weir would allocate for them per request is kept per thread and reused
//! (`pool`: the link, a header map, a byte buffer the URI and values are shared from); what
//! remains is listed in `request` (the extensions map, which an axum `Router` creates anyway;
//! the [`ExchangeHandle`] in it is zero-sized);
//! the service's own allocations (axum's routing, boxed futures and bodies) are its own. weir's
//! native `Handler` stays the path without per-request allocation. Body frames are not copied
//! or allocated (`body`).
//!
//! **weir's own powers** from inside the service: the [`ExchangeHandle`] in the request's
//! extensions reads straight into a caller's buffer, moves the body to a file with `splice`,
//! sets the request's size limit and pause threshold, and sends 1xx responses; a [`FileBody`]
//! response is sent with `sendfile`.
//!
//! **Limits.** weir's own limits hold for the service as for any handler, on top of the
//! app's: among them the body-size limit ([`Config::max_body_size`](crate::Config), 30 MiB by
//! default), which under `axum::serve` a streamed body does not have (axum's `DefaultBodyLimit`
//! covers only its extractors that buffer). A body above it ends with weir's error (at once when
//! its declared length is above it: no `100 Continue`, so the client sends none of it). An app
//! that takes larger uploads raises it in the config, or for its upload routes through the
//! [`ExchangeHandle`] (`set_max_body_size`).
//!
//! **Upgrades** (`Connection: upgrade`, WebSocket) are served by [`UpgradeServiceHandler`]
//! (feature `upgrades`), which hands such a connection to hyper's server (`upgrade`). Through
//! [`ServiceHandler`] such a request reaches the service as an ordinary request, without the
//! `hyper::upgrade::OnUpgrade` extension, so axum's `WebSocketUpgrade` extractor rejects it
//! (`426 Upgrade Required`), and a service that answers `101 Switching Protocols` anyway gets a
//! `500` (weir refuses a 1xx as a final status). HTTP/2 extended CONNECT is not offered.
//!
//! **Errors.** A service error or a failed `poll_ready` before the response: `500` (through
//! [`Error::user`]). A response body error after the head went out: HTTP/1.1 closes the
//! connection, HTTP/2 resets the stream, so the client never takes a cut response as whole.

mod body;
mod file_body;
mod handle;
mod link;
mod make;
mod pool;
mod request;
mod respond;
#[cfg(feature = "upgrades")]
mod upgrade;

pub use body::Body;
pub use file_body::FileBody;
pub use handle::ExchangeHandle;
pub use make::{MakeServiceHandler, MakeTarget};
#[cfg(feature = "upgrades")]
pub use upgrade::{HyperService, UpgradeMakeServiceHandler, UpgradeServiceHandler};

use crate::{Error, Exchange, Handler};
use handle::{Current, within};
use link::{after_response, drive, poll_within};
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use tower_service::Service;

/// A tower [`Service`] served by weir: `server.serve(weir::ServiceHandler::new(app))`.
///
/// The service must be `Clone + Send + Sync` (an axum `Router` is); its response body any
/// `http_body::Body` whose data is a [`bytes::Buf`].
#[derive(Clone, Debug)]
pub struct ServiceHandler<S> {
    service: S,
}

impl<S> ServiceHandler<S> {
    /// Wraps `service`.
    pub fn new(service: S) -> Self {
        Self { service }
    }
}

impl<S, B> Handler for ServiceHandler<S>
where
    S: Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send,
    S::Error: Send + Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Send + Into<Box<dyn std::error::Error + Send + Sync>>,
{
    async fn handle(&self, exchange: &mut Exchange<'_>) -> Result<(), Error> {
        // The link between the request's body handles and this exchange, and the parts of the
        // `http::Request`, kept per thread from request to request (`pool`).
        let mut spare = pool::take();
        // The steps are written out here, not in an `async fn` of their own: that one's future
        // would be built and moved into this one for every request.
        let result = 'serve: {
            let request = match request::build(exchange, &mut spare) {
                Ok(request) => request,
                Err(e) => break 'serve Err(e),
            };
            // The request's `ExchangeHandle` works wherever the service runs for it (`handle`).
            let current = Current::new(Arc::clone(spare.link()), exchange.peer_addr());
            let mut service = self.service.clone();
            let ready = poll_fn(|cx| within(&current, || service.poll_ready(cx))).await;
            if let Err(e) = ready {
                break 'serve Err(Error::user(e));
            }
            let mut future = pin!(within(&current, || service.call(request)));
            // Polled once first: a service that answers at once never needs `drive`'s future.
            let response = match poll_within(&current, future.as_mut()).await {
                Poll::Ready(response) => response,
                Poll::Pending => drive(exchange, &current, future).await,
            };
            match response {
                Ok(response) => {
                    match respond::write(exchange, &current, response, &mut spare.headers).await {
                        // A body the service moved elsewhere is still served (`link`).
                        Ok(()) => after_response(exchange, &current.link).await,
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(Error::user(e)),
            }
        };
        pool::give_back(spare);
        result
    }
}
