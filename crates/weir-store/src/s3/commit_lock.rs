//! The commit lock: a conditional multipart completion is serialized per key by a lock object
//! (`{prefix}.weir-locks/{path}`), taken with one conditional `PutObject`, released after, and
//! taken over once its lease has run out (the module docs of `s3` say why: SeaweedFS checks a
//! completion's condition apart from its write).

use super::*;

/// A held commit lock (see [`S3Store::lock`]).
#[derive(Debug)]
pub(super) struct CommitLock {
    key: String,
    etag: String,
}

/// Names of lock objects start with this (after the prefix); no store path can (`.weir-`), so
/// they are never listed or served.
const LOCK_DIR: &str = ".weir-locks/";
/// A lock older than this was left by a node that died while committing: it is taken over.
const LOCK_LEASE: Duration = Duration::from_secs(30);
/// How long a commit waits for another node's commit to the same key.
const LOCK_WAIT: Duration = Duration::from_secs(20);

impl S3Store {
    /// Takes the commit lock of `key`: the object `{prefix}.weir-locks/{path}`, created with
    /// `If-None-Match: *` (a single `PutObject`, whose condition stores decide atomically),
    /// holding its expiry time. Waits (with growing pauses) while another commit holds it,
    /// takes over one whose lease ran out, gives up after [`LOCK_WAIT`].
    pub(super) async fn lock(&self, key: &str) -> Result<CommitLock, StoreError> {
        let path = key.strip_prefix(&self.inner.prefix).unwrap_or(key);
        let lock_key = format!("{}{LOCK_DIR}{path}", self.inner.prefix);
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(10);
        loop {
            let expires = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                + LOCK_LEASE.as_secs();
            let headers = [("if-none-match", "*".to_owned())];
            let resp = self
                .put_small(&lock_key, &headers, Bytes::from(expires.to_string()))
                .await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(CommitLock {
                    key: lock_key,
                    etag: etag_of(&resp),
                });
            }
            match check_write("take commit lock", resp).await {
                Err(StoreError::PreconditionFailed) => {}
                Err(e) => return Err(e),
                Ok(()) => unreachable!("not a success"),
            }
            // Held: taken over if its lease ran out, else waited for.
            if let Some(stale) = self.stale_lock(&lock_key).await? {
                self.unlock(stale).await;
                continue;
            }
            if std::time::Instant::now() > deadline {
                return Err(StoreError::Backend {
                    op: "take commit lock",
                    message: "another upload is still committing to this path".into(),
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// The lock at `lock_key`, if its lease ran out.
    async fn stale_lock(&self, lock_key: &str) -> Result<Option<CommitLock>, StoreError> {
        let url = self
            .inner
            .bucket
            .get_object(Some(&self.inner.credentials), lock_key)
            .sign(SIGNED_FOR);
        let resp = self
            .send("read commit lock", Method::GET, url, &[], Bytes::new())
            .await?;
        if !resp.status().is_success() {
            // Gone meanwhile (404): try again at once.
            return Ok(None);
        }
        let etag = etag_of(&resp);
        let body = collect("read commit lock", resp).await?;
        let expires: u64 = std::str::from_utf8(&body)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Ok((expires < now).then(|| CommitLock {
            key: lock_key.to_owned(),
            etag,
        }))
    }

    /// Releases a lock: deleted only if it is still the one taken (`If-Match`), so a lock
    /// another node took over is left alone. Errors are ignored: the lease ends it anyway.
    pub(super) async fn unlock(&self, lock: CommitLock) {
        let mut action = self
            .inner
            .bucket
            .delete_object(Some(&self.inner.credentials), &lock.key);
        action.headers_mut().insert("if-match", lock.etag.as_str());
        let url = action.sign(SIGNED_FOR);
        let headers = [("if-match", lock.etag.as_str())];
        let _ = self
            .send(
                "release commit lock",
                Method::DELETE,
                url,
                &headers,
                Bytes::new(),
            )
            .await;
    }
}
