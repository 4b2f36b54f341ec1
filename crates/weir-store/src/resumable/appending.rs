//! [`Appending`]: one request's append to a local resumable upload, under the upload's
//! one-writer lock: the checkpoints that make received bytes durable (hash state recorded for
//! exactly the offset synced), run in place or as a [`CheckpointJob`] beside the connection,
//! and the completion.

use super::*;

/// Bytes an append receives between two checkpoints: what a crash of the server process
/// (or of the machine) can make the client send again, at most.
pub const CHECKPOINT_BYTES: u64 = 64 << 20;

/// One request appending to an upload: holds the upload's one-writer lock until dropped.
/// Write into the [`Upload`] that [`Resumables::append`] returned with it (as into any upload;
/// when [`Appending::checkpoint_due`] says so, start a [`CheckpointJob`] with
/// [`Appending::begin_checkpoint`] and take its outcome in with
/// [`Appending::checkpoint_settled`], or run one in place with [`Appending::checkpoint`]), then
/// [`Appending::finish`]. That upload keeps its data if dropped: an append cut short loses only
/// what its last checkpoint did not cover.
#[derive(Debug)]
pub struct Appending {
    pub(super) resumables: Resumables,
    pub(super) id: UploadId,
    pub(super) state: ResumableState,
    /// [`Appending::finish`] ran: nothing left for drop to record.
    pub(super) finished: bool,
    /// The offset when the append began.
    pub(super) started_at: u64,
    /// The outcome of the [`CheckpointJob`] out, if one is (at most one at a time).
    pub(super) in_flight: Option<Arc<CheckpointSlot>>,
    pub(super) _busy: BusyGuard,
}

/// A checkpoint of the first `offset` bytes of an append, to run off the caller's thread
/// (`Send + 'static`: a blocking pool, a thread) while the caller goes on writing the bytes
/// that follow. Made by [`Appending::begin_checkpoint`]; [`CheckpointJob::run_with`] makes the
/// data durable (`fdatasync`: it covers at least the `offset` bytes, written before the job was
/// made) and then replaces the record with `offset` and the SHA-256 state of exactly those
/// bytes; [`Appending::checkpoint_settled`] takes the outcome in. A job dropped without running
/// records nothing.
#[derive(Debug)]
pub struct CheckpointJob {
    dir: Arc<DirHandle>,
    id: UploadId,
    /// The record to write: the append's, at `offset`.
    state: ResumableState,
    /// The id of the upload's hashing, which its [`HashMark`]s carry.
    hash_id: u64,
    /// The state of exactly `offset` bytes, when the upload had it at hand.
    sha256: Option<ResumableSha256>,
    /// The upload's hashing was away (on a hashing thread): its state at `offset` comes from
    /// the caller, as a [`HashMark`].
    wants_mark: bool,
    slot: Arc<CheckpointSlot>,
    /// The outcome is in the slot.
    settled: bool,
    #[cfg(any(test, feature = "fault-injection"))]
    gate: Option<crate::fault::HashGate>,
}

/// Where a [`CheckpointJob`] leaves its outcome for its [`Appending`].
#[derive(Debug, Default)]
pub(super) struct CheckpointSlot {
    outcome: Mutex<Option<CheckpointOutcome>>,
    ready: std::sync::Condvar,
}

#[derive(Debug)]
enum CheckpointOutcome {
    /// The record now says this.
    Recorded {
        offset: u64,
        sha256_state: Option<[u8; SAVED_LEN]>,
        active: u64,
    },
    /// The record is as before.
    Failed(StoreError),
}

impl CheckpointSlot {
    fn put(&self, outcome: CheckpointOutcome) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.ready.notify_all();
    }

    fn take(&self) -> Option<CheckpointOutcome> {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn wait(&self) -> CheckpointOutcome {
        let mut outcome = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = outcome.take() {
                return o;
            }
            outcome = self.ready.wait(outcome).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl CheckpointJob {
    /// The offset this checkpoint records.
    pub fn offset(&self) -> u64 {
        self.state.offset
    }

    /// Whether the SHA-256 state at [`CheckpointJob::offset`] must come from the upload's
    /// hashing thread ([`Hashed::mark`](crate::Hashed::mark)): the bytes were hashed there.
    pub fn wants_mark(&self) -> bool {
        self.wants_mark
    }

    /// [`CheckpointJob::run_with`] with no mark to give: the record keeps a hash state only if
    /// the upload had it at hand when the job was made.
    pub fn run(self) {
        self.run_with(|| None);
    }

    /// Runs the checkpoint: `fdatasync` of the data, then (when [`CheckpointJob::wants_mark`])
    /// `mark` for the SHA-256 state of exactly [`CheckpointJob::offset`] bytes — it may block
    /// until the hashing thread gets there; a mark of other bytes or of another upload is
    /// dropped — then the record replaced (temporary, fsync, rename, directory fsync). Blocks
    /// on the disk: run it off any event loop.
    pub fn run_with(mut self, mark: impl FnOnce() -> Option<HashMark>) {
        #[cfg(any(test, feature = "fault-injection"))]
        if let Some(gate) = &self.gate {
            gate.pass(self.state.offset);
        }
        let outcome = self.record(mark);
        self.settled = true;
        self.slot.put(outcome);
    }

    fn record(&mut self, mark: impl FnOnce() -> Option<HashMark>) -> CheckpointOutcome {
        // Another descriptor of the same file: every byte up to the offset was written (and
        // `write(2)` returned) before this job was made, so this `fdatasync` covers them.
        let synced = self
            .dir
            .open_rw(&self.id.file_name(".data"))
            .and_then(|file| file.sync_data())
            .map_err(io_err("fdatasync"));
        if let Err(e) = synced {
            return CheckpointOutcome::Failed(e);
        }
        let offset = self.state.offset;
        let sha256 = match self.sha256.take() {
            Some(h) => Some(h),
            None if self.wants_mark => mark().and_then(|m| m.of(self.hash_id, offset)),
            None => None,
        };
        self.state.sha256_state = sha256.map(|h| h.to_bytes());
        self.state.active = now_secs();
        match write_record(&self.dir, self.id, &self.state) {
            Ok(()) => CheckpointOutcome::Recorded {
                offset,
                sha256_state: self.state.sha256_state,
                active: self.state.active,
            },
            Err(e) => CheckpointOutcome::Failed(e),
        }
    }
}

impl Drop for CheckpointJob {
    /// Dropped without running (or unwinding out of it): nothing was recorded.
    fn drop(&mut self) {
        if !self.settled {
            self.slot.put(CheckpointOutcome::Failed(StoreError::from_io(
                "checkpoint",
                io::ErrorKind::Interrupted.into(),
            )));
        }
    }
}

/// How an append ended.
#[derive(Debug)]
pub enum AppendEnd {
    /// The upload stays incomplete at this state.
    Incomplete(ResumableState),
    /// The upload completed and its file is stored.
    Completed(Committed),
}

impl Appending {
    /// The upload's id.
    pub fn id(&self) -> UploadId {
        self.id
    }

    /// The upload's state (its offset as last recorded).
    pub fn state(&self) -> &ResumableState {
        &self.state
    }

    /// The upload's data file, and its length now (what every append wrote, counted or not).
    fn open_data(&self) -> Result<(std::fs::File, u64), StoreError> {
        let file = self
            .resumables
            .dir
            .open_rw(&self.id.file_name(".data"))
            .map_err(io_err("open resumable data"))?;
        let len = file.metadata().map_err(io_err("stat"))?.len();
        Ok((file, len))
    }

    /// Records the data file's length as the offset, after `fdatasync`, once its upload is
    /// dropped (which gave back what it had charged): the file's new bytes are charged here,
    /// as many as there are (a splice cut mid-piece writes some the upload never counted).
    /// Every byte in the file came, in order, from this append's writes, which leave no gap.
    /// `sha256`: the upload's SHA-256 state when it was dropped, recorded with the offset if it
    /// covers exactly the file (else the record keeps no state: completion reads back).
    fn record_file(&mut self, sha256: Option<ResumableSha256>) -> Result<(), StoreError> {
        self.finished = true;
        // One record writer at a time; a failed checkpoint left the record as it was, and this
        // records the whole file.
        let _ = self.wait_checkpoint();
        let kept = (|| {
            let (file, len) = self.open_data()?;
            if len > self.state.offset {
                file.sync_data().map_err(io_err("fdatasync"))?;
                let before = (self.state.offset, self.state.sha256_state);
                self.state.offset = len;
                self.state.sha256_state = sha256.filter(|h| h.len() == len).map(|h| h.to_bytes());
                self.state.active = now_secs();
                if let Err(e) = self.resumables.write_state(self.id, &self.state) {
                    (self.state.offset, self.state.sha256_state) = before;
                    return Err(e);
                }
            }
            Ok(len)
        })();
        // What the file holds is charged whether or not it could be recorded: it is there
        // until a sweep or the next append cuts it.
        let len = match &kept {
            Ok(len) => *len,
            Err(_) => self.state.offset,
        };
        self.resumables
            .shared
            .usage
            .charge(len.saturating_sub(self.started_at));
        kept.map(drop)
    }

    /// The SHA-256 of the bytes this append wrote so far (from where it began to `upload`'s
    /// size), read back from the data file: for a protocol that checks each request's content
    /// (tus's `Upload-Checksum`) before acknowledging it.
    pub fn written_sha256(&self, upload: &Upload) -> Result<[u8; 32], StoreError> {
        use sha2::{Digest, Sha256};
        use std::io::{Seek, SeekFrom};
        let mut file = self
            .resumables
            .dir
            .open_read(&self.id.file_name(".data"))
            .map_err(io_err("open resumable data"))?;
        file.seek(SeekFrom::Start(self.started_at))
            .map_err(io_err("seek"))?;
        let mut left = upload.size().saturating_sub(self.started_at);
        let mut hasher = Sha256::new();
        // ALLOCATION: one read buffer per checked request, not per read.
        let mut buf = vec![0u8; 256 << 10];
        while left > 0 {
            let want = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
            let n = file
                .read(&mut buf[..want])
                .map_err(io_err("read resumable data"))?;
            if n == 0 {
                return Err(StoreError::from_io(
                    "read resumable data",
                    io::ErrorKind::UnexpectedEof.into(),
                ));
            }
            hasher.update(&buf[..n]);
            left -= n as u64;
        }
        Ok(hasher.finalize().into())
    }

    /// Ends the append without acknowledging what it wrote: the data file is cut back to the
    /// recorded offset (the offset does not move) and the upload stays open. For a request
    /// whose content failed its check (a caller that wants all of it taken back must not have
    /// checkpointed during the request, or the checkpointed part stays), and what
    /// [`Appending::finish`] does after a failed write (the upload discarded: no space, the
    /// quota): what a checkpoint recorded stays, the rest goes.
    pub fn discard(mut self, upload: Upload) -> Result<ResumableState, StoreError> {
        // Dropping the upload gives back what it had charged; the cut frees those bytes.
        drop(upload);
        self.finished = true;
        let _ = self.wait_checkpoint();
        let (file, len) = self.open_data()?;
        if len > self.state.offset {
            file.set_len(self.state.offset)
                .map_err(io_err("truncate"))?;
            file.sync_data().map_err(io_err("fdatasync"))?;
        }
        // What a checkpoint of this request recorded stays charged (it stays in the file).
        self.resumables
            .shared
            .usage
            .charge(self.state.offset.saturating_sub(self.started_at));
        Ok(self.state.clone())
    }

    /// Whether [`CHECKPOINT_BYTES`] arrived since the last recorded offset and no checkpoint is
    /// out: then start one ([`Appending::begin_checkpoint`], or [`Appending::checkpoint`]
    /// which blocks on `fdatasync` and `fsync`s: off the caller's event loop). No system call
    /// here.
    pub fn checkpoint_due(&self, upload: &Upload) -> bool {
        self.in_flight.is_none()
            && upload.size().saturating_sub(self.state.offset) >= CHECKPOINT_BYTES
    }

    /// Whether a [`CheckpointJob`] is out (its outcome not taken in yet).
    pub fn checkpoint_running(&self) -> bool {
        self.in_flight.is_some()
    }

    /// A checkpoint of the bytes written so far (`upload.size()`), to run on another thread
    /// while the caller goes on writing ([`CheckpointJob`]). `None` when one is out already
    /// (at most one at a time) or nothing new was written. The offset it records is the size
    /// now; the SHA-256 state recorded with it is the upload's if it has exactly those bytes
    /// hashed now, else (its hashing is away) the [`HashMark`] the runner gives.
    pub fn begin_checkpoint(&mut self, upload: &Upload) -> Option<CheckpointJob> {
        let size = upload.size();
        if self.in_flight.is_some() || size <= self.state.offset || upload.ensure_open().is_err() {
            return None;
        }
        let sha256 = upload.sha256_state();
        // ALLOCATION: the slot and a copy of the record, once per checkpoint (every
        // CHECKPOINT_BYTES), never per write.
        let slot = Arc::new(CheckpointSlot::default());
        self.in_flight = Some(slot.clone());
        let mut state = self.state.clone();
        state.offset = size;
        state.sha256_state = None;
        Some(CheckpointJob {
            dir: self.resumables.dir.clone(),
            id: self.id,
            state,
            hash_id: upload.hash_id(),
            wants_mark: sha256.is_none() && upload.is_hashing(),
            sha256,
            slot,
            settled: false,
            #[cfg(any(test, feature = "fault-injection"))]
            gate: self.resumables.shared.faults.checkpoint_gate(),
        })
    }

    /// Takes in the outcome of the [`CheckpointJob`] out, if it has ended: `Some(Ok(offset))`
    /// recorded, `Some(Err(_))` the record is as before; `None` when none is out or it is
    /// still running. Never blocks.
    pub fn checkpoint_settled(&mut self) -> Option<Result<u64, StoreError>> {
        let outcome = self.in_flight.as_ref()?.take()?;
        self.in_flight = None;
        Some(self.apply(outcome))
    }

    /// Waits for the [`CheckpointJob`] out, if any, and takes in its outcome (as
    /// [`Appending::checkpoint_settled`]). Blocks until the job has run: whoever holds it must
    /// run or drop it.
    pub fn wait_checkpoint(&mut self) -> Option<Result<u64, StoreError>> {
        let outcome = self.in_flight.take()?.wait();
        Some(self.apply(outcome))
    }

    fn apply(&mut self, outcome: CheckpointOutcome) -> Result<u64, StoreError> {
        match outcome {
            CheckpointOutcome::Recorded {
                offset,
                sha256_state,
                active,
            } => {
                self.state.offset = offset;
                self.state.sha256_state = sha256_state;
                self.state.active = active;
                Ok(offset)
            }
            CheckpointOutcome::Failed(e) => Err(e),
        }
    }

    /// Makes the bytes written so far durable, then records them as the offset, on this
    /// thread (a [`CheckpointJob`] run in place, after the one out, if any).
    pub fn checkpoint(&mut self, upload: &mut Upload) -> Result<u64, StoreError> {
        if let Some(outcome) = self.wait_checkpoint() {
            outcome?;
        }
        match self.begin_checkpoint(upload) {
            Some(job) => job.run(),
            None => return Ok(self.state.offset),
        }
        self.wait_checkpoint().unwrap_or(Ok(self.state.offset))
    }

    /// Ends the append. `complete`: this request carried the end of the representation, and
    /// the upload is committed to its target (a recorded length must match). Otherwise (or
    /// if the length does not match) the bytes are checkpointed and the upload stays open.
    pub fn finish(self, upload: Upload, complete: bool) -> Result<AppendEnd, StoreError> {
        self.finish_checked(upload, complete, None)
    }

    /// [`Appending::finish`], where a completion commits only if `check` (when given) accepts
    /// the version at the target, under the commit lock (`Upload::commit_if`): the creating
    /// request's preconditions ([`ResumableState::condition`]) evaluated again. Refused:
    /// [`StoreError::PreconditionFailed`], the target untouched and the upload removed, as
    /// for any failed commit.
    pub fn finish_checked(
        mut self,
        upload: Upload,
        complete: bool,
        check: Option<VersionCheck<'_>>,
    ) -> Result<AppendEnd, StoreError> {
        if upload.is_discarded() {
            // A failed write (no space, the quota, a hash step) ended the append: the upload
            // stays at the offset it recorded, its data cut back to it, so that the offset it
            // reports is bytes that exist and the client resumes from there.
            return self.discard(upload).map(AppendEnd::Incomplete);
        }
        // One record writer at a time: the checkpoint out first (its failure left the record
        // as it was; what follows records the whole file).
        let _ = self.wait_checkpoint();
        let size = upload.size();
        let mismatch = self.state.length.filter(|&len| len != size);
        if !complete || mismatch.is_some() {
            // The file may hold more than the upload counted (a splice cut mid-piece).
            let sha256 = upload.sha256_state();
            drop(upload);
            self.finished = true;
            self.record_file(sha256)?;
            return match mismatch {
                Some(expected) if complete => Err(StoreError::LengthMismatch {
                    expected,
                    actual: size,
                }),
                _ => Ok(AppendEnd::Incomplete(self.state.clone())),
            };
        }
        self.finished = true;
        let committed = match check {
            Some(check) => upload.commit_if(check),
            None => upload.commit(),
        };
        let committed = match committed {
            Ok(c) => c,
            Err(e) => {
                // The commit discarded the data (a digest mismatch...): the upload is over.
                let _ = self.resumables.remove(self.id);
                return Err(e);
            }
        };
        self.state.offset = committed.size;
        self.state.length = Some(committed.size);
        self.state.complete = true;
        self.state.sha256_state = None;
        // Committed: a failure to record completeness only loses the record's answer.
        let _ = self.resumables.write_state(self.id, &self.state);
        Ok(AppendEnd::Completed(committed))
    }
}

impl Drop for Appending {
    /// A request dropped mid-body (its connection went away and the server dropped its
    /// handler): what reached the data file is kept. Every byte in it came, in order, from
    /// this append's writes (which never leave a gap), so its length after `fdatasync` is a
    /// true offset. Blocking I/O in a drop, once per cut request.
    fn drop(&mut self) {
        if !self.finished {
            // The upload (and its hash state) is gone: the offset is recorded without one.
            let _ = self.record_file(None);
        }
    }
}
