//! `GET /files/{dir}/?tar` and `?zip` (and `/files/?tar` for the whole store): a folder as one
//! archive, streamed as it is read. Written once, generic over weir-store's `Store`.
//!
//! - **Streamed, bounded memory.** No temporary file: the tree is walked depth first, a page
//!   at a time (`walk.rs`: at most `MAX_DEPTH` × `PAGE` entries held), each file opened, sent
//!   and closed before the next. The body is chunked (HTTP/1.1) or a stream (HTTP/2) without
//!   `Content-Length` (knowing it would take a walk more). A zip also keeps what its central
//!   directory needs of each entry (`zip.rs`: its name plus about 40 bytes): bounded by
//!   `--zip-max-entries` (default [`ZIP_MAX_ENTRIES`]) and [`ZIP_MAX_NAME_BYTES`], checked by
//!   a first walk (names only) before the first byte: a larger folder is refused with `413`,
//!   pointing to `?tar`; one that grows past them during the stream is cut.
//! - **Stable order.** The store's listing order (see `walk.rs`): the same tree gives the same
//!   archive.
//! - **No half-included file.** Each file is opened once (`Store::open`: pinned to that
//!   version) and its header says the size of that version; its bytes come from that handle
//!   (a local file's descriptor; a bucket's reads carry `If-Match`). If the version cannot be
//!   read whole (replaced in a bucket, truncated in place on disk, a store failure), the
//!   archive cannot be taken back: the handler returns an error with the body open, so
//!   HTTP/1.1 closes the connection without the last chunk and HTTP/2 resets the stream; the
//!   client sees a failed download, never a valid archive with a mixed file. A file deleted
//!   between the listing and its opening is left out whole.
//! - **Scopes.** The router checked the read scope on the folder; a prefix token reaches a
//!   folder only at or under its prefix, so every file in the archive is under it too.
//! - **Bytes.** A tar stores each file raw, so a local file's bytes go as the download's do:
//!   `BodyWriter::send_file` (`sendfile`, one chunk per file, over plain HTTP/1.1; a buffer
//!   over TLS and HTTP/2), and a bucket's chunks are written as they come. A zip needs every
//!   byte in user space for its CRC-32: a local file goes through one reused buffer
//!   (`// COPY` below).
//!
//! Names: the members are `{folder}/...` (the folder's own name; `files` for the whole store),
//! directories included (so empty ones survive), and the answer is
//! `Content-Disposition: attachment; filename="{folder}.tar"` (RFC 6266, with `filename*` for
//! a name that is not plain ASCII).

mod tar;
mod walk;
mod zip;

use crate::serve::reply::{self, Problem};
use crate::serve::service::Service;
use http::{Method, StatusCode};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use walk::{Item, Walk};
use weir::{BodyWriter, Exchange, http};
use weir_store::{Store, StoreError, StoreObject, StorePath, StoreReader};

/// The most entries (files and folders) a zip stream takes by default (`--zip-max-entries`,
/// `Service::with_zip_max_entries`): its central directory is held in memory until the end.
pub(in crate::serve) const ZIP_MAX_ENTRIES: u64 = 100_000;
/// The most bytes of names a zip stream takes (the central directory's names, held).
pub(crate) const ZIP_MAX_NAME_BYTES: u64 = 16 << 20;
/// The time of the archived folder's own entry: the listing gives no folder's time but its
/// entries', and a fixed one keeps the archive of an unchanged folder the same bytes.
const TOP_TIME: u64 = 0;
/// The buffer a file's bytes pass through.
const BUFFER: usize = 256 * 1024;

/// Which archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::serve) enum Format {
    Tar,
    Zip,
    /// A zip with every zip64 structure (`?zip=64`).
    Zip64,
}

/// Why an archive stopped after its head went out.
#[derive(Debug)]
enum Stop {
    /// Writing to the client failed (it left, or a timeout).
    Client(weir::Error),
    /// The store, the walk, or a file that changed.
    Source(String),
}

impl From<weir::Error> for Stop {
    fn from(e: weir::Error) -> Self {
        Self::Client(e)
    }
}

/// `GET`/`HEAD /files/{dir}/?tar|zip` from `store` (see the module doc).
pub(in crate::serve) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    dir: Option<&StorePath>,
    format: Format,
) -> Result<(), weir::Error> {
    if let Some(dir) = dir {
        match store.is_dir(dir).await {
            Ok(true) => {}
            Ok(false) => {
                return reply::error(ex, Problem::NotFound, "no such directory", &[]).await;
            }
            Err(e) => return reply::store_error(ex, &e).await,
        }
    }
    let head_only = *ex.request().method() == Method::HEAD;
    if format != Format::Tar && !head_only {
        match zip_fits(svc, store, dir).await {
            Ok(None) => {}
            Ok(Some(detail)) => return reply::error(ex, Problem::TooLarge, &detail, &[]).await,
            Err(e) => {
                tracing::error!(error = %e, "walking a folder for its zip failed");
                return reply::error(ex, Problem::Internal, "listing failed", &[]).await;
            }
        }
    }
    let base = dir.map_or("files", StorePath::file_name);
    let (content_type, extension) = match format {
        Format::Tar => ("application/x-tar", "tar"),
        Format::Zip | Format::Zip64 => ("application/zip", "zip"),
    };
    let disposition = content_disposition(base, extension);
    let response = ex
        .respond(StatusCode::OK)
        .header("content-type", content_type)
        .header("content-disposition", &disposition)
        .header("cache-control", "no-store")
        .header("x-content-type-options", "nosniff");
    let mut writer = response.stream(None).await?;
    if head_only {
        return writer.finish().await;
    }
    // ALLOCATION: one buffer per archive, for headers and (local files) file bytes.
    let mut buf = Vec::with_capacity(BUFFER);
    let result = match format {
        Format::Tar => send_tar(svc, store, &mut writer, dir, base, &mut buf).await,
        Format::Zip | Format::Zip64 => {
            let mode = if format == Format::Zip64 {
                zip::Zip64::Always
            } else {
                zip::Zip64::Needed
            };
            send_zip(svc, store, &mut writer, dir, base, &mut buf, mode).await
        }
    };
    match result {
        Ok(()) => writer.finish().await,
        Err(Stop::Client(e)) => Err(e),
        Err(Stop::Source(why)) => {
            // The body stays open: the engine cuts the response (see the module doc).
            tracing::error!(error = %why, "folder archive cut short");
            Err(weir::Error::user(why))
        }
    }
}

/// `None` when the folder's zip fits [`ZIP_MAX_ENTRIES`] and [`ZIP_MAX_NAME_BYTES`], else
/// why not.
async fn zip_fits<S: Store + Clone>(
    svc: &Service,
    store: &S,
    dir: Option<&StorePath>,
) -> Result<Option<String>, walk::WalkError> {
    let mut walk = Walk::new(svc, store, dir);
    // The folder's own entry (`{base}/`) counts too, as `send_zip` holds it.
    let base = dir.map_or("files", StorePath::file_name);
    let (mut entries, mut names) = (1u64, base.len() as u64 + 1);
    while let Some(item) = walk.next().await? {
        let rel = match &item {
            Item::Dir { rel, .. } | Item::File { rel, .. } => rel,
        };
        entries += 1;
        // As held: `{base}/{rel}`.
        names += (base.len() + 1 + rel.len()) as u64;
        if entries > svc.zip_max_entries || names > ZIP_MAX_NAME_BYTES {
            return Ok(Some(format!(
                "the folder has more than {} entries or {ZIP_MAX_NAME_BYTES} bytes of names, \
                 more than a zip stream holds (weir serve --zip-max-entries); ask for ?tar \
                 instead",
                svc.zip_max_entries
            )));
        }
    }
    Ok(None)
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The folder as tar (`tar.rs`).
async fn send_tar<S: Store + Clone>(
    svc: &Service,
    store: &S,
    writer: &mut BodyWriter<'_, '_>,
    dir: Option<&StorePath>,
    base: &str,
    buf: &mut Vec<u8>,
) -> Result<(), Stop> {
    let mut walk = Walk::new(svc, store, dir);
    buf.clear();
    let top = format!("{base}/");
    tar::header(buf, &top, tar::Kind::Dir, 0, TOP_TIME);
    writer.write(buf).await?;
    while let Some(item) = walk.next().await.map_err(|e| Stop::Source(e.to_string()))? {
        buf.clear();
        match item {
            Item::Dir { rel, modified } => {
                // ALLOCATION: the member's name, per entry (freed at once; a zip keeps it).
                let name = format!("{base}/{rel}");
                tar::header(buf, &name, tar::Kind::Dir, 0, seconds(modified));
                writer.write(buf).await?;
            }
            Item::File { path, rel, .. } => {
                let Some(object) = open(store, &path).await? else {
                    continue;
                };
                let meta = *object.meta();
                let name = format!("{base}/{rel}");
                tar::header(
                    buf,
                    &name,
                    tar::Kind::File,
                    meta.size,
                    seconds(meta.modified),
                );
                writer.write(buf).await?;
                send_object(writer, object, &path, meta.size, buf, None).await?;
                let pad = tar::padding(meta.size);
                if pad > 0 {
                    writer.write(&tar::END[..pad]).await?;
                }
            }
        }
    }
    writer.write(&tar::END).await?;
    Ok(())
}

/// The folder as zip (`zip.rs`).
async fn send_zip<S: Store + Clone>(
    svc: &Service,
    store: &S,
    writer: &mut BodyWriter<'_, '_>,
    dir: Option<&StorePath>,
    base: &str,
    buf: &mut Vec<u8>,
    mode: zip::Zip64,
) -> Result<(), Stop> {
    let mut walk = Walk::new(svc, store, dir);
    // ALLOCATION: the central directory's entries, one per member (bounded: the module doc).
    let mut central: Vec<zip::CentralEntry> = Vec::new();
    let mut names = 0u64;
    let mut offset = 0u64;
    let max_entries = svc.zip_max_entries;
    let mut push = |central: &mut Vec<zip::CentralEntry>, e: zip::CentralEntry| {
        names += e.name.len() as u64;
        central.push(e);
        if central.len() as u64 > max_entries || names > ZIP_MAX_NAME_BYTES {
            // The folder grew past the bound since the first walk.
            return Err(Stop::Source("the folder grew past the zip bounds".into()));
        }
        Ok(())
    };
    let dir_entry = |name: String, modified: SystemTime, offset: u64| zip::CentralEntry {
        name,
        dir: true,
        crc: 0,
        size: 0,
        offset,
        dos_time: zip::dos_time(seconds(modified)),
        zip64_local: mode == zip::Zip64::Always,
    };
    let top = dir_entry(
        format!("{base}/"),
        UNIX_EPOCH + Duration::from_secs(TOP_TIME),
        offset,
    );
    buf.clear();
    zip::local_header(buf, &top);
    writer.write(buf).await?;
    offset += buf.len() as u64;
    push(&mut central, top)?;
    while let Some(item) = walk.next().await.map_err(|e| Stop::Source(e.to_string()))? {
        buf.clear();
        match item {
            Item::Dir { rel, modified } => {
                // ALLOCATION: the member's name, kept for the central directory (bounded).
                let e = dir_entry(format!("{base}/{rel}"), modified, offset);
                zip::local_header(buf, &e);
                writer.write(buf).await?;
                offset += buf.len() as u64;
                push(&mut central, e)?;
            }
            Item::File { path, rel, .. } => {
                let Some(object) = open(store, &path).await? else {
                    continue;
                };
                let meta = *object.meta();
                let mut e = zip::CentralEntry {
                    name: format!("{base}/{rel}"),
                    dir: false,
                    crc: 0,
                    size: meta.size,
                    offset,
                    dos_time: zip::dos_time(seconds(meta.modified)),
                    zip64_local: zip::local_zip64(meta.size, mode),
                };
                zip::local_header(buf, &e);
                writer.write(buf).await?;
                offset += buf.len() as u64;
                let mut crc = crc32fast::Hasher::new();
                send_object(writer, object, &path, meta.size, buf, Some(&mut crc)).await?;
                offset += meta.size;
                e.crc = crc.finalize();
                buf.clear();
                zip::descriptor(buf, &e);
                writer.write(buf).await?;
                offset += buf.len() as u64;
                push(&mut central, e)?;
            }
        }
    }
    let start = offset;
    let mut size = 0u64;
    for e in &central {
        buf.clear();
        zip::central_header(buf, e, mode);
        size += buf.len() as u64;
        writer.write(buf).await?;
    }
    buf.clear();
    zip::end(buf, central.len() as u64, start, size, mode);
    writer.write(buf).await?;
    Ok(())
}

/// The object at `path`, pinned to its version; `None` when it was deleted since it was
/// listed (left out whole).
async fn open<S: Store>(store: &S, path: &StorePath) -> Result<Option<S::Object>, Stop> {
    match store.open(path).await {
        Ok(object) => Ok(Some(object)),
        Err(StoreError::NotFound | StoreError::IsDirectory) => Ok(None),
        Err(e) => Err(Stop::Source(format!("opening {path}: {e}"))),
    }
}

/// Sends the `size` bytes of `object`'s version, updating `crc` when given; anything but
/// exactly `size` bytes of that version is a [`Stop::Source`].
async fn send_object<O: StoreObject>(
    writer: &mut BodyWriter<'_, '_>,
    object: O,
    path: &StorePath,
    size: u64,
    buf: &mut Vec<u8>,
    mut crc: Option<&mut crc32fast::Hasher>,
) -> Result<(), Stop> {
    if size == 0 {
        return Ok(());
    }
    if let (Some(file), None) = (object.sendfile_source(), crc.as_ref()) {
        // No CRC to compute (tar): page cache → socket, as a download.
        return match writer.send_file(file, 0, size).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_disconnect() || e.is_timeout() => Err(Stop::Client(e)),
            Err(e) => Err(Stop::Source(format!("sending {path}: {e}"))),
        };
    }
    if let Some(file) = object.sendfile_source() {
        use std::os::unix::fs::FileExt;
        let mut sent = 0u64;
        while sent < size {
            let want = usize::try_from(size - sent).map_or(BUFFER, |n| n.min(BUFFER));
            buf.resize(want, 0);
            // COPY: page cache → this buffer → the socket: a zip's CRC-32 needs the bytes in
            // user space. `pread` on the connection's task, as `sendfile` does for downloads.
            let n = file
                .read_at(&mut buf[..want], sent)
                .map_err(|e| Stop::Source(format!("reading {path}: {e}")))?;
            if n == 0 {
                // Shorter than the version opened said: changed in place under the archive.
                return Err(Stop::Source(format!("{path} shrank while it was archived")));
            }
            if let Some(crc) = crc.as_deref_mut() {
                crc.update(&buf[..n]);
            }
            writer.write(&buf[..n]).await?;
            sent += n as u64;
        }
        return Ok(());
    }
    let mut reader = object
        .read(0..size)
        .await
        .map_err(|e| Stop::Source(format!("reading {path}: {e}")))?;
    let mut sent = 0u64;
    loop {
        match reader.next_chunk().await {
            Ok(Some(chunk)) => {
                sent += chunk.len() as u64;
                if sent > size {
                    return Err(Stop::Source(format!("{path} grew while it was archived")));
                }
                if let Some(crc) = crc.as_deref_mut() {
                    crc.update(&chunk);
                }
                writer.write(&chunk).await?;
            }
            Ok(None) if sent == size => return Ok(()),
            Ok(None) => {
                return Err(Stop::Source(format!("{path} shrank while it was archived")));
            }
            Err(e) => return Err(Stop::Source(format!("reading {path}: {e}"))),
        }
    }
}

/// `attachment; filename="..."` (RFC 6266): the name as ASCII with other characters as `_`,
/// and `filename*=UTF-8''...` (RFC 8187) when that changed it.
fn content_disposition(base: &str, extension: &str) -> String {
    let plain: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut value = format!("attachment; filename=\"{plain}.{extension}\"");
    if plain != base {
        use std::fmt::Write;
        value.push_str("; filename*=UTF-8''");
        for &b in base.as_bytes() {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                value.push(char::from(b));
            } else {
                let _ = write!(value, "%{b:02X}");
            }
        }
        value.push('.');
        value.push_str(extension);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions() {
        assert_eq!(
            content_disposition("photos 2024", "tar"),
            "attachment; filename=\"photos 2024.tar\""
        );
        assert_eq!(
            content_disposition("été \"x\"", "zip"),
            "attachment; filename=\"_t_ _x_.zip\"; filename*=UTF-8''%C3%A9t%C3%A9%20%22x%22.zip"
        );
    }
}
