//! `weir get URL [FILE]`: download a file, verified, written atomically, resumed when cut.
//!
//! The body goes into a partial file next to the destination (`.NAME.weir-get.partial`),
//! hashed as it is written when the server sends `Repr-Digest` (RFC 9530; weir serve does when
//! it knows the file's SHA-256). Only a complete body whose digest matches is fsynced and
//! renamed over the destination.
//!
//! Resuming: beside the partial file, `.NAME.weir-get.state` records the URL and the `ETag` of
//! the version being downloaded, written before the first body byte. A download cut by a
//! failure or by killing the client leaves both; the next `weir get` of the same URL to the
//! same destination asks for the rest (`Range: bytes=N-` with `If-Range: ETAG`, RFC 9110
//! §13.1.5): a `206` from `N` is appended, the `N` bytes already there hashed first, so the
//! digest checked at the end is the whole file's whatever run wrote which part; a `200` (the
//! file changed, or the server ignores ranges) starts over from zero. A digest mismatch
//! removes the partial file and its state: nothing unverified is ever kept as the file, nor
//! resumed from. Without an `ETag` nothing is recorded and a cut download starts over.
//!
//! The destination is never replaced unless `--overwrite` is given (checked before anything is
//! asked of the server).

use super::http::Request;
use super::url::Url;
use super::{ClientError, Options, connect, progress, status_error};
use crate::cli::GetArgs;
use sha2::{Digest, Sha256, Sha512};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use weir_proto::digest_fields::ContentDigest;

/// Runs `weir get`: one file, or a folder's files when the URL ends in `/` (`tree.rs`).
pub fn get(args: GetArgs) -> Result<(), ClientError> {
    if args
        .url
        .split(['?', '#'])
        .next()
        .is_some_and(|p| p.ends_with('/'))
    {
        return super::tree::get_dir(args);
    }
    eprintln!("{}", get_file(args)?);
    Ok(())
}

/// Downloads one file; returns its summary line.
pub(crate) fn get_file(args: GetArgs) -> Result<String, ClientError> {
    let options = Options::from_args(args.client);
    let url = Url::parse(&args.url)?;
    let name = url_file_name(&url)?;
    let dest = match args.file {
        Some(p) if p.is_dir() => p.join(&name),
        Some(p) => p,
        None => PathBuf::from(&name),
    };
    if !args.overwrite && fs::symlink_metadata(&dest).is_ok() {
        return Err(ClientError::exists(format!(
            "{} exists: not replaced (weir get --overwrite replaces it)",
            dest.display()
        )));
    }
    let started = Instant::now();
    let partial = Partial::at(&dest, &args.url);
    // The first attempt asks for the rest of a recorded partial download; a `416` (the
    // partial is not a prefix of this file) asks again for the whole file.
    let mut resume = partial.recorded();
    loop {
        match download(&url, &options, &partial, resume.take(), &dest)? {
            Some(outcome) => return Ok(report(&outcome, started, &dest)),
            None => partial.discard(),
        }
    }
}

/// What one download did, for its summary line.
struct Outcome {
    /// Bytes received by this run.
    received: u64,
    /// Where this run started: the bytes a partial file of an earlier run held.
    resumed_at: u64,
    verified: Vec<&'static str>,
}

/// One request for the file (the rest of it after `resume`'s offset, if given): `None` when
/// the server cannot answer that range (`416`): the partial file is not of this file.
fn download(
    url: &Url,
    options: &Options,
    partial: &Partial,
    resume: Option<(u64, String)>,
    dest: &Path,
) -> Result<Option<Outcome>, ClientError> {
    let mut conn = connect(url, options)?;
    let mut headers: Vec<(&str, String)> = options.auth_header().into_iter().collect();
    if let Some((offset, etag)) = &resume {
        headers.push(("range", format!("bytes={offset}-")));
        headers.push(("if-range", etag.clone()));
    }
    let request = Request {
        method: "GET",
        target: &url.target,
        host: &url.host,
        headers,
    };
    let io = |e: std::io::Error| {
        ClientError::new(format!(
            "download failed: {e} (weir get with the same URL and FILE resumes it)"
        ))
    };
    conn.send_head(&request, false).map_err(io)?;
    let head = conn
        .read_head(None)
        .map_err(io)?
        .ok_or_else(|| ClientError::new("download failed: no answer"))?;
    let offset = match (head.status, &resume) {
        (200, _) => 0,
        (206, Some((offset, _))) => {
            // `bytes START-END/SIZE`: only the range asked for is appended.
            let start = head
                .header("content-range")
                .and_then(|v| v.trim().strip_prefix("bytes "))
                .and_then(|v| v.split('-').next())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if start != Some(*offset) {
                return Err(ClientError::new(
                    "the server answered another range than the one asked for",
                ));
            }
            *offset
        }
        (416, Some(_)) => return Ok(None),
        _ => return Err(status_error(&mut conn, "GET", &head)),
    };
    let expected = match head.joined("repr-digest") {
        Some(value) => ContentDigest::parse(&value).map_err(|e| {
            ClientError::new(format!("the server sent a malformed Repr-Digest: {e}"))
        })?,
        None => ContentDigest::default(),
    };
    let total = head
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|n| n + offset);
    let mut body = conn.body("GET", &head).map_err(io)?;

    let mut sha256 = expected.sha256.map(|_| Sha256::new());
    let mut sha512 = expected.sha512.map(|_| Sha512::new());
    let mut file = partial.open(offset)?;
    if offset > 0 {
        // The bytes an earlier run wrote are hashed again: the digest checked is the whole
        // file's, so they are verified with the rest.
        hash_prefix(&mut file, offset, &mut sha256, &mut sha512)
            .map_err(|e| ClientError::new(format!("{}: {e}", partial.data.display())))?;
    }
    // Recorded before the first body byte, so that a kill at any point leaves a partial file
    // that the next run can ask the rest of (with no validator, it could not: none kept).
    match head.header("etag").filter(|e| !e.trim().starts_with("W/")) {
        Some(etag) => partial.record(etag.trim()),
        None => partial.forget(),
    }
    let bar = progress::bar(total.unwrap_or(0), "Downloading");
    bar.set_position(offset);
    // Socket → this buffer (directly, when nothing is buffered) → hashers and file.
    let mut buf = vec![0u8; 1024 * 1024];
    let mut received = 0u64;
    loop {
        let n = conn.read_body(&mut body, &mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        if let Some(h) = &mut sha256 {
            h.update(chunk);
        }
        if let Some(h) = &mut sha512 {
            h.update(chunk);
        }
        file.write_all(chunk)
            .map_err(|e| ClientError::new(format!("{}: {e}", partial.data.display())))?;
        received += n as u64;
        bar.set_position(offset + received);
    }
    bar.finish_and_clear();

    let mut verified = Vec::new();
    let checked = (|| {
        if let (Some(h), Some(want)) = (sha256, expected.sha256) {
            check("sha-256", h.finalize().as_slice(), &want)?;
            verified.push("sha-256");
        }
        if let (Some(h), Some(want)) = (sha512, expected.sha512) {
            check("sha-512", h.finalize().as_slice(), &want)?;
            verified.push("sha-512");
        }
        Ok(())
    })();
    if let Err(e) = checked {
        // Never resumed from: its bytes are not those of the file.
        partial.discard();
        return Err(e);
    }
    partial.commit(file, dest)?;
    Ok(Some(Outcome {
        received,
        resumed_at: offset,
        verified,
    }))
}

/// The summary line: this run's bytes over this run's time, and where it resumed.
fn report(outcome: &Outcome, started: Instant, dest: &Path) -> String {
    let elapsed = started.elapsed();
    let check_note = if outcome.verified.is_empty() {
        "no digest from the server".to_owned()
    } else {
        format!("{} verified", outcome.verified.join(" and "))
    };
    let resumed = if outcome.resumed_at > 0 {
        format!(
            "; resumed at byte {} ({} were there from an earlier run)",
            outcome.resumed_at,
            progress::bytes(outcome.resumed_at)
        )
    } else {
        String::new()
    };
    format!(
        "Downloaded {} in {} ({}) to {}{resumed}, {check_note}",
        progress::bytes(outcome.received),
        progress::secs(elapsed),
        progress::rate(outcome.received, elapsed),
        dest.display()
    )
}

/// Feeds the first `len` bytes of `file` to the hashers; leaves it positioned at `len`.
fn hash_prefix(
    file: &mut File,
    len: u64,
    sha256: &mut Option<Sha256>,
    sha512: &mut Option<Sha512>,
) -> std::io::Result<()> {
    file.rewind()?;
    let mut buf = vec![0u8; 1024 * 1024];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if let Some(h) = sha256 {
            h.update(&buf[..n]);
        }
        if let Some(h) = sha512 {
            h.update(&buf[..n]);
        }
        left -= n as u64;
    }
    Ok(())
}

fn check(algorithm: &str, got: &[u8], want: &[u8]) -> Result<(), ClientError> {
    if got == want {
        Ok(())
    } else {
        Err(ClientError::new(format!(
            "download corrupted: {algorithm} does not match the server's Repr-Digest (nothing written)"
        )))
    }
}

/// The last segment of the URL's path, percent-decoded, as a local file name.
fn url_file_name(url: &Url) -> Result<String, ClientError> {
    let last = url.path().rsplit('/').next().unwrap_or("");
    let name = crate::serve::percent_decode(last).unwrap_or_default();
    // The store's own rules for a name: a file the server could serve under this name is one
    // this client is willing to create (no `..`, separator, control or invisible character).
    if weir_store::validate_name(&name).is_ok() {
        Ok(name)
    } else {
        Err(ClientError::new(format!(
            "cannot name the file after {:?}: give a FILE argument",
            url.path()
        )))
    }
}

/// A download's partial file and its state file, next to the destination.
struct Partial {
    /// `.NAME.weir-get.partial`: the bytes received so far.
    data: PathBuf,
    /// `.NAME.weir-get.state`: `{"url":…,"etag":…}` of the version `data` holds the start of.
    state: PathBuf,
    url: String,
}

impl Partial {
    fn at(dest: &Path, url: &str) -> Self {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let base = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "download".to_owned());
        Self {
            data: dir.join(format!(".{base}.weir-get.partial")),
            state: dir.join(format!(".{base}.weir-get.state")),
            url: url.to_owned(),
        }
    }

    /// The offset and `ETag` to resume from: a partial file of this URL that holds bytes.
    fn recorded(&self) -> Option<(u64, String)> {
        let text = fs::read_to_string(&self.state).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        if value.get("url")?.as_str()? != self.url {
            return None;
        }
        let etag = value.get("etag")?.as_str()?.to_owned();
        let len = fs::metadata(&self.data).ok()?.len();
        (len > 0).then_some((len, etag))
    }

    /// The partial file, open for writing at `offset` (cut back to it; `0`: emptied).
    fn open(&self, offset: u64) -> Result<File, ClientError> {
        let fail = |e: std::io::Error| ClientError::new(format!("{}: {e}", self.data.display()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.data)
            .map_err(fail)?;
        file.set_len(offset).map_err(fail)?;
        file.seek(std::io::SeekFrom::Start(offset)).map_err(fail)?;
        Ok(file)
    }

    /// Records the version being downloaded. Failing to is not fatal: the download goes on,
    /// it only cannot be resumed by another run.
    fn record(&self, etag: &str) {
        let text = serde_json::json!({ "url": self.url, "etag": etag }).to_string();
        if let Err(e) = fs::write(&self.state, text) {
            eprintln!(
                "weir: cannot record the download's state in {}: {e}",
                self.state.display()
            );
        }
    }

    /// No version to resume against: the state goes (the partial file is emptied by the next
    /// run's `open(0)`).
    fn forget(&self) {
        let _ = fs::remove_file(&self.state);
    }

    /// Both files removed: nothing to resume from.
    fn discard(&self) {
        let _ = fs::remove_file(&self.state);
        let _ = fs::remove_file(&self.data);
    }

    /// fsync, rename over `dest`, fsync the directory; the state removed.
    fn commit(&self, file: File, dest: &Path) -> Result<(), ClientError> {
        let fail = |what: &str, e: std::io::Error| ClientError::new(format!("{what}: {e}"));
        file.sync_all()
            .map_err(|e| fail(&self.data.display().to_string(), e))?;
        drop(file);
        fs::rename(&self.data, dest).map_err(|e| fail(&dest.display().to_string(), e))?;
        let _ = fs::remove_file(&self.state);
        if let Some(dir) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| fail(&dir.display().to_string(), e))?;
        }
        Ok(())
    }
}
