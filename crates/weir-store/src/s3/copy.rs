//! Server-side copy and rename in a bucket ([`Store::copy`](crate::Store::copy),
//! [`Store::rename`](crate::Store::rename)): no byte passes through this node.
//!
//! - **copy** is S3's `CopyObject` (a `PutObject` with `x-amz-copy-source`), pinned to the
//!   source version its `HeadObject` saw (`x-amz-copy-source-if-match`), with the metadata
//!   replaced by the source's media type, S3 metadata (or the caller's: [`CopyMeta`]) and
//!   SHA-256 (which may have come from a multipart
//!   version's sidecar: the copy then holds it in its own metadata). The caller's check of the
//!   version at the target goes through `write_checked`, as an upload's commit: judged on a
//!   `HeadObject`, then `If-None-Match: *` or `If-Match` on the copy. S3 copies at most 5 GiB
//!   in one `CopyObject`; a larger source is refused by the store.
//! - **rename** is a copy, then a `DeleteObject` of the source, only if the source is still
//!   the version copied (a newer one another writer stored meanwhile stays). **Not atomic**:
//!   between the two, both names hold the object, and a failure of the delete (or a node that
//!   dies there) leaves both; the error says so.

use super::upload::{Late, ObjectWrite};
use super::{S3Store, SHA256_META};
use crate::quota::ENTRY_COST;
use crate::store::{Store, VersionCheck};
use crate::{Committed, CopyMeta, FileMeta, StoreError, StorePath};
use std::borrow::Cow;

impl S3Store {
    /// `CopyObject` of `from` to `to` (see the module doc), with the source's metadata: what
    /// was copied (the answer for `to`), and the source's version, for a rename's delete.
    pub(super) async fn copy_object(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
        meta: CopyMeta<'_>,
    ) -> Result<(Committed, FileMeta), StoreError> {
        let from_key = self.key(from);
        let Some(source) = self.head(&from_key).await? else {
            return Err(StoreError::NotFound);
        };
        let size = source.meta.size;
        // As an upload of that size: the object and its entry against the quota first.
        let reserved = size.saturating_add(ENTRY_COST);
        self.inner.usage.reserve(reserved)?;
        let mut headers: Vec<(Cow<'static, str>, String)> = vec![
            (
                "x-amz-copy-source".into(),
                copy_source(self.inner.bucket.name(), &from_key),
            ),
            ("x-amz-copy-source-if-match".into(), source.etag.clone()),
            ("x-amz-metadata-directive".into(), "REPLACE".to_owned()),
        ];
        let (media_type, object_meta) = match meta {
            CopyMeta::Source => (source.media_type.as_ref(), source.object_meta.as_ref()),
            CopyMeta::Replace {
                media_type,
                object_meta,
            } => (media_type, Some(object_meta)),
        };
        if let Some(media_type) = media_type {
            headers.push(("content-type".into(), media_type.as_str().to_owned()));
        }
        if let Some(sha256) = &source.meta.sha256 {
            headers.push((SHA256_META.into(), super::hex(sha256)));
        }
        // S3 metadata: the source's (S3's COPY) or the caller's (REPLACE).
        headers.extend(object_meta.into_iter().flat_map(super::meta::headers));
        // Dead properties go with the object (WebDAV's COPY and MOVE).
        if let Some(props) = &source.props {
            headers.push((super::props::PROPS_META.into(), super::props::encode(props)));
        }
        let to_key = self.key(to);
        let write = ObjectWrite::Copy { headers };
        let written = match self.write_checked(&to_key, check, write).await {
            Ok(w) => w,
            Err(e) => {
                self.inner.usage.release(reserved);
                return Err(e);
            }
        };
        self.note_committed(reserved, written.replaced);
        let stored = self
            .committed_meta(
                &to_key,
                size,
                source.meta.sha256,
                source.meta.sha256,
                written.etag.as_deref(),
                Late::default(),
            )
            .await?;
        let committed = Committed {
            size,
            sha256: source.meta.sha256,
            replaced: written.replaced.is_some(),
            stored,
        };
        Ok((committed, source.meta))
    }

    /// A copy, then the source deleted if it is still the version copied (see the module doc).
    pub(super) async fn rename_object(
        &self,
        from: &StorePath,
        to: &StorePath,
        check: Option<VersionCheck<'_>>,
    ) -> Result<Committed, StoreError> {
        if from.as_str() == to.as_str() {
            // Nothing to move; the check still judges the version there.
            let object = self.head(&self.key(from)).await?;
            let Some(object) = object else {
                return Err(StoreError::NotFound);
            };
            if check.is_some_and(|check| !check(Some(&object.meta))) {
                return Err(StoreError::PreconditionFailed);
            }
            return Ok(Committed {
                size: object.meta.size,
                sha256: object.meta.sha256,
                replaced: true,
                stored: object.meta,
            });
        }
        let (committed, source) = self.copy_object(from, to, check, CopyMeta::Source).await?;
        let copied = |meta: Option<&FileMeta>| meta == Some(&source);
        match Store::delete(self, from, Some(&copied)).await {
            // Deleted; or another writer's version is there now, or none: not the one moved.
            Ok(()) | Err(StoreError::PreconditionFailed | StoreError::NotFound) => Ok(committed),
            Err(e) => Err(StoreError::Backend {
                op: "rename object",
                message: format!("copied to {to}, but the source {from} stays: {e}"),
            }),
        }
    }
}

/// `x-amz-copy-source`: `/bucket/key`, the key percent-encoded but for its slashes.
pub(super) fn copy_source(bucket: &str, key: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bucket.len() + key.len() + 8);
    out.push('/');
    out.push_str(bucket);
    out.push('/');
    for &b in key.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn copy_sources_encode_all_but_slashes() {
        assert_eq!(
            super::copy_source("b", "p/a b+é/x.txt"),
            "/b/p/a%20b%2B%C3%A9/x.txt"
        );
    }
}
