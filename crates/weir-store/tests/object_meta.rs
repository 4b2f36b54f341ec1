//! An object's S3 metadata (`UploadOptions::object_meta`, `StoreObject::object_meta`) in both
//! stores, the same checks: stored with the commit (a single write and one over several
//! parts), never on a file written without it, carried by a copy (or replaced), a rename and
//! a change of dead properties. `S3Store` on SeaweedFS's `weed mini` (weir-testkit's
//! `seaweed`; skipped with a loud message when `weed` is not installed, failed under
//! `WEIR_REQUIRE_TOOLS=1`).

use weir_store::{
    CopyMeta, LocalOptions, LocalStore, MediaType, ObjectMeta, Store, StoreError, StoreObject,
    StorePath, StoreUpload, UploadOptions,
};
#[allow(dead_code)] // `config` is for tests that open a second store on the same `weed`
#[path = "support/stores.rs"]
mod stores;
use stores::{PART, read_all, weed_store};

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

fn meta(fields: &[(&str, &[u8])]) -> ObjectMeta {
    let mut meta = ObjectMeta::new();
    for (name, value) in fields {
        meta.push(name, value).unwrap();
    }
    meta
}

async fn put<S: Store>(store: &S, path: &str, len: usize, object_meta: Option<ObjectMeta>) {
    let options = UploadOptions {
        object_meta,
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p(path), options, None).await.unwrap();
    let body = vec![7u8; len];
    for chunk in body.chunks(1 << 20) {
        up.write(chunk).await.unwrap();
    }
    up.commit(None).await.unwrap();
}

async fn kept<S: Store>(store: &S, path: &str) -> Option<ObjectMeta> {
    store.open(&p(path)).await.unwrap().object_meta()
}

async fn metadata_goes_with_objects<S: Store>(store: &S) {
    let given = meta(&[
        ("x-amz-meta-color", b"blue"),
        ("x-amz-meta-latin", b"Hello World\xe9"),
        ("x-amz-meta-empty", b""),
        ("cache-control", b"no-cache"),
        ("content-disposition", b"attachment; filename=\"a b.txt\""),
        ("content-encoding", b"gzip"),
        ("content-language", b"de"),
        ("expires", b"Thu, 01 Jan 2099 00:00:00 GMT"),
    ]);
    // One write, and one of several parts (the S3 store's own multipart upload).
    put(store, "m/small", 10, Some(given.clone())).await;
    put(store, "m/big", 2 * PART + 1, Some(given.clone())).await;
    put(store, "m/none", 10, None).await;
    let same = |kept: Option<ObjectMeta>| {
        let mut kept: Vec<_> = kept
            .unwrap()
            .fields()
            .map(|(n, v)| (n.to_owned(), v.to_vec()))
            .collect();
        let mut want: Vec<_> = given
            .fields()
            .map(|(n, v)| (n.to_owned(), v.to_vec()))
            .collect();
        kept.sort();
        want.sort();
        assert_eq!(kept, want);
    };
    same(kept(store, "m/small").await);
    same(kept(store, "m/big").await);
    assert_eq!(read_all(store, "m/small").await, vec![7u8; 10]);
    assert_eq!(read_all(store, "m/big").await, vec![7u8; 2 * PART + 1]);
    assert_eq!(kept(store, "m/none").await, None);

    // A new version without metadata has none.
    put(store, "m/small", 3, None).await;
    assert_eq!(kept(store, "m/small").await, None);

    // A copy: the source's, or the caller's (media type and metadata).
    store
        .copy(&p("m/big"), &p("m/copy"), None, CopyMeta::Source)
        .await
        .unwrap();
    same(kept(store, "m/copy").await);
    let other = meta(&[("x-amz-meta-other", b"1")]);
    let text = MediaType::parse(b"text/x-other").unwrap();
    let replace = CopyMeta::Replace {
        media_type: Some(&text),
        object_meta: &other,
    };
    store
        .copy(&p("m/copy"), &p("m/copy"), None, replace)
        .await
        .unwrap();
    let object = store.open(&p("m/copy")).await.unwrap();
    assert_eq!(object.object_meta(), Some(other.clone()));
    if object.media_type().is_some() || !S::ATOMIC_RENAME {
        assert_eq!(object.media_type(), Some(&text));
    }
    let none = ObjectMeta::new();
    let replace = CopyMeta::Replace {
        media_type: None,
        object_meta: &none,
    };
    store
        .copy(&p("m/copy"), &p("m/bare"), None, replace)
        .await
        .unwrap();
    assert_eq!(kept(store, "m/bare").await, None);

    // A rename, and dead properties set (in a bucket: a copy of the object onto itself).
    store
        .rename(&p("m/copy"), &p("m/moved"), None)
        .await
        .unwrap();
    assert_eq!(kept(store, "m/moved").await, Some(other.clone()));
    match store.set_props(&p("m/moved"), Some(b"<p/>")).await {
        Ok(()) => assert_eq!(kept(store, "m/moved").await, Some(other)),
        Err(StoreError::NoSpace) => eprintln!("no dead properties on this filesystem"),
        Err(e) => panic!("{e}"),
    }
    // A time set (WebDAV's `X-OC-Mtime`; in a bucket: a copy of the object onto itself)
    // keeps the object's metadata, weir's own fields with it (a kept checksum).
    let mut with_checksum = given.clone();
    with_checksum
        .set_checksum("CRC32", "FULL_OBJECT", "AAAAAA==")
        .unwrap();
    put(store, "m/timed", 2 * PART + 1, Some(with_checksum)).await;
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    store.set_modified(&p("m/timed"), time).await.unwrap();
    let timed = kept(store, "m/timed").await.unwrap();
    assert_eq!(timed.checksum(), Some(("CRC32", "FULL_OBJECT", "AAAAAA==")));
    assert_eq!(timed.get("x-amz-meta-color"), Some(&b"blue"[..]));
    // Its second (locally marked within it as a client's time, `version_date.rs`).
    let modified = store.open(&p("m/timed")).await.unwrap().meta().modified;
    let secs = modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert_eq!(secs, 1_600_000_000);
    for path in ["m/small", "m/big", "m/none", "m/moved", "m/bare", "m/timed"] {
        store.delete(&p(path), None).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_goes_with_objects_in_both_stores() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    // A filesystem without user xattrs refuses metadata rather than drop it.
    let probe = local.begin(
        &p("probe"),
        UploadOptions {
            object_meta: Some(meta(&[("x-amz-meta-a", b"1")])),
            ..UploadOptions::default()
        },
    );
    match probe {
        Err(StoreError::NoSpace) => {
            eprintln!("skipped locally: the test directory's filesystem keeps no user xattrs");
        }
        Err(e) => panic!("{e}"),
        Ok(up) => {
            drop(up);
            metadata_goes_with_objects(&local).await;
        }
    }
    let Some((_weed, store)) = weed_store("meta/").await else {
        return;
    };
    metadata_goes_with_objects(&store).await;
}
