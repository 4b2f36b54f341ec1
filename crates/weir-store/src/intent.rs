//! Intent records: how a commit of several files ([`LocalStore::commit_all`]) stays
//! all-or-none across a crash.
//!
//! The commit first makes every temporary durable, then writes a record in the staging area
//! naming each temporary and its target, fsyncs the record and the staging directory, and only
//! then renames the temporaries one by one; the record is removed once the renames are
//! durable. At start-up, [`recover`] finishes every complete record: each temporary it names
//! that still exists is renamed to its target (the crash came between two renames), creating
//! directories as needed. Then everything else in the staging area is removed: temporaries of
//! uploads never committed, and records never completed (no rename starts before the record
//! is complete and durable).
//!
//! Format, text: `weir-intent 1\n`, then `<temporary name>\t<store path>\n` per file, then
//! `end <number of files>\n`. Store paths contain no control characters and temporary names no
//! tab, so the fields need no escaping, and no entry line can pass for the last one. A record
//! whose last line is not that (cut short, or holding zeros, by a crash before its fsync) is
//! ignored: no rename had started.
//!
//! [`LocalStore::commit_all`]: crate::LocalStore::commit_all

use crate::error::StoreError;
use crate::path::StorePath;
use crate::sys::{DirHandle, EntryKind};
use crate::tree::{Missing, Resolved, is_temp_name, parent_of, stat, unique_name, walk};
use std::io::{self, Read, Write};

/// Intent records are named `INTENT_PREFIX` + unique part.
pub(crate) const INTENT_PREFIX: &str = ".weir-intent-";
const HEADER: &str = "weir-intent 1\n";
const TRAILER: &str = "end ";

/// The record's text for these (temporary name, target) pairs.
pub(crate) fn encode<'a>(entries: impl Iterator<Item = (&'a str, &'a StorePath)>) -> String {
    // ALLOCATION: one string for the whole record, once per multi-file commit.
    let mut text = String::from(HEADER);
    for (temp, target) in entries {
        text.push_str(temp);
        text.push('\t');
        text.push_str(target.as_str());
        text.push('\n');
    }
    let count = text.lines().count() - 1;
    text.push_str(TRAILER);
    text.push_str(&count.to_string());
    text.push('\n');
    text
}

/// The (temporary name, target) pairs of a complete record; `None` for anything else.
pub(crate) fn decode(text: &str) -> Option<Vec<(String, StorePath)>> {
    let body = text.strip_prefix(HEADER)?.strip_suffix('\n')?;
    let (entries, last) = match body.rsplit_once('\n') {
        Some((entries, last)) => (Some(entries), last),
        None => (None, body),
    };
    let count: usize = last.strip_prefix(TRAILER)?.parse().ok()?;
    let decoded: Vec<_> = entries
        .into_iter()
        .flat_map(str::lines)
        .map(|line| {
            let (temp, target) = line.split_once('\t')?;
            let target = StorePath::parse(target).ok()?;
            (is_temp_name(temp) && !temp.contains('/')).then(|| (temp.to_owned(), target))
        })
        .collect::<Option<_>>()?;
    (decoded.len() == count).then_some(decoded)
}

/// Writes a complete record durably (the file and its name) and returns its name.
pub(crate) fn write(staging: &DirHandle, text: &str) -> Result<String, StoreError> {
    let name = unique_name(INTENT_PREFIX, "");
    let written = staging.create_new(&name).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    let synced = written.and_then(|()| staging.sync());
    if let Err(e) = synced {
        let _ = staging.unlink(&name);
        return Err(StoreError::from_io("write intent record", e));
    }
    Ok(name)
}

/// What [`recover`] did.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// Temporaries removed (uploads never committed).
    pub(crate) removed: u64,
    /// Files committed by finishing interrupted multi-file commits.
    pub(crate) rolled_forward: u64,
}

/// Finishes interrupted multi-file commits, then empties the staging area (see the module
/// doc). Runs at open, under the root lock, before the usage is counted.
pub(crate) fn recover(root: &DirHandle, staging: &DirHandle) -> Result<Recovered, StoreError> {
    let mut recovered = Recovered::default();
    let io_err = |op| move |e| StoreError::from_io(op, e);
    // Records first: they name temporaries that the cleanup below would otherwise remove.
    for name in staging.names().map_err(io_err("read staging area"))? {
        let Some(name) = name.to_str().filter(|n| n.starts_with(INTENT_PREFIX)) else {
            continue;
        };
        let mut text = String::new();
        let read = staging
            .open_read(name)
            .and_then(|mut f| f.read_to_string(&mut text));
        match read {
            Ok(_) => {}
            // Not text: not a record this code wrote completely.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => continue,
            Err(e) => return Err(StoreError::from_io("read intent record", e)),
        }
        for (temp, target) in decode(&text).unwrap_or_default() {
            let staged = stat(staging, &temp)?.is_some_and(|m| m.kind == EntryKind::File);
            if staged && finish(root, staging, &temp, &target)? {
                recovered.rolled_forward += 1;
            }
        }
    }
    for name in staging.names().map_err(io_err("read staging area"))? {
        let Some(name) = name.to_str() else { continue };
        if stat(staging, name)?.is_some_and(|m| m.kind == EntryKind::File) {
            staging
                .unlink(name)
                .map_err(io_err("remove from staging area"))?;
            if is_temp_name(name) {
                recovered.removed += 1;
            }
        }
    }
    staging.sync().map_err(io_err("sync staging area"))?;
    Ok(recovered)
}

/// Renames one staged temporary to its target, as the interrupted commit would have. `false`
/// when the target cannot take it any more (something changed the tree behind the store's
/// back: a directory or a link where the file goes); the temporary is then removed with the
/// rest.
fn finish(
    root: &DirHandle,
    staging: &DirHandle,
    temp: &str,
    target: &StorePath,
) -> Result<bool, StoreError> {
    let segments = parent_of(target).split('/').filter(|s| !s.is_empty());
    let resolved = match walk(root, segments, Missing::Create) {
        Ok(Some(resolved)) => resolved,
        Ok(None) => return Ok(false),
        Err(StoreError::Io { op, source }) => return Err(StoreError::Io { op, source }),
        Err(_) => return Ok(false),
    };
    let dir = match &resolved {
        Resolved::Root => root,
        Resolved::Below(dir) => dir,
    };
    let name = target.file_name();
    if stat(dir, name)?.is_some_and(|m| m.kind != EntryKind::File) {
        return Ok(false);
    }
    staging
        .rename(temp, dir, name)
        .map_err(|e| StoreError::from_io("rename into place", e))?;
    dir.sync()
        .map_err(|e| StoreError::from_io("sync directory", e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::p;

    #[test]
    fn records_round_trip_and_cut_records_are_ignored() {
        let (a, b) = (p("a/x"), p("b"));
        let text = encode([(".weir-upload-1-0.tmp", &a), (".weir-upload-1-1.tmp", &b)].into_iter());
        let decoded = decode(&text).unwrap();
        assert_eq!(
            decoded,
            [
                (".weir-upload-1-0.tmp".to_owned(), a),
                (".weir-upload-1-1.tmp".to_owned(), b)
            ]
        );
        for cut in 0..text.len() {
            assert!(decode(&text[..cut]).is_none(), "cut at {cut}");
        }
        assert!(decode("weir-intent 1\n../x\tb\nend 1\n").is_none());
        assert!(decode("weir-intent 1\n.weir-upload-1.tmp\t../b\nend 1\n").is_none());
        assert!(decode("weir-intent 1\n.weir-upload-1.tmp\tb\nend 2\n").is_none());
        assert_eq!(decode("weir-intent 1\nend 0\n"), Some(vec![]));
        // A line cut after a name that ends like the last line does not pass for it.
        let c = p("d/trend");
        let text = encode([(".weir-upload-1-0.tmp", &c)].into_iter());
        assert!(decode(&text[..text.find("end 1").unwrap()]).is_none());
    }
}
