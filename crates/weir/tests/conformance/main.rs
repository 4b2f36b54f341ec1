//! Hostile input, slow clients and operator mistakes, against a real `weir::Server` on
//! 127.0.0.1 with raw sockets (see `docs/RELIABILITY.md` for the whole list of checks).
//!
//! - `rfc9112`: one table row per framing or syntax rule of RFC 9112 / RFC 9110, each with its
//!   section: the status, the close, and no byte after a bad request ever served.
//! - `slow_clients`: head and idle timeouts, minimum body and response data rates, the bound on
//!   connections, with short configured values; assertions on behaviour, not durations.
//! - `listeners`: binding mistakes come back as clear `io::Error`s and destroy nothing.

mod harness;
mod listeners;
mod rfc9112;
mod slow_clients;
