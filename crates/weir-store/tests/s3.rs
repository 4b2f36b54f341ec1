//! The storage interface (`Store`) against a real S3 store, SeaweedFS's `weed mini` on
//! loopback (`weir_testkit::seaweed`), and the same checks against `LocalStore`, so both
//! implementations are held to one behaviour. Skipped with a loud message when `weed` is not
//! installed, failed under `WEIR_REQUIRE_TOOLS=1` (weir-testkit's `tools`).

use sha2::{Digest, Sha256};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
#[allow(dead_code)] // `read_all`: this file reads ranges (its own `read_all`)
#[path = "support/stores.rs"]
mod stores;
use stores::{PART, config, weed_store};
use weir_store::{
    ContentDigest, CopyMeta, LocalOptions, LocalStore, S3Store, Store, StoreError, StoreObject,
    StorePath, StoreReader, StoreUpload, UploadOptions,
};

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

async fn put<S: Store>(
    store: &S,
    path: &str,
    body: &[u8],
) -> Result<weir_store::Committed, StoreError> {
    let mut up = store
        .begin(&p(path), UploadOptions::default(), None)
        .await?;
    // Uneven writes, so parts are filled across write boundaries.
    for chunk in body.chunks(100_000) {
        up.write(chunk).await?;
    }
    up.commit(None).await
}

async fn read_all<S: Store>(store: &S, path: &str, range: Option<std::ops::Range<u64>>) -> Vec<u8> {
    let obj = store.open(&p(path)).await.unwrap();
    let range = range.unwrap_or(0..obj.meta().size);
    let mut reader = obj.read(range).await.unwrap();
    let mut out = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        out.extend_from_slice(&chunk);
    }
    out
}

/// The behaviour both stores share: put (many parts), metadata with SHA-256, whole and ranged
/// reads, listing with directories, replace (200 vs 201), delete.
async fn round_trip<S: Store>(store: &S) {
    let body = data(2 * PART + 12_345, 7);
    let done = put(store, "dir/a.bin", &body).await.unwrap();
    assert_eq!(done.size, body.len() as u64);
    assert!(!done.replaced);
    let sha: [u8; 32] = Sha256::digest(&body).into();
    assert_eq!(done.sha256, Some(sha));

    put(store, "dir/sub/b.txt", b"hello").await.unwrap();
    // A name that needs escaping in a URL (and in the signature's canonical request).
    put(store, "dir/sub/é x+y%;=.txt", b"odd").await.unwrap();
    assert_eq!(read_all(store, "dir/sub/é x+y%;=.txt", None).await, b"odd");
    put(store, "top.txt", b"top").await.unwrap();

    let obj = store.open(&p("dir/sub/b.txt")).await.unwrap();
    assert_eq!(obj.meta().size, 5);
    assert_eq!(obj.meta().sha256, Some(Sha256::digest(b"hello").into()));

    assert_eq!(read_all(store, "dir/a.bin", None).await, body);
    assert_eq!(
        read_all(
            store,
            "dir/a.bin",
            Some(PART as u64 - 10..PART as u64 + 300_001)
        )
        .await,
        &body[PART - 10..PART + 300_001]
    );

    let limit = NonZeroUsize::new(100).unwrap();
    let page = store.list_page(Some(&p("dir")), None, limit).await.unwrap();
    let names: Vec<(&str, bool, u64)> = page
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.is_dir, e.size))
        .collect();
    assert_eq!(
        names,
        [("a.bin", false, body.len() as u64), ("sub", true, 0)]
    );
    let top = store.list_page(None, None, limit).await.unwrap();
    let names: Vec<&str> = top.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["dir", "top.txt"]);
    // Pages: one entry each, the cursor going on past a directory.
    let first = store
        .list_page(None, None, NonZeroUsize::MIN)
        .await
        .unwrap();
    assert_eq!(first.entries[0].name, "dir");
    let second = store
        .list_page(None, first.next.as_deref(), NonZeroUsize::MIN)
        .await
        .unwrap();
    assert_eq!(second.entries[0].name, "top.txt");

    let again = put(store, "top.txt", b"top, again").await.unwrap();
    assert!(again.replaced);
    assert_eq!(read_all(store, "top.txt", None).await, b"top, again");

    store.delete(&p("top.txt"), None).await.unwrap();
    assert!(matches!(
        store.open(&p("top.txt")).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.delete(&p("top.txt"), None).await,
        Err(StoreError::NotFound)
    ));
}

/// Pages of one entry walk a directory whose names sort differently as keys (`d/` after
/// `d.txt`, before `e`) and visit every entry exactly once.
async fn pages_visit_everything_once<S: Store>(store: &S) {
    for path in ["p/a", "p/d/x", "p/d/y", "p/d.txt", "p/e", "p/d0"] {
        put(store, path, b"x").await.unwrap();
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..20 {
        let page = store
            .list_page(Some(&p("p")), after.as_deref(), NonZeroUsize::MIN)
            .await
            .unwrap();
        seen.extend(page.entries.iter().map(|e| (e.name.clone(), e.is_dir)));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    seen.sort();
    let want: Vec<(String, bool)> = [
        ("a", false),
        ("d", true),
        ("d.txt", false),
        ("d0", false),
        ("e", false),
    ]
    .iter()
    .map(|(n, d)| (n.to_string(), *d))
    .collect();
    assert_eq!(seen, want);
}

/// `delete_dir`, one behaviour for both stores: an empty folder goes; one with anything in it
/// (a folder, a file) stays (`DirectoryNotEmpty`); a file's path is `NotADirectory`, nothing
/// there `NotFound`.
async fn only_empty_folders_are_deleted<S: Store>(store: &S) {
    assert!(store.create_dir(&p("dd")).await.unwrap());
    assert!(store.create_dir(&p("dd/sub")).await.unwrap());
    put(store, "dd/f", b"x").await.unwrap();
    let not_empty = |r: Result<(), StoreError>| matches!(r, Err(StoreError::DirectoryNotEmpty));
    assert!(not_empty(store.delete_dir(&p("dd")).await));
    store.delete(&p("dd/f"), None).await.unwrap();
    assert!(not_empty(store.delete_dir(&p("dd")).await));
    assert!(store.is_dir(&p("dd/sub")).await.unwrap());
    put(store, "file", b"y").await.unwrap();
    assert!(matches!(
        store.delete_dir(&p("file")).await,
        Err(StoreError::NotADirectory)
    ));
    assert!(matches!(
        store.delete_dir(&p("none")).await,
        Err(StoreError::NotFound)
    ));
    store.delete_dir(&p("dd/sub")).await.unwrap();
    assert!(!store.is_dir(&p("dd/sub")).await.unwrap());
    store.delete_dir(&p("dd")).await.unwrap();
    assert!(!store.is_dir(&p("dd")).await.unwrap());
    assert!(matches!(
        store.delete_dir(&p("dd")).await,
        Err(StoreError::NotFound)
    ));
    store.delete(&p("file"), None).await.unwrap();
}

/// `dir_modified`, one behaviour for both stores: a folder made by `create_dir` has a time no
/// earlier than just before it was made (S3's ListBuckets answers it as `CreationDate`; on the
/// S3 store a common prefix has none, the marker does), a folder made by a file below it has
/// one too; a file or nothing has none. The comparison is with the clock read before, less
/// the second S3's `LastModified` may round away: a date, not a duration.
async fn folders_have_times<S: Store>(store: &S) {
    let before = SystemTime::now() - Duration::from_secs(2);
    assert!(store.create_dir(&p("timed")).await.unwrap());
    let made = store.dir_modified(&p("timed")).await.unwrap();
    assert!(made.is_some_and(|t| t >= before), "{made:?}");
    put(store, "implied/f", b"x").await.unwrap();
    let implied = store.dir_modified(&p("implied")).await.unwrap();
    assert!(implied.is_some_and(|t| t >= before), "{implied:?}");
    assert_eq!(store.dir_modified(&p("implied/f")).await.unwrap(), None);
    assert_eq!(store.dir_modified(&p("absent")).await.unwrap(), None);
    assert_eq!(store.dir_modified(&p("absent/deeper")).await.unwrap(), None);
    store.delete(&p("implied/f"), None).await.unwrap();
    // The local store keeps the emptied folder; the S3 store has nothing left there to delete.
    let _ = store.delete_dir(&p("implied")).await;
    store.delete_dir(&p("timed")).await.unwrap();
}

/// Names with spaces, `+`, `%` and non-ASCII letters, files and folders, are listed as they
/// were stored (an S3 listing asked with `encoding-type=url` comes back encoded: `z+1.txt`).
async fn names_are_listed_as_stored<S: Store>(store: &S) {
    let names = ["z 1.txt", "a+b.txt", "é x%.txt", "100%25", "sp ace+/f"];
    for name in names {
        put(store, &format!("n/{name}"), b"x").await.unwrap();
    }
    let page = store
        .list_page(Some(&p("n")), None, NonZeroUsize::new(100).unwrap())
        .await
        .unwrap();
    let mut seen: Vec<(String, bool)> = page
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.is_dir))
        .collect();
    seen.sort();
    let mut want: Vec<(String, bool)> = vec![
        ("100%25".into(), false),
        ("a+b.txt".into(), false),
        ("sp ace+".into(), true),
        ("z 1.txt".into(), false),
        ("é x%.txt".into(), false),
    ];
    want.sort();
    assert_eq!(seen, want);
    // Each listed name opens.
    for (name, dir) in &seen {
        if !dir {
            store.open(&p(&format!("n/{name}"))).await.unwrap();
        }
    }
    let inner = store
        .list_page(Some(&p("n/sp ace+")), None, NonZeroUsize::MIN)
        .await
        .unwrap();
    assert_eq!(inner.entries.len(), 1);
    assert_eq!(inner.entries[0].name, "f");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_store_through_the_interface() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    round_trip(&store).await;
    pages_visit_everything_once(&store).await;
    only_empty_folders_are_deleted(&store).await;
    folders_have_times(&store).await;
    names_are_listed_as_stored(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_through_the_interface() {
    let Some((_weed, store)) = weed_store("tenant/one").await else {
        return;
    };
    round_trip(&store).await;
    only_empty_folders_are_deleted(&store).await;
    folders_have_times(&store).await;
    names_are_listed_as_stored(&store).await;
    // Nothing of the uploads is left pending.
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}

/// `finish_writes` (a form's files waiting for their commit): an S3 upload within one part
/// keeps its bytes only while the uploads kept together hold at most one part; the next one is
/// sent at once (a multipart upload of one part, created with its SHA-256), a larger one sends
/// its last part; all commit byte-exact with their SHA-256, nothing left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_finished_uploads_hold_at_most_one_part() {
    let Some((_weed, store)) = weed_store("fin").await else {
        return;
    };
    let mib3 = 3 << 20;
    let bodies = [
        data(mib3, 1),
        data(mib3, 2),
        data(PART + 1000, 3),
        data(1000, 4),
    ];
    let mut held = 0u64;
    let mut uploads = Vec::new();
    let mut seen = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let path = p(&format!("f{i}"));
        let mut up = store
            .begin(&path, UploadOptions::default(), None)
            .await
            .unwrap();
        for chunk in body.chunks(100_000) {
            up.write(chunk).await.unwrap();
        }
        up.finish_writes(&mut held).await.unwrap();
        let pending = store.pending_multipart_keys().await.unwrap().len();
        seen.push((held, pending));
        uploads.push(up);
    }
    // Kept; sent (3 + 3 MiB pass one part); sent (past one part); kept beside the first.
    let mib3 = mib3 as u64;
    assert_eq!(seen, [(mib3, 0), (mib3, 1), (mib3, 2), (mib3 + 1000, 2)]);
    for up in uploads {
        up.commit(None).await.unwrap();
    }
    for (i, body) in bodies.iter().enumerate() {
        let path = format!("f{i}");
        assert!(read_all(&store, &path, None).await == *body, "{path}");
        let sha: [u8; 32] = Sha256::digest(body).into();
        let meta = *store.open(&p(&path)).await.unwrap().meta();
        assert_eq!(meta.sha256, Some(sha), "{path}");
    }
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}

/// Aborted, dropped, mis-digested and over-long uploads leave no object and no multipart upload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_failed_uploads_leave_nothing() {
    let Some((weed, store)) = weed_store("").await else {
        return;
    };
    let body = data(5 * PART + 123, 1);

    // Explicit abort after several parts went out.
    let mut up = store
        .begin(&p("x/aborted"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    assert!(
        !store.pending_multipart_keys().await.unwrap().is_empty(),
        "parts were sent"
    );
    up.abort().await.unwrap();
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );

    // Dropped (a client gone mid-body): aborted by a task.
    let mut up = store
        .begin(&p("x/dropped"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    drop(up);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !store.pending_multipart_keys().await.unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the dropped upload was not aborted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Forgotten (as by a process killed mid-upload): pending until a sweep aborts it; a sweep
    // of older uploads only leaves it.
    let mut up = store
        .begin(&p("x/killed"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    // Let the parts in flight land before the upload is forgotten with its tasks.
    tokio::time::sleep(Duration::from_secs(1)).await;
    std::mem::forget(up);
    assert_eq!(store.pending_multipart_keys().await.unwrap(), ["x/killed"]);
    assert_eq!(
        store
            .sweep_multipart(Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.sweep_multipart(Duration::ZERO).await.unwrap(), 1);
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );

    // Wrong digest: refused at commit, aborted.
    let wrong = ContentDigest {
        sha256: Some([0; 32]),
        sha512: None,
    };
    let options = UploadOptions {
        expected_digest: Some(wrong),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("x/wrong"), options, None).await.unwrap();
    up.write(&body).await.unwrap();
    assert!(matches!(
        up.commit(None).await,
        Err(StoreError::DigestMismatch { .. })
    ));

    // More than the announced length.
    let options = UploadOptions {
        expected_len: Some(10),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("x/long"), options, None).await.unwrap();
    assert!(matches!(
        up.write(&body).await,
        Err(StoreError::LengthMismatch { .. })
    ));
    drop(up);

    for path in ["x/aborted", "x/dropped", "x/killed", "x/wrong", "x/long"] {
        assert!(
            matches!(store.open(&p(path)).await, Err(StoreError::NotFound)),
            "{path}"
        );
    }
    let page = store
        .list_page(None, None, NonZeroUsize::MIN)
        .await
        .unwrap();
    assert!(page.entries.is_empty(), "{:?}", page.entries);
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
    drop(weed);
}

/// An announced SHA-256 is stored with a multipart object (S3 takes metadata only at creation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_announced_digest_is_stored_with_a_multipart_object() {
    let Some((_weed, store)) = weed_store("").await else {
        return;
    };
    let body = data(3 * PART + 5, 2);
    let sha: [u8; 32] = Sha256::digest(&body).into();
    let options = UploadOptions {
        expected_digest: Some(ContentDigest {
            sha256: Some(sha),
            sha512: None,
        }),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("announced"), options, None).await.unwrap();
    up.write(&body).await.unwrap();
    let done = up.commit(None).await.unwrap();
    assert_eq!(done.stored.sha256, Some(sha));
    let obj = store.open(&p("announced")).await.unwrap();
    assert_eq!(obj.meta().sha256, Some(sha));
    assert_eq!(*obj.meta(), done.stored);
}

/// `If-None-Match: *` creators racing: exactly one wins, single-part and multipart alike; an
/// `If-Match` on a version that is gone is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_conditional_creators_race_safely() {
    let Some((weed, store)) = weed_store("").await else {
        return;
    };
    let weed = &weed;
    let store = Arc::new(store);
    for (name, len) in [("single", 1000), ("multi", 2 * PART + 1)] {
        let mut tasks = Vec::new();
        for i in 0..20u8 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                let body = data(len, i);
                let mut up = store
                    .begin(&p(name), UploadOptions::default(), None)
                    .await
                    .unwrap();
                up.write(&body).await.unwrap();
                let absent = |m: Option<&weir_store::FileMeta>| m.is_none();
                (i, up.commit(Some(&absent)).await)
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                (i, Ok(_)) => winners.push(i),
                (_, Err(StoreError::PreconditionFailed)) => {}
                (_, Err(e)) => panic!("{name}: unexpected {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "{name}: winners {winners:?}");
        let stored = read_all(&*store, name, None).await;
        assert_eq!(stored, data(len, winners[0]), "{name}: the winner's bytes");
    }
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );

    // A commit lock left by a node that died mid-commit (its lease over) is taken over.
    let locks = S3Store::new(config(weed, ".weir-locks")).unwrap();
    put(&locks, "stale.bin", b"0").await.unwrap();
    let mut up = store
        .begin(&p("stale.bin"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&data(PART + 1, 5)).await.unwrap();
    let absent = |m: Option<&weir_store::FileMeta>| m.is_none();
    up.commit(Some(&absent)).await.unwrap();
    assert!(matches!(
        locks.open(&p("stale.bin")).await,
        Err(StoreError::NotFound)
    ));

    // A version that slips in after the check passed (the check itself replaces the object,
    // from another thread): the store refuses the commit (`If-Match` on the version the check
    // saw) and the delete alike; the version that slipped in stays.
    put(&*store, "v", b"one").await.unwrap();
    let mut up = store
        .begin(&p("v"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(b"three").await.unwrap();
    let slip_in = |body: &'static [u8]| {
        let store = S3Store::clone(&store);
        move |m: Option<&weir_store::FileMeta>| {
            let store = store.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(put(&store, "v", body))
                    .unwrap();
            })
            .join()
            .unwrap();
            m.is_some()
        }
    };
    let check = slip_in(b"two");
    assert!(matches!(
        up.commit(Some(&check)).await,
        Err(StoreError::PreconditionFailed)
    ));
    assert_eq!(read_all(&*store, "v", None).await, b"two");
    let check = slip_in(b"slipped in");
    assert!(matches!(
        store.delete(&p("v"), Some(&check)).await,
        Err(StoreError::PreconditionFailed)
    ));
    assert_eq!(read_all(&*store, "v", None).await, b"slipped in");
    // A check that refuses leaves the object.
    let never = |_: Option<&weir_store::FileMeta>| false;
    assert!(matches!(
        store.delete(&p("v"), Some(&never)).await,
        Err(StoreError::PreconditionFailed)
    ));
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}

/// A digest given after the body ([`StoreUpload::expect_digest`]: a trailer) is verified at
/// the commit by both stores: wrong → `DigestMismatch`, nothing stored; right → stored with
/// its SHA-256. A SHA-512 that was not computed while the bytes went by: `LocalStore` reads
/// its file back to check it, `S3Store` (which keeps no copy) refuses it at once.
async fn late_digests<S: Store>(store: &S, local: bool) {
    // Several parts on S3: the digest arrives after the multipart upload was created.
    let body = data(2 * PART + 17, 9);
    let mut sha256 = [0u8; 32];
    sha256.copy_from_slice(&Sha256::digest(&body));
    let mut sha512 = [0u8; 64];
    sha512.copy_from_slice(&sha2::Sha512::digest(&body));
    let digest = |sha256, sha512| ContentDigest { sha256, sha512 };

    let mut up = store
        .begin(&p("late/wrong"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    up.expect_digest(digest(Some([7; 32]), None)).unwrap();
    let refused = up.commit(None).await;
    assert!(
        matches!(refused, Err(StoreError::DigestMismatch { .. })),
        "{refused:?}"
    );
    assert!(matches!(
        store.open(&p("late/wrong")).await,
        Err(StoreError::NotFound)
    ));

    let mut up = store
        .begin(&p("late/right"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    up.expect_digest(digest(Some(sha256), None)).unwrap();
    let committed = up.commit(None).await.unwrap();
    assert_eq!(committed.sha256, Some(sha256));
    if !local {
        // Kept for later reads (the sidecar: no digest was known at the creation).
        let object = store.open(&p("late/right")).await.unwrap();
        assert_eq!(object.meta().sha256, Some(sha256));
    }

    let mut up = store
        .begin(&p("late/sha512"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.write(&body).await.unwrap();
    let given = up.expect_digest(digest(None, Some(sha512)));
    if local {
        given.unwrap();
        up.commit(None).await.unwrap();
    } else {
        assert!(
            matches!(given, Err(StoreError::DigestUnavailable { .. })),
            "{given:?}"
        );
        up.abort().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_digests_are_verified_by_both_stores() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    late_digests(&local, true).await;
    let Some((_weed, store)) = weed_store("late/").await else {
        return;
    };
    late_digests(&store, false).await;
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}

/// The sweeps read every page of their listings: with two keys (or uploads) a page, five
/// expired resumable uploads (a manifest and a tail each: ten keys) are all removed, and five
/// multipart uploads that a dead process left are all aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_walk_every_page() {
    use weir_store::{S3ResumableOptions, S3Resumables};
    let Some((_weed, store)) = weed_store("paged/").await else {
        return;
    };
    let store = store.with_list_page(2);
    let options = S3ResumableOptions {
        expiry: Duration::from_secs(1),
        lease: Duration::from_secs(30),
    };
    let ups = S3Resumables::new(store.clone(), options);
    for n in 0..5 {
        let path = p(&format!("r{n}.bin"));
        let (id, _) = ups.create(&path, None, None, None).await.unwrap();
        let mut append = ups.append(&id, 0, None).await.unwrap();
        append.write(b"a few bytes").await.unwrap();
        append.finish(false).await.unwrap();
    }
    let keys = ups.stored_keys().await.unwrap();
    assert_eq!(keys.len(), 10, "a manifest and a tail each: {keys:?}");
    // Past their expiry (whole seconds).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (removed, live) = ups.sweep().await.unwrap();
    assert_eq!((removed, live.len()), (5, 0));
    assert_eq!(ups.stored_keys().await.unwrap(), Vec::<String>::new());

    // Begun, a part sent, never completed nor aborted: as a killed process leaves them.
    for n in 0..5u8 {
        let path = p(&format!("orphan{n}.bin"));
        let mut up = store
            .begin(&path, UploadOptions::default(), None)
            .await
            .unwrap();
        up.write(&data(PART, n)).await.unwrap();
        std::mem::forget(up);
    }
    let pending = store.pending_multipart_keys().await.unwrap();
    assert_eq!(pending.len(), 5, "{pending:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(store.sweep_multipart(Duration::ZERO).await.unwrap(), 5);
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}

/// Server-side copies and renames (`Store::copy`, `Store::rename`), the same checks for both
/// stores: bytes, media type and SHA-256 kept (a multipart source's digest included), the
/// target's check judged (nothing changes when it refuses), the source gone after a rename.
async fn copies_and_renames<S: Store>(store: &S, atomic_rename: bool) {
    assert_eq!(S::ATOMIC_RENAME, atomic_rename);
    let big = data(2 * PART + 1, 3);
    let text = weir_store::MediaType::parse(b"text/x-test").unwrap();
    let mut up = store
        .begin(&p("cp/a b+é.bin"), UploadOptions::default(), Some(text))
        .await
        .unwrap();
    for chunk in big.chunks(100_000) {
        up.write(chunk).await.unwrap();
    }
    let source = up.commit(None).await.unwrap();
    let sha: [u8; 32] = Sha256::digest(&big).into();
    assert_eq!(source.sha256, Some(sha));

    let copied = store
        .copy(&p("cp/a b+é.bin"), &p("cp/copy"), None, CopyMeta::Source)
        .await
        .unwrap();
    assert_eq!(
        (copied.size, copied.sha256, copied.replaced),
        (big.len() as u64, Some(sha), false)
    );
    assert_eq!(read_all(store, "cp/copy", None).await, big);
    assert_eq!(read_all(store, "cp/a b+é.bin", None).await, big);
    let object = store.open(&p("cp/copy")).await.unwrap();
    assert_eq!(object.meta(), &copied.stored);
    assert_eq!(object.meta().sha256, Some(sha));
    // The local store keeps a media type where the filesystem has xattrs; a bucket always.
    if !atomic_rename || object.media_type().is_some() {
        assert_eq!(object.media_type(), Some(&text));
    }

    // A check that refuses the version at the target: nothing changes.
    put(store, "cp/other", b"other").await.unwrap();
    let absent = |meta: Option<&weir_store::FileMeta>| meta.is_none();
    for refused in [
        store
            .copy(
                &p("cp/copy"),
                &p("cp/other"),
                Some(&absent),
                CopyMeta::Source,
            )
            .await,
        store
            .rename(&p("cp/copy"), &p("cp/other"), Some(&absent))
            .await,
    ] {
        assert!(
            matches!(refused, Err(StoreError::PreconditionFailed)),
            "{refused:?}"
        );
    }
    assert_eq!(read_all(store, "cp/other", None).await, b"other");
    assert_eq!(read_all(store, "cp/copy", None).await, big);

    // A rename onto a new name, then onto a version the check accepts.
    let moved = store
        .rename(&p("cp/copy"), &p("cp/sub/moved"), None)
        .await
        .unwrap();
    assert_eq!((moved.sha256, moved.replaced), (Some(sha), false));
    assert!(matches!(
        store.open(&p("cp/copy")).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(read_all(store, "cp/sub/moved", None).await, big);
    let other = *store.open(&p("cp/other")).await.unwrap().meta();
    let is_other = |meta: Option<&weir_store::FileMeta>| meta == Some(&other);
    let over = store
        .rename(&p("cp/sub/moved"), &p("cp/other"), Some(&is_other))
        .await
        .unwrap();
    assert!(over.replaced);
    assert_eq!(read_all(store, "cp/other", None).await, big);
    assert_eq!(
        store.open(&p("cp/other")).await.unwrap().meta().sha256,
        Some(sha)
    );
    assert!(matches!(
        store.open(&p("cp/sub/moved")).await,
        Err(StoreError::NotFound)
    ));

    // Onto itself: nothing changes. Nothing at the source: not found.
    let same = store
        .rename(&p("cp/other"), &p("cp/other"), None)
        .await
        .unwrap();
    assert_eq!(same.size, big.len() as u64);
    assert_eq!(read_all(store, "cp/other", None).await, big);
    for missing in [
        store
            .copy(&p("cp/none"), &p("cp/x"), None, CopyMeta::Source)
            .await,
        store.rename(&p("cp/none"), &p("cp/x"), None).await,
    ] {
        assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
    }
    store.delete(&p("cp/other"), None).await.unwrap();
    store.delete(&p("cp/a b+é.bin"), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_and_renames_in_both_stores() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    copies_and_renames(&local, true).await;
    let Some((_weed, store)) = weed_store("copies/").await else {
        return;
    };
    copies_and_renames(&store, false).await;
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}
