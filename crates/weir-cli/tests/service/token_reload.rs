//! SIGHUP reads `--token-file` again: a token taken out of the file stops writing, one put in
//! starts; a file that cannot be used is one error line and the tokens in use stay.

use crate::support::*;

fn hangup(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn put(s: &Server, token: &str, name: &str) -> u16 {
    let head = format!("PUT /files/{name} HTTP/1.1\r\nauthorization: Bearer {token}");
    s.request(&head, b"x").status
}

#[test]
fn sighup_reloads_the_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "token-a write\ntoken-b write\n").unwrap();
    let s = Server::start(&["--token-file", file.to_str().unwrap()]);
    assert_eq!(put(&s, "token-a", "a1"), 201);
    assert_eq!(put(&s, "token-c", "c1"), 401);

    // A is taken out, C put in: once the reload is seen, A is refused and C writes.
    std::fs::write(&file, "token-b write\ntoken-c write\n").unwrap();
    hangup(s.pid());
    wait_for("token A to be refused", || put(&s, "token-a", "a2") == 401);
    assert_eq!(put(&s, "token-b", "b2"), 201);
    assert_eq!(put(&s, "token-c", "c2"), 201);

    // A file with a mistake, then one with no token at all: each one error line, and the
    // tokens in use stay (an empty file must not open writes to anyone).
    let log = s.dir.path().join("server-stderr.log");
    let errors = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("SIGHUP") && l.contains("keeping the tokens in use"))
            .count()
    };
    std::fs::write(&file, "token-a wrte\n").unwrap();
    hangup(s.pid());
    wait_for("the reload error to be logged", || errors() == 1);
    std::fs::write(&file, "# none\n").unwrap();
    hangup(s.pid());
    wait_for("the second reload error to be logged", || errors() == 2);
    assert_eq!(put(&s, "token-a", "a3"), 401);
    assert_eq!(put(&s, "", "anon"), 401);
    assert_eq!(put(&s, "token-c", "c3"), 201);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("line 1"), "{text}");
}
