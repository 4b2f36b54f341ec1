//! An object's S3 metadata ([`ObjectMeta`]) in a bucket: the backend object's own metadata,
//! sent with the `PutObject` or `CreateMultipartUpload` that creates it (so it is there when
//! the object is, never after), read back from its `HeadObject`.
//!
//! User metadata goes as the same `x-amz-meta-*` headers, the other fields as themselves
//! (`Cache-Control`, …). A value that is not printable ASCII (S3 clients may send Latin-1 or
//! UTF-8 bytes), or that starts with `=?`, has space at either end or is empty (which a
//! header or a backend would lose), goes as `=?weir-b64?<base64>?=`, decoded back on the way in, so every value comes
//! back byte for byte. The names `x-amz-meta-weir-*` are weir's own (`ObjectMeta` refuses
//! them from clients): they are never read as a client's.
//!
//! weir's own fields go as `x-amz-meta-weir-parts` (a completed multipart object's part sizes,
//! `PARTS_FIELD`) and `x-amz-meta-weir-checksum` (the S3 checksum a client sent,
//! `CHECKSUM_FIELD`).
//!
//! The backend counts weir's own metadata (`x-amz-meta-weir-sha256`, `-weir-props`,
//! `-weir-parts`, `-weir-checksum-follows`: `sidecar.rs`) and the encoded values against its
//! 2 KiB: a client's user metadata near the bound may be refused by the backend
//! (`StoreError::Backend`), never stored in part.

use crate::{CHECKSUM_FIELD, KEPT_FIELDS, ObjectMeta, PARTS_FIELD};

/// The backend header of weir's [`CHECKSUM_FIELD`] (the S3 checksum a client sent).
const CHECKSUM_META: &str = "x-amz-meta-weir-checksum";

/// The backend header of weir's [`PARTS_FIELD`] (a completed multipart object's part sizes).
const PARTS_META: &str = "x-amz-meta-weir-parts";
use base64::Engine as _;
use http::HeaderMap;
use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The user metadata that holds a client's modification time
/// ([`UploadOptions::modified`](crate::UploadOptions)): rclone's own name for it (its S3
/// backend writes and reads `X-Amz-Meta-Mtime`, seconds since the epoch, maybe with a
/// fraction), so a bucket written through weir's WebDAV shows rclone the same times.
pub(super) const MTIME: &str = "x-amz-meta-mtime";

/// The prefix of an encoded value, and its end.
const ENCODED: (&str, &str) = ("=?weir-b64?", "?=");

/// `meta` with the client's modification time `t` added as [`MTIME`] (whole seconds, as
/// WebDAV's `X-OC-Mtime` gives it). Metadata that already names a time keeps its own.
pub(super) fn with_mtime(meta: Option<ObjectMeta>, t: SystemTime) -> Option<ObjectMeta> {
    let mut meta = meta.unwrap_or_default();
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    // Refused only when the name is there already (the caller's own time stands) or the
    // user metadata is full (a client's at the bound): the object keeps what it was given.
    let _ = meta.push(MTIME, secs.to_string().as_bytes());
    Some(meta)
}

/// The modification time kept as [`MTIME`], if it is one (a decimal number of seconds since
/// the epoch, maybe with a fraction, as rclone writes it); else `None` (the backend's time
/// stands).
pub(super) fn mtime(meta: Option<&ObjectMeta>) -> Option<SystemTime> {
    let value = std::str::from_utf8(meta?.get(MTIME)?).ok()?;
    let secs = value.split('.').next()?;
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(UNIX_EPOCH + Duration::from_secs(secs.parse().ok()?))
}

/// The headers that create an object with `meta` (names as S3 takes them).
pub(super) fn headers(meta: &ObjectMeta) -> impl Iterator<Item = (Cow<'static, str>, String)> {
    // ALLOCATION: a name and value per field, once per object created with metadata.
    meta.stored_fields().map(|(name, value)| {
        let name = match name {
            PARTS_FIELD => Cow::Borrowed(PARTS_META),
            CHECKSUM_FIELD => Cow::Borrowed(CHECKSUM_META),
            other => Cow::Owned(other.to_owned()),
        };
        (name, encode(value))
    })
}

/// The metadata a `HeadObject` answered with; `None` when it has none.
pub(super) fn from_headers(headers: &HeaderMap) -> Option<ObjectMeta> {
    let mut meta = ObjectMeta::new();
    for (name, value) in headers {
        let name = name.as_str();
        let weirs = match name {
            PARTS_META => Some(PARTS_FIELD),
            CHECKSUM_META => Some(CHECKSUM_FIELD),
            _ => None,
        };
        if let Some(field) = weirs {
            let _ = meta.push(field, &decode(value.as_bytes()));
            continue;
        }
        let ours = name.starts_with("x-amz-meta-weir-");
        let kept = name.starts_with("x-amz-meta-") || KEPT_FIELDS.contains(&name);
        if ours || !kept {
            continue;
        }
        // A field the backend holds that weir cannot keep (it was not stored through weir) is
        // left out rather than failing the read.
        let _ = meta.push(name, &decode(value.as_bytes()));
    }
    (!meta.is_empty()).then_some(meta)
}

fn encode(value: &[u8]) -> String {
    // An empty value too: backends (SeaweedFS) drop an empty header.
    let plain = !value.is_empty()
        && value.iter().all(|b| (0x20..0x7f).contains(b))
        && !value.starts_with(b"=?")
        && !value.starts_with(b" ")
        && !value.ends_with(b" ");
    match std::str::from_utf8(value) {
        Ok(text) if plain => text.to_owned(),
        _ => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(value);
            format!("{}{b64}{}", ENCODED.0, ENCODED.1)
        }
    }
}

fn decode(value: &[u8]) -> Cow<'_, [u8]> {
    let encoded = value
        .strip_prefix(ENCODED.0.as_bytes())
        .and_then(|v| v.strip_suffix(ENCODED.1.as_bytes()));
    match encoded.and_then(|e| base64::engine::general_purpose::STANDARD.decode(e).ok()) {
        Some(bytes) => Cow::Owned(bytes),
        None => Cow::Borrowed(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_times_are_rclones_mtime() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let meta = with_mtime(None, t + Duration::from_millis(300));
        assert_eq!(meta.as_ref().unwrap().get(MTIME), Some(&b"1700000000"[..]));
        assert_eq!(mtime(meta.as_ref()), Some(t));
        // rclone's S3 backend writes a fraction.
        let mut frac = ObjectMeta::new();
        frac.push(MTIME, b"1700000000.123456789").unwrap();
        assert_eq!(mtime(Some(&frac)), Some(t));
        let mut bad = ObjectMeta::new();
        bad.push(MTIME, b"-5").unwrap();
        assert_eq!(mtime(Some(&bad)), None);
        assert_eq!(mtime(None), None);
    }

    #[test]
    fn values_survive_headers_byte_for_byte() {
        let mut meta = ObjectMeta::new();
        meta.push("x-amz-meta-plain", b"blue sky").unwrap();
        meta.push("x-amz-meta-latin", b"Hello World\xe9").unwrap();
        meta.push("x-amz-meta-utf8", "é☃".as_bytes()).unwrap();
        meta.push("x-amz-meta-looks", b"=?weir-b64?AA==?=").unwrap();
        meta.push("x-amz-meta-space", b" padded ").unwrap();
        meta.push("x-amz-meta-empty", b"").unwrap();
        meta.push("cache-control", b"no-cache").unwrap();
        assert!(meta.set_parts([5 << 20, 5 << 20, 7]));
        meta.set_checksum("CRC32", "FULL_OBJECT", "WgDhBQ==")
            .unwrap();
        let mut map = HeaderMap::new();
        for (name, value) in headers(&meta) {
            assert!(value.is_ascii(), "{value}");
            let name = http::HeaderName::from_bytes(name.as_bytes()).unwrap();
            map.insert(name, value.parse().unwrap());
        }
        map.insert("x-amz-meta-weir-sha256", "00".parse().unwrap());
        map.insert("content-type", "text/plain".parse().unwrap());
        let back = from_headers(&map).unwrap();
        let mut got: Vec<_> = back.fields().collect();
        let mut want: Vec<_> = meta.fields().collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        // weir's part sizes come back from their own header, as the field they were.
        assert!(map.contains_key(PARTS_META));
        assert_eq!(back.checksum(), Some(("CRC32", "FULL_OBJECT", "WgDhBQ==")));
        assert_eq!(
            back.part(3),
            crate::PartLookup::Found {
                start: 10 << 20,
                len: 7,
                count: 3
            }
        );
        assert_eq!(from_headers(&HeaderMap::new()), None);
    }
}
