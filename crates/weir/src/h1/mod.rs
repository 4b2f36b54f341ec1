//! HTTP/1.1 over a [`Stream`](crate::transport::Stream): drives `weir_proto` with real
//! sockets, buffers and timers.
//!
//! - `conn`: the per-connection task and its loop (read head → handler → finish);
//! - `backend`: the connection as the exchange's `Backend` (one call per operation);
//! - `io`: the read and write buffers and timed socket operations;
//! - `body_state`: a request body's state (the shared `BodyPolicy`, the decoder, trailers);
//! - `body`: request body reads (pause threshold, direct reads, splice);
//! - `response`: response writing (coalescing, chunking, sendfile).
//!
//! `conn.rs` declares `Conn` and imports only `io` and `body_state`; `body.rs`,
//! `response.rs` and `backend.rs` add methods to `Conn` and import `conn`, never each other:
//! no import loop.

mod backend;
mod body;
mod body_state;
mod conn;
mod io;
mod response;

#[cfg(feature = "upgrades")]
pub(crate) use conn::HandOver;
pub(crate) use conn::{Conn, serve_connection};
