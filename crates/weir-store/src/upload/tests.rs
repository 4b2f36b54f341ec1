//! Tests of [`Upload`]: the life cycle, commit's checks and order, faults at every step.

use super::*;
use crate::digest::tests::header_for;
use crate::testutil::{data, p, read, sha256, store, store_with, temps};
/// What each file and directory costs against the quota besides its bytes.
const E: u64 = crate::ENTRY_COST;
use crate::{DigestAlgorithm, Fault, FaultOp, LocalOptions, LocalStore};
use std::fs;

fn put(store: &LocalStore, path: &str, body: &[u8]) -> Committed {
    let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
    up.write(body).unwrap();
    up.commit().unwrap()
}

fn expecting(header: &str) -> UploadOptions {
    UploadOptions {
        expected_digest: Some(ContentDigest::parse(header).unwrap()),
        ..UploadOptions::default()
    }
}

#[test]
fn commit_then_read_back_byte_exact() {
    let (_dir, store) = store();
    let body = data(1_000_003, 7);
    let mut up = store
        .begin(&p("a/b/c.bin"), UploadOptions::default())
        .unwrap();
    // Uneven chunks, including an empty one.
    for chunk in body.chunks(65_537).chain([&[][..]]) {
        up.write(chunk).unwrap();
    }
    assert_eq!(up.size(), body.len() as u64);
    assert_eq!(
        temps(store.root()).len(),
        1,
        "in progress: one temp, in the staging area"
    );
    assert!(matches!(
        store.open_file(&p("a/b/c.bin")),
        Err(StoreError::NotFound)
    ));
    let done = up.commit().unwrap();
    assert_eq!(
        done,
        Committed {
            size: body.len() as u64,
            sha256: Some(sha256(&body)),
            replaced: false,
            stored: done.stored,
        }
    );
    assert_eq!(read(&store, "a/b/c.bin"), body);
    assert!(temps(store.root()).is_empty());
    // The file and its two new directories are entries.
    assert_eq!(store.usage(), body.len() as u64 + 3 * E);
    let (_, meta) = store.open_file(&p("a/b/c.bin")).unwrap();
    if let Some(stored) = meta.sha256 {
        assert_eq!(stored, sha256(&body));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_media_type_commits_with_its_file_and_goes_with_it() {
    let (_dir, store) = store();
    let json = MediaType::parse(b"application/vnd.test+json").unwrap();
    let mut up = store.begin(&p("t"), UploadOptions::default()).unwrap();
    up.write(b"{}").unwrap();
    if !up.set_media_type(&json) {
        eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
        return;
    }
    // Not visible before the commit: the path does not exist yet.
    assert!(store.open_file(&p("t")).is_err());
    up.commit().unwrap();
    let (file, _) = store.open_file(&p("t")).unwrap();
    assert_eq!(MediaType::read_from(&file), Some(json));
    // Replaced without one: the new version has none.
    drop(file);
    put(&store, "t", b"plain");
    let (file, _) = store.open_file(&p("t")).unwrap();
    assert_eq!(MediaType::read_from(&file), None);
}

#[cfg(target_os = "linux")]
#[test]
fn digest_is_stored_with_the_file_and_dropped_when_it_changes() {
    let (_dir, store) = store();
    put(&store, "f", b"hello world");
    let (_, meta) = store.open_file(&p("f")).unwrap();
    let Some(stored) = meta.sha256 else {
        eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
        return;
    };
    assert_eq!(stored, sha256(b"hello world"));
    // Changed behind the store's back: the digest is no longer reported.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(store.root().join("f"))
        .unwrap();
    f.write_all(b"!").unwrap();
    drop(f);
    assert_eq!(store.open_file(&p("f")).unwrap().1.sha256, None);
}

#[test]
fn large_uploads_are_written_back_early_and_stay_byte_exact() {
    let (_dir, store) = store_with(LocalOptions {
        early_writeback: Some(4 << 20),
        ..LocalOptions::default()
    });
    let body = data(13 << 20, 9);
    let mut up = store.begin(&p("big"), UploadOptions::default()).unwrap();
    for chunk in body.chunks(300_001) {
        up.write(chunk).unwrap();
    }
    // Ranges up to 1 MiB behind the writer, every 4 MiB: 0..4, 4..8, then 8..12 MiB.
    let queued = if crate::sys::EARLY_WRITEBACK { 3 } else { 0 };
    assert_eq!(store.shared().flusher.queued(), queued);
    assert_eq!(up.commit().unwrap().sha256, Some(sha256(&body)));
    assert_eq!(read(&store, "big"), body);
    // Off: nothing requested.
    let (_dir, store) = store_with(LocalOptions {
        early_writeback: None,
        ..LocalOptions::default()
    });
    put(&store, "big", &body);
    assert_eq!(store.shared().flusher.queued(), 0);
}

#[test]
fn empty_upload_commits_an_empty_file() {
    let (_dir, store) = store();
    let up = store.begin(&p("empty"), UploadOptions::default()).unwrap();
    let done = up.commit().unwrap();
    assert_eq!(done.size, 0);
    assert_eq!(done.sha256, Some(sha256(b"")));
    assert_eq!(read(&store, "empty"), b"");
}

#[test]
fn replace_reports_replaced_and_frees_the_old_size() {
    let (_dir, store) = store();
    assert!(!put(&store, "f", &data(1000, 1)).replaced);
    let done = put(&store, "f", &data(300, 2));
    assert!(done.replaced);
    assert_eq!(read(&store, "f"), data(300, 2));
    assert_eq!(store.usage(), 300 + E);
}

#[test]
fn an_open_reader_keeps_the_version_it_opened() {
    use std::io::Read;
    let (_dir, store) = store();
    put(&store, "f", b"old content");
    let (mut old, _) = store.open_file(&p("f")).unwrap();
    put(&store, "f", b"new");
    let mut buf = Vec::new();
    old.read_to_end(&mut buf).unwrap();
    assert_eq!(buf, b"old content");
    assert_eq!(read(&store, "f"), b"new");
}

#[test]
fn abort_and_drop_leave_no_temp_and_no_target() {
    let (_dir, store) = store();
    let mut up = store
        .begin(&p("d/aborted"), UploadOptions::default())
        .unwrap();
    up.write(b"partial").unwrap();
    up.abort().unwrap();
    let mut up = store
        .begin(&p("d/dropped"), UploadOptions::default())
        .unwrap();
    up.write(b"partial").unwrap();
    drop(up);
    assert!(temps(store.root()).is_empty());
    for path in ["d/aborted", "d/dropped"] {
        assert!(matches!(
            store.open_file(&p(path)),
            Err(StoreError::NotFound)
        ));
    }
    assert_eq!(store.usage(), 0);
}

#[test]
fn abort_and_drop_leave_an_existing_file_untouched() {
    let (_dir, store) = store();
    put(&store, "f", b"keep me");
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"replacement").unwrap();
    drop(up);
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"replacement").unwrap();
    up.abort().unwrap();
    assert_eq!(read(&store, "f"), b"keep me");
    assert_eq!(store.usage(), 7 + E);
    assert!(temps(store.root()).is_empty());
}

#[test]
fn digest_match_with_sha256_and_sha512() {
    let (_dir, store) = store();
    let body = data(100_000, 3);
    for (s256, s512) in [(true, false), (false, true), (true, true)] {
        let opts = expecting(&header_for(&body, s256, s512));
        let mut up = store.begin(&p("f"), opts).unwrap();
        up.write(&body).unwrap();
        let done = up.commit().unwrap();
        assert_eq!(done.sha256, Some(sha256(&body)));
    }
    assert_eq!(read(&store, "f"), body);
}

#[test]
fn digest_mismatch_stores_nothing_and_keeps_the_existing_file() {
    let (_dir, store) = store();
    put(&store, "f", b"original");
    let body = b"the body";
    let other = b"the bodY";
    for (s256, s512, algorithm) in [
        (true, false, DigestAlgorithm::Sha256),
        (false, true, DigestAlgorithm::Sha512),
        (true, true, DigestAlgorithm::Sha256),
    ] {
        for path in ["f", "new"] {
            let mut up = store.begin(&p(path), expecting(&header_for(other, s256, s512)));
            let up_ref = up.as_mut().unwrap();
            up_ref.write(body).unwrap();
            let err = up.unwrap().commit().unwrap_err();
            assert!(
                matches!(err, StoreError::DigestMismatch { algorithm: a } if a == algorithm),
                "{err}"
            );
        }
    }
    assert_eq!(read(&store, "f"), b"original");
    assert!(matches!(
        store.open_file(&p("new")),
        Err(StoreError::NotFound)
    ));
    assert!(temps(store.root()).is_empty());
    assert_eq!(store.usage(), 8 + E);
}

#[test]
fn sha512_only_mismatch_is_caught_even_when_sha256_matches() {
    let (_dir, store) = store();
    let body = b"payload";
    let mut d = ContentDigest::parse(&header_for(body, true, true)).unwrap();
    d.sha512.as_mut().unwrap()[0] ^= 1;
    let opts = UploadOptions {
        expected_digest: Some(d),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("f"), opts).unwrap();
    up.write(body).unwrap();
    let err = up.commit().unwrap_err();
    assert!(matches!(
        err,
        StoreError::DigestMismatch {
            algorithm: DigestAlgorithm::Sha512
        }
    ));
}

/// The zero-copy path: bytes go into `file_mut()` (as `splice` would) and are reported.
fn put_external(
    store: &LocalStore,
    path: &str,
    body: &[u8],
    opts: UploadOptions,
) -> Result<Committed, StoreError> {
    let mut up = store.begin(&p(path), opts)?;
    for chunk in body.chunks(40_000) {
        up.file_mut().write_all(chunk).unwrap();
        up.record_external_write(chunk.len() as u64)?;
    }
    up.commit()
}

#[test]
fn hash_off_with_external_writes_gives_the_right_size() {
    let (_dir, store) = store();
    let body = data(300_001, 4);
    let opts = UploadOptions {
        hash: false,
        ..UploadOptions::default()
    };
    let done = put_external(&store, "x/f", &body, opts).unwrap();
    assert_eq!(
        done,
        Committed {
            size: 300_001,
            sha256: None,
            replaced: false,
            stored: done.stored,
        }
    );
    assert_eq!(read(&store, "x/f"), body);
    assert_eq!(store.usage(), 300_001 + 2 * E);
    assert_eq!(store.open_file(&p("x/f")).unwrap().1.sha256, None);
}

#[test]
fn hash_off_with_plain_writes_reports_no_digest() {
    let (_dir, store) = store();
    let mut up = store
        .begin(
            &p("f"),
            UploadOptions {
                hash: false,
                ..Default::default()
            },
        )
        .unwrap();
    up.write(b"abc").unwrap();
    assert_eq!(up.commit().unwrap().sha256, None);
}

#[test]
fn external_writes_are_verified_by_reading_back() {
    let (_dir, store) = store();
    let body = data(600_000, 5);
    // Hashing on: the digest is still right, computed at commit.
    let done = put_external(&store, "a", &body, UploadOptions::default()).unwrap();
    assert_eq!(done.sha256, Some(sha256(&body)));
    // Hashing off but a digest expected: verified, both ways.
    let opts = UploadOptions {
        hash: false,
        ..expecting(&header_for(&body, true, true))
    };
    assert!(put_external(&store, "b", &body, opts.clone()).is_ok());
    let err = put_external(&store, "c", &data(600_000, 6), opts).unwrap_err();
    assert!(matches!(err, StoreError::DigestMismatch { .. }));
    assert!(matches!(
        store.open_file(&p("c")),
        Err(StoreError::NotFound)
    ));
    assert!(temps(store.root()).is_empty());
}

#[test]
fn supplied_digests_replace_the_read_back_while_they_cover_the_file() {
    let (_dir, store) = store();
    let body = data(600_000, 5);
    let external = |path: &str, supplied_of: &[u8], more: &[u8]| {
        let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
        up.file_mut().write_all(&body).unwrap();
        up.record_external_write(body.len() as u64).unwrap();
        let mut hashers = up.commit_hashers();
        hashers.update(supplied_of);
        up.supply_digests(hashers.finish());
        if !more.is_empty() {
            up.file_mut().write_all(more).unwrap();
            up.record_external_write(more.len() as u64).unwrap();
        }
        up.commit().unwrap()
    };
    assert_eq!(external("a", &body, b"").sha256, Some(sha256(&body)));
    // Supplied digests are trusted (the store's own assembly computes them from the bytes it
    // copies): one of other bytes is what commit keeps, so it read nothing back.
    assert_eq!(external("b", b"other", b"").sha256, Some(sha256(b"other")));
    // A write after them: they no longer cover the file, which commit reads back.
    let whole = [&body[..], b"tail"].concat();
    assert_eq!(
        external("c", b"other", b"tail").sha256,
        Some(sha256(&whole))
    );
}

#[test]
fn mixed_writes_are_hashed_whole() {
    let (_dir, store) = store();
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"inline ").unwrap();
    up.file_mut().write_all(b"external ").unwrap();
    up.record_external_write(9).unwrap();
    up.write(b"inline").unwrap();
    let done = up.commit().unwrap();
    assert_eq!(done.sha256, Some(sha256(b"inline external inline")));
    assert_eq!(read(&store, "f"), b"inline external inline");
}

#[test]
fn unrecorded_external_writes_are_caught() {
    let (_dir, store) = store();
    let opts = UploadOptions {
        hash: false,
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("f"), opts.clone()).unwrap();
    up.file_mut().write_all(b"unreported").unwrap();
    let err = up.commit().unwrap_err();
    assert!(matches!(
        err,
        StoreError::LengthMismatch {
            expected: 0,
            actual: 10
        }
    ));
    let mut up = store.begin(&p("f"), opts).unwrap();
    up.record_external_write(5).unwrap();
    assert!(matches!(
        up.commit(),
        Err(StoreError::LengthMismatch { .. })
    ));
    assert!(matches!(
        store.open_file(&p("f")),
        Err(StoreError::NotFound)
    ));
    assert!(temps(store.root()).is_empty());
}

/// A declared length is reserved before the body comes (Linux): the temporary holds blocks for
/// all of it while its size is only what was written, and the commit stores exactly the bytes.
#[cfg(target_os = "linux")]
#[test]
fn preallocate_reserves_the_declared_length_and_keeps_the_size() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, store) = store();
    let len = 4u64 << 20;
    let opts = UploadOptions {
        expected_len: Some(len),
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("big"), opts).unwrap();
    up.write(b"head").unwrap();
    up.preallocate().unwrap();
    let meta = up.file_mut().metadata().unwrap();
    assert_eq!(meta.len(), 4);
    // A filesystem without preallocation shows nothing here (and weir writes as before).
    let probe = tempfile::tempfile_in(store.root()).unwrap();
    let flags = rustix::fs::FallocateFlags::KEEP_SIZE;
    if rustix::fs::fallocate(&probe, flags, 0, 1 << 20).is_ok() {
        assert!(
            meta.blocks() * 512 >= len,
            "{} bytes of blocks",
            meta.blocks() * 512
        );
    }
    let body = data(len as usize - 4, 3);
    up.write(&body).unwrap();
    let committed = up.commit().unwrap();
    assert_eq!(committed.size, len);
    assert_eq!(&read(&store, "big")[4..], &body[..]);
    // Under 1 MiB still to come, or no declared length: nothing to do, and no error.
    let mut small = store.begin(&p("small"), UploadOptions::default()).unwrap();
    small.preallocate().unwrap();
    assert_eq!(small.file_mut().metadata().unwrap().blocks(), 0);
}

#[test]
fn expected_len_is_enforced() {
    let (_dir, store) = store();
    let opts = UploadOptions {
        expected_len: Some(10),
        ..UploadOptions::default()
    };
    // Short: the body ended early; never committed as complete.
    let mut up = store.begin(&p("f"), opts.clone()).unwrap();
    up.write(b"12345").unwrap();
    let err = up.commit().unwrap_err();
    assert!(matches!(
        err,
        StoreError::LengthMismatch {
            expected: 10,
            actual: 5
        }
    ));
    // Long: refused at the write that goes past it, and the upload is discarded.
    let mut up = store.begin(&p("f"), opts.clone()).unwrap();
    up.write(b"1234567").unwrap();
    let err = up.write(b"89AB").unwrap_err();
    assert!(matches!(
        err,
        StoreError::LengthMismatch {
            expected: 10,
            actual: 11
        }
    ));
    assert!(temps(store.root()).is_empty());
    assert!(matches!(up.write(b"x"), Err(StoreError::Discarded)));
    assert!(matches!(up.commit(), Err(StoreError::Discarded)));
    // Exact: fine.
    let mut up = store.begin(&p("f"), opts).unwrap();
    up.write(b"1234567890").unwrap();
    assert_eq!(up.commit().unwrap().size, 10);
    assert_eq!(store.usage(), 10 + E);
}

#[test]
fn quota_is_enforced_on_writes_and_restored_on_failure() {
    // 100 bytes in two files.
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 + 2 * E),
        ..Default::default()
    });
    put(&store, "a", &[1; 60]);
    let mut up = store.begin(&p("b"), UploadOptions::default()).unwrap();
    up.write(&[2; 30]).unwrap();
    let err = up.write(&[2; 20]).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::QuotaExceeded {
                limit,
                used,
                requested: 20
            } if limit == 100 + 2 * E && used == 90 + 2 * E
        ),
        "{err}"
    );
    assert!(temps(store.root()).is_empty(), "temp removed at once");
    drop(up);
    assert_eq!(store.usage(), 60 + E);
    assert!(matches!(
        store.open_file(&p("b")),
        Err(StoreError::NotFound)
    ));
    assert_eq!(read(&store, "a"), [1; 60]);
    // What is left still fits, exactly.
    put(&store, "b", &[3; 40]);
    assert_eq!(store.usage(), 100 + 2 * E);
}

#[test]
fn quota_checks_expected_len_up_front() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 + 2 * E),
        ..Default::default()
    });
    put(&store, "a", &[1; 60]);
    let opts = |n| UploadOptions {
        expected_len: Some(n),
        ..UploadOptions::default()
    };
    let err = store.begin(&p("big"), opts(41)).unwrap_err();
    assert!(matches!(
        err,
        StoreError::QuotaExceeded { requested, .. } if requested == 41 + E
    ));
    assert!(temps(store.root()).is_empty());
    // A reservation counts while the upload runs, so a second upload cannot take it.
    let mut first = store.begin(&p("b"), opts(40)).unwrap();
    assert_eq!(store.usage(), 100 + 2 * E);
    // Not even an empty file fits now: it would be one more entry.
    assert!(matches!(
        store.begin(&p("c"), UploadOptions::default()),
        Err(StoreError::QuotaExceeded { .. })
    ));
    first.write(&[2; 40]).unwrap();
    first.commit().unwrap();
    assert_eq!(store.usage(), 100 + 2 * E);
    // A dropped reservation is given back.
    store.delete(&p("b")).unwrap();
    drop(store.begin(&p("d"), opts(40)).unwrap());
    assert_eq!(store.usage(), 60 + E);
}

#[test]
fn a_declared_length_is_reserved_a_window_ahead_of_its_bytes() {
    const MIB: u64 = 1 << 20;
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 * MIB),
        ..Default::default()
    });
    let opts = |n| UploadOptions {
        expected_len: Some(n),
        hash: false,
        ..UploadOptions::default()
    };
    // A length that cannot fit is refused before any byte, as before.
    assert!(matches!(
        store.begin(&p("huge"), opts(100 * MIB)),
        Err(StoreError::QuotaExceeded { .. })
    ));
    // One that fits holds 8 MiB ahead of its bytes, not its whole length.
    let mut slow = store.begin(&p("slow"), opts(90 * MIB)).unwrap();
    slow.preallocate().unwrap();
    slow.write(&[1; 1024]).unwrap();
    assert_eq!(store.usage(), 8 * MIB + E);
    // So a 50 MiB upload fits beside it; its window grows with its bytes, by steps.
    let mut other = store.begin(&p("other"), opts(50 * MIB)).unwrap();
    other.preallocate().unwrap();
    let piece = vec![2u8; MIB as usize];
    let mut extensions = 0;
    let mut last = store.usage();
    for _ in 0..50 {
        other.write(&piece).unwrap();
        let now = store.usage();
        let ahead = now - (8 * MIB + E) - E - other.size();
        assert!(ahead <= other.size().max(8 * MIB), "{ahead}");
        if now != last {
            extensions += 1;
            last = now;
        }
    }
    // 8 → 16 → 32 → 50 MiB: three extensions for 50 writes.
    assert_eq!(extensions, 3);
    other.commit().unwrap();
    assert_eq!(store.usage(), 50 * MIB + E + 8 * MIB + E);
    // Near the limit, the bytes that fit are still taken when the window does not fit.
    let mut written = 1024;
    let err = loop {
        match slow.write(&piece) {
            Ok(()) => written += MIB,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert!(written > 49 * MIB, "{written}");
    drop(slow);
    assert_eq!(store.usage(), 50 * MIB + E);
}

#[test]
fn quota_counts_replacements_and_deletes() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 + 2 * E),
        ..Default::default()
    });
    put(&store, "a", &[1; 70]);
    // Replacing needs room for both until the rename (the disk holds both too)...
    let mut up = store.begin(&p("a"), UploadOptions::default()).unwrap();
    assert!(matches!(
        up.write(&[2; 31]),
        Err(StoreError::QuotaExceeded { .. })
    ));
    // ...and frees the old size after it.
    put(&store, "a", &[2; 30]);
    assert_eq!(store.usage(), 30 + E);
    store.delete(&p("a")).unwrap();
    assert_eq!(store.usage(), 0);
    put(&store, "b", &[3; 100]);
}

#[test]
fn quota_covers_external_writes() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(50 + E),
        ..Default::default()
    });
    let opts = UploadOptions {
        hash: false,
        ..UploadOptions::default()
    };
    let err = put_external(&store, "f", &[0; 51], opts).unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }));
    assert!(temps(store.root()).is_empty());
    assert_eq!(store.usage(), 0);
}

fn faulty(op: FaultOp, nth: u64, raw_os_error: i32) -> (tempfile::TempDir, LocalStore) {
    store_with(LocalOptions {
        fault: Some(Fault {
            op,
            nth,
            raw_os_error,
        }),
        ..Default::default()
    })
}

#[cfg(target_os = "linux")]
#[test]
fn injected_enospc_on_write_is_no_space_and_cleans_up() {
    use rustix::io::Errno;
    // Writes 1 and 2 make the existing file; the 5th write fails.
    let (_dir, store) = faulty(FaultOp::Write, 5, Errno::NOSPC.raw_os_error());
    put(&store, "f", b"existing ");
    put(&store, "g", b"other");
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"one").unwrap();
    up.write(b"two").unwrap();
    let err = up.write(b"three").unwrap_err();
    assert!(matches!(err, StoreError::NoSpace), "{err}");
    assert!(
        temps(store.root()).is_empty(),
        "temp removed at the error, not at drop"
    );
    assert!(matches!(up.write(b"more"), Err(StoreError::Discarded)));
    assert!(matches!(up.commit(), Err(StoreError::Discarded)));
    assert_eq!(read(&store, "f"), b"existing ");
    assert_eq!(store.usage(), 14 + 2 * E);
}

#[cfg(target_os = "linux")]
#[test]
fn injected_edquot_on_fsync_is_no_space_and_cleans_up() {
    use rustix::io::Errno;
    let (_dir, store) = faulty(FaultOp::SyncFile, 2, Errno::DQUOT.raw_os_error());
    put(&store, "f", b"existing");
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"replacement").unwrap();
    assert!(matches!(up.commit(), Err(StoreError::NoSpace)));
    assert!(temps(store.root()).is_empty());
    assert_eq!(read(&store, "f"), b"existing");
    assert_eq!(store.usage(), 8 + E);
}

#[cfg(target_os = "linux")]
#[test]
fn injected_eio_on_fsync_is_an_io_error() {
    use rustix::io::Errno;
    let (_dir, store) = faulty(FaultOp::SyncFile, 1, Errno::IO.raw_os_error());
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(b"data").unwrap();
    let err = up.commit().unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Io {
                op: "fsync file",
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(
        store.open_file(&p("f")),
        Err(StoreError::NotFound)
    ));
    assert!(temps(store.root()).is_empty());
}

#[test]
fn abort_with_classifies_external_write_errors() {
    let (_dir, store) = store();
    let up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    let err = up.abort_with(io::ErrorKind::StorageFull.into());
    assert!(matches!(err, StoreError::NoSpace));
    let up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    let err = up.abort_with(io::ErrorKind::ConnectionReset.into());
    assert!(matches!(err, StoreError::Io { .. }));
    assert!(temps(store.root()).is_empty());
}

#[test]
fn concurrent_uploads_to_one_path_each_land_whole() {
    use std::io::Read;
    const WRITERS: u8 = 4;
    const ROUNDS: usize = 5;
    const LEN: usize = 96 * 1024;
    let (_dir, store) = store();
    let body = |writer: u8, round: usize| vec![writer * 16 + round as u8; LEN + writer as usize];
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        // A reader that must never see a mix of two uploads.
        let reader = s.spawn(|| {
            let mut seen = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut f, meta)) = store.open_file(&p("shared/f")) else {
                    continue;
                };
                let mut buf = Vec::new();
                f.read_to_end(&mut buf).unwrap();
                assert_eq!(buf.len() as u64, meta.size);
                assert!(buf.iter().all(|&b| b == buf[0]), "a mix of two uploads");
                assert_eq!(buf.len(), LEN + (buf[0] / 16) as usize);
                seen += 1;
            }
            seen
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = store.clone();
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let body = body(w, round);
                        let mut up = store
                            .begin(&p("shared/f"), UploadOptions::default())
                            .unwrap();
                        for chunk in body.chunks(8 * 1024) {
                            up.write(chunk).unwrap();
                        }
                        up.commit().unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap();
    });
    let last = read(&store, "shared/f");
    let candidates: Vec<_> = (0..WRITERS)
        .flat_map(|w| (0..ROUNDS).map(move |r| body(w, r)))
        .collect();
    assert_eq!(candidates.iter().filter(|c| **c == last).count(), 1);
    assert!(temps(store.root()).is_empty());
    assert_eq!(
        store.usage(),
        last.len() as u64 + 2 * E,
        "usage exact despite the races"
    );
}

#[test]
fn upload_and_store_can_move_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<LocalStore>();
    send::<Upload>();
}

/// Whether this process has a descriptor open on a file under `dir`.
#[cfg(target_os = "linux")]
fn open_under(dir: &std::path::Path) -> bool {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .any(|target| target != dir && target.starts_with(dir))
}

#[cfg(target_os = "linux")]
#[test]
fn space_is_given_back_only_once_the_temporary_is_unlinked_and_closed() {
    use std::sync::{Arc, Mutex};
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 + E),
        ..LocalOptions::default()
    });
    let staging = store.root().join(crate::tree::STAGING_NAME);
    // At every release: is a temporary still on disk, or still open?
    let seen = Arc::new(Mutex::new(Vec::new()));
    let probe = {
        let (seen, staging) = (seen.clone(), staging.clone());
        move || {
            let on_disk = fs::read_dir(&staging).unwrap().count();
            seen.lock().unwrap().push((on_disk, open_under(&staging)));
        }
    };
    store.shared().usage.on_release.set(probe);
    // Over the quota while writing; an explicit abort; a drop; a commit that fails.
    let mut up = store.begin(&p("a"), UploadOptions::default()).unwrap();
    up.write(&[1; 60]).unwrap();
    assert!(up.write(&[1; 60]).is_err());
    let mut up = store.begin(&p("b"), UploadOptions::default()).unwrap();
    up.write(&[2; 10]).unwrap();
    up.abort().unwrap();
    let mut up = store.begin(&p("c"), UploadOptions::default()).unwrap();
    up.write(&[3; 10]).unwrap();
    drop(up);
    let mut up = store
        .begin(
            &p("d"),
            UploadOptions {
                expected_len: Some(20),
                ..UploadOptions::default()
            },
        )
        .unwrap();
    up.write(&[4; 10]).unwrap();
    assert!(up.commit().is_err());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [(0, false); 4]);
    assert_eq!(store.usage(), 0);
}

#[test]
fn empty_files_and_directories_cost_an_entry_each() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(10 * E),
        ..LocalOptions::default()
    });
    let mut stored = 0;
    let err = loop {
        match store.begin(&p(&format!("e{stored}")), UploadOptions::default()) {
            Ok(up) => {
                up.commit().unwrap();
                stored += 1;
                assert!(
                    stored <= 10,
                    "more empty files than the quota holds entries"
                );
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert_eq!((stored, store.usage()), (10, 10 * E));

    // Directories too: a commit that needs more of them than fits creates none.
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(3 * E),
        ..LocalOptions::default()
    });
    let up = store
        .begin(&p("a/b/c/f"), UploadOptions::default())
        .unwrap();
    assert!(matches!(up.commit(), Err(StoreError::QuotaExceeded { .. })));
    assert!(store.list(None).unwrap().is_empty());
    assert_eq!(store.usage(), 0);
    let up = store.begin(&p("a/b/f"), UploadOptions::default()).unwrap();
    up.commit().unwrap();
    assert_eq!(store.usage(), 3 * E);
    // And a batch's directories are charged before anything is stored.
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(4 * E),
        ..LocalOptions::default()
    });
    let begin = |path| store.begin(&p(path), UploadOptions::default()).unwrap();
    let batch = vec![begin("n/y"), begin("n/z"), begin("m/q")];
    let err = store.commit_all(batch).unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert!(store.list(None).unwrap().is_empty());
    assert_eq!(store.usage(), 0);
    store.commit_all(vec![begin("n/y"), begin("n/z")]).unwrap();
    assert_eq!(store.usage(), 3 * E);
}

#[cfg(unix)]
#[test]
fn a_file_still_read_keeps_its_space_until_the_reader_closes_it() {
    use std::io::Read;
    // Room for 100 bytes in two files.
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(100 + 2 * E),
        ..LocalOptions::default()
    });
    put(&store, "f", &[1; 100]);
    // Deleted while read: its blocks stay on disk, and in the count, until the reader closes.
    let (mut reader, _) = store.open_file(&p("f")).unwrap();
    let (second, _) = store.open_file(&p("f")).unwrap();
    store.delete(&p("f")).unwrap();
    assert_eq!(store.usage(), 100 + E);
    let one_byte = UploadOptions {
        expected_len: Some(1),
        ..UploadOptions::default()
    };
    assert!(matches!(
        store.begin(&p("g"), one_byte),
        Err(StoreError::QuotaExceeded { .. })
    ));
    let mut body = Vec::new();
    reader.read_to_end(&mut body).unwrap();
    assert_eq!(body, [1; 100]);
    drop(reader);
    assert_eq!(store.usage(), 100 + E, "one reader is left");
    drop(second);
    assert_eq!(store.usage(), 0);

    // Replaced while read: the same.
    put(&store, "f", &[2; 50]);
    let (reader, _) = store.open_file(&p("f")).unwrap();
    let mut up = store.begin(&p("f"), UploadOptions::default()).unwrap();
    up.write(&[3; 40]).unwrap();
    up.commit().unwrap();
    assert_eq!(store.usage(), 50 + 40 + 2 * E);
    drop(reader);
    assert_eq!(store.usage(), 40 + E);
}

#[test]
fn a_digest_learnt_after_the_body_is_verified_at_commit() {
    let (_dir, store) = store();
    let body = data(300_001, 9);
    let right = ContentDigest::parse(&header_for(&body, true, true)).unwrap();
    let wrong = ContentDigest::parse(&header_for(b"other", true, true)).unwrap();
    let sha512_only = |d: ContentDigest| ContentDigest {
        sha256: None,
        sha512: d.sha512,
    };
    // (hash while writing, digest set before commit, stored)
    let cases = [
        (true, right, true),
        (true, wrong, false),
        // Only SHA-256 was computed while writing: SHA-512 comes from reading the file back.
        (true, sha512_only(right), true),
        (true, sha512_only(wrong), false),
        // Nothing was computed while writing.
        (false, right, true),
        (false, wrong, false),
    ];
    for (i, (hash, digest, stored)) in cases.into_iter().enumerate() {
        let path = format!("t{i}");
        let options = UploadOptions {
            hash,
            ..UploadOptions::default()
        };
        let mut up = store.begin(&p(&path), options).unwrap();
        for chunk in body.chunks(70_000) {
            up.write(chunk).unwrap();
        }
        up.expect_digest(digest).unwrap();
        let result = up.commit();
        if stored {
            assert!(result.is_ok(), "case {i}: {result:?}");
            assert_eq!(read(&store, &path), body);
        } else {
            assert!(
                matches!(result, Err(StoreError::DigestMismatch { .. })),
                "case {i}: {result:?}"
            );
            assert!(matches!(
                store.open_file(&p(&path)),
                Err(StoreError::NotFound)
            ));
        }
        assert!(temps(store.root()).is_empty());
    }
    // After an external write (splice), a digest set late is checked by reading back.
    let mut up = store
        .begin(
            &p("ext"),
            UploadOptions {
                hash: false,
                ..UploadOptions::default()
            },
        )
        .unwrap();
    std::io::Write::write_all(up.file_mut(), &body).unwrap();
    up.record_external_write(body.len() as u64).unwrap();
    up.expect_digest(wrong).unwrap();
    assert!(matches!(
        up.commit(),
        Err(StoreError::DigestMismatch { .. })
    ));
    // A digest given at begin is replaced member by member.
    let mut up = store
        .begin(&p("late"), expecting(&header_for(b"other", true, false)))
        .unwrap();
    up.write(&body).unwrap();
    up.expect_digest(ContentDigest {
        sha256: right.sha256,
        sha512: None,
    })
    .unwrap();
    assert!(up.commit().is_ok());
}
