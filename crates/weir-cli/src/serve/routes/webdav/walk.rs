//! A collection's tree for `DELETE`, `COPY` and `MOVE`: depth first, each folder announced
//! before what is in it ([`Step::Enter`]) and again after ([`Step::Leave`], where an emptied
//! folder is removed), in memory bounded whatever the tree: one frame per open folder, each
//! holding its cursor and at most one page ([`PAGE`]) of entries.
//!
//! Why not the archive's walk (`files/archive/walk.rs`): that one yields each folder once,
//! before its content, with archive-relative names; a delete or move needs the folder again
//! after its content. Both list through `serve/list_pages.rs`, the one place that decides
//! where a store's listing runs.
//!
//! A walk may change the tree as it goes (delete or move what it was given): pages are asked
//! after the cursor of the last name considered, so an entry removed meanwhile is simply not
//! listed again, and none is visited twice.

use crate::serve::list_pages;
use crate::serve::service::Service;
use std::num::NonZeroUsize;
use weir_store::{Entry, Store, StorePath};

/// Entries listed per page: the most a frame holds. Each page of a local folder is one pass
/// over it, so a folder of N entries costs N/PAGE passes; 256 keeps that low for large
/// folders while the deepest walk holds at most `MAX_DEPTH` × 256 names.
const PAGE: usize = 256;
/// The deepest folder a walk enters.
pub(super) const MAX_DEPTH: usize = 64;

/// One step of the walk.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// A folder, before its content.
    Enter(StorePath),
    /// A file.
    File(StorePath),
    /// A folder (`None`: the store's top), after its content.
    Leave(Option<StorePath>),
}

/// Why a walk stopped.
#[derive(Debug)]
pub(super) enum WalkError {
    List(list_pages::PageError),
    TooDeep,
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

struct Frame {
    dir: Option<StorePath>,
    entries: std::vec::IntoIter<Entry>,
    /// The cursor of the next page; `None` once the last page was listed.
    after: Option<String>,
    listed: bool,
}

impl Frame {
    fn new(dir: Option<StorePath>) -> Self {
        Self {
            dir,
            entries: Vec::new().into_iter(),
            after: None,
            listed: false,
        }
    }
}

/// A walk of the tree under a folder (not announcing the folder itself, but leaving it).
pub(super) struct Walk {
    stack: Vec<Frame>,
}

impl Walk {
    pub(super) fn new(root: Option<StorePath>) -> Self {
        Self {
            stack: vec![Frame::new(root)],
        }
    }

    /// The next step; `None` once the root was left.
    pub(super) async fn next<S: Store + Clone>(
        &mut self,
        svc: &Service,
        store: &S,
    ) -> Result<Option<Step>, WalkError> {
        loop {
            let depth = self.stack.len();
            let Some(frame) = self.stack.last_mut() else {
                return Ok(None);
            };
            if let Some(entry) = frame.entries.next() {
                // ALLOCATION: the entry's store path, one per entry visited.
                let path = match &frame.dir {
                    Some(d) => StorePath::parse(&format!("{}/{}", d.as_str(), entry.name)),
                    None => StorePath::parse(&entry.name),
                }
                .map_err(|_| WalkError::BadPath)?;
                if !entry.is_dir {
                    return Ok(Some(Step::File(path)));
                }
                if depth >= MAX_DEPTH {
                    return Err(WalkError::TooDeep);
                }
                self.stack.push(Frame::new(Some(path.clone())));
                return Ok(Some(Step::Enter(path)));
            }
            if !frame.listed || frame.after.is_some() {
                let limit = NonZeroUsize::new(PAGE).expect("PAGE is not zero");
                let page = list_pages::list_page(
                    svc,
                    store,
                    frame.dir.as_ref(),
                    frame.after.as_deref(),
                    limit,
                )
                .await
                .map_err(WalkError::List)?;
                frame.entries = page.entries.into_iter();
                frame.after = page.next;
                frame.listed = true;
                continue;
            }
            let done = self.stack.pop().expect("a frame is on the stack");
            return Ok(Some(Step::Leave(done.dir)));
        }
    }
}
