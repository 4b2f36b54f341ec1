//! The digest of the whole upload given by a request, to verify at the commit: `Repr-Digest`,
//! or the `Content-Digest` of a request that carries the whole representation (a
//! `Content-Digest` of part of an upload cannot be checked: refused). In the head of the
//! creation ([`expected_digest`], kept in the upload's record), or as a trailer of the request
//! that completes it ([`trailer_digest`]: the one reading of the trailer for both stores,
//! `ResumableAppend::expect_digest`), so a client can hash while it sends (`weir put`); a trailer that
//! disagrees with the digest the creation gave is refused (400). Announced at creation
//! (`Trailer:`, [`announces_trailer_digest`]), it makes the creation hash while receiving.

use weir::Exchange;
use weir_store::ContentDigest;

/// The `Repr-Digest` (or, for a request with the whole representation, `Content-Digest`)
/// to verify at completion, as its header text.
pub(in crate::serve) fn expected_digest(
    ex: &Exchange<'_>,
    complete: bool,
) -> Result<Option<String>, String> {
    let mut joined = String::new();
    let content = ex.request().header_all("content-digest").next().is_some();
    if content && !complete {
        return Err(
            "Content-Digest of part of an upload is not supported: send Repr-Digest (the \
                    digest of the whole upload) when creating it"
                .to_owned(),
        );
    }
    for name in ["repr-digest", "content-digest"] {
        for value in ex.request().header_all(name) {
            let value = std::str::from_utf8(value).map_err(|_| format!("{name} is not ASCII"))?;
            if !joined.is_empty() {
                joined.push_str(", ");
            }
            joined.push_str(value);
        }
    }
    let digest = ContentDigest::parse(&joined).map_err(|e| e.to_string())?;
    Ok((!digest.is_empty()).then(|| digest.to_header_value()))
}

/// Whether the head announces a digest of the whole upload as a trailer (`Trailer:
/// content-digest` or `repr-digest`).
pub(in crate::serve) fn announces_trailer_digest(ex: &Exchange<'_>) -> bool {
    ex.request().header_all("trailer").any(|value| {
        value.split(|&b| b == b',').any(|name| {
            let name = name.trim_ascii();
            name.eq_ignore_ascii_case(b"content-digest")
                || name.eq_ignore_ascii_case(b"repr-digest")
        })
    })
}

/// The digest of the whole upload sent as a trailer of the request that completes it (a
/// `Repr-Digest`, or the `Content-Digest` of a creation that carried all of it: `offset` 0),
/// for the completion to verify (a mismatch: nothing stored, the upload removed), so a client
/// can hash while sending instead of before. `Ok(None)`: none. `Err` (answer 400) when
/// malformed, or when it disagrees with the digest the creation gave (`kept`, as its header
/// value).
pub(in crate::serve) fn trailer_digest(
    ex: &Exchange<'_>,
    offset: u64,
    kept: Option<&str>,
) -> Result<Option<ContentDigest>, String> {
    let Some(trailers) = ex.trailers() else {
        return Ok(None);
    };
    let mut joined = String::new();
    let names: &[&str] = if offset == 0 {
        &["repr-digest", "content-digest"]
    } else {
        &["repr-digest"]
    };
    for name in names {
        for value in trailers.get_all(*name) {
            let value = value
                .to_str()
                .map_err(|_| format!("{name} trailer is not ASCII"))?;
            if !joined.is_empty() {
                joined.push_str(", ");
            }
            joined.push_str(value);
        }
    }
    let digest = ContentDigest::parse(&joined).map_err(|e| format!("trailer: {e}"))?;
    if digest.is_empty() {
        return Ok(None);
    }
    if let Some(kept) = kept.and_then(|d| ContentDigest::parse(d).ok()) {
        let sha256 = matches!((kept.sha256, digest.sha256), (Some(a), Some(b)) if a != b);
        let sha512 = matches!((kept.sha512, digest.sha512), (Some(a), Some(b)) if a != b);
        if sha256 || sha512 {
            return Err("the digest trailer disagrees with the upload's digest".to_owned());
        }
    }
    Ok(Some(digest))
}
