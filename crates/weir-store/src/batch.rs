//! Committing several uploads as one ([`LocalStore::commit_all`]): afterwards either all of
//! them are stored or none is, across errors, conflicts and crashes.
//!
//! In order, and why:
//! 1. check the paths against each other: the same path twice, or a path that another one
//!    needs as a directory (`a` and `a/b`), is refused before anything is touched;
//! 2. prepare each upload as [`Upload::commit`] does (length, digests, `fsync`), one at a
//!    time, closing each file again: the batch holds one upload descriptor at most;
//! 3. under the store's commit lock, check every target against the tree (a directory at a
//!    file's path, a file where a directory goes, a link), creating nothing; run the caller's
//!    check of the version at each target ([`LocalStore::commit_all_if`], `precondition.rs`),
//!    so that a refused precondition of any file stores none; then give each file its final
//!    modification time (`version_date.rs`), opening only the files whose time changes;
//! 4. still under the lock, write the intent record and make it durable (`intent.rs`): from
//!    here on, a crash is finished at the next start;
//! 5. create the missing directories and rename each temporary over its target, fsyncing each
//!    target directory after its last rename;
//! 6. remove the record, and account.
//!
//! A failure in 1–4 (a refused precondition included) discards every upload: nothing is visible, no directory was made. An I/O
//! failure in 5 (after some renames) cannot be undone, since the replaced files are gone: the
//! record and the remaining temporaries are left for the next start to finish, and the error
//! is returned.

use crate::error::StoreError;
use crate::intent;
use crate::local::LocalStore;
use crate::meta::FileMeta;
use crate::path::StorePath;
use crate::precondition::{self, BatchCheck};
use crate::quota::ENTRY_COST;
use crate::tree::{Missing, Resolved, parent_of};
use crate::upload::{Committed, Upload, file_modified, rename_over, target_of, target_stat};
use crate::version_date;
use std::collections::HashSet;
use std::sync::Arc;

impl LocalStore {
    /// Commits `uploads` all or none: on `Ok`, every one is stored (results in the same
    /// order); on `Err`, none is (unless the error is an I/O error after the first rename, in
    /// which case the next [`LocalStore::open`] finishes the commit: see the `batch` module).
    ///
    /// Refused, storing nothing: two uploads to the same path
    /// ([`StoreError::DuplicatePath`]); an upload at a path that another needs as a directory,
    /// or a file in the tree where a directory is needed ([`StoreError::NotADirectory`]); a
    /// directory in the tree at an upload's path ([`StoreError::IsDirectory`]); any error that
    /// [`Upload::commit`] can meet before its rename. Uploads must come from this store (or a
    /// clone of it).
    pub fn commit_all(&self, uploads: Vec<Upload>) -> Result<Vec<Committed>, StoreError> {
        self.commit_all_checked(uploads, None)
    }

    /// Commits `uploads` like [`LocalStore::commit_all`], only if `check` accepts the version
    /// now at every upload's target (`None`: no file there), checked under the commit lock
    /// before the first rename (see `precondition.rs`). One refusal is
    /// [`StoreError::PreconditionFailed`] and stores none of them.
    pub fn commit_all_if(
        &self,
        uploads: Vec<Upload>,
        mut check: impl FnMut(&StorePath, Option<&FileMeta>) -> bool,
    ) -> Result<Vec<Committed>, StoreError> {
        self.commit_all_checked(uploads, Some(&mut check))
    }

    fn commit_all_checked(
        &self,
        mut uploads: Vec<Upload>,
        mut check: Option<BatchCheck<'_>>,
    ) -> Result<Vec<Committed>, StoreError> {
        let shared = self.shared_arc();
        if uploads.iter().any(|u| !Arc::ptr_eq(&u.shared, shared)) {
            return Err(StoreError::from_io(
                "commit uploads together",
                std::io::Error::other("an upload of another store"),
            ));
        }
        for upload in &uploads {
            upload.ensure_open()?;
        }
        check_paths(&uploads)?;
        let mut digests = Vec::with_capacity(uploads.len());
        let mut stored = Vec::with_capacity(uploads.len());
        for upload in &mut uploads {
            let prepared = upload
                .prepare()
                .and_then(|d| Ok((d, upload.stored_meta()?)));
            match prepared {
                Ok((d, meta)) => {
                    digests.push(d);
                    stored.push(meta);
                }
                // Dropping `uploads` on return removes every temporary.
                Err(e) => return Err(upload.discard_file(e)),
            }
            upload.park()?;
        }

        let guard = shared.lock_commits();
        // ALLOCATION: the set of directories the batch creates, and each file's new
        // modification time, once per batch.
        let mut new_dirs = HashSet::new();
        let mut marks = Vec::with_capacity(uploads.len());
        for (upload, meta) in uploads.iter().zip(&stored) {
            let target = target_of(shared, &upload.path)?;
            let previous = target.as_ref().and_then(|(_, previous)| *previous);
            if let Some(check) = check.as_deref_mut() {
                let mut one = |current: Option<&FileMeta>| check(&upload.path, current);
                match &target {
                    Some((dir, previous)) => precondition::check(
                        dir.get(shared),
                        upload.path.file_name(),
                        previous.as_ref(),
                        Some(&mut one),
                    )?,
                    // Its directory does not exist yet: no file there.
                    None if !one(None) => return Err(StoreError::PreconditionFailed),
                    None => {}
                }
            }
            let previous_modified = file_modified(previous.as_ref());
            marks.push(version_date::marked_time(
                meta.modified,
                previous_modified,
                &shared.deleted,
            ));
            let parent = parent_of(&upload.path);
            if !parent.is_empty() && !new_dirs.contains(parent) {
                let missing = shared.missing_dirs(parent)?;
                new_dirs.extend(prefixes(parent).rev().take(missing));
            }
        }
        // Charged before the record: once it is written, the batch must be able to finish.
        let dir_cost = (new_dirs.len() as u64).saturating_mul(ENTRY_COST);
        // Every check held: only now is any temporary touched, one open at a time.
        for (((upload, meta), mark), digests) in uploads
            .iter_mut()
            .zip(&mut stored)
            .zip(&marks)
            .zip(&digests)
        {
            if let Some(marked) = *mark {
                let marking = upload.mark_date(marked, digests.sha256.as_ref());
                if let Err(e) = marking.and_then(|()| upload.park()) {
                    return Err(upload.discard_file(e));
                }
                meta.modified = marked;
            }
        }
        shared.usage.reserve(dir_cost)?;
        let record = intent::encode(uploads.iter().map(|u| (u.temp.as_str(), &u.path)));
        let record = match intent::write(&shared.staging, &record) {
            Ok(name) => name,
            Err(e) => {
                shared.usage.release(dir_cost);
                return Err(e);
            }
        };

        let renamed = self.rename_all(&uploads);
        drop(guard);
        let outcomes = match renamed {
            Ok(outcomes) => outcomes,
            Err(e) => {
                for upload in &mut uploads {
                    upload.leave_for_recovery();
                }
                return Err(e);
            }
        };
        // The renames are durable: the record has nothing left to do. If removing it fails,
        // the next start finds it naming temporaries that no longer exist, and removes it.
        let _ = shared.staging.unlink(&record);
        let mut committed = Vec::with_capacity(uploads.len());
        let results = outcomes.into_iter().zip(digests).zip(stored);
        for (upload, (((replaced, freed), digests), stored)) in uploads.iter_mut().zip(results) {
            upload.committed(freed);
            committed.push(Committed {
                size: upload.size(),
                sha256: digests.sha256,
                replaced,
                stored,
            });
        }
        Ok(committed)
    }

    /// Step 5: renames every temporary into place, in order, creating directories as needed;
    /// returns, for each, whether it replaced a file and that file's size.
    fn rename_all(&self, uploads: &[Upload]) -> Result<Vec<(bool, u64)>, StoreError> {
        let shared = self.shared_arc();
        let mut outcomes = Vec::with_capacity(uploads.len());
        // The directory of the previous upload, reused while consecutive uploads share it and
        // fsynced when the next one goes elsewhere: one descriptor open at a time.
        let mut current: Option<(&str, Resolved)> = None;
        for upload in uploads {
            #[cfg(test)]
            shared.before_batch_rename(outcomes.len())?;
            let parent = parent_of(&upload.path);
            if current.as_ref().is_none_or(|(p, _)| *p != parent) {
                if let Some((_, dir)) = current.take() {
                    sync(shared, &dir)?;
                }
                let dir = shared
                    .walk(parent, Missing::Create)?
                    .ok_or(StoreError::NotFound)?;
                current = Some((parent, dir));
            }
            let Some((_, resolved)) = &current else {
                unreachable!("set just above")
            };
            let dir = resolved.get(shared);
            let name = upload.path.file_name();
            let previous = target_stat(dir, name)?;
            outcomes.push(rename_over(shared, &upload.temp, dir, name, previous)?);
        }
        if let Some((_, dir)) = current {
            sync(shared, &dir)?;
        }
        Ok(outcomes)
    }
}

fn sync(shared: &crate::tree::Shared, dir: &Resolved) -> Result<(), StoreError> {
    dir.get(shared)
        .sync()
        .map_err(|e| StoreError::from_io("sync directory", e))
}

/// `a`, `a/b`, `a/b/c` for `a/b/c`.
fn prefixes(rel: &str) -> impl DoubleEndedIterator<Item = &str> {
    rel.match_indices('/')
        .map(|(i, _)| &rel[..i])
        .chain(std::iter::once(rel))
}

/// Step 1: the same path twice, or one path inside another.
fn check_paths(uploads: &[Upload]) -> Result<(), StoreError> {
    // ALLOCATION: a set of the batch's paths, once per batch.
    let mut paths = HashSet::with_capacity(uploads.len());
    for upload in uploads {
        if !paths.insert(upload.path.as_str()) {
            return Err(StoreError::DuplicatePath {
                path: upload.path.as_str().to_owned(),
            });
        }
    }
    for upload in uploads {
        let path = upload.path.as_str();
        let needs_dir = path
            .match_indices('/')
            .any(|(i, _)| paths.contains(&path[..i]));
        if needs_dir {
            return Err(StoreError::NotADirectory);
        }
    }
    Ok(())
}
