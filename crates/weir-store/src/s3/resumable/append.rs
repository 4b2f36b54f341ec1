//! [`S3Append`]: one request's append to an S3 resumable upload, under the upload's lease:
//! bytes into the part buffer (a tail object for the bytes past the last whole part), parts
//! sent with bounded concurrency, each recorded in the manifest once sent, and the completion.

use super::*;

/// A part being sent: its number, the hash state at its end, the task.
type PartInFlight = (u16, [u8; SAVED_LEN], JoinHandle<Result<String, StoreError>>);

/// One request's append to an upload (holds its lease). End it with [`S3Append::finish`];
/// dropped without it, its parts in flight are cancelled and its lease released from a task
/// (the manifest keeps the last recorded state).
#[derive(Debug)]
pub struct S3Append {
    pub(super) up: S3Resumables,
    pub(super) id: String,
    pub(super) manifest: Manifest,
    pub(super) manifest_etag: String,
    pub(super) lease: Option<Lease>,
    /// When the lease was last renewed: a request whose parts take long (a slow client) renews
    /// it from [`S3Append::write`] every third of its duration, so it lapses only when the
    /// node stops.
    pub(super) lease_renewed: std::time::Instant,
    pub(super) hasher: ResumableSha256,
    /// The part being filled: bytes `[received - part.len(), received)`.
    pub(super) part: BytesMut,
    /// Bytes of the upload received so far (the recorded offset plus this request's).
    pub(super) received: u64,
    /// The upload's length, if known.
    pub(super) length: Option<u64>,
    /// Parts sent, oldest first: recorded in order, so the recorded offset has no holes.
    pub(super) in_flight: VecDeque<PartInFlight>,
    /// Bytes taken from the store's usage for the upload (see "Quota" in the module doc):
    /// given back on drop unless a completion made them the object's.
    pub(super) reserved: u64,
    /// The SHA-256 the completion must also match, given after the body
    /// ([`S3Append::expect_digest`]).
    pub(super) late_sha256: Option<[u8; 32]>,
    /// This request's parts are recorded only at its end, or never ([`S3Append::hold_records`]).
    pub(super) held: Option<Held>,
    /// The tail the held parts made stale, deleted once the manifest no longer names it.
    pub(super) stale_tail: Option<String>,
}

impl S3Append {
    /// The upload's state as recorded now.
    pub fn state(&self) -> S3UploadState {
        self.manifest.state()
    }

    /// Bytes received so far (recorded or not).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Adds a digest of the whole upload that the completion must match, known only after
    /// the body: a trailer of the request that completes it. Checked against the SHA-256
    /// finalized from the kept state, before anything is written. Only `sha-256` can be
    /// (the manifest keeps that state alone): a `sha-512` member is refused
    /// ([`StoreError::DigestUnavailable`]) rather than left unchecked.
    pub fn expect_digest(&mut self, digest: &ContentDigest) -> Result<(), StoreError> {
        if digest.sha512.is_some() {
            return Err(StoreError::DigestUnavailable {
                algorithm: crate::DigestAlgorithm::Sha512,
            });
        }
        if digest.sha256.is_some() {
            self.late_sha256 = digest.sha256;
        }
        Ok(())
    }

    /// Appends `bytes`: copied into the part buffer, hashed; a full part is sent from a task
    /// (waiting first while `parts_in_flight` are out, the backpressure). Returns the offset
    /// newly recorded, when a part's acknowledgment moved it (for a progress `104`).
    pub async fn write(&mut self, mut bytes: &[u8]) -> Result<Option<u64>, StoreError> {
        let end = self.received + bytes.len() as u64;
        if let Some(length) = self.length {
            if end > length {
                return Err(StoreError::LengthMismatch {
                    expected: length,
                    actual: end,
                });
            }
        }
        // The quota: bytes past what the append reserved at its start are taken as they come;
        // refused ones are not kept (the client resumes from the recorded offset).
        let needed = end.saturating_add(ENTRY_COST);
        if needed > self.reserved {
            self.up.store.inner.usage.reserve(needed - self.reserved)?;
            self.reserved = needed;
        }
        let part_size = usize::try_from(self.manifest.part_size).unwrap_or(usize::MAX);
        let mut recorded = None;
        while !bytes.is_empty() {
            if self.part.capacity() == 0 {
                // ALLOCATION: one part buffer at a time (sent ones are owned by their tasks).
                self.part.reserve(part_size);
            }
            let n = bytes.len().min(part_size - self.part.len());
            self.hasher.update(&bytes[..n]);
            if let Some(held) = &mut self.held {
                // A second pass over the bytes, only for a request that carries its checksum.
                held.sha256.update(&bytes[..n]);
            }
            // COPY: the body's bytes into the part (a part must be one contiguous body).
            self.part.extend_from_slice(&bytes[..n]);
            self.received += n as u64;
            bytes = &bytes[n..];
            if self.part.len() == part_size {
                if let Some(offset) = self.send_part().await? {
                    recorded = Some(offset);
                }
            }
        }
        if self.lease_renewed.elapsed() > self.up.options.lease / 3 {
            self.renew_lease().await?;
        }
        // Parts the store acknowledged meanwhile are recorded now, not when the next part
        // needs their place: the recorded offset (what a node killed now leaves) keeps up.
        while self
            .in_flight
            .front()
            .is_some_and(|(_, _, task)| task.is_finished())
        {
            recorded = self.record_oldest().await?.or(recorded);
        }
        Ok(recorded)
    }

    fn part_key(&self) -> Result<String, StoreError> {
        Ok(self.up.store.key(&StorePath::parse(&self.manifest.target)?))
    }

    /// Creates the multipart upload and records its id, with the announced SHA-256 as
    /// metadata (S3 takes metadata only here).
    async fn start_multipart(&mut self) -> Result<(), StoreError> {
        let s = self.up.store.clone();
        let key = self.part_key()?;
        let mut headers: Vec<(&'static str, String)> = Vec::with_capacity(2);
        if let Some(m) = &self.manifest.media_type {
            headers.push(("content-type", m.clone()));
        }
        if let Some(d) = self.announced_sha256() {
            headers.push((SHA256_META, hex(&d)));
        }
        let upload_id = create_multipart_request(&s, &key, &headers).await?;
        self.manifest.upload_id = Some(upload_id.clone());
        if let Err(e) = self.write_manifest().await {
            // Not recorded: nobody would ever complete or abort it.
            let _ = abort_request(&s, &key, &upload_id).await;
            return Err(e);
        }
        Ok(())
    }

    fn announced_sha256(&self) -> Option<[u8; 32]> {
        let d = self.manifest.digest.as_deref()?;
        ContentDigest::parse(d).ok()?.sha256
    }

    /// Sends the filled part from a task, after recording the oldest ones while
    /// `parts_in_flight` are out. Returns the offset recorded meanwhile, if it moved.
    async fn send_part(&mut self) -> Result<Option<u64>, StoreError> {
        if self.manifest.upload_id.is_none() {
            self.start_multipart().await?;
        }
        let mut recorded = None;
        while self.in_flight.len() >= self.up.store.inner.parts_in_flight {
            recorded = self.record_oldest().await?.or(recorded);
        }
        let number = u16::try_from(self.received / self.manifest.part_size).map_err(|_| {
            StoreError::Backend {
                op: "upload part",
                message: "more than 65535 parts: raise the part size".into(),
            }
        })?;
        let state = self.hasher.to_bytes();
        // No copy: the filled buffer is frozen and sent; a new one is allocated for the next.
        let body = std::mem::take(&mut self.part).freeze();
        let task = tokio::spawn(upload_part(
            self.up.store.clone(),
            self.part_key()?,
            self.manifest.upload_id.clone().unwrap_or_default(),
            number,
            body,
        ));
        self.in_flight.push_back((number, state, task));
        Ok(recorded)
    }

    /// Waits for the oldest part in flight and records it: the offset moves to its end, the
    /// hash state to the one taken when it was filled, the tail is gone. Returns the offset
    /// recorded; `None` when nothing was (no part in flight, or a held request's part, kept
    /// aside until the request's end: [`S3Append::hold_records`]).
    async fn record_oldest(&mut self) -> Result<Option<u64>, StoreError> {
        let Some((number, state, task)) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let etag = task.await.map_err(|e| StoreError::Backend {
            op: "upload part",
            message: format!("part task: {e}"),
        })??;
        if let Some(held) = &mut self.held {
            held.parts.push((number, etag, state));
            return Ok(None);
        }
        let old_tail = self.manifest.tail.take();
        self.manifest.parts.push((number, etag));
        self.manifest.offset = u64::from(number) * self.manifest.part_size;
        self.manifest.sha256 = state;
        self.write_manifest().await?;
        if let Some(tail) = old_tail {
            let key = format!("{}{tail}", self.up.dir(&self.id));
            // A failure leaves an object the upload's removal deletes anyway.
            let _ = self.up.delete_key(&key, None).await;
        }
        Ok(Some(self.manifest.offset))
    }

    /// Rewrites the manifest (`If-Match` on the last one seen) and renews the lease.
    async fn write_manifest(&mut self) -> Result<(), StoreError> {
        self.manifest.generation += 1;
        self.manifest.expires = now_secs() + self.up.options.expiry.as_secs();
        let key = format!("{}manifest", self.up.dir(&self.id));
        let headers = [("if-match", self.manifest_etag.clone())];
        let body = Bytes::from(self.manifest.to_text());
        let resp = self.up.store.put_small(&key, &headers, body).await?;
        if !resp.status().is_success() {
            // Another writer recorded meanwhile (this one's lease was taken over) or the
            // upload was cancelled: this request's bytes are not recorded.
            return check_write("write upload manifest", resp).await;
        }
        self.manifest_etag = etag_of(&resp);
        self.renew_lease().await
    }

    async fn renew_lease(&mut self) -> Result<(), StoreError> {
        let Some(lease) = &mut self.lease else {
            return Ok(());
        };
        let body = Bytes::from(format!(
            "{} {}",
            now_millis() + lease_millis(self.up.options.lease),
            self.id
        ));
        let headers = [("if-match", lease.etag.clone())];
        let resp = self.up.store.put_small(&lease.key, &headers, body).await?;
        if resp.status().is_success() {
            lease.etag = etag_of(&resp);
            self.lease_renewed = std::time::Instant::now();
            return Ok(());
        }
        // Taken over (this request stalled past its lease): it must stop appending.
        let lost = check_write("renew upload lease", resp).await;
        if matches!(lost, Err(StoreError::PreconditionFailed)) {
            // Not ours any more: not to be released either.
            self.lease = None;
        }
        lost
    }

    /// Ends the request. Every part in flight is recorded first. `complete`: the upload ends
    /// here (its length is what was received; the SHA-256 checked against the announced
    /// digests), the object is stored and the upload's objects removed; else the bytes past
    /// the last part are stored as a new tail and recorded with the offset (a cut request
    /// ends this way too: the client resumes from what arrived).
    pub async fn finish(self, complete: bool) -> Result<S3AppendEnd, StoreError> {
        self.finish_checked(complete, None).await
    }

    /// [`S3Append::finish`], where a completion writes the object only if `check` (when
    /// given) accepts the version at the target then: the creating request's preconditions
    /// ([`S3UploadState::condition`]) evaluated again, atomically with the write as a plain
    /// upload's commit does (`S3Store::write_checked`). A completion refused for good (the
    /// check: [`StoreError::PreconditionFailed`]; a digest mismatch) stores nothing and
    /// removes the upload, as a failed commit discards a plain upload: its multipart upload
    /// aborted, its objects deleted, nothing left pending.
    pub async fn finish_checked(
        mut self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<S3AppendEnd, StoreError> {
        let result = self.finish_inner(complete, check).await;
        if let Some(lease) = self.lease.take() {
            self.up.release(lease).await;
        }
        result
    }

    async fn finish_inner(
        &mut self,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<S3AppendEnd, StoreError> {
        while !self.in_flight.is_empty() {
            self.record_oldest().await?;
        }
        // A held request that ends here is recorded with the rest of its end.
        self.fold_held();
        if complete {
            return match self.complete(check).await {
                Ok(committed) => Ok(S3AppendEnd::Completed(committed)),
                Err(e @ (StoreError::DigestMismatch { .. } | StoreError::PreconditionFailed)) => {
                    // It can never complete as it is: removed, the lease with its objects.
                    if let Err(removal) = self.up.remove(&self.id, &self.manifest).await {
                        eprintln!("weir-store: removing refused upload {}: {removal}", self.id);
                    }
                    self.lease = None;
                    Err(e)
                }
                Err(e) => Err(e),
            };
        }
        if self.received != self.manifest.offset {
            let name = format!(
                "tail-{}-{}",
                self.manifest.generation + 1,
                random_hex::<4>()?
            );
            let key = format!("{}{name}", self.up.dir(&self.id));
            // No copy: the part's bytes are the tail object's body.
            let body = std::mem::take(&mut self.part).freeze();
            let resp = self.up.store.put_small(&key, NO_HEADERS, body).await?;
            check_write("write upload tail", resp).await?;
            let old = self.manifest.tail.replace(name);
            self.manifest.offset = self.received;
            self.manifest.sha256 = self.hasher.to_bytes();
            self.write_manifest().await?;
            if let Some(old) = old {
                let _ = self
                    .up
                    .delete_key(&format!("{}{old}", self.up.dir(&self.id)), None)
                    .await;
            }
        } else {
            // Nothing new past the last record: the expiry is still renewed.
            self.write_manifest().await?;
        }
        self.delete_stale_tail().await;
        Ok(S3AppendEnd::Incomplete(self.manifest.state()))
    }

    /// Stores the object: the tail as the last part and `CompleteMultipartUpload`, or one
    /// `PutObject` for an upload smaller than a part, conditional on `check` (see
    /// [`S3Append::finish_checked`]); then removes the upload's objects.
    async fn complete(&mut self, check: Option<VersionCheck<'_>>) -> Result<Committed, StoreError> {
        let size = self.received;
        if let Some(expected) = self.length {
            if expected != size {
                return Err(StoreError::LengthMismatch {
                    expected,
                    actual: size,
                });
            }
        }
        let sha256 = self.hasher.clone().finalize();
        // The digest announced at creation and the one given after the body, if any.
        for expected in [self.announced_sha256(), self.late_sha256]
            .into_iter()
            .flatten()
        {
            if expected != sha256 {
                return Err(StoreError::DigestMismatch {
                    algorithm: crate::DigestAlgorithm::Sha256,
                });
            }
        }
        let s = self.up.store.clone();
        let key = self.part_key()?;
        let (written, stored_sha256) = match self.manifest.upload_id.clone() {
            None => {
                let mut headers = Vec::with_capacity(2);
                if let Some(m) = &self.manifest.media_type {
                    headers.push(("content-type".into(), m.clone()));
                }
                headers.push((SHA256_META.into(), hex(&sha256)));
                // No copy: the part's bytes are the object's body.
                let body = std::mem::take(&mut self.part).freeze();
                let write = ObjectWrite::Put { headers, body };
                (s.write_checked(&key, check, write).await?, Some(sha256))
            }
            Some(upload_id) => {
                let mut parts = self.manifest.parts.clone();
                if !self.part.is_empty() {
                    let number =
                        u16::try_from(parts.len() + 1).map_err(|_| StoreError::Backend {
                            op: "upload part",
                            message: "more than 65535 parts".into(),
                        })?;
                    let body = std::mem::take(&mut self.part).freeze();
                    let etag = upload_part(s.clone(), key.clone(), upload_id.clone(), number, body)
                        .await?;
                    parts.push((number, etag));
                }
                let etags = parts.iter().map(|(_, e)| e.as_str()).collect();
                let write = ObjectWrite::Complete {
                    upload_id: &upload_id,
                    etags,
                };
                // The metadata given at the multipart upload's creation: the announced digest.
                (
                    s.write_checked(&key, check, write).await?,
                    self.announced_sha256(),
                )
            }
        };
        let replaced = written.replaced.is_some();
        // The reservation becomes the object's; the version it replaced gives its share back.
        // What was reserved past the object (a declared length is exact, so nothing here)
        // is given back.
        let taken = size.saturating_add(ENTRY_COST);
        let spare = std::mem::take(&mut self.reserved).saturating_sub(taken);
        s.inner.usage.release(spare);
        s.note_committed(taken, written.replaced);
        // The object is stored: the parts and tails go; the manifest stays, completed, until
        // it expires, so that a client that lost the answer learns the upload is complete
        // (a failure leaves objects the upload's removal deletes anyway).
        if let Err(e) = self.up.delete_dir_but_manifest(&self.id).await {
            eprintln!("weir-store: cleaning completed upload {}: {e}", self.id);
        }
        // Deleted with the rest (or left to lapse): nothing to renew or release.
        self.lease = None;
        self.manifest.tail = None;
        self.manifest.complete = true;
        self.manifest.offset = size;
        self.manifest.length = Some(size);
        self.manifest.sha256 = self.hasher.to_bytes();
        self.manifest.parts.clear();
        self.manifest.upload_id = None;
        if let Err(e) = self.write_manifest().await {
            eprintln!("weir-store: recording completed upload {}: {e}", self.id);
        }
        // A multipart object created without its digest gets the sidecar, as a plain one.
        let completed_etag = written.etag.as_deref();
        let stored = s
            .committed_meta(
                &key,
                size,
                stored_sha256,
                Some(sha256),
                completed_etag,
                Late::default(),
            )
            .await?;
        Ok(Committed {
            size,
            sha256: Some(sha256),
            replaced,
            stored,
        })
    }
}

impl Drop for S3Append {
    fn drop(&mut self) {
        self.up
            .store
            .inner
            .usage
            .release(std::mem::take(&mut self.reserved));
        for (_, _, task) in &self.in_flight {
            task.abort();
        }
        let Some(lease) = self.lease.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let up = self.up.clone();
        runtime.spawn(async move { up.release(lease).await });
    }
}
