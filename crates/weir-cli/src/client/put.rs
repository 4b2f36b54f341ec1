//! `weir put FILE URL`: upload a file, verified end to end, over HTTP/1.1 or HTTP/2, in the
//! clear or over TLS.
//!
//! 1. The digest (SHA-256, unless `--no-digest`) goes as a `Content-Digest` *trailer*: each
//!    1 MiB buffer of the body is hashed once it is written, so the file is read once, into
//!    the buffer both the send and the hash use, and the hash overlaps the server's receiving.
//!    HTTP/1.1 sends the body chunked to carry the trailer (the length goes in the draft's
//!    `Upload-Length`); HTTP/2 keeps `content-length` and ends the stream with a trailing
//!    HEADERS frame. The server verifies the trailer before committing (`serve/body.rs`,
//!    `serve/resumable.rs`), so what is stored is what was read here. `--sendfile` keeps the
//!    older way (the bytes then never enter user space on the way out): the file hashed first,
//!    its time reported apart, the digest in the head. The local upload (the file passed over a
//!    `--unix` socket, `serve/passed_file.rs`) hashes on a thread *beside* the server's copy
//!    instead: the request asks for the stored copy's SHA-256 (`Weir-Fd-Hash: sha-256`) and
//!    the answer's is compared with ours. If the file cannot be passed after all (HTTP/2, or
//!    the server answers `100 Continue`: it wants the bytes), the connection is dropped before
//!    a body byte, so nothing is stored, and the request goes again with the digest in the
//!    head ([`Step::NotPassed`]).
//! 2. Send the head with `Expect: 100-continue` and wait (up to a second) for the server's
//!    go-ahead: a refusal (401, 413, 507, bad path) costs no body bytes.
//! 3. Send the body, HTTP/1.1 in the clear: with `sendfile(2)` (page cache → socket, no copy
//!    in user space) to a TCP peer on another host; through one 1 MiB buffer (the buffer stays in
//!    the CPU cache between the two copies) on loopback and Unix sockets, where `sendfile`
//!    measured slower: the receiver's copy then reads page cache no CPU has touched lately
//!    (`Transport::sendfile_pays`). `--sendfile` / `--no-sendfile` override. Under TLS and HTTP/2
//!    the body is encrypted or framed in user space: always through the buffer. So is a body
//!    hashed as it is sent (step 1), whatever the connection: the hash needs its bytes.
//! 4. Read the answer; compare the server's SHA-256 with ours.
//!
//! Resuming (draft-ietf-httpbis-resumable-upload-12, interop version 8): the `PUT` also carries
//! `Upload-Complete: ?1`; a server that speaks the draft announces the upload resource in a
//! `104` (`Location`), recorded at once (`resume_state.rs`). On a dropped connection, an idle
//! timeout or a 5xx, after a doubling wait: `HEAD` the resource for its `Upload-Offset`, then
//! `PATCH` the rest from there (same body paths as above), at most `--retries` times. The
//! creation's `Content-Digest` covers the whole file: in its head, the server keeps it and
//! verifies it at completion (appends may not carry one); as its trailer, it is lost with a
//! cut creation, so the completing `PATCH` carries the whole file's digest as a `Repr-Digest`
//! trailer, hashed from the bytes before the offset (read again: only a resumption reads the
//! file more than once) and then from the ones it sends. Invariants: every request sends the
//! file from the offset the server last reported, never from a guess; a resource the server no
//! longer knows (404/410) restarts the upload from zero; without a `104` a retry repeats the
//! whole `PUT`.
//! `--no-resumable` sends a plain `PUT` (no draft fields, no state file): retries repeat it.

use super::conn::Connection;
use super::http::{Request, ResponseHead};
use super::resume_state::ResumeState;
use super::url::{Url, encode_segment};
use super::{ClientError, Options, connect, progress, status_error};
use crate::cli::{PutArgs, SendfileMode};
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::fs::File;
use std::time::{Duration, Instant};
use weir_proto::digest_fields::ContentDigest;

/// The interop version of draft-ietf-httpbis-resumable-upload-12, the one `weir serve` speaks.
const INTEROP_VERSION: &str = "8";

/// How long to wait for `100 Continue` before sending the body anyway (curl waits 1 s too).
const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// Runs `weir put`: one file, or a folder's files (`tree.rs`).
pub fn put(args: PutArgs) -> Result<(), ClientError> {
    if args.file.is_dir() {
        return super::tree::put_dir(args);
    }
    eprintln!("{}", put_file(args)?);
    Ok(())
}

/// Uploads one file; returns its summary line.
pub(crate) fn put_file(args: PutArgs) -> Result<String, ClientError> {
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

    // Passing the file over the Unix socket, the hash runs beside the server's copy instead
    // of before the request (see the module's documentation: "The local upload").
    let may_pass = !args.no_pass_file && options.unix.is_some() && !url.https && len > 0;
    // The digest follows the body as a trailer, hashed from the buffers the body is sent from:
    // the file is read once, and the hash overlaps the transfer. `--sendfile` keeps the
    // digest in the head (the bytes then never enter user space to be hashed on the way).
    let trailer = !args.no_digest && !may_pass && len > 0 && sendfile != SendfileMode::Always;
    let started = Instant::now();
    let mut hashing = None;
    let mut hashed = None;
    if args.no_digest || trailer {
        // Nothing to hash first: the server verifies the length only, or the trailer.
    } else if may_pass {
        let copy = file
            .try_clone()
            .map_err(|e| ClientError::new(format!("{shown}: {e}")))?;
        hashing = Some(std::thread::spawn(move || hash_file(&copy, len, false)));
    } else {
        hashed = Some(hash(&file, len, &shown)?);
    }
    let mut job = Job {
        file: &file,
        len,
        url: &url,
        options: &options,
        sendfile,
        digest: hashed.as_ref().map(digest_header),
        idle: (args.timeout > 0.0).then(|| Duration::from_secs_f64(args.timeout)),
        resumable: !args.no_resumable,
        pass_file: !args.no_pass_file,
        digest_later: hashing.is_some(),
        trailer,
        streamed: Cell::new(None),
        overwrite: args.overwrite,
    };
    let full_url = format!(
        "{}://{}{}",
        if url.https { "https" } else { "http" },
        url.authority,
        url.target
    );
    let state = ResumeState::new(&args.file, &meta, &full_url);
    let mut resumption = Resumption {
        // `--no-resumable` starts afresh, whatever an earlier run left.
        upload: job.resumable.then(|| state.load()).flatten(),
        ..Resumption::default()
    };
    if args.resume && resumption.upload.is_none() {
        return Err(ClientError::new(format!(
            "no interrupted upload of {shown} to {full_url} to resume"
        )));
    }
    let mut failures = 0u32;
    let answer = loop {
        resumption.attempts += 1;
        let step = match resumption.upload.clone() {
            Some(upload) => job.resume(&upload, &mut resumption),
            None => job.create(&state, &mut resumption),
        };
        let why = match step {
            Ok(answer) => break answer,
            Err(Step::Fatal(e)) => return Err(e),
            Err(Step::Gone) => {
                // Expired or cancelled on the server: start over, at once. Not counted as a
                // failure: it happens at most once per resource the server announced.
                eprintln!("weir: the server no longer knows the upload; starting over");
                state.remove();
                resumption.upload = None;
                resumption.sent_end = None;
                continue;
            }
            Err(Step::Retry(why)) => why,
            Err(Step::NotPassed) => {
                // The file could not be passed after all: the digest goes in the head, as for
                // any upload. Not a failure: the server stored nothing.
                let own = join_hash(hashing.take(), &shown)?;
                job.digest = Some(digest_header(&own));
                job.digest_later = false;
                hashed = Some(own);
                continue;
            }
            Err(Step::NoTrailer) => {
                // Refused before a body byte: nothing stored, no upload created.
                let own = hash(&file, len, &shown)?;
                job.digest = Some(digest_header(&own));
                job.trailer = false;
                hashed = Some(own);
                continue;
            }
        };
        failures += 1;
        if failures > args.retries {
            let tries = failures;
            let kept = match &resumption.upload {
                Some(_) => "; `weir put` with the same FILE and URL resumes it",
                None => "",
            };
            return Err(ClientError::new(format!(
                "upload failed after {tries} tries: {why}{kept}"
            )));
        }
        let wait = backoff(args.retry_delay, failures);
        eprintln!(
            "weir: {why}; retrying in {} ({failures} of {})",
            progress::secs(wait),
            args.retries
        );
        std::thread::sleep(wait);
    };
    state.remove();
    if hashing.is_some() {
        hashed = Some(join_hash(hashing.take(), &shown)?);
    }
    let streamed = job.streamed.get().filter(|_| hashed.is_none());
    let elapsed = started.elapsed();
    let server_sha = answer
        .as_ref()
        .and_then(|a| a.get("sha256"))
        .and_then(|v| v.as_str());
    // The speed is that of the bytes this run moved: a resumed run sends only the rest, and
    // the server copies a passed file itself.
    let moved = if resumption.passed_file {
        len
    } else {
        resumption.sent_this_run
    };
    let mut summary = format!(
        "Uploaded {} in {} ({}: this run sent {moved} bytes)",
        progress::bytes(len),
        progress::secs(elapsed),
        progress::rate(moved, elapsed),
    );
    if let Some(offset) = resumption.resumed_at.filter(|&o| o > 0) {
        summary.push_str(&format!(
            "; resumed at byte {offset} ({} already on the server from an earlier run)",
            progress::bytes(offset)
        ));
    }
    if resumption.resumes > 0 {
        let times = if resumption.resumes == 1 {
            "time"
        } else {
            "times"
        };
        summary.push_str(&format!(
            "; resumed {} {times}, {} sent twice",
            resumption.resumes,
            progress::bytes(resumption.sent_twice)
        ));
    }
    if answer.is_none() {
        summary.push_str("; completed by an earlier attempt");
    }
    if resumption.passed_file {
        summary.push_str("; the server copied the file itself, no byte through the socket");
    }
    if let Some((sha256, took)) = &hashed {
        let ours = crate::serve::hex(sha256);
        if let Some(theirs) = server_sha {
            if theirs != ours {
                return Err(ClientError::new(format!(
                    "the server stored a different SHA-256 ({theirs}) than the file's ({ours})"
                )));
            }
        }
        let how = if job.digest_later {
            if server_sha.is_none() && answer.is_some() {
                return Err(ClientError::new(
                    "the server took the file but did not answer its SHA-256: not verified",
                ));
            }
            "beside the server's copy, equal to the stored copy's"
        } else {
            "verified by the server"
        };
        summary.push_str(&format!(
            "; hashed in {} ({}), {how}",
            progress::secs(*took),
            progress::rate(len, *took)
        ));
    } else if let Some(sha256) = streamed {
        let ours = crate::serve::hex(&sha256);
        if let Some(theirs) = server_sha {
            if theirs != ours {
                return Err(ClientError::new(format!(
                    "the server stored a different SHA-256 ({theirs}) than the file's ({ours})"
                )));
            }
        }
        summary.push_str("; hashed while sending, verified by the server");
    }
    Ok(summary)
}

/// The wait before retry number `n` (from 1): `first`, doubling, at most 8 s (or `first`).
fn backoff(first: f64, n: u32) -> Duration {
    let cap = first.max(8.0);
    Duration::from_secs_f64((first * 2f64.powi(n.saturating_sub(1).min(30) as i32)).min(cap))
}

/// What one upload (of one file to one URL) sends, whatever request carries it.
struct Job<'a> {
    file: &'a File,
    len: u64,
    url: &'a Url,
    options: &'a Options,
    sendfile: SendfileMode,
    digest: Option<(&'static str, String)>,
    idle: Option<Duration>,
    /// Send the draft's fields with the creation (`--no-resumable` leaves them out).
    resumable: bool,
    /// Pass the open file with the `PUT` when the connection allows (`--no-pass-file`: never).
    pass_file: bool,
    /// The file is hashed beside the server's copy (no `digest` yet): only a request that
    /// passes the file may go; any other is [`Step::NotPassed`] before a body byte is sent.
    digest_later: bool,
    /// The digest goes as a trailer after the body, hashed as it is sent (no `digest`): a
    /// `Content-Digest` of a `PUT`, a `Repr-Digest` (the whole file's) of a `PATCH`.
    trailer: bool,
    /// The SHA-256 the last request that sent the file to its end sent as its trailer.
    streamed: Cell<Option<[u8; 32]>>,
    /// `--overwrite`: the creation may replace a file. Without it, it carries
    /// `If-None-Match: *` (kept by the server for a resumable upload's completion too), and a
    /// `412` is the file already there.
    overwrite: bool,
}

/// Where the upload stands across attempts.
#[derive(Default)]
struct Resumption {
    /// The upload resource (absolute URL), once the server announced it.
    upload: Option<String>,
    /// Attempts made, this one included.
    attempts: u32,
    /// How far the last attempt sent the file (offset of its first byte + bytes sent).
    sent_end: Option<u64>,
    resumes: u32,
    /// Bytes sent beyond the offset the server had when the upload was resumed.
    sent_twice: u64,
    /// The server took the passed file: it stored the upload without a body byte.
    passed_file: bool,
    /// Body bytes this run sent (every attempt's), for its speed: a run that resumes an
    /// earlier one's upload sends only the rest.
    sent_this_run: u64,
    /// The offset this run started from when it resumed an earlier run's upload.
    resumed_at: Option<u64>,
}

/// Why an attempt did not complete the upload.
enum Step {
    /// A dropped connection, a timeout, a 5xx: worth another try.
    Retry(String),
    /// The upload resource is unknown to the server (404, 410).
    Gone,
    Fatal(ClientError),
    /// The file was to be passed with its digest computed meanwhile, but the connection cannot
    /// pass it or the server wants the bytes (`100 Continue`): send it again with the digest.
    NotPassed,
    /// The server refused the digest as a trailer (`501` before the body: a server that needs
    /// it first, as `weir serve --store s3://` did before it verified trailers): send it
    /// again, hashed first, with the digest in the head.
    NoTrailer,
}

/// A retryable failure from an I/O error.
fn io_step(e: std::io::Error) -> Step {
    Step::Retry(format!("upload interrupted: {e}"))
}

/// The final answer of an attempt: `Some(JSON)` from the request that stored the file,
/// `None` when the server says an earlier attempt completed it.
type Answer = Option<serde_json::Value>;

impl Job<'_> {
    /// Connects; `first` says that no attempt reached the server yet, when a refused
    /// connection is a wrong address rather than a server being restarted: fatal.
    fn connect(&self, url: &Url, first: bool) -> Result<Connection, Step> {
        let mut conn = connect(url, self.options).map_err(|e| {
            // A server being restarted refuses connections for a while; TLS failures stay.
            if !first && e.to_string().starts_with("cannot connect") {
                Step::Retry(e.to_string())
            } else {
                Step::Fatal(e)
            }
        })?;
        conn.set_idle_timeout(self.idle).map_err(io_step)?;
        Ok(conn)
    }

    /// The creation: the whole file in one `PUT`, with the draft's fields.
    /// A `104` names the upload resource, recorded in `state` before the body is sent.
    fn create(&self, state: &ResumeState, progress: &mut Resumption) -> Result<Answer, Step> {
        let mut headers = vec![
            ("content-length", self.len.to_string()),
            ("content-type", "application/octet-stream".to_owned()),
        ];
        if self.resumable {
            headers.push(("upload-complete", "?1".to_owned()));
            headers.push(("upload-draft-interop-version", INTEROP_VERSION.to_owned()));
            if self.trailer {
                // A chunked body has no Content-Length: the length goes in the draft's field.
                headers.push(("upload-length", self.len.to_string()));
            }
        }
        // The creation carries the whole file: the server keeps this digest and verifies it
        // at completion, however many appends that takes.
        headers.extend(self.digest.clone());
        if !self.overwrite {
            // Create, never replace: judged by the server atomically with the commit (and
            // again at a resumable upload's completion).
            headers.push(("if-none-match", "*".to_owned()));
        }
        let url = self.url;
        let mut announced = |head: &ResponseHead| {
            if head.status != 104 {
                return;
            }
            if let Some(location) = head.header("location") {
                let upload = absolute(url, location);
                state.save(&upload);
                progress.upload = Some(upload);
            }
        };
        let mut sent_end = 0;
        let first = progress.attempts == 1;
        let result = self.exchange(
            "PUT",
            (self.url, first),
            headers,
            (0, Sha256::new()),
            &mut announced,
            &mut sent_end,
        );
        progress.sent_end = Some(sent_end);
        progress.sent_this_run += sent_end;
        let (mut conn, head) = result?;
        // A server that takes a passed file answers without `100 Continue` and without a body
        // byte; any other server needs the body before it can store anything.
        progress.passed_file =
            self.pass_file && self.len > 0 && sent_end == 0 && (200..300).contains(&head.status);
        self.finish(&mut conn, "PUT", &head)
    }

    /// Asks the server's offset and appends the rest of the file from there.
    fn resume(&self, upload: &str, progress: &mut Resumption) -> Result<Answer, Step> {
        let url = Url::parse(upload).map_err(Step::Fatal)?;
        let mut conn = self.connect(&url, false)?;
        let mut headers = vec![("upload-draft-interop-version", INTEROP_VERSION.to_owned())];
        headers.extend(self.options.auth_header());
        let request = Request {
            method: "HEAD",
            target: &url.target,
            host: &url.host,
            headers,
        };
        conn.send_head(&request, false).map_err(io_step)?;
        let head = final_head(&mut conn, &mut |_| {}).map_err(io_step)?;
        match head.status {
            404 | 410 => return Err(Step::Gone),
            200..=299 => {}
            500.. => {
                return Err(Step::Retry(format!(
                    "server answered {} {}",
                    head.status, head.reason
                )));
            }
            _ => return Err(Step::Fatal(status_error(&mut conn, "HEAD", &head))),
        }
        if head.header("upload-complete") == Some("?1") {
            return Ok(None);
        }
        let offset = head
            .header("upload-offset")
            .and_then(|o| o.trim().parse::<u64>().ok())
            .filter(|&o| o <= self.len)
            .ok_or_else(|| {
                Step::Fatal(ClientError::new(format!(
                    "the server reports no usable offset for {upload}"
                )))
            })?;
        drop(conn);
        if progress.attempts == 1 {
            // This run's first request resumes an upload an earlier run left.
            progress.resumed_at = Some(offset);
        }
        progress.resumes += 1;
        if let Some(end) = progress.sent_end {
            progress.sent_twice += end.saturating_sub(offset);
        }
        let headers = vec![
            ("content-length", (self.len - offset).to_string()),
            ("content-type", "application/partial-upload".to_owned()),
            ("upload-offset", offset.to_string()),
            ("upload-complete", "?1".to_owned()),
            ("upload-draft-interop-version", INTEROP_VERSION.to_owned()),
            ("upload-length", self.len.to_string()),
        ];
        // The trailer is the whole file's digest: the bytes before the offset were sent by an
        // earlier attempt, perhaps an earlier run, so they are hashed again here (a resumption
        // reads them once more; an upload that is not cut reads the file once).
        let mut prefix = Sha256::new();
        if self.trailer && offset > 0 {
            hash_range(self.file, offset, &mut prefix).map_err(io_step)?;
        }
        let mut sent_end = offset;
        let result = self.exchange(
            "PATCH",
            (&url, false),
            headers,
            (offset, prefix),
            &mut |_| {},
            &mut sent_end,
        );
        progress.sent_end = Some(sent_end);
        progress.sent_this_run += sent_end - offset;
        let (mut conn, head) = result?;
        match head.status {
            404 | 410 => Err(Step::Gone),
            // The offset moved (another writer, or an append still finishing): ask again.
            409 => Err(Step::Retry(
                status_error(&mut conn, "PATCH", &head).to_string(),
            )),
            _ => self.finish(&mut conn, "PATCH", &head),
        }
    }

    /// One request to `url` whose body is the file from `offset` to its end: head (with
    /// `Expect: 100-continue`), interim answers to `interim`, body, final head. `sent_end`
    /// follows how far the body got; `first`: see [`Job::connect`].
    fn exchange(
        &self,
        method: &str,
        (url, first): (&Url, bool),
        mut headers: Vec<(&'static str, String)>,
        (offset, mut hasher): (u64, Sha256),
        interim: &mut dyn FnMut(&ResponseHead),
        sent_end: &mut u64,
    ) -> Result<(Connection, ResponseHead), Step> {
        let len = self.len - offset;
        if len > 0 {
            headers.push(("expect", "100-continue".to_owned()));
        }
        headers.extend(self.options.auth_header());
        let mut conn = self.connect(url, first)?;
        // The local upload (serve/passed_file.rs): the whole file, passed with the head. The
        // server copies it in one step, so there is nothing to resume: the draft's fields go
        // (they would route the request to the draft's creation, which reads the body). A
        // server that does not take the file answers 100 Continue and gets the bytes below.
        let passing =
            self.pass_file && method == "PUT" && offset == 0 && len > 0 && conn.can_pass_file();
        if passing {
            headers.retain(|(name, _)| !name.starts_with("upload-"));
            headers.push(("weir-fd", "1".to_owned()));
            if self.digest_later {
                // Our hash is compared with the server's, which must then compute one.
                headers.push(("weir-fd-hash", "sha-256".to_owned()));
            }
        } else if self.digest_later {
            return Err(Step::NotPassed);
        }
        // The digest as a trailer: HTTP/1.1 needs a chunked body to carry one; HTTP/2 keeps
        // the length and ends the stream with a HEADERS frame.
        // An empty append still carries it: the server may hold every byte of a creation cut
        // before its trailer, and completes the upload only with the digest checked.
        let trailer = (self.trailer && !passing && (len > 0 || method == "PATCH")).then_some(
            if method == "PUT" {
                "content-digest"
            } else {
                "repr-digest"
            },
        );
        if let Some(name) = trailer {
            if !conn.is_h2() {
                headers.retain(|(name, _)| *name != "content-length");
                headers.push(("transfer-encoding", "chunked".to_owned()));
            }
            headers.push(("trailer", name.to_owned()));
        }
        let request = Request {
            method,
            target: &url.target,
            host: &url.host,
            headers,
        };
        if passing {
            conn.send_head_passing(&request, self.file)
        } else {
            conn.send_head(&request, len > 0 || trailer.is_some())
        }
        .map_err(io_step)?;
        let mut early: Option<ResponseHead> = None;
        // A passed file is answered once the server has copied and hashed it, which may take
        // long: the body goes only after a `100 Continue` (the server did not take the file),
        // never after a timeout, else it would meet a server that has answered and closed.
        let continue_wait = if passing { None } else { Some(CONTINUE_WAIT) };
        if len > 0 {
            loop {
                match conn.read_head(continue_wait).map_err(io_step)? {
                    Some(head) if head.status == 100 => break,
                    Some(head) if (101..200).contains(&head.status) => interim(&head),
                    Some(head) => {
                        early = Some(head);
                        break;
                    }
                    None => break,
                }
            }
        }
        let head = match early {
            Some(head) if trailer.is_some() && head.status == 501 => return Err(Step::NoTrailer),
            // The server answered before the body: a refusal (or a server that needed no body).
            Some(head) => head,
            // The server wants the bytes, and the digest is not in the head: closing the
            // connection now leaves nothing stored, and the request goes again with it.
            None if passing && self.digest_later => return Err(Step::NotPassed),
            None => {
                let bar = progress::bar(self.len, "Uploading");
                bar.set_position(offset);
                let mut on_sent = |n| {
                    *sent_end = offset + n;
                    bar.set_position(offset + n);
                };
                let sent = match trailer {
                    Some(name) => {
                        let digest = (name, &mut hasher);
                        let range = (offset, len);
                        let sent = conn.send_file_digest(self.file, range, digest, &mut on_sent);
                        sent.map(|sha256| self.streamed.set(Some(sha256)))
                    }
                    None => conn.send_file(self.file, offset, len, self.sendfile, &mut on_sent),
                };
                bar.finish_and_clear();
                if let Err(e) = sent {
                    // The server may have answered (507, 413) and closed: show its reason.
                    if let Ok(Some(head)) = conn.read_head(Some(Duration::from_secs(2))) {
                        if head.status >= 400 {
                            return Ok((conn, head));
                        }
                    }
                    return Err(io_step(e));
                }
                final_head(&mut conn, interim).map_err(io_step)?
            }
        };
        Ok((conn, head))
    }

    /// The outcome of the request that sent the rest of the file.
    fn finish(
        &self,
        conn: &mut Connection,
        method: &str,
        head: &ResponseHead,
    ) -> Result<Answer, Step> {
        if head.status >= 500 {
            return Err(Step::Retry(status_error(conn, method, head).to_string()));
        }
        if head.status == 412 && !self.overwrite {
            return Err(Step::Fatal(ClientError::exists(format!(
                "not uploaded: a file is already at {} on the server, and weir put does not \
                 replace one unless told to (--overwrite)",
                self.url.path()
            ))));
        }
        if !(200..300).contains(&head.status) {
            return Err(Step::Fatal(status_error(conn, method, head)));
        }
        let mut body = conn.body(method, head).map_err(io_step)?;
        let text = conn.read_text(&mut body, 64 * 1024).map_err(io_step)?;
        Ok(Some(serde_json::from_str(&text).unwrap_or_default()))
    }
}

/// `location` (absolute, or a path on the server of `url`) as an absolute URL.
fn absolute(url: &Url, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let scheme = if url.https { "https" } else { "http" };
    format!("{scheme}://{}{location}", url.authority)
}

/// The final response, passing interim ones (a late `100 Continue`, a `104`) to `interim`.
fn final_head(
    conn: &mut Connection,
    interim: &mut dyn FnMut(&ResponseHead),
) -> std::io::Result<ResponseHead> {
    loop {
        let head = conn
            .read_head(None)?
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut))?;
        if !(100..200).contains(&head.status) {
            return Ok(head);
        }
        interim(&head);
    }
}

/// The file's SHA-256 and the time it took, before the request.
fn hash(file: &File, len: u64, shown: &str) -> Result<([u8; 32], Duration), ClientError> {
    hash_file(file, len, true).map_err(|e| ClientError::new(format!("{shown}: {e}")))
}

/// The hash computed beside the request ([`hash_file`] on its thread).
type Hashing = std::thread::JoinHandle<std::io::Result<([u8; 32], Duration)>>;

/// The result of the hash computed beside the request.
fn join_hash(hashing: Option<Hashing>, shown: &str) -> Result<([u8; 32], Duration), ClientError> {
    let joined = hashing
        .ok_or_else(|| ClientError::new("no hash of the file under way"))?
        .join()
        .map_err(|_| ClientError::new(format!("{shown}: the hashing thread failed")))?;
    joined.map_err(|e| ClientError::new(format!("{shown}: {e}")))
}

/// The `Content-Digest` field of a SHA-256.
fn digest_header((sha256, _): &([u8; 32], Duration)) -> (&'static str, String) {
    let digest = ContentDigest {
        sha256: Some(*sha256),
        sha512: None,
    };
    ("content-digest", digest.to_header_value())
}

/// Feeds the file's first `len` bytes to `hasher` (a resumed upload's trailer digest covers
/// the bytes sent before).
fn hash_range(file: &File, len: u64, hasher: &mut Sha256) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    // COPY: page cache → this buffer, hashed in place; only when an upload is resumed.
    let mut buf = vec![0u8; 1024 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = file.read_at(&mut buf[..want], done)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was being hashed",
            ));
        }
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(())
}

/// SHA-256 of the file's `len` bytes, and how long it took; with a progress bar if `bar`.
/// Reads at explicit offsets: the file's position is not used, so the hash can run while the
/// same open file is passed to the server, or sent.
fn hash_file(file: &File, len: u64, bar: bool) -> std::io::Result<([u8; 32], Duration)> {
    use std::os::unix::fs::FileExt;
    let started = Instant::now();
    let bar = if bar {
        progress::bar(len, "Hashing  ")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut hasher = Sha256::new();
    // COPY: page cache → this buffer, which the hasher reads in place. 1 MiB: few syscalls.
    let mut buf = vec![0u8; 1024 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = file.read_at(&mut buf[..want], done)?;
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
