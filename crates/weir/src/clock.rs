//! The wall clock for `Date` headers, read cheaply.
//!
//! Every response carries a `Date` with one-second resolution, so the fine clock is wasted on
//! it. On Linux the coarse realtime clock is a plain vDSO memory read (no TSC read, no
//! conversion); elsewhere, `SystemTime::now`.

#[cfg(any(test, not(target_os = "linux")))]
use std::time::SystemTime;

/// Seconds since the Unix epoch, read from the coarse clock (within a few milliseconds).
#[cfg(target_os = "linux")]
pub(crate) fn unix_seconds() -> u64 {
    use rustix::time::{ClockId, clock_gettime};
    u64::try_from(clock_gettime(ClockId::RealtimeCoarse).tv_sec).unwrap_or(0)
}

/// Seconds since the Unix epoch.
#[cfg(not(target_os = "linux"))]
pub(crate) fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_clock_agrees_with_the_fine_one() {
        let fine = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let coarse = unix_seconds();
        // The coarse clock ticks every few milliseconds: at most a second boundary apart.
        assert!(fine.abs_diff(coarse) <= 1, "{fine} vs {coarse}");
    }
}
