//! The local store's multipart assembly ahead of the completion runs on its own thread: parts
//! recorded in order from part 1 are copied into the object's temporary while no request
//! asks for it. Its own test binary, so that no other test's assembly holds the threads the
//! store allows (one per CPU, process-wide).

use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{Duration, Instant};
use weir_store::{
    CompletePart, LocalMultiparts, LocalStore, MIN_PART_SIZE, MultipartMeta, MultipartStore,
    PartRecord, PartSeal, StorePath, StoreUpload, UploadId,
};

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A part sent without a declared length (chunked): to a file of its own, never in place in
/// the upload's file (which a completion takes whole, with nothing to assemble ahead).
async fn put_part(parts: &LocalMultiparts, id: UploadId, number: u32, bytes: &[u8]) -> PartRecord {
    let mut upload = parts.begin_part(id, number, None).await.unwrap();
    upload.write(bytes).await.unwrap();
    parts
        .finish_part(id, number, upload, PartSeal::default())
        .await
        .unwrap()
}

/// The sizes of the upload temporaries in the staging area (the assembly's is one).
fn temporaries(root: &Path) -> Vec<u64> {
    std::fs::read_dir(root.join(".weir-staging"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".weir-upload-"))
        .map(|e| e.metadata().unwrap().len())
        .collect()
}

#[tokio::test]
async fn recorded_parts_are_assembled_by_a_thread_before_the_completion() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let store = LocalStore::open(&root, Default::default()).unwrap();
    let parts = LocalMultiparts::open(&store).unwrap();
    let key = StorePath::parse("ahead.bin").unwrap();
    let id = parts
        .create(&key, MultipartMeta::default())
        .await
        .unwrap()
        .id;
    let bodies = [
        data(MIN_PART_SIZE as usize, 1),
        data(MIN_PART_SIZE as usize, 2),
        data(100, 3),
    ];
    // Part 2 first: nothing is assembled until part 1 is recorded.
    let p2 = put_part(&parts, id, 2, &bodies[1]).await;
    let p1 = put_part(&parts, id, 1, &bodies[0]).await;
    let p3 = put_part(&parts, id, 3, &bodies[2]).await;
    let whole = bodies.concat();
    // No request runs now: only the assembly's thread can make its temporary the object's
    // size. The deadline only turns a thread that never ran into a failure, not a hang.
    let deadline = Instant::now() + Duration::from_secs(120);
    while temporaries(&root) != [whole.len() as u64] {
        assert!(Instant::now() < deadline, "{:?}", temporaries(&root));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listed: Vec<CompletePart> = [&p1, &p2, &p3]
        .iter()
        .map(|p| CompletePart {
            number: p.number,
            etag: format!("\"{}\"", p.etag()),
        })
        .collect();
    let done = parts.complete(id, &listed, None, None).await.unwrap();
    assert_eq!(std::fs::read(root.join("ahead.bin")).unwrap(), whole);
    let sha: [u8; 32] = Sha256::digest(&whole).into();
    assert_eq!(done.committed.sha256, Some(sha));
    assert!(temporaries(&root).is_empty());
}
