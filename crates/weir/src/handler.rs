//! The [`Handler`] trait: what a server calls for every request.

use crate::{Error, Exchange};
use std::future::Future;
use std::sync::Arc;

/// Handles requests. One value serves every connection, so it is `Sync`; per-request state
/// lives in the [`Exchange`] it is given by mutable reference (pooled by the connection, so
/// handing a request over allocates nothing).
///
/// Implement it with an `async fn`:
///
/// ```
/// struct Hello;
///
/// impl weir::Handler for Hello {
///     async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
///         ex.respond(http::StatusCode::OK).body("Hello, World!").await
///     }
/// }
/// ```
///
/// The handler runs on the connection's task: body reads happen inside it, on demand. If it
/// returns an error before responding, the server answers with [`Error::status_code`]; if it
/// returns without responding, with `500`.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request.
    fn handle(&self, exchange: &mut Exchange<'_>)
    -> impl Future<Output = Result<(), Error>> + Send;
}

impl<H: Handler> Handler for Arc<H> {
    fn handle(
        &self,
        exchange: &mut Exchange<'_>,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        (**self).handle(exchange)
    }
}
