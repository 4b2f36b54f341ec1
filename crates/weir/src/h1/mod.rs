//! HTTP/1.1 over a [`Stream`](crate::transport::Stream): drives `weir_proto` with real
//! sockets, buffers and timers.
//!
//! - `conn`: the per-connection task and its loop (read head → handler → finish);
//! - `backend`: the connection as the exchange's `Backend` (one call per operation);
//! - `io`: the read and write buffers and timed socket operations;
//! - `body`: request body reads (pause threshold, direct reads, splice);
//! - `response`: response writing (coalescing, chunking, sendfile).

mod backend;
mod body;
mod conn;
mod io;
mod response;

pub(crate) use conn::{Conn, serve_connection};
