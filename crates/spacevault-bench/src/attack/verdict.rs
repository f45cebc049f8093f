//! What the attacks' costs say: a cost over challenges, the trade-off's
//! frontier, Hellman's exponent fitted, and the gate.

use super::{AttackRow, ANSWERED, GATE};
use serde::Serialize;

/// One line of the gate: the cheapest attack saving `factor` of the space.
#[derive(Clone, Debug, Serialize)]
pub struct GateLine {
    pub scheme: &'static str,
    pub factor: f64,
    pub threshold: f64,
    /// The cheapest attack that saves that much and answers
    /// [`ANSWERED`] of challenges, and its hashes a challenge.
    pub cheapest: Option<String>,
    pub hashes: Option<f64>,
    pub passes: bool,
}

/// The median cost of the challenges answered, the least cost that
/// answers [`ANSWERED`] of `costs` (None a failure), and the share
/// answered.
pub(super) fn spread(costs: &[Option<u64>]) -> (f64, Option<f64>, f64) {
    let n = costs.len();
    if n == 0 {
        return (0.0, None, 0.0);
    }
    let mut sorted: Vec<f64> = costs
        .iter()
        .map(|c| c.map_or(f64::INFINITY, |c| c as f64))
        .collect();
    sorted.sort_by(f64::total_cmp);
    let answered = costs.iter().filter(|c| c.is_some()).count() as f64 / n.max(1) as f64;
    let at = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let all: Vec<f64> = costs.iter().flatten().map(|&c| c as f64).collect();
    let median = if all.is_empty() {
        0.0
    } else {
        let mut all = all;
        all.sort_by(f64::total_cmp);
        all[all.len() / 2]
    };
    let p90 = at(ANSWERED);
    (median, p90.is_finite().then_some(p90), answered)
}

/// `y = coefficient · x^exponent`, fitted by least squares on logs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PowerFit {
    pub coefficient: f64,
    pub exponent: f64,
}

impl PowerFit {
    /// The fit through `points`; None for fewer than two distinct x.
    pub fn of(points: &[(f64, f64)]) -> Option<PowerFit> {
        let logs: Vec<(f64, f64)> = points.iter().map(|(x, y)| (x.ln(), y.ln())).collect();
        let n = logs.len() as f64;
        let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
        let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if logs.len() < 2 || sxx < 1e-12 {
            return None;
        }
        let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let exponent = sxy / sxx;
        Some(PowerFit {
            coefficient: (my - exponent * mx).exp(),
            exponent,
        })
    }
}

/// The rows no other row of their scheme beats: another saving as much
/// or more for fewer hashes. Sorted by scheme, then saving.
pub fn frontier(rows: &[AttackRow]) -> Vec<AttackRow> {
    let key = |r: &AttackRow| r.saving().unwrap_or(f64::INFINITY);
    let mut out: Vec<AttackRow> = rows
        .iter()
        .filter(|r| {
            let Some(h) = r.hashes_p90 else { return false };
            !rows.iter().any(|o| {
                o.scheme == r.scheme
                    && o.hashes_p90.is_some_and(|oh| {
                        key(o) >= key(r) && oh <= h && (key(o) > key(r) || oh < h)
                    })
            })
        })
        .cloned()
        .collect();
    out.sort_by(|a, b| a.scheme.cmp(b.scheme).then(key(a).total_cmp(&key(b))));
    out
}

/// For each scheme and saving of [`GATE`], the cheapest carried attack.
pub(super) fn gate(carried: &[AttackRow]) -> Vec<GateLine> {
    let mut lines = Vec::new();
    for scheme in ["plain", "hard"] {
        for (factor, threshold) in GATE {
            let cheapest = carried
                .iter()
                .filter(|r| r.scheme == scheme && r.saves_at_least(factor))
                .filter_map(|r| r.hashes_p90.map(|h| (h, r)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            lines.push(GateLine {
                scheme,
                factor,
                threshold,
                cheapest: cheapest.map(|c| c.1.attack.clone()),
                hashes: cheapest.map(|c| c.0),
                passes: cheapest.is_none_or(|c| c.0 > threshold),
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_counts_failures_as_never_answered() {
        let costs: Vec<Option<u64>> = (1..=10).map(Some).collect();
        assert_eq!(spread(&costs), (6.0, Some(9.0), 1.0));
        let mut some: Vec<Option<u64>> = (1..=8).map(Some).collect();
        some.extend([None, None]);
        let (_, p90, answered) = spread(&some);
        assert_eq!((p90, answered), (None, 0.8));
    }

    #[test]
    fn a_power_law_is_fitted_back() {
        let points: Vec<(f64, f64)> = [2.0, 8.0, 32.0].iter().map(|&x| (x, 3.0 * x * x)).collect();
        let fit = PowerFit::of(&points).unwrap();
        assert!((fit.exponent - 2.0).abs() < 1e-9 && (fit.coefficient - 3.0).abs() < 1e-6);
        assert_eq!(PowerFit::of(&points[..1]), None);
    }

    /// A carried table-chain row of an honest plot of 100 bytes.
    fn r(attack: &str, attacker_bytes: f64, hashes: f64) -> AttackRow {
        AttackRow {
            scheme: "hard",
            attack: attack.into(),
            k: 32,
            extrapolated: true,
            honest_bytes: 100.0,
            attacker_bytes,
            answered: 1.0,
            hashes_median: hashes,
            hashes_p90: Some(hashes),
            precomputed_hashes: 0.0,
            seconds_per_challenge: None,
        }
    }

    #[test]
    fn the_frontier_keeps_only_what_nothing_beats() {
        let rows = [
            r("cheap", 90.0, 10.0),
            r("beaten", 80.0, 1e9),
            r("better", 50.0, 1e8),
            r("nothing", 0.0, 2e10),
        ];
        let names: Vec<_> = frontier(&rows).into_iter().map(|r| r.attack).collect();
        assert_eq!(names, ["cheap", "better", "nothing"]);
    }

    #[test]
    fn the_gate_takes_the_cheapest_attack_that_saves_enough() {
        let rows = [
            r("small", 90.0, 10.0),
            r("half", 40.0, 2e9),
            r("nothing", 0.0, 2e10),
        ];
        let lines = gate(&rows);
        let hard: Vec<_> = lines.iter().filter(|l| l.scheme == "hard").collect();
        assert_eq!(hard[0].cheapest.as_deref(), Some("half"));
        assert!(hard[0].passes);
        assert_eq!(hard[1].cheapest.as_deref(), Some("nothing"));
        assert!(!hard[1].passes);
    }
}
