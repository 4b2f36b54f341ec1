//! The sans-IO core of weir's S3-compatible API (issue 33): everything between the bytes of an
//! S3 request and the storage operation it asks for, with no sockets, no runtime, no storage and
//! no clock.
//!
//! The HTTP front end (in `weir serve`) drives it, for each request:
//!
//! 1. [`route::classify`] turns method, path, query and `Host` into an [`route::S3Request`]: the
//!    operation, its bucket and key (decoded), and its parameters. Unknown subresources are
//!    `NotImplemented`.
//! 2. [`sigv4::verify`] authenticates the request (the `Authorization` header or a presigned
//!    URL), against a [`sigv4::CredentialStore`] the caller implements and the current time the
//!    caller passes in. It returns the caller's own scope object for the access key and how the
//!    body is protected ([`sigv4::Payload`]).
//! 3. For an `aws-chunked` body, [`chunked::ChunkedDecoder`] separates data from framing as bytes
//!    arrive, checks each chunk's signature and the trailers; for a plain body with a signed
//!    SHA-256, the caller hashes it (weir hashes every upload anyway) and compares with
//!    [`sigv4::Payload::check_sha256`]. [`checksum`] computes and checks `x-amz-checksum-*` and
//!    `Content-MD5`.
//! 4. [`xml`] parses the small request bodies S3 clients send (bounded, no DTD) and writes the
//!    answers and [`S3Error`]'s error bodies.
//!
//! Invariants: nothing here does I/O or reads the time; every input is bounded (line buffer of
//! the chunked decoder, XML body size and depth, list sizes); no `unsafe`. Every failure is an
//! [`S3Error`], which carries S3's error code and HTTP status, so the front end never has to map
//! errors itself.

#![forbid(unsafe_code)]

pub mod checksum;
pub mod chunked;
mod error;
mod percent;
pub mod route;
pub mod sigv4;
pub mod xml;

pub use error::{ErrorCode, S3Error};
