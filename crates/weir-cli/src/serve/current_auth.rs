//! The token requirements in force: one [`Auth`] that SIGHUP can replace (`reload.rs` reads
//! `--token-file` again). A request takes the current one once, at its start, and judges all
//! of itself by it: a reload never changes the rules under a request half-judged, and a
//! request's borrowed [`Caller`](super::auth::Caller) stays valid for as long as it runs.

use super::auth::Auth;
use std::sync::{Arc, PoisonError, RwLock};

/// The current [`Auth`], swapped whole.
pub(super) struct CurrentAuth(RwLock<Arc<Auth>>);

impl CurrentAuth {
    pub(super) fn new(auth: Auth) -> Self {
        Self(RwLock::new(Arc::new(auth)))
    }

    /// The requirements in force now (a reference count, no copy).
    pub(super) fn get(&self) -> Arc<Auth> {
        // A panic while holding the lock cannot leave a half-written `Arc`: recover it.
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `auth` in force for the requests that start afterwards.
    pub(super) fn replace(&self, auth: Auth) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(auth);
    }
}
