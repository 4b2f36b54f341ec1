//! Sidecars of multipart versions: the object `{prefix}.weir-meta/{path}`, holding what a
//! version could not be created with, read only for the version it names (the module docs of
//! `s3`, "Sidecars of multipart versions").
//!
//! Its text, a line each: the S3 ETag the completion answered; the SHA-256 (hex; empty when
//! it was not computed); then, only when a checksum was kept after the backend upload's
//! creation (a PutObject trailer's), that checksum as [`crate::CHECKSUM_FIELD`] holds it
//! (`ALGORITHM TYPE VALUE`). A two-line sidecar (every one written before checksums were
//! kept here) reads as one without a checksum. A sidecar that does not parse gives nothing:
//! a version never gets a digest or a checksum it might not have.

use super::*;

/// Names of sidecars start with this (after the prefix): never listed or served, like the
/// locks.
const SIDECAR_DIR: &str = ".weir-meta/";

/// The backend metadata marking a multipart version created with its SHA-256 whose sidecar
/// may still hold a checksum (a trailer was announced, `StoreUpload::checksum_follows`): a
/// `HeadObject` of a version without it reads a sidecar only when the SHA-256 is missing.
pub(super) const CHECKSUM_FOLLOWS_META: &str = "x-amz-meta-weir-checksum-follows";

/// What a version's sidecar holds beside the ETag it names.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Sidecar {
    pub(super) sha256: Option<[u8; 32]>,
    /// `(algorithm, type, base64 value)`, as [`ObjectMeta::checksum`] gives it.
    pub(super) checksum: Option<(String, String, String)>,
}

impl Sidecar {
    /// The sidecar text for the version `etag` (see the module doc).
    fn encode(etag: &str, sha256: Option<&[u8; 32]>, checksum: Option<&str>) -> String {
        let sha256 = sha256.map(|d| hex(d)).unwrap_or_default();
        match checksum {
            Some(c) => format!("{etag}\n{sha256}\n{c}\n"),
            None => format!("{etag}\n{sha256}\n"),
        }
    }

    /// What `text` holds for the version `etag`; `None` when it names another version or is
    /// not a sidecar.
    fn decode(text: &[u8], etag: &str) -> Option<Sidecar> {
        let text = std::str::from_utf8(text).ok()?;
        let mut lines = text.lines();
        let named = lines.next()?;
        if named.trim_matches('"') != etag.trim_matches('"') {
            return None;
        }
        let sha256 = lines.next()?.trim();
        let sha256 = match sha256 {
            "" => None,
            d => Some(parse_hex32(d)?),
        };
        let checksum = match lines.next() {
            None => None,
            Some(line) => {
                // Checked as the object's own field is: a value `ObjectMeta` would refuse is
                // no checksum.
                let mut check = ObjectMeta::new();
                let mut words = line.split(' ');
                let (a, k, v) = (words.next()?, words.next()?, words.next()?);
                if words.next().is_some() || check.set_checksum(a, k, v).is_err() {
                    return None;
                }
                Some((a.to_owned(), k.to_owned(), v.to_owned()))
            }
        };
        if lines.next().is_some() {
            return None;
        }
        Some(Sidecar { sha256, checksum })
    }

    /// Gives `head` what its metadata lacks: the SHA-256, and the checksum (the metadata's own
    /// stays when it has one).
    pub(super) fn fill(self, head: &mut Head) {
        if head.meta.sha256.is_none() {
            head.meta.sha256 = self.sha256;
        }
        let Some((algorithm, kind, value)) = self.checksum else {
            return;
        };
        let meta = head.object_meta.get_or_insert_with(ObjectMeta::new);
        if meta.checksum().is_none() {
            // Checked when the sidecar was read: cannot be refused.
            let _ = meta.set_checksum(&algorithm, &kind, &value);
        }
    }
}

impl S3Store {
    /// The sidecar object of `key`: `{prefix}.weir-meta/{path}`.
    pub(super) fn sidecar_key(&self, key: &str) -> String {
        let path = key.strip_prefix(&self.inner.prefix).unwrap_or(key);
        // ALLOCATION: the key, once per sidecar request.
        format!("{}{SIDECAR_DIR}{path}", self.inner.prefix)
    }

    /// Writes `key`'s sidecar for the version `etag`: its SHA-256 (hex), and `checksum` (a
    /// [`crate::CHECKSUM_FIELD`] value) when one was kept after the version's creation.
    pub(super) async fn put_sidecar(
        &self,
        key: &str,
        etag: &str,
        sha256: Option<&[u8; 32]>,
        checksum: Option<&str>,
    ) -> Result<(), StoreError> {
        // ALLOCATION: the few lines of text, once per sidecar written.
        let body = Bytes::from(Sidecar::encode(etag, sha256, checksum));
        let resp = self
            .put_small(&self.sidecar_key(key), NO_HEADERS, body)
            .await?;
        check_write("put digest sidecar", resp).await
    }

    /// What `key`'s sidecar holds if it names the version `etag`; `None` when there is no
    /// sidecar or it belongs to another version.
    pub(super) async fn sidecar(
        &self,
        key: &str,
        etag: &str,
    ) -> Result<Option<Sidecar>, StoreError> {
        let url = self
            .inner
            .bucket
            .get_object(Some(&self.inner.credentials), &self.sidecar_key(key))
            .sign(SIGNED_FOR);
        let resp = self
            .send("read digest sidecar", Method::GET, url, &[], Bytes::new())
            .await?;
        match resp.status() {
            s if s.is_success() => {}
            StatusCode::NOT_FOUND => return Ok(None),
            _ => return Err(failure("read digest sidecar", resp).await),
        }
        let body = collect("read digest sidecar", resp).await?;
        Ok(Sidecar::decode(&body, etag))
    }

    /// Removes `key`'s sidecar (after the object): errors are ignored, since a sidecar naming
    /// a version that is gone is never used.
    pub(super) async fn delete_sidecar(&self, key: &str) {
        let url = self
            .inner
            .bucket
            .delete_object(Some(&self.inner.credentials), &self.sidecar_key(key))
            .sign(SIGNED_FOR);
        let _ = self
            .send(
                "delete digest sidecar",
                Method::DELETE,
                url,
                &[],
                Bytes::new(),
            )
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: [u8; 32] = [0xab; 32];

    #[test]
    fn two_line_sidecars_still_read() {
        let old = format!("\"e-2\"\n{}\n", hex(&SHA));
        let got = Sidecar::decode(old.as_bytes(), "\"e-2\"").unwrap();
        assert_eq!(got.sha256, Some(SHA));
        assert_eq!(got.checksum, None);
    }

    #[test]
    fn a_checksum_line_round_trips_for_its_version_only() {
        let text = Sidecar::encode("\"e-3\"", Some(&SHA), Some("CRC32 FULL_OBJECT WgDhBQ=="));
        let got = Sidecar::decode(text.as_bytes(), "e-3").unwrap();
        assert_eq!(got.sha256, Some(SHA));
        let want = ("CRC32".into(), "FULL_OBJECT".into(), "WgDhBQ==".into());
        assert_eq!(got.checksum, Some(want));
        assert_eq!(Sidecar::decode(text.as_bytes(), "\"e-4\""), None);
        // No SHA-256 line value: the checksum alone.
        let text = Sidecar::encode("e-3", None, Some("CRC32 FULL_OBJECT WgDhBQ=="));
        let got = Sidecar::decode(text.as_bytes(), "e-3").unwrap();
        assert_eq!(got.sha256, None);
        assert!(got.checksum.is_some());
    }

    #[test]
    fn damaged_sidecars_give_nothing() {
        let sha = hex(&SHA);
        for text in [
            String::new(),
            "e-2\n".to_owned(),
            "e-2\nnot hex\n".to_owned(),
            format!("e-2\n{sha}\nCRC32 FULL_OBJECT\n"),
            format!("e-2\n{sha}\nCRC32 FULL_OBJECT a b\n"),
            format!("e-2\n{sha}\nCRC32 FULL_OBJECT \u{7}\n"),
            format!("e-2\n{sha}\nCRC32 FULL_OBJECT v\nmore\n"),
        ] {
            assert_eq!(Sidecar::decode(text.as_bytes(), "e-2"), None, "{text:?}");
        }
    }

    #[test]
    fn filling_keeps_what_the_metadata_has() {
        let head = |meta: Option<ObjectMeta>| Head {
            meta: FileMeta {
                size: 1,
                modified: UNIX_EPOCH,
                sha256: None,
            },
            media_type: None,
            props: None,
            object_meta: meta,
            etag: "e-2".into(),
            checksum_follows: false,
        };
        let sidecar = || Sidecar {
            sha256: Some(SHA),
            checksum: Some(("CRC32".into(), "FULL_OBJECT".into(), "WgDhBQ==".into())),
        };
        let mut bare = head(None);
        sidecar().fill(&mut bare);
        assert_eq!(bare.meta.sha256, Some(SHA));
        let kept = bare.object_meta.as_ref().and_then(ObjectMeta::checksum);
        assert_eq!(kept, Some(("CRC32", "FULL_OBJECT", "WgDhBQ==")));
        let mut own = ObjectMeta::new();
        own.set_checksum("SHA1", "FULL_OBJECT", "AAAA").unwrap();
        let mut with_own = head(Some(own));
        sidecar().fill(&mut with_own);
        let kept = with_own.object_meta.as_ref().and_then(ObjectMeta::checksum);
        assert_eq!(kept, Some(("SHA1", "FULL_OBJECT", "AAAA")));
    }
}
