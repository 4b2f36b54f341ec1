//! Where the `resume` scenario cuts its uploads: offsets drawn from a seeded generator, so a
//! run can be repeated and its report says exactly where each upload was cut.

/// SplitMix64: tiny, seedable, well mixed; the offsets need no more.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `lo..hi` (`hi > lo`), uniform up to a bias of `(hi - lo) / 2^64`.
    fn below(&mut self, lo: u64, hi: u64) -> u64 {
        lo + ((u128::from(self.next()) * u128::from(hi - lo)) >> 64) as u64
    }

    /// `n` distinct offsets in `1..size`, increasing, uniform over the upload.
    pub(super) fn cuts(&mut self, size: u64, n: usize) -> Vec<u64> {
        let n = n.min(size.saturating_sub(1) as usize);
        let mut v: Vec<u64> = Vec::with_capacity(n);
        while v.len() < n {
            let c = self.below(1, size);
            if !v.contains(&c) {
                v.push(c);
            }
        }
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_increase_within_the_upload_and_repeat_with_the_seed() {
        for size in [2u64, 5, 4 << 20, 700 << 20] {
            let mut rng = Rng::new(13);
            for _ in 0..50 {
                let c = rng.cuts(size, 3);
                assert_eq!(c.len(), 3.min(size as usize - 1));
                assert!(c.windows(2).all(|w| w[0] < w[1]), "{c:?}");
                assert!(c.iter().all(|&x| x >= 1 && x < size), "{c:?}");
            }
        }
        assert_eq!(Rng::new(7).cuts(1 << 30, 3), Rng::new(7).cuts(1 << 30, 3));
        assert_ne!(Rng::new(7).cuts(1 << 30, 3), Rng::new(8).cuts(1 << 30, 3));
    }
}
