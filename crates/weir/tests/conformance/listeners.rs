//! Operator mistakes at the library's door: a busy address, a socket path that is something
//! else. Each must come back as a clear `io::Error` and destroy nothing.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use weir::{Config, Server};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn tcp_address_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let result = runtime().block_on(Server::bind(addr, Config::default()));
    let err = result
        .err()
        .expect("a second bind on a busy address succeeded");
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    // The holder of the address is undisturbed.
    assert!(std::net::TcpStream::connect(addr).is_ok());
}

#[test]
fn unix_socket_over_a_regular_file_is_refused_and_the_file_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("data.txt");
    std::fs::write(&path, b"precious").expect("write");
    let result = runtime().block_on(async { Server::new(Config::default()).listen_unix(&path) });
    let err = result.expect_err("bound over a regular file");
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    assert_eq!(std::fs::read(&path).expect("file is gone"), b"precious");
}

#[test]
fn unix_socket_over_a_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    std::fs::write(sub.join("inside"), b"x").expect("write");
    let result = runtime().block_on(async { Server::new(Config::default()).listen_unix(&sub) });
    assert!(result.is_err(), "bound over a directory");
    assert!(sub.join("inside").exists());
}

#[test]
fn unix_socket_of_a_live_server_is_refused_and_left_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.sock");
    let live = UnixListener::bind(&path).expect("bind");
    let result = runtime().block_on(async { Server::new(Config::default()).listen_unix(&path) });
    let err = result.expect_err("stole a live server's socket");
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    UnixStream::connect(&path).expect("the live server's socket was destroyed");
    drop(live);
}

#[test]
fn stale_unix_socket_is_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stale.sock");
    drop(UnixListener::bind(&path).expect("bind"));
    assert!(path.exists(), "std leaves the socket file behind");
    runtime().block_on(async {
        let mut server = Server::new(Config::default());
        server
            .listen_unix(&path)
            .expect("a stale socket blocked the bind");
    });
}

#[test]
fn unix_socket_in_a_missing_directory_is_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("missing").join("weir.sock");
    let result = runtime().block_on(async { Server::new(Config::default()).listen_unix(&path) });
    assert_eq!(
        result.err().map(|e| e.kind()),
        Some(io::ErrorKind::NotFound)
    );
}

#[test]
fn serving_without_a_listener_is_an_error() {
    struct Nothing;
    impl weir::Handler for Nothing {
        async fn handle(&self, _: &mut weir::Exchange<'_>) -> Result<(), weir::Error> {
            Ok(())
        }
    }
    let result = runtime().block_on(Server::new(Config::default()).serve(Nothing));
    assert_eq!(
        result.err().map(|e| e.kind()),
        Some(io::ErrorKind::InvalidInput)
    );
}
