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
//! - weir's own fields, [`PARTS_FIELD`] (a completed multipart object's part sizes, at most
//!   [`MAX_PARTS_FIELD`] bytes) and [`CHECKSUM_FIELD`] (the S3 checksum the client sent, at
//!   most 128 bytes, and for a completed multipart object its parts' own checksums when they
//!   fit in [`MAX_PART_CHECKSUMS`] bytes), are kept with the others but never sent back as header fields
//!   ([`ObjectMeta::fields`] leaves them out) and never taken from a request.
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

/// weir's own field of a completed multipart object: its parts' sizes, in order, as runs
/// (`SIZE` or `SIZE*COUNT`, comma-separated: S3 clients send equal parts, so an upload of
/// 10,000 parts is two runs), for GetObject's `partNumber`. Never sent as a header, never
/// taken from a request.
pub const PARTS_FIELD: &str = "weir-parts";

/// weir's own field of an object written with an S3 checksum: `ALGORITHM TYPE VALUE`
/// (`CRC64NVME FULL_OBJECT Qeh8oXvGiSo=`), the checksum the client sent and weir verified,
/// returned by GetObject/HeadObject with `x-amz-checksum-mode: ENABLED`. Never sent as a
/// header of its own, never taken from a request. A completed multipart object's may have a
/// fourth word: its parts' checksums of the same algorithm, in part order, comma-separated
/// (`CRC32 FULL_OBJECT WgDhBQ== JRTCyQ==,QoZTGg==,YAgjqw==`), for GetObject's `partNumber`.
pub const CHECKSUM_FIELD: &str = "weir-checksum";

/// The longest list of part checksums a [`CHECKSUM_FIELD`] keeps: 11 SHA-256 values, 56 CRC32
/// ones. The field goes into the local store's xattr and, in a bucket, into the backend
/// object's metadata, which S3 bounds at 2 KiB: past this bound the parts' checksums are not
/// kept (GetObject with `partNumber` then answers no checksum), the object's own still is.
pub const MAX_PART_CHECKSUMS: usize = 512;

/// The longest [`CHECKSUM_FIELD`]: a name, a type and a base64 value (SHA-256's is 44
/// characters, a composite's adds `-N`: 128 bytes hold them), then the parts' checksums.
const MAX_CHECKSUM_FIELD: usize = 128 + 1 + MAX_PART_CHECKSUMS;

/// An S3 checksum to keep with a completed multipart object ([`CHECKSUM_FIELD`]), verified by
/// the S3 API against the parts it was formed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectChecksum {
    /// `CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`.
    pub algorithm: String,
    /// `COMPOSITE` or `FULL_OBJECT`.
    pub kind: String,
    /// The object's checksum in base64 (`-N` ending a composite one).
    pub value: String,
    /// Each part's checksum of this algorithm in base64, in part order: what the object's was
    /// formed from (a store checks them against the parts it assembles).
    pub parts: Vec<String>,
}

/// The longest [`PARTS_FIELD`] kept: past it (parts of many different sizes) the object keeps
/// only its number of parts (`*COUNT`), and reading it by part is refused rather than answered
/// wrongly.
pub const MAX_PARTS_FIELD: usize = 512;

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

/// A field a store was asked to keep that is not one (the caller's value, refused).
impl From<ObjectMetaError> for crate::StoreError {
    fn from(e: ObjectMetaError) -> Self {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        crate::StoreError::from_io("object metadata", e)
    }
}

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
            None if name == CHECKSUM_FIELD => {
                if value.len() > MAX_CHECKSUM_FIELD || parse_checksum(value).is_none() {
                    return Err(ObjectMetaError::BadValue);
                }
                false
            }
            None if name == PARTS_FIELD => {
                if value.len() > MAX_PARTS_FIELD || parse_runs(value).is_none() {
                    return Err(ObjectMetaError::BadValue);
                }
                false
            }
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

    /// The fields sent back with the object, in order: `(lower-case name, value)` (weir's
    /// own, [`PARTS_FIELD`], is not one).
    pub fn fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.stored_fields()
            .filter(|(n, _)| *n != PARTS_FIELD && *n != CHECKSUM_FIELD)
    }

    /// Keeps the checksum the client sent, verified ([`CHECKSUM_FIELD`]): `algorithm`
    /// (`CRC32`, …), `kind` (`FULL_OBJECT` or `COMPOSITE`), the base64 `value`. A value that
    /// is not one is refused (`BadValue`).
    pub fn set_checksum(
        &mut self,
        algorithm: &str,
        kind: &str,
        value: &str,
    ) -> Result<(), ObjectMetaError> {
        self.fields.retain(|(n, _)| n != CHECKSUM_FIELD);
        // ALLOCATION: the field, once per object written with a checksum.
        self.push(
            CHECKSUM_FIELD,
            format!("{algorithm} {kind} {value}").as_bytes(),
        )
    }

    /// Keeps a completed multipart object's checksum ([`CHECKSUM_FIELD`]) and, when they fit
    /// in [`MAX_PART_CHECKSUMS`] bytes, its parts' (returns whether they were kept).
    pub fn set_multipart_checksum(
        &mut self,
        checksum: &ObjectChecksum,
    ) -> Result<bool, ObjectMetaError> {
        let ObjectChecksum {
            algorithm,
            kind,
            value,
            parts,
        } = checksum;
        let list_len = parts.iter().map(|p| p.len() + 1).sum::<usize>();
        let keep_parts = !parts.is_empty() && list_len <= MAX_PART_CHECKSUMS + 1;
        if !keep_parts {
            self.set_checksum(algorithm, kind, value)?;
            return Ok(false);
        }
        self.fields.retain(|(n, _)| n != CHECKSUM_FIELD);
        // ALLOCATION: the field, once per completion with a checksum.
        let text = format!("{algorithm} {kind} {value} {}", parts.join(","));
        self.push(CHECKSUM_FIELD, text.as_bytes())?;
        Ok(true)
    }

    /// The kept checksum: `(algorithm, kind, base64 value)`.
    pub fn checksum(&self) -> Option<(&str, &str, &str)> {
        parse_checksum(self.get_stored(CHECKSUM_FIELD)?).map(|(a, k, v, _)| (a, k, v))
    }

    /// Part `number`'s (from 1) own checksum in base64, of the algorithm of
    /// [`ObjectMeta::checksum`], if the object kept its parts' checksums.
    pub fn part_checksum(&self, number: u32) -> Option<&str> {
        let (_, _, _, parts) = parse_checksum(self.get_stored(CHECKSUM_FIELD)?)?;
        let index = usize::try_from(number.checked_sub(1)?).ok()?;
        parts?.split(',').nth(index)
    }

    /// Every field kept, weir's own included.
    pub(crate) fn stored_fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// Records the sizes of a completed multipart object's parts ([`PARTS_FIELD`]); past
    /// [`MAX_PARTS_FIELD`] only their count is kept (`false`).
    pub fn set_parts(&mut self, sizes: impl IntoIterator<Item = u64>) -> bool {
        // ALLOCATION: the field's text, once per completion.
        let mut text = String::new();
        let mut count = 0u64;
        let mut run: Option<(u64, u64)> = None;
        let flush = |text: &mut String, (size, n): (u64, u64)| {
            if !text.is_empty() {
                text.push(',');
            }
            text.push_str(&size.to_string());
            if n > 1 {
                text.push('*');
                text.push_str(&n.to_string());
            }
        };
        for size in sizes {
            count += 1;
            run = match run {
                Some((s, n)) if s == size => Some((s, n + 1)),
                Some(done) => {
                    flush(&mut text, done);
                    Some((size, 1))
                }
                None => Some((size, 1)),
            };
        }
        if let Some(done) = run {
            flush(&mut text, done);
        }
        self.fields.retain(|(n, _)| n != PARTS_FIELD);
        let kept = text.len() <= MAX_PARTS_FIELD;
        if !kept {
            text = format!("*{count}");
        }
        if count > 0 {
            self.fields
                .push((PARTS_FIELD.to_owned(), text.into_bytes()));
        }
        kept
    }

    /// Part `number` (from 1) of the object, from its [`PARTS_FIELD`].
    pub fn part(&self, number: u32) -> PartLookup {
        let Some(runs) = self.get_stored(PARTS_FIELD).and_then(parse_runs) else {
            return PartLookup::NotMultipart;
        };
        let runs = match runs {
            Runs::CountOnly(count) => return PartLookup::NotKept { count },
            Runs::Sizes(runs) => runs,
        };
        // At most 10,000 parts (`parse_runs`): the sum fits.
        let count = runs.iter().map(|(_, n)| *n).sum::<u64>() as u32;
        let Some(index) = u64::from(number).checked_sub(1) else {
            return PartLookup::Past { count };
        };
        let (mut start, mut before) = (0u64, 0u64);
        for (size, n) in runs {
            if index < before + n {
                let start = start + (index - before) * size;
                return PartLookup::Found {
                    start,
                    len: size,
                    count,
                };
            }
            start += size * n;
            before += n;
        }
        PartLookup::Past { count }
    }

    fn get_stored(&self, name: &str) -> Option<&[u8]> {
        self.stored_fields()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// The value of `name` (lower case), if kept.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The stored form (see the module doc), weir's own fields included.
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

/// What [`ObjectMeta::part`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartLookup {
    /// Not a completed multipart object: it is one part.
    NotMultipart,
    /// The part: its first byte and length, and the object's number of parts.
    Found { start: u64, len: u64, count: u32 },
    /// No such part in an object of `count` parts.
    Past { count: u32 },
    /// A multipart object of `count` parts whose sizes were too varied to keep.
    NotKept { count: u32 },
}

/// A [`CHECKSUM_FIELD`] value: three words of printable ASCII, maybe a fourth (the parts'
/// checksums, comma-separated, none empty).
fn parse_checksum(value: &[u8]) -> Option<(&str, &str, &str, Option<&str>)> {
    let text = std::str::from_utf8(value).ok()?;
    if !text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return None;
    }
    let mut words = text.split(' ');
    let found = (words.next()?, words.next()?, words.next()?);
    let empty = found.0.is_empty() || found.1.is_empty() || found.2.is_empty();
    let parts = words.next();
    let bad_parts = parts.is_some_and(|p| p.split(',').any(str::is_empty));
    (words.next().is_none() && !empty && !bad_parts).then_some((found.0, found.1, found.2, parts))
}

/// A [`PARTS_FIELD`] value.
enum Runs {
    /// `(size, count)` runs.
    Sizes(Vec<(u64, u64)>),
    /// `*N`: the number of parts only.
    CountOnly(u32),
}

/// The runs of a [`PARTS_FIELD`] value: `(size, count)`, each count ≥ 1, or `*COUNT`; at most
/// 10,000 parts; `None` if it is not one [`ObjectMeta::set_parts`] makes.
fn parse_runs(value: &[u8]) -> Option<Runs> {
    let text = std::str::from_utf8(value).ok()?;
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if let Some(count) = text.strip_prefix('*') {
        let count =
            number(count).filter(|n| (1..=u64::from(crate::MAX_PART_NUMBER)).contains(n))?;
        return Some(Runs::CountOnly(count as u32));
    }
    let mut runs = Vec::new();
    let mut total = 0u64;
    for run in text.split(',') {
        let (size, count) = match run.split_once('*') {
            Some((s, n)) => (number(s)?, number(n)?),
            None => (number(run)?, 1),
        };
        total = total.checked_add(count)?;
        if count == 0 || total > u64::from(crate::MAX_PART_NUMBER) {
            return None;
        }
        runs.push((size, count));
    }
    Some(Runs::Sizes(runs))
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
    fn part_sizes_are_kept_as_runs_and_found_by_number() {
        use PartLookup::*;
        let mut meta = ObjectMeta::new();
        meta.push("x-amz-meta-a", b"v").unwrap();
        assert_eq!(meta.part(1), NotMultipart);
        let mib5 = 5 << 20;
        assert!(meta.set_parts([mib5, mib5, mib5, 1 << 20]));
        assert_eq!(
            meta.stored_fields().find(|(n, _)| *n == PARTS_FIELD),
            Some((PARTS_FIELD, &b"5242880*3,1048576"[..]))
        );
        // Not a field sent back, but kept through the stored form.
        assert!(meta.fields().all(|(n, _)| n != PARTS_FIELD));
        let back = ObjectMeta::decode(&meta.encode()).unwrap();
        assert_eq!(back, meta);
        let found = |start, len| Found {
            start,
            len,
            count: 4,
        };
        assert_eq!(back.part(1), found(0, mib5));
        assert_eq!(back.part(3), found(2 * mib5, mib5));
        assert_eq!(back.part(4), found(3 * mib5, 1 << 20));
        assert_eq!(back.part(5), Past { count: 4 });
        assert_eq!(back.part(0), Past { count: 4 });
        // 10,000 equal parts are one run; parts of too many sizes keep only their count.
        assert!(meta.set_parts(std::iter::repeat_n(mib5, 10_000)));
        let last = Found {
            start: 9_999 * mib5,
            len: mib5,
            count: 10_000,
        };
        assert_eq!(meta.part(10_000), last);
        assert!(!meta.set_parts(1..=1000));
        assert_eq!(meta.part(1), NotKept { count: 1000 });
        assert_eq!(ObjectMeta::decode(&meta.encode()), Some(meta));
        // Bad stored values are refused.
        for bad in [
            &b""[..],
            b"5*0",
            b"x",
            b"1,,2",
            b"1*10001",
            b"*0",
            b"*10001",
        ] {
            assert_eq!(
                ObjectMeta::new().push(PARTS_FIELD, bad),
                Err(ObjectMetaError::BadValue)
            );
        }
    }

    #[test]
    fn a_checksum_is_kept_but_not_sent_as_a_field() {
        let mut meta = ObjectMeta::new();
        assert_eq!(meta.checksum(), None);
        meta.set_checksum("CRC64NVME", "FULL_OBJECT", "Qeh8oXvGiSo=")
            .unwrap();
        meta.set_checksum(
            "SHA256",
            "COMPOSITE",
            "Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=-1",
        )
        .unwrap();
        let back = ObjectMeta::decode(&meta.encode()).unwrap();
        assert_eq!(
            back.checksum(),
            Some((
                "SHA256",
                "COMPOSITE",
                "Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=-1"
            ))
        );
        assert_eq!(back.fields().count(), 0);
        assert_eq!(back.part_checksum(1), None);
        for bad in [
            &b"CRC32 FULL_OBJECT"[..],
            b"a  b",
            b"a b c d e",
            b"a b c d,,e",
            b"a b c ",
            b"a b \x01",
        ] {
            assert_eq!(
                ObjectMeta::new().push(CHECKSUM_FIELD, bad),
                Err(ObjectMetaError::BadValue),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_multipart_checksum_keeps_its_parts_while_they_fit() {
        let mut meta = ObjectMeta::new();
        let three = ObjectChecksum {
            algorithm: "CRC32".into(),
            kind: "FULL_OBJECT".into(),
            value: "WgDhBQ==".into(),
            parts: vec!["JRTCyQ==".into(), "QoZTGg==".into(), "YAgjqw==".into()],
        };
        assert_eq!(meta.set_multipart_checksum(&three), Ok(true));
        let back = ObjectMeta::decode(&meta.encode()).unwrap();
        assert_eq!(back.checksum(), Some(("CRC32", "FULL_OBJECT", "WgDhBQ==")));
        assert_eq!(back.part_checksum(1), Some("JRTCyQ=="));
        assert_eq!(back.part_checksum(3), Some("YAgjqw=="));
        assert_eq!(back.part_checksum(0), None);
        assert_eq!(back.part_checksum(4), None);
        assert_eq!(back.fields().count(), 0);
        // 12 SHA-256 values (45 bytes each with the comma) pass the bound: the object's own
        // checksum is kept, its parts' are not; 11 fit.
        let sha = "Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=".to_owned();
        let many = |n| ObjectChecksum {
            algorithm: "SHA256".into(),
            kind: "COMPOSITE".into(),
            value: format!("{sha}-{n}"),
            parts: vec![sha.clone(); n],
        };
        assert_eq!(meta.set_multipart_checksum(&many(11)), Ok(true));
        assert_eq!(meta.part_checksum(11), Some(sha.as_str()));
        assert_eq!(meta.set_multipart_checksum(&many(12)), Ok(false));
        let twelve = format!("{sha}-12");
        assert_eq!(
            meta.checksum(),
            Some(("SHA256", "COMPOSITE", twelve.as_str()))
        );
        assert_eq!(meta.part_checksum(1), None);
        assert_eq!(ObjectMeta::decode(&meta.encode()), Some(meta));
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
