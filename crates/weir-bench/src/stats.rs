//! Summaries of repeated measurements: median and min–max, and the least-squares slope.
//!
//! Rounds are few (3 to 7), so the median is the honest centre and min–max the honest spread;
//! no standard deviations.

/// The values one row measured, one per round; NaN for a round that measured nothing (it
/// failed), so that rounds stay paired ([`Samples::ratio_to`]) and the summaries skip it.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    /// Adds one round's value.
    pub fn push(&mut self, v: f64) {
        self.0.push(v);
    }

    /// Adds a round that measured nothing.
    pub fn push_missing(&mut self) {
        self.0.push(f64::NAN);
    }

    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|v| v.is_nan())
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.0.iter().copied().filter(|v| !v.is_nan()).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median (mean of the middle two for an even count); NaN when empty.
    pub fn median(&self) -> f64 {
        let v = self.sorted();
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    /// The smallest value; NaN when empty.
    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    /// The largest value; NaN when empty.
    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }

    /// `median (min–max)` with `prec` decimals; `—` when empty.
    pub fn show(&self, prec: usize) -> String {
        if self.is_empty() {
            return "—".into();
        }
        if self.sorted().len() == 1 {
            return format!("{:.prec$}", self.median());
        }
        format!(
            "{:.prec$} ({:.prec$}–{:.prec$})",
            self.median(),
            self.min(),
            self.max()
        )
    }

    /// Element-wise ratio to `base` (paired by round); rounds missing on either side are skipped.
    pub fn ratio_to(&self, base: &Samples) -> Samples {
        Samples(
            self.0
                .iter()
                .zip(&base.0)
                .filter(|(a, b)| !a.is_nan() && !b.is_nan() && **b != 0.0)
                .map(|(a, b)| a / b)
                .collect(),
        )
    }
}

/// Least-squares fit `y = slope · x + intercept`; `None` for fewer than two distinct x.
pub fn linear_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if points.len() < 2 || sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises() {
        let s = Samples(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!(s.median(), 2.5);
        assert_eq!((s.min(), s.max()), (1.0, 10.0));
        assert_eq!(Samples(vec![2.0]).show(1), "2.0");
        let r = Samples(vec![2.0, 4.0]).ratio_to(&Samples(vec![1.0, 2.0]));
        assert_eq!(r.0, vec![2.0, 2.0]);
        assert_eq!(
            linear_fit(&[(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)]),
            Some((2.0, 1.0))
        );
    }

    #[test]
    fn a_round_that_measured_nothing_is_skipped_and_keeps_rounds_paired() {
        let mut peer = Samples::default();
        peer.push(2.0);
        peer.push_missing();
        peer.push(4.0);
        assert_eq!((peer.median(), peer.min(), peer.max()), (3.0, 2.0, 4.0));
        assert_eq!(peer.show(1), "3.0 (2.0–4.0)");
        let weir = Samples(vec![4.0, 5.0, 4.0]);
        assert_eq!(
            weir.ratio_to(&peer).0,
            vec![2.0, 1.0],
            "round 2 skipped, 3 with 3"
        );
        let mut none = Samples::default();
        none.push_missing();
        assert!(none.is_empty());
        assert_eq!(none.show(1), "—");
        assert!(weir.ratio_to(&none).is_empty());
    }
}
