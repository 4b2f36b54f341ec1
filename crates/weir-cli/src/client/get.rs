//! `weir get URL [FILE]`: download a file, verified and written atomically.
//!
//! The body goes into a temporary file next to the destination (`.NAME.weir-get-PID.tmp`),
//! hashed as it is written when the server sends `Repr-Digest` (RFC 9530; weir serve does when
//! it knows the file's SHA-256). Only a complete body whose digest matches is fsynced and
//! renamed over the destination; anything else removes the temporary and leaves the
//! destination as it was.

use super::http::Request;
use super::url::Url;
use super::{ClientError, Options, connect, progress, status_error};
use crate::cli::GetArgs;
use sha2::{Digest, Sha256, Sha512};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use weir_proto::digest_fields::ContentDigest;

/// Runs `weir get`.
pub fn get(args: GetArgs) -> Result<(), ClientError> {
    let options = Options::from_args(args.client);
    let url = Url::parse(&args.url)?;
    let name = url_file_name(&url)?;
    let dest = match args.file {
        Some(p) if p.is_dir() => p.join(&name),
        Some(p) => p,
        None => PathBuf::from(&name),
    };
    let started = Instant::now();
    let mut conn = connect(&url, &options)?;
    let headers = options.auth_header().into_iter().collect();
    let request = Request {
        method: "GET",
        target: &url.target,
        host: &url.host,
        headers,
    };
    let io = |e: std::io::Error| ClientError::new(format!("download failed: {e}"));
    conn.send_head(&request, false).map_err(io)?;
    let head = conn
        .read_head(None)
        .map_err(io)?
        .ok_or_else(|| ClientError::new("download failed: no answer"))?;
    if head.status != 200 {
        return Err(status_error(&mut conn, "GET", &head));
    }
    let expected = match head.joined("repr-digest") {
        Some(value) => ContentDigest::parse(&value).map_err(|e| {
            ClientError::new(format!("the server sent a malformed Repr-Digest: {e}"))
        })?,
        None => ContentDigest::default(),
    };
    let total = head
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mut body = conn.body("GET", &head).map_err(io)?;

    let mut temp = TempFile::create(&dest)?;
    let mut sha256 = expected.sha256.map(|_| Sha256::new());
    let mut sha512 = expected.sha512.map(|_| Sha512::new());
    let bar = progress::bar(total.unwrap_or(0), "Downloading");
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
        temp.file
            .write_all(chunk)
            .map_err(|e| ClientError::new(format!("{}: {e}", temp.path.display())))?;
        received += n as u64;
        bar.set_position(received);
    }
    bar.finish_and_clear();

    let mut verified = Vec::new();
    if let (Some(h), Some(want)) = (sha256, expected.sha256) {
        check("sha-256", h.finalize().as_slice(), &want)?;
        verified.push("sha-256");
    }
    if let (Some(h), Some(want)) = (sha512, expected.sha512) {
        check("sha-512", h.finalize().as_slice(), &want)?;
        verified.push("sha-512");
    }
    temp.commit(&dest)?;
    let elapsed = started.elapsed();
    let check_note = if verified.is_empty() {
        "no digest from the server".to_owned()
    } else {
        format!("{} verified", verified.join(" and "))
    };
    eprintln!(
        "Downloaded {} in {} ({}) to {}, {check_note}",
        progress::bytes(received),
        progress::secs(elapsed),
        progress::rate(received, elapsed),
        dest.display()
    );
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

/// The temporary file of a download; removed on drop unless committed.
struct TempFile {
    path: PathBuf,
    file: File,
    committed: bool,
}

impl TempFile {
    fn create(dest: &Path) -> Result<Self, ClientError> {
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let base = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "download".to_owned());
        let path = dir.join(format!(".{base}.weir-get-{}.tmp", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| ClientError::new(format!("{}: {e}", path.display())))?;
        Ok(Self {
            path,
            file,
            committed: false,
        })
    }

    /// fsync, rename over `dest`, fsync the directory.
    fn commit(mut self, dest: &Path) -> Result<(), ClientError> {
        let fail = |what: &str, e: std::io::Error| ClientError::new(format!("{what}: {e}"));
        self.file
            .sync_all()
            .map_err(|e| fail(&self.path.display().to_string(), e))?;
        fs::rename(&self.path, dest).map_err(|e| fail(&dest.display().to_string(), e))?;
        self.committed = true;
        if let Some(dir) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| fail(&dir.display().to_string(), e))?;
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.path);
        }
    }
}
