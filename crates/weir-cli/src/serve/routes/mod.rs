//! The routes of `weir serve`, one module per protocol, each dispatched to by `router.rs` and
//! none importing another but `webdav/` and `s3/`, which call into `files/`'s operations so
//! that none of their rules has a second copy: what they share (the body paths,
//! preconditions, answers, the service's state) lives beside them in `serve/`.
//!
//! | module | protocol |
//! | --- | --- |
//! | `files/` | `/files/`: downloads, listings, `PUT`, forms, deletes, folders; one module per operation, generic over weir-store's `Store` |
//! | `resumable.rs` | resumable uploads (draft-ietf-httpbis-resumable-upload), generic over `ResumableStore` |
//! | `tus.rs` | tus 1.0.0 over the same uploads |
//! | `page.rs` | the browser page and its assets |
//! | `whoami.rs` | `GET /whoami`: what the request's credential may do |
//! | `s3/` | the S3-compatible API, on `--s3-api`'s listener; one module per operation group, generic over weir-store's `Store`; it calls into `files/`'s download (`Answer::judge`, `send`) |
//! | `webdav/` | WebDAV under `/dav/`: like `s3/`, a route that calls into another (`files/`'s download, upload, delete and listing, so that none of their rules has a second copy); `files/` never imports it |

pub(super) mod files;
pub(super) mod page;
pub(super) mod resumable;
pub(super) mod s3;
pub(super) mod tus;
pub(super) mod webdav;
pub(super) mod whoami;
