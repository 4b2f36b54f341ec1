//! Serving a tower *make service*: the service axum hands to `axum::serve` when a handler
//! wants the client's address (`app.into_make_service_with_connect_info::<SocketAddr>()`, read
//! by axum's `ConnectInfo<SocketAddr>` extractor and by layers built on it, such as rate
//! limiters keyed by peer IP).
//!
//! A make service makes the request service from a *target* that describes the connection;
//! axum's puts that target, converted by its `Connected` trait, into each request's extensions.
//! weir calls it with the client's address, converted by [`MakeTarget`]: a `SocketAddr`
//! (axum implements `Connected<SocketAddr> for SocketAddr`), or weir's [`PeerAddr`], which
//! also describes Unix-socket clients (for an application's own `Connected<PeerAddr>` type).
//!
//! **Once per request.** weir's handlers keep no per-connection state, so the make service is
//! called for every request, with the same target for every request of a connection. The make
//! services axum builds (`into_make_service`, `into_make_service_with_connect_info`) clone the
//! router and add the extension, so each request sees exactly what it would under
//! `axum::serve`; a make service that counts or keeps per-connection state would see each
//! request as a connection. What it costs beyond [`ServiceHandler`]: two clones of the router
//! (reference counts) and one more entry in the request's extensions map, which already exists
//! for the [`ExchangeHandle`](super::ExchangeHandle) (no allocation).

use super::ServiceHandler;
use crate::transport::PeerAddr;
use crate::{Error, Exchange, Handler};
use std::future::poll_fn;
use std::marker::PhantomData;
use std::net::SocketAddr;
use tower_service::Service;

/// What a make service served by [`MakeServiceHandler`] is called with, made from the client's
/// address.
pub trait MakeTarget: Sized + Send + 'static {
    /// The target for a client at `peer`; `None` when this kind of target cannot describe it
    /// (a `SocketAddr` for a client on a Unix socket). Such a request is answered `500`.
    fn from_peer(peer: PeerAddr) -> Option<Self>;
}

impl MakeTarget for SocketAddr {
    fn from_peer(peer: PeerAddr) -> Option<Self> {
        match peer {
            PeerAddr::Tcp(addr) => Some(addr),
            PeerAddr::Unix => None,
        }
    }
}

impl MakeTarget for PeerAddr {
    fn from_peer(peer: PeerAddr) -> Option<Self> {
        Some(peer)
    }
}

/// A tower make service served by weir, each request's service made from the client's address:
/// `server.serve(weir::MakeServiceHandler::new(app.into_make_service_with_connect_info::<SocketAddr>()))`
/// in place of `axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())`.
///
/// [`MakeServiceHandler::new`] calls the make service with the client's `SocketAddr` (TCP and
/// TLS clients; a Unix-socket client gets `500`); [`MakeServiceHandler::with_target`] with
/// another [`MakeTarget`], such as [`PeerAddr`] for every kind of client. The service made is
/// served as [`ServiceHandler`] serves one; see the module docs for when the make service runs.
pub struct MakeServiceHandler<M, T = SocketAddr> {
    pub(super) make: M,
    target: PhantomData<fn() -> T>,
}

impl<M> MakeServiceHandler<M> {
    /// Wraps `make`, called with each client's `SocketAddr`.
    pub fn new(make: M) -> Self {
        Self::with_target(make)
    }
}

impl<M, T> MakeServiceHandler<M, T> {
    /// Wraps `make`, called with each client's address as a `T`.
    pub fn with_target(make: M) -> Self {
        Self {
            make,
            target: PhantomData,
        }
    }
}

impl<M: Clone, T> Clone for MakeServiceHandler<M, T> {
    fn clone(&self) -> Self {
        Self::with_target(self.make.clone())
    }
}

impl<M: std::fmt::Debug, T> std::fmt::Debug for MakeServiceHandler<M, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MakeServiceHandler")
            .field("make", &self.make)
            .finish()
    }
}

impl<M, T, S> Handler for MakeServiceHandler<M, T>
where
    T: MakeTarget,
    M: Service<T, Response = S> + Clone + Send + Sync + 'static,
    M::Future: Send,
    M::Error: Send + Into<Box<dyn std::error::Error + Send + Sync>>,
    // The service made is one `ServiceHandler` serves.
    ServiceHandler<S>: Handler,
{
    async fn handle(&self, exchange: &mut Exchange<'_>) -> Result<(), Error> {
        let service = self.service_for(exchange.peer_addr()).await?;
        ServiceHandler::new(service).handle(exchange).await
    }
}

impl<M, T> MakeServiceHandler<M, T> {
    /// The service the make service makes for a client at `peer` (also `upgrade`'s); an error
    /// for a client the target cannot describe, or a failed make service.
    pub(super) async fn service_for<S>(&self, peer: PeerAddr) -> Result<S, Error>
    where
        T: MakeTarget,
        M: Service<T, Response = S> + Clone,
        M::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Some(target) = T::from_peer(peer) else {
            return Err(Error::user(format!(
                "this make service takes a {}, which a client on a Unix socket has not: serve it \
                 with MakeServiceHandler::<_, weir::transport::PeerAddr>::with_target",
                std::any::type_name::<T>()
            )));
        };
        let mut make = self.make.clone();
        poll_fn(|cx| make.poll_ready(cx))
            .await
            .map_err(Error::user)?;
        make.call(target).await.map_err(Error::user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_made_from_the_peer_address() {
        let tcp = PeerAddr::Tcp("127.0.0.1:4000".parse().unwrap());
        assert_eq!(
            SocketAddr::from_peer(tcp),
            Some("127.0.0.1:4000".parse().unwrap())
        );
        assert_eq!(SocketAddr::from_peer(PeerAddr::Unix), None);
        assert_eq!(PeerAddr::from_peer(PeerAddr::Unix), Some(PeerAddr::Unix));
        assert_eq!(PeerAddr::from_peer(tcp), Some(tcp));
    }
}
