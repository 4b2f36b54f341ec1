use super::*;
use crate::testutil::{p, read, store, temps};
use crate::{PathError, UploadOptions};

fn put(store: &LocalStore, path: &str, body: &[u8]) {
    let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
    up.write(body).unwrap();
    up.commit().unwrap();
}

#[test]
fn open_creates_the_root_and_refuses_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("deep/new/root");
    let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
    assert!(root.is_dir());
    assert_eq!(store.root(), fs::canonicalize(&root).unwrap());
    assert_eq!((store.usage(), store.removed_temporaries()), (0, 0));

    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    let err = LocalStore::open(&file, LocalOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Root { .. }), "{err}");
    assert!(err.to_string().contains(&*file.to_string_lossy()), "{err}");
    let err = LocalStore::open(file.join("below"), LocalOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Root { .. }), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_root_is_held_by_one_store_at_a_time() {
    let (dir, store) = store();
    let root = store.root().to_owned();
    let err = LocalStore::open(&root, LocalOptions::default()).unwrap_err();
    assert!(err.to_string().contains("in use"), "{err}");
    // Clones share the lock; an upload in progress keeps it too.
    let up = store
        .clone()
        .begin(&p("f"), UploadOptions::default())
        .unwrap();
    drop(store);
    assert!(LocalStore::open(&root, LocalOptions::default()).is_err());
    drop(up);
    LocalStore::open(&root, LocalOptions::default()).unwrap();
    drop(dir);
}

#[test]
fn open_removes_leftover_temporaries_and_counts_usage() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    {
        let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
        put(&store, "a/b/kept", b"12345");
        put(&store, "top", b"123");
    }
    // What a SIGKILL during uploads leaves behind.
    let leftovers = [
        root.join(".weir-upload-1f-0.tmp"),
        root.join("a/.weir-upload-2-7.tmp"),
        root.join("a/b/.weir-upload-abc-1.tmp"),
    ];
    for t in &leftovers {
        fs::write(t, vec![0u8; 1000]).unwrap();
    }
    // Not ours to remove: an unrelated hidden file, and a name that only looks similar.
    fs::write(root.join(".hidden"), b"xy").unwrap();
    fs::write(root.join("a/.weir-upload-notes"), b"").unwrap();

    let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
    assert_eq!(store.removed_temporaries(), 3);
    for t in &leftovers {
        assert!(!t.exists(), "{}", t.display());
    }
    assert!(root.join(".hidden").exists());
    assert!(root.join("a/.weir-upload-notes").exists());
    // Three files and two directories, each an entry.
    let e = crate::ENTRY_COST;
    assert_eq!(store.usage(), 5 + 3 + 2 + 5 * e);
    assert_eq!(read(&store, "a/b/kept"), b"12345");
}

#[test]
fn list_is_sorted_and_shows_only_what_can_be_fetched() {
    let (_dir, store) = store();
    put(&store, "d/zeta", b"zz");
    put(&store, "d/alpha", b"a");
    put(&store, "d/sub/x", b"xxx");
    put(&store, "d/Beta", b"bbbb");
    // An upload in progress, a file with a reserved name and one with a control
    // character, made behind the store's back: none is listed.
    let _in_progress = store
        .begin(&p("d/pending"), UploadOptions::default())
        .unwrap();
    fs::write(store.root().join("d/.weir-other"), b"").unwrap();
    fs::write(store.root().join("d/bad\nname"), b"").unwrap();

    let entries = store.list(Some(&p("d"))).unwrap();
    let names: Vec<_> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.size, e.is_dir))
        .collect();
    assert_eq!(
        names,
        [
            ("Beta", 4, false),
            ("alpha", 1, false),
            ("sub", 0, true),
            ("zeta", 2, false)
        ]
    );
    assert_eq!(
        temps(store.root()).len(),
        1,
        "the pending upload's temp exists"
    );

    let root: Vec<_> = store
        .list(None)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(root, ["d"], "the root lock is not listed either");
}

#[test]
fn list_errors() {
    let (_dir, store) = store();
    put(&store, "d/file", b"x");
    assert!(matches!(
        store.list(Some(&p("absent"))),
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.list(Some(&p("d/absent"))),
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.list(Some(&p("d/file"))),
        Err(StoreError::NotADirectory)
    ));
    assert!(matches!(
        store.list(Some(&p("d/file/x"))),
        Err(StoreError::NotFound)
    ));
    assert!(store.list(Some(&p("d"))).is_ok());
}

#[test]
fn open_file_errors() {
    let (_dir, store) = store();
    put(&store, "d/file", b"x");
    assert!(matches!(
        store.open_file(&p("absent")),
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.open_file(&p("d")),
        Err(StoreError::IsDirectory)
    ));
    assert!(matches!(
        store.open_file(&p("d/file/below")),
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.open_file(&p("no/such/dir/f")),
        Err(StoreError::NotFound)
    ));
    // Temporaries cannot even be named.
    assert_eq!(
        StorePath::parse("d/.weir-upload-1-0.tmp"),
        Err(PathError::Reserved)
    );
}

#[test]
fn begin_errors_leave_nothing_behind() {
    let (_dir, store) = store();
    put(&store, "d/file", b"x");
    let err = store.begin(&p("d"), UploadOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::IsDirectory));
    let err = store
        .begin(&p("d/file/below"), UploadOptions::default())
        .unwrap_err();
    assert!(matches!(err, StoreError::NotADirectory));
    assert!(temps(store.root()).is_empty());
}

#[test]
fn delete_removes_and_accounts() {
    let (_dir, store) = store();
    put(&store, "d/f", b"12345");
    put(&store, "d/g", b"12");
    store.delete(&p("d/f")).unwrap();
    assert!(matches!(
        store.open_file(&p("d/f")),
        Err(StoreError::NotFound)
    ));
    assert!(matches!(store.delete(&p("d/f")), Err(StoreError::NotFound)));
    assert!(matches!(store.delete(&p("x/y")), Err(StoreError::NotFound)));
    assert!(matches!(
        store.delete(&p("d")),
        Err(StoreError::IsDirectory)
    ));
    assert_eq!(store.usage(), 2 + 2 * crate::ENTRY_COST);
    let names: Vec<_> = store
        .list(Some(&p("d")))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["g"]);
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_root_are_refused_for_read_and_write() {
    use std::os::unix::fs::symlink;
    let (dir, store) = store();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), b"secret").unwrap();
    let root = store.root().to_owned();
    // A directory link and a file link, both pointing out of the root.
    symlink(&outside, root.join("escape")).unwrap();
    symlink(outside.join("secret"), root.join("secret-link")).unwrap();
    fs::create_dir(root.join("d")).unwrap();
    symlink("../../outside", root.join("d/rel")).unwrap();

    let refused = |r: Result<(), StoreError>| {
        assert!(matches!(r, Err(StoreError::SymlinkRefused)), "{r:?}");
    };
    // With one-call resolution (`openat2`) where the kernel has it, and with the walk.
    for force_walk in [false, true] {
        let walk = &store.shared().force_walk;
        walk.store(force_walk, std::sync::atomic::Ordering::Relaxed);
        for path in [
            "escape/secret",
            "secret-link",
            "d/rel/secret",
            "escape/new/deeper",
        ] {
            refused(store.open_file(&p(path)).map(drop));
            refused(store.begin(&p(path), UploadOptions::default()).map(drop));
            refused(store.delete(&p(path)));
        }
        refused(store.list(Some(&p("escape"))).map(drop));
        refused(store.list(Some(&p("d/rel"))).map(drop));
    }

    // Nothing outside was touched, nothing was created, and links are not listed.
    assert_eq!(fs::read(outside.join("secret")).unwrap(), b"secret");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
    let names: Vec<_> = store
        .list(None)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["d"]);
    assert!(store.list(Some(&p("d"))).unwrap().is_empty());
    assert!(temps(store.root()).is_empty());
}

#[cfg(unix)]
#[test]
fn a_symlink_placed_at_the_target_during_an_upload_is_refused_at_commit() {
    use std::os::unix::fs::symlink;
    let (dir, store) = store();
    fs::write(dir.path().join("secret"), b"secret").unwrap();
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"new").unwrap();
    symlink(dir.path().join("secret"), store.root().join("f")).unwrap();
    assert!(matches!(up.commit(), Err(StoreError::SymlinkRefused)));
    assert_eq!(fs::read(dir.path().join("secret")).unwrap(), b"secret");
    assert!(temps(store.root()).is_empty());
}

/// What a local process that can write inside the root could do between two steps of a
/// request: replace the directory `root/d` by a symlink to `outside` (the real directory
/// moves to `root/moved`).
#[cfg(unix)]
fn swap_for_link(root: &Path, outside: &Path) {
    fs::rename(root.join("d"), root.join("moved")).unwrap();
    std::os::unix::fs::symlink(outside, root.join("d")).unwrap();
}

/// Arms the store to swap `d` for a link right after its next directory resolution.
#[cfg(unix)]
fn swap_after_next_resolution(store: &LocalStore, outside: &Path) {
    let (root, outside) = (store.root().to_owned(), outside.to_owned());
    let mut armed = true;
    store.shared().after_resolve.set(move || {
        if std::mem::take(&mut armed) {
            swap_for_link(&root, &outside);
        }
    });
}

/// Undoes [`swap_for_link`], if it happened.
#[cfg(unix)]
fn unswap(store: &LocalStore) {
    let root = store.root();
    if root.join("moved").exists() {
        fs::remove_file(root.join("d")).unwrap();
        fs::rename(root.join("moved"), root.join("d")).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_directory_swapped_for_a_symlink_after_resolution_is_not_followed() {
    use std::sync::atomic::Ordering::Relaxed;
    // With one-call resolution (`openat2`) where the kernel has it, and with the
    // component-by-component walk.
    for force_walk in [false, true] {
        let (dir, store) = store();
        store.shared().force_walk.store(force_walk, Relaxed);
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        for name in ["f", "g", "secret"] {
            fs::write(outside.join(name), b"outside").unwrap();
        }
        put(&store, "d/f", b"inside");
        put(&store, "d/g", b"g");
        let outside_untouched = || {
            let mut names: Vec<_> = fs::read_dir(&outside)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            assert_eq!(names, ["f", "g", "secret"], "walk: {force_walk}");
            for name in &names {
                assert_eq!(fs::read(outside.join(name)).unwrap(), b"outside");
            }
        };

        // Read: the directory opened is the one read from, wherever it moved.
        swap_after_next_resolution(&store, &outside);
        if let Ok((mut file, _)) = store.open_file(&p("d/f")) {
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut body).unwrap();
            assert_eq!(body, b"inside", "walk: {force_walk}");
        }
        unswap(&store);

        // List: the entries of the directory resolved, never the link's target.
        swap_after_next_resolution(&store, &outside);
        let names: Vec<_> = store
            .list(Some(&p("d")))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["f", "g"], "walk: {force_walk}");
        unswap(&store);

        // Write: the commit renames into the directory it resolved, inside the root.
        let mut up = store.begin(&p("d/new"), UploadOptions::default()).unwrap();
        up.write(b"new").unwrap();
        swap_after_next_resolution(&store, &outside);
        up.commit().unwrap();
        unswap(&store);
        assert_eq!(read(&store, "d/new"), b"new");

        // Delete: unlinks in the directory it resolved.
        swap_after_next_resolution(&store, &outside);
        store.delete(&p("d/g")).unwrap();
        unswap(&store);
        assert!(matches!(
            store.open_file(&p("d/g")),
            Err(StoreError::NotFound)
        ));

        outside_untouched();
        assert!(temps(store.root()).is_empty());
        assert!(temps(&outside).is_empty());
    }
}

/// A file of a batch: its path and body.
type BatchFile<'a> = (&'a str, &'a [u8]);

/// Uploads of `(path, body)` pairs, begun and written, not committed.
fn uploads(store: &LocalStore, files: &[BatchFile<'_>]) -> Vec<Upload> {
    files
        .iter()
        .map(|(path, body)| {
            let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
            up.write(body).unwrap();
            up.park().unwrap();
            up
        })
        .collect()
}

/// Every path under the root, reserved names aside, sorted: what a batch left.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            if name.starts_with(".weir-") {
                continue;
            }
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
                out.push(format!("{rel}/"));
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn commit_all_stores_every_file() {
    let (_dir, store) = store();
    put(&store, "a/old", b"old");
    let files: &[(&str, &[u8])] = &[("a/old", b"new"), ("a/b/c", b"abc"), ("top", b"t")];
    let done = store.commit_all(uploads(&store, files)).unwrap();
    let replaced: Vec<_> = done.iter().map(|c| (c.size, c.replaced)).collect();
    assert_eq!(replaced, [(3, true), (3, false), (1, false)]);
    assert_eq!(done[1].sha256, Some(crate::testutil::sha256(b"abc")));
    for (path, body) in files {
        assert_eq!(read(&store, path), *body);
    }
    // Three files and two directories.
    assert_eq!(store.usage(), 7 + 5 * crate::ENTRY_COST);
    assert!(temps(store.root()).is_empty());
    assert_eq!(
        fs::read_dir(store.root().join(STAGING_NAME))
            .unwrap()
            .count(),
        0,
        "the intent record is gone"
    );
}

#[test]
fn commit_all_refuses_conflicts_and_leaves_nothing() {
    let (_dir, store) = store();
    put(&store, "file", b"f");
    let cases: &[(&[BatchFile<'_>], &str)] = &[
        // A later part needs an earlier one's path as a directory, or the reverse.
        (&[("x", b"1"), ("x/y", b"2")], "not a directory"),
        (&[("n/m/z", b"1"), ("n/m", b"2")], "not a directory"),
        // The same name twice.
        (&[("y", b"1"), ("q", b"2"), ("y", b"3")], "y is named twice"),
        // Against the tree, as it became after the uploads began: a file where a
        // directory goes, a directory at the path.
        (&[("ok", b"1"), ("late/z", b"2")], "not a directory"),
        (&[("ok", b"1"), ("latedir", b"2")], "is a directory"),
    ];
    for (files, message) in cases {
        let batch = uploads(&store, files);
        put(&store, "late", b"l");
        fs::create_dir(store.root().join("latedir")).unwrap();
        let before = tree(store.root());
        let err = store.commit_all(batch).unwrap_err();
        assert_eq!(err.to_string(), *message, "{files:?}");
        assert_eq!(tree(store.root()), before, "{files:?}");
        assert!(temps(store.root()).is_empty());
        assert_eq!(store.usage(), 2 + 2 * crate::ENTRY_COST);
        store.delete(&p("late")).unwrap();
        fs::remove_dir(store.root().join("latedir")).unwrap();
    }
}

#[test]
fn a_batch_interrupted_between_renames_is_finished_at_the_next_open() {
    let files: &[(&str, &[u8])] = &[
        ("a/old", b"new"),
        ("a/b/c", b"abc"),
        ("top", b"t"),
        ("d/e/f", b"def"),
    ];
    for renamed in 0..files.len() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        {
            let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
            put(&store, "a/old", b"old");
            *store.shared().crash_after_renames.lock().unwrap() = Some(renamed);
            let batch = uploads(&store, files);
            assert!(store.commit_all(batch).is_err());
            // What the crash left: the first `renamed` files only.
            let visible = files
                .iter()
                .filter(|(path, body)| fs::read(root.join(path)).ok().as_deref() == Some(*body))
                .count();
            assert_eq!(visible, renamed);
        }
        let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
        assert_eq!(store.recovered_files(), (files.len() - renamed) as u64);
        assert_eq!(store.removed_temporaries(), 0);
        for (path, body) in files {
            assert_eq!(read(&store, path), *body, "crash after {renamed} renames");
        }
        // Four files and four directories (a, a/b, d, d/e).
        assert_eq!(store.usage(), 10 + 8 * crate::ENTRY_COST);
        assert_eq!(fs::read_dir(root.join(STAGING_NAME)).unwrap().count(), 0);
    }
}

#[test]
fn staged_files_without_a_complete_record_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    drop(LocalStore::open(&root, LocalOptions::default()).unwrap());
    let staging = root.join(STAGING_NAME);
    // A crash before the record was complete: its temporaries and the cut record.
    fs::write(staging.join(".weir-upload-1-0.tmp"), b"one").unwrap();
    fs::write(staging.join(".weir-upload-1-1.tmp"), b"two").unwrap();
    let record = crate::intent::encode(
        [
            (".weir-upload-1-0.tmp", &p("x")),
            (".weir-upload-1-1.tmp", &p("y/z")),
        ]
        .into_iter(),
    );
    fs::write(
        staging.join(".weir-intent-1-2"),
        &record[..record.len() - 1],
    )
    .unwrap();
    let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
    assert_eq!(
        (store.recovered_files(), store.removed_temporaries()),
        (0, 2)
    );
    assert!(tree(store.root()).is_empty(), "{:?}", tree(store.root()));
    assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);
    assert_eq!(store.usage(), 0);
}

#[test]
fn a_failed_upload_creates_no_directory() {
    let (_dir, store) = store();
    let mut up = store
        .begin(&p("new/deep/dir/f"), UploadOptions::default())
        .unwrap();
    up.write(b"partial").unwrap();
    drop(up);
    let mut up = store
        .begin(
            &p("other/f"),
            UploadOptions {
                expected_len: Some(10),
                ..UploadOptions::default()
            },
        )
        .unwrap();
    up.write(b"short").unwrap();
    assert!(up.commit().is_err());
    assert!(tree(store.root()).is_empty(), "{:?}", tree(store.root()));
    assert!(store.list(None).unwrap().is_empty());
}

#[test]
fn a_root_that_is_itself_a_symlink_is_resolved_once() {
    // The operator may point `--root` at a link; only links *inside* the root are refused.
    #[cfg(unix)]
    {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let store = LocalStore::open(dir.path().join("link"), LocalOptions::default()).unwrap();
        put(&store, "f", b"ok");
        assert_eq!(fs::read(dir.path().join("real/f")).unwrap(), b"ok");
    }
}

#[test]
fn create_dir_makes_the_folder_and_its_parents_once_and_charges_them() {
    let (_dir, store) = store();
    let before = store.usage();
    assert!(store.create_dir(&p("a/b/c")).unwrap());
    assert!(store.root().join("a/b/c").is_dir());
    assert_eq!(store.usage(), before + 3 * ENTRY_COST);
    assert!(!store.create_dir(&p("a/b/c")).unwrap(), "already there");
    assert!(!store.create_dir(&p("a")).unwrap());
    assert_eq!(store.usage(), before + 3 * ENTRY_COST);
    assert!(
        store
            .list(Some(&p("a/b")))
            .unwrap()
            .iter()
            .any(|e| e.name == "c")
    );
}

#[test]
fn create_dir_refuses_a_file_or_a_link_in_the_way_and_the_quota() {
    let (_dir, store) = store();
    put(&store, "f", b"x");
    assert!(matches!(
        store.create_dir(&p("f")),
        Err(StoreError::NotADirectory)
    ));
    assert!(matches!(
        store.create_dir(&p("f/g")),
        Err(StoreError::NotADirectory)
    ));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/tmp", store.root().join("link")).unwrap();
        assert!(matches!(
            store.create_dir(&p("link/x")),
            Err(StoreError::SymlinkRefused)
        ));
    }
    let (_dir, small) = crate::testutil::store_with(LocalOptions {
        max_storage: Some(ENTRY_COST),
        ..LocalOptions::default()
    });
    assert!(matches!(
        small.create_dir(&p("x/y")),
        Err(StoreError::QuotaExceeded { .. })
    ));
    assert!(!small.root().join("x").exists(), "all or none");
}
