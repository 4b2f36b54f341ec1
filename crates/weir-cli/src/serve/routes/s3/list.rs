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
//! path, level by level (a folder's cursor is `name/`), and a common prefix
//! skips everything under it. Nothing is kept between requests.
//!
//! Order: S3's, keys in byte order, on both stores: a folder `x` sorts as `x/`, after `x-1`
//! and `x.txt`. `S3Store` lists in that order; `LocalStore` lists by name, and each frame
//! holds a folder back until the names that sort before `x/` are out
//! ([`Frame::next_in_key_order`]). `aws s3 sync` merges the listing with its own sorted one,
//! so any other order would make it send or fetch files again.
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
                    // One owner: the caller's credential names it (as ListBuckets does).
                    owner: (kind == Kind::V1 || params.fetch_owner).then(|| ctx.caller.name()),
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
        keys::Key::Folder(_) => Some((super::EMPTY_MD5_ETAG.into(), size, modified)),
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
    /// Folders met in the listing and not yet walked, by their key `name/` (largest first):
    /// each waits until no entry left sorts before it (see [`Frame::next_in_key_order`]).
    deferred: Vec<Entry>,
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
            deferred: Vec::new(),
        }
    }

    /// The next entry in S3's key order, where a folder `x` sorts as `x/`: after `x-1` and
    /// `x.txt`, which a store listing by name (`LocalStore`) gives after `x`. A folder is held
    /// back until the page's next entry sorts after `x/` (or the listing ends); the names that
    /// sort between `x` and `x/` all start with `x` and follow it at once in name order, so
    /// the folders held at once are nested prefixes of one another (bounded by the name's
    /// length). A listing already in key order (`S3Store`) passes through unchanged. `None`
    /// when the page is spent and nothing is held (the listing may have more pages: the held
    /// folders wait for them, since their later names may sort first).
    fn next_in_key_order(&mut self) -> Option<Entry> {
        loop {
            let held = self.deferred.last();
            match (self.entries.front(), held) {
                (None, _) if self.more => return None,
                (None, _) => return self.deferred.pop(),
                (Some(e), Some(h)) if sorts_before(h, e) => return self.deferred.pop(),
                (Some(e), _) if !e.is_dir => return self.entries.pop_front(),
                (Some(_), _) => {
                    let dir = self.entries.pop_front().expect("looked at");
                    // Largest key first: the smallest is popped from the end.
                    let at = self.deferred.partition_point(|d| sorts_before(&dir, d));
                    self.deferred.insert(at, dir);
                }
            }
        }
    }
}

/// Whether `a` sorts before `b` in S3's key order (a folder's key is `name/`).
fn sorts_before(a: &Entry, b: &Entry) -> bool {
    // `name` + `/` for a folder, compared without building either key.
    let a_key = a.name.bytes().chain(a.is_dir.then_some(b'/'));
    let b_key = b.name.bytes().chain(b.is_dir.then_some(b'/'));
    a_key.lt(b_key)
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
    fn new(bucket: &str, prefix: &str, delimiter: Option<&str>, start: Option<String>) -> Self {
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
            // A folder's cursor is `name/` for every store: past `name/`'s keys and the names
            // that sort before `name/` (`name-1`, answered before the folder's keys).
            let cursor = if !last {
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
            let Some(entry) = frame.next_in_key_order() else {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, is_dir: bool) -> Entry {
        Entry {
            name: name.into(),
            size: 0,
            modified: SystemTime::UNIX_EPOCH,
            is_dir,
        }
    }

    /// A listing by name (`LocalStore`'s), in pages, comes out in S3's key order; one already
    /// in key order is unchanged.
    #[test]
    fn folders_sort_as_their_slash_key_across_pages() {
        let by_name = [
            entry("a", true),
            entry("a b", false),
            entry("a+1", true),
            entry("a-1", false),
            entry("a.txt", false),
            entry("a0", false),
            entry("b", false),
        ];
        let expected = ["a b", "a+1", "a-1", "a.txt", "a", "a0", "b"];
        for page in 1..=by_name.len() {
            let mut frame = Frame::new(String::new(), None, false, SystemTime::UNIX_EPOCH);
            let mut pages = by_name.chunks(page);
            let mut out = Vec::new();
            loop {
                match frame.next_in_key_order() {
                    Some(e) => out.push(e.name),
                    None if frame.more => match pages.next() {
                        Some(p) => frame.entries = p.iter().cloned().collect(),
                        None => frame.more = false,
                    },
                    None => break,
                }
            }
            assert_eq!(out, expected, "pages of {page}");
        }
        let mut keyed: Vec<Entry> = expected
            .iter()
            .map(|n| entry(n, *n == "a" || *n == "a+1"))
            .collect();
        keyed.sort_by(|a, b| {
            if sorts_before(a, b) {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
        });
        let names: Vec<&str> = keyed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, expected);
    }
}
