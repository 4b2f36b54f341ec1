//! Parts written in place (`local/in_place.rs`): a completion of parts that fill the upload's
//! file takes that file whole (the object is the very inode the parts were written into);
//! every other case copies the listed ranges, byte-exact; failed parts, refused completions
//! and restarts keep the upload whole and the quota exact.

use super::tests::{body, complete_as, named, new_upload, opened, put_own, put_part, resumed};
use super::*;
use crate::testutil::{p, store, temps};
use crate::{ENTRY_COST, LocalMultiparts, LocalStore, StoreUpload};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

const PART: usize = MIN_PART_SIZE as usize;

/// The upload's file, where its parts in place are.
fn upload_file(store: &LocalStore, id: UploadId) -> PathBuf {
    store
        .root()
        .join(".weir-staging/multipart")
        .join(id.to_string())
        .join("object")
}

/// The data files of upload `id` (parts not in place).
fn part_files(store: &LocalStore, id: UploadId) -> usize {
    let dir = upload_file(store, id).parent().unwrap().to_owned();
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_str()
                .unwrap()
                .ends_with(".part")
        })
        .count()
}

fn whole(parts: &LocalMultiparts) -> bool {
    parts.whole.load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::test]
async fn parts_in_place_become_the_object_without_a_copy() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let meta = MultipartMeta {
        media_type: crate::MediaType::parse(b"text/x-in-place"),
        metadata: vec![("color".into(), "blue".into())],
        ..Default::default()
    };
    let up = parts.create(&p("placed.bin"), meta).await.unwrap();
    let (one, two, three) = (body(1, PART), body(2, PART), body(3, 1000));
    // Out of order, as parallel clients send them: each at its place (the stride is the first
    // part's length that may be any part's but the last's: here part 2's).
    let p2 = put_part(&parts, up.id, 2, &two).await.unwrap();
    let p3 = put_part(&parts, up.id, 3, &three).await.unwrap();
    let p1 = put_part(&parts, up.id, 1, &one).await.unwrap();
    assert_eq!(part_files(&store, up.id), 0, "every part in place");
    let file = upload_file(&store, up.id);
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        2 * PART as u64 + 1000
    );
    let inode = std::fs::metadata(&file).unwrap().ino();
    // The parts and the upload are charged as parts in files of their own would be.
    let sizes = 2 * PART as u64 + 1000;
    assert_eq!(store.usage(), ENTRY_COST + sizes + 3 * ENTRY_COST);

    complete_as(
        &parts,
        &store,
        up.id,
        &[&p1, &p2, &p3],
        &[one, two, three].concat(),
    )
    .await;
    assert!(whole(&parts));
    // Not copied: the object is the file the parts were written into.
    let object = store.root().join("placed.bin");
    assert_eq!(std::fs::metadata(&object).unwrap().ino(), inode);
    assert!(!file.exists());
    use crate::{Store, StoreObject};
    let opened_object = store.open(&p("placed.bin")).await.unwrap();
    assert_eq!(
        opened_object.media_type().map(|m| m.as_str()),
        Some("text/x-in-place")
    );
    let kept = opened_object.object_meta().unwrap();
    assert_eq!(kept.get("x-amz-meta-color"), Some(&b"blue"[..]));
    assert_eq!(store.usage(), sizes + ENTRY_COST);
    assert!(temps(store.root()).is_empty());
}

#[tokio::test]
async fn parts_in_place_recorded_in_order_are_hashed_before_the_completion() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "hashed.bin").await;
    let bodies = [body(1, PART), body(2, PART), body(3, PART), body(4, 77)];
    // Part 3 before part 2: the hash stops at the gap and goes on once part 2 is there.
    let p1 = put_part(&parts, up.id, 1, &bodies[0]).await.unwrap();
    let p3 = put_part(&parts, up.id, 3, &bodies[2]).await.unwrap();
    parts.settle(up.id);
    let p2 = put_part(&parts, up.id, 2, &bodies[1]).await.unwrap();
    let p4 = put_part(&parts, up.id, 4, &bodies[3]).await.unwrap();
    parts.settle(up.id);
    // Nothing copied ahead: no temporary, only the parts' charges and the upload's.
    assert!(temps(store.root()).is_empty());
    let total = (3 * PART + 77) as u64;
    assert_eq!(store.usage(), ENTRY_COST + total + 4 * ENTRY_COST);
    complete_as(
        &parts,
        &store,
        up.id,
        &[&p1, &p2, &p3, &p4],
        &bodies.concat(),
    )
    .await;
    assert!(whole(&parts));
    assert_eq!(
        resumed(&parts),
        4,
        "every part hashed before the completion"
    );

    // Part 1 sent again after it was hashed: its new bytes are in a file of their own, the
    // hash names the old ones, and the completion copies.
    let up = new_upload(&parts, "again.bin").await;
    put_part(&parts, up.id, 1, &bodies[0]).await.unwrap();
    let p2 = put_part(&parts, up.id, 2, &bodies[3]).await.unwrap();
    parts.settle(up.id);
    let p1 = put_part(&parts, up.id, 1, &bodies[1]).await.unwrap();
    parts.settle(up.id);
    complete_as(
        &parts,
        &store,
        up.id,
        &[&p1, &p2],
        &[&bodies[1][..], &bodies[3]].concat(),
    )
    .await;
    assert!(!whole(&parts));
    assert_eq!(store.usage(), total + (PART + 77) as u64 + 2 * ENTRY_COST);
}

/// A part in place is hashed from its bytes as soon as they are all written, before its record
/// (whose fsync flushes the whole file); one that then fails to be recorded is not hashed, or
/// if it was, its assembly is dropped.
// The hash thread is held by a std mutex across a part's finish on purpose: the test runs on
// one thread, and only that other thread waits on it.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn parts_in_place_are_hashed_once_written_and_forgotten_if_not_recorded() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let part = PART as u64;
    let bodies = &[body(1, PART), body(2, PART), body(3, PART)];
    let parts = &parts;
    // Part 1 recorded and hashed, then `begin_part`'s upload of part 2 (in place after it).
    let first = |key| async move {
        let up = new_upload(parts, key).await;
        let p1 = put_part(parts, up.id, 1, &bodies[0]).await.unwrap();
        parts.settle(up.id);
        let ahead = parts.ahead_of(up.id).unwrap();
        assert_eq!(ahead.hashed(), part);
        let second = parts.begin_part(up.id, 2, Some(part)).await.unwrap();
        (up.id, p1, ahead, second)
    };

    // Parts 2 and 3 written in place, not recorded: hashed all the same.
    let (id, p1, ahead, mut second) = first("early.bin").await;
    let mut third = parts.begin_part(id, 3, Some(part)).await.unwrap();
    second.write(&bodies[1]).await.unwrap();
    third.write(&bodies[2]).await.unwrap();
    ahead.written(2, second.0.base(), part);
    ahead.written(3, third.0.base(), part);
    ahead.settle();
    assert_eq!(ahead.hashed(), 3 * part, "hashed before their records");
    // Part 2 recorded: part 3 alone is still told written.
    let p2 = parts
        .finish_part(id, 2, second, PartSeal::default())
        .await
        .unwrap();
    assert_eq!(ahead.unrecorded(), [3]);
    // Part 3 forgotten after the thread took it: the assembly is dropped (the part's bytes
    // may be written again), and the completion hashes them itself.
    ahead.unwritten(3);
    assert!(ahead.take().is_none(), "the assembly that took it dropped");
    drop(ahead);
    let p3 = parts
        .finish_part(id, 3, third, PartSeal::default())
        .await
        .unwrap();
    complete_as(parts, &store, id, &[&p1, &p2, &p3], &bodies.concat()).await;
    assert!(whole(parts), "every part in place");
    assert_eq!(resumed(parts), 0, "the dropped assembly not used");

    // Part 2 declared whole and finished short: told written, then not recorded. The thread,
    // held before it looks for part 2, finds it forgotten.
    let (id, _, ahead, mut short) = first("short.bin").await;
    let held = ahead.hold.lock().unwrap();
    short.write(&bodies[1][..PART - 1]).await.unwrap();
    let refused = parts.finish_part(id, 2, short, PartSeal::default()).await;
    assert!(refused.is_err(), "{refused:?}");
    drop(held);
    ahead.settle();
    assert_eq!(ahead.hashed(), part, "a part not recorded is not hashed");
}

#[tokio::test]
async fn parts_copied_from_an_object_go_in_place_too() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let source = body(9, 2 * PART + 123);
    let mut src = store.begin(&p("src"), Default::default()).unwrap();
    src.write(&source).unwrap();
    src.commit().unwrap();
    let up = new_upload(&parts, "copied").await;
    // UploadPartCopy of three ranges (aws-cli's copy of an object past 5 GB, in small).
    let ranges = [
        0..PART as u64,
        PART as u64..2 * PART as u64,
        2 * PART as u64..source.len() as u64,
    ];
    let mut copied = vec![None, None, None];
    for i in [1, 2, 0] {
        let part = parts
            .copy_part(
                up.id,
                i as u32 + 1,
                &p("src"),
                Some(ranges[i].clone()),
                None,
            )
            .await
            .unwrap();
        copied[i] = Some(part);
    }
    let copied: Vec<PartRecord> = copied.into_iter().map(Option::unwrap).collect();
    assert_eq!(part_files(&store, up.id), 0, "every copied part in place");
    let inode = std::fs::metadata(upload_file(&store, up.id)).unwrap().ino();
    let listed: Vec<&PartRecord> = copied.iter().collect();
    complete_as(&parts, &store, up.id, &listed, &source).await;
    assert!(whole(&parts));
    let object = store.root().join("copied");
    assert_eq!(std::fs::metadata(object).unwrap().ino(), inode);
    assert_eq!(store.usage(), 2 * (source.len() as u64 + ENTRY_COST));
}

#[tokio::test]
async fn a_short_last_part_sent_first_is_put_after_the_others_at_the_completion() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "short-last").await;
    // Part 3 first: no stride yet, so a file of its own; parts 1 and 2 in place.
    let p3 = put_part(&parts, up.id, 3, &body(3, 999)).await.unwrap();
    let p1 = put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
    let p2 = put_part(&parts, up.id, 2, &body(2, PART)).await.unwrap();
    assert_eq!(part_files(&store, up.id), 1);
    let file = upload_file(&store, up.id);
    let inode = std::fs::metadata(&file).unwrap().ino();
    let expected = [body(1, PART), body(2, PART), body(3, 999)].concat();
    // Refused first: nothing stored, and the file holds the parts in place only again (the
    // copy of part 3 after them is cut: no record names it); the retry puts part 3 in again.
    let refused: VersionCheck<'_> = &|_| false;
    let listed = [named(&p1), named(&p2), named(&p3)];
    assert!(matches!(
        parts.complete(up.id, &listed, None, Some(refused)).await,
        Err(MultipartError::Store(StoreError::PreconditionFailed))
    ));
    assert!(temps(store.root()).is_empty());
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 2 * PART as u64);
    complete_as(&parts, &store, up.id, &[&p1, &p2, &p3], &expected).await;
    assert!(whole(&parts));
    let object = store.root().join("short-last");
    assert_eq!(std::fs::metadata(object).unwrap().ino(), inode);
    assert_eq!(store.usage(), expected.len() as u64 + ENTRY_COST);

    // The same, but part 3 is sent again once the stride is known and its client goes away:
    // its slot was claimed, so the completion copies (a writer of that slot could be where
    // part 3 would go).
    let up = new_upload(&parts, "claimed").await;
    let q3 = put_part(&parts, up.id, 3, &body(4, 999)).await.unwrap();
    let q1 = put_part(&parts, up.id, 1, &body(5, PART)).await.unwrap();
    let q2 = put_part(&parts, up.id, 2, &body(6, PART)).await.unwrap();
    let mut again = parts.begin_part(up.id, 3, Some(999)).await.unwrap();
    again.write(&body(7, 500)).await.unwrap();
    drop(again);
    let expected = [body(5, PART), body(6, PART), body(4, 999)].concat();
    complete_as(&parts, &store, up.id, &[&q1, &q2, &q3], &expected).await;
    assert!(!whole(&parts));

    // Sent again and recorded in place: all in place, taken whole.
    let up = new_upload(&parts, "again").await;
    put_part(&parts, up.id, 3, &body(8, 999)).await.unwrap();
    let r1 = put_part(&parts, up.id, 1, &body(9, PART)).await.unwrap();
    let r2 = put_part(&parts, up.id, 2, &body(10, PART)).await.unwrap();
    let r3 = put_part(&parts, up.id, 3, &body(11, 999)).await.unwrap();
    assert_eq!(part_files(&store, up.id), 0);
    let expected = [body(9, PART), body(10, PART), body(11, 999)].concat();
    complete_as(&parts, &store, up.id, &[&r1, &r2, &r3], &expected).await;
    assert!(whole(&parts));
}

#[tokio::test]
async fn parts_not_filling_the_file_are_copied_from_their_places() {
    let (_dir, store) = store();
    let parts = opened(&store);
    // Part 2 sent again: its slot is taken, so the new bytes go to a file of their own and the
    // old range is given back.
    let id = new_upload(&parts, "again").await.id;
    let p1 = put_part(&parts, id, 1, &body(1, PART)).await.unwrap();
    put_part(&parts, id, 2, &body(2, PART)).await.unwrap();
    let p2 = put_part(&parts, id, 2, &body(4, PART)).await.unwrap();
    assert_eq!(part_files(&store, id), 1);
    let whole_bytes = [body(1, PART), body(4, PART)].concat();
    complete_as(&parts, &store, id, &[&p1, &p2], &whole_bytes).await;
    assert!(!whole(&parts));

    // A part left out: the file holds bytes past the listed ones.
    let id = new_upload(&parts, "left-out").await.id;
    let p1 = put_part(&parts, id, 1, &body(5, PART)).await.unwrap();
    let p2 = put_part(&parts, id, 2, &body(6, PART)).await.unwrap();
    put_part(&parts, id, 3, &body(7, 10)).await.unwrap();
    complete_as(
        &parts,
        &store,
        id,
        &[&p1, &p2],
        &[body(5, PART), body(6, PART)].concat(),
    )
    .await;
    assert!(!whole(&parts));

    // A gap in the numbers, and a part shorter than the stride before the last.
    let id = new_upload(&parts, "gap").await.id;
    let p1 = put_part(&parts, id, 1, &body(8, PART + 5)).await.unwrap();
    let p2 = put_part(&parts, id, 2, &body(9, PART)).await.unwrap();
    let p4 = put_part(&parts, id, 4, &body(10, 33)).await.unwrap();
    let expected = [body(8, PART + 5), body(9, PART), body(10, 33)].concat();
    complete_as(&parts, &store, id, &[&p1, &p2, &p4], &expected).await;
    assert!(!whole(&parts));

    // Mixed: part 1 without a declared length, in a file of its own, before part 2 in place.
    let id = new_upload(&parts, "mixed").await.id;
    let p1 = put_own(&parts, id, 1, &body(13, PART)).await.unwrap();
    let p2 = put_part(&parts, id, 2, &body(14, 77)).await.unwrap();
    complete_as(
        &parts,
        &store,
        id,
        &[&p1, &p2],
        &[body(13, PART), body(14, 77)].concat(),
    )
    .await;
    assert!(!whole(&parts));

    // The last part without a declared length: copied in after the others, the file taken
    // whole all the same.
    let id = new_upload(&parts, "last-own").await.id;
    let p1 = put_part(&parts, id, 1, &body(11, PART)).await.unwrap();
    let p2 = put_own(&parts, id, 2, &body(12, 77)).await.unwrap();
    assert_eq!(part_files(&store, id), 1);
    complete_as(
        &parts,
        &store,
        id,
        &[&p1, &p2],
        &[body(11, PART), body(12, 77)].concat(),
    )
    .await;
    assert!(whole(&parts));

    // Every object charged once, every part given back.
    let objects = [2 * PART, 2 * PART, 2 * PART + 5 + 33, PART + 77, PART + 77];
    let bytes: usize = objects.iter().sum();
    assert_eq!(store.usage(), bytes as u64 + 5 * ENTRY_COST);
    assert!(temps(store.root()).is_empty());
}

#[tokio::test]
async fn a_failed_part_in_place_gives_its_range_back_and_is_sent_again_elsewhere() {
    let (_dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "failed").await;
    let p1 = put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
    let usage = store.usage();
    // Part 2 begins in place, gets half its bytes, and its client goes away.
    let two = body(2, PART);
    let mut upload = parts.begin_part(up.id, 2, Some(PART as u64)).await.unwrap();
    upload.write(&two[..PART / 2]).await.unwrap();
    let file = upload_file(&store, up.id);
    let blocks = std::fs::metadata(&file).unwrap().blocks();
    drop(upload);
    assert_eq!(store.usage(), usage, "its reservation given back");
    // Its range is a hole again (the blocks of part 1 stay).
    let after = std::fs::metadata(&file).unwrap().blocks();
    assert!(after < blocks, "{after} blocks after, {blocks} before");
    assert!(after * 512 >= PART as u64, "part 1 kept");
    // Sent again: to a file of its own; the completion copies.
    let p2 = put_part(&parts, up.id, 2, &two).await.unwrap();
    assert_eq!(part_files(&store, up.id), 1);
    complete_as(
        &parts,
        &store,
        up.id,
        &[&p1, &p2],
        &[body(1, PART), two].concat(),
    )
    .await;
    assert!(!whole(&parts));
    assert_eq!(store.usage(), 2 * PART as u64 + ENTRY_COST);
}

#[tokio::test]
async fn a_refused_completion_and_a_restart_keep_the_parts_in_place() {
    let (dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "kept").await;
    let p1 = put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
    let p2 = put_part(&parts, up.id, 2, &body(2, PART)).await.unwrap();
    let usage = store.usage();
    // A precondition refused at the commit: nothing stored, the upload and its file whole.
    let refused: VersionCheck<'_> = &|_| false;
    let listed = [named(&p1), named(&p2)];
    assert!(matches!(
        parts.complete(up.id, &listed, None, Some(refused)).await,
        Err(MultipartError::Store(StoreError::PreconditionFailed))
    ));
    assert!(!store.root().join("kept").exists());
    assert_eq!(store.usage(), usage);
    assert!(temps(store.root()).is_empty());
    let file = upload_file(&store, up.id);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 2 * PART as u64);

    // Restart: the parts in place are counted again from their records, and read back.
    drop(parts);
    drop(store);
    let store = LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
    let parts = opened(&store);
    assert_eq!(store.usage(), usage);
    let listed = parts.list_parts(up.id, 0, 10).await.unwrap();
    assert_eq!(listed.parts, vec![p1.clone(), p2.clone()]);
    // A part sent after the restart goes to a file of its own: which slots this upload's
    // earlier run claimed is not known.
    let p3 = put_part(&parts, up.id, 3, &body(3, 10)).await.unwrap();
    assert_eq!(part_files(&store, up.id), 1);
    let expected = [body(1, PART), body(2, PART), body(3, 10)].concat();
    complete_as(&parts, &store, up.id, &[&p1, &p2, &p3], &expected).await;
    assert!(!whole(&parts));
    assert_eq!(store.usage(), expected.len() as u64 + ENTRY_COST);

    // An earlier run's parts in place that fill the file: taken whole after a restart too.
    let up = new_upload(&parts, "after").await;
    let q1 = put_part(&parts, up.id, 1, &body(4, PART)).await.unwrap();
    let q2 = put_part(&parts, up.id, 2, &body(5, 9)).await.unwrap();
    drop(parts);
    drop(store);
    let store = LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
    let parts = opened(&store);
    let expected_after = [body(4, PART), body(5, 9)].concat();
    complete_as(&parts, &store, up.id, &[&q1, &q2], &expected_after).await;
    assert!(whole(&parts));
    let objects = (expected.len() + expected_after.len()) as u64;
    assert_eq!(store.usage(), objects + 2 * ENTRY_COST);
}

#[tokio::test]
async fn an_aborted_upload_with_parts_in_place_gives_everything_back() {
    let (_dir, store) = store();
    let parts = opened(&store);
    for sweep in [false, true] {
        let up = new_upload(&parts, "gone").await;
        put_part(&parts, up.id, 2, &body(2, PART)).await.unwrap();
        put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
        assert!(upload_file(&store, up.id).exists());
        if sweep {
            assert_eq!(parts.sweep(std::time::Duration::ZERO).await.unwrap(), 1);
        } else {
            parts.abort(up.id).await.unwrap();
        }
        assert_eq!(store.usage(), 0, "sweep: {sweep}");
        assert!(!upload_file(&store, up.id).exists());
    }
}

/// A completion that stored the object but whose record was never written (the process
/// stopped between the two, or writing the record failed) left an upload whose records name
/// parts in place in a file that is gone from it, or that is the object's too. The upload is
/// completed: a completion sent again gets `NoSuchUpload` (S3's answer for an upload
/// completed) and removes it, a restart removes it, and neither charges its parts any more;
/// the object stays as stored. (The states are made by hand: what the commit's rename and the
/// unlink after it leave.)
#[tokio::test]
async fn a_completion_stored_but_not_recorded_leaves_no_upload() {
    let (dir, store) = store();
    let parts = opened(&store);
    let expected = [body(1, PART), body(2, 9)].concat();
    let mut ids = Vec::new();
    for key in ["unlinked", "at-open-unlinked", "at-open-linked"] {
        let up = new_upload(&parts, key).await;
        let p1 = put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
        let p2 = put_part(&parts, up.id, 2, &body(2, 9)).await.unwrap();
        let file = upload_file(&store, up.id);
        assert_eq!(std::fs::read(&file).unwrap(), expected);
        // The commit's rename: the file has the key's name too (not charged: made by hand).
        std::fs::hard_link(&file, store.root().join(key)).unwrap();
        ids.push((key, up.id, [named(&p1), named(&p2)]));
    }
    let charged = store.usage();

    // In this process: the name the commit's unlink takes away is gone.
    let (_, id, listed) = &ids[0];
    std::fs::remove_file(upload_file(&store, *id)).unwrap();
    assert!(matches!(
        parts.complete(*id, listed, None, None).await,
        Err(MultipartError::NoSuchUpload)
    ));
    assert!(!upload_file(&store, *id).parent().unwrap().exists());
    let one_upload = (expected.len() as u64 + ENTRY_COST) + ENTRY_COST + ENTRY_COST;
    assert_eq!(store.usage(), charged - one_upload);
    assert!(matches!(
        parts.list_parts(*id, 0, 10).await,
        Err(MultipartError::NoSuchUpload)
    ));

    // After a restart: one upload stopped after the unlink, one before it.
    std::fs::remove_file(upload_file(&store, ids[1].1)).unwrap();
    drop(parts);
    drop(store);
    let store = LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
    let parts = opened(&store);
    for (key, id, listed) in &ids {
        assert!(
            !upload_file(&store, *id).parent().unwrap().exists(),
            "{key}"
        );
        assert!(matches!(
            parts.complete(*id, listed, None, None).await,
            Err(MultipartError::NoSuchUpload)
        ));
        assert_eq!(std::fs::read(store.root().join(key)).unwrap(), expected);
    }
    // Only the three objects are charged, as the store's scan found them.
    assert_eq!(store.usage(), 3 * (expected.len() as u64 + ENTRY_COST));
}

/// Bytes a stop left in the upload's file where no record names a part (a part interrupted
/// mid-way: never charged) are given back at the next open: the gap between recorded parts
/// reads as zeros and takes no blocks, the file ends with the last recorded part. The parts
/// recorded are intact, and a completion of them after the part sent again is byte-exact.
#[tokio::test]
async fn a_restart_gives_back_what_interrupted_parts_left_in_place() {
    use std::io::{Seek, SeekFrom, Write};
    let (dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "trimmed").await;
    let p1 = put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
    let p3 = put_part(&parts, up.id, 3, &body(3, PART)).await.unwrap();
    let usage = store.usage();
    // What parts 2 and 4, cut off by a stop, wrote into their slots: no record names them.
    let file = upload_file(&store, up.id);
    let mut written = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    for slot in [1u64, 3] {
        written.seek(SeekFrom::Start(slot * PART as u64)).unwrap();
        written.write_all(&body(9, PART / 2)).unwrap();
    }
    written.sync_all().unwrap();
    drop(written);
    let blocks_before = std::fs::metadata(&file).unwrap().blocks();
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        3 * PART as u64 + PART as u64 / 2
    );

    drop(parts);
    drop(store);
    let store = LocalStore::open(dir.path().join("root"), Default::default()).unwrap();
    let parts = opened(&store);
    assert_eq!(store.usage(), usage);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        meta.len(),
        3 * PART as u64,
        "cut after the last part recorded"
    );
    let bytes = std::fs::read(&file).unwrap();
    assert!(
        bytes[PART..2 * PART].iter().all(|b| *b == 0),
        "the gap reads zeros"
    );
    assert_eq!(&bytes[2 * PART..], &body(3, PART)[..]);
    // Both the gap's and the tail's blocks went back (the filesystem allocates whole blocks).
    let half_part_blocks = (PART as u64 / 2) / 512;
    assert!(
        meta.blocks() + 2 * half_part_blocks <= blocks_before,
        "{} → {}",
        blocks_before,
        meta.blocks()
    );
    let p2 = put_part(&parts, up.id, 2, &body(2, PART)).await.unwrap();
    let expected = [body(1, PART), body(2, PART), body(3, PART)].concat();
    complete_as(&parts, &store, up.id, &[&p1, &p2, &p3], &expected).await;
}

/// Polls `fut` once.
async fn poll_once<F: Future>(mut fut: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await
}

/// What `fut` gives at its first poll: it must not wait (for a hash the test holds, it would
/// wait for ever).
async fn at_once<F: Future>(fut: F) -> F::Output {
    match poll_once(std::pin::pin!(fut)).await {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("waited"),
    }
}

// The hash thread is held by a std mutex across the parts' awaits on purpose: the test runs
// on one thread, and only that other thread waits on it.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn a_part_far_past_the_hash_is_answered_once_the_hash_comes_near_or_stops() {
    use super::ahead::Lead;
    let (_dir, store) = store();
    let mut parts = opened(&store);
    let part = PART as u64;
    parts.lead = Lead {
        within: part,
        at_most: 3 * part,
    };
    let up = new_upload(&parts, "paced.bin").await;
    let bodies: Vec<_> = (1..=6).map(|n| body(n, PART)).collect();
    // Part `n`, with its body.
    let put = |n: u32| put_part(&parts, up.id, n, &bodies[n as usize - 1]);
    let mut listed = vec![put(1).await.unwrap()];
    parts.settle(up.id);
    // (Taken after each `settle`, which waits until only the store and itself hold it.)
    let ahead = parts.ahead_of(up.id).unwrap();
    assert_eq!(ahead.hashed(), part);

    // The hash held at part 1's end: a part one part past it is answered at once, one two parts
    // past it waits, one further than `at_most` is answered at once.
    let held = ahead.hold.lock().unwrap();
    listed.push(at_once(put(3)).await.unwrap());
    ahead.start();
    let mut fourth = std::pin::pin!(put(4));
    assert!(
        poll_once(fourth.as_mut()).await.is_pending(),
        "two parts past the hash"
    );
    listed.push(at_once(put(6)).await.unwrap());
    assert!(poll_once(fourth.as_mut()).await.is_pending());
    // Let go, the hash stops at the gap (part 2): part 4 is answered, nothing more hashed.
    drop(held);
    listed.push(fourth.await.unwrap());
    drop(ahead);
    parts.settle(up.id);
    let ahead = parts.ahead_of(up.id).unwrap();
    assert_eq!(ahead.hashed(), part);

    // Held again before part 2: part 5, three parts past the hash, waits until the hash,
    // let go, has taken parts 2 and 3.
    let held = ahead.hold.lock().unwrap();
    listed.push(at_once(put(2)).await.unwrap());
    ahead.start();
    let mut fifth = std::pin::pin!(put(5));
    assert!(
        poll_once(fifth.as_mut()).await.is_pending(),
        "three parts past the hash"
    );
    drop(held);
    listed.push(fifth.await.unwrap());
    let hashed = ahead.hashed();
    assert!(hashed >= 3 * part, "answered at {hashed} bytes hashed");

    drop(ahead);
    parts.settle(up.id);
    listed.sort_by_key(|p| p.number);
    let listed: Vec<_> = listed.iter().collect();
    complete_as(&parts, &store, up.id, &listed, &bodies.concat()).await;
    assert!(whole(&parts), "every part in place, hashed ahead");
}

/// Parts in flight are paced (`pace.rs`) through the uploads `begin_part` gives: a part waits
/// before its next piece while an earlier part of its upload presses, and a piece out of the
/// hash's reach waits while the hash runs, never once it stops.
// As above: the hash thread is held by a std mutex across the pieces' polls on purpose.
// Paused time: a pressing mark lasts its hold whatever this machine's speed.
#[allow(clippy::await_holding_lock)]
#[tokio::test(start_paused = true)]
async fn parts_in_flight_go_earliest_first_and_within_reach_of_the_hash() {
    use super::pace::{PRESSING, REACH};
    let (_dir, store) = store();
    let parts = opened(&store);
    let up = new_upload(&parts, "paced.bin").await;
    let len = Some(PART as u64);
    put_part(&parts, up.id, 1, &body(1, PART)).await.unwrap();
    parts.settle(up.id);

    // Earliest first: part 3 waits while part 2 presses, and goes once part 2's body ended;
    // part 2 finding little at hand (the network's pace) holds nothing.
    let mut second = parts.begin_part(up.id, 2, len).await.unwrap();
    let mut third = parts.begin_part(up.id, 3, len).await.unwrap();
    let second = second.file().unwrap();
    at_once(second.before_piece(PRESSING - 1)).await;
    at_once(third.file().unwrap().before_piece(0)).await;
    at_once(second.before_piece(PRESSING)).await;
    {
        let mut piece = std::pin::pin!(third.file().unwrap().before_piece(0));
        assert!(
            poll_once(piece.as_mut()).await.is_pending(),
            "part 2 presses"
        );
        second.body_ended();
        assert!(poll_once(piece.as_mut()).await.is_ready());
    }

    // Within reach: the hash held before part 2 (running, at part 1's end), a part starting
    // more than REACH past it waits, one within it does not; let go, the hash stops at the
    // missing part 2, and the far part goes.
    // The hash at part 1's end (5 MiB): `near` starts 255 MiB past it (REACH less 1 MiB),
    // `far` 260 MiB past.
    let edge = u32::try_from(REACH / PART as u64).unwrap() + 2;
    assert_eq!(u64::from(edge - 2) * PART as u64, REACH - (1 << 20));
    let mut near = parts.begin_part(up.id, edge, len).await.unwrap();
    let mut far = parts.begin_part(up.id, edge + 1, len).await.unwrap();
    let ahead = parts.ahead_of(up.id).unwrap();
    let held = ahead.hold.lock().unwrap();
    ahead.start();
    let mut piece = std::pin::pin!(far.file().unwrap().before_piece(0));
    assert!(poll_once(piece.as_mut()).await.is_pending(), "out of reach");
    at_once(third.file().unwrap().before_piece(0)).await;
    at_once(near.file().unwrap().before_piece(0)).await;
    // The reach counts from where the piece starts: 1 MiB into `near`, exactly REACH past the
    // hash, at once; a byte further, it waits.
    near.write(&vec![0; 1 << 20]).await.unwrap();
    at_once(near.file().unwrap().before_piece(0)).await;
    near.write(&[0]).await.unwrap();
    let mut next = std::pin::pin!(near.file().unwrap().before_piece(0));
    assert!(
        poll_once(next.as_mut()).await.is_pending(),
        "its next piece"
    );
    drop(held);
    piece.await;
    next.await;
}
