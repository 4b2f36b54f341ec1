//! S3's error body:
//! `<Error><Code>…</Code><Message>…</Message><Resource>…</Resource><RequestId>…</RequestId></Error>`,
//! with the HTTP status of [`crate::ErrorCode::status`] (the table is in `error.rs`).
//!
//! A `HEAD` request's error has no body (S3 sends the status alone): the front end skips the
//! body for `HEAD`.

use super::escape_into;
use crate::S3Error;

/// Appends the XML body of `error` for `resource` (the request's path) and `request_id`.
pub fn write_error(out: &mut Vec<u8>, error: &S3Error, resource: &str, request_id: &str) {
    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>");
    out.extend_from_slice(error.code.as_str().as_bytes());
    out.extend_from_slice(b"</Code><Message>");
    escape_into(out, &error.message);
    out.extend_from_slice(b"</Message><Resource>");
    escape_into(out, resource);
    out.extend_from_slice(b"</Resource><RequestId>");
    escape_into(out, request_id);
    out.extend_from_slice(b"</RequestId>");
    for (element, text) in &error.details {
        out.push(b'<');
        out.extend_from_slice(element.as_bytes());
        out.push(b'>');
        escape_into(out, text);
        out.extend_from_slice(b"</");
        out.extend_from_slice(element.as_bytes());
        out.push(b'>');
    }
    out.extend_from_slice(b"</Error>");
}

/// The error body as a new buffer.
pub fn error_body(error: &S3Error, resource: &str, request_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + error.message.len() + resource.len());
    write_error(&mut out, error, resource, request_id);
    out
}
