//! ListObjectsV2, ListObjects (V1) and ListObjectVersions (every object its one version,
//! `null`: weir keeps no versions): the keys of a bucket, from a walk of its folder tree,
//! in memory bounded whatever the bucket: a stack of one frame per folder being walked, each
//! holding one page of the store's listing ([`PAGE`] entries, through `list_pages.rs`, so a
//! local scan runs off the async workers), and the answer's `max-keys` (at most 1000) entries.
//!
//! The walk starts in the deepest folder the `prefix` names whole (`a/b/` for `a/b/c`), so a
//! prefix listing never scans the rest of the bucket. With the delimiter `/`, a folder is a
//! `CommonPrefixes` entry and is not entered: a listing costs one folder's pages. With another
//! delimiter, folders are entered and keys grouped by it; without one, every key below is
//! listed. A folder that is empty is the key `folder/` (how S3 consoles' "folder" objects look).
//!
//! Continuation: the token (base64 of the last key or common prefix answered) and
//! `start-after`/`marker` are positions in the walk: the walk resumes after that key's folder
//! path, level by level (the store's cursor, `Store::DIR_SORTS_AS_SLASH`), and a common prefix
//! skips everything under it. Nothing is kept between requests.
//!
//! Order: within a folder, the store's listing order (`LocalStore`: names in byte order;
//! `S3Store`: keys, a folder sorting as `name/`), a folder's keys where the folder sorts. That
//! is S3's byte order of keys except, in the local store, where a name sorts between a folder
//! `x` and `x/` (`x-1` lists after the keys of `x/`, S3 lists it before); pagination is
//! consistent either way (every key once).
//!
//! ETags: each listed object is opened for its stored SHA-256, so that a listing's ETag is
//! the one GET answers (locally an `open` and an `fgetxattr` per key; for a bucket a
//! `HeadObject` per key: the price of one ETag across protocols).

use super::reply::{self, Missing};
use super::{Ctx, bucket, keys};
use crate::serve::list_pages::{self, PageError};
use crate::serve::preconditions;
use http::StatusCode;
use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::time::SystemTime;
use weir::{Exchange, http};
use weir_s3api::route::ListObjectsParams;
use weir_s3api::xml::write::{self, ListHead, ObjectEntry};
use weir_s3api::{ErrorCode, S3Error};
use weir_store::{Entry, Store, StoreError, StoreObject, StorePath};

/// Entries listed per page of a folder: the most a frame holds.
const PAGE: NonZeroUsize = NonZeroUsize::new(256).expect("not zero");

/// The deepest folder a walk enters.
const MAX_DEPTH: usize = 64;

/// Which listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    V1,
    V2,
    Versions,
}

/// A listing of `kind`.
pub(super) async fn serve<S: Store + Clone>(
    ctx: &Ctx<'_>,
    store: &S,
    ex: &mut Exchange<'_>,
    bucket_name: &str,
    params: ListObjectsParams,
    kind: Kind,
) -> Result<(), weir::Error> {
    match list(ctx, store, bucket_name, &params, kind).await {
        Ok(body) => reply::xml(ex, StatusCode::OK, body).await,
        Err(e) => reply::error(ex, &e).await,
    }
}

async fn list<S: Store + Clone>(
    ctx: &Ctx<'_>,
    store: &S,
    bucket_name: &str,
    params: &ListObjectsParams,
    kind: Kind,
) -> Result<Vec<u8>, S3Error> {
    let v2 = kind == Kind::V2;
    bucket::exists(store, bucket_name).await?;
    let start = match (v2, &params.continuation_token) {
        (true, Some(token)) if !token.is_empty() => Some(decode_token(token)?),
        (true, _) => params.start_after.clone(),
        (false, _) => params.marker.clone(),
    }
    .filter(|s| !s.is_empty());
    let head = ListHead {
        bucket: bucket_name,
        prefix: &params.prefix,
        delimiter: params.delimiter.as_deref(),
        max_keys: params.max_keys,
        encoding_url: params.encoding_url,
        start_after: if v2 {
            params.start_after.as_deref()
        } else {
            params.marker.as_deref()
        },
        continuation_token: params.continuation_token.as_deref(),
    };
    let mut out = match kind {
        Kind::V2 => Out::V2(write::ListObjectsV2Writer::new(&head)),
        Kind::V1 => Out::V1(write::ListObjectsV1Writer::new(&head)),
        Kind::Versions => Out::Versions(VersionsWriter::new(&head)),
    };
    let mut walk = Walk::new(
        bucket_name,
        &params.prefix,
        params.delimiter.as_deref(),
        start,
        S::DIR_SORTS_AS_SLASH,
    );
    let mut last: Option<String> = None;
    let mut count = 0;
    let mut truncated = false;
    // `max-keys=0` asks for nothing, and S3 then says nothing is left out.
    while params.max_keys > 0
        && let Some(item) = walk.next(ctx, store).await?
    {
        if count == params.max_keys {
            truncated = true;
            break;
        }
        match &item {
            Item::Object {
                key,
                size,
                modified,
            } => {
                let Some((etag, size, modified)) =
                    object_etag(store, bucket_name, key, *size, *modified).await
                else {
                    // Gone since the listing, or a folder marker: listed as it was seen.
                    continue;
                };
                let entry = ObjectEntry {
                    key,
                    last_modified: modified,
                    etag: etag.trim_matches('"'),
                    size,
                    checksum_algorithm: None,
                };
                out.object(&entry);
            }
            Item::Prefix(p) => out.common_prefix(p),
        }
        count += 1;
        last = Some(match item {
            Item::Object { key, .. } => key,
            Item::Prefix(p) => p,
        });
    }
    Ok(match out {
        Out::V2(w) => {
            let token = if truncated {
                last.as_deref().map(encode_token)
            } else {
                None
            };
            w.finish(token.as_deref())
        }
        Out::V1(w) => {
            let next = last
                .as_deref()
                .filter(|_| truncated && params.delimiter.is_some());
            w.finish(truncated, next)
        }
        Out::Versions(w) => w.finish(last.as_deref().filter(|_| truncated)),
    })
}

/// The ETag of the listed object `key` (the one GET sends), with its size and time as opened;
/// `None` if it is gone. A folder marker (`dir/`) is the empty object's.
async fn object_etag<S: Store>(
    store: &S,
    bucket_name: &str,
    key: &str,
    size: u64,
    modified: SystemTime,
) -> Option<(String, u64, SystemTime)> {
    match keys::key_path(bucket_name, key).ok()? {
        keys::Key::Folder(_) => Some((
            "\"d41d8cd98f00b204e9800998ecf8427e\"".into(),
            size,
            modified,
        )),
        keys::Key::Object(path) => {
            let object = store.open(&path).await.ok()?;
            let meta = *object.meta();
            Some((preconditions::etag(&meta), meta.size, meta.modified))
        }
    }
}

enum Out {
    V2(write::ListObjectsV2Writer),
    V1(write::ListObjectsV1Writer),
    Versions(VersionsWriter),
}

/// `ListVersionsResult`: each object as its one version, `null`.
struct VersionsWriter {
    xml: write::Xml,
    url: bool,
    /// Entries, held until `IsTruncated`, which S3 puts before them, is known.
    entries: write::Xml,
}

impl VersionsWriter {
    fn new(head: &ListHead<'_>) -> Self {
        let url = head.encoding_url;
        let mut xml = write::Xml::new();
        xml.start_document("ListVersionsResult");
        xml.text("Name", head.bucket);
        xml.key_text("Prefix", head.prefix, url);
        xml.key_text("KeyMarker", head.start_after.unwrap_or(""), url);
        xml.text("VersionIdMarker", "");
        if let Some(d) = head.delimiter {
            xml.key_text("Delimiter", d, url);
        }
        xml.number("MaxKeys", u64::from(head.max_keys));
        if url {
            xml.text("EncodingType", "url");
        }
        VersionsWriter {
            xml,
            url,
            entries: write::Xml::new(),
        }
    }

    fn object(&mut self, entry: &ObjectEntry<'_>) {
        let xml = &mut self.entries;
        xml.open("Version");
        xml.key_text("Key", entry.key, self.url);
        xml.text("VersionId", "null");
        xml.boolean("IsLatest", true);
        xml.time("LastModified", entry.last_modified);
        xml.etag("ETag", entry.etag);
        xml.number("Size", entry.size);
        xml.text("StorageClass", "STANDARD");
        xml.close("Version");
    }

    fn common_prefix(&mut self, prefix: &str) {
        self.entries.open("CommonPrefixes");
        self.entries.key_text("Prefix", prefix, self.url);
        self.entries.close("CommonPrefixes");
    }

    fn finish(mut self, next: Option<&str>) -> Vec<u8> {
        self.xml.boolean("IsTruncated", next.is_some());
        if let Some(n) = next {
            self.xml.key_text("NextKeyMarker", n, self.url);
            self.xml.text("NextVersionIdMarker", "null");
        }
        // COPY: the entries into the document, once (bounded by max-keys).
        let entries = self.entries.into_inner();
        self.xml.output_mut().extend_from_slice(&entries);
        self.xml.close("ListVersionsResult");
        self.xml.into_inner()
    }
}

impl Out {
    fn object(&mut self, entry: &ObjectEntry<'_>) {
        match self {
            Out::V2(w) => w.object(entry),
            Out::V1(w) => w.object(entry),
            Out::Versions(w) => w.object(entry),
        }
    }

    fn common_prefix(&mut self, prefix: &str) {
        match self {
            Out::V2(w) => w.common_prefix(prefix),
            Out::V1(w) => w.common_prefix(prefix),
            Out::Versions(w) => w.common_prefix(prefix),
        }
    }
}

/// A continuation token: the base64 of the last key (or common prefix) answered.
fn encode_token(key: &str) -> String {
    let mut out = String::new();
    crate::serve::base64::encode_into(key.as_bytes(), &mut out);
    out
}

fn decode_token(token: &str) -> Result<String, S3Error> {
    crate::serve::base64::decode(token)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            S3Error::new(
                ErrorCode::InvalidArgument,
                "The continuation token provided is incorrect",
            )
        })
}

/// One answer of the walk.
enum Item {
    Object {
        key: String,
        size: u64,
        modified: SystemTime,
    },
    Prefix(String),
}

/// A folder being walked.
struct Frame {
    /// Its keys' prefix relative to the bucket: `""` or ending in `/`.
    dir: String,
    /// The store's cursor for the next page.
    after: Option<String>,
    /// The page not yet walked.
    entries: VecDeque<Entry>,
    /// More pages follow (or none was listed yet).
    more: bool,
    /// Entered by the walk (not positioned by a token): an empty one is the key `dir`.
    fresh: bool,
    /// Its modification time (for the folder's key).
    modified: SystemTime,
}

impl Frame {
    fn new(dir: String, after: Option<String>, fresh: bool, modified: SystemTime) -> Self {
        Frame {
            dir,
            after,
            entries: VecDeque::new(),
            more: true,
            fresh,
            modified,
        }
    }
}

/// The walk of a bucket's keys (see the module doc).
struct Walk {
    bucket: String,
    prefix: String,
    delimiter: Option<String>,
    /// Keys starting with this were answered as a common prefix before the token.
    skip_below: Option<String>,
    frames: Vec<Frame>,
    /// The last common prefix answered (the keys it groups come together).
    last_prefix: Option<String>,
}

impl Walk {
    fn new(
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        start: Option<String>,
        dir_as_slash: bool,
    ) -> Self {
        let dir = prefix[..prefix.rfind('/').map_or(0, |i| i + 1)].to_owned();
        let mut walk = Walk {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            delimiter: delimiter.map(str::to_owned),
            skip_below: None,
            frames: vec![Frame::new(dir.clone(), None, false, SystemTime::UNIX_EPOCH)],
            last_prefix: None,
        };
        let Some(start) = start else {
            return walk;
        };
        if start.as_str() < dir.as_str() {
            return walk;
        }
        let Some(rest) = start.strip_prefix(dir.as_str()) else {
            // Every key below `dir` sorts before `start`.
            walk.frames.clear();
            return walk;
        };
        if delimiter.is_some_and(|d| start.ends_with(d)) {
            walk.skip_below = Some(start.clone());
        }
        // Resume after `start`, level by level: each folder on its path is entered with a
        // cursor after the next one down, whose own frame follows.
        let segments: Vec<&str> = rest.split('/').collect();
        let mut path = dir;
        walk.frames.clear();
        for (i, segment) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            if last && segment.is_empty() {
                break;
            }
            let cursor = if !last && dir_as_slash {
                format!("{segment}/")
            } else {
                (*segment).to_owned()
            };
            let frame = Frame::new(path.clone(), Some(cursor), false, SystemTime::UNIX_EPOCH);
            walk.frames.push(frame);
            path.push_str(segment);
            path.push('/');
        }
        // The deepest folder is the stack's top: walked first.
        walk
    }

    /// The common prefix `key` falls under, if the delimiter groups it.
    fn common_prefix(&self, key: &str) -> Option<String> {
        let d = self.delimiter.as_deref()?;
        let rest = key.get(self.prefix.len()..)?;
        rest.find(d)
            .map(|i| key[..self.prefix.len() + i + d.len()].to_owned())
    }

    /// `Some` when `cp` is new (not the last answered).
    fn new_prefix(&mut self, cp: String) -> Option<Item> {
        if self.last_prefix.as_deref() == Some(cp.as_str()) {
            return None;
        }
        self.last_prefix = Some(cp.clone());
        Some(Item::Prefix(cp))
    }

    fn skipped(&self, key: &str) -> bool {
        self.skip_below
            .as_deref()
            .is_some_and(|s| key.starts_with(s))
    }

    /// The next key or common prefix.
    async fn next<S: Store + Clone>(
        &mut self,
        ctx: &Ctx<'_>,
        store: &S,
    ) -> Result<Option<Item>, S3Error> {
        loop {
            let Some(frame) = self.frames.last_mut() else {
                return Ok(None);
            };
            let Some(entry) = frame.entries.pop_front() else {
                if !frame.more {
                    self.frames.pop();
                    continue;
                }
                let first = frame.after.is_none();
                let page = self.page(ctx, store).await?;
                let frame = self.frames.last_mut().expect("the frame listed");
                frame.more = page.next.is_some();
                frame.after = page.next;
                frame.entries = page.entries.into();
                if first && frame.fresh && frame.entries.is_empty() && !frame.more {
                    // An empty folder: its key `dir/` (an S3 "folder" object).
                    let key = frame.dir.clone();
                    let modified = frame.modified;
                    if key.starts_with(&self.prefix) && !self.skipped(&key) {
                        match self.common_prefix(&key) {
                            Some(cp) if cp != key => {
                                if let Some(item) = self.new_prefix(cp) {
                                    return Ok(Some(item));
                                }
                            }
                            _ => {
                                return Ok(Some(Item::Object {
                                    key,
                                    size: 0,
                                    modified,
                                }));
                            }
                        }
                    }
                }
                continue;
            };
            // ALLOCATION: the key, per entry walked.
            let key = format!("{}{}", frame.dir, entry.name);
            if entry.is_dir {
                let dkey = key + "/";
                let below_prefix = dkey.starts_with(&self.prefix);
                if !(below_prefix || self.prefix.starts_with(&dkey)) || self.skipped(&dkey) {
                    continue;
                }
                if below_prefix && let Some(cp) = self.common_prefix(&dkey) {
                    // Everything below shares `cp`: answered once, not entered.
                    if let Some(item) = self.new_prefix(cp) {
                        return Ok(Some(item));
                    }
                    continue;
                }
                if self.frames.len() >= MAX_DEPTH {
                    return Err(S3Error::new(
                        ErrorCode::InternalError,
                        "The bucket's folders are nested too deep to list.",
                    ));
                }
                self.frames
                    .push(Frame::new(dkey, None, true, entry.modified));
                continue;
            }
            if !key.starts_with(&self.prefix) || self.skipped(&key) {
                continue;
            }
            if let Some(cp) = self.common_prefix(&key) {
                if let Some(item) = self.new_prefix(cp) {
                    return Ok(Some(item));
                }
                continue;
            }
            return Ok(Some(Item::Object {
                key,
                size: entry.size,
                modified: entry.modified,
            }));
        }
    }

    /// The next page of the top frame; a folder that is not there is empty.
    async fn page<S: Store + Clone>(
        &self,
        ctx: &Ctx<'_>,
        store: &S,
    ) -> Result<weir_store::ListPage, S3Error> {
        let frame = self.frames.last().expect("a frame to list");
        let dir = frame.dir.trim_end_matches('/');
        // ALLOCATION: the folder's store path, per page.
        let path = if dir.is_empty() {
            StorePath::parse(&self.bucket)
        } else {
            StorePath::parse(&format!("{}/{dir}", self.bucket))
        };
        let empty = weir_store::ListPage {
            entries: Vec::new(),
            next: None,
        };
        let Ok(path) = path else {
            // A prefix that no stored key can have.
            return Ok(empty);
        };
        let listed =
            list_pages::list_page(ctx.svc, store, Some(&path), frame.after.as_deref(), PAGE).await;
        match listed {
            Ok(page) => Ok(page),
            Err(PageError::Store(StoreError::NotFound | StoreError::NotADirectory)) => Ok(empty),
            Err(PageError::Store(e)) => Err(reply::store_error(&e, Missing::Bucket)),
            Err(e) => Err(S3Error::new(ErrorCode::InternalError, e.to_string())),
        }
    }
}
