//! The raw baselines: servers that do the least work plain Rust can do for each scenario.
//!
//! They must be honest: as fast as we can make them, with large buffers and no per-read
//! allocation, or every ratio to them flatters weir.
//! - [`responder`]: many small requests. epoll, one event loop per thread, parses nothing but
//!   request boundaries and writes a pre-encoded response (the seed's "raw RIO server").
//! - [`upload`]: one large body per connection. A blocking thread per connection reading with
//!   large buffers into the sink: nothing between the socket and the destination.

pub mod responder;
pub mod upload;
