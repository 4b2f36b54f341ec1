//! What a part's ETag names: the MD5 of its bytes when the client asked for one, else 128 random
//! bits drawn when the part was recorded.
//!
//! S3 answers a part's MD5 as its ETag, and clients echo ETags back in CompleteMultipartUpload
//! to name the upload of each part they mean. Only that naming is needed from the ETag: MD5 is
//! weir's slowest hash (about 0.7 GB/s on one core, against SHA-256's 1.8 with the CPU's SHA
//! instructions), and with parts spliced to disk it would be the only pass over their bytes in
//! user space. So the MD5 is computed when the client sends `Content-MD5` (the route verifies
//! it on the way and it becomes the ETag, as S3's), and otherwise the part is named by a random
//! tag, answered as `part-` and 32 hex digits. The `-` is the convention S3 itself uses for
//! ETags that are not MD5s (multipart objects): clients that compare an ETag with the MD5 they
//! computed (s3cmd) skip the comparison when they see it.
//!
//! A random tag names one upload of the part, as the MD5 does in practice: a part uploaded again
//! with the same bytes gets a new tag, so a completion naming the old tag is refused
//! (`InvalidPart`), where with MD5 ETags it would have taken the new upload's identical bytes.

use super::{hex, unhex};
use std::io::{self, Read};

/// A part's ETag, without quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartTag {
    /// The MD5 of the part's bytes, computed because the client sent `Content-MD5`: S3's ETag,
    /// 32 hex digits.
    Md5([u8; 16]),
    /// 128 random bits drawn when the part was recorded: `part-` and 32 hex digits.
    Random([u8; 16]),
}

/// What a random tag's ETag starts with.
const RANDOM_PREFIX: &str = "part-";

impl PartTag {
    /// A new random tag.
    pub(crate) fn random() -> io::Result<Self> {
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Self::Random(bytes))
    }

    /// The ETag, without quotes.
    pub fn etag(&self) -> String {
        match self {
            Self::Md5(md5) => hex(md5),
            Self::Random(bits) => format!("{RANDOM_PREFIX}{}", hex(bits)),
        }
    }

    /// The tag a client's ETag names: quoted or not (clients send both), hex in either case.
    pub fn parse(etag: &str) -> Option<Self> {
        let bare = etag.trim();
        let bare = bare
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .unwrap_or(bare);
        match bare.get(..RANDOM_PREFIX.len()) {
            Some(prefix) if prefix.eq_ignore_ascii_case(RANDOM_PREFIX) => {
                unhex(&bare[RANDOM_PREFIX.len()..]).map(Self::Random)
            }
            _ => unhex(bare).map(Self::Md5),
        }
    }

    /// Whether a client's ETag names this tag.
    pub fn is_named_by(&self, etag: &str) -> bool {
        Self::parse(etag) == Some(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_round_trip_quoted_or_not_in_either_case() {
        let md5 = PartTag::Md5([0xab; 16]);
        let random = PartTag::random().unwrap();
        for tag in [md5, random] {
            let etag = tag.etag();
            assert_eq!(PartTag::parse(&etag), Some(tag));
            assert_eq!(PartTag::parse(&format!("\"{etag}\"")), Some(tag));
            assert!(tag.is_named_by(&etag.to_uppercase()));
        }
        assert_eq!(md5.etag(), "ab".repeat(16));
        let PartTag::Random(bits) = random else {
            panic!("random() draws a random tag");
        };
        assert_eq!(random.etag(), format!("part-{}", hex(&bits)));
        assert!(
            random.etag().contains('-'),
            "not an MD5, by S3's convention"
        );
        assert_ne!(PartTag::random().unwrap(), random);
    }

    #[test]
    fn an_md5_and_a_random_tag_of_the_same_bits_differ() {
        let bits = [7u8; 16];
        assert!(!PartTag::Md5(bits).is_named_by(&PartTag::Random(bits).etag()));
        assert!(!PartTag::Random(bits).is_named_by(&PartTag::Md5(bits).etag()));
        for bad in ["", "part-", "part-00", "\"", "xyz", &"g".repeat(32)] {
            assert_eq!(PartTag::parse(bad), None, "{bad:?}");
        }
    }
}
