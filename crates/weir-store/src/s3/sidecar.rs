//! Digest sidecars of multipart uploads: the object `{prefix}.weir-meta/{path}`, the S3 ETag the
//! completion answered and the SHA-256, a line each; read only for the version it names (the
//! module docs of `s3`, "Digests of multipart uploads").

use super::*;

/// Names of digest sidecars start with this (after the prefix): never listed or served, like
/// the locks.
const SIDECAR_DIR: &str = ".weir-meta/";

impl S3Store {
    /// The sidecar object of `key`: `{prefix}.weir-meta/{path}`.
    pub(super) fn sidecar_key(&self, key: &str) -> String {
        let path = key.strip_prefix(&self.inner.prefix).unwrap_or(key);
        // ALLOCATION: the key, once per sidecar request.
        format!("{}{SIDECAR_DIR}{path}", self.inner.prefix)
    }

    /// Writes `key`'s sidecar: the version's S3 ETag and its SHA-256 (hex), a line each.
    pub(super) async fn put_sidecar(
        &self,
        key: &str,
        etag: &str,
        sha256: &[u8; 32],
    ) -> Result<(), StoreError> {
        let body = Bytes::from(format!("{etag}\n{}\n", hex(sha256)));
        let resp = self
            .put_small(&self.sidecar_key(key), NO_HEADERS, body)
            .await?;
        check_write("put digest sidecar", resp).await
    }

    /// The SHA-256 in `key`'s sidecar if the sidecar names the version `etag`; `None` when
    /// there is no sidecar or it belongs to another version.
    pub(super) async fn sidecar_sha256(
        &self,
        key: &str,
        etag: &str,
    ) -> Result<Option<[u8; 32]>, StoreError> {
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
        let text = std::str::from_utf8(&body).unwrap_or("");
        let mut lines = text.lines();
        match (lines.next(), lines.next()) {
            (Some(e), Some(d)) if e.trim_matches('"') == etag.trim_matches('"') => {
                Ok(parse_hex32(d.trim()))
            }
            _ => Ok(None),
        }
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
