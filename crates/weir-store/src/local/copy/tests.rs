use crate::testutil::{data, p, read, sha256, store, store_with, temps};
use crate::{ENTRY_COST, LocalOptions, LocalStore, MediaType, StoreError, UploadOptions};
use std::os::unix::fs::MetadataExt;

fn put(store: &LocalStore, path: &str, body: &[u8], hash: bool) {
    let options = UploadOptions {
        hash,
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p(path), options).unwrap();
    up.set_media_type(&MediaType::parse(b"text/x-test").unwrap());
    up.write(body).unwrap();
    up.commit().unwrap();
}

fn inode(store: &LocalStore, path: &str) -> u64 {
    store.root().join(path).symlink_metadata().unwrap().ino()
}

#[test]
fn a_rename_moves_the_file_itself_into_new_directories() {
    let (_dir, store) = store();
    let body = data(100_000, 1);
    put(&store, "a.bin", &body, true);
    let (_, before) = store.open_file(&p("a.bin")).unwrap();
    let ino = inode(&store, "a.bin");
    let used = store.usage();
    let moved = store.rename(&p("a.bin"), &p("x/y/b.bin")).unwrap();
    assert!(!moved.replaced);
    assert_eq!((moved.size, moved.sha256), (100_000, Some(sha256(&body))));
    // The same file: identity, modification time and digest kept, as `open_file` reports.
    assert_eq!(inode(&store, "x/y/b.bin"), ino);
    assert_eq!(moved.stored, before);
    assert_eq!(store.open_file(&p("x/y/b.bin")).unwrap().1, before);
    assert_eq!(read(&store, "x/y/b.bin"), body);
    assert!(matches!(
        store.open_file(&p("a.bin")),
        Err(StoreError::NotFound)
    ));
    // Two new directories, nothing else.
    assert_eq!(store.usage(), used + 2 * ENTRY_COST);
}

#[test]
fn a_rename_replaces_the_target_if_the_check_accepts_it() {
    let (_dir, store) = store();
    put(&store, "a", b"new", true);
    put(&store, "b", b"the old one", true);
    let (_, old) = store.open_file(&p("b")).unwrap();
    let used = store.usage();
    // Refused: nothing changes.
    let refused = store.rename_if(&p("a"), &p("b"), |meta| meta.is_none());
    assert!(matches!(refused, Err(StoreError::PreconditionFailed)));
    assert_eq!(read(&store, "a"), b"new");
    assert_eq!(read(&store, "b"), b"the old one");
    assert_eq!(store.usage(), used);
    let mut seen = None;
    let moved = store
        .rename_if(&p("a"), &p("b"), |meta| {
            seen = meta.copied();
            true
        })
        .unwrap();
    assert_eq!(seen, Some(old));
    assert!(moved.replaced);
    assert_eq!(read(&store, "b"), b"new");
    assert!(store.list(None).unwrap().iter().all(|e| e.name != "a"));
    // The replaced file's bytes and entry are given back.
    assert_eq!(store.usage(), used - 11 - ENTRY_COST);
}

#[test]
fn a_rename_refuses_what_is_not_a_file() {
    let (_dir, store) = store();
    put(&store, "f", b"x", false);
    store.create_dir(&p("d")).unwrap();
    let rename = |from: &str, to: &str| store.rename(&p(from), &p(to));
    assert!(matches!(rename("none", "g"), Err(StoreError::NotFound)));
    assert!(matches!(rename("d", "g"), Err(StoreError::IsDirectory)));
    assert!(matches!(rename("f", "d"), Err(StoreError::IsDirectory)));
    assert!(matches!(rename("f", "f/g"), Err(StoreError::NotADirectory)));
    // Its own path: nothing changes.
    let same = rename("f", "f").unwrap();
    assert_eq!((same.size, same.replaced), (1, true));
    assert_eq!(read(&store, "f"), b"x");
}

#[test]
fn a_copy_is_a_new_file_with_the_same_bytes_type_and_digest() {
    let (_dir, store) = store();
    let body = data(3 << 20, 7);
    put(&store, "src", &body, true);
    let used = store.usage();
    let copied = store.copy(&p("src"), &p("dir/copy")).unwrap();
    assert!(!copied.replaced);
    assert_eq!((copied.size, copied.sha256), (3 << 20, Some(sha256(&body))));
    assert_eq!(read(&store, "dir/copy"), body);
    assert_eq!(read(&store, "src"), body);
    assert_ne!(inode(&store, "dir/copy"), inode(&store, "src"));
    let (copy, meta) = store.open_file(&p("dir/copy")).unwrap();
    assert_eq!(meta.sha256, Some(sha256(&body)));
    let (source, _) = store.open_file(&p("src")).unwrap();
    // Where the filesystem keeps media types, the copy keeps the source's.
    assert_eq!(MediaType::read_from(&copy), MediaType::read_from(&source));
    // The copy and its new directory are charged.
    assert_eq!(store.usage(), used + (3 << 20) + 2 * ENTRY_COST);
    assert!(temps(store.root()).is_empty());
}

#[test]
fn a_copy_without_a_stored_digest_has_none() {
    let (_dir, store) = store();
    put(&store, "src", b"unhashed", false);
    let copied = store.copy(&p("src"), &p("copy")).unwrap();
    assert_eq!((copied.size, copied.sha256), (8, None));
    assert_eq!(read(&store, "copy"), b"unhashed");
}

#[test]
fn a_refused_copy_leaves_nothing() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100_000),
        ..LocalOptions::default()
    });
    put(&store, "src", &data(40_000, 3), true);
    put(&store, "there", b"kept", true);
    let used = store.usage();
    let refused = store.copy_if(&p("src"), &p("there"), |meta| meta.is_none());
    assert!(matches!(refused, Err(StoreError::PreconditionFailed)));
    assert_eq!(read(&store, "there"), b"kept");
    assert!(matches!(
        store
            .copy(&p("src"), &p("d"))
            .and(store.copy(&p("src"), &p("e"))),
        Err(StoreError::QuotaExceeded { .. })
    ));
    assert!(matches!(
        store.open_file(&p("e")),
        Err(StoreError::NotFound)
    ));
    store.delete(&p("d")).unwrap();
    assert_eq!(store.usage(), used);
    assert!(matches!(
        store.copy(&p("none"), &p("x")),
        Err(StoreError::NotFound)
    ));
    store.create_dir(&p("dir")).unwrap();
    assert!(matches!(
        store.copy(&p("dir"), &p("x")),
        Err(StoreError::IsDirectory)
    ));
    assert!(temps(store.root()).is_empty());
}
