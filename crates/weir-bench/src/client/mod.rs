//! The clients: one load generator for many small requests and one upload client for large
//! bodies. The same client measures every system, so ratios compare servers, not clients.

pub mod h2_upload;
pub mod load;
pub mod response;
pub mod resumable;
pub mod spliced;
pub mod stream;
pub mod upload;
pub mod wrk;
