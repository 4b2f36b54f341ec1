//! `weir put FILE URL`: upload a file, verified end to end, over HTTP/1.1 or HTTP/2, in the
//! clear or over TLS.
//!
//! 1. Hash the file (SHA-256, unless `--no-digest`) and send it as `Content-Digest`: the server
//!    verifies the body against it before committing, so what is stored is what was read here.
//!    Hashing reads the file once (it is then in the page cache for the send); its time is
//!    reported apart from the transfer.
//! 2. Send the head with `Expect: 100-continue` and wait (up to a second) for the server's
//!    go-ahead: a refusal (401, 413, 507, bad path) costs no body bytes.
//! 3. Send the body, HTTP/1.1 in the clear: with `sendfile(2)` (page cache → socket, no copy
//!    in user space) to a TCP peer on another host; through one 1 MiB buffer (the buffer stays in
//!    the CPU cache between the two copies) on loopback and Unix sockets, where `sendfile`
//!    measured slower: the receiver's copy then reads page cache no CPU has touched lately
//!    (`Transport::sendfile_pays`). `--sendfile` / `--no-sendfile` override. Under TLS and HTTP/2
//!    the body is encrypted or framed in user space: always through the buffer.
//! 4. Read the answer; compare the server's SHA-256 with ours.

use super::http::{Request, ResponseHead};
use super::url::{Url, encode_segment};
use super::{ClientError, Options, connect, progress, status_error};
use crate::cli::PutArgs;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::time::{Duration, Instant};
use weir_proto::digest_fields::ContentDigest;

/// How long to wait for `100 Continue` before sending the body anyway (curl waits 1 s too).
const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// Runs `weir put`.
pub fn put(args: PutArgs) -> Result<(), ClientError> {
    let sendfile = args.sendfile_mode();
    let options = Options::from_args(args.client);
    let mut url = Url::parse(&args.url)?;
    let shown = args.file.display().to_string();
    let file = File::open(&args.file).map_err(|e| ClientError::new(format!("{shown}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| ClientError::new(format!("{shown}: {e}")))?;
    if !meta.is_file() {
        return Err(ClientError::new(format!("{shown}: not a regular file")));
    }
    let len = meta.len();
    if url.path().ends_with('/') {
        let name = args
            .file
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| ClientError::new(format!("{shown}: no usable file name")))?;
        let (path, query) = match url.target.split_once('?') {
            Some((p, q)) => (p.to_owned(), format!("?{q}")),
            None => (url.target.clone(), String::new()),
        };
        url.target = format!("{path}{}{query}", encode_segment(name));
    }

    let hashed = if args.no_digest {
        None
    } else {
        Some(hash_file(&file, len).map_err(|e| ClientError::new(format!("{shown}: {e}")))?)
    };

    let started = Instant::now();
    let mut conn = connect(&url, &options)?;
    let mut headers = vec![
        ("content-length", len.to_string()),
        ("content-type", "application/octet-stream".to_owned()),
    ];
    if len > 0 {
        headers.push(("expect", "100-continue".to_owned()));
    }
    if let Some((sha256, _)) = &hashed {
        let digest = ContentDigest {
            sha256: Some(*sha256),
            sha512: None,
        };
        headers.push(("content-digest", digest.to_header_value()));
    }
    headers.extend(options.auth_header());
    let request = Request {
        method: "PUT",
        target: &url.target,
        host: &url.host,
        headers,
    };
    let io = |e: std::io::Error| ClientError::new(format!("upload failed: {e}"));
    conn.send_head(&request, len > 0).map_err(io)?;

    let mut early: Option<ResponseHead> = None;
    if len > 0 {
        match conn.read_head(Some(CONTINUE_WAIT)).map_err(io)? {
            Some(head) if head.status == 100 => {}
            Some(head) => early = Some(head),
            None => {}
        }
    }
    let head = match early {
        // The server answered before the body: a refusal (or a server that needed no body).
        Some(head) => head,
        None => {
            let bar = progress::bar(len, "Uploading");
            let mut progress = |n| bar.set_position(n);
            let sent = conn.send_file(&file, len, sendfile, &mut progress);
            bar.finish_and_clear();
            if let Err(e) = sent {
                // The server may have answered (507, 413) and closed: show its reason.
                if let Ok(Some(head)) = conn.read_head(Some(Duration::from_secs(2))) {
                    if head.status >= 400 {
                        return Err(status_error(&mut conn, "PUT", &head));
                    }
                }
                return Err(io(e));
            }
            final_head(&mut conn).map_err(io)?
        }
    };
    if !(200..300).contains(&head.status) {
        return Err(status_error(&mut conn, "PUT", &head));
    }
    let mut body = conn.body("PUT", &head).map_err(io)?;
    let text = conn.read_text(&mut body, 64 * 1024).map_err(io)?;
    let elapsed = started.elapsed();
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let server_sha = answer.get("sha256").and_then(|v| v.as_str());
    let mut summary = format!(
        "Uploaded {} in {} ({})",
        progress::bytes(len),
        progress::secs(elapsed),
        progress::rate(len, elapsed)
    );
    if let Some((sha256, took)) = &hashed {
        let ours = crate::serve::hex(sha256);
        if let Some(theirs) = server_sha {
            if theirs != ours {
                return Err(ClientError::new(format!(
                    "the server stored a different SHA-256 ({theirs}) than the file's ({ours})"
                )));
            }
        }
        summary.push_str(&format!(
            "; hashed in {} ({}), verified by the server",
            progress::secs(*took),
            progress::rate(len, *took)
        ));
    }
    eprintln!("{summary}");
    Ok(())
}

/// The final response, skipping a `100 Continue` that arrived late.
fn final_head(conn: &mut super::conn::Connection) -> std::io::Result<ResponseHead> {
    loop {
        let head = conn
            .read_head(None)?
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut))?;
        if !(100..200).contains(&head.status) {
            return Ok(head);
        }
    }
}

/// SHA-256 of the file's `len` bytes, and how long it took.
fn hash_file(mut file: &File, len: u64) -> std::io::Result<([u8; 32], Duration)> {
    let started = Instant::now();
    let bar = progress::bar(len, "Hashing  ");
    let mut hasher = Sha256::new();
    // COPY: page cache → this buffer, which the hasher reads in place. 1 MiB: few syscalls.
    let mut buf = vec![0u8; 1024 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was being hashed",
            ));
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        bar.set_position(done);
    }
    bar.finish_and_clear();
    Ok((hasher.finalize().into(), started.elapsed()))
}
