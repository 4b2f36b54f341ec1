//! One page of a store directory, listed where the store wants it listed: shared by the routes
//! that walk directories themselves (a folder's archive, the HTML listing), so that none of
//! them imports another route.
//!
//! Invariants (the same as `listing.rs`'s for the JSON listing):
//! - a store whose listing blocks (`Store::LIST_BLOCKS`: a local directory scan) is listed on
//!   tokio's blocking pool under one of the service's scan permits ([`Scans`]), never on an
//!   async worker; a bucket's listing is awaited on the connection's task;
//! - a call holds one page (at most `limit` entries), nothing more, and nothing is cached.
//!
//! [`Scans`]: crate::serve::service::Scans

use crate::serve::service::Service;
use std::num::NonZeroUsize;
use std::sync::Arc;
use weir_store::{ListPage, Store, StoreError, StorePath};

/// Why a page was not listed.
#[derive(Debug)]
pub(crate) enum PageError {
    /// The store's answer.
    Store(StoreError),
    /// The blocking task died (a panic in the scan).
    Scan(tokio::task::JoinError),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Store(e) => write!(f, "{e}"),
            Self::Scan(e) => write!(f, "directory scan failed: {e}"),
        }
    }
}

impl std::error::Error for PageError {}

/// The page of `dir` (`None`: the top) after `after`, of at most `limit` entries.
pub(crate) async fn list_page<S: Store + Clone>(
    svc: &Service,
    store: &S,
    dir: Option<&StorePath>,
    after: Option<&str>,
    limit: NonZeroUsize,
) -> Result<ListPage, PageError> {
    if !S::LIST_BLOCKS {
        return store
            .list_page(dir, after, limit)
            .await
            .map_err(PageError::Store);
    }
    let Ok(permit) = Arc::clone(&svc.listings.permits).acquire_owned().await else {
        unreachable!("the scan semaphore is never closed");
    };
    let store = store.clone();
    // ALLOCATION: the path and the cursor move to the blocking thread (a name each).
    let dir = dir.cloned();
    let after = after.map(str::to_owned);
    // Such a store's future does its work when first polled, on the thread that polls it:
    // the blocking one.
    let runtime = tokio::runtime::Handle::current();
    let scan = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        runtime.block_on(store.list_page(dir.as_ref(), after.as_deref(), limit))
    });
    match scan.await {
        Ok(page) => page.map_err(PageError::Store),
        Err(join) => Err(PageError::Scan(join)),
    }
}
