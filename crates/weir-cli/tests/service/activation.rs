//! Socket activation: `weir serve` started with a listening socket as descriptor 3 and
//! `LISTEN_FDS=1`, `LISTEN_PID` its own pid (as systemd does, here by a Python wrapper that
//! binds, passes the socket and `exec`s weir, keeping its pid), serves on that socket instead of
//! `--listen`.

use crate::support::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Binds 127.0.0.1:0, writes the port to argv[1], puts the socket at descriptor 3 and execs
/// argv[2:] with LISTEN_FDS=1 and LISTEN_PID=its own pid (unchanged by exec).
const ACTIVATE: &str = r#"
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1], "w") as f:
    f.write(str(s.getsockname()[1]))
if s.fileno() == 3:
    os.set_inheritable(3, True)
else:
    os.dup2(s.fileno(), 3)
env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execve(sys.argv[2], sys.argv[2:], env)
"#;

#[test]
fn a_passed_socket_is_served_instead_of_listen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let port_file = dir.path().join("port");
    let mut child = Command::new("python3")
        .args(["-c", ACTIVATE])
        .arg(&port_file)
        .args([WEIR, "serve", "--root"])
        .arg(&root)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("WEIR_TOKEN")
        .env(TEST_HOSTS.0, TEST_HOSTS.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let port: u16 = std::fs::read_to_string(&port_file)
        .unwrap()
        .parse()
        .unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // The one listener is the passed socket: --listen was not bound.
    assert!(line.contains(&format!("http://{addr}")), "{line}");

    let r = request(addr, "PUT /files/activated.txt HTTP/1.1", b"hello");
    assert_eq!(r.status, 201, "{}", r.text());
    let r = request(addr, "GET /files/activated.txt HTTP/1.1", b"");
    assert_eq!(r.body, b"hello");
    let _ = child.kill();
    let _ = child.wait();
}
