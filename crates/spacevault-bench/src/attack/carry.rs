//! The rows of the largest measured size carried to k = 32: hashes that
//! grow with the plot (a forward pass, a level's recomputation) scale by
//! `2^(32 - k)`, those that do not (rainbow lookups, grinds of a few
//! bits) stay, and each level's entries keep their measured share of
//! `2^k`.

use super::verdict::spread;
use super::{
    combined_name, dropped_level_sets, recompute_hashes, AttackRow, Compact, HardMeasured,
    ANSWERED, TARGET_K,
};

/// The rows of the largest measured size carried to [`TARGET_K`].
pub(super) fn carry(k: u8, plain: &[AttackRow], hard: &HardMeasured) -> Vec<AttackRow> {
    let grow = 2f64.powi(i32::from(TARGET_K - k));
    let mut out = Vec::new();
    // The plain format's bytes a record grow with k (a record keeps k
    // bits of its counter).
    let plain_bytes = plain[0].honest_bytes * grow * f64::from(TARGET_K) / f64::from(k);
    for r in plain {
        let mut c = r.clone();
        c.k = TARGET_K;
        c.extrapolated = true;
        c.seconds_per_challenge = None;
        c.honest_bytes = plain_bytes;
        if r.attack == "from nothing" {
            c.hashes_median *= grow;
            c.hashes_p90 = r.hashes_p90.map(|h| h * grow);
        } else {
            // As many chains a table as records over the length, each
            // (k + 2) bits; a lookup's hashes do not grow with k.
            c.attacker_bytes =
                r.attacker_bytes * grow * (f64::from(TARGET_K) + 2.0) / (f64::from(k) + 2.0);
            c.precomputed_hashes *= grow;
        }
        out.push(c);
    }
    // The table-chain plot at k = 32: each level's entries in the same
    // proportion to 2^k as measured.
    let levels = hard.compact.levels;
    let scale = |n: u64| ((n as f64) * grow).round() as u64;
    let matched: Vec<u64> = hard.matched.iter().map(|&n| scale(n)).collect();
    let compact = Compact {
        k: TARGET_K,
        levels,
        stored: hard.compact.stored.iter().map(|&n| scale(n)).collect(),
    };
    let honest_bytes = compact.bytes();
    let forward_to = |level: u8| matched[..usize::from(level)].iter().sum::<u64>() as f64;
    let carried = |attack: String, attacker_bytes: f64, hashes: f64, answered: f64| AttackRow {
        scheme: "hard",
        attack,
        k: TARGET_K,
        extrapolated: true,
        honest_bytes,
        attacker_bytes,
        answered,
        hashes_median: hashes,
        hashes_p90: (answered >= ANSWERED).then_some(hashes),
        precomputed_hashes: 0.0,
        seconds_per_challenge: None,
    };
    out.push(carried("from nothing".into(), 0.0, forward_to(levels), 1.0));
    for (name, dropped) in dropped_level_sets(levels) {
        let high = *dropped.last().unwrap();
        let kept = compact.without_levels(&dropped, matched[usize::from(high) - 1] as f64);
        out.push(carried(
            name,
            kept,
            recompute_hashes(&matched, high) as f64,
            1.0,
        ));
    }
    let grind_rows = hard.rows.iter().filter(|r| r.attack.contains("bits off"));
    for (r, (dropped, bits)) in grind_rows.zip(&hard.grinds) {
        let mut c = carried(
            r.attack.clone(),
            compact.without_bits(dropped, *bits),
            r.hashes_median,
            r.answered,
        );
        c.hashes_p90 = r.hashes_p90;
        out.push(c);
    }
    // The recomputation grows with the plot; the grind above it does not
    // (at the sizes run, its lazily hashed entries are a small part of
    // their level, and a cap there only makes the carried row cheaper).
    for c in &hard.combined {
        let recompute = recompute_hashes(&matched, c.high) as f64;
        let (median, p90, answered) = spread(&c.grinds);
        let dropped: Vec<u8> = (2..=c.high).collect();
        let kept = compact.without(
            &dropped,
            matched[usize::from(c.high) - 1] as f64,
            &[levels],
            c.bits,
        );
        let mut row = carried(
            combined_name(c.high, c.bits),
            kept,
            recompute + median,
            answered,
        );
        row.hashes_p90 = p90.map(|p| recompute + p);
        out.push(row);
    }
    out
}
