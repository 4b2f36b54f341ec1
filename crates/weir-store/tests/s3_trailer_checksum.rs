//! A checksum known only after the body (S3's PutObject trailer: `StoreUpload::keep_checksum`,
//! announced with `StoreUpload::checksum_follows`) is kept with the object whatever its size:
//! on `S3Store`, for an object of several backend parts, in the version's sidecar (the `s3`
//! module docs, "Sidecars of multipart versions"), and never given to another version. The
//! same checks hold `LocalStore` to the same behaviour. `S3Store` on SeaweedFS's `weed mini`
//! (weir-testkit's `seaweed`; skipped with a loud message when `weed` is not installed, failed
//! under `WEIR_REQUIRE_TOOLS=1`).

use sha2::{Digest, Sha256};
use weir_store::{
    ContentDigest, CopyMeta, LocalOptions, LocalStore, ObjectMeta, S3Store, Store, StoreError,
    StoreObject, StorePath, StoreUpload, UploadOptions,
};
#[allow(dead_code)] // `config` is for tests that open a second store on the same `weed`
#[path = "support/stores.rs"]
mod stores;
use stores::{PART, read_all, weed_store};

/// A CRC32 in base64, as a client's trailer sends it (its value is not checked by the store:
/// the route verified it).
const CRC: (&str, &str, &str) = ("CRC32", "FULL_OBJECT", "WgDhBQ==");

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
        .collect()
}

/// How a test upload goes: announced or not, a checksum kept after the body or not.
#[derive(Clone, Copy)]
struct Put {
    /// `checksum_follows` before the first write.
    announce: bool,
    /// `keep_checksum(CRC)` after the last write.
    checksum: bool,
    /// The SHA-256 given at begin (so the S3 store creates its upload with it).
    digest_first: bool,
}

/// Uploads `data` at `path` as `how` says; what `keep_checksum` answered (`None`: not called).
async fn put<S: Store>(store: &S, path: &str, data: &[u8], how: Put) -> Option<bool> {
    let sha256: [u8; 32] = Sha256::digest(data).into();
    let options = UploadOptions {
        expected_digest: how.digest_first.then_some(ContentDigest {
            sha256: Some(sha256),
            sha512: None,
        }),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p(path), options, None).await.unwrap();
    if how.announce {
        up.checksum_follows();
    }
    // Uneven writes, so parts are filled across write boundaries.
    for chunk in data.chunks(300_000) {
        up.write(chunk).await.unwrap();
    }
    let kept = how
        .checksum
        .then(|| up.keep_checksum(CRC.0, CRC.1, CRC.2).unwrap());
    let committed = up.commit(None).await.unwrap();
    assert_eq!(committed.sha256, Some(sha256));
    kept
}

/// The checksum a later open of `path` reports, and the SHA-256 it has.
async fn checksum<S: Store>(store: &S, path: &str) -> (Option<(String, String, String)>, [u8; 32]) {
    let object = store.open(&p(path)).await.unwrap();
    let sha256 = object.meta().sha256.expect("every version has its SHA-256");
    let meta: Option<ObjectMeta> = object.object_meta();
    let kept = meta.as_ref().and_then(ObjectMeta::checksum);
    let kept = kept.map(|(a, k, v)| (a.to_owned(), k.to_owned(), v.to_owned()));
    (kept, sha256)
}

fn crc() -> Option<(String, String, String)> {
    Some((CRC.0.into(), CRC.1.into(), CRC.2.into()))
}

/// What both stores do: a trailer's checksum kept for a small and a large object, not
/// inherited by the next version (one part, or several with no checksum), carried by a copy.
async fn trailer_checksums_are_kept<S: Store>(store: &S) {
    let trailer = Put {
        announce: true,
        checksum: true,
        digest_first: false,
    };
    let plain = Put {
        announce: false,
        checksum: false,
        digest_first: false,
    };
    let big = body(3 * PART - 1, 1);
    let big_sha: [u8; 32] = Sha256::digest(&big).into();

    assert_eq!(put(store, "t/small", b"hello", trailer).await, Some(true));
    assert_eq!(checksum(store, "t/small").await.0, crc());

    assert_eq!(put(store, "t/big", &big, trailer).await, Some(true));
    assert_eq!(checksum(store, "t/big").await, (crc(), big_sha));
    assert_eq!(read_all(store, "t/big").await, big);

    // A copy holds it in its own metadata.
    store
        .copy(&p("t/big"), &p("t/copy"), None, CopyMeta::Source)
        .await
        .unwrap();
    assert_eq!(checksum(store, "t/copy").await, (crc(), big_sha));

    // The next version, one part without a checksum, does not inherit it (on S3: the sidecar
    // left behind names the version replaced).
    put(store, "t/big", b"one part", plain).await;
    let one_sha: [u8; 32] = Sha256::digest(b"one part").into();
    assert_eq!(checksum(store, "t/big").await, (None, one_sha));

    // Several parts again with a checksum, then several parts without one: the latter's own
    // sidecar (its SHA-256 alone) replaces the former's.
    assert_eq!(put(store, "t/again", &big, trailer).await, Some(true));
    assert_eq!(checksum(store, "t/again").await.0, crc());
    let other = body(2 * PART + 3, 2);
    let other_sha: [u8; 32] = Sha256::digest(&other).into();
    put(store, "t/again", &other, plain).await;
    assert_eq!(checksum(store, "t/again").await, (None, other_sha));

    // A trailer announced but no checksum sent: none.
    let silent = Put {
        checksum: false,
        ..trailer
    };
    put(store, "t/silent", &big, silent).await;
    assert_eq!(checksum(store, "t/silent").await, (None, big_sha));

    // A checksum value the metadata could not hold is refused, nothing kept.
    let mut up = store
        .begin(&p("t/bad"), UploadOptions::default(), None)
        .await
        .unwrap();
    up.checksum_follows();
    up.write(&big).await.unwrap();
    assert!(up.keep_checksum("CRC32", "FULL_OBJECT", "").is_err());
    up.abort().await.unwrap();
    assert!(matches!(
        store.open(&p("t/bad")).await,
        Err(StoreError::NotFound)
    ));

    for path in ["t/small", "t/big", "t/copy", "t/again", "t/silent"] {
        store.delete(&p(path), None).await.unwrap();
    }
}

/// A multipart upload created with its SHA-256 (announced at begin): marked when a trailer is
/// announced, so the checksum is kept and read back; not announced, `keep_checksum` answers
/// that nothing is kept (a `HeadObject` of such a version reads no sidecar); a version marked
/// but given no checksum does not take an older version's, even one with its S3 ETag.
async fn digest_first_uploads(store: &S3Store) {
    let big = body(2 * PART + 9, 3);
    let big_sha: [u8; 32] = Sha256::digest(&big).into();
    let marked = Put {
        announce: true,
        checksum: true,
        digest_first: true,
    };
    assert_eq!(put(store, "d/marked", &big, marked).await, Some(true));
    assert_eq!(checksum(store, "d/marked").await, (crc(), big_sha));

    let unannounced = Put {
        announce: false,
        ..marked
    };
    assert_eq!(put(store, "d/marked", &big, unannounced).await, Some(false));
    assert_eq!(checksum(store, "d/marked").await, (None, big_sha));

    // Marked, no checksum sent, after a version with a checksum and the same bytes in the same
    // parts (so the same S3 ETag): it writes its own sidecar, and has no checksum.
    let silent = Put {
        checksum: false,
        ..marked
    };
    assert_eq!(put(store, "d/marked", &big, marked).await, Some(true));
    put(store, "d/marked", &big, silent).await;
    assert_eq!(checksum(store, "d/marked").await, (None, big_sha));
    store.delete(&p("d/marked"), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailer_checksums_are_kept_by_both_stores() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    // A filesystem without user xattrs refuses metadata rather than drop it.
    let mut probe = Store::begin(&local, &p("probe"), UploadOptions::default(), None)
        .await
        .unwrap();
    match probe.keep_checksum(CRC.0, CRC.1, CRC.2) {
        Err(StoreError::NoSpace) => {
            eprintln!("skipped locally: the test directory's filesystem keeps no user xattrs");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => {
            probe.abort().await.unwrap();
            trailer_checksums_are_kept(&local).await;
        }
    }
    let Some((_weed, store)) = weed_store("trailer/").await else {
        return;
    };
    trailer_checksums_are_kept(&store).await;
    digest_first_uploads(&store).await;
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}
