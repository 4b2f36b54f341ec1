//! weir: an HTTP server library (HTTP/1.1, HTTP/2, TLS) for large request bodies and many small
//! requests. One handler API serves every protocol.
//!
//! - A request body streams to the handler as it arrives, under backpressure: the server reads
//!   at most the *pause threshold* (default 1 MiB) ahead of the handler, then stops reading the
//!   socket ([`Config::pause_threshold`]).
//! - Large reads go straight into the handler's buffer ([`Exchange::read_body`]), or from the
//!   socket to a file with no user-space copy ([`Exchange::body_to_file`]).
//! - One task per connection runs parsing, the handler and body reads: no hop between threads.
//! - Per-connection state is reused from request to request: no heap allocation per request
//!   in steady state.
//!
//! # An axum (or any tower) app
//!
//! [`ServiceHandler`] serves a tower `Service` (feature `tower`): an axum `Router` with its
//! extractors, state and tower-http layers runs on weir by changing the line that serves it.
//! The module [`service`] says how the body keeps weir's backpressure and what the adoption
//! path costs; [`ExchangeHandle`] and [`FileBody`] reach weir's direct paths from a handler.
//!
//! What differs from `axum::serve`:
//! - `app.into_make_service_with_connect_info::<SocketAddr>()` (axum's `ConnectInfo`) is served
//!   by [`MakeServiceHandler`] instead of [`ServiceHandler`];
//! - weir's limits hold for the app too: a streamed request body above 30 MiB needs
//!   [`Config::with_max_body_size`] (or the handle's per-request limit), and a request target
//!   must be ASCII (RFC 9112; hyper also takes raw UTF-8);
//! - an app with WebSocket routes is served by `UpgradeServiceHandler` (feature `upgrades`;
//!   `UpgradeMakeServiceHandler` for a make service, with `ConnectInfo`), which hands each
//!   upgrade request's connection to hyper's server; through [`ServiceHandler`] axum's
//!   extractor answers `426` (see [`service`]).
//!
//! ```no_run
//! # #[cfg(feature = "tower")]
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let app = axum::Router::new().route("/", axum::routing::get(|| async { "Hello!" }));
//!     // axum::serve(tokio::net::TcpListener::bind("127.0.0.1:8080").await?, app).await
//!     weir::Server::bind("127.0.0.1:8080", weir::Config::default())
//!         .await?
//!         .serve(weir::ServiceHandler::new(app))
//!         .await
//! }
//! # #[cfg(not(feature = "tower"))]
//! # fn main() {}
//! ```
//!
//! # Cargo features
//!
//! `http2` (HTTP/2 over TLS and h2c: the `h2` crate), `tls` (`TlsConfig`, `listen_tls`: rustls
//! with ring), `tower` (`ServiceHandler`, `Body`, `ExchangeHandle`, `FileBody`: the
//! `tower-service`, `http-body` and `futures-core` trait crates) and `upgrades`
//! (`UpgradeServiceHandler`, `UpgradeMakeServiceHandler`: hyper's server, for axum's
//! WebSocket), all on by default. Without
//! them weir is a plain HTTP/1.1 server that compiles neither rustls, ring, h2 nor hyper.
//!
//! # Hello, world
//!
//! ```no_run
//! use http::StatusCode;
//!
//! struct Hello;
//!
//! impl weir::Handler for Hello {
//!     async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
//!         ex.respond(StatusCode::OK)
//!             .header("content-type", "text/plain")
//!             .body("Hello, World!")
//!             .await
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let server = weir::Server::bind("127.0.0.1:8080", weir::Config::default()).await?;
//!     server.serve(Hello).await
//! }
//! ```
//!
//! # Streaming an upload to a file, with a per-request limit
//!
//! ```no_run
//! use http::{Method, StatusCode};
//!
//! struct Upload;
//!
//! impl weir::Handler for Upload {
//!     async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
//!         if ex.request().method() != Method::PUT {
//!             return ex.respond(StatusCode::METHOD_NOT_ALLOWED).empty().await;
//!         }
//!         // This route takes up to 10 GiB; the server default stays at 30 MiB.
//!         ex.set_max_body_size(Some(10 << 30));
//!         let mut file = std::fs::File::create("upload.bin")?;
//!         match ex.body_to_file(&mut file).await {
//!             Ok(n) => ex.respond(StatusCode::CREATED).body(format!("{n} bytes\n")).await,
//!             Err(e) if e.is_too_large() => {
//!                 ex.respond(StatusCode::PAYLOAD_TOO_LARGE).empty().await
//!             }
//!             Err(e) => Err(e), // disconnect, timeout, bad framing: nothing to answer
//!         }
//!     }
//! }
//! # async fn run() -> std::io::Result<()> {
//! # weir::Server::bind("127.0.0.1:0", weir::Config::default()).await?.serve(Upload).await
//! # }
//! ```
//!
//! # Several listeners: HTTPS (with HTTP/2), a Unix socket, and graceful shutdown
//!
//! ```no_run
//! # struct Hello;
//! # impl weir::Handler for Hello {
//! #     async fn handle(&self, ex: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
//! #         ex.respond(http::StatusCode::OK).body("hi").await
//! #     }
//! # }
//! # #[cfg(feature = "tls")]
//! # async fn run() -> std::io::Result<()> {
//! let mut config = weir::Config::default();
//! config.pause_threshold = 4 << 20;
//! let mut server = weir::Server::new(config);
//! server.listen_tcp("127.0.0.1:8080").await?; // HTTP/1.1 and h2c (prior knowledge)
//! let tls = weir::TlsConfig::from_pem_files("cert.pem", "key.pem")?;
//! server.listen_tls("127.0.0.1:8443", tls).await?; // HTTPS: h2 or http/1.1 by ALPN
//! server.listen_unix("/tmp/weir.sock")?;
//! server.serve_until(Hello, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
// No unsafe code but one `mallopt` call in `malloc.rs`, the adoption of inherited
// descriptors in `transport/inherited.rs` (socket activation), and in the tower path
// (`service/`) the thread's current exchange read through its pointer (`handle.rs`) and request
// header values handed to `http` without its second check (`request.rs`), allowed there alone.
#![deny(unsafe_code)]

mod buffer_pool;
mod clock;
mod config;
mod error;
mod exchange;
mod h1;
#[cfg(feature = "http2")]
mod h2;
mod handler;
pub mod malloc;
mod refused;
mod request;
mod response;
mod server;
#[cfg(feature = "tower")]
pub mod service;
mod stats;
pub mod transport;
mod zero_copy;

pub use config::{Config, DataRate, Http2Config, Http2Windows, Limits};
pub use error::{Error, ProtocolError, Side};
pub use exchange::Exchange;
pub use handler::Handler;
pub use refused::{OnRefused, Refused};
pub use request::{Framing, Request};
pub use response::{BodyWriter, Response};
pub use server::{Server, ServerHandle};
#[cfg(feature = "tower")]
pub use service::{Body, ExchangeHandle, FileBody, MakeServiceHandler, ServiceHandler};
#[cfg(feature = "upgrades")]
pub use service::{UpgradeMakeServiceHandler, UpgradeServiceHandler};
pub use stats::{BodyStats, Stats};
#[cfg(feature = "tls")]
pub use transport::{CertReloader, TlsConfig, TlsError};

/// Re-exported so that handlers name the same `http` types as weir.
pub use http;
/// Re-exported so that [`TlsConfig::from_rustls`] takes the same `rustls` as weir.
#[cfg(feature = "tls")]
pub use rustls;
