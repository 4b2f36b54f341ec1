//! Parts written in place: each part of a local multipart upload goes, where it can, straight
//! into one file of the upload (`{id}/object`) at the place it will have in the object, so
//! that a completion of parts that fill that file from its start takes the file whole: no copy,
//! and the disk writes the object's bytes once instead of twice (once as parts, once as the
//! object).
//!
//! S3 clients cut an object into parts of one size (the last one shorter) and number them from
//! 1, so part `n` of a client's upload starts at `(n - 1) × size`. The *stride* is that size:
//! the declared length of the first part begun that is at least [`MIN_PART_SIZE`] (every part
//! but the last is). A part begun later with a declared length of at most the stride takes its
//! *slot* (`(n - 1) × stride`, the stride long) if no part of that number took it before;
//! otherwise (no declared length, a longer part, a number sent again, a place past
//! [`MAX_END`]) the part goes to a file of its own, as before. Either way a part's record names
//! its bytes: a data file's name, or `object@OFFSET` for a part in place.
//!
//! # Invariants
//! - A slot is taken once per upload, by the part upload that claimed it, and never reused:
//!   that upload alone writes its range, then records it; a part sent again goes to a file of
//!   its own. So a record naming `object@OFFSET` names bytes no one writes any more, as a data
//!   file's name does.
//! - Only an upload whose file this process created takes slots ([`Slots`] live in memory):
//!   after a restart, new parts of an earlier upload go to files of their own, since which
//!   slots were claimed is not known; its recorded parts in place stay readable.
//! - The completion takes the file whole (`complete.rs`) only when the listed parts are in
//!   place, each right after the one before from offset 0, the file is exactly their length,
//!   and every slot claimed is one of them (no part upload still writing into the file);
//!   slots then close. The last part may instead be in a file of its own (a short last part
//!   begun before any full one, when no stride was known), if its slot was never claimed and
//!   the file is this run's: the file is cut right after the others and the last part copied
//!   there. Otherwise the completion copies the listed ranges, as it copies parts' files.
//! - UploadPartCopy takes a slot as a part sent does (`copy_file_range` into it).
//! - Taken whole, the file gets a second name in the staging area, which becomes the object's
//!   upload ([`Upload::adopt`]): its commit renames that name over the key, and a failed
//!   commit (a precondition) removes only that name, so the upload stays whole. Once the
//!   commit renamed it over the key, the upload's own name is unlinked, before the completion
//!   is recorded: nothing done to the upload after can reach the object's bytes.
//! - A completion that committed but was not recorded (a crash between the two, or the record
//!   failing) leaves records naming parts in place whose file is gone, or, stopped before the
//!   unlink, is the object's too ([`committed_unrecorded_at_open`]): the upload is completed and is
//!   removed, at open or by a completion sent again (then `NoSuchUpload`, S3's answer for an
//!   upload completed).
//! - Quota: a part in place is charged like a part's file (its bytes and an entry); a failed
//!   one gives its range back (a hole, `Upload::in_place`). Bytes of a slot no record names
//!   (a part interrupted by a crash) are not charged; the next open gives them back to the
//!   disk ([`trim_unrecorded`]), else the upload's end does.

use super::*;
use crate::multipart::MIN_PART_SIZE;
use crate::multipart::pace::UploadPace;
pub(in crate::multipart) use record::{OBJECT_FILE, data_at, offset_of};
use std::collections::hash_map::Entry;

/// No slot ends past 1 TiB: a client's parts of 5 GiB numbered up to 10,000 would otherwise
/// ask for a 50 TB sparse file, past what ext4 allows (16 TiB); such parts go to files of
/// their own.
const MAX_END: u64 = 1 << 40;

/// A part's bytes, open for reading: the file and where they start in it.
pub(in crate::multipart) fn open_data(
    dir: &DirHandle,
    data: &str,
) -> io::Result<(std::fs::File, u64)> {
    match offset_of(data) {
        Some(offset) => Ok((dir.open_read(OBJECT_FILE)?, offset)),
        None => Ok((dir.open_read(data)?, 0)),
    }
}

/// Gives back a part's bytes that no record names any more (`size` of them): a data file
/// unlinked, a range in place punched out; either way its charge returned.
pub(in crate::multipart) fn release_data(shared: &Shared, dir: &DirHandle, data: &str, size: u64) {
    match offset_of(data) {
        Some(offset) => {
            if let Ok(file) = dir.open_rw(OBJECT_FILE) {
                sys::punch_hole(&file, offset, size);
            }
            shared.usage.release(size + ENTRY_COST);
        }
        None => unlink_charged(shared, dir, data),
    }
}

/// At open: whether a completion committed this upload's file as its object and was not
/// recorded: records name parts in place (`any_in_place`, as the caller read them) but the
/// file is no longer the upload's alone. A
/// completion unlinks it from the upload right after its commit, so it is absent; a stop
/// between the commit and that unlink leaves it with a second name, the object's. Counting
/// names is sound at open only, when no completion runs and the staging area holds no name
/// of it (the store's open empties it first); a running completion checks absence alone
/// ([`file_gone`]).
pub(in crate::multipart) fn committed_unrecorded_at_open(
    dir: &DirHandle,
    any_in_place: bool,
) -> Result<bool, StoreError> {
    if !any_in_place {
        return Ok(false);
    }
    match dir.open_read(OBJECT_FILE) {
        Ok(file) => has_second_name(&file),
        Err(e) if crate::tree::is_absent(&e) => Ok(true),
        Err(e) => Err(StoreError::from_io("open multipart file", e)),
    }
}

/// Whether the upload's file is gone: with records naming parts in place, a completion
/// committed it and was not recorded ([`committed_unrecorded_at_open`]).
pub(in crate::multipart) fn file_gone(dir: &DirHandle) -> Result<bool, StoreError> {
    match dir.stat(OBJECT_FILE) {
        Ok(found) => Ok(found.is_none()),
        Err(e) => Err(StoreError::from_io("stat multipart file", e)),
    }
}

/// Whether `file` has another name than the upload's (Unix: its link count).
fn has_second_name(file: &std::fs::File) -> Result<bool, StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(file.metadata().map_err(io_err("stat"))?.nlink() > 1)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(false)
    }
}

/// What the parts in place that `dir`'s records name are charged (their bytes and an entry
/// each), and whether there is any.
pub(in crate::multipart) fn in_place_charges(dir: &DirHandle) -> Result<(u64, bool), StoreError> {
    let ranges = recorded_ranges(dir)?;
    let charged = ranges.iter().map(|(_, size)| size + ENTRY_COST).sum();
    Ok((charged, !ranges.is_empty()))
}

/// The ranges (offset, length) of the upload's file that `dir`'s records name.
fn recorded_ranges(dir: &DirHandle) -> Result<Vec<(u64, u64)>, StoreError> {
    // ALLOCATION: a range per part in place, when an upload is opened, swept or completed.
    let mut ranges = Vec::new();
    for name in dir.names().map_err(io_err("read multipart upload"))? {
        let Some(number) = name.to_str().and_then(record_number) else {
            continue;
        };
        if let Some((part, data)) = read_part(dir, number)? {
            if let Some(offset) = offset_of(&data) {
                ranges.push((offset, part.size));
            }
        }
    }
    Ok(ranges)
}

/// At open, for an upload of an earlier run: gives the disk back the bytes of its file that no
/// record names (parts interrupted by the stop, never charged). No one writes there again:
/// after a restart, new parts go to files of their own. The gaps between the recorded ranges
/// are punched out and the file is cut after the last one, which also lets a completion of
/// the parts recorded take the file whole (its length is theirs).
/// `ranges`: (offset, length) of each part in place its records name.
pub(in crate::multipart) fn trim_unrecorded(
    dir: &DirHandle,
    mut ranges: Vec<(u64, u64)>,
) -> Result<(), StoreError> {
    let file = match dir.open_rw(OBJECT_FILE) {
        Ok(file) => file,
        Err(e) if crate::tree::is_absent(&e) => return Ok(()),
        Err(e) => return Err(StoreError::from_io("open multipart file", e)),
    };
    ranges.sort_unstable();
    let mut end = 0u64;
    for (offset, size) in ranges {
        if offset > end {
            sys::punch_hole(&file, end, offset - end);
        }
        end = end.max(offset + size);
    }
    let len = file.metadata().map_err(io_err("stat"))?.len();
    if len > end {
        file.set_len(end).map_err(io_err("cut multipart file"))?;
    }
    Ok(())
}

/// The slots of one upload whose file this process made.
#[derive(Debug, Default)]
pub(in crate::multipart) struct Slots {
    /// The slots' length, once a part long enough to be any part but the last was begun.
    stride: Option<u64>,
    /// The part numbers whose slot was claimed (recorded, being written, or given up).
    taken: HashSet<u32>,
    /// No more claims: the file is an earlier run's, or a completion took it whole.
    closed: bool,
    /// The file is an earlier run's: records this run did not write may name parts in it.
    inherited: bool,
    /// The parts being written in place (`multipart/pace.rs`).
    pub(in crate::multipart) pace: Arc<UploadPace>,
}

/// What a completion may do with the upload's file (`LocalMultiparts::take_whole`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::multipart) enum Whole {
    /// The parts are not all in place from its start: they are copied.
    No,
    /// The listed parts fill it from its start: it is the object.
    Yes,
    /// All but the last are in place from its start; the last, in a file of its own (a short
    /// last part begun before any full one, when no stride was known yet), is copied in right
    /// after them (`end`), and the file cut there first.
    LastAt(u64),
}

impl Slots {
    /// Claims part `number`'s slot for a part of `len` bytes: its offset, or `None`.
    fn claim(&mut self, number: u32, len: u64) -> Option<u64> {
        if self.closed || len == 0 || self.taken.contains(&number) {
            return None;
        }
        let stride = match self.stride {
            Some(stride) => stride,
            None if len >= MIN_PART_SIZE => *self.stride.insert(len),
            None => return None,
        };
        let offset = u64::from(number - 1).checked_mul(stride)?;
        if len > stride || offset + len > MAX_END {
            return None;
        }
        self.taken.insert(number);
        Some(offset)
    }
}

impl LocalMultiparts {
    /// Part `number` of upload `id` (in `dir`, for `key`) as an upload into its slot, if it
    /// can take one (see the module doc); `None`: it goes to a file of its own.
    pub(in crate::multipart) fn begin_in_place(
        &self,
        (id, dir): (UploadId, &DirHandle),
        key: &StorePath,
        number: u32,
        expected_len: Option<u64>,
    ) -> Result<Option<Upload>, StoreError> {
        let Some(len) = expected_len else {
            return Ok(None);
        };
        let offset = {
            let mut inner = self.lock();
            let slots = match inner.slots.entry(id) {
                Entry::Occupied(slots) => slots.into_mut(),
                Entry::Vacant(vacant) => match dir.create_new(OBJECT_FILE) {
                    Ok(_) => vacant.insert(Slots::default()),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => vacant.insert(Slots {
                        closed: true,
                        inherited: true,
                        ..Slots::default()
                    }),
                    Err(e) => return Err(StoreError::from_io("create multipart file", e)),
                },
            };
            slots.claim(number, len).map(|o| (o, slots.pace.join(o)))
        };
        let Some((offset, pace)) = offset else {
            return Ok(None);
        };
        let file = dir
            .open_rw(OBJECT_FILE)
            .map_err(io_err("open multipart file"))?;
        let temp = format!("{DIR_NAME}/{id}/{OBJECT_FILE}");
        let shared = Arc::clone(&self.shared);
        Upload::in_place(shared, key, (temp, file, offset), expected_len, pace).map(Some)
    }

    /// Whether the completion of upload `id` may take its file whole ([`Whole`]): `parts`
    /// (with their data, in order) fill it from offset 0, or all but the last do, and every
    /// slot claimed is one of them (no part upload writes into it). If so, the slots close.
    /// Call before the file's length is checked.
    pub(in crate::multipart) fn take_whole(
        &self,
        id: UploadId,
        parts: &[PartRecord],
        data: &[(u32, String)],
    ) -> Whole {
        let mut end = 0u64;
        let last = parts.len().saturating_sub(1);
        for (part, (_, data)) in parts[..last].iter().zip(data) {
            if offset_of(data) != Some(end) {
                return Whole::No;
            }
            end += part.size;
        }
        let last_data = data.get(last).map(|(_, d)| d.as_str());
        let whole = match last_data.map(offset_of) {
            Some(Some(offset)) if offset == end => Whole::Yes,
            Some(None) => Whole::LastAt(end),
            _ => return Whole::No,
        };
        let mut inner = self.lock();
        let Some(slots) = inner.slots.get_mut(&id) else {
            // Made by an earlier run: no part of this run writes into it. Bytes past the parts
            // may be an unlisted part's, which only the length check tells: taken whole only
            // as it is.
            return if whole == Whole::Yes {
                whole
            } else {
                Whole::No
            };
        };
        let all_listed = slots
            .taken
            .iter()
            .all(|n| parts.iter().any(|p| p.number == *n));
        // A file of an earlier run may hold parts this run's slots do not know of, past `end`;
        // and a last part whose slot was claimed may be being written there, right where its
        // copy would go.
        let last_claimed = parts
            .last()
            .is_some_and(|p| slots.taken.contains(&p.number));
        if !all_listed || (whole != Whole::Yes && (slots.inherited || last_claimed)) {
            return Whole::No;
        }
        slots.closed = true;
        whole
    }

    /// The object's upload over upload `id`'s file (`file`, `size` bytes: the listed parts),
    /// through a second name in the staging area; charged as a new file (the parts keep their
    /// charges until the completion is recorded).
    pub(in crate::multipart) fn adopt_whole(
        &self,
        dir: &DirHandle,
        key: &StorePath,
        file: std::fs::File,
        size: u64,
    ) -> Result<Upload, StoreError> {
        self.shared.usage.reserve(size + ENTRY_COST)?;
        let temp = crate::tree::unique_name(crate::tree::TEMP_PREFIX, crate::tree::TEMP_SUFFIX);
        if let Err(e) = dir.link(OBJECT_FILE, &self.shared.staging, &temp) {
            self.shared.usage.release(size + ENTRY_COST);
            return Err(StoreError::from_io("link multipart file", e));
        }
        let options = UploadOptions {
            // Read back once at the commit: the object's SHA-256, in order.
            hash: true,
            expected_digest: None,
            expected_len: Some(size),
            object_meta: None,
        };
        let shared = Arc::clone(&self.shared);
        Ok(Upload::adopt(
            shared,
            key,
            temp,
            (file, size),
            None,
            options,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_first_full_part_and_are_taken_once() {
        let mut slots = Slots::default();
        // Too short to be any part but the last: no stride from it.
        assert_eq!(slots.claim(3, MIN_PART_SIZE - 1), None);
        assert_eq!(slots.claim(2, MIN_PART_SIZE), Some(MIN_PART_SIZE));
        assert_eq!(slots.claim(1, MIN_PART_SIZE), Some(0));
        // Taken once: sent again, the part goes elsewhere.
        assert_eq!(slots.claim(2, MIN_PART_SIZE), None);
        // The last part, shorter, in its slot; a longer one does not fit.
        assert_eq!(slots.claim(4, 10), Some(3 * MIN_PART_SIZE));
        assert_eq!(slots.claim(5, MIN_PART_SIZE + 1), None);
        assert_eq!(slots.claim(6, 0), None);
        // Past 1 TiB: a file of its own.
        let mut big = Slots::default();
        assert_eq!(big.claim(1, 5 << 30), Some(0));
        assert_eq!(big.claim(205, 5 << 30), None);
        assert_eq!(big.claim(204, 5 << 30), Some(203 * (5 << 30)));
        big.closed = true;
        assert_eq!(big.claim(2, 5 << 30), None);
    }

    #[test]
    fn a_record_names_a_part_in_place_by_its_offset() {
        assert_eq!(offset_of(&data_at(0)), Some(0));
        assert_eq!(offset_of(&data_at(5 << 20)), Some(5 << 20));
        assert_eq!(offset_of("1-00112233445566778899aabbccddeeff.part"), None);
        assert_eq!(offset_of("object@"), None);
        assert_eq!(offset_of("objects@1"), None);
    }
}
