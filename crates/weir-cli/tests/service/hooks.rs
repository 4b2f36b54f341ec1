//! Upload hooks (`--hook-command`): run after each commit and delete with the event on stdin
//! and in the environment; a hook that fails or hangs never changes the stored file, and is
//! counted.

use crate::metrics::scrape;
use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Writes an executable shell script `name` with `body`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn start(args: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (child, addr) = spawn(&root, dir.path(), args, &[]).unwrap_or_else(|e| panic!("{e}"));
    Server {
        child,
        addr,
        dir,
        root,
    }
}

#[test]
fn a_hook_sees_each_commit_and_delete() {
    if !crate::metrics::parser() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events");
    let out_s = out.to_str().unwrap();
    let hook = script(
        dir.path(),
        "hook",
        &format!(
            "json=$(cat)\necho \"$WEIR_HOOK_EVENT|$WEIR_HOOK_PATH|$WEIR_HOOK_SIZE|$WEIR_HOOK_SHA256|$json\" >> {out_s}"
        ),
    );
    let s = start(&["--hook-command", hook.to_str().unwrap()]);
    assert_eq!(s.request("PUT /files/d/a.txt HTTP/1.1", b"abc").status, 201);
    let lines = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    wait_for("the stored event", || lines().len() == 1);
    assert_eq!(s.request("DELETE /files/d/a.txt HTTP/1.1", b"").status, 204);
    wait_for("the deleted event", || lines().len() == 2);
    let lines = lines();
    let sum = sha256(b"abc");
    let fields: Vec<&str> = lines[0].splitn(5, '|').collect();
    assert_eq!(fields[..4], ["stored", "d/a.txt", "3", sum.as_str()]);
    let json: serde_json::Value = serde_json::from_str(fields[4]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"event": "stored", "path": "d/a.txt", "size": 3, "sha256": sum, "token": null})
    );
    let fields: Vec<&str> = lines[1].splitn(5, '|').collect();
    assert_eq!(fields[..4], ["deleted", "d/a.txt", "0", ""]);
    let scraped = scrape(&s.url("/metrics"), None);
    assert_eq!(scraped["weir_hooks_total{outcome=\"ok\"}"], 2.0);
}

#[test]
fn a_failing_or_hanging_hook_is_counted_and_changes_nothing() {
    if !crate::metrics::parser() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let failing = script(dir.path(), "fails", "cat > /dev/null; exit 3");
    let hanging = script(dir.path(), "hangs", "exec sleep 60");
    let cases = [(failing, "failed"), (hanging, "timeout")];
    for (hook, outcome) in cases {
        let s = start(&[
            "--hook-command",
            hook.to_str().unwrap(),
            "--hook-timeout",
            "1s",
        ]);
        let body = data(10_000, 5);
        assert_eq!(s.request("PUT /files/f HTTP/1.1", &body).status, 201);
        let key = format!("weir_hooks_total{{outcome=\"{outcome}\"}}");
        wait_for("the hook's outcome", || {
            scrape(&s.url("/metrics"), None)[&key] == 1.0
        });
        let got = s.request("GET /files/f HTTP/1.1", b"");
        assert_eq!((got.status, got.body == body), (200, true), "{outcome}");
        let scraped = scrape(&s.url("/metrics"), None);
        assert_eq!(scraped["weir_hooks_total{outcome=\"ok\"}"], 0.0);
    }
}

#[test]
fn a_hook_killed_at_its_timeout_takes_its_children_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (hook_pid, child_pid) = (dir.path().join("hook.pid"), dir.path().join("child.pid"));
    let body = format!(
        "echo $$ > {}\nsleep 300 &\necho $! > {}\nsleep 300",
        hook_pid.display(),
        child_pid.display()
    );
    let hook = script(dir.path(), "spawns", &body);
    let s = start(&[
        "--hook-command",
        hook.to_str().unwrap(),
        "--hook-timeout",
        "1s",
    ]);
    assert_eq!(s.request("PUT /files/f HTTP/1.1", b"abc").status, 201);
    let (hook, child) = (pid_in(&hook_pid), pid_in(&child_pid));
    let key = "weir_hooks_total{outcome=\"timeout\"}";
    wait_for("the hook's timeout", || {
        scrape(&s.url("/metrics"), None)[key] == 1.0
    });
    // The hook was the leader of a group of its own, and all of that group is gone.
    wait_for("the hook's child to be killed", || !running(child));
    assert!(!running(hook));
}
