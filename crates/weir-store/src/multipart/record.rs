//! The text records of a multipart upload: one for the upload, one per part. A line per field
//! (`name value`), no JSON dependency in weir-store, as the resumable uploads' records. Parsed
//! strictly: a record that does not parse is no record (its upload or part does not exist).
//!
//! Upload record:
//! ```text
//! key docs/big.iso
//! initiated 1765000000
//! type application/octet-stream        (optional)
//! checksum CRC32                        (optional)
//! checksum-type FULL_OBJECT             (optional)
//! meta color blue                       (repeated: user metadata, name then value)
//! field cache-control no-cache          (repeated: other kept header fields, name then value)
//! ```
//! Part record (`data` is the file holding the part's bytes, in the upload's directory):
//! ```text
//! data 3-5f0c...e1.part
//! size 5242880
//! md5 9e107d9d372bb6826bd81d3542a419d6
//! modified 1765000000
//! checksum CRC32 q0bZ4g==               (repeated)
//! ```

use super::{Completed, MultipartMeta, MultipartUpload, PartRecord, PartTag, hex, unhex};
use crate::{MediaType, StorePath, UploadId};
use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the epoch (0 before it).
pub(crate) fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Now, to the second: what a record keeps, so that an answer made at creation is the one
/// listed later.
pub(crate) fn now() -> SystemTime {
    time(secs(SystemTime::now()))
}

fn time(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// Whether `text` can be one field of a record line.
pub(crate) fn one_line(text: &str) -> bool {
    !text.contains(['\n', '\r'])
}

/// Whether `name` can be a record line's word (metadata and checksum names: no space either).
pub(crate) fn one_word(name: &str) -> bool {
    !name.is_empty() && one_line(name) && !name.contains(' ')
}

/// Whether an upload's metadata can be recorded (every name one word, every value one line)
/// and applied at completion (`MultipartMeta::object_meta`): checked by every store at
/// creation, so that nothing is refused only at the end.
pub(crate) fn check_recordable(meta: &MultipartMeta) -> Result<(), super::MultipartError> {
    let words = meta
        .metadata
        .iter()
        .chain(&meta.fields)
        .all(|(n, v)| one_word(n) && one_line(v))
        && meta.object_meta().is_ok()
        && meta.checksum_algorithm.as_deref().is_none_or(one_word)
        && meta.checksum_type.as_deref().is_none_or(one_word);
    if words {
        Ok(())
    } else {
        Err(super::MultipartError::InvalidMetadata)
    }
}

pub(crate) fn encode_upload(upload: &MultipartUpload) -> String {
    let mut out = String::new();
    // Writing into a `String` cannot fail.
    let _ = writeln!(out, "key {}", upload.key.as_str());
    let _ = writeln!(out, "initiated {}", secs(upload.initiated));
    if let Some(media_type) = &upload.meta.media_type {
        let _ = writeln!(out, "type {}", media_type.as_str());
    }
    if let Some(algorithm) = &upload.meta.checksum_algorithm {
        let _ = writeln!(out, "checksum {algorithm}");
    }
    if let Some(kind) = &upload.meta.checksum_type {
        let _ = writeln!(out, "checksum-type {kind}");
    }
    for (name, value) in &upload.meta.metadata {
        let _ = writeln!(out, "meta {name} {value}");
    }
    for (name, value) in &upload.meta.fields {
        let _ = writeln!(out, "field {name} {value}");
    }
    out
}

pub(crate) fn decode_upload(id: UploadId, text: &str) -> Option<MultipartUpload> {
    let mut key = None;
    let mut initiated = None;
    let mut meta = MultipartMeta::default();
    for line in text.lines() {
        let (name, value) = line.split_once(' ')?;
        match name {
            "key" => key = Some(StorePath::parse(value).ok()?),
            "initiated" => initiated = Some(time(value.parse().ok()?)),
            "type" => meta.media_type = Some(MediaType::parse(value.as_bytes())?),
            "checksum" => meta.checksum_algorithm = Some(value.to_owned()),
            "checksum-type" => meta.checksum_type = Some(value.to_owned()),
            "meta" => {
                let (n, v) = value.split_once(' ').unwrap_or((value, ""));
                meta.metadata.push((n.to_owned(), v.to_owned()));
            }
            "field" => {
                let (n, v) = value.split_once(' ').unwrap_or((value, ""));
                meta.fields.push((n.to_owned(), v.to_owned()));
            }
            _ => return None,
        }
    }
    Some(MultipartUpload {
        id,
        key: key?,
        initiated: initiated?,
        meta,
    })
}

pub(crate) fn encode_part(part: &PartRecord, data: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "data {data}");
    let _ = writeln!(out, "size {}", part.size);
    let _ = writeln!(out, "etag {}", part.tag.etag());
    let _ = writeln!(out, "modified {}", secs(part.modified));
    for (name, value) in &part.checksums {
        let _ = writeln!(out, "checksum {name} {value}");
    }
    out
}

/// A part record and what holds its bytes: its data file's name, or its place in the
/// upload's file ([`data_at`]).
pub(crate) fn decode_part(number: u32, text: &str) -> Option<(PartRecord, String)> {
    let (mut data, mut size, mut tag, mut modified) = (None, None, None, None);
    let mut checksums = Vec::new();
    for line in text.lines() {
        let (name, value) = line.split_once(' ')?;
        match name {
            "data" if is_data_name(number, value) || offset_of(value).is_some() => {
                data = Some(value.to_owned())
            }
            "size" => size = Some(value.parse().ok()?),
            "etag" => tag = Some(PartTag::parse(value)?),
            // Records written before random tags: always an MD5.
            "md5" => tag = Some(PartTag::Md5(unhex::<16>(value)?)),
            "modified" => modified = Some(time(value.parse().ok()?)),
            "checksum" => {
                let (n, v) = value.split_once(' ')?;
                checksums.push((n.to_owned(), v.to_owned()));
            }
            _ => return None,
        }
    }
    let part = PartRecord {
        number,
        size: size?,
        tag: tag?,
        checksums,
        modified: modified?,
    };
    Some((part, data?))
}

/// The record a completed upload leaves (`done`), so that a completion sent again (a client
/// that lost the answer, or S3 test suites) gets the same answer while the upload's directory
/// stays (until the sweep): the object's key and metadata as committed, the parts.
pub(crate) fn encode_done(done: &Completed) -> String {
    let mut out = String::new();
    let stored = &done.committed.stored;
    let since = stored
        .modified
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let _ = writeln!(out, "key {}", done.upload.key.as_str());
    let _ = writeln!(out, "size {}", stored.size);
    let _ = writeln!(out, "modified {} {}", since.as_secs(), since.subsec_nanos());
    if let Some(sha256) = &stored.sha256 {
        let _ = writeln!(out, "sha256 {}", hex(sha256));
    }
    for part in &done.parts {
        let _ = writeln!(out, "part {} {} {}", part.number, part.etag(), part.size);
    }
    out
}

pub(crate) fn decode_done(id: UploadId, text: &str) -> Option<Completed> {
    let (mut key, mut size, mut modified, mut sha256) = (None, None, None, None);
    let mut parts = Vec::new();
    for line in text.lines() {
        let (name, value) = line.split_once(' ')?;
        match name {
            "key" => key = Some(StorePath::parse(value).ok()?),
            "size" => size = Some(value.parse::<u64>().ok()?),
            "modified" => {
                let (s, n) = value.split_once(' ')?;
                let at = UNIX_EPOCH + Duration::new(s.parse().ok()?, n.parse().ok()?);
                modified = Some(at);
            }
            "sha256" => sha256 = Some(unhex::<32>(value)?),
            // Records written when weir kept S3's md5-of-md5s ETag, which nothing answered.
            "etag" => {}
            "part" => {
                let mut words = value.split(' ');
                let number = words.next()?.parse().ok()?;
                let tag = PartTag::parse(words.next()?)?;
                let size = words.next()?.parse().ok()?;
                parts.push(PartRecord {
                    number,
                    size,
                    tag,
                    checksums: Vec::new(),
                    modified: UNIX_EPOCH,
                });
            }
            _ => return None,
        }
    }
    let stored = crate::FileMeta {
        size: size?,
        modified: modified?,
        sha256,
    };
    Some(Completed {
        committed: crate::Committed {
            size: stored.size,
            sha256,
            replaced: true,
            stored,
        },
        parts,
        upload: MultipartUpload {
            id,
            key: key?,
            initiated: stored.modified,
            meta: MultipartMeta::default(),
        },
        repeated: true,
    })
}

/// Whether a completion sent again names the parts the completed upload was made of.
pub(crate) fn same_parts(done: &Completed, listed: &[super::CompletePart]) -> bool {
    done.parts.len() == listed.len()
        && done
            .parts
            .iter()
            .zip(listed)
            .all(|(part, named)| part.number == named.number && part.tag.is_named_by(&named.etag))
}

/// A part's data file name: `{number}-{32 hex digits}.part`, a fresh one per upload of the part,
/// so that the record's rename is what replaces a part.
pub(crate) fn data_name(number: u32, nonce: UploadId) -> String {
    format!("{number}-{nonce}.part")
}

/// The local store's file of an upload, whose parts are written in place
/// (`local/in_place.rs`).
pub(crate) const OBJECT_FILE: &str = "object";

/// What a record names for a part in place at `offset` of the upload's file.
pub(crate) fn data_at(offset: u64) -> String {
    format!("{OBJECT_FILE}@{offset}")
}

/// The offset of a part in place, if `data` names one.
pub(crate) fn offset_of(data: &str) -> Option<u64> {
    let digits = data.strip_prefix(OBJECT_FILE)?.strip_prefix('@')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a data file name of part `number`.
pub(crate) fn is_data_name(number: u32, name: &str) -> bool {
    name.strip_suffix(".part")
        .and_then(|n| n.split_once('-'))
        .is_some_and(|(n, nonce)| {
            n.parse::<u32>() == Ok(number) && UploadId::parse(nonce).is_some()
        })
}

/// The part number a record's file name `{number}.rec` is for.
pub(crate) fn record_number(name: &str) -> Option<u32> {
    let n = name.strip_suffix(".rec")?;
    // Canonical digits only, so each part has one record name.
    if n.starts_with('0') || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_refuse_what_they_did_not_write() {
        let id = UploadId::parse("00112233445566778899aabbccddeeff").unwrap();
        let upload = MultipartUpload {
            id,
            key: StorePath::parse("a/b c.bin").unwrap(),
            initiated: time(1_765_000_000),
            meta: MultipartMeta {
                media_type: MediaType::parse(b"text/plain; charset=utf-8"),
                metadata: vec![
                    ("color".into(), "deep blue".into()),
                    ("empty".into(), "".into()),
                ],
                fields: vec![("content-disposition".into(), "attachment; x=\"a b\"".into())],
                checksum_algorithm: Some("CRC32".into()),
                checksum_type: Some("FULL_OBJECT".into()),
            },
        };
        assert_eq!(decode_upload(id, &encode_upload(&upload)), Some(upload));
        assert_eq!(decode_upload(id, "key a\ninitiated x\n"), None);
        assert_eq!(decode_upload(id, "key a\n"), None);
        assert_eq!(decode_upload(id, "key ../a\ninitiated 1\n"), None);

        let part = PartRecord {
            number: 7,
            size: 12,
            tag: PartTag::Md5([0xab; 16]),
            checksums: vec![("CRC32".into(), "q0bZ4g==".into())],
            modified: time(5),
        };
        let data = data_name(7, id);
        let text = encode_part(&part, &data);
        assert_eq!(decode_part(7, &text), Some((part.clone(), data.clone())));
        let random = PartRecord {
            tag: PartTag::Crc64([0x12; 16]),
            ..part.clone()
        };
        let random_text = encode_part(&random, &data);
        assert_eq!(decode_part(7, &random_text), Some((random, data.clone())));
        // A record written before random tags names the MD5 on an `md5` line.
        let old = format!(
            "data {data}\nsize 12\nmd5 {}\nmodified 5\nchecksum CRC32 q0bZ4g==\n",
            "ab".repeat(16)
        );
        assert_eq!(decode_part(7, &old), Some((part, data)));
        // Another part's data file, or one not of this form, is no record.
        assert_eq!(decode_part(8, &text), None);
        assert_eq!(
            decode_part(7, "data ../x\nsize 1\nmd5 00\nmodified 1\n"),
            None
        );
        assert_eq!(record_number("12.rec"), Some(12));
        assert_eq!(record_number("012.rec"), None);
        assert_eq!(record_number("x.rec"), None);
    }
}
