use super::*;
use crate::testutil::{data, p, read, sha256, store, store_with};
use crate::{FileMeta, LocalOptions};

const DAY: Duration = Duration::from_secs(86400);

fn reopen(dir: &tempfile::TempDir, store: LocalStore) -> (LocalStore, Resumables) {
    let root = store.root().to_owned();
    drop(store);
    let _ = dir;
    let store = LocalStore::open(&root, LocalOptions::default()).unwrap();
    let r = Resumables::open(&store, DAY).unwrap();
    (store, r)
}

#[test]
fn appends_across_requests_and_restarts_commit_the_whole_file() {
    let (dir, store) = store();
    let body = data(3 << 20, 1);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("a/f"), None, None, true).unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(&body[..1 << 20]).unwrap();
    assert!(
        matches!(appending.finish(up, false).unwrap(), AppendEnd::Incomplete(s) if s.offset == 1 << 20)
    );
    drop(r);
    let (store, r) = reopen(&dir, store);
    assert_eq!(r.state(id).unwrap().unwrap().offset, 1 << 20);
    // Cut short: the upload is dropped, the append too; what reached the file is kept.
    let (appending, mut up) = r.append(id, 1 << 20, None).unwrap();
    up.write(&body[1 << 20..2 << 20]).unwrap();
    drop(up);
    drop(appending);
    assert_eq!(r.state(id).unwrap().unwrap().offset, 2 << 20);
    assert!(
        matches!(r.append(id, 1, None), Err(ResumableError::OffsetMismatch { expected, provided: 1 }) if expected == 2 << 20)
    );
    let (appending, mut up) = r.append(id, 2 << 20, None).unwrap();
    up.write(&body[2 << 20..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!((c.size, c.sha256), (3 << 20, Some(sha256(&body))));
    assert_eq!(read(&store, "a/f"), body);
    assert!(matches!(
        r.append(id, 3 << 20, None),
        Err(ResumableError::Completed)
    ));
    // The usage is the file's, nothing more.
    assert_eq!(store.usage(), (3 << 20) + 2 * crate::ENTRY_COST);
}

#[test]
fn bytes_past_the_recorded_offset_are_cut_at_open() {
    let (dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(b"hello").unwrap();
    appending.finish(up, false).unwrap();
    drop(r);
    // A crash after writing, before the record: the file is longer than the offset.
    let data_path = store
        .root()
        .join(STAGING_NAME)
        .join(DIR_NAME)
        .join(format!("{id}.data"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&data_path)
        .unwrap();
    f.write_all(b" unacknowledged").unwrap();
    drop(f);
    let (store, r) = reopen(&dir, store);
    assert_eq!(std::fs::read(&data_path).unwrap(), b"hello");
    assert_eq!(r.state(id).unwrap().unwrap().offset, 5);
    assert_eq!(store.usage(), 5 + crate::ENTRY_COST);
}

#[test]
fn one_writer_at_a_time_and_cancel_frees_the_space() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some(1 << 20),
        ..LocalOptions::default()
    });
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, false).unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    assert!(matches!(r.append(id, 0, None), Err(ResumableError::Busy)));
    assert!(matches!(r.cancel(id), Err(ResumableError::Busy)));
    up.write(&data(512 << 10, 2)).unwrap();
    // The partial data counts against the quota.
    assert!(up.write(&data(600 << 10, 3)).is_err());
    drop(up);
    drop(appending);
    r.cancel(id).unwrap();
    assert_eq!(store.usage(), 0);
    assert!(matches!(r.state(id), Ok(None)));
}

#[test]
fn expired_uploads_are_swept() {
    let (_dir, store) = store();
    // A day's expiry, swept "now" and two days on: a slow machine cannot make the upload expire
    // before the first sweep.
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), Some(10), None, true).unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(b"12345").unwrap();
    appending.finish(up, false).unwrap();
    assert_eq!(r.sweep_at(now_secs(), false).unwrap(), Swept::default());
    let swept = r.sweep_at(now_secs() + 2 * DAY.as_secs(), false).unwrap();
    assert_eq!(
        swept,
        Swept {
            uploads: 1,
            bytes: 5
        }
    );
    assert!(matches!(r.state(id), Ok(None)));
    assert_eq!(store.usage(), 0);
}

#[test]
fn a_discarded_append_leaves_the_offset_the_file_and_the_usage_as_they_were() {
    let (_dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    let meta = Some("filename YQ==".to_owned());
    let (id, _) = r
        .create_with_metadata(&p("f"), Some(10), None, true, meta.clone())
        .unwrap();
    assert_eq!(r.state(id).unwrap().unwrap().metadata, meta);
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(b"hello").unwrap();
    appending.finish(up, false).unwrap();
    let usage = store.usage();
    let (appending, mut up) = r.append(id, 5, None).unwrap();
    up.write(b"wrong").unwrap();
    assert_eq!(appending.written_sha256(&up).unwrap(), sha256(b"wrong"));
    let state = appending.discard(up).unwrap();
    assert_eq!(state.offset, 5);
    assert_eq!(r.state(id).unwrap().unwrap().offset, 5);
    assert_eq!(store.usage(), usage);
    let (appending, mut up) = r.append(id, 5, None).unwrap();
    up.write(b"world").unwrap();
    assert_eq!(appending.written_sha256(&up).unwrap(), sha256(b"world"));
    assert!(matches!(
        appending.finish(up, true).unwrap(),
        AppendEnd::Completed(c) if c.sha256 == Some(sha256(b"helloworld"))
    ));
    assert_eq!(read(&store, "f"), b"helloworld");
    assert!(
        r.create_with_metadata(&p("g"), None, None, true, Some("a\nb".to_owned()))
            .is_err()
    );
}

#[test]
fn a_failed_append_keeps_the_upload_at_its_recorded_offset() {
    let (_dir, store) = store_with(LocalOptions {
        max_storage: Some((3 << 20) + 3 * crate::ENTRY_COST),
        ..LocalOptions::default()
    });
    let r = Resumables::open(&store, DAY).unwrap();
    let body = data(3 << 20, 4);
    let (id, _) = r.create(&p("f"), Some(3 << 20), None, true).unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(&body[..1 << 20]).unwrap();
    appending.finish(up, false).unwrap();
    let usage = store.usage();
    // Another upload takes the room; the next append passes the quota half-way.
    let mut other = store.begin(&p("g"), UploadOptions::default()).unwrap();
    other.write(&[0; 1 << 20]).unwrap();
    let (appending, mut up) = r.append(id, 1 << 20, None).unwrap();
    up.write(&body[1 << 20..(3 << 20) / 2]).unwrap();
    assert!(matches!(
        up.write(&body[(3 << 20) / 2..]),
        Err(StoreError::QuotaExceeded { .. })
    ));
    let AppendEnd::Incomplete(state) = appending.finish(up, false).unwrap() else {
        panic!("completed")
    };
    // The offset recorded before, exactly the bytes in the file, the usage as it was.
    assert_eq!(state.offset, 1 << 20);
    assert_eq!(r.state(id).unwrap().unwrap().offset, 1 << 20);
    let data_len = std::fs::metadata(
        store
            .root()
            .join(STAGING_NAME)
            .join(DIR_NAME)
            .join(format!("{id}.data")),
    )
    .unwrap()
    .len();
    assert_eq!(data_len, 1 << 20);
    assert_eq!(store.usage(), usage + (1 << 20) + crate::ENTRY_COST);
    // Once there is room, the upload continues from there, hashing on from its kept state.
    drop(other);
    let (appending, mut up) = r.append(id, 1 << 20, None).unwrap();
    assert!(up.is_hashing());
    up.write(&body[1 << 20..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!(c.sha256, Some(sha256(&body)));
    assert_eq!(read(&store, "f"), body);
}

#[test]
fn ids_are_32_hex_digits() {
    let id = UploadId::random().unwrap();
    let text = id.to_string();
    assert_eq!(text.len(), 32);
    assert_eq!(UploadId::parse(&text), Some(id));
    for bad in [
        "",
        "0",
        &text.to_uppercase(),
        &format!("{text}0"),
        "g".repeat(32).as_str(),
    ] {
        assert_eq!(UploadId::parse(bad), None, "{bad}");
    }
}

#[test]
fn incomplete_uploads_are_counted() {
    let (_dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    assert_eq!(r.incomplete().unwrap(), 0);
    let (a, _) = r.create(&p("a"), None, None, true).unwrap();
    let (b, _) = r.create(&p("b"), None, None, true).unwrap();
    assert_eq!(r.incomplete().unwrap(), 2);
    let (appending, mut up) = r.append(a, 0, None).unwrap();
    up.write(b"done").unwrap();
    assert!(matches!(
        appending.finish(up, true).unwrap(),
        AppendEnd::Completed(_)
    ));
    assert_eq!(r.incomplete().unwrap(), 1, "a completed upload is not open");
    r.cancel(b).unwrap();
    assert_eq!(r.incomplete().unwrap(), 0);
}

/// The record of `id`, as text on disk.
fn meta_path(store: &LocalStore, id: UploadId) -> std::path::PathBuf {
    store
        .root()
        .join(STAGING_NAME)
        .join(DIR_NAME)
        .join(format!("{id}.meta"))
}

/// Appends `bytes` at `offset` in odd-sized writes, checkpointing after `checkpoint_after`
/// bytes if given, then ends the request as a cut one (`finish(_, false)`, what the service
/// does when the connection goes). Returns whether the append hashed as it wrote.
fn append_cut(
    r: &Resumables,
    id: UploadId,
    offset: u64,
    bytes: &[u8],
    checkpoint_after: Option<usize>,
) -> bool {
    let (mut appending, mut up) = r.append(id, offset, None).unwrap();
    let hashing = up.is_hashing();
    for (i, chunk) in bytes.chunks(4099).enumerate() {
        up.write(chunk).unwrap();
        if checkpoint_after.is_some_and(|at| (i + 1) * 4099 >= at) {
            appending.checkpoint(&mut up).unwrap();
        }
    }
    let AppendEnd::Incomplete(s) = appending.finish(up, false).unwrap() else {
        panic!("completed")
    };
    assert_eq!(s.offset, offset + bytes.len() as u64);
    hashing
}

#[test]
fn the_hash_state_goes_with_the_offset_across_cuts_at_odd_offsets_and_restarts() {
    let (dir, store) = store();
    let body = data(1_000_003, 5);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("a/f"), None, None, true).unwrap();
    let cuts = [0, 12_345, 300_001, 777_777, body.len()];
    let (mut store, mut r) = (store, r);
    for (k, w) in cuts.windows(2).take(3).enumerate() {
        let (from, to) = (w[0], w[1]);
        // Every append after the first goes on from the kept state: it hashes as it writes.
        let hashing = append_cut(&r, id, from as u64, &body[from..to], Some((to - from) / 2));
        assert!(hashing, "append {k} at {from}");
        let state = r.state(id).unwrap().unwrap();
        assert!(state.sha256_state.is_some(), "state kept at {to}");
        // A restart in between: the state is read from the record.
        drop(r);
        (store, r) = reopen(&dir, store);
    }
    let at = cuts[3];
    let (appending, mut up) = r.append(id, at as u64, None).unwrap();
    assert!(up.is_hashing());
    up.write(&body[at..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!((c.size, c.sha256), (body.len() as u64, Some(sha256(&body))));
    assert_eq!(read(&store, "a/f"), body);
}

#[test]
fn a_missing_damaged_or_foreign_hash_state_falls_back_to_reading_the_file() {
    let (dir, store) = store();
    let body = data(500_009, 6);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    append_cut(&r, id, 0, &body[..100_003], None);
    let first = std::fs::read_to_string(meta_path(&store, id)).unwrap();
    let line = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("sha256-state "))
            .expect("a state line")
            .to_owned()
    };
    let first_state = line(&first);
    append_cut(&r, id, 100_003, &body[100_003..200_011], None);
    let path = meta_path(&store, id);
    let second = std::fs::read_to_string(&path).unwrap();
    let second_state = line(&second);
    drop(r);
    let cases = [
        // A well-formed state of other bytes (the previous offset's).
        second.replace(&second_state, &first_state),
        // One hex digit changed.
        {
            let mut bad = second_state.clone().into_bytes();
            let last = bad.len() - 1;
            bad[last] = if bad[last] == b'0' { b'1' } else { b'0' };
            second.replace(&second_state, std::str::from_utf8(&bad).unwrap())
        },
        // Cut short.
        second.replace(&second_state, &second_state[..second_state.len() - 2]),
        // Absent (a record written before states were kept).
        second.replace(&format!("{second_state}\n"), ""),
    ];
    let (mut store, mut r) = reopen(&dir, store);
    for (i, text) in cases.iter().enumerate() {
        assert_ne!(text, &second, "case {i} changes the record");
        std::fs::write(&path, text).unwrap();
        drop(r);
        (store, r) = reopen(&dir, store);
        let state = r.state(id).unwrap().expect("the record still counts");
        assert_eq!(
            (state.offset, state.sha256_state),
            (200_011, None),
            "case {i}"
        );
        let (appending, up) = r.append(id, 200_011, None).unwrap();
        assert!(!up.is_hashing(), "case {i}: no state to go on from");
        drop(up);
        drop(appending);
    }
    let (appending, mut up) = r.append(id, 200_011, None).unwrap();
    up.write(&body[200_011..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!(c.sha256, Some(sha256(&body)));
    assert_eq!(read(&store, "f"), body);
}

#[test]
fn an_append_dropped_without_its_upload_keeps_no_hash_state() {
    let (_dir, store) = store();
    let body = data(70_001, 7);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    append_cut(&r, id, 0, &body[..10_007], None);
    assert!(r.state(id).unwrap().unwrap().sha256_state.is_some());
    // The request's task dropped mid-body: the offset moves, the state cannot follow.
    let (appending, mut up) = r.append(id, 10_007, None).unwrap();
    up.write(&body[10_007..40_009]).unwrap();
    drop(up);
    drop(appending);
    let state = r.state(id).unwrap().unwrap();
    assert_eq!((state.offset, state.sha256_state), (40_009, None));
    let (appending, mut up) = r.append(id, 40_009, None).unwrap();
    assert!(!up.is_hashing());
    up.write(&body[40_009..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!(c.sha256, Some(sha256(&body)));
}

/// The SHA-256 of the first `n` bytes of `body`, from the state a record kept.
fn kept_digest(state: &ResumableState) -> Option<[u8; 32]> {
    state.sha256().map(ResumableSha256::finalize)
}

#[test]
fn a_checkpoint_job_records_exactly_its_offset_while_the_append_goes_on() {
    let gate = crate::HashGate::closed();
    let (_dir, store) = store_with(LocalOptions {
        checkpoint_gate: Some(gate.clone()),
        ..LocalOptions::default()
    });
    let body = data(3_000_001, 41);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (mut appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(&body[..1_000_003]).unwrap();
    let job = appending.begin_checkpoint(&up).unwrap();
    assert_eq!(job.offset(), 1_000_003);
    assert!(!job.wants_mark(), "the state was at hand");
    // At most one out: no second job, and none is due meanwhile.
    assert!(appending.begin_checkpoint(&up).is_none());
    let running = std::thread::spawn(move || job.run());
    assert_eq!(
        gate.wait_for_job(Duration::from_secs(60)),
        Some(vec![1_000_003])
    );
    // Held before its fdatasync: the append goes on writing, the record has not moved.
    up.write(&body[1_000_003..2_000_000]).unwrap();
    assert!(appending.checkpoint_settled().is_none());
    assert_eq!(r.state(id).unwrap().unwrap().offset, 0);
    gate.open();
    running.join().unwrap();
    assert_eq!(appending.checkpoint_settled().unwrap().unwrap(), 1_000_003);
    let recorded = r.state(id).unwrap().unwrap();
    assert_eq!(recorded.offset, 1_000_003);
    assert_eq!(kept_digest(&recorded), Some(sha256(&body[..1_000_003])));
    // The end of the request records the rest; completion's digest is of every byte.
    up.write(&body[2_000_000..]).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!(c.sha256, Some(sha256(&body)));
    assert_eq!(read(&store, "f"), body);
}

#[test]
fn a_checkpoint_takes_its_hash_state_from_the_hashing_thread_at_exactly_its_offset() {
    let (_dir, store) = store();
    let body = data(700_001, 42);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (mut appending, mut up) = r.append(id, 0, None).unwrap();
    let w = up.write_owned(body[..300_007].to_vec(), 300_007).unwrap();
    let job = up.hash_job(w).unwrap();
    // The hashing is away: the state at the offset must come from it.
    let checkpoint = appending.begin_checkpoint(&up).unwrap();
    assert!(checkpoint.wants_mark());
    let w2 = up
        .write_owned(body[300_007..].to_vec(), 400_000 - 6)
        .unwrap();
    let hashed = job.run();
    let mark = hashed.mark();
    std::thread::spawn(move || checkpoint.run_with(|| mark))
        .join()
        .unwrap();
    assert_eq!(appending.checkpoint_settled().unwrap().unwrap(), 300_007);
    let recorded = r.state(id).unwrap().unwrap();
    assert_eq!(kept_digest(&recorded), Some(sha256(&body[..300_007])));
    let (job, _) = hashed.chain(w2).unwrap();
    up.attach(job.run()).unwrap();
    let AppendEnd::Completed(c) = appending.finish(up, true).unwrap() else {
        panic!("not completed")
    };
    assert_eq!(c.sha256, Some(sha256(&body)));
}

#[test]
fn a_mark_of_other_bytes_is_never_recorded() {
    let (_dir, store) = store();
    let body = data(200_000, 43);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (mut appending, mut up) = r.append(id, 0, None).unwrap();
    let w1 = up.write_owned(body[..100_000].to_vec(), 100_000).unwrap();
    let w2 = up.write_owned(body[100_000..].to_vec(), 100_000).unwrap();
    let hashed = up.hash_job(w1).unwrap().run();
    // The checkpoint is of 200 000 bytes; the mark is of the first 100 000.
    let checkpoint = appending.begin_checkpoint(&up).unwrap();
    let early = hashed.mark();
    checkpoint.run_with(|| early);
    assert_eq!(appending.checkpoint_settled().unwrap().unwrap(), 200_000);
    let recorded = r.state(id).unwrap().unwrap();
    assert_eq!((recorded.offset, recorded.sha256_state), (200_000, None));
    let (job, _) = hashed.chain(w2).unwrap();
    up.attach(job.run()).unwrap();
    appending.finish(up, false).unwrap();
}

#[test]
fn the_end_of_an_append_waits_for_the_checkpoint_out_and_records_past_it() {
    let gate = crate::HashGate::closed();
    let (_dir, store) = store_with(LocalOptions {
        checkpoint_gate: Some(gate.clone()),
        ..LocalOptions::default()
    });
    let body = data(50_000, 44);
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (mut appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(&body[..20_000]).unwrap();
    let job = appending.begin_checkpoint(&up).unwrap();
    let running = std::thread::spawn(move || job.run());
    up.write(&body[20_000..]).unwrap();
    assert_eq!(
        gate.wait_for_job(Duration::from_secs(60)),
        Some(vec![20_000])
    );
    // Cut: the append ends while its checkpoint is held; the end waits for it, then records
    // the whole file (never the checkpoint's smaller offset last).
    let ending = std::thread::spawn(move || appending.finish(up, false));
    gate.open();
    running.join().unwrap();
    let AppendEnd::Incomplete(s) = ending.join().unwrap().unwrap() else {
        panic!("completed")
    };
    assert_eq!(s.offset, 50_000);
    let recorded = r.state(id).unwrap().unwrap();
    assert_eq!(recorded.offset, 50_000);
    assert_eq!(kept_digest(&recorded), Some(sha256(&body)));
}

#[test]
fn a_checkpoint_job_dropped_unrun_records_nothing() {
    let (_dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    let (id, _) = r.create(&p("f"), None, None, true).unwrap();
    let (mut appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(b"abc").unwrap();
    drop(appending.begin_checkpoint(&up).unwrap());
    assert!(appending.checkpoint_settled().unwrap().is_err());
    assert_eq!(r.state(id).unwrap().unwrap().offset, 0);
    // The next one runs.
    assert_eq!(appending.checkpoint(&mut up).unwrap(), 3);
    assert_eq!(r.state(id).unwrap().unwrap().offset, 3);
    drop(up);
    drop(appending);
}

#[test]
fn records_longer_than_the_stack_buffer_read_back_whole() {
    // `read_state` reads a record on the stack up to 2,048 bytes and into a `String` past that:
    // both sides of the boundary, and across it, come back as written.
    let (_dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    for len in [1, 1_800, 2_047, 2_048, 2_049, 5_000] {
        let meta = Some(format!("filename {}", "é".repeat(len / 2)));
        let (id, _) = r
            .create_with_metadata(&p("f"), Some(10), None, true, meta.clone())
            .unwrap();
        let (appending, mut up) = r.append(id, 0, None).unwrap();
        up.write(b"hello").unwrap();
        appending.finish(up, false).unwrap();
        let state = r.state(id).unwrap().unwrap();
        assert_eq!(state.metadata, meta, "{len}");
        assert_eq!(state.offset, 5, "{len}");
        r.cancel(id).unwrap();
    }
}

/// The creating request's preconditions are kept in the record (read back after a restart)
/// and handed to the completion's check, under the commit lock: refused, nothing is stored
/// and the upload is removed; a condition that cannot be a record line is refused at creation.
#[test]
fn a_kept_condition_survives_a_restart_and_guards_the_completion() {
    let (dir, store) = store();
    let r = Resumables::open(&store, DAY).unwrap();
    let condition = vec![("if-none-match".to_owned(), "*".to_owned())];
    let (id, _) = r
        .create_with_condition(&p("c"), None, None, true, None, condition.clone())
        .unwrap();
    drop(r);
    let (store, r) = reopen(&dir, store);
    assert_eq!(r.state(id).unwrap().unwrap().condition, condition);
    // Another writer creates the target meanwhile: the check sees it and refuses.
    let mut other = store.begin(&p("c"), UploadOptions::default()).unwrap();
    other.write(b"other").unwrap();
    other.commit().unwrap();
    let (appending, mut up) = r.append(id, 0, None).unwrap();
    up.write(b"mine").unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let check = |meta: Option<&FileMeta>| {
        seen.lock().unwrap().push(meta.map(|m| m.size));
        meta.is_none()
    };
    let refused = appending.finish_checked(up, true, Some(&check));
    assert!(
        matches!(refused, Err(StoreError::PreconditionFailed)),
        "{refused:?}"
    );
    assert_eq!(*seen.lock().unwrap(), [Some(5)]);
    assert_eq!(read(&store, "c"), b"other");
    assert!(
        matches!(r.state(id), Ok(None)),
        "the refused upload is removed"
    );
    // Not a record line: refused before anything is made.
    for bad in [("If-Match", "\"a\""), ("if-match", "a\nb"), ("", "*")] {
        let condition = vec![(bad.0.to_owned(), bad.1.to_owned())];
        let made = r.create_with_condition(&p("d"), None, None, true, None, condition);
        assert!(matches!(made, Err(StoreError::Discarded)), "{bad:?}");
    }
}
