//! Summaries of repeated timings.

use serde::Serialize;

/// min / median / p99 / max of a set of samples, in the samples' unit.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "a summary needs samples");
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
        // The mean of the middle two when there are an even number: with
        // the few samples of a repeated plot benchmark, taking either one
        // would lean the median up or down.
        let n = s.len();
        let median = match n % 2 {
            1 => s[n / 2],
            _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        };
        Summary {
            count: n,
            min: s[0],
            median,
            mean: s.iter().sum::<f64>() / s.len() as f64,
            p99: at(0.99),
            max: s[s.len() - 1],
        }
    }
}

/// The smallest of 1, 2 or 5 times a power of ten that is at least `x`:
/// the round numbers of axes, colour scales and time slices.
pub fn round_up_125(x: f64) -> f64 {
    let x = if x.is_finite() { x.max(1e-12) } else { 1.0 };
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= x * (1.0 - 1e-12))
        .unwrap_or(10.0 * power)
}

/// A round step for an axis reaching `max`, about five steps long.
pub fn axis_step(max: f64) -> f64 {
    round_up_125(max / 5.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_numbers_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(round_up_125(99.0), 100.0);
        assert_eq!(round_up_125(100.0), 100.0);
        assert_eq!(round_up_125(101.0), 200.0);
        assert_eq!(round_up_125(2.4), 5.0);
        assert_eq!(round_up_125(0.1), 0.1);
        assert_eq!(round_up_125(0.33), 0.5);
        assert_eq!(round_up_125(f64::NAN), 1.0);
        assert_eq!(axis_step(240.0), 50.0);
    }

    #[test]
    fn quantiles() {
        let v: Vec<f64> = (1..=101).map(|x| x as f64).collect();
        let s = Summary::of(&v);
        assert_eq!((s.min, s.median, s.p99, s.max), (1.0, 51.0, 100.0, 101.0));
        assert_eq!(s.mean, 51.0);
        assert_eq!(Summary::of(&[3.0]).p99, 3.0);
        assert_eq!(Summary::of(&[3.0]).median, 3.0);
        assert_eq!(Summary::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5);
    }
}
