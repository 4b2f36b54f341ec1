//! A folder's tree, depth first, one entry at a time, in memory bounded whatever the tree:
//! a stack of one frame per open directory, each holding its cursor and at most one page
//! ([`PAGE`]) of entries not yet visited; never a whole listing.
//!
//! Invariants:
//! - order: within a directory, the store's listing order (`LocalStore`: names in byte order;
//!   `S3Store`: keys, a directory sorting as `name/`); a directory's own entry comes before
//!   everything under it. The same tree is walked in the same order every time;
//! - memory: at most [`MAX_DEPTH`] frames × [`PAGE`] entries, plus one path per frame; a tree
//!   deeper than [`MAX_DEPTH`] fails the walk ([`WalkError::TooDeep`]) when it gets there;
//! - each page is listed through `serve/list_pages.rs` (a local scan off the async workers,
//!   under the service's scan permits).

use crate::serve::list_pages::{self, PageError};
use crate::serve::service::Service;
use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::time::SystemTime;
use weir_store::{Entry, Store, StorePath};

/// Entries listed per page: the most a frame holds.
pub(super) const PAGE: usize = 64;
/// The deepest directory a walk enters (the archived folder is depth 0).
pub(super) const MAX_DEPTH: usize = 64;

/// One entry of the walk.
#[derive(Debug)]
pub(super) enum Item {
    /// A directory; `rel` is its path relative to the walked folder, ending in `/`.
    Dir { rel: String, modified: SystemTime },
    /// A file at `path` in the store; `rel` relative to the walked folder. (Its size and
    /// time are those of the version the archive opens, not the listing's.)
    File { path: StorePath, rel: String },
}

/// Why a walk stopped.
#[derive(Debug)]
pub(super) enum WalkError {
    List(PageError),
    /// Deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A listed name that makes no store path (the path grew too long).
    BadPath,
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::List(e) => write!(f, "{e}"),
            Self::TooDeep => write!(f, "folder nested deeper than {MAX_DEPTH} levels"),
            Self::BadPath => write!(f, "a path under the folder is not a valid store path"),
        }
    }
}

impl std::error::Error for WalkError {}

/// An open directory.
struct Frame {
    /// Its store path (`None`: the store's top).
    dir: Option<StorePath>,
    /// Its path relative to the walked folder: empty, or ending in `/`.
    rel: String,
    /// Entries of the current page not yet visited.
    entries: VecDeque<Entry>,
    /// Where the next page starts (`None` with `listed`: nothing after this page).
    cursor: Option<String>,
    /// A page was listed (so `cursor == None` means the end).
    listed: bool,
}

/// A depth-first walk of a folder (see the module doc).
pub(super) struct Walk<'a, S> {
    svc: &'a Service,
    store: &'a S,
    stack: Vec<Frame>,
}

impl<'a, S: Store + Clone> Walk<'a, S> {
    /// A walk of `dir` (`None`: the whole store).
    pub(super) fn new(svc: &'a Service, store: &'a S, dir: Option<&StorePath>) -> Self {
        // ALLOCATION: the stack, grown to the tree's depth (at most MAX_DEPTH frames).
        let mut stack = Vec::with_capacity(8);
        stack.push(Frame {
            dir: dir.cloned(),
            rel: String::new(),
            entries: VecDeque::new(),
            cursor: None,
            listed: false,
        });
        Self { svc, store, stack }
    }

    /// The next entry, `None` once the tree is walked.
    pub(super) async fn next(&mut self) -> Result<Option<Item>, WalkError> {
        let page = NonZeroUsize::new(PAGE).expect("not zero");
        loop {
            let Some(frame) = self.stack.last_mut() else {
                return Ok(None);
            };
            let Some(entry) = frame.entries.pop_front() else {
                if frame.listed && frame.cursor.is_none() {
                    self.stack.pop();
                    continue;
                }
                // ALLOCATION: one page of entries (names), replacing the last one.
                let listed = list_pages::list_page(
                    self.svc,
                    self.store,
                    frame.dir.as_ref(),
                    frame.cursor.as_deref(),
                    page,
                )
                .await
                .map_err(WalkError::List)?;
                frame.listed = true;
                frame.cursor = listed.next;
                frame.entries = listed.entries.into();
                continue;
            };
            // ALLOCATION: the entry's store path and relative name (a path each).
            let path = match &frame.dir {
                Some(dir) => StorePath::parse(&format!("{dir}/{}", entry.name)),
                None => StorePath::parse(&entry.name),
            }
            .map_err(|_| WalkError::BadPath)?;
            let rel = format!("{}{}", frame.rel, entry.name);
            if !entry.is_dir {
                return Ok(Some(Item::File { path, rel }));
            }
            if self.stack.len() > MAX_DEPTH {
                return Err(WalkError::TooDeep);
            }
            let rel = rel + "/";
            self.stack.push(Frame {
                dir: Some(path),
                rel: rel.clone(),
                entries: VecDeque::new(),
                cursor: None,
                listed: false,
            });
            return Ok(Some(Item::Dir {
                rel,
                modified: entry.modified,
            }));
        }
    }
}
