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
//! A front end's request path, in outline (`no_run`: the request here is not really signed):
//!
//! ```no_run
//! use std::time::SystemTime;
//! use http::{HeaderMap, Method};
//! use weir_s3api::checksum::Checksum;
//! use weir_s3api::chunked::Event;
//! use weir_s3api::route::{self, Operation, RouteConfig};
//! use weir_s3api::sigv4::{self, Credential, Request, VerifyConfig};
//! use weir_s3api::xml::errors::error_body;
//!
//! # fn store_write(_: &[u8]) {}
//! # fn store_commit() {}
//! fn handle(method: &Method, path: &str, query: &str, headers: &HeaderMap, body_reads: &[&[u8]])
//!     -> Result<(), weir_s3api::S3Error>
//! {
//!     let request = Request { method, path, query, headers };
//!     let routed = route::classify(&request, &RouteConfig { base_domains: vec!["s3.example.com".into()] })?;
//!     // Access key → secret and the caller's scope (weir: the token's scopes).
//!     let keys = |id: &str| (id == "AKID").then(|| Credential { secret_access_key: "secret".into(), scope: "rw:/" });
//!     let verified = sigv4::verify(&request, &keys, &VerifyConfig::default(), SystemTime::now())?;
//!     if let Operation::PutObject = routed.operation {
//!         match verified.chunked_decoder() {
//!             Some(mut decoder) => {
//!                 let mut crc = verified.trailer.map(Checksum::new);
//!                 for read in body_reads {
//!                     let mut pos = 0;
//!                     while pos < read.len() {
//!                         let (used, event) = decoder.decode(&read[pos..])?;
//!                         if let Event::Data(range) = &event {
//!                             let data = &read[pos..][range.clone()]; // no copy
//!                             crc.as_mut().map(|c| c.update(data));
//!                             store_write(data); // to a temporary: nothing visible yet
//!                         }
//!                         if let Event::End(trailers) = event {
//!                             if let (Some(c), Some(claimed)) = (crc.take(), trailers.checksum) {
//!                                 c.finalize().check(&claimed)?;
//!                             }
//!                             store_commit(); // only now
//!                             return Ok(());
//!                         }
//!                         pos += used;
//!                     }
//!                 }
//!                 decoder.finish()?; // the body ended early: IncompleteBody
//!             }
//!             None => {
//!                 // Plain body: hash it while storing, then before committing:
//!                 // verified.payload.check_sha256(&sha256_of_body)?;
//!             }
//!         }
//!     }
//!     Ok(())
//! }
//! # let _ = error_body;
//! ```
//!
//! Invariants: nothing here does I/O or reads the time; every input is bounded (line buffer of
//! the chunked decoder, XML body size and depth, list sizes); no `unsafe`. Every failure is an
//! [`S3Error`], which carries S3's error code and HTTP status, so the front end never has to map
//! errors itself.

#![forbid(unsafe_code)]

pub mod attributes;
pub mod checksum;
pub mod chunked;
mod error;
mod percent;
pub mod route;
pub mod sigv4;
pub mod xml;

pub use error::{ErrorCode, S3Error};
