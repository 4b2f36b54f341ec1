//! A held request: one whose bytes are recorded only once they are known good, so that all of
//! them can be taken back (tus's `checksum` extension over S3: a `PATCH` whose
//! `Upload-Checksum` does not match its bytes leaves the upload as it was).
//!
//! An append records each part as the store acknowledges it (the parent module's "Invariants").
//! A held one does not: its acknowledged parts are kept aside with their ETags and hash states
//! ([`Held`]), and the manifest's offset stays where the request found it until the request
//! ends. Then either:
//! - [`S3Append::finish`] (the checksum matched): the held parts join the manifest's, the
//!   offset and hash state move to the last one's end, and the request's end is recorded as
//!   any append's (tail, completion) in the same manifest write; or
//! - [`S3Append::discard`] (it did not, or the request was cut): nothing is recorded. The
//!   parts it sent carry the numbers past the recorded ones, so the next append, which starts
//!   from the recorded offset and reads the recorded tail back, sends those numbers again with
//!   its own bytes: S3 keeps the last upload of a part number, and the completion names the
//!   ETags the manifest recorded. So that no held part can land after that new upload of its
//!   number (its bytes differ, and the completion would then fail), `discard` waits for the
//!   parts in flight before it gives the lease back.
//!
//! The only write a held request makes to the manifest before its end is the multipart
//! upload's id, when it creates one (offset, parts and tail unchanged).

use super::*;

/// What a held request keeps aside until its end ([`S3Append::hold_records`]).
#[derive(Debug)]
pub(super) struct Held {
    /// The SHA-256 of the request's own bytes (tus's `Upload-Checksum` covers those).
    pub(super) sha256: ResumableSha256,
    /// Parts sent and acknowledged, not recorded: number, S3 ETag, the upload's hash state
    /// at the part's end.
    pub(super) parts: Vec<(u16, String, [u8; SAVED_LEN])>,
}

impl S3Append {
    /// Holds this request's records until its end (see the module doc): call it before the
    /// first [`S3Append::write`]. Its bytes are then also hashed apart
    /// ([`S3Append::request_sha256`]); it ends with [`S3Append::finish`] (recorded) or
    /// [`S3Append::discard`] (taken back).
    pub fn hold_records(&mut self) {
        self.held = Some(Held {
            sha256: ResumableSha256::new(),
            parts: Vec::new(),
        });
    }

    /// The SHA-256 of the bytes written since [`S3Append::hold_records`]; `None` when the
    /// request is not held.
    pub fn request_sha256(&self) -> Option<[u8; 32]> {
        self.held.as_ref().map(|h| h.sha256.clone().finalize())
    }

    /// Ends the request without recording any of its bytes (a held one: see the module doc;
    /// an append that is not held keeps the parts it recorded already): the parts in flight
    /// are waited for, the manifest is left as it is, the lease is given back. Returns the
    /// upload's state as recorded.
    pub async fn discard(mut self) -> S3UploadState {
        while let Some((_, _, task)) = self.in_flight.pop_front() {
            // Landed or failed: either way nothing of it is recorded, and nothing of it can
            // land later.
            let _ = task.await;
        }
        if let Some(lease) = self.lease.take() {
            self.up.release(lease).await;
        }
        self.manifest.state()
    }

    /// The held parts join the manifest (in memory; the request's end writes it): the offset
    /// and hash state move to the last one's end, and the tail the request began from, now
    /// inside a part, is stale.
    pub(super) fn fold_held(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let Some((number, _, state)) = held.parts.last() else {
            return;
        };
        self.manifest.offset = u64::from(*number) * self.manifest.part_size;
        self.manifest.sha256 = *state;
        self.stale_tail = self.manifest.tail.take();
        self.manifest
            .parts
            .extend(held.parts.into_iter().map(|(n, etag, _)| (n, etag)));
    }

    /// Deletes the tail [`S3Append::fold_held`] made stale, once the manifest written since
    /// no longer names it. A failure leaves an object the upload's removal deletes anyway.
    pub(super) async fn delete_stale_tail(&mut self) {
        if let Some(tail) = self.stale_tail.take() {
            let key = format!("{}{tail}", self.up.dir(&self.id));
            let _ = self.up.delete_key(&key, None).await;
        }
    }
}
