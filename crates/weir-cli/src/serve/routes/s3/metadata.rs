//! An object's S3 metadata on the wire: read from a PutObject's, CopyObject's (`REPLACE`) or
//! CreateMultipartUpload's request into weir-store's `ObjectMeta` (which the store keeps with
//! the object's commit), and sent back on GetObject and HeadObject.
//!
//! Kept: `x-amz-meta-*` (at most 2 KiB of names and values, as S3: else `MetadataTooLarge`,
//! before any body byte is read), `Cache-Control`, `Content-Disposition`, `Content-Encoding`
//! (less `aws-chunked`, which only frames the request's body), `Content-Language`, `Expires`.
//! The media type is kept apart (`Content-Type`, every store's). A field sent twice is kept
//! once, its values joined with `,` (as HTTP combines them). `x-amz-meta-weir-*` is weir's
//! own in a bucket store: `InvalidArgument`.

use weir::Request;
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{KEPT_FIELDS, ObjectMeta, ObjectMetaError};

/// The metadata `head` gives its object; `None`: none.
pub(super) fn of_request(head: &Request) -> Result<Option<ObjectMeta>, S3Error> {
    // ALLOCATION: the fields, once per request that sends metadata.
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, value) in head.headers() {
        let name = name.to_ascii_lowercase();
        let value = if name == "content-encoding" {
            match without_aws_chunked(value) {
                Some(v) => v,
                None => continue,
            }
        } else if name.starts_with("x-amz-meta-") || KEPT_FIELDS.contains(&name.as_str()) {
            value.to_vec()
        } else {
            continue;
        };
        match fields.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.push(b',');
                v.extend_from_slice(&value);
            }
            None => fields.push((name, value)),
        }
    }
    if fields.is_empty() {
        return Ok(None);
    }
    let mut meta = ObjectMeta::new();
    for (name, value) in &fields {
        meta.push(name, value).map_err(|e| match e {
            ObjectMetaError::TooLarge => S3Error::from_code(ErrorCode::MetadataTooLarge)
                .with_detail(
                    "MaxMessageLengthBytes",
                    weir_store::MAX_USER_META.to_string(),
                ),
            ObjectMetaError::BadName | ObjectMetaError::BadValue => S3Error::new(
                ErrorCode::InvalidArgument,
                "x-amz-meta-weir-* is reserved by weir, and metadata names are header tokens.",
            ),
        })?;
    }
    Ok(Some(meta))
}

/// `Content-Encoding` without its `aws-chunked` codings; `None` when nothing else is left.
fn without_aws_chunked(value: &[u8]) -> Option<Vec<u8>> {
    let codings: Vec<&[u8]> = value
        .split(|b| *b == b',')
        .map(|c| c.trim_ascii())
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case(b"aws-chunked"))
        .collect();
    (!codings.is_empty()).then(|| codings.join(&b", "[..]))
}

#[cfg(test)]
mod tests {
    use super::without_aws_chunked;

    #[test]
    fn aws_chunked_is_framing_not_a_coding_of_the_object() {
        let kept = |v: &[u8]| without_aws_chunked(v);
        assert_eq!(kept(b"gzip").as_deref(), Some(&b"gzip"[..]));
        assert_eq!(
            kept(b"deflate, gzip").as_deref(),
            Some(&b"deflate, gzip"[..])
        );
        assert_eq!(kept(b"gzip, aws-chunked").as_deref(), Some(&b"gzip"[..]));
        assert_eq!(kept(b"aws-chunked,gzip").as_deref(), Some(&b"gzip"[..]));
        assert_eq!(kept(b"aws-chunked"), None);
        assert_eq!(kept(b""), None);
    }
}
