//! `Exchange::take_passed_fd`: an open file passed with a request's head on a Unix socket
//! (`SCM_RIGHTS`) reaches that request's handler, once; one not taken is closed when the
//! exchange ends; without `Config::accept_passed_fds` none is received.

use crate::support::TestServer;
use http::StatusCode;
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
use std::io::{IoSlice, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use weir::{Config, Exchange, Handler};
use weir_testkit::h1::{Resp, parse_responses};

/// `/take`: answers with the inode of the passed file, or `none`; `/leave`: takes nothing.
struct Take;

impl Handler for Take {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let text = if ex.request().path() == "/take" {
            match ex.take_passed_fd() {
                Some(fd) => format!("inode {}", rustix::fs::fstat(&fd).unwrap().st_ino),
                None => "none".to_owned(),
            }
        } else {
            "left".to_owned()
        };
        ex.respond(StatusCode::OK).body(text).await
    }
}

fn server(accept: bool) -> (TestServer, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.sock");
    let config = Config::default().with_accept_passed_fds(accept);
    (
        TestServer::start_with(config, Take, Some(path.clone())),
        path,
        dir,
    )
}

/// Sends a GET of `target`, with `fd` attached to its head if given, and reads the answer.
fn get(stream: &mut UnixStream, target: &str, fd: Option<BorrowedFd<'_>>) -> Resp {
    let head = format!("GET {target} HTTP/1.1\r\nHost: a\r\n\r\n");
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds: Vec<BorrowedFd<'_>> = fd.into_iter().collect();
    assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
    let sent = sendmsg(
        &*stream,
        &[IoSlice::new(head.as_bytes())],
        &mut control,
        SendFlags::empty(),
    );
    assert_eq!(sent.unwrap(), head.len());
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let (mut responses, _) = parse_responses(&raw);
        if let Some(resp) = responses.pop() {
            return resp;
        }
        let n = stream.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "closed before a response: {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn a_passed_file_reaches_its_request_once_and_an_untaken_one_is_closed() {
    let (_server, path, _dir) = server(true);
    let mut stream = UnixStream::connect(&path).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let file = tempfile::tempfile().unwrap();
    let inode = rustix::fs::fstat(&file).unwrap().st_ino;
    // The first request (its bytes are read while the server tells HTTP/1.1 from HTTP/2).
    let resp = get(&mut stream, "/take", Some(file.as_fd()));
    assert_eq!(resp.text(), format!("inode {inode}"));
    // Once: the next request on the connection has none.
    assert_eq!(get(&mut stream, "/take", None).text(), "none");
    // A keep-alive request's head carries one too.
    assert_eq!(
        get(&mut stream, "/take", Some(file.as_fd())).text(),
        format!("inode {inode}")
    );
    // Not taken: closed when its exchange ends. The pipe's read end was the only other one,
    // so once the server's copy is closed, writing to the pipe fails.
    let (pipe_r, pipe_w) = rustix::pipe::pipe().unwrap();
    assert_eq!(
        get(&mut stream, "/leave", Some(pipe_r.as_fd())).text(),
        "left"
    );
    drop(pipe_r);
    assert_eq!(
        rustix::io::write(&pipe_w, b"x").unwrap_err(),
        rustix::io::Errno::PIPE,
        "the server still holds the descriptor it did not hand out"
    );
    assert_eq!(get(&mut stream, "/take", None).text(), "none");
}

#[test]
fn without_accept_passed_fds_nothing_is_received() {
    let (_server, path, _dir) = server(false);
    let mut stream = UnixStream::connect(&path).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let (pipe_r, pipe_w) = rustix::pipe::pipe().unwrap();
    assert_eq!(
        get(&mut stream, "/take", Some(pipe_r.as_fd())).text(),
        "none"
    );
    drop(pipe_r);
    // The kernel closed it on the server's plain read.
    assert_eq!(
        rustix::io::write(&pipe_w, b"x").unwrap_err(),
        rustix::io::Errno::PIPE
    );
}
