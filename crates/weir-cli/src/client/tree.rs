//! Folders: `weir put DIR URL/` and `weir get URL/DIR/ [DIR]`.
//!
//! Each file goes through the single-file command (`put.rs`, `get.rs`) unchanged, so a folder's
//! files are exactly as safe as one: resumable (a rerun of the same command picks up every cut
//! file where the server or the partial file stopped), verified (SHA-256 end to end), never
//! replacing a file unless `--overwrite`. What this module adds: the walk (local: the folder's
//! regular files, recursively; remote: the JSON listing, every page, recursively), `--jobs`
//! files in flight at once (threads taking the next file from one shared list), one line per
//! file and a last line with the count.
//!
//! Invariants: a remote name becomes a local path only if it is a valid store name (no `..`,
//! separator, control or invisible character: weir-store's own rule), so a listing cannot
//! write outside the destination folder; symbolic links and special files in a local folder are
//! skipped and named, never followed (the server refuses them too). The command fails (non-zero)
//! if any file failed, after trying all of them.

use super::http::Request;
use super::url::{Url, encode_segment};
use super::{ClientError, Failure, Options, connect, progress, status_error};
use crate::cli::{GetArgs, PutArgs};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// `weir put DIR URL/`: every regular file under `DIR` to `URL/NAME/` (`NAME`: `DIR`'s own).
pub(crate) fn put_dir(args: PutArgs) -> Result<(), ClientError> {
    let (base, query) = split_query(&args.url);
    if !base.ends_with('/') {
        return Err(ClientError::new(format!(
            "{}: a folder is uploaded to a folder URL, ending in /",
            args.file.display()
        )));
    }
    let name = args
        .file
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| ClientError::new(format!("{}: no usable name", args.file.display())))?;
    let mut files = Vec::new();
    walk(&args.file, "", &mut files)?;
    let jobs: Vec<(String, PutArgs)> = files
        .into_iter()
        .map(|(rel, path)| {
            let mut one = args.clone();
            let encoded: Vec<String> = rel.split('/').map(encode_segment).collect();
            one.url = format!(
                "{base}{}/{}{query}",
                encode_segment(&name),
                encoded.join("/")
            );
            one.file = path;
            (rel, one)
        })
        .collect();
    run(jobs, args.jobs, "Uploaded", super::put::put_file)
}

/// The regular files under `dir` (paths relative to the walk's start, `/`-separated), sorted;
/// symbolic links and special files skipped with a line on stderr.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), ClientError> {
    let fail = |e: std::io::Error| ClientError::new(format!("{}: {e}", dir.display()));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(fail)?
        .collect::<Result<_, _>>()
        .map_err(fail)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            eprintln!("weir: {}: not UTF-8, skipped", path.display());
            continue;
        };
        let rel = format!("{prefix}{name}");
        let kind = entry.file_type().map_err(fail)?;
        if kind.is_dir() {
            walk(&path, &format!("{rel}/"), out)?;
        } else if kind.is_file() {
            out.push((rel, path));
        } else {
            eprintln!(
                "weir: {}: not a regular file (a symbolic link or special file), skipped",
                path.display()
            );
        }
    }
    Ok(())
}

/// `weir get URL/DIR/ [DEST]`: every file below the folder into `DEST` (default: the folder's
/// name, in the current directory), sub-folders as sub-directories.
pub(crate) fn get_dir(args: GetArgs) -> Result<(), ClientError> {
    let options = Options::from_args(args.client.clone());
    let url = Url::parse(&args.url)?;
    let (base, _) = split_query(&url.target);
    // The folder's own name; the store's root (`/files/`) has none to take.
    let last = base
        .strip_prefix("/files/")
        .and_then(|rest| rest.trim_end_matches('/').rsplit('/').next())
        .filter(|last| !last.is_empty());
    let dest = match (&args.file, last) {
        (Some(p), _) => p.clone(),
        (None, Some(last)) => PathBuf::from(local_name(
            &crate::serve::percent_decode(last).unwrap_or_default(),
        )?),
        (None, None) => {
            return Err(ClientError::new(format!(
                "cannot name a folder after {base:?}: give a DIR argument"
            )));
        }
    };
    let mut files = Vec::new();
    list(&url, base, &options, "", &mut files)?;
    let mut jobs = Vec::new();
    for (rel, target) in files {
        let path = dest.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ClientError::new(format!("{}: {e}", parent.display())))?;
        }
        let mut one = args.clone();
        let scheme = if url.https { "https" } else { "http" };
        one.url = format!("{scheme}://{}{target}", url.authority);
        one.file = Some(path);
        jobs.push((rel, one));
    }
    std::fs::create_dir_all(&dest)
        .map_err(|e| ClientError::new(format!("{}: {e}", dest.display())))?;
    run(jobs, args.jobs, "Downloaded", super::get::get_file)
}

/// The files below the folder at `target` (a path ending in `/`), each as (local relative
/// path, URL path), read from its JSON listing page by page.
fn list(
    url: &Url,
    target: &str,
    options: &Options,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), ClientError> {
    let mut after: Option<String> = None;
    loop {
        let page = match &after {
            None => target.to_owned(),
            Some(name) => format!("{target}?after={}", encode_segment(name)),
        };
        let listing = fetch_json(url, &page, options)?;
        let entries = listing["entries"].as_array().ok_or_else(|| {
            ClientError::new(format!("{page}: the server's answer is not a listing"))
        })?;
        for entry in entries {
            let name = entry["name"].as_str().unwrap_or_default();
            let rel = format!("{prefix}{}", local_name(name)?);
            let child = format!("{target}{}", encode_segment(name));
            match entry["type"].as_str() {
                Some("dir") => list(url, &format!("{child}/"), options, &format!("{rel}/"), out)?,
                Some("file") => out.push((rel, child)),
                _ => {}
            }
        }
        match listing["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return Ok(()),
        }
    }
}

/// `GET target` on `url`'s server, as JSON.
fn fetch_json(
    url: &Url,
    target: &str,
    options: &Options,
) -> Result<serde_json::Value, ClientError> {
    let mut conn = connect(url, options)?;
    let mut headers: Vec<(&str, String)> = options.auth_header().into_iter().collect();
    headers.push(("accept", "application/json".to_owned()));
    let request = Request {
        method: "GET",
        target,
        host: &url.host,
        headers,
    };
    let io = |e: std::io::Error| ClientError::new(format!("listing {target} failed: {e}"));
    conn.send_head(&request, false).map_err(io)?;
    let head = conn
        .read_head(None)
        .map_err(io)?
        .ok_or_else(|| ClientError::new(format!("listing {target} failed: no answer")))?;
    if head.status != 200 {
        return Err(status_error(&mut conn, "GET", &head));
    }
    let mut body = conn.body("GET", &head).map_err(io)?;
    // A page is at most 10,000 entries of at most 255-byte names.
    let text = conn.read_text(&mut body, 8 << 20).map_err(io)?;
    serde_json::from_str(&text)
        .map_err(|e| ClientError::new(format!("listing {target}: not JSON ({e})")))
}

/// A remote name (as the listing's JSON gives it, or a decoded URL segment) as a local file or
/// directory name: only one the store itself would accept (see the module's invariants).
fn local_name(name: &str) -> Result<String, ClientError> {
    weir_store::validate_name(name)
        .map(|()| name.to_owned())
        .map_err(|_| ClientError::new(format!("cannot use {name:?} as a local name")))
}

/// `(path, "?query")` of a URL or target (`""` without a query).
fn split_query(url: &str) -> (&str, &str) {
    match url.find('?') {
        Some(at) => url.split_at(at),
        None => (url, ""),
    }
}

/// Runs `one` on every job, `jobs` at once; a line per file, then the count.
fn run<A: Send>(
    work: Vec<(String, A)>,
    jobs: u32,
    verb: &str,
    one: fn(A) -> Result<String, ClientError>,
) -> Result<(), ClientError> {
    progress::hide_bars();
    let started = Instant::now();
    let total = work.len();
    let queue = Mutex::new(work.into_iter());
    let failed = AtomicUsize::new(0);
    let there = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(u32::try_from(total).unwrap_or(u32::MAX)).max(1) {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().map(|mut q| q.next()).unwrap_or(None);
                    let Some((rel, args)) = next else { return };
                    match one(args) {
                        Ok(summary) => eprintln!("{rel}: {summary}"),
                        Err(e) if e.kind() == Failure::Exists => {
                            there.fetch_add(1, Ordering::Relaxed);
                            eprintln!("{rel}: already there, not replaced");
                        }
                        Err(e) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            eprintln!("{rel}: weir: {e}");
                        }
                    }
                }
            });
        }
    });
    let (failed, there) = (failed.into_inner(), there.into_inner());
    let elapsed = started.elapsed();
    // Already there is not a failure: a rerun after a cut finds the files it completed.
    let kept = if there > 0 {
        format!(" ({there} already there, not replaced: --overwrite replaces them)")
    } else {
        String::new()
    };
    if failed > 0 {
        return Err(ClientError::new(format!(
            "{failed} of {total} files failed{kept} (rerun the same command: done files are \
             kept, cut ones resume)"
        )));
    }
    eprintln!(
        "{verb} {} of {total} files in {}{kept}",
        total - there,
        progress::secs(elapsed)
    );
    Ok(())
}
