//! Space accounting for one store: bytes of committed files plus bytes reserved by uploads in
//! progress, against an optional limit.
//!
//! Uploads reserve before they write, so the limit holds however many uploads run at once: a
//! temporary file occupies the disk as much as a committed one. The counter is a single atomic;
//! a reservation is a compare-and-swap loop that never lets `used` pass `limit`.
//!
//! The count is of apparent sizes (`st_size`), not of allocated blocks: that is what a client
//! uploaded and what it can predict. Each file and each directory also costs [`ENTRY_COST`], as
//! a filesystem block and an inode would: without it, empty files and directories would cost
//! nothing and a small quota could hold any number of them. It is exact as long as only this process writes the root
//! (which the root lock enforces); files changed behind the store's back make it an estimate,
//! corrected at the next start.

use crate::error::StoreError;
use std::sync::atomic::{AtomicU64, Ordering};

/// The least a declared length reserves ahead of the bytes received ([`reserved_end`]).
pub(crate) const AHEAD_MIN: u64 = 8 << 20;

/// The most a declared length reserves ahead of the bytes received ([`reserved_end`]).
pub(crate) const AHEAD_MAX: u64 = 64 << 20;

/// Where an upload that declared `declared` bytes and has `size` of them should have its
/// reservation end (quota and, when it preallocates, blocks on disk): a window ahead of what
/// arrived, never past the declared length. The window is what arrived, at least
/// [`AHEAD_MIN`] and at most [`AHEAD_MAX`]:
///
/// - a client holds at most 8 MiB it has not sent; past that, at most as much again as it has
///   sent (which it had to send at the minimum body rate, and which counts too), so declaring
///   a length and trickling holds almost nothing that other uploads need;
/// - a large fast upload still gets its blocks in few, large requests: one `fallocate` per
///   window, of 8 MiB growing to 64 MiB (half ext4's largest extent), so its file is as
///   unfragmented as with the whole length at once, for one system call per 64 MiB;
/// - growing by what arrived rather than a fixed 64 MiB from the start keeps a small upload
///   from holding 64 MiB it may never use.
///
/// Extended only when the bytes reach the end (one check per write, one atomic update and one
/// `fallocate` per window).
pub(crate) fn reserved_end(size: u64, declared: u64) -> u64 {
    let ahead = size.clamp(AHEAD_MIN, AHEAD_MAX);
    declared.min(size.saturating_add(ahead))
}

/// What each file and each directory under the root costs against
/// [`max_storage`](crate::LocalOptions::max_storage) besides its bytes: one 4 KiB block. An
/// upload in progress reserves it at begin; a directory takes it when a commit creates it.
pub const ENTRY_COST: u64 = 4096;

#[derive(Debug)]
pub(crate) struct Usage {
    used: AtomicU64,
    limit: Option<u64>,
    /// Test hook: runs at every release, before the count goes down.
    #[cfg(test)]
    pub(crate) on_release: crate::testutil::Hook,
}

impl Usage {
    pub(crate) fn new(used: u64, limit: Option<u64>) -> Self {
        Usage {
            used: AtomicU64::new(used),
            limit,
            #[cfg(test)]
            on_release: Default::default(),
        }
    }

    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub(crate) fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Takes `n` bytes, or fails without taking anything. Taking nothing always succeeds, even
    /// when the files on disk already exceed the limit (a limit lowered between two starts).
    pub(crate) fn reserve(&self, n: u64) -> Result<(), StoreError> {
        if n == 0 {
            return Ok(());
        }
        let limit = self.limit.unwrap_or(u64::MAX);
        // Relaxed is enough: the counter orders nothing but itself.
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(n).filter(|&total| total <= limit)
            })
            .map(drop)
            .map_err(|used| StoreError::QuotaExceeded {
                limit,
                used,
                requested: n,
            })
    }

    /// Whether `n` more bytes fit now, taking nothing: a declared length that cannot fit is
    /// refused before its body, though only a window of it is reserved ([`reserved_end`]).
    /// Fails with the error [`Usage::reserve`] would.
    pub(crate) fn fits(&self, n: u64) -> Result<(), StoreError> {
        let limit = self.limit.unwrap_or(u64::MAX);
        let used = self.used();
        match used.checked_add(n) {
            Some(total) if n == 0 || total <= limit => Ok(()),
            _ => Err(StoreError::QuotaExceeded {
                limit,
                used,
                requested: n,
            }),
        }
    }

    /// Takes `n` bytes whatever the limit: space that turned out to be still in use (a file
    /// whose name was removed, still read).
    pub(crate) fn charge(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_add(n))
            });
    }

    /// Gives back `n` bytes: an upload discarded, a file deleted or replaced. Saturates at zero,
    /// in case a file changed size behind the store's back.
    pub(crate) fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        #[cfg(test)]
        self.on_release.run();
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_sub(n))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_up_to_the_limit_and_no_further() {
        let u = Usage::new(40, Some(100));
        u.reserve(60).unwrap();
        assert_eq!(u.used(), 100);
        let err = u.reserve(1).unwrap_err();
        assert!(matches!(
            err,
            StoreError::QuotaExceeded {
                limit: 100,
                used: 100,
                requested: 1
            }
        ));
        assert_eq!(u.used(), 100, "a failed reservation takes nothing");
        u.release(30);
        u.reserve(30).unwrap();
        u.release(1000);
        assert_eq!(u.used(), 0, "release saturates");
    }

    #[test]
    fn a_declared_length_reserves_a_window_that_grows_with_what_arrived() {
        const MIB: u64 = 1 << 20;
        // Nothing arrived yet: 8 MiB ahead, or the whole length when it is smaller.
        assert_eq!(reserved_end(0, 260_000_000), 8 * MIB);
        assert_eq!(reserved_end(0, 5 * MIB), 5 * MIB);
        assert_eq!(reserved_end(0, 0), 0);
        // Within the first 8 MiB received, 8 MiB ahead.
        assert_eq!(reserved_end(1024, 260_000_000), 1024 + 8 * MIB);
        assert_eq!(reserved_end(8 * MIB, 260_000_000), 16 * MIB);
        // Then as much again as arrived...
        assert_eq!(reserved_end(20 * MIB, 260_000_000), 40 * MIB);
        // ...up to 64 MiB ahead.
        assert_eq!(reserved_end(64 * MIB, 260_000_000), 128 * MIB);
        assert_eq!(reserved_end(200 * MIB, 1 << 40), 264 * MIB);
        // Never past the declared length.
        assert_eq!(reserved_end(240 * MIB, 250 * MIB), 250 * MIB);
        assert_eq!(reserved_end(250 * MIB, 250 * MIB), 250 * MIB);
        assert_eq!(reserved_end(u64::MAX - 1, u64::MAX), u64::MAX);
        // The attack of issue 36: two clients declaring 260 MB and sending 1,140 bytes held
        // 520 MB; now they hold 16.8 MB.
        let held = 2 * (reserved_end(1140, 260_000_000) - 1140);
        assert_eq!(held, 16 * MIB);
    }

    #[test]
    fn fits_checks_without_taking() {
        let u = Usage::new(40, Some(100));
        assert!(u.fits(60).is_ok());
        assert!(matches!(
            u.fits(61),
            Err(StoreError::QuotaExceeded {
                limit: 100,
                used: 40,
                requested: 61
            })
        ));
        assert_eq!(u.used(), 40, "nothing taken");
        assert!(Usage::new(150, Some(100)).fits(0).is_ok());
        assert!(Usage::new(0, None).fits(u64::MAX).is_ok());
        assert!(Usage::new(1, None).fits(u64::MAX).is_err(), "overflow");
    }

    #[test]
    fn over_the_limit_only_nothing_fits() {
        let u = Usage::new(150, Some(100));
        assert!(u.reserve(0).is_ok());
        assert!(u.reserve(1).is_err());
    }

    #[test]
    fn unlimited_still_counts() {
        let u = Usage::new(0, None);
        u.reserve(u64::MAX - 1).unwrap();
        assert!(u.reserve(2).is_err(), "overflow is refused, not wrapped");
        assert_eq!(u.used(), u64::MAX - 1);
    }

    #[test]
    fn concurrent_reservations_never_pass_the_limit() {
        let u = Usage::new(0, Some(1000));
        let granted = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        if u.reserve(3).is_ok() {
                            granted.fetch_add(3, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(u.used(), granted.load(Ordering::Relaxed));
        assert_eq!(u.used(), 999);
    }
}
