//! The hashes an upload computes while its bytes go by, and their comparison with the digests a
//! client announced. The header grammar (`Content-Digest`, `Repr-Digest`) is HTTP's and lives
//! in `weir_proto::digest_fields`; the store re-exports its types because its API takes them.

use crate::sha256_state::ResumableSha256;
use sha2::{Digest, Sha512};
use std::fmt;
pub use weir_proto::digest_fields::{ContentDigest, DigestAlgorithm, DigestParseError};

/// The hashes an upload computes while its bytes go by.
///
/// Each algorithm is optional: SHA-256 when the upload hashes or a `sha-256` digest is
/// expected, SHA-512 only when a `sha-512` digest is expected (it costs as much as SHA-256).
/// SHA-256 is a [`ResumableSha256`], so that a resumable upload can keep its state with its
/// offset (`resumable.rs`).
#[derive(Clone)]
pub(crate) struct Hashers {
    sha256: Option<ResumableSha256>,
    sha512: Option<Sha512>,
}

/// What [`Hashers::finish`] produces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Digests {
    pub(crate) sha256: Option<[u8; 32]>,
    pub(crate) sha512: Option<[u8; 64]>,
}

impl fmt::Debug for Hashers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hashers")
            .field("sha256", &self.sha256.is_some())
            .field("sha512", &self.sha512.is_some())
            .finish()
    }
}

impl Hashers {
    pub(crate) fn new(sha256: bool, sha512: bool) -> Self {
        Hashers {
            sha256: sha256.then(ResumableSha256::new),
            sha512: sha512.then(Sha512::new),
        }
    }

    /// SHA-256 only, going on from `sha256` (a resumable upload's saved state).
    pub(crate) fn resumed(sha256: ResumableSha256) -> Self {
        Hashers {
            sha256: Some(sha256),
            sha512: None,
        }
    }

    /// The SHA-256 state, when SHA-256 is all these compute (SHA-512 cannot be saved: an
    /// upload that needs it reads its file back at completion).
    pub(crate) fn sha256_alone(&self) -> Option<&ResumableSha256> {
        self.sha256.as_ref().filter(|_| self.sha512.is_none())
    }

    /// Whether `algorithm` is among the hashes computed.
    #[cfg(feature = "s3")]
    pub(crate) fn computes(&self, algorithm: DigestAlgorithm) -> bool {
        match algorithm {
            DigestAlgorithm::Sha256 => self.sha256.is_some(),
            DigestAlgorithm::Sha512 => self.sha512.is_some(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sha256.is_none() && self.sha512.is_none()
    }

    /// Feeds bytes. Reads the caller's slice in place: no copy, no allocation.
    pub(crate) fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha512 {
            h.update(data);
        }
    }

    pub(crate) fn finish(self) -> Digests {
        Digests {
            sha256: self.sha256.map(ResumableSha256::finalize),
            sha512: self.sha512.map(|h| h.finalize().into()),
        }
    }
}

impl Digests {
    /// The first algorithm whose expected value differs from the computed one. An expected
    /// algorithm that was not computed is a bug in the caller of this crate's internals, and
    /// counts as a mismatch: never report "verified" for something not checked.
    pub(crate) fn mismatch(&self, expected: &ContentDigest) -> Option<DigestAlgorithm> {
        if let Some(want) = &expected.sha256 {
            if self.sha256.as_ref() != Some(want) {
                return Some(DigestAlgorithm::Sha256);
            }
        }
        if let Some(want) = &expected.sha512 {
            if self.sha512.as_ref() != Some(want) {
                return Some(DigestAlgorithm::Sha512);
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Test helper: the header value a client would send for `body`.
    pub(crate) fn header_for(body: &[u8], sha256: bool, sha512: bool) -> String {
        let mut h = Hashers::new(sha256, sha512);
        h.update(body);
        let d = h.finish();
        ContentDigest {
            sha256: d.sha256,
            sha512: d.sha512,
        }
        .to_header_value()
    }

    // SHA-256 and SHA-512 of the empty string and of "hello world", in base64.
    const EMPTY_256: &str = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    const HELLO_256: &str = "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=";
    const HELLO_512: &str =
        "MJ7MSJwS1utMxA9QyQLytNDtd+5RGnx6m808qG1M2G+YndNbxf9JlnDaNCVbRbDP2DDoH2Bdz33FVC6TrpzXbw==";

    #[test]
    fn parses_sha256_and_sha512() {
        let d = ContentDigest::parse(&format!("sha-256=:{EMPTY_256}:")).unwrap();
        let mut h = Hashers::new(true, false);
        h.update(b"");
        assert_eq!(d.sha256, h.finish().sha256);
        assert_eq!(d.sha512, None);

        let d =
            ContentDigest::parse(&format!("sha-512=:{HELLO_512}:, sha-256=:{HELLO_256}:")).unwrap();
        let mut h = Hashers::new(true, true);
        h.update(b"hello world");
        let want = h.finish();
        assert_eq!(d.sha256, want.sha256);
        assert_eq!(d.sha512, want.sha512);
        assert_eq!(want.mismatch(&d), None);
    }

    #[test]
    fn mismatch_reports_the_algorithm() {
        let mut h = Hashers::new(true, true);
        h.update(b"hello world");
        let got = h.finish();
        let mut want = ContentDigest::parse(&format!("sha-256=:{HELLO_256}:")).unwrap();
        assert_eq!(got.mismatch(&want), None);
        want.sha512 = Some([0; 64]);
        assert_eq!(got.mismatch(&want), Some(DigestAlgorithm::Sha512));
        want.sha256 = Some([0; 32]);
        assert_eq!(got.mismatch(&want), Some(DigestAlgorithm::Sha256));
        // Expected but not computed: a mismatch, never a silent pass.
        let only256 = Digests {
            sha256: got.sha256,
            sha512: None,
        };
        let want512 = ContentDigest {
            sha256: None,
            sha512: got.sha512,
        };
        assert_eq!(only256.mismatch(&want512), Some(DigestAlgorithm::Sha512));
    }
}
