//! Upgrades (WebSocket) for a tower service, served by hyper (Cargo feature `upgrades`).
//!
//! axum's `WebSocketUpgrade` extractor needs hyper's `OnUpgrade` in the request's extensions,
//! and only hyper's server can make one. So [`UpgradeServiceHandler`] serves every request as
//! [`ServiceHandler`] does, except an HTTP/1.1 request that asks for a WebSocket upgrade
//! (`Connection: upgrade`, `Upgrade: websocket`): for it, the connection is handed to hyper's
//! HTTP/1.1 server (`serve_connection(…).with_upgrades()`, as `axum::serve` runs it), which
//! serves that request and whatever follows on the connection, the upgraded protocol included.
//!
//! How: the request's head is written again, with what weir had read past it, into one end of
//! an in-memory pipe (`tokio::io::duplex`) whose other end hyper serves; the connection's task
//! copies bytes between the socket and the pipe both ways until hyper's side closes (the
//! upgraded protocol's handler ended, or hyper closed an idle connection after its 30 s head
//! timeout). The connection stays weir's: counted, on its task, and closed by a shutdown after its
//! grace. What it costs: one copy of every byte of the upgraded connection (the pump), which
//! for WebSocket traffic is small against the copies of framing and masking. hyper keeps weir's
//! head limits on that connection ([`Limits::max_head`](crate::Limits::max_head) and
//! [`max_headers`](crate::Limits::max_headers): `431`; [`Config::head_timeout`](crate::Config::head_timeout),
//! which for hyper also bounds an idle wait between requests); the body limits, data rates and
//! keep-alive timeout are weir's only (the upgraded protocol's limits are its handler's).
//!
//! [`UpgradeMakeServiceHandler`] does the same for a make service (axum's
//! `into_make_service_with_connect_info`, so that a WebSocket route takes `ConnectInfo`): each
//! request's service is made as [`MakeServiceHandler`] makes it, and an upgrade request's is
//! the one hyper serves.
//!
//! HTTP/2 requests are served as [`ServiceHandler`] serves them (HTTP/2 has no `Upgrade`;
//! extended CONNECT is not offered).

use super::{MakeServiceHandler, MakeTarget, ServiceHandler};
use crate::{Config, Error, Exchange, Handler, Request};
use http::Version;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tower_service::Service;

/// Smallest capacity of the pipe between the socket and hyper, each way.
const PIPE: usize = 64 * 1024;

/// A tower service served by weir whose upgrade requests (WebSocket through axum) hyper serves:
/// `server.serve(weir::UpgradeServiceHandler::new(app))`. The service serves weir's requests
/// (`http::Request<weir::Body>`) and hyper's (`http::Request<hyper::body::Incoming>`), as an
/// axum `Router` does; see the module docs.
#[derive(Clone, Debug)]
pub struct UpgradeServiceHandler<S> {
    inner: ServiceHandler<S>,
}

impl<S> UpgradeServiceHandler<S> {
    /// Wraps `service`.
    pub fn new(service: S) -> Self {
        Self {
            inner: ServiceHandler::new(service),
        }
    }
}

impl<S> Handler for UpgradeServiceHandler<S>
where
    ServiceHandler<S>: Handler,
    S: HyperService,
{
    async fn handle(&self, exchange: &mut Exchange<'_>) -> Result<(), Error> {
        if asks_for_upgrade(exchange.request()) {
            if let Some(served) = hand_to_hyper(exchange, self.inner.service.clone()).await {
                return served;
            }
        }
        self.inner.handle(exchange).await
    }
}

/// A tower make service served by weir whose upgrade requests (WebSocket through axum) hyper
/// serves: `UpgradeServiceHandler` for
/// `app.into_make_service_with_connect_info::<SocketAddr>()`, so that a WebSocket route takes
/// `ConnectInfo` too. Each request's service is made as [`MakeServiceHandler`] makes it (see
/// `make`); an upgrade request's is handed to hyper with its connection.
pub struct UpgradeMakeServiceHandler<M, T = SocketAddr> {
    inner: MakeServiceHandler<M, T>,
}

impl<M> UpgradeMakeServiceHandler<M> {
    /// Wraps `make`, called with each client's `SocketAddr`.
    pub fn new(make: M) -> Self {
        Self::with_target(make)
    }
}

impl<M, T> UpgradeMakeServiceHandler<M, T> {
    /// Wraps `make`, called with each client's address as a `T`.
    pub fn with_target(make: M) -> Self {
        Self {
            inner: MakeServiceHandler::with_target(make),
        }
    }
}

impl<M: Clone, T> Clone for UpgradeMakeServiceHandler<M, T> {
    fn clone(&self) -> Self {
        Self::with_target(self.inner.make.clone())
    }
}

impl<M: std::fmt::Debug, T> std::fmt::Debug for UpgradeMakeServiceHandler<M, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpgradeMakeServiceHandler")
            .field("make", &self.inner.make)
            .finish()
    }
}

impl<M, T, S> Handler for UpgradeMakeServiceHandler<M, T>
where
    MakeServiceHandler<M, T>: Handler,
    T: MakeTarget,
    M: Service<T, Response = S> + Clone + Send + Sync + 'static,
    M::Future: Send,
    M::Error: Send + Into<Box<dyn std::error::Error + Send + Sync>>,
    S: HyperService,
{
    async fn handle(&self, exchange: &mut Exchange<'_>) -> Result<(), Error> {
        if asks_for_upgrade(exchange.request()) {
            let service = self.inner.service_for(exchange.peer_addr()).await?;
            if let Some(served) = hand_to_hyper(exchange, service).await {
                return served;
            }
        }
        self.inner.handle(exchange).await
    }
}

/// What hyper's HTTP/1.1 server needs of a tower service to serve it (hyper-util's
/// `TowerToHyperService`): implemented for every such service, an axum `Router` among them.
pub trait HyperService: Clone + Send + Sync + 'static {
    /// Serves one connection on `io` with upgrades, as `axum::serve` does, under `config`'s head
    /// limits; hyper's timer is set, so the head timeout also closes a connection left idle
    /// after a refused upgrade. (A box, once per connection handed over.)
    fn serve_upgradable(
        self,
        io: DuplexStream,
        config: &Config,
    ) -> Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;
}

impl<S, B> HyperService for S
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    <S as Service<http::Request<Incoming>>>::Future: Send + 'static,
    <S as Service<http::Request<Incoming>>>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn serve_upgradable(
        self,
        io: DuplexStream,
        config: &Config,
    ) -> Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>> {
        Box::pin(
            hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(config.head_timeout)
                .max_header_size(config.limits.max_head)
                .max_headers(config.limits.max_headers)
                .serve_connection(TokioIo::new(io), TowerToHyperService::new(self))
                .with_upgrades(),
        )
    }
}

/// Hands `exchange`'s connection to hyper's server with `service`, and serves it until hyper's
/// side closes; `None` when the connection cannot be handed over (a response has started).
async fn hand_to_hyper<S: HyperService>(
    exchange: &mut Exchange<'_>,
    service: S,
) -> Option<Result<(), Error>> {
    let head = head_bytes(exchange.request());
    let over = exchange.hand_over()?;
    let run = async {
        // What was sent and read before: earlier pipelined answers to the client, the head and
        // what followed it to hyper.
        over.stream.write_all(&over.unsent).await?;
        let (mut ours, theirs) = tokio::io::duplex(PIPE.max(head.len() + over.read.len()));
        ours.write_all(&head).await?;
        ours.write_all(&over.read).await?;
        let served = service.serve_upgradable(theirs, over.config);
        let (mut from_hyper, mut to_hyper) = tokio::io::split(ours);
        let (mut from_client, mut to_client) = tokio::io::split(&mut *over.stream);
        // Client → hyper until the client's EOF, which hyper then sees; then nothing more.
        let up = async {
            let _ = tokio::io::copy(&mut from_client, &mut to_hyper).await;
            let _ = to_hyper.shutdown().await;
            std::future::pending::<std::convert::Infallible>().await
        };
        // hyper → client until hyper (or the upgraded protocol's handler) closes its end: that
        // ends the connection, whatever the client still holds open.
        let down = async {
            let copied = tokio::io::copy(&mut from_hyper, &mut to_client).await;
            let _ = to_client.shutdown().await;
            copied
        };
        let session = async { tokio::join!(served, down) };
        let (served, down) = tokio::select! {
            ended = session => ended,
            never = up => match never {},
        };
        if let Err(e) = served {
            tracing::debug!(error = %e, "connection served by hyper ended with an error");
        }
        if let Err(e) = down {
            tracing::debug!(error = %e, "upgraded connection's copy to the client failed");
        }
        Ok(())
    };
    Some(run.await)
}

/// Whether `request` asks to upgrade the connection to WebSocket (HTTP/1.1, a `connection`
/// field with the `upgrade` token, an `upgrade` field with `websocket`). Other upgrades (`h2c`,
/// which curl offers on `http://` URLs) are served by weir as ordinary requests.
fn asks_for_upgrade(request: &Request) -> bool {
    let has = |field: &str, token: &[u8]| {
        request.header_all(field).any(|value| {
            value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
        })
    };
    request.version() == Version::HTTP_11
        && has("connection", b"upgrade")
        && has("upgrade", b"websocket")
}

/// The request's head as it was sent (its fields in order, with their names' case), for hyper
/// to parse.
fn head_bytes(request: &Request) -> Vec<u8> {
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(request.method().as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(request.target_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in request.header_bytes() {
        head.extend_from_slice(name);
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}
