//! What weir's tests, fuzz targets and benchmarks share, so that each test binary does not carry
//! its own copy: one crate instead of files included across crates with `#[path]`.
//!
//! - [`alloc`]: the counting global allocators (tests and weir-bench);
//! - [`fuzz_checks`]: the properties the fuzz targets assert, replayed over the corpus by
//!   `tests/fuzz_corpus.rs` (always built; the fuzz workspace uses only this);
//! - [`h1`]: a raw HTTP/1.1 client and response parser;
//! - [`h2_frames`]: a raw HTTP/2 frame client;
//! - [`server`] (feature `servers`): weir's library server on its own thread;
//! - [`serve_binary`]: the `weir serve` binary as a child process;
//! - `cert` (feature `tls`): a self-signed certificate with server and client configurations;
//! - [`h2spec`]: running h2spec and reading its report;
//! - `seaweed` (feature `seaweed`): SeaweedFS's `weed mini`, an S3 store on loopback;
//! - [`tools`]: the rule for a test whose outside tool is missing (skipped with a line, or a
//!   failure under `WEIR_REQUIRE_TOOLS=1`), and the checks for a program or a Python module.
//!
//! Dev-only (`publish = false`): no published crate depends on it.

pub mod alloc;
pub mod fuzz_checks;
pub mod h1;
pub mod h2_frames;
pub mod h2spec;

#[cfg(feature = "tls")]
pub mod cert;
#[cfg(feature = "seaweed")]
pub mod seaweed;
pub mod serve_binary;
#[cfg(feature = "servers")]
pub mod server;
pub mod tools;
