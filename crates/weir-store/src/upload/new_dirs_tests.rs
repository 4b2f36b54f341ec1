//! Concurrent first uploads into folders that do not exist yet: every one is stored, none is
//! refused because another commit created the folder at the same moment (the `409 Path
//! conflict` "not a directory" seen once by `weir-bench services`, issue 37).

use crate::UploadOptions;
use crate::testutil::{p, read, store};

/// Many threads each upload one file into the same new nested folder, all at once, round
/// after round with a new folder each time: each begin and commit resolves the folder while
/// others create it. Every upload is stored.
#[test]
fn concurrent_first_uploads_into_one_new_folder_all_land() {
    const THREADS: usize = 32;
    const ROUNDS: usize = 12;
    let (_dir, store) = store();
    for round in 0..ROUNDS {
        let start = std::sync::Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (store, start) = (&store, &start);
                s.spawn(move || {
                    let path = p(&format!("new-{round}/sub/f-{t}"));
                    start.wait();
                    let mut up = store
                        .begin(&path, UploadOptions::default())
                        .unwrap_or_else(|e| panic!("begin {path:?}: {e}"));
                    up.write(path.as_str().as_bytes()).unwrap();
                    up.commit()
                        .unwrap_or_else(|e| panic!("commit {path:?}: {e}"));
                });
            }
        });
        for t in 0..THREADS {
            let path = format!("new-{round}/sub/f-{t}");
            assert_eq!(read(&store, &path), path.as_bytes());
        }
    }
}

/// The moment itself, made to happen: an upload's `begin` finds the folder absent, and
/// another commit creates it before the upload looks at what is there. The folder is a
/// folder, not "something in the way": the upload goes on, and lands. At the top and one
/// level down (`a` exists, `a/b` appears).
#[test]
fn a_folder_created_between_the_open_and_the_look_is_a_folder() {
    let (dir, store) = store();
    std::fs::create_dir(dir.path().join("root/a")).unwrap();
    for (path, appears) in [("new/f", "new"), ("a/b/f", "a/b")] {
        let appears = dir.path().join("root").join(appears);
        let mut once = Some(appears);
        crate::tree::AFTER_ABSENT_OPEN.set(Some(Box::new(move |_name: &str| {
            // As a concurrent commit's `mkdir` would, once; then the walk goes on.
            if let Some(d) = once.take() {
                std::fs::create_dir(d).unwrap();
            }
        })));
        let begun = store.begin(&p(path), UploadOptions::default());
        crate::tree::AFTER_ABSENT_OPEN.set(None);
        let mut up = begun.unwrap_or_else(|e| panic!("begin {path}: {e}"));
        up.write(b"x").unwrap();
        up.commit().unwrap();
        assert_eq!(read(&store, path), b"x");
    }
}

/// Resolving a folder for reading creates nothing, also where `openat2` is missing and the
/// store walks one component at a time: an absent folder is not found, and stays absent.
#[test]
fn resolving_for_reading_creates_no_folder() {
    let (dir, store) = store();
    for force_walk in [false, true] {
        let walk = &store.shared().force_walk;
        walk.store(force_walk, std::sync::atomic::Ordering::Relaxed);
        assert!(
            matches!(
                store.open_file(&p("ghost/f")),
                Err(crate::StoreError::NotFound)
            ),
            "walk: {force_walk}"
        );
        assert!(
            !dir.path().join("root/ghost").exists(),
            "walk: {force_walk}"
        );
    }
}
