//! The S3 backend's answers read: an object's head (`HeadObject`'s headers as weir's
//! [`FileMeta`] and kept fields), ETags, bodies, error codes (a refused condition as
//! [`StoreError::PreconditionFailed`]), and the small text forms the backend uses (hex
//! digests, XML references).

use super::*;

pub(super) fn head_from(headers: &HeaderMap) -> Result<Head, StoreError> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let size = text("content-length")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Backend {
            op: "head object",
            message: "no Content-Length".into(),
        })?;
    let modified = text("last-modified")
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .unwrap_or(UNIX_EPOCH);
    let sha256 = text(SHA256_META).and_then(parse_hex32);
    let media_type = headers
        .get("content-type")
        .and_then(|v| MediaType::parse(v.as_bytes()));
    let etag = text("etag").unwrap_or("").to_owned();
    let props = text(props::PROPS_META).and_then(props::decode);
    let object_meta = meta::from_headers(headers);
    let checksum_follows = headers.contains_key(sidecar::CHECKSUM_FOLLOWS_META);
    // A client's time (WebDAV's `X-OC-Mtime`, rclone's S3 backend) is the object's, as
    // `LocalStore` keeps it in the file: its second, marked as a weak date validator.
    let modified = match meta::mtime(object_meta.as_ref()) {
        Some(t) => crate::version_date::client_time(t, None),
        None => modified,
    };
    Ok(Head {
        meta: FileMeta {
            size,
            modified,
            sha256,
        },
        media_type,
        props,
        object_meta,
        etag,
        checksum_follows,
    })
}

/// The `ETag` of an answer, as sent (quotes kept); `None` if it has none.
pub(super) fn etag(resp: &Response<Incoming>) -> Option<&str> {
    resp.headers().get("etag").and_then(|v| v.to_str().ok())
}

/// [`etag`], or empty: for a conditional write later, where an empty tag matches nothing.
pub(super) fn etag_of(resp: &Response<Incoming>) -> String {
    etag(resp).unwrap_or("").to_owned()
}

pub(super) async fn collect(
    op: &'static str,
    resp: Response<Incoming>,
) -> Result<Bytes, StoreError> {
    resp.into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| StoreError::Backend {
            op,
            message: e.to_string(),
        })
}

/// A write's answer: success, a refused condition, or a failure.
pub(super) async fn check_write(
    op: &'static str,
    resp: Response<Incoming>,
) -> Result<(), StoreError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let body = collect(op, resp).await.unwrap_or_default();
    Err(write_failure(op, status, &body))
}

pub(super) fn write_failure(op: &'static str, status: StatusCode, body: &[u8]) -> StoreError {
    let code = error_code(body);
    if status == StatusCode::PRECONDITION_FAILED
        || status == StatusCode::CONFLICT
        || code == "PreconditionFailed"
        || code == "ConditionalRequestConflict"
    {
        return StoreError::PreconditionFailed;
    }
    StoreError::Backend {
        op,
        message: format!("{status} {code}"),
    }
}

/// An unexpected answer as an error: its status and S3 error code.
pub(super) async fn failure(op: &'static str, resp: Response<Incoming>) -> StoreError {
    let status = resp.status();
    let body = collect(op, resp).await.unwrap_or_default();
    StoreError::Backend {
        op,
        message: format!("{status} {}", error_code(&body)),
    }
}

pub(super) fn error_code(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map_or_else(String::new, |(code, _)| code.to_owned())
}

pub(super) fn source_chain(e: &dyn std::error::Error) -> String {
    let mut out = String::new();
    let mut next = e.source();
    while let Some(s) = next {
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

pub(super) fn xml_unescape(s: &str) -> String {
    // SeaweedFS writes quotes as numeric references (`&#34;`).
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#x22;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

pub(super) fn jiff_now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

pub(super) fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0; 32];
    for (i, pair) in s.chunks(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        out[i] = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_quotes_unescape() {
        assert_eq!(xml_unescape("&#34;ab-2&#34;"), "\"ab-2\"");
        assert_eq!(xml_unescape("&quot;a&amp;lt;&quot;"), "\"a&lt;\"");
    }

    #[test]
    fn digests_round_trip_as_hex() {
        let d = [0xab; 32];
        assert_eq!(parse_hex32(&hex(&d)), Some(d));
        assert_eq!(parse_hex32("zz"), None);
    }
}
