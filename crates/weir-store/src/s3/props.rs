//! Dead properties in a bucket ([`Store::props`](crate::Store::props),
//! [`Store::set_props`](crate::Store::set_props)): the object's user metadata
//! `x-amz-meta-weir-props`, base64 (header values are ASCII), at most
//! [`MAX_PROPS`](crate::MAX_PROPS) bytes before encoding, so that it fits with weir's other
//! metadata in S3's 2 KiB.
//!
//! Metadata cannot change in place: setting it is a `CopyObject` of the object onto itself
//! (`x-amz-metadata-directive: REPLACE`, the media type, S3 metadata and SHA-256 carried
//! over), pinned to
//! the version read (`x-amz-copy-source-if-match`, and `If-Match` on the write): a version
//! another writer stores meanwhile is never overwritten with the old bytes (the call fails,
//! [`StoreError::PreconditionFailed`]). The object's S3 ETag and time change; weir's `ETag`
//! (its SHA-256) does not. A folder's properties go on its `path/` marker, made when it has
//! none (a folder that exists only through keys below it). `copy.rs` carries them with a copy
//! or a rename.

use super::copy::copy_source;
use super::upload::ObjectWrite;
use super::{S3Store, SHA256_META, check_write};
use crate::quota::ENTRY_COST;
use crate::store::Store;
use crate::{FileMeta, MAX_PROPS, StoreError, StorePath};
use base64::Engine as _;
use bytes::Bytes;
use std::borrow::Cow;

/// The user metadata holding the dead properties.
pub(super) const PROPS_META: &str = "x-amz-meta-weir-props";

/// The header value of `props`.
pub(super) fn encode(props: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(props)
}

/// The dead properties of a header value; `None` when it is not ours (not base64, too long).
pub(super) fn decode(value: &str) -> Option<Vec<u8>> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    (decoded.len() <= MAX_PROPS).then_some(decoded)
}

impl S3Store {
    /// The dead properties of the object at `path`, or of the folder's marker.
    pub(super) async fn object_props(
        &self,
        path: &StorePath,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.key(path);
        if let Some(head) = self.head_raw(&key).await? {
            return Ok(head.props);
        }
        // ALLOCATION: the marker's key.
        if let Some(marker) = self.head_raw(&format!("{key}/")).await? {
            return Ok(marker.props);
        }
        match self.is_dir(path).await? {
            true => Ok(None),
            false => Err(StoreError::NotFound),
        }
    }

    /// Replaces them (see the module doc).
    pub(super) async fn set_object_props(
        &self,
        path: &StorePath,
        value: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        if value.is_some_and(|v| v.len() > MAX_PROPS) {
            return Err(StoreError::NoSpace);
        }
        let key = self.key(path);
        let target = match self.head(&key).await? {
            Some(head) => Some((key, head)),
            None => {
                let marker = format!("{key}/");
                match self.head_raw(&marker).await? {
                    Some(head) => Some((marker, head)),
                    None if self.is_dir(path).await? => {
                        return self.new_marker(&marker, value).await;
                    }
                    None => return Err(StoreError::NotFound),
                }
            }
        };
        let Some((key, head)) = target else {
            unreachable!("every other case returned");
        };
        let object_meta = head.object_meta.clone();
        self.copy_onto_itself(key, head, value, object_meta).await
    }

    /// Sets the object's `x-amz-meta-mtime` (rclone's name, `meta.rs`) to `client`, its
    /// other metadata and properties kept ([`Store::set_modified`]).
    pub(super) async fn set_object_modified(
        &self,
        path: &StorePath,
        client: std::time::SystemTime,
    ) -> Result<(), StoreError> {
        let key = self.key(path);
        let Some(head) = self.head(&key).await? else {
            return match self.is_dir(path).await? {
                true => Err(StoreError::IsDirectory),
                false => Err(StoreError::NotFound),
            };
        };
        // ALLOCATION: the metadata rebuilt without its old time, once per call. Every field
        // kept, weir's own too (the checksum, the parts' sizes), not only those a client sees.
        let mut kept = crate::ObjectMeta::new();
        for (name, value) in head.object_meta.iter().flat_map(|m| m.stored_fields()) {
            if name != super::meta::MTIME {
                // Pushed as it was read: it was accepted then.
                let _ = kept.push(name, value);
            }
        }
        let object_meta = super::meta::with_mtime(Some(kept), client);
        let props = head.props.clone();
        self.copy_onto_itself(key, head, props.as_deref(), object_meta)
            .await
    }

    /// A `CopyObject` of `key` (at the version `head`) onto itself with `props` and
    /// `object_meta`, its media type and SHA-256 carried over (see the module doc).
    async fn copy_onto_itself(
        &self,
        key: String,
        head: super::Head,
        value: Option<&[u8]>,
        object_meta: Option<crate::ObjectMeta>,
    ) -> Result<(), StoreError> {
        let mut headers: Vec<(Cow<'static, str>, String)> = vec![
            (
                "x-amz-copy-source".into(),
                copy_source(self.inner.bucket.name(), &key),
            ),
            ("x-amz-copy-source-if-match".into(), head.etag.clone()),
            ("x-amz-metadata-directive".into(), "REPLACE".to_owned()),
        ];
        if let Some(media_type) = &head.media_type {
            headers.push(("content-type".into(), media_type.as_str().to_owned()));
        }
        if let Some(sha256) = &head.meta.sha256 {
            headers.push((SHA256_META.into(), super::hex(sha256)));
        }
        // The object's S3 metadata: what it was, or with a new time.
        headers.extend(object_meta.iter().flat_map(super::meta::headers));
        if let Some(v) = value {
            headers.push((PROPS_META.into(), encode(v)));
        }
        // The same version, or nothing is written; its size is unchanged, so is the usage.
        let same = |meta: Option<&FileMeta>| meta == Some(&head.meta);
        self.write_checked(&key, Some(&same), ObjectWrite::Copy { headers })
            .await
            .map(|_| ())
    }

    /// A folder's marker made with its properties (a folder that had none), counted as
    /// `create_dir` counts one.
    async fn new_marker(&self, marker: &str, value: Option<&[u8]>) -> Result<(), StoreError> {
        let Some(value) = value else {
            return Ok(());
        };
        self.inner.usage.reserve(ENTRY_COST)?;
        let headers = [
            ("if-none-match", "*".to_owned()),
            (PROPS_META, encode(value)),
        ];
        let written = match self.put_small(marker, &headers, Bytes::new()).await {
            Ok(resp) => check_write("put folder marker", resp).await,
            Err(e) => Err(e),
        };
        match written {
            Ok(()) => {
                self.note_committed(ENTRY_COST, None);
                Ok(())
            }
            Err(e) => {
                self.inner.usage.release(ENTRY_COST);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_round_trip_and_bounds_hold() {
        let v = "<p xmlns=\"urn:é\">☃</p>".as_bytes();
        assert_eq!(super::decode(&super::encode(v)).as_deref(), Some(v));
        assert_eq!(super::decode("not base64!"), None);
        let long = super::encode(&vec![0; crate::MAX_PROPS + 1]);
        assert_eq!(super::decode(&long), None);
    }
}
