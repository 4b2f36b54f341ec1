//! What a part's ETag names: the MD5 of its bytes when the client sent one, else their
//! CRC-64/NVME and length.
//!
//! S3 answers a part's MD5 as its ETag, and clients echo ETags back in CompleteMultipartUpload
//! to name the bytes of each part they mean; a part sent again with the same bytes keeps its
//! ETag, so a completion may name either upload (Ceph's s3-tests resend parts and complete
//! with the first answer's ETag). Only that naming is needed from the ETag, and MD5 is weir's
//! slowest hash: about 0.7 GB/s on one core, against SHA-256's 1.8 with the CPU's SHA
//! instructions and a SIMD CRC's tens of GB/s. So the MD5 is computed when the client sends
//! `Content-MD5` (the route verifies it on the way, and it becomes the ETag, as S3's), and
//! otherwise the part is named by the CRC-64/NVME of its bytes (`crc-fast`, the polynomial of
//! S3's own `x-amz-checksum-crc64nvme`) and their length: computed by the route as the bytes go
//! by, or, for a part spliced to disk, by the store reading it back once at memory speed.
//!
//! Answered as `part-` and 32 hex digits (the CRC, then the length, 8 bytes each). The `-` is the
//! convention S3 itself uses for ETags that are not MD5s (multipart objects): clients that
//! compare an ETag with the MD5 they computed (s3cmd) skip the comparison when they see it. A
//! CRC is no cryptographic hash: a client could make two different parts of one number share a
//! tag, and so complete with the bytes it sent under another of its own requests, which it may
//! write anyway. Integrity is the object's SHA-256 and the checksums the client asks for.

use super::{hex, unhex};
use crc_fast::{CrcAlgorithm, Digest};

/// A part's ETag, without quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartTag {
    /// The MD5 of the part's bytes, computed because the client sent `Content-MD5`: S3's ETag,
    /// 32 hex digits.
    Md5([u8; 16]),
    /// The CRC-64/NVME of the part's bytes, then their length, big-endian: `part-` and 32 hex
    /// digits ([`PartTagHasher`]).
    Crc64([u8; 16]),
}

/// What a CRC tag's ETag starts with.
const CRC_PREFIX: &str = "part-";

impl PartTag {
    /// The ETag, without quotes.
    pub fn etag(&self) -> String {
        match self {
            Self::Md5(md5) => hex(md5),
            Self::Crc64(crc_len) => format!("{CRC_PREFIX}{}", hex(crc_len)),
        }
    }

    /// The tag a client's ETag names: quoted or not (clients send both), hex in either case.
    pub fn parse(etag: &str) -> Option<Self> {
        let bare = etag.trim();
        let bare = bare
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .unwrap_or(bare);
        match bare.get(..CRC_PREFIX.len()) {
            Some(prefix) if prefix.eq_ignore_ascii_case(CRC_PREFIX) => {
                unhex(&bare[CRC_PREFIX.len()..]).map(Self::Crc64)
            }
            _ => unhex(bare).map(Self::Md5),
        }
    }

    /// Whether a client's ETag names this tag.
    pub fn is_named_by(&self, etag: &str) -> bool {
        Self::parse(etag) == Some(*self)
    }
}

/// The running CRC-64/NVME and length of a part's bytes, fed in order: the route's as they go
/// by, the store's when it reads a spliced part back.
pub struct PartTagHasher {
    crc: Digest,
    len: u64,
}

impl Default for PartTagHasher {
    fn default() -> Self {
        Self {
            crc: Digest::new(CrcAlgorithm::Crc64Nvme),
            len: 0,
        }
    }
}

impl PartTagHasher {
    /// Feeds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        self.len += bytes.len() as u64;
    }

    /// The tag of every byte fed.
    pub fn finish(self) -> PartTag {
        let mut crc_len = [0u8; 16];
        crc_len[..8].copy_from_slice(&self.crc.finalize().to_be_bytes());
        crc_len[8..].copy_from_slice(&self.len.to_be_bytes());
        PartTag::Crc64(crc_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag_of(pieces: &[&[u8]]) -> PartTag {
        let mut hasher = PartTagHasher::default();
        for piece in pieces {
            hasher.update(piece);
        }
        hasher.finish()
    }

    #[test]
    fn the_same_bytes_get_the_same_tag_however_they_are_fed() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let whole = tag_of(&[&bytes]);
        assert_eq!(
            tag_of(&[&bytes[..1], &bytes[1..4097], &bytes[4097..]]),
            whole
        );
        assert_ne!(tag_of(&[&bytes[1..]]), whole);
        // CRC-64/NVME's check value (the CRC of "123456789"), then the length.
        let PartTag::Crc64(crc_len) = tag_of(&[b"123456789"]) else {
            panic!("a hasher makes CRC tags");
        };
        assert_eq!(crc_len[..8], 0xae8b_1486_0a79_9888u64.to_be_bytes());
        assert_eq!(crc_len[8..], 9u64.to_be_bytes());
        // Zero bytes of different lengths have one CRC, not one tag.
        assert_ne!(tag_of(&[&[0; 8]]), tag_of(&[&[0; 16]]));
    }

    #[test]
    fn etags_round_trip_quoted_or_not_in_either_case() {
        let md5 = PartTag::Md5([0xab; 16]);
        let crc = tag_of(&[b"part"]);
        for tag in [md5, crc] {
            let etag = tag.etag();
            assert_eq!(PartTag::parse(&etag), Some(tag));
            assert_eq!(PartTag::parse(&format!("\"{etag}\"")), Some(tag));
            assert!(tag.is_named_by(&etag.to_uppercase()));
        }
        assert_eq!(md5.etag(), "ab".repeat(16));
        assert!(crc.etag().starts_with("part-") && crc.etag().len() == 37);
    }

    #[test]
    fn an_md5_and_a_crc_tag_of_the_same_bits_differ() {
        let bits = [7u8; 16];
        assert!(!PartTag::Md5(bits).is_named_by(&PartTag::Crc64(bits).etag()));
        assert!(!PartTag::Crc64(bits).is_named_by(&PartTag::Md5(bits).etag()));
        for bad in ["", "part-", "part-00", "\"", "xyz", &"g".repeat(32)] {
            assert_eq!(PartTag::parse(bad), None, "{bad:?}");
        }
    }
}
