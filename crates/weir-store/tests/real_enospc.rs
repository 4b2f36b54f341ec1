//! A real full disk, not an injected error: a tiny tmpfs is mounted for the test.
//!
//! Mounting needs privileges (root, or `CAP_SYS_ADMIN`): where `mount` fails, each test prints
//! why and passes without checking anything. The fault-injection tests in `upload.rs` cover
//! the same paths everywhere; this file proves that the real kernel errors take them too.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use weir_store::{LocalOptions, LocalStore, StoreError, StorePath, UploadOptions};

/// A tmpfs mounted on a fresh temporary directory, unmounted on drop (even when the test
/// panics).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(options: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "weir-store-test"])
            .arg(dir.path())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy, so that a file still open in a failed test cannot keep the mount alive.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

fn temps(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".weir-upload-")
        })
        .collect()
}

#[test]
fn a_full_filesystem_is_no_space_and_loses_nothing() {
    let Some(fs) = Tmpfs::mount("size=256k,mode=0700") else {
        return;
    };
    let store = LocalStore::open(fs.path().join("root"), LocalOptions::default()).unwrap();
    let root = store.root().to_owned();

    let keep = vec![0x5a; 8 * 1024];
    let mut up = store.begin(&p("keep"), UploadOptions::default()).unwrap();
    up.write(&keep).unwrap();
    up.commit().unwrap();

    // Through `write`: fill the disk, replacing the kept file.
    let mut up = store.begin(&p("keep"), UploadOptions::default()).unwrap();
    let chunk = vec![0xa5; 64 * 1024];
    let err = (0..64)
        .find_map(|_| up.write(&chunk).err())
        .expect("256 KiB must fill up");
    assert!(matches!(err, StoreError::NoSpace), "{err}");
    assert!(temps(&root).is_empty(), "the temp is removed at the error");
    drop(up);
    assert_eq!(std::fs::read(root.join("keep")).unwrap(), keep);

    // Through `file_mut`, as the splice path does.
    let opts = UploadOptions {
        hash: false,
        ..UploadOptions::default()
    };
    let mut up = store.begin(&p("big"), opts).unwrap();
    let err = (0..64)
        .find_map(|_| match up.file_mut().write_all(&chunk) {
            Ok(()) => up.record_external_write(chunk.len() as u64).err().map(Err),
            Err(e) => Some(Ok(e)),
        })
        .expect("256 KiB must fill up")
        .expect("the write fails, not the accounting");
    let err = up.abort_with(err);
    assert!(matches!(err, StoreError::NoSpace), "{err}");
    assert!(temps(&root).is_empty());

    // The space comes back with the temps: the store still works. tmpfs may release the
    // pages of a removed file a moment after the last close (seen here in about one run in
    // three), so the first small upload is retried for up to 2 s; a store that leaked the
    // temporaries would fail every try.
    let mut tries = 0;
    loop {
        let mut up = store.begin(&p("after"), UploadOptions::default()).unwrap();
        match up.write(b"fits").and_then(|()| up.commit().map(drop)) {
            Ok(()) => break,
            Err(StoreError::NoSpace) if tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("the store does not work after a full disk: {e}"),
        }
    }
    assert!(temps(&root).is_empty());
    assert_eq!(std::fs::read(root.join("keep")).unwrap(), keep);
    // Two files, each an entry.
    assert_eq!(
        store.usage(),
        keep.len() as u64 + 4 + 2 * weir_store::ENTRY_COST
    );
}

#[test]
fn running_out_of_inodes_is_no_space_at_begin() {
    let Some(fs) = Tmpfs::mount("size=1m,nr_inodes=16,mode=0700") else {
        return;
    };
    let store = LocalStore::open(fs.path().join("root"), LocalOptions::default()).unwrap();
    let mut stored = 0;
    let err = loop {
        let name = format!("f{stored}");
        match store.begin(&p(&name), UploadOptions::default()) {
            Ok(up) => {
                up.commit().unwrap();
                stored += 1;
                assert!(stored < 32, "nr_inodes=16 must run out");
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(err, StoreError::NoSpace), "{err}");
    assert!(stored > 0);
    assert!(temps(store.root()).is_empty());
    // Freeing one file makes room for one upload again.
    store.delete(&p("f0")).unwrap();
    store
        .begin(&p("again"), UploadOptions::default())
        .unwrap()
        .commit()
        .unwrap();
}
