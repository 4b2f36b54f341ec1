//! Integration tests: a real `weir::Server` on 127.0.0.1, real clients (raw sockets, curl).
//!
//! Areas: `framing` (malformed requests: 400 and close), `pipelining`, `body` (streaming,
//! limits, backpressure, copies), `response` (framing of responses, 1xx, HEAD), `curl` (uploads
//! with a real client), `lifecycle` (timeouts, shutdown, connection limits), `tls` (HTTPS over
//! HTTP/1.1 and HTTP/2), `tls_records` (weir's TLS record layer against rustls's client), `h2` (HTTP/2 behaviour with curl and the h2 client), `h2_frames`
//! (HTTP/2 conformance and flood defences with raw frames), `h2_conformance` (the external
//! `httpwg` suite, a port of h2spec), `h2spec` (h2spec itself, strict), `tower` (an axum app with tower-http layers through
//! `weir::ServiceHandler`, routes in `tower_app`), `tower_late_body` (a body read after a
//! `202`), `tower_make` (axum's
//! `into_make_service_with_connect_info` through `weir::MakeServiceHandler`), `tower_stream`
//! (a streamed response's frames leave as they come), `tower_example` (the axum example's code), `tower_upgrade`
//! (WebSocket through axum, served by hyper).
//!
//! The areas that speak HTTP/2 or TLS (their support module, `h2_support`, starts both
//! listeners) build only with the features `http2` and `tls`; the rest also runs with
//! `--no-default-features`.

mod body;
mod curl;
mod framing;
#[cfg(all(feature = "http2", feature = "tls"))]
mod h2;
#[cfg(all(feature = "http2", feature = "tls"))]
mod h2_conformance;
#[cfg(all(feature = "http2", feature = "tls"))]
mod h2_frames;
#[cfg(all(feature = "http2", feature = "tls"))]
mod h2_support;
#[cfg(all(feature = "http2", feature = "tls"))]
mod h2spec;
mod lifecycle;
#[cfg(target_os = "linux")]
mod passed_fd;
mod pipelining;
mod response;
mod support;
#[cfg(all(feature = "http2", feature = "tls"))]
mod tls;
#[cfg(all(feature = "http2", feature = "tls"))]
mod tls_records;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower_app;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower_example;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower_late_body;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower_make;
#[cfg(all(feature = "tower", feature = "http2", feature = "tls"))]
mod tower_stream;
#[cfg(all(feature = "upgrades", feature = "http2", feature = "tls"))]
mod tower_upgrade;
mod trailers;
