//! `weir_resumable_uploads_open` for `/metrics`: a count made by listing the resumable area,
//! which holds a file per upload not complete, abandoned ones too until they expire. Listed on
//! the runtime's worker at every scrape, 40,000 abandoned uploads and 8 scrapers pushed even
//! `/healthz` (on the same workers) to a 192 ms median. So the listing runs on the blocking
//! pool, and its count is kept for [`FRESH`]: scrapes within that time share it, and scrapes
//! that arrive while a listing runs wait for that one (one listing at a time, never one per
//! scraper). The gauge may lag by up to [`FRESH`], less than any scrape interval worth having.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use weir_store::Resumables;

/// How long a count is served before the area is listed again.
pub(super) const FRESH: Duration = Duration::from_secs(2);

/// The count of open uploads, with when it was made.
#[derive(Debug, Default)]
pub(super) struct OpenUploads {
    /// The last count and when its listing ended. Held across a listing: the scrapes that
    /// come meanwhile wait for it and take its count (single flight).
    last: tokio::sync::Mutex<Option<(Instant, u64)>>,
    /// Listings of the area made so far (a test hook: `Service::open_upload_scans`).
    scans: AtomicU64,
}

impl OpenUploads {
    /// The uploads open in `resumables`, at most [`FRESH`] old; `None` when the area cannot be
    /// listed (not kept: the next scrape tries again).
    pub(super) async fn count(&self, resumables: &Arc<Resumables>) -> Option<u64> {
        let mut last = self.last.lock().await;
        if let Some((at, count)) = *last {
            if at.elapsed() < FRESH {
                return Some(count);
            }
        }
        self.scans.fetch_add(1, Relaxed);
        let resumables = Arc::clone(resumables);
        let listed = tokio::task::spawn_blocking(move || resumables.incomplete().ok());
        let count = listed.await.ok().flatten()?;
        *last = Some((Instant::now(), count));
        Some(count)
    }

    /// Listings of the area made so far.
    pub(super) fn scans(&self) -> u64 {
        self.scans.load(Relaxed)
    }
}
