//! The target of a commit: what is at a path now (a file, nothing, or something refused), and
//! the rename of the staged temporary over it under the commit lock (step 5 of the commit in
//! `upload.rs`'s module doc). Shared with the batch commit of forms (`batch.rs`) and copies.

use super::*;

impl Upload {
    /// Step 5 of commit: creates the missing directories, runs the caller's check of the
    /// version at the target (`precondition.rs`), gives the new file its final modification
    /// time (`version_date.rs`) and renames the temporary over the target, all under the commit
    /// lock and relative to one descriptor of the target's directory. Returns that directory,
    /// whether a file was replaced, what may be released of its space, and the new file's
    /// metadata.
    pub(super) fn rename_into_place(
        &mut self,
        sha256: Option<&[u8; 32]>,
        check: Option<Check<'_>>,
    ) -> Result<(Resolved, bool, u64, FileMeta), StoreError> {
        // Read before the lock: the temporary file is this upload's alone.
        let mut stored = self.stored_meta()?;
        // COPY: a reference count, so that the directory can borrow the store while the
        // upload's own file is reopened if need be.
        let shared = Arc::clone(&self.shared);
        let parent = parent_of(&self.path);
        // Resolved outside the lock; only creating directories needs it (see `Shared`).
        let found = match shared.resolve(parent) {
            Ok(dir) => Some(dir),
            Err(StoreError::NotFound) => None,
            Err(e) => return Err(e),
        };
        let _guard = shared.lock_commits();
        let resolved = match found {
            Some(dir) => dir,
            None => shared.create_dirs(parent)?,
        };
        let dir = resolved.get(&shared);
        let previous = target_stat(dir, self.path.file_name())?;
        precondition::check(dir, self.path.file_name(), previous.as_ref(), check)?;
        let previous_modified = file_modified(previous.as_ref());
        // A client's time (`UploadOptions::modified`) replaces the commit's, set on the
        // temporary before the rename: the file is visible with it or not at all.
        let marked = match self.client_modified {
            Some(client) => Some(version_date::client_time(client, previous_modified)),
            None => version_date::marked_time(stored.modified, previous_modified, &shared.deleted),
        };
        if let Some(marked) = marked {
            self.mark_date(marked, sha256)?;
            stored.modified = marked;
        }
        let name = self.path.file_name();
        let (replaced, freed) = rename_over(&shared, &self.temp, dir, name, previous)?;
        Ok((resolved, replaced, freed, stored))
    }
}

/// What is at the target `name` in `dir` now, without following it (`None`: nothing); a link
/// or a directory there is refused (never write through, or over, one).
pub(crate) fn target_stat(dir: &DirHandle, name: &str) -> Result<Option<EntryStat>, StoreError> {
    match stat(dir, name)? {
        None => Ok(None),
        Some(m) => match m.kind {
            EntryKind::Symlink => Err(StoreError::SymlinkRefused),
            EntryKind::Dir => Err(StoreError::IsDirectory),
            EntryKind::File | EntryKind::Other => Ok(Some(m)),
        },
    }
}

/// The modification time of the file a commit replaces, for `version_date.rs` (`None`: no
/// regular file there).
pub(crate) fn file_modified(previous: Option<&EntryStat>) -> Option<std::time::SystemTime> {
    previous
        .filter(|m| m.kind == EntryKind::File)
        .map(|m| m.modified)
}

/// Whether a rename over `previous` (from [`target_stat`]) replaces a file, what replacing it
/// frees (its size and its entry) and which file it is.
fn replacing(previous: Option<&EntryStat>) -> (bool, u64, Option<FileId>) {
    match previous {
        None => (false, 0, None),
        Some(m) if m.kind == EntryKind::File => (true, m.size.saturating_add(ENTRY_COST), m.id),
        // Never counted (see `scan`).
        Some(_) => (true, 0, None),
    }
}

/// Renames the staged `temp` over `name` in `dir`, where [`target_stat`] just found `previous`
/// (call with the commit lock held, across both). Returns whether a file was replaced and what
/// may be released now of the space it held: none while readers still have it open (see
/// `readers.rs`).
pub(crate) fn rename_over(
    shared: &Shared,
    temp: &str,
    dir: &DirHandle,
    name: &str,
    previous: Option<EntryStat>,
) -> Result<(bool, u64), StoreError> {
    let (replaced, freed, id) = replacing(previous.as_ref());
    let rename = || shared.staging.rename(temp, dir, name);
    let ((), releasable) = shared
        .readers
        .remove_name(id, freed, rename)
        .map_err(|e| StoreError::from_io("rename into place", e))?;
    Ok((replaced, releasable))
}

/// Checks, creating nothing, that a file could be committed at `path`: no link on the way or
/// at the target, no file where a directory goes, no directory at the target. Directories that
/// do not exist yet are fine (commit creates them).
pub(crate) fn check_target(shared: &Shared, path: &StorePath) -> Result<(), StoreError> {
    target_of(shared, path).map(drop)
}

/// What [`check_target`] checks, and what it found: the target's directory and what is at the
/// target now (`None` when its directory does not exist yet, so neither does the target).
pub(crate) fn target_of(
    shared: &Shared,
    path: &StorePath,
) -> Result<Option<(Resolved, Option<EntryStat>)>, StoreError> {
    let parent = parent_of(path);
    let resolved = match shared.resolve(parent) {
        Ok(dir) => dir,
        // Absent, or a file on the way: walk to tell them apart.
        Err(StoreError::NotFound) => match shared.walk(parent, Missing::Stop)? {
            Some(dir) => dir,
            None => return Ok(None),
        },
        Err(e) => return Err(e),
    };
    let previous = target_stat(resolved.get(shared), path.file_name())?;
    Ok(Some((resolved, previous)))
}
