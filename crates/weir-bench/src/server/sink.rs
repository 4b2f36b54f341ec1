//! The upload sinks every system shares: buffer sizes and the destination files.
//!
//! The sizes are part of the comparison, so they live in one place:
//! - discarding reads into a [`DISCARD_BUF`] buffer: large, so reads are few and the receiving
//!   side is limited by the socket, not by syscalls;
//! - writing to a file uses [`FILE_WRITE`] writes, measured on this kind of machine to beat both
//!   64 KiB and 1 MiB writes into the page cache.
//!
//! Files go into the server's data directory under a unique name; the parent empties the
//! directory after each upload, outside the timed window, because unlinking a large file costs
//! time that belongs to no system.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Read buffer of the discard sink.
pub const DISCARD_BUF: usize = 1 << 20;

/// Size of each `write` of the file sink.
pub const FILE_WRITE: usize = 256 << 10;

static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// Creates a new, empty file for one upload in `dir`.
pub fn create_upload_file(dir: &Path) -> io::Result<File> {
    let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
    File::create(dir.join(format!("upload-{}-{n}", std::process::id())))
}

/// Removes every file in `dir` (not recursively), then `syncfs`: the parent's clean-up between
/// rounds. Without the sync, the filesystem's work for the deleted files (journal commits,
/// discards, writeback of what was dirty) lands in the next round's timing, on whichever system
/// runs next.
pub fn empty_dir(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
        }
    }
    rustix::fs::syncfs(File::open(dir)?)?;
    Ok(())
}
