//! `weir put` / `weir get`: summaries, failures as one line, verification.

use crate::support::*;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn put_and_get_report_and_verify() {
    let s = Server::start(&[]);
    let src = s.dir.path().join("my file.bin");
    let content = data(3 << 20, 31);
    std::fs::write(&src, &content).unwrap();
    // A directory URL keeps the file's name.
    let out = weir(&["put", src.to_str().unwrap(), &s.url("/files/dir/")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("Uploaded 3.0 MiB in "), "{err}");
    assert!(
        err.contains("hashed while sending, verified by the server"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let dest_dir = s.dir.path().join("downloads");
    std::fs::create_dir(&dest_dir).unwrap();
    let out = weir(&[
        "get",
        &s.url("/files/dir/my%20file.bin"),
        dest_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sha-256 verified"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(dest_dir.join("my file.bin")).unwrap(),
        content
    );
    // Only the file: the temporary was renamed.
    assert_eq!(std::fs::read_dir(&dest_dir).unwrap().count(), 1);

    let out = weir(&[
        "put",
        "--no-digest",
        src.to_str().unwrap(),
        &s.url("/files/nd"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("hashed"), "{}", stderr(&out));
}

#[test]
fn failures_are_one_line_and_non_zero() {
    let s = Server::start(&[]);
    let src = s.dir.path().join("f");
    std::fs::write(&src, b"data").unwrap();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "get".into(),
                s.url("/files/missing"),
                s.dir.path().join("m").display().to_string(),
            ],
            "404",
        ),
        (
            vec![
                "put".into(),
                src.display().to_string(),
                s.url("/files/../x"),
            ],
            "400",
        ),
        (
            vec!["put".into(), "/nonexistent/file".into(), s.url("/files/x")],
            "/nonexistent/file",
        ),
        (
            vec![
                "put".into(),
                src.display().to_string(),
                format!("http://{dead}/files/x"),
            ],
            "cannot connect",
        ),
        (
            vec![
                "put".into(),
                src.display().to_string(),
                "ftp://example/x".into(),
            ],
            "must start with http:// or https://",
        ),
        (vec!["get".into(), s.url("/files/")], "give a DIR"),
    ];
    for (args, needle) in cases {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = weir(&argv);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("weir: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    assert!(!s.dir.path().join("m").exists());
}

#[test]
fn get_refuses_a_body_that_does_not_match_its_digest() {
    let s = Server::start(&[]);
    let content = data(1 << 20, 32);
    assert_eq!(s.request("PUT /files/f HTTP/1.1", &content).status, 201);
    // Corrupt the stored file behind the store's back, keeping its size and mtime: the stored
    // digest still looks valid, so the server sends it and the client must catch the damage.
    let stored = s.root.join("f");
    let mtime = std::fs::metadata(&stored).unwrap().modified().unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&stored)
            .unwrap();
        f.write_all_at(b"CORRUPT", 4096).unwrap();
        f.set_modified(mtime).unwrap();
    }
    let dest = s.dir.path().join("out");
    let out = weir(&["get", &s.url("/files/f"), dest.to_str().unwrap()]);
    let err = stderr(&out);
    if !err.contains("no digest") {
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("corrupted"), "{err}");
        assert!(!dest.exists());
        let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("weir-get"))
            .collect();
        assert!(leftovers.is_empty());
    } else {
        panic!("the server sent no Repr-Digest (no xattrs on this filesystem?): {err}");
    }
}

/// Nothing is replaced by surprise (issue 35): `weir put` creates only (`If-None-Match: *`)
/// unless `--overwrite`, and says why it stopped; `weir get` leaves an existing local file
/// alone unless `--overwrite`.
#[test]
fn neither_put_nor_get_replaces_a_file_unless_told() {
    let s = Server::start(&[]);
    let src = s.dir.path().join("f.txt");
    std::fs::write(&src, b"first").unwrap();
    let url = s.url("/files/f.txt");
    let out = weir(&["put", src.to_str().unwrap(), &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(&src, b"second").unwrap();
    let out = weir(&["put", src.to_str().unwrap(), &url]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("a file is already at /files/f.txt") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"first");
    let out = weir(&["put", "--overwrite", src.to_str().unwrap(), &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(s.root.join("f.txt")).unwrap(), b"second");

    let dest = s.dir.path().join("local.txt");
    std::fs::write(&dest, b"mine").unwrap();
    let out = weir(&["get", &url, dest.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("exists: not replaced") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read(&dest).unwrap(), b"mine");
    let out = weir(&["get", "--overwrite", &url, dest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&dest).unwrap(), b"second");
}
