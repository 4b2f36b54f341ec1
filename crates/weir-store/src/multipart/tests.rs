//! The local store's multipart uploads: parts in any order and replaced, assembled byte-exact
//! with the object's SHA-256, parts named by their MD5 or a random tag; each refusal storing nothing; listings; abort,
//! sweep and restart giving every byte of the quota back.

use super::*;
use crate::testutil::{p, read, store, temps};
use crate::{ENTRY_COST, LocalMultiparts, LocalStore, StoreUpload};
use sha2::Digest;

/// `len` bytes of a pattern that differs per `seed`.
pub(super) fn body(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn md5(bytes: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(bytes).into()
}

/// The tag of a part sent without an MD5.
pub(super) fn crc_tag(bytes: &[u8]) -> PartTag {
    let mut hasher = PartTagHasher::default();
    hasher.update(bytes);
    hasher.finish()
}

pub(super) async fn put_part(
    parts: &LocalMultiparts,
    id: UploadId,
    number: u32,
    bytes: &[u8],
) -> Result<PartRecord, MultipartError> {
    put_part_declared(parts, id, number, bytes, Some(bytes.len() as u64)).await
}

/// A part sent without a declared length (chunked): never written in place, always to a file
/// of its own (`local/in_place.rs`), so the assembly ahead is what moves its bytes.
pub(super) async fn put_own(
    parts: &LocalMultiparts,
    id: UploadId,
    number: u32,
    bytes: &[u8],
) -> Result<PartRecord, MultipartError> {
    put_part_declared(parts, id, number, bytes, None).await
}

async fn put_part_declared(
    parts: &LocalMultiparts,
    id: UploadId,
    number: u32,
    bytes: &[u8],
    declared: Option<u64>,
) -> Result<PartRecord, MultipartError> {
    let mut upload = parts.begin_part(id, number, declared).await?;
    // In 1 MiB writes, as a body arrives.
    for chunk in bytes.chunks(1 << 20) {
        upload.write(chunk).await?;
    }
    parts
        .finish_part(id, number, upload, PartSeal::default())
        .await
}

/// A new upload of `key`, without metadata.
pub(super) async fn new_upload(parts: &LocalMultiparts, key: &str) -> MultipartUpload {
    parts
        .create(&p(key), MultipartMeta::default())
        .await
        .unwrap()
}

pub(super) fn named(part: &PartRecord) -> CompletePart {
    CompletePart {
        number: part.number,
        etag: format!("\"{}\"", part.etag()),
    }
}

pub(super) fn opened(store: &LocalStore) -> LocalMultiparts {
    LocalMultiparts::open(store).unwrap()
}

#[tokio::test]
async fn parts_in_any_order_and_replaced_complete_byte_exact() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let meta = MultipartMeta {
        media_type: crate::MediaType::parse(b"application/x-test"),
        metadata: vec![("color".into(), "blue".into())],
        fields: vec![],
        checksum_algorithm: None,
        checksum_type: None,
    };
    let up = parts.create(&p("dir/big.bin"), meta.clone()).await.unwrap();
    assert_eq!(up.id.to_string().len(), 32);
    assert_eq!(parts.upload(up.id).await.unwrap().meta, meta);

    let one = body(1, MIN_PART_SIZE as usize);
    let two = body(2, MIN_PART_SIZE as usize + 3);
    let three = body(3, 1000);
    let first = body(9, MIN_PART_SIZE as usize);
    let p3 = put_part(&parts, up.id, 3, &three).await.unwrap();
    let replaced = put_part(&parts, up.id, 1, &first).await.unwrap();
    // A part whose MD5 the route verified is named by it, as S3 names parts.
    let mut upload = parts.begin_part(up.id, 2, None).await.unwrap();
    upload.write(&two).await.unwrap();
    let seal = PartSeal {
        tag: Some(PartTag::Md5(md5(&two))),
        checksums: Vec::new(),
    };
    let p2 = parts.finish_part(up.id, 2, upload, seal).await.unwrap();
    assert_eq!(
        (p2.size, p2.tag),
        (two.len() as u64, PartTag::Md5(md5(&two)))
    );
    assert_eq!(p2.etag(), crate::multipart::hex(&md5(&two)));
    // Part 1 sent again: the new bytes replace the old, named by their CRC tag.
    let p1 = put_part(&parts, up.id, 1, &one).await.unwrap();
    assert_eq!((p1.tag, replaced.tag), (crc_tag(&one), crc_tag(&first)));
    assert!(p1.etag().starts_with("part-"));
    // And again with the same bytes: the same tag, so either answer's ETag names the part.
    assert_eq!(put_part(&parts, up.id, 1, &one).await.unwrap().tag, p1.tag);

    let page = parts.list_parts(up.id, 0, 2).await.unwrap();
    let numbers: Vec<u32> = page.parts.iter().map(|p| p.number).collect();
    assert_eq!((numbers, page.truncated), (vec![1, 2], true));
    let rest = parts.list_parts(up.id, 2, 2).await.unwrap();
    assert_eq!((rest.parts.len(), rest.truncated), (1, false));
    assert_eq!(rest.parts[0], p3);
    assert!(!store.root().join("dir/big.bin").exists());

    // The replaced bytes' tag names no part any more.
    let stale = parts
        .complete(
            up.id,
            &[named(&replaced), named(&p2), named(&p3)],
            None,
            None,
        )
        .await;
    assert!(
        matches!(stale, Err(MultipartError::InvalidPart(1))),
        "{stale:?}"
    );
    let done = parts
        .complete(up.id, &[named(&p1), named(&p2), named(&p3)], None, None)
        .await
        .unwrap();
    let whole = [one, two, three].concat();
    assert_eq!(read(&store, "dir/big.bin"), whole);
    assert_eq!(done.committed.size, whole.len() as u64);
    let sha: [u8; 32] = sha2::Sha256::digest(&whole).into();
    assert_eq!(done.committed.sha256, Some(sha));
    let (file, _) = store.open_file(&p("dir/big.bin")).unwrap();
    assert_eq!(
        crate::MediaType::read_from(&file).map(|m| m.as_str().to_owned()),
        Some("application/x-test".to_owned())
    );
    drop(file);
    // The upload is gone, and so is every byte it held: the usage is the object's.
    assert!(matches!(
        parts.upload(up.id).await,
        Err(MultipartError::NoSuchUpload)
    ));
    assert!(
        parts
            .list_uploads("", None, 10)
            .await
            .unwrap()
            .uploads
            .is_empty()
    );
    assert_eq!(store.usage(), whole.len() as u64 + 2 * ENTRY_COST);
    assert!(temps(store.root()).is_empty());
}

#[tokio::test]
async fn refused_completions_store_nothing_and_keep_the_upload() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let key = p("k");
    let mut old = store.begin(&key, Default::default()).unwrap();
    old.write(b"old").unwrap();
    old.commit().unwrap();
    let baseline = store.usage();
    let up = parts.create(&key, MultipartMeta::default()).await.unwrap();
    let small = put_part(&parts, up.id, 1, &body(1, 100)).await.unwrap();
    let big = put_part(&parts, up.id, 2, &body(2, MIN_PART_SIZE as usize))
        .await
        .unwrap();
    let last = put_part(&parts, up.id, 3, &body(3, 10)).await.unwrap();
    let wrong = CompletePart {
        number: 2,
        etag: format!("\"{}\"", small.etag()),
    };
    let missing = CompletePart {
        number: 4,
        etag: named(&last).etag,
    };
    type Case<'a> = (&'a [CompletePart], fn(&MultipartError) -> bool);
    let cases: [Case<'_>; 5] = [
        (&[named(&big), named(&small)], |e| {
            matches!(e, MultipartError::InvalidPartOrder)
        }),
        (&[named(&big), missing], |e| {
            matches!(e, MultipartError::InvalidPart(4))
        }),
        (&[wrong], |e| matches!(e, MultipartError::InvalidPart(2))),
        (&[named(&small), named(&big)], |e| {
            matches!(e, MultipartError::EntityTooSmall { part: 1 })
        }),
        (&[], |e| matches!(e, MultipartError::NoParts)),
    ];
    for (list, expected) in cases {
        let err = parts.complete(up.id, list, None, None).await.unwrap_err();
        assert!(expected(&err), "{err:?}");
        assert_eq!(read(&store, "k"), b"old");
    }
    // If-None-Match: * against an object there: 412, the old object and the upload kept.
    let absent: VersionCheck<'_> = &|meta| meta.is_none();
    let err = parts
        .complete(up.id, &[named(&big), named(&last)], None, Some(absent))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        MultipartError::Store(StoreError::PreconditionFailed)
    ));
    assert_eq!(read(&store, "k"), b"old");
    assert!(temps(store.root()).is_empty());
    // The upload still completes (an unnamed part is left out), or aborts to the baseline.
    let any: VersionCheck<'_> = &|meta| meta.is_some();
    let done = parts
        .complete(up.id, &[named(&big), named(&last)], None, Some(any))
        .await
        .unwrap();
    assert!(done.committed.replaced);
    assert_eq!(
        read(&store, "k"),
        [body(2, MIN_PART_SIZE as usize), body(3, 10)].concat()
    );
    let up = parts.create(&key, MultipartMeta::default()).await.unwrap();
    put_part(&parts, up.id, 1, &body(1, 100)).await.unwrap();
    parts.abort(up.id).await.unwrap();
    assert!(matches!(
        parts.abort(up.id).await,
        Err(MultipartError::NoSuchUpload)
    ));
    assert!(matches!(
        put_part(&parts, up.id, 1, b"x").await,
        Err(MultipartError::NoSuchUpload)
    ));
    let object = MIN_PART_SIZE + 10 - 3;
    assert_eq!(store.usage(), baseline + object);
}

#[tokio::test]
async fn part_numbers_sizes_and_metadata_are_checked_first() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "k").await;
    for n in [0, MAX_PART_NUMBER + 1] {
        assert!(matches!(
            parts.begin_part(up.id, n, None).await,
            Err(MultipartError::InvalidPartNumber(_))
        ));
    }
    assert!(parts.begin_part(up.id, MAX_PART_NUMBER, None).await.is_ok());
    assert!(matches!(
        parts.begin_part(up.id, 1, Some(MAX_PART_SIZE + 1)).await,
        Err(MultipartError::EntityTooLarge)
    ));
    let bad = MultipartMeta {
        metadata: vec![("a b".into(), "x".into())],
        ..Default::default()
    };
    assert!(matches!(
        parts.create(&p("k"), bad).await,
        Err(MultipartError::InvalidMetadata)
    ));
    // Not a field an object keeps, or user metadata over S3's 2 KiB: refused at creation.
    for bad in [
        MultipartMeta {
            fields: vec![("content-type".into(), "a/b".into())],
            ..Default::default()
        },
        MultipartMeta {
            metadata: vec![("big".into(), "x".repeat(crate::MAX_USER_META))],
            ..Default::default()
        },
    ] {
        assert!(matches!(
            parts.create(&p("k"), bad).await,
            Err(MultipartError::InvalidMetadata)
        ));
    }
    let other = UploadId::parse("00000000000000000000000000000000").unwrap();
    assert!(matches!(
        parts.begin_part(other, 1, None).await,
        Err(MultipartError::NoSuchUpload)
    ));
    // A key where a directory is: refused at creation, as an upload would be.
    std::fs::create_dir_all(store.root().join("d/e")).unwrap();
    assert!(
        parts
            .create(&p("d"), MultipartMeta::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_spliced_part_gets_its_md5_read_back_and_a_copied_part_its_range() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let mut src = store.begin(&p("src"), Default::default()).unwrap();
    let source = body(7, 3 << 20);
    src.write(&source).unwrap();
    src.commit().unwrap();
    let up = new_upload(&parts, "dst").await;
    // The route's own path into the file (as `splice` leaves it): bytes the store never saw.
    let bytes = body(5, MIN_PART_SIZE as usize + 1);
    let mut upload = parts
        .begin_part(up.id, 1, Some(bytes.len() as u64))
        .await
        .unwrap();
    let file = upload.file().unwrap();
    std::io::Write::write_all(file.file_mut(), &bytes).unwrap();
    file.record_external_write(bytes.len() as u64).unwrap();
    let p1 = parts
        .finish_part(up.id, 1, upload, PartSeal::default())
        .await
        .unwrap();
    assert_eq!(p1.tag, crc_tag(&bytes), "read back for its tag");
    let p2 = parts
        .copy_part(up.id, 2, &p("src"), Some(1000..2_000_000), None)
        .await
        .unwrap();
    assert_eq!(p2.tag, crc_tag(&source[1000..2_000_000]));
    assert!(matches!(
        parts
            .copy_part(up.id, 3, &p("src"), Some(0..(3 << 20) + 1), None)
            .await,
        Err(MultipartError::InvalidRange)
    ));
    let stale: VersionCheck<'_> = &|_| false;
    assert!(matches!(
        parts
            .copy_part(up.id, 3, &p("src"), None, Some(stale))
            .await,
        Err(MultipartError::Store(StoreError::PreconditionFailed))
    ));
    parts
        .complete(up.id, &[named(&p1), named(&p2)], None, None)
        .await
        .unwrap();
    assert_eq!(
        read(&store, "dst"),
        [&bytes[..], &source[1000..2_000_000]].concat()
    );
}

#[tokio::test]
async fn uploads_are_listed_by_key_then_id_with_a_prefix_and_markers() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let mut made = Vec::new();
    for key in ["b/2", "a/1", "b/1", "b/1", "c"] {
        made.push(
            parts
                .create(&p(key), MultipartMeta::default())
                .await
                .unwrap(),
        );
    }
    made.sort_by_key(|u| (u.key.as_str().to_owned(), u.id.to_string()));
    let all = parts.list_uploads("", None, 100).await.unwrap();
    assert_eq!(all.uploads, made);
    let page = parts.list_uploads("b/", None, 2).await.unwrap();
    assert_eq!(
        (page.uploads.as_slice(), page.truncated),
        (&made[1..3], true)
    );
    let last = &page.uploads[1];
    let next = parts
        .list_uploads("b/", Some((last.key.as_str(), Some(last.id))), 2)
        .await
        .unwrap();
    assert_eq!(
        (next.uploads.as_slice(), next.truncated),
        (&made[3..4], false)
    );
    // A key marker alone skips every upload of that key.
    let after_key = parts
        .list_uploads("", Some(("b/1", None)), 100)
        .await
        .unwrap();
    assert_eq!(after_key.uploads, &made[3..]);
}

#[tokio::test]
async fn the_sweep_removes_idle_uploads_and_a_restart_keeps_the_recorded_parts() {
    let (dir, store) = store();
    let parts = opened(&store);
    let kept = new_upload(&parts, "kept").await;
    let p1 = put_part(&parts, kept.id, 1, &body(1, 4096)).await.unwrap();
    parts.settle(kept.id);
    // The upload and its part; then the part assembled ahead, in a temporary of the object
    // (an entry and its bytes), which a restart removes.
    let baseline = ENTRY_COST + (4096 + ENTRY_COST);
    assert_eq!(store.usage(), baseline + (4096 + ENTRY_COST));
    let idle = new_upload(&parts, "idle").await;
    put_part(&parts, idle.id, 1, &body(2, 100)).await.unwrap();
    parts.settle(idle.id);
    assert_eq!(parts.sweep(Duration::from_secs(3600)).await.unwrap(), 0);
    // What a crash leaves in an upload: a record's temporary and a data file no record names.
    let area = store.root().join(".weir-staging/multipart");
    let kept_dir = area.join(kept.id.to_string());
    std::fs::write(kept_dir.join("1.rec.tmp"), "partial").unwrap();
    let orphan = kept_dir.join(format!("1-{}.part", kept.id));
    std::fs::write(&orphan, "never recorded").unwrap();

    // Restart: the store and the multipart area are opened again.
    drop(parts);
    drop(store);
    let store = LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
    let parts = opened(&store);
    assert!(!orphan.exists() && !kept_dir.join("1.rec.tmp").exists());
    let listed = parts.list_parts(kept.id, 0, 10).await.unwrap();
    assert_eq!(listed.parts, vec![p1.clone()]);
    // Everything charged before the restart, counted again.
    let idle_part = 100 + ENTRY_COST;
    assert_eq!(store.usage(), baseline + ENTRY_COST + idle_part);

    // Zero idle time: every upload is swept; the usage falls back to nothing.
    assert_eq!(parts.sweep(Duration::ZERO).await.unwrap(), 2);
    assert!(std::fs::read_dir(&area).unwrap().next().is_none());
    assert_eq!(store.usage(), 0);
    assert!(matches!(
        parts.complete(kept.id, &[named(&p1)], None, None).await,
        Err(MultipartError::NoSuchUpload)
    ));
}

#[tokio::test]
async fn a_completion_keeps_its_checksum_only_over_the_parts_it_was_formed_from() {
    use crate::{Store, StoreObject};
    let (_dir, store) = store();
    let parts = opened(&store);
    let meta = MultipartMeta {
        checksum_algorithm: Some("CRC32".into()),
        checksum_type: Some("FULL_OBJECT".into()),
        ..Default::default()
    };
    let up = parts.create(&p("sum.bin"), meta.clone()).await.unwrap();
    // The upload's checksum algorithm and type survive its record.
    assert_eq!(parts.upload(up.id).await.unwrap().meta, meta);
    let seal = |value: &str| PartSeal {
        tag: None,
        checksums: vec![("CRC32".into(), value.into())],
    };
    let put = |number: u32, bytes: Vec<u8>, value: &'static str| {
        let parts = &parts;
        async move {
            let mut upload = parts.begin_part(up.id, number, None).await.unwrap();
            upload.write(&bytes).await.unwrap();
            parts
                .finish_part(up.id, number, upload, seal(value))
                .await
                .unwrap()
        }
    };
    let p1 = put(1, body(1, MIN_PART_SIZE as usize), "AAAAAQ==").await;
    let p2 = put(2, body(2, 10), "AAAAAg==").await;
    let checksum = |parts: [&str; 2]| ObjectChecksum {
        algorithm: "CRC32".into(),
        kind: "FULL_OBJECT".into(),
        value: "AAAAAw==".into(),
        parts: parts.map(str::to_owned).to_vec(),
    };
    let list = [named(&p1), named(&p2)];
    // Formed from another part 2 (replaced since): refused, nothing stored, upload kept.
    let stale = checksum(["AAAAAQ==", "AAAABB=="]);
    assert!(matches!(
        parts.complete(up.id, &list, Some(&stale), None).await,
        Err(MultipartError::InvalidPart(2))
    ));
    // Formed from one part fewer than assembled: refused too.
    let short = ObjectChecksum {
        parts: vec!["AAAAAQ==".into()],
        ..stale.clone()
    };
    assert!(matches!(
        parts.complete(up.id, &list, Some(&short), None).await,
        Err(MultipartError::InvalidPart(2))
    ));
    assert!(!store.root().join("sum.bin").exists());
    // Formed from these parts: kept with the object, the parts' values too.
    let right = checksum(["AAAAAQ==", "AAAAAg=="]);
    parts
        .complete(up.id, &list, Some(&right), None)
        .await
        .unwrap();
    let object = store.open(&p("sum.bin")).await.unwrap();
    let kept = object.object_meta().unwrap();
    assert_eq!(kept.checksum(), Some(("CRC32", "FULL_OBJECT", "AAAAAw==")));
    assert_eq!(kept.part_checksum(2), Some("AAAAAg=="));
}

/// Completes `parts` of upload `id` and checks the object: `expected`'s bytes and SHA-256.
pub(super) async fn complete_as(
    parts: &LocalMultiparts,
    store: &LocalStore,
    id: UploadId,
    listed: &[&PartRecord],
    expected: &[u8],
) {
    let listed: Vec<CompletePart> = listed.iter().map(|p| named(p)).collect();
    let done = parts.complete(id, &listed, None, None).await.unwrap();
    assert_eq!(read(store, done.upload.key.as_str()), expected);
    let sha: [u8; 32] = sha2::Sha256::digest(expected).into();
    assert_eq!(done.committed.sha256, Some(sha));
}

/// How many parts the last completion took from the assembly ahead.
pub(super) fn resumed(parts: &LocalMultiparts) -> usize {
    parts.resumed.load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::test]
async fn parts_recorded_in_order_from_part_1_are_assembled_before_the_completion() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let meta = MultipartMeta {
        media_type: crate::MediaType::parse(b"text/x-ahead"),
        metadata: vec![("color".into(), "red".into())],
        ..Default::default()
    };
    let up = parts.create(&p("ahead.bin"), meta).await.unwrap();
    let (one, two, three) = (
        body(1, MIN_PART_SIZE as usize),
        body(2, MIN_PART_SIZE as usize + 7),
        body(3, 999),
    );
    // Part 2 first: nothing can be assembled before part 1 is there.
    let p2 = put_own(&parts, up.id, 2, &two).await.unwrap();
    let usage = store.usage();
    let p1 = put_own(&parts, up.id, 1, &one).await.unwrap();
    parts.settle(up.id);
    // Parts 1 and 2 are copied into the object's temporary: one more entry and their bytes,
    // besides part 1's own file.
    let assembled = (one.len() + two.len()) as u64 + ENTRY_COST;
    assert_eq!(
        store.usage(),
        usage + (one.len() as u64 + ENTRY_COST) + assembled
    );
    let p3 = put_own(&parts, up.id, 3, &three).await.unwrap();
    parts.settle(up.id);
    complete_as(
        &parts,
        &store,
        up.id,
        &[&p1, &p2, &p3],
        &[one, two, three].concat(),
    )
    .await;
    assert_eq!(resumed(&parts), 3);
    // The object got the upload's metadata and media type, as an object assembled at once does.
    use crate::{Store, StoreObject};
    let object = store.open(&p("ahead.bin")).await.unwrap();
    assert_eq!(
        object.media_type().map(|m| m.as_str()),
        Some("text/x-ahead")
    );
    let kept = object.object_meta().unwrap();
    assert_eq!(kept.get("x-amz-meta-color"), Some(&b"red"[..]));
    assert!(temps(store.root()).is_empty());
}

#[tokio::test]
async fn an_assembly_ahead_is_used_only_when_it_starts_the_completed_parts() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let size = MIN_PART_SIZE as usize;
    // Part 2 sent again after it was assembled: the assembly names the old bytes.
    let id = new_upload(&parts, "replaced").await.id;
    let p1 = put_own(&parts, id, 1, &body(1, size)).await.unwrap();
    put_own(&parts, id, 2, &body(2, size)).await.unwrap();
    let p3 = put_own(&parts, id, 3, &body(3, 10)).await.unwrap();
    parts.settle(id);
    let p2 = put_own(&parts, id, 2, &body(4, size)).await.unwrap();
    parts.settle(id);
    let whole = [body(1, size), body(4, size), body(3, 10)].concat();
    complete_as(&parts, &store, id, &[&p1, &p2, &p3], &whole).await;
    assert_eq!(resumed(&parts), 0);

    // Part 1 sent again: a new assembly from it, which takes the parts recorded after it.
    let id = new_upload(&parts, "restarted").await.id;
    put_own(&parts, id, 1, &body(5, size)).await.unwrap();
    let p2 = put_own(&parts, id, 2, &body(6, size)).await.unwrap();
    parts.settle(id);
    let p1 = put_own(&parts, id, 1, &body(7, size)).await.unwrap();
    parts.settle(id);
    let whole = [body(7, size), body(6, size)].concat();
    complete_as(&parts, &store, id, &[&p1, &p2], &whole).await;
    assert_eq!(resumed(&parts), 2);

    // A part left out of the completion: the assembly holds it, so it is not the start.
    let id = new_upload(&parts, "left-out").await.id;
    let p1 = put_own(&parts, id, 1, &body(8, size)).await.unwrap();
    put_own(&parts, id, 2, &body(9, size)).await.unwrap();
    let p3 = put_own(&parts, id, 3, &body(10, 10)).await.unwrap();
    parts.settle(id);
    let whole = [body(8, size), body(10, 10)].concat();
    complete_as(&parts, &store, id, &[&p1, &p3], &whole).await;
    assert_eq!(resumed(&parts), 0);

    // Numbers with a gap: the assembly stops at it, and the completion goes on from there.
    let id = new_upload(&parts, "gap").await.id;
    let p1 = put_own(&parts, id, 1, &body(11, size)).await.unwrap();
    let p3 = put_own(&parts, id, 3, &body(12, size)).await.unwrap();
    let p4 = put_own(&parts, id, 4, &body(13, 10)).await.unwrap();
    parts.settle(id);
    let whole = [body(11, size), body(12, size), body(13, 10)].concat();
    complete_as(&parts, &store, id, &[&p1, &p3, &p4], &whole).await;
    assert_eq!(resumed(&parts), 1);

    // Every object's usage, and no temporary left by an assembly dropped.
    assert!(temps(store.root()).is_empty());
    let objects = [2 * size + 10, 2 * size, size + 10, 2 * size + 10];
    let bytes: usize = objects.iter().sum();
    assert_eq!(store.usage(), bytes as u64 + 4 * ENTRY_COST);
}

#[tokio::test]
async fn an_aborted_or_swept_upload_gives_back_what_its_assembly_ahead_holds() {
    let (_dir, store) = store();
    let parts = opened(&store);
    for sweep in [false, true] {
        let up = new_upload(&parts, "gone").await;
        put_part(&parts, up.id, 1, &body(1, 4096)).await.unwrap();
        put_part(&parts, up.id, 2, &body(2, 100)).await.unwrap();
        parts.settle(up.id);
        assert_eq!(temps(store.root()).len(), 1);
        if sweep {
            assert_eq!(parts.sweep(Duration::ZERO).await.unwrap(), 1);
        } else {
            parts.abort(up.id).await.unwrap();
        }
        assert!(temps(store.root()).is_empty(), "sweep: {sweep}");
        assert_eq!(store.usage(), 0, "sweep: {sweep}");
    }
}

/// Returns once a completion waits for another of the same upload. The deadline is no speed
/// check: it turns a completion that never waits (the bug) into a failure instead of a hang.
fn until_a_completion_waits(parts: &LocalMultiparts) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while parts.waiting.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the retry never waited"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test]
async fn a_completion_sent_again_while_one_runs_waits_for_it_and_gets_its_answer() {
    let (_dir, store) = store();
    let parts = std::sync::Arc::new(opened(&store));
    let up = new_upload(&parts, "retried.bin").await;
    let (one, two) = (body(1, MIN_PART_SIZE as usize), body(2, 10));
    let p1 = put_part(&parts, up.id, 1, &one).await.unwrap();
    let p2 = put_part(&parts, up.id, 2, &two).await.unwrap();
    let listed = vec![named(&p1), named(&p2)];
    // A completion is running when the client, its read timed out, sends it again.
    let claim = parts.hold_claim(up.id);
    let retry = std::thread::spawn({
        let (parts, listed) = (std::sync::Arc::clone(&parts), listed.clone());
        move || parts.complete_here(up.id, &listed)
    });
    until_a_completion_waits(&parts);
    // The first one stores the object and lets go: the retry answers what it stored.
    let first = parts.complete_held(up.id, &listed).unwrap();
    drop(claim);
    let again = retry.join().unwrap().unwrap();
    assert!(!first.repeated && again.repeated);
    // (The `done` record keeps what the answer needs: the digest and the stored file's meta.)
    assert_eq!(
        (again.committed.sha256, &again.committed.stored),
        (first.committed.sha256, &first.committed.stored)
    );
    assert_eq!(read(&store, "retried.bin"), [one, two].concat());

    // A refused completion leaves the upload: the one that waited for it tries, and stores.
    let up = new_upload(&parts, "refused.bin").await;
    let p1 = put_part(&parts, up.id, 1, &body(3, MIN_PART_SIZE as usize))
        .await
        .unwrap();
    let listed = vec![named(&p1)];
    let claim = parts.hold_claim(up.id);
    let retry = std::thread::spawn({
        let (parts, listed) = (std::sync::Arc::clone(&parts), listed.clone());
        move || parts.complete_here(up.id, &listed)
    });
    until_a_completion_waits(&parts);
    let wrong = CompletePart {
        number: 1,
        etag: "\"0123\"".into(),
    };
    assert!(matches!(
        parts.complete_held(up.id, &[wrong]),
        Err(MultipartError::InvalidPart(1))
    ));
    drop(claim);
    let stored = retry.join().unwrap().unwrap();
    assert!(!stored.repeated);
    assert_eq!(read(&store, "refused.bin"), body(3, MIN_PART_SIZE as usize));
}
