//! An object's S3 metadata ([`ObjectMeta`]): the `x-amz-meta-*` user metadata and the header
//! fields S3 keeps with an object and returns on every GetObject/HeadObject
//! (`Cache-Control`, `Content-Disposition`, `Content-Encoding`, `Content-Language`,
//! `Expires`). The media type is not part of it: the store keeps that for every file
//! (`media_type.rs`), whichever front end wrote it.
//!
//! Given to [`Store::begin`](crate::Store::begin) in
//! [`UploadOptions::object_meta`](crate::UploadOptions), it is stored with the commit itself:
//! never an object visible without its metadata, nor metadata without its object. Files
//! written by other front ends have none.
//!
//! # Invariants
//! - Names are lower case, each either `x-amz-meta-` followed by a non-empty token not
//!   starting with `weir-` (weir's own, as the S3 store keeps the digest), or one of
//!   [`KEPT_FIELDS`]; each name at most once, in the order given.
//! - Values hold no line break and no NUL (they come from header values, which cannot), and
//!   are kept as the bytes received (a client's non-ASCII metadata comes back byte for byte).
//! - The user metadata (names and values of `x-amz-meta-*`, as S3 counts it) is at most
//!   [`MAX_USER_META`] bytes; the other fields are bounded by what a request head can hold.
//!
//! Encoding (the local store's xattr): one `name:value\n` line per field, in order.

use crate::MediaType;
use std::fmt;

/// S3's limit on an object's user metadata: the names and values of its `x-amz-meta-*`.
pub const MAX_USER_META: usize = 2048;

/// The header fields kept with an object besides its user metadata.
pub const KEPT_FIELDS: [&str; 5] = [
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
];

/// The prefix of a user metadata field.
const USER_PREFIX: &str = "x-amz-meta-";

/// What is wrong with metadata given to [`ObjectMeta::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectMetaError {
    /// Not a field S3 keeps, not a token, or given twice.
    BadName,
    /// A line break or NUL in a value.
    BadValue,
    /// The user metadata exceeds [`MAX_USER_META`] (S3's `MetadataTooLarge`).
    TooLarge,
}

impl fmt::Display for ObjectMetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectMetaError::BadName => "not a metadata field an object keeps",
            ObjectMetaError::BadValue => "a line break or NUL in a metadata value",
            ObjectMetaError::TooLarge => "user metadata larger than 2 KiB",
        })
    }
}

impl std::error::Error for ObjectMetaError {}

/// What a copy ([`Store::copy`](crate::Store::copy)) gets.
#[derive(Clone, Copy, Debug)]
pub enum CopyMeta<'a> {
    /// The source's media type and S3 metadata (S3's `x-amz-metadata-directive: COPY`).
    Source,
    /// These (`REPLACE`): the source's are not kept.
    Replace {
        /// The media type; `None`: none stored (readers go by the name).
        media_type: Option<&'a MediaType>,
        /// The S3 metadata; empty: none.
        object_meta: &'a ObjectMeta,
    },
}

/// An object's S3 metadata (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    fields: Vec<(String, Vec<u8>)>,
    /// Bytes of user metadata so far, as S3 counts them.
    user_len: usize,
}

impl ObjectMeta {
    /// No metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field. `name` is compared case-insensitively and kept in lower case; a name
    /// that is neither user metadata nor one of [`KEPT_FIELDS`] is refused (the caller only
    /// passes those it means to keep).
    pub fn push(&mut self, name: &str, value: &[u8]) -> Result<(), ObjectMetaError> {
        // ALLOCATION: the name and value, once per field of a request that sent metadata.
        let name = name.to_ascii_lowercase();
        let user = match name.strip_prefix(USER_PREFIX) {
            Some(short) => {
                // `weir-*`: weir's own in a bucket (`s3/meta.rs`), never a client's.
                let ours = short.starts_with("weir-");
                if ours || short.is_empty() || !short.bytes().all(is_token_byte) {
                    return Err(ObjectMetaError::BadName);
                }
                true
            }
            None if KEPT_FIELDS.contains(&name.as_str()) => false,
            None => return Err(ObjectMetaError::BadName),
        };
        if self.fields.iter().any(|(n, _)| *n == name) {
            return Err(ObjectMetaError::BadName);
        }
        if value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(ObjectMetaError::BadValue);
        }
        if user {
            // S3 counts the name without its prefix, and the value.
            let len = self.user_len + name.len() - USER_PREFIX.len() + value.len();
            if len > MAX_USER_META {
                return Err(ObjectMetaError::TooLarge);
            }
            self.user_len = len;
        }
        self.fields.push((name, value.to_vec()));
        Ok(())
    }

    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The fields, in order: `(lower-case name, value)`.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// The value of `name` (lower case), if kept.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The stored form (see the module doc).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let len = self.fields.iter().map(|(n, v)| n.len() + v.len() + 2).sum();
        let mut out = Vec::with_capacity(len);
        for (name, value) in &self.fields {
            out.extend_from_slice(name.as_bytes());
            out.push(b':');
            out.extend_from_slice(value);
            out.push(b'\n');
        }
        out
    }

    /// The metadata of a stored form; `None` if it is not one [`ObjectMeta::encode`] makes.
    pub(crate) fn decode(stored: &[u8]) -> Option<ObjectMeta> {
        let mut meta = ObjectMeta::new();
        let body = stored.strip_suffix(b"\n")?;
        for line in body.split(|b| *b == b'\n') {
            let colon = line.iter().position(|b| *b == b':')?;
            let name = std::str::from_utf8(&line[..colon]).ok()?;
            meta.push(name, &line[colon + 1..]).ok()?;
        }
        Some(meta)
    }
}

/// RFC 9110's `tchar`: what a header field name is made of.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_through_the_stored_form() {
        let mut meta = ObjectMeta::new();
        meta.push("X-Amz-Meta-Color", b"blue").unwrap();
        meta.push("x-amz-meta-empty", b"").unwrap();
        meta.push("x-amz-meta-latin", b"Hello World\xe9").unwrap();
        meta.push("Cache-Control", b"no-cache, max-age=0").unwrap();
        meta.push("expires", b"Thu, 01 Jan 2026 00:00:00 GMT")
            .unwrap();
        let back = ObjectMeta::decode(&meta.encode()).unwrap();
        assert_eq!(back, meta);
        assert_eq!(back.get("x-amz-meta-color"), Some(&b"blue"[..]));
        assert_eq!(back.get("x-amz-meta-empty"), Some(&b""[..]));
        assert_eq!(back.get("content-encoding"), None);
        assert_eq!(ObjectMeta::decode(b""), None);
        assert_eq!(ObjectMeta::decode(b"\n"), None);
        assert_eq!(ObjectMeta::decode(b"content-type:a/b\n"), None);
    }

    #[test]
    fn bad_names_values_and_sizes_are_refused() {
        let mut meta = ObjectMeta::new();
        assert_eq!(
            meta.push("content-type", b"a/b"),
            Err(ObjectMetaError::BadName)
        );
        assert_eq!(
            meta.push("x-amz-meta-", b"v"),
            Err(ObjectMetaError::BadName)
        );
        assert_eq!(
            meta.push("x-amz-meta-a b", b"v"),
            Err(ObjectMetaError::BadName)
        );
        let ours = meta.push("x-amz-meta-weir-sha256", b"00");
        assert_eq!(ours, Err(ObjectMetaError::BadName));
        assert_eq!(
            meta.push("x-amz-meta-a", b"x\ny"),
            Err(ObjectMetaError::BadValue)
        );
        meta.push("x-amz-meta-a", b"v").unwrap();
        assert_eq!(
            meta.push("X-Amz-Meta-A", b"w"),
            Err(ObjectMetaError::BadName)
        );
        // "a" + "v" = 2 bytes so far; a field of exactly the rest fits, one byte more does not.
        let rest = vec![b'x'; MAX_USER_META - 2 - 1];
        let mut bigger = meta.clone();
        assert_eq!(
            bigger.push("x-amz-meta-b", &[rest.as_slice(), b"x"].concat()),
            Err(ObjectMetaError::TooLarge)
        );
        meta.push("x-amz-meta-b", &rest).unwrap();
        // Fields other than user metadata do not count against the bound.
        meta.push("content-disposition", &[b'y'; 4000]).unwrap();
        assert_eq!(ObjectMeta::decode(&meta.encode()), Some(meta));
    }
}
