//! The sans-IO HTTP core of weir: the HTTP/1.1 wire protocol the library runs on, and the HTTP
//! semantics that only the service (`weir serve`, its `weir put`/`weir get` client, and
//! weir-store) uses.
//!
//! This crate does no I/O, has no runtime and reads no clock: bytes and the current time come in
//! as arguments, decisions come out as values.
//!
//! # The wire core, used by the library
//!
//! The I/O layer (the `weir` crate) owns sockets, buffers and timers and drives the functions
//! here, in this order, for every request on a connection:
//!
//! 1. [`parse::HeadParser::parse`] over the connection's read buffer until it yields a
//!    [`RequestHead`] (copied into the pooled head, so the read buffer can move on);
//! 2. [`body::BodyDecoder`] over the following bytes, which separates payload from framing
//!    (`Content-Length` or chunked, decided by [`framing`]) and tells how many payload bytes may
//!    be read from the socket straight into a caller's buffer
//!    ([`body::BodyDecoder::direct_window`]);
//! 3. [`encode`] writes the response head and chunk framing into a reused buffer, with the
//!    `Date` value from [`date`];
//! 4. [`conn::Persistence`] decides whether the connection may carry another request.
//!
//! Every limit is a field of [`Limits`], with its default and the reason for it. Every way a
//! request can be malformed is a variant of [`ProtoError`], which knows its status code and
//! whether the connection must be closed. [`chars`] holds the character classes of RFC 9110, the
//! one definition the parser, the decoders, the encoder and the digest fields use.
//!
//! # HTTP semantics, used only by the service
//!
//! - [`conditional`]: preconditions (RFC 9110 §13) for every method, in §13.2.2's order, against
//!   the validators the caller read; a request is read through
//!   [`conditional::RequestFields`], which a server implements for its own request type;
//! - [`digest_fields`]: `Content-Digest` and `Repr-Digest` (RFC 9530) parsed and formatted;
//! - [`range`]: the `Range` header (RFC 9110 §14.2) evaluated against a size;
//! - [`upload_fields`]: the resumable-upload fields (`Upload-Complete`, `Upload-Offset`,
//!   `Upload-Length`, `Upload-Limit`).
//!
//! # Mutation testing
//!
//! The tests of `body`, `framing`, `parse` and `request` kill every mutant `cargo mutants`
//! makes of those files, except the equivalent ones listed with their reasons in
//! `docs/archive/RELIABILITY-history.md` ("mutation testing of the protocol core"), which also
//! gives the command and how long it takes: too long for every CI run, so run it before a
//! release and whenever one of these files changes. A new survivor is a rule no test states: add
//! a test named after the rule, or list the mutant as equivalent with the reason.
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
