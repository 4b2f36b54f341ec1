//! `LocalStore::copy` on a filesystem that shares blocks makes a reflink: the copy's physical
//! extents are the source's, marked shared (`filefrag -v`), and nothing is copied. On btrfs,
//! a loop image made and mounted here: it needs root, `mkfs.btrfs` and `filefrag`; without them
//! the test prints why it is skipped, and `WEIR_TEST_REFLINK=1` makes that a failure.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;
use weir_store::{LocalOptions, LocalStore, StoreError, StorePath, UploadOptions};

fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

/// Unmounts the image when the test ends, passed or not.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The physical extents of `path` (`filefrag -v`): each one's physical range, and whether it
/// is shared.
fn extents(path: &Path) -> Vec<(String, bool)> {
    let out = Command::new("filefrag")
        .arg("-v")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Extent lines: "   0:   0..  2047:   72960..  75007:   2048:   last,shared,eof".
    text.lines()
        .filter(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
        .map(|l| {
            let fields: Vec<&str> = l.split(':').map(str::trim).collect();
            (fields[2].to_owned(), l.contains("shared"))
        })
        .collect()
}

#[test]
fn on_btrfs_a_copy_shares_the_sources_extents() {
    let demanded = std::env::var("WEIR_TEST_REFLINK").is_ok_and(|v| v == "1");
    let ok = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let tools = root_user
        && ok(Command::new("mkfs.btrfs").arg("--version"))
        && Command::new("filefrag").arg("-V").output().is_ok();
    if !tools {
        assert!(
            !demanded,
            "WEIR_TEST_REFLINK=1 but no root, mkfs.btrfs or filefrag"
        );
        eprintln!("skipped: the reflink test needs root, mkfs.btrfs and filefrag");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("btrfs.img");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::fs::File::create(&image)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    if !ok(Command::new("mkfs.btrfs").arg("-q").arg(&image))
        || !ok(Command::new("mount")
            .arg("-o")
            .arg("loop")
            .arg(&image)
            .arg(&mnt))
    {
        assert!(
            !demanded,
            "WEIR_TEST_REFLINK=1 but the btrfs image cannot be made or mounted"
        );
        eprintln!("skipped: a btrfs loop image cannot be made or mounted here");
        return;
    }
    let _unmount = Unmount(mnt.clone());
    let store = LocalStore::open(mnt.join("store"), LocalOptions::default()).unwrap();
    let body: Vec<u8> = (0..8u32 << 20).map(|i| (i * 13 % 251) as u8).collect();
    let mut up = store
        .begin(&p("src.bin"), UploadOptions::default())
        .unwrap();
    up.write(&body).unwrap();
    let source = up.commit().unwrap();
    // Written back, so that the source has physical extents to share.
    assert!(ok(&mut Command::new("sync")));
    assert!(matches!(
        store.copy(&p("none"), &p("copy.bin")),
        Err(StoreError::NotFound)
    ));
    let copied = store.copy(&p("src.bin"), &p("dir/copy.bin")).unwrap();
    assert_eq!((copied.size, copied.sha256), (source.size, source.sha256));
    let root = mnt.join("store");
    assert_eq!(std::fs::read(root.join("dir/copy.bin")).unwrap(), body);
    let (theirs, ours) = (
        extents(&root.join("src.bin")),
        extents(&root.join("dir/copy.bin")),
    );
    assert!(!ours.is_empty(), "no extents listed for the copy");
    assert_eq!(ours, theirs, "the copy's physical extents are the source's");
    assert!(ours.iter().all(|(_, shared)| *shared), "{ours:?}");
}
