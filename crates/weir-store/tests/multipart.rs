//! Multipart uploads (`MultipartStore`) held to one behaviour on both stores: `LocalMultiparts`
//! and `S3Multiparts` on SeaweedFS's `weed mini` (skipped with a loud message when `weed` is not
//! installed, failed under `WEIR_REQUIRE_TOOLS=1`). Parts out of order, replaced, copied;
//! parts named by their MD5 or a random tag; the object byte-exact with its SHA-256; each refusal storing nothing; abort and
//! sweep leaving nothing behind.

use sha2::{Digest, Sha256};
use std::time::Duration;
use weir_store::{
    CompletePart, LocalMultiparts, LocalOptions, LocalStore, MIN_PART_SIZE, MultipartError,
    MultipartMeta, MultipartStore, PartRecord, PartSeal, PartTag, PartTagHasher, S3Multiparts,
    Store, StoreError, StoreObject, StorePath, StoreUpload, UploadId, VersionCheck,
};
#[allow(dead_code)] // `config` is for tests that open a second store on the same `weed`
#[path = "support/stores.rs"]
mod stores;
use stores::{PART, read_all, weed_store};

// The parts here are S3's least: a part of `PART` bytes may be any part but the last.
const _: () = assert!(PART as u64 == MIN_PART_SIZE);

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn md5(bytes: &[u8]) -> [u8; 16] {
    md5::Md5::digest(bytes).into()
}

/// The tag of a part sent without an MD5.
fn crc_tag(bytes: &[u8]) -> PartTag {
    let mut hasher = PartTagHasher::default();
    hasher.update(bytes);
    hasher.finish()
}

/// A part sent in 100,000-byte writes; `give_md5`: the MD5 the route verified (else the store
/// reads the part back for its CRC tag).
async fn put_part<M: MultipartStore>(
    parts: &M,
    id: UploadId,
    number: u32,
    bytes: &[u8],
    give_md5: bool,
) -> Result<PartRecord, MultipartError> {
    let mut upload = parts
        .begin_part(id, number, Some(bytes.len() as u64))
        .await?;
    for chunk in bytes.chunks(100_000) {
        upload.write(chunk).await?;
    }
    let seal = PartSeal {
        tag: give_md5.then(|| PartTag::Md5(md5(bytes))),
        checksums: vec![("CRC32".into(), "AAAAAA==".into())],
    };
    parts.finish_part(id, number, upload, seal).await
}

fn named(part: &PartRecord) -> CompletePart {
    CompletePart {
        number: part.number,
        etag: format!("\"{}\"", part.etag()),
    }
}

/// What both stores do.
async fn multipart_flow<M: MultipartStore, S: Store>(parts: &M, store: &S) {
    let meta = MultipartMeta {
        media_type: weir_store::MediaType::parse(b"application/x-test"),
        metadata: vec![("color".into(), "blue".into())],
        fields: vec![("cache-control".into(), "no-cache".into())],
        checksum_algorithm: Some("CRC32".into()),
        checksum_type: None,
    };
    let up = parts.create(&p("mp/big.bin"), meta.clone()).await.unwrap();
    assert_eq!(parts.upload(up.id).await.unwrap().meta, meta);
    let one = data(PART, 1);
    let two = data(PART + 7, 2);
    let three = data(1234, 3);
    let p3 = put_part(parts, up.id, 3, &three, false).await.unwrap();
    put_part(parts, up.id, 1, &data(PART, 9), true)
        .await
        .unwrap();
    let p2 = put_part(parts, up.id, 2, &two, true).await.unwrap();
    // Part 1 again: the new bytes replace the old (named by their CRC tag this time).
    let p1 = put_part(parts, up.id, 1, &one, false).await.unwrap();
    assert_eq!((p1.tag, p3.tag), (crc_tag(&one), crc_tag(&three)));
    assert_eq!(p2.tag, PartTag::Md5(md5(&two)));
    assert_eq!(p2.checksums, vec![("CRC32".into(), "AAAAAA==".into())]);
    let page = parts.list_parts(up.id, 1, 1).await.unwrap();
    assert_eq!(
        (page.parts.as_slice(), page.truncated),
        (&[p2.clone()][..], true)
    );
    let listed = parts.list_uploads("mp/", None, 10).await.unwrap();
    assert_eq!(listed.uploads.len(), 1);
    assert!(store.open(&p("mp/big.bin")).await.is_err());

    // Refusals store nothing and keep the upload.
    let order = parts
        .complete(up.id, &[named(&p2), named(&p1)], None, None)
        .await;
    assert!(matches!(order, Err(MultipartError::InvalidPartOrder)));
    let small = put_part(parts, up.id, 5, b"tiny", true).await.unwrap();
    let too_small = parts
        .complete(
            up.id,
            &[named(&p1), named(&p2), named(&small), named(&p3)],
            None,
            None,
        )
        .await;
    assert!(matches!(too_small, Err(MultipartError::InvalidPartOrder)));
    let too_small = parts
        .complete(
            up.id,
            &[named(&p1), named(&p2), named(&p3), named(&small)],
            None,
            None,
        )
        .await;
    assert!(matches!(
        too_small,
        Err(MultipartError::EntityTooSmall { part: 3 })
    ));
    let mut wrong = named(&p2);
    wrong.etag = format!("\"{}\"", p1.etag());
    let wrong = parts
        .complete(up.id, &[named(&p1), wrong], None, None)
        .await;
    assert!(matches!(wrong, Err(MultipartError::InvalidPart(2))));
    let present: VersionCheck<'_> = &|m| m.is_some();
    let refused = parts
        .complete(up.id, &[named(&p1), named(&p2)], None, Some(present))
        .await;
    assert!(
        matches!(
            refused,
            Err(MultipartError::Store(StoreError::PreconditionFailed))
        ),
        "{refused:?}"
    );
    assert!(store.open(&p("mp/big.bin")).await.is_err());

    // UploadPartCopy of a stored object's range, as part 4.
    let source = data(300_000, 4);
    let mut src = store
        .begin(&p("mp/src"), Default::default(), None)
        .await
        .unwrap();
    src.write(&source).await.unwrap();
    src.commit(None).await.unwrap();
    let p4 = parts
        .copy_part(up.id, 4, &p("mp/src"), Some(10..200_010), None)
        .await
        .unwrap();
    assert_eq!(p4.size, 200_000);
    assert_eq!(p4.tag, crc_tag(&source[10..200_010]));

    let absent: VersionCheck<'_> = &|m| m.is_none();
    let list = [named(&p1), named(&p2), named(&p3), named(&p4)];
    let list = [list[0].clone(), list[1].clone(), list[3].clone()];
    // p3 (1234 bytes) is not the last: refused; without it the upload completes.
    let with_three = parts
        .complete(up.id, &[named(&p1), named(&p3), named(&p4)], None, None)
        .await;
    assert!(matches!(
        with_three,
        Err(MultipartError::EntityTooSmall { part: 3 })
    ));
    let done = parts
        .complete(up.id, &list, None, Some(absent))
        .await
        .unwrap();
    let whole = [&one[..], &two[..], &source[10..200_010]].concat();
    assert_eq!(read_all(store, "mp/big.bin").await, whole);
    let sha: [u8; 32] = Sha256::digest(&whole).into();
    assert_eq!(done.committed.sha256, Some(sha));
    assert_eq!(done.committed.size, whole.len() as u64);
    let object = store.open(&p("mp/big.bin")).await.unwrap();
    assert_eq!(object.meta().sha256, Some(sha));
    assert_eq!(
        object.media_type().map(|m| m.as_str()),
        Some("application/x-test")
    );
    // The metadata given at creation is the object's, from its commit on.
    let kept = object.object_meta().unwrap();
    assert_eq!(kept.get("x-amz-meta-color"), Some(&b"blue"[..]));
    assert_eq!(kept.get("cache-control"), Some(&b"no-cache"[..]));
    assert_eq!(kept.fields().count(), 2);
    // With the parts' sizes, for GetObject's `partNumber` (not a field sent back).
    let first_two = (one.len() + two.len()) as u64;
    assert_eq!(
        kept.part(3),
        weir_store::PartLookup::Found {
            start: first_two,
            len: 200_000,
            count: 3
        }
    );
    assert_eq!(kept.part(4), weir_store::PartLookup::Past { count: 3 });
    assert!(matches!(
        parts.upload(up.id).await,
        Err(MultipartError::NoSuchUpload)
    ));
    // The completion sent again gets the same answer (nothing stored again); with other parts,
    // `NoSuchUpload`.
    let again = parts.complete(up.id, &list, None, None).await.unwrap();
    let named_parts = |parts: &[PartRecord]| -> Vec<_> {
        parts.iter().map(|p| (p.number, p.tag, p.size)).collect()
    };
    assert_eq!(
        (named_parts(&again.parts), again.committed.stored),
        (named_parts(&done.parts), done.committed.stored)
    );
    assert!(matches!(
        parts.complete(up.id, &list[..2], None, None).await,
        Err(MultipartError::NoSuchUpload)
    ));

    // Abort, and a sweep of idle uploads.
    let gone = parts
        .create(&p("mp/gone"), MultipartMeta::default())
        .await
        .unwrap();
    put_part(parts, gone.id, 1, b"x", true).await.unwrap();
    parts.abort(gone.id).await.unwrap();
    assert!(matches!(
        parts.abort(gone.id).await,
        Err(MultipartError::NoSuchUpload)
    ));
    let idle = parts
        .create(&p("mp/idle"), MultipartMeta::default())
        .await
        .unwrap();
    put_part(parts, idle.id, 1, b"y", true).await.unwrap();
    assert_eq!(parts.sweep(Duration::from_secs(3600)).await.unwrap(), 0);
    // An age of zero sweeps whatever was touched last (times are kept to the second, down):
    // the idle upload and the completed one's record.
    assert_eq!(parts.sweep(Duration::ZERO).await.unwrap(), 2);
    assert!(
        parts
            .list_uploads("", None, 10)
            .await
            .unwrap()
            .uploads
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_multipart_uploads() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path(), LocalOptions::default()).unwrap();
    let parts = LocalMultiparts::open(&store).unwrap();
    multipart_flow(&parts, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_multipart_uploads() {
    let Some((_weed, store)) = weed_store("tenant").await else {
        return;
    };
    let parts = S3Multiparts::new(store.clone());
    multipart_flow(&parts, &store).await;
    // Nothing left: neither weir's objects nor the backend's multipart uploads.
    assert_eq!(parts.stored_keys().await.unwrap(), Vec::<String>::new());
    assert_eq!(
        store.pending_multipart_keys().await.unwrap(),
        Vec::<String>::new()
    );
}
