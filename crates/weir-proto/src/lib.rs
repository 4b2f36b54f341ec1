//! The HTTP/1.1 protocol core of weir.
//!
//! This crate does no I/O and reads no clock: bytes and the current time come in as arguments,
//! decisions come out as values. The I/O layer (the `weir` crate) owns sockets, buffers and
//! timers and drives the functions here, in this order, for every request on a connection:
//!
//! 1. [`parse::HeadParser::parse`] over the connection's read buffer until it yields a
//!    [`RequestHead`] (copied into the pooled head, so the read buffer can move on);
//! 2. [`body::BodyDecoder`] over the following bytes, which separates payload from framing
//!    (`Content-Length` or chunked) and tells how many payload bytes may be read from the socket
//!    straight into a caller's buffer ([`body::BodyDecoder::direct_window`]);
//! 3. [`encode`] writes the response head and chunk framing into a reused buffer;
//! 4. [`conn::Persistence`] decides whether the connection may carry another request.
//!
//! Every limit is a field of [`Limits`], with its default and the reason for it. Every way a
//! request can be malformed is a variant of [`ProtoError`], which knows its status code and
//! whether the connection must be closed.
//!
//! # Mutation testing
//!
//! The tests of `body`, `framing`, `parse` and `request` kill every mutant `cargo mutants`
//! makes of those files, except the equivalent ones listed with their reasons in
//! `docs/RELIABILITY.md` ("mutation testing of the protocol core"), which also gives the
//! command and how long it takes: too long for every CI run, so run it before a release and
//! whenever one of these files changes. A new survivor is a rule no test states: add a test
//! named after the rule, or list the mutant as equivalent with the reason.
#![forbid(unsafe_code)]

pub mod body;
pub mod chars;
pub mod conditional;
pub mod conn;
pub mod date;
pub mod digest_fields;
pub mod encode;
pub mod error;
pub mod framing;
pub mod limits;
pub mod parse;
pub mod range;
pub mod request;
pub mod upload_fields;

pub use error::ProtoError;
pub use framing::Framing;
pub use limits::Limits;
pub use request::RequestHead;
