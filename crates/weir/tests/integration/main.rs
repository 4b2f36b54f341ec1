//! Integration tests: a real `weir::Server` on 127.0.0.1, real clients (raw sockets, curl).
//!
//! Areas: `framing` (malformed requests: 400 and close), `pipelining`, `body` (streaming,
//! limits, backpressure, copies), `response` (framing of responses, 1xx, HEAD), `curl` (uploads
//! with a real client), `lifecycle` (timeouts, shutdown, connection limits).

mod body;
mod curl;
mod framing;
mod lifecycle;
mod pipelining;
mod response;
mod support;
