//! The group commit's promise, by counts and by the order of events, never by time: a batch
//! is made to form by holding the first fsync until the others wait (polled, not slept on).

use super::{DirKey, DirSyncs};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Renamed(usize),
    SyncStarted,
    SyncEnded,
    Answered(usize),
}

const KEY: DirKey = (1, 2);

/// Waits (yielding) until `n` callers wait for another's fsync of `key`.
fn until_waiting(syncs: &DirSyncs, key: DirKey, n: usize) {
    while syncs.waiting(key) < n {
        std::thread::yield_now();
    }
}

/// 64 commits into one directory at once: two fsyncs (the first, held until the 63 others
/// wait, then one for all of them), and each answer after an fsync that began after its
/// rename and ended before the answer.
#[test]
fn concurrent_commits_share_fsyncs_and_each_waits_for_one_begun_after_its_rename() {
    const N: usize = 64;
    let syncs = DirSyncs::default();
    let log = Mutex::new(Vec::new());
    let push = |e| log.lock().unwrap().push(e);
    let first = AtomicBool::new(true);
    std::thread::scope(|s| {
        for i in 0..N {
            let (syncs, push, first) = (&syncs, &push, &first);
            s.spawn(move || {
                push(Event::Renamed(i));
                syncs
                    .sync(Some(KEY), || {
                        push(Event::SyncStarted);
                        if first.swap(false, Ordering::SeqCst) {
                            until_waiting(syncs, KEY, N - 1);
                        }
                        push(Event::SyncEnded);
                        Ok(())
                    })
                    .unwrap();
                push(Event::Answered(i));
            });
        }
    });
    assert_eq!(
        syncs.fsyncs.load(Ordering::SeqCst),
        2,
        "one batch after the first"
    );
    let log = log.into_inner().unwrap();
    let at = |e: Event| log.iter().position(|&x| x == e).unwrap();
    let syncs_seen: Vec<(usize, usize)> = log
        .iter()
        .enumerate()
        .filter(|(_, e)| **e == Event::SyncStarted)
        .map(|(start, _)| {
            let end = start
                + log[start..]
                    .iter()
                    .position(|e| *e == Event::SyncEnded)
                    .unwrap();
            (start, end)
        })
        .collect();
    for i in 0..N {
        let (renamed, answered) = (at(Event::Renamed(i)), at(Event::Answered(i)));
        assert!(
            syncs_seen
                .iter()
                .any(|&(start, end)| renamed < start && end < answered),
            "commit {i}: no fsync begun after its rename ended before its answer: {log:?}"
        );
    }
    assert!(syncs.dirs.lock().unwrap().is_empty(), "the table empties");
}

/// A lone commit leads at once, every time: one fsync per commit, none skipped, none shared
/// across directories.
#[test]
fn a_lone_commit_runs_its_own_fsync() {
    let syncs = DirSyncs::default();
    for (i, key) in [KEY, (1, 3), KEY, KEY, (1, 3)].into_iter().enumerate() {
        let ran = AtomicBool::new(false);
        syncs
            .sync(Some(key), || {
                ran.store(true, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert!(ran.load(Ordering::SeqCst), "call {i}: its own fsync ran");
        assert_eq!(syncs.fsyncs.load(Ordering::SeqCst), i as u64 + 1);
    }
    // Without an identity: alone, always.
    syncs.sync(None, || Ok(())).unwrap();
    assert_eq!(syncs.fsyncs.load(Ordering::SeqCst), 6);
    assert!(syncs.dirs.lock().unwrap().is_empty());
}

/// A failed fsync fails every commit it was to serve (the leader's and the waiters'), and
/// the next fsync stands on its own.
#[test]
fn a_failed_fsync_fails_the_commits_it_served() {
    let syncs = DirSyncs::default();
    let eio = || Err(io::Error::from_raw_os_error(5));
    assert_eq!(
        syncs.sync(Some(KEY), eio).unwrap_err().raw_os_error(),
        Some(5)
    );
    syncs.sync(Some(KEY), || Ok(())).unwrap();

    // A batch: the first fsync (held) succeeds, the batch's fails.
    let first = AtomicBool::new(true);
    let results: Vec<io::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (syncs, first) = (&syncs, &first);
                s.spawn(move || {
                    syncs.sync(Some(KEY), || {
                        if first.swap(false, Ordering::SeqCst) {
                            until_waiting(syncs, KEY, 2);
                            Ok(())
                        } else {
                            eio()
                        }
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let failed = results.iter().filter(|r| r.is_err()).count();
    assert_eq!(failed, 2, "both of the failed batch: {results:?}");
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(e.raw_os_error(), Some(5));
    }
    syncs.sync(Some(KEY), || Ok(())).unwrap();
}

/// Through the store: 64 uploads committed at once into one folder make two directory
/// fsyncs (the first held until the 63 others wait on it), where each made its own before;
/// every file is stored.
#[cfg(unix)]
#[test]
fn sixty_four_commits_into_one_folder_make_two_directory_fsyncs() {
    use crate::UploadOptions;
    use crate::testutil::{p, read, store};
    use std::os::unix::fs::MetadataExt;
    const N: usize = 64;
    let (dir, store) = store();
    let mut up = store
        .begin(&p("d/first"), UploadOptions::default())
        .unwrap();
    up.write(b"first").unwrap();
    up.commit().unwrap();
    let meta = std::fs::metadata(dir.path().join("root/d")).unwrap();
    let key = (meta.dev(), meta.ino());
    let syncs = &store.shared().dir_syncs;
    let before = syncs.fsyncs.load(Ordering::SeqCst);
    let held = store.clone();
    let mut first = true;
    syncs.before_fsync.set(move || {
        if std::mem::take(&mut first) {
            until_waiting(&held.shared().dir_syncs, key, N - 1);
        }
    });
    std::thread::scope(|s| {
        for i in 0..N {
            let store = &store;
            s.spawn(move || {
                let mut up = store
                    .begin(&p(&format!("d/f-{i}")), UploadOptions::default())
                    .unwrap();
                up.write(format!("{i}").as_bytes()).unwrap();
                up.commit().unwrap();
            });
        }
    });
    // The hook's clone of the store goes.
    syncs.before_fsync.set(|| {});
    assert_eq!(syncs.fsyncs.load(Ordering::SeqCst) - before, 2);
    for i in 0..N {
        assert_eq!(read(&store, &format!("d/f-{i}")), format!("{i}").as_bytes());
    }
}
