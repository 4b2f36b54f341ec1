//! Integration tests: a real `weir::Server` on 127.0.0.1, real clients (raw sockets, curl).
//!
//! Areas: `framing` (malformed requests: 400 and close), `pipelining`, `body` (streaming,
//! limits, backpressure, copies), `response` (framing of responses, 1xx, HEAD), `curl` (uploads
//! with a real client), `lifecycle` (timeouts, shutdown, connection limits), `tls` (HTTPS over
//! HTTP/1.1 and HTTP/2), `tls_records` (weir's TLS record layer against rustls's client), `h2` (HTTP/2 behaviour with curl and the h2 client), `h2_frames`
//! (HTTP/2 conformance and flood defences with raw frames), `h2_conformance` (the external
//! `httpwg` suite, a port of h2spec), `h2spec` (h2spec itself, strict), `tower` (an axum app with tower-http layers through
//! `weir::ServiceHandler`, routes in `tower_app`).

mod body;
mod curl;
mod framing;
mod h2;
mod h2_conformance;
mod h2_frames;
mod h2_support;
mod h2spec;
mod lifecycle;
#[cfg(target_os = "linux")]
mod passed_fd;
mod pipelining;
mod response;
mod support;
mod tls;
mod tls_records;
#[cfg(feature = "tower")]
mod tower;
#[cfg(feature = "tower")]
mod tower_app;
mod trailers;
