//! Who did what (issue 35, point 4): the access log names the token of every request (its
//! name from the token file, never the token), and every line that stores, replaces or
//! deletes a file names the file, a resumable upload's completing `PATCH /uploads/ID`
//! included; the command hook and the webhook get the token's name with each event.

use crate::support::*;
use crate::webhooks::Receiver;
use std::os::unix::fs::PermissionsExt;

/// `key=value` fields of a text access log line.
fn fields(line: &str) -> std::collections::HashMap<&str, &str> {
    line.split(' ')
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

#[test]
fn every_change_names_its_file_and_the_token_that_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "alice-s3cret read,write name=alice\nbob-s3cret read,delete name=bob\n\
         anon-s3cret read,write\n",
    )
    .unwrap();
    let events = dir.path().join("events");
    let hook = dir.path().join("hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho \"$WEIR_HOOK_EVENT|$WEIR_HOOK_PATH|$WEIR_HOOK_TOKEN\" >> {}\n",
            events.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let receiver = Receiver::start(|_| Some(200));
    let s = Server::start(&[
        "--token-file",
        tokens.to_str().unwrap(),
        "--hook-command",
        hook.to_str().unwrap(),
        "--hook-url",
        &receiver.url(),
    ]);
    let alice = "\r\nauthorization: Bearer alice-s3cret";
    let bob = "\r\nauthorization: Bearer bob-s3cret";
    let put = |path: &str, who: &str, body: &[u8]| {
        s.request(&format!("PUT /files/{path} HTTP/1.1{who}"), body)
            .status
    };
    assert_eq!(put("d/a.txt", alice, b"one"), 201);
    assert_eq!(put("d/a.txt", alice, b"two"), 200);
    // A resumable upload: created with its first part, completed by a PATCH that has no name.
    let upload = crate::resumable::create_partial(&s, "d/r.bin", b"first-", alice);
    let r = crate::resumable::last(crate::resumable::exchange(
        s.addr,
        &format!(
            "PATCH {upload} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: 6\r\nupload-complete: ?1{alice}"
        ),
        b"second",
    ));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        s.request(&format!("GET /files/d/r.bin HTTP/1.1{bob}"), b"")
            .status,
        200
    );
    assert_eq!(
        s.request(&format!("DELETE /files/d/a.txt HTTP/1.1{bob}"), b"")
            .status,
        204
    );
    assert_eq!(
        put("d/n.txt", "\r\nauthorization: Bearer anon-s3cret", b"x"),
        201
    );
    assert_eq!(s.request("GET /files/d/r.bin HTTP/1.1", b"").status, 401);

    let log = s.dir.path().join("server-stderr.log");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for("eight access log lines", || {
        read().lines().filter(|l| l.starts_with("time=")).count() == 8
    });
    let text = read();
    assert!(!text.contains("s3cret"), "a token in the log: {text}");
    let lines: Vec<_> = text.lines().filter(|l| l.starts_with("time=")).collect();
    let line = |method: &str, path: &str, nth: usize| {
        lines
            .iter()
            .filter(|l| {
                let f = fields(l);
                f["method"] == method && f["path"] == path
            })
            .map(|l| fields(l))
            .nth(nth)
            .unwrap_or_else(|| panic!("no line {nth} for {method} {path}: {lines:#?}"))
    };
    let first = line("PUT", "/files/d/a.txt", 0);
    let second = line("PUT", "/files/d/a.txt", 1);
    // Lines are written as requests end; the two PUTs ran one after the other.
    assert_eq!(
        [first.get("replaced"), second.get("replaced")],
        [None, Some(&"1")],
        "{lines:#?}"
    );
    for f in [&first, &second] {
        assert_eq!(
            (f["token"], f["files"], f["stored"]),
            ("alice", "d/a.txt", "3")
        );
    }
    let creation = line("PUT", "/files/d/r.bin", 0);
    assert_eq!(creation["token"], "alice");
    assert!(!creation.contains_key("files"), "nothing stored yet");
    let completion = line("PATCH", &upload, 0);
    assert_eq!(
        (
            completion["token"],
            completion["files"],
            completion["stored"]
        ),
        ("alice", "d/r.bin", "12")
    );
    let get = line("GET", "/files/d/r.bin", 0);
    assert_eq!(get["token"], "bob");
    let delete = line("DELETE", "/files/d/a.txt", 0);
    assert_eq!((delete["token"], delete["deleted"]), ("bob", "d/a.txt"));
    // A token without a name: its line in the file.
    assert_eq!(line("PUT", "/files/d/n.txt", 0)["token"], "line-3");
    assert!(!line("GET", "/files/d/r.bin", 1).contains_key("token"));

    // The hooks: each stored and deleted file with the token's name.
    let hooked = || std::fs::read_to_string(&events).unwrap_or_default();
    wait_for("five hook events", || hooked().lines().count() == 5);
    let mut got: Vec<_> = hooked().lines().map(str::to_owned).collect();
    got.sort();
    assert_eq!(
        got,
        [
            "deleted|d/a.txt|bob",
            "stored|d/a.txt|alice",
            "stored|d/a.txt|alice",
            "stored|d/n.txt|line-3",
            "stored|d/r.bin|alice",
        ]
    );
    wait_for("five webhook events", || receiver.bodies().len() == 5);
    let mut posted: Vec<_> = receiver
        .bodies()
        .iter()
        .map(|e| format!("{}|{}|{}", e["event"], e["path"], e["token"]))
        .collect();
    posted.sort();
    assert_eq!(
        posted,
        [
            "\"deleted\"|\"d/a.txt\"|\"bob\"",
            "\"stored\"|\"d/a.txt\"|\"alice\"",
            "\"stored\"|\"d/a.txt\"|\"alice\"",
            "\"stored\"|\"d/n.txt\"|\"line-3\"",
            "\"stored\"|\"d/r.bin\"|\"alice\"",
        ]
    );
}
