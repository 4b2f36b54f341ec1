//! The wall clock for `Date` headers, read cheaply.
//!
//! Every response carries a `Date` with one-second resolution, so the fine clock is wasted on
//! it. On Linux the coarse realtime clock is a plain vDSO memory read (no TSC read, no
//! conversion); elsewhere, `SystemTime::now`.

use std::time::SystemTime;

/// The current wall-clock time, to within a few milliseconds.
#[cfg(target_os = "linux")]
pub(crate) fn coarse_now() -> SystemTime {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::RealtimeCoarse);
    let since_epoch = std::time::Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    );
    SystemTime::UNIX_EPOCH + since_epoch
}

/// The current wall-clock time.
#[cfg(not(target_os = "linux"))]
pub(crate) fn coarse_now() -> SystemTime {
    SystemTime::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_clock_agrees_with_the_fine_one() {
        let fine = SystemTime::now();
        let coarse = coarse_now();
        let apart = match fine.duration_since(coarse) {
            Ok(d) => d,
            Err(e) => e.duration(),
        };
        // The coarse clock ticks every few milliseconds; a second apart would be a bug.
        assert!(apart.as_millis() < 1000, "{apart:?}");
    }
}
