//! A server killed with SIGKILL in the middle of an upload: no file at the target, and the
//! temporary it left is removed at the next start.

use crate::support::*;
use std::io::Write;

#[test]
fn sigkill_mid_upload_leaves_nothing_after_restart() {
    for args in [&[][..], &["--no-hash"][..]] {
        let mut s = Server::start(args);
        // An existing version of another file survives.
        assert_eq!(s.request("PUT /files/keep HTTP/1.1", b"kept").status, 201);
        let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
        write!(
            sock,
            "PUT /files/d/target HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
            64 << 20
        )
        .unwrap();
        sock.write_all(&data(8 << 20, 50)).unwrap();
        // The upload is in progress: its temporary file holds some of the bytes.
        let root = s.root.clone();
        wait_for("the upload's temporary file to fill", || {
            temps(&root)
                .iter()
                .any(|t| std::fs::metadata(t).is_ok_and(|m| m.len() > 0))
        });
        s.kill();
        assert!(!s.root.join("d/target").exists());
        assert_eq!(s.temps().len(), 1, "the kill left its temporary behind");
        drop(sock);

        let (dir, root) = s.into_parts();
        let s = Server::start_at(dir, root, args);
        assert!(s.temps().is_empty(), "{:?}", s.temps());
        assert_eq!(s.request("GET /files/d/target HTTP/1.1", b"").status, 404);
        assert_eq!(s.request("GET /files/keep HTTP/1.1", b"").body, b"kept");
        // The upload was staged outside the tree: not even its directory was made.
        assert_eq!(s.request("GET /files/d/ HTTP/1.1", b"").status, 404);
    }
}

#[test]
fn a_client_that_disconnects_mid_upload_leaves_nothing() {
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/t HTTP/1.1", b"old").status, 201);
    let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
    write!(
        sock,
        "PUT /files/t HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n\r\n",
        32 << 20
    )
    .unwrap();
    sock.write_all(&data(4 << 20, 51)).unwrap();
    let root = s.root.clone();
    wait_for("the temporary file", || !temps(&root).is_empty());
    drop(sock);
    wait_for("the temporary file to be removed", || {
        temps(&root).is_empty()
    });
    assert_eq!(s.request("GET /files/t HTTP/1.1", b"").body, b"old");
}
