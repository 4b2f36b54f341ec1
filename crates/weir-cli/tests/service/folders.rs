//! Folders through the client (issue 35, point 1's client side): `weir put DIR URL/` uploads
//! every file below DIR (several at once, each verified), a rerun leaves what is there alone;
//! `weir get URL/DIR/` downloads every file below the folder, following the listing's pages.

use crate::support::*;
use std::path::Path;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every regular file below `dir`, relative path → content.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(e.path());
            } else if kind.is_file() {
                let rel = e
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_folder_goes_up_and_comes_back_down() {
    let s = Server::start(&[]);
    let src = s.dir.path().join("run 1");
    std::fs::create_dir_all(src.join("sub/deeper")).unwrap();
    std::fs::write(src.join("b.txt"), b"bee").unwrap();
    std::fs::write(src.join("sub/c.bin"), data(1 << 20, 8)).unwrap();
    std::fs::write(src.join("sub/deeper/d e.txt"), b"dee").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
    let sent = tree(&src);
    assert_eq!(sent.len(), 3);

    let out = weir(&[
        "put",
        "--jobs",
        "3",
        src.to_str().unwrap(),
        &s.url("/files/up/"),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Uploaded 3 of 3 files"), "{err}");
    assert!(err.contains("link: not a regular file"), "{err}");
    assert_eq!(tree(&s.root.join("up/run 1")), sent);
    // Again: nothing replaced, nothing failed.
    let out = weir(&["put", src.to_str().unwrap(), &s.url("/files/up/")]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("Uploaded 0 of 3 files") && err.contains("3 already there"),
        "{err}"
    );
    // A folder needs a folder URL.
    let out = weir(&["put", src.to_str().unwrap(), &s.url("/files/up")]);
    assert!(!out.status.success());

    // Down again, into a folder named after the remote one.
    let dest = s.dir.path().join("down");
    std::fs::create_dir(&dest).unwrap();
    let out = std::process::Command::new(WEIR)
        .args(["get", &s.url("/files/up/run%201/")])
        .current_dir(&dest)
        .env_remove("WEIR_TOKEN")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Downloaded 3 of 3 files"), "{err}");
    assert!(err.contains("sha-256 verified"), "{err}");
    assert_eq!(tree(&dest.join("run 1")), sent);
}

/// A folder larger than one listing page (1,000 entries) is followed page by page.
#[test]
fn every_page_of_a_large_folder_is_downloaded() {
    let s = Server::start(&[]);
    std::fs::create_dir_all(s.root.join("many")).unwrap();
    for i in 0..1003 {
        std::fs::write(s.root.join(format!("many/f{i:04}")), i.to_string()).unwrap();
    }
    let dest = s.dir.path().join("got");
    let out = weir(&[
        "get",
        "--jobs",
        "8",
        &s.url("/files/many/"),
        dest.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{}", err.lines().last().unwrap_or(""));
    let got = tree(&dest);
    assert_eq!(got.len(), 1003);
    assert_eq!(got["f1002"], b"1002");
}
