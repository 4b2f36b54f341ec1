//! Summaries of repeated measurements: median and min–max, and the least-squares slope.
//!
//! Rounds are few (3 to 7), so the median is the honest centre and min–max the honest spread;
//! no standard deviations.

/// The values one row measured, one per round.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    /// Adds one round's value.
    pub fn push(&mut self, v: f64) {
        self.0.push(v);
    }

    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
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
        if self.0.len() == 1 {
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
                .filter(|(_, b)| **b != 0.0)
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
}
