//! The `Date` header value, formatted at most once per second.
//!
//! The clock is not read here: the caller passes `now`. Formatting an IMF-fixdate costs far more
//! than comparing seconds, and every response carries one, so the value is cached.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
const LEN: usize = 29;

/// A cached `Date` value.
#[derive(Clone, Debug)]
pub struct DateCache {
    second: u64,
    value: [u8; LEN],
}

impl Default for DateCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DateCache {
    /// An empty cache; the first [`DateCache::value`] formats.
    pub fn new() -> Self {
        Self {
            second: u64::MAX,
            value: [b' '; LEN],
        }
    }

    /// The IMF-fixdate for `now`, reformatted only when the second has changed.
    pub fn value(&mut self, now: SystemTime) -> &[u8] {
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.value_at(second)
    }

    /// The IMF-fixdate for `second` seconds after the Unix epoch, for callers that read a
    /// clock in seconds and need not build a `SystemTime` per response.
    pub fn value_at(&mut self, second: u64) -> &[u8] {
        if second != self.second {
            self.second = second;
            let mut out = FixedBuf {
                buf: &mut self.value,
                len: 0,
            };
            let time = UNIX_EPOCH + std::time::Duration::from_secs(second);
            // Cannot fail: an HttpDate always formats to exactly 29 ASCII bytes.
            let _ = write!(out, "{}", httpdate::HttpDate::from(time));
        }
        &self.value
    }
}

struct FixedBuf<'a> {
    buf: &'a mut [u8; LEN],
    len: usize,
}

impl Write for FixedBuf<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_and_caches() {
        let mut cache = DateCache::new();
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(cache.value(t), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            cache.value(t + Duration::from_millis(500)),
            b"Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            cache.value(t + Duration::from_secs(1)),
            b"Sun, 06 Nov 1994 08:49:38 GMT"
        );
    }
}
