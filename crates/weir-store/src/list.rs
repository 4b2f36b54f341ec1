//! Directory listings, one page at a time, in memory bounded by the page and a fixed window.
//!
//! A page is the `limit` smallest names (byte order) greater than a cursor `after`. It is found
//! in one pass over the directory that keeps only the best candidates so far in a max-heap: a
//! name that is not smaller than the largest kept one is dropped at once, so memory is bounded
//! whatever the size of the directory. A listing's page (`limit` of at least
//! `cache::MIN_WIDE_PAGE`) keeps up to `cache::WIDE_NAMES` (65,536) candidates instead of
//! `limit`, and leaves those beyond the page for the next pages' requests (`list/cache.rs`),
//! which are cut from them without another pass while the directory is unchanged (same
//! `ctime`): a 50,000-entry listing in pages of 10,000 costs one pass, not five. The directory is reached like every other
//! (`Shared::open_listed_dir`: descriptor-relative, no symbolic link followed, not even one
//! swapped in meanwhile) and its entries are streamed from its descriptor, never collected.
//! Only the entries that make the page are `stat`ed (`fstatat(AT_SYMLINK_NOFOLLOW)` relative
//! to the directory's descriptor); the others are judged by the type `readdir` reports.
//!
//! Invariants:
//! - A listing shows exactly what can be fetched: names that are valid store path segments
//!   (so no temporaries or reserved names), of regular files and directories (no symlinks or
//!   special files, as `readdir` or the `stat` of the page sees them).
//! - Walking pages from no cursor, each next one after the previous [`ListPage::next`], visits
//!   every name that stays in the directory during the walk exactly once, in order; names
//!   added or removed during the walk are seen at most once. `next` is `None` only when no
//!   name greater than the page's last candidate was seen.
//! - The cost of a page is one `readdir` of the whole directory plus `limit` `stat`s, or, when
//!   the names kept by an earlier pass of the unchanged directory cover it, the `limit`
//!   `stat`s and one `fstat` of the directory: a walk of N entries in pages of L costs about
//!   N/65,536 passes when the directory is settled, N/L while it is being written to. The
//!   time is the caller's to place (the service runs it on a blocking thread).
//! - Memory: O(`limit`) for a page below `cache::MIN_WIDE_PAGE`; O(max(`limit`,
//!   `cache::WIDE_NAMES`)) names for a listing's page; plus the kept names, at most
//!   `cache::CACHED_DIRS` directories of `cache::WIDE_NAMES` names each.

use crate::error::StoreError;
use crate::path::{StorePath, validate_segment};
use crate::sys::{DirHandle, EntryKind};
use crate::tree::Shared;
use std::collections::BinaryHeap;
use std::io;
use std::num::NonZeroUsize;
use std::time::SystemTime;

pub(crate) mod cache;

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name in the directory (one path segment), always a valid store path segment.
    pub name: String,
    /// Size in bytes; 0 for directories.
    pub size: u64,
    /// Last modification time.
    pub modified: SystemTime,
    /// Whether it is a directory (else a regular file).
    pub is_dir: bool,
}

/// One page of a listing (see [`LocalStore::list_page`](crate::LocalStore::list_page)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListPage {
    /// At most `limit` entries, sorted by name (byte order), all greater than `after`.
    pub entries: Vec<Entry>,
    /// When more names follow: the cursor for the next page (pass it as `after`). It is the
    /// largest name this page considered, which is the last entry's name unless that entry
    /// vanished between `readdir` and `stat`.
    pub next: Option<String>,
}

/// The page of `dir` (`None`: the root) after `after`, of at most `limit` entries.
pub(crate) fn page(
    shared: &Shared,
    dir: Option<&StorePath>,
    after: Option<&str>,
    limit: NonZeroUsize,
) -> Result<ListPage, StoreError> {
    let resolved = shared.open_listed_dir(dir)?;
    let handle = resolved.get(shared);
    let limit = limit.get();
    // Read before the scan: a change during it moves the `ctime` past this one.
    let version = handle.changed();
    if let Some(version) = version {
        if let Some(cut) = shared.list_cache.cut(version, after, limit) {
            let next = if cut.more {
                cut.names.last().cloned()
            } else {
                None
            };
            return Ok(ListPage {
                entries: entries(handle, cut.names)?,
                next,
            });
        }
    }
    #[cfg(any(test, feature = "fault-injection"))]
    if let Some(gate) = shared.faults.list_gate() {
        gate.pass(0);
    }
    shared.list_cache.scanned();
    // A listing's page (not a probe) keeps more names than it shows, for the pages after it
    // (`list/cache.rs`), where the directory can be told again.
    let wide = version.is_some() && limit >= cache::MIN_WIDE_PAGE;
    let keep = if wide {
        limit.max(cache::WIDE_NAMES)
    } else {
        limit
    };
    let started = shared.list_cache.now();
    let (mut candidates, more) = scan(handle, after, keep)?;
    let mut page_more = more;
    if candidates.len() > limit {
        page_more = true;
        // ALLOCATION: the page's names, copied out of those kept for the next pages.
        let page: Vec<String> = candidates[..limit].to_vec();
        if let Some(version) = version {
            shared
                .list_cache
                .keep(version, started, after, candidates, !more);
        }
        candidates = page;
    }
    let next = if page_more {
        candidates.last().cloned()
    } else {
        None
    };
    Ok(ListPage {
        entries: entries(handle, candidates)?,
        next,
    })
}

/// One pass over the directory: the (at most) `keep` smallest listable names after `after`,
/// sorted, and whether a listable name was left out after them.
fn scan(
    handle: &DirHandle,
    after: Option<&str>,
    keep: usize,
) -> Result<(Vec<String>, bool), StoreError> {
    // ALLOCATION: the candidates, a name each; grows to `keep` at most (not reserved up front,
    // so a large limit on a small directory costs what the directory has).
    let mut best: BinaryHeap<String> = BinaryHeap::new();
    let mut more = false;
    handle
        .for_each_entry(|name, kind| {
            // Borrowed from `readdir`'s buffer: nothing is allocated for a name left out.
            let Some(name) = name.to_str() else {
                return;
            };
            if after.is_some_and(|after| name <= after) {
                return;
            }
            let full = best.len() == keep;
            if full && best.peek().is_some_and(|largest| name >= largest.as_str()) {
                // Not kept; it only tells that more follow, if it is listable.
                more = more || listable(handle, name, kind);
                return;
            }
            if !listable(handle, name, kind) {
                return;
            }
            if full {
                best.pop();
                more = true;
            }
            best.push(name.to_owned());
        })
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => StoreError::NotFound,
            _ => StoreError::from_io("read directory", e),
        })?;
    Ok((best.into_sorted_vec(), more))
}

/// The entries of a page's names, each `stat`ed now: a name gone since the scan, or no longer
/// a file or directory, is left out.
fn entries(handle: &DirHandle, names: Vec<String>) -> Result<Vec<Entry>, StoreError> {
    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        // `fstatat(AT_SYMLINK_NOFOLLOW)` relative to the listed directory's descriptor.
        let meta = match handle.stat(&name) {
            Ok(Some(m)) => m,
            // Deleted between readdir and stat: it is simply not there any more.
            Ok(None) => continue,
            Err(e) => return Err(StoreError::from_io("stat entry", e)),
        };
        let is_dir = meta.kind == EntryKind::Dir;
        if !is_dir && meta.kind != EntryKind::File {
            continue;
        }
        entries.push(Entry {
            name,
            size: if is_dir { 0 } else { meta.size },
            modified: meta.modified,
            is_dir,
        });
    }
    Ok(entries)
}

/// Whether `readdir` shows a name a listing may show: a valid segment, of a regular file or a
/// directory. The type comes from `readdir`; only where the filesystem does not report it is
/// the name `stat`ed (relative to the directory). A name gone meanwhile is not listable.
fn listable(dir: &DirHandle, name: &str, kind: Option<EntryKind>) -> bool {
    if validate_segment(name).is_err() {
        return false;
    }
    let kind = match kind {
        Some(kind) => kind,
        None => match dir.stat(name) {
            Ok(Some(meta)) => meta.kind,
            _ => return false,
        },
    };
    matches!(kind, EntryKind::File | EntryKind::Dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{p, store};
    use crate::{LocalStore, UploadOptions};

    fn put(store: &LocalStore, path: &str, body: &[u8]) {
        let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
        up.write(body).unwrap();
        up.commit().unwrap();
    }

    fn limit(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).unwrap()
    }

    fn names(page: &ListPage) -> Vec<&str> {
        page.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// Every page of `dir` in pages of `n`, the names of each.
    fn walk(store: &LocalStore, dir: &str, n: usize) -> Vec<Vec<String>> {
        let mut pages = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .list_page(Some(&p(dir)), after.as_deref(), limit(n))
                .unwrap();
            pages.push(page.entries.iter().map(|e| e.name.clone()).collect());
            match page.next {
                Some(next) => after = Some(next),
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_cover_the_directory_once_in_order() {
        let (_dir, store) = store();
        let mut all: Vec<String> = (0..23).map(|i| format!("f{:02}", (i * 7) % 23)).collect();
        for name in &all {
            put(&store, &format!("d/{name}"), name.as_bytes());
        }
        // Not listable, wherever they sort: they never make a page or a `next` on their own.
        std::fs::write(store.root().join("d/.weir-x"), b"").unwrap();
        std::fs::write(store.root().join("d/zz\u{7}bell"), b"").unwrap();
        all.sort();
        for n in [1, 2, 5, 22, 23, 24, 1000] {
            let pages = walk(&store, "d", n);
            assert_eq!(pages.len(), 23usize.div_ceil(n), "limit {n}");
            assert!(pages.iter().all(|page| page.len() <= n), "limit {n}");
            assert_eq!(pages.concat(), all, "limit {n}");
        }
        let whole = store.list(Some(&p("d"))).unwrap();
        assert_eq!(whole.len(), 23);
        assert_eq!(whole[0].size, 3, "sizes come from the stat");
    }

    #[test]
    fn after_is_exclusive_and_need_not_exist() {
        let (_dir, store) = store();
        for name in ["a", "b", "c", "d"] {
            put(&store, &format!("x/{name}"), b"");
        }
        let page = store.list_page(Some(&p("x")), Some("b"), limit(1)).unwrap();
        assert_eq!((names(&page), page.next.as_deref()), (vec!["c"], Some("c")));
        let page = store
            .list_page(Some(&p("x")), Some("bb"), limit(5))
            .unwrap();
        assert_eq!((names(&page), page.next.as_deref()), (vec!["c", "d"], None));
        let page = store.list_page(Some(&p("x")), Some("d"), limit(5)).unwrap();
        assert_eq!((names(&page), page.next.as_deref()), (vec![], None));
        // Byte order: upper case before lower case, ASCII before the rest.
        let page = store.list_page(None, Some("W"), limit(5)).unwrap();
        assert_eq!(names(&page), ["x"]);
    }

    #[test]
    fn names_added_or_removed_between_pages_do_not_break_the_walk() {
        let (_dir, store) = store();
        for i in 0..10 {
            put(&store, &format!("d/n{i}"), b"");
        }
        let d = Some(p("d"));
        let first = store.list_page(d.as_ref(), None, limit(4)).unwrap();
        assert_eq!(names(&first), ["n0", "n1", "n2", "n3"]);
        // Remove the cursor's own name and one ahead; add one behind and two ahead.
        store.delete(&p("d/n3")).unwrap();
        store.delete(&p("d/n5")).unwrap();
        put(&store, "d/n00", b"");
        put(&store, "d/n45", b"");
        put(&store, "d/n99", b"");
        let mut seen = names(&first)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        let mut after = first.next;
        while let Some(cursor) = after {
            let page = store
                .list_page(d.as_ref(), Some(&cursor), limit(4))
                .unwrap();
            seen.extend(page.entries.into_iter().map(|e| e.name));
            after = page.next;
        }
        assert_eq!(
            seen,
            [
                "n0", "n1", "n2", "n3", "n4", "n45", "n6", "n7", "n8", "n9", "n99"
            ],
            "each name once; the one added behind the cursor is not seen"
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_and_special_files_take_no_place_in_a_page() {
        use std::os::unix::fs::symlink;
        let (_dir, store) = store();
        put(&store, "d/a", b"");
        put(&store, "d/c", b"");
        symlink("a", store.root().join("d/b-link")).unwrap();
        symlink("nowhere", store.root().join("d/z-link")).unwrap();
        let d = Some(p("d"));
        let page = store.list_page(d.as_ref(), None, limit(2)).unwrap();
        assert_eq!((names(&page), page.next.as_deref()), (vec!["a", "c"], None));
        let page = store.list_page(d.as_ref(), None, limit(1)).unwrap();
        assert_eq!((names(&page), page.next.as_deref()), (vec!["a"], Some("a")));
    }

    #[test]
    fn the_gate_holds_a_scan_until_released() {
        use crate::{HashGate, LocalOptions};
        let gate = HashGate::closed();
        let (_dir, store) = crate::testutil::store_with(LocalOptions {
            list_gate: Some(gate.clone()),
            ..LocalOptions::default()
        });
        let lister = store.clone();
        let scan = std::thread::spawn(move || lister.list(None).unwrap().len());
        let waiting = gate.wait_for_job(std::time::Duration::from_secs(30));
        assert_eq!(waiting, Some(vec![0]));
        gate.open();
        assert_eq!(scan.join().unwrap(), 0);
    }

    /// The `ctime` of `d` in the store, as the cache reads it.
    fn ctime(store: &LocalStore, dir: &str) -> std::time::Duration {
        let handle = store.shared().resolve(dir).unwrap();
        handle.get(store.shared()).changed().unwrap().1
    }

    /// A walk of a settled 1,500-entry folder in pages of 300 scans it once, not five times, and shows the same pages; once the folder changes, the next page scans again
    /// and sees the change. Counted scans, no time: the folder is made settled by the cache's
    /// test clock, and a change is made until the folder's `ctime` has moved.
    #[cfg(unix)]
    #[test]
    fn a_settled_folder_is_scanned_once_per_walk() {
        use std::sync::atomic::Ordering::SeqCst;
        let (_dir, store) = store();
        let d = store.root().join("d");
        std::fs::create_dir(&d).unwrap();
        let mut all: Vec<String> = (0..1_500).map(|i| format!("f{i:05}")).collect();
        for name in &all {
            std::fs::write(d.join(name), b"").unwrap();
        }
        let cache = &store.shared().list_cache;
        let scans = || cache.scans.load(SeqCst);
        // Not settled (written less than a second before the scans, by the clock): a scan
        // per page, as before.
        cache.clock_offset.store(-10, SeqCst);
        let pages = walk(&store, "d", 300);
        assert_eq!((pages.len(), scans()), (5, 5));
        assert_eq!(pages.concat(), all);
        cache.clock_offset.store(10, SeqCst);
        let pages = walk(&store, "d", 300);
        assert_eq!(pages.len(), 5);
        assert_eq!(pages.concat(), all);
        assert_eq!(scans(), 6, "one scan for the whole walk");
        // Another walk of the unchanged folder, and a probe's page (`is_dir`'s): no scan.
        assert_eq!(walk(&store, "d", 300).concat(), all);
        let probe = store.list_page(Some(&p("d")), None, limit(1)).unwrap();
        assert_eq!(
            (names(&probe), probe.next.as_deref()),
            (vec!["f00000"], Some("f00000"))
        );
        assert_eq!(scans(), 6);

        // A walk under way; the folder changes (a name added ahead, one removed), until its
        // `ctime` has moved.
        let first = store.list_page(Some(&p("d")), None, limit(300)).unwrap();
        assert_eq!(scans(), 6);
        let before = ctime(&store, "d");
        let mut added = 0;
        while ctime(&store, "d") == before {
            std::fs::write(d.join(format!("g{added:05}")), b"").unwrap();
            all.push(format!("g{added:05}"));
            added += 1;
        }
        std::fs::remove_file(d.join("f01499")).unwrap();
        all.retain(|n| n != "f01499");
        let mut seen: Vec<String> = first.entries.into_iter().map(|e| e.name).collect();
        let mut after = first.next;
        while let Some(cursor) = after {
            let page = store
                .list_page(Some(&p("d")), Some(&cursor), limit(300))
                .unwrap();
            seen.extend(page.entries.into_iter().map(|e| e.name));
            after = page.next;
        }
        assert_eq!(seen, all, "the change is seen");
        assert_eq!(scans(), 7, "scanned again once, then kept again");
    }
}
