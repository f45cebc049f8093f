//! The known attacks on both schemes, run against real plots at several
//! sizes and carried to k = 32 (`spacevault bench attack`).
//!
//! Each attack keeps less than the plot and pays in hashes, challenge by
//! challenge, to answer with the quality the whole plot gives
//! ([`spacevault::attack`] has the attacks). At each measured size the
//! bench plots both schemes, answers every challenge honestly, runs each
//! attack that answers on the same challenges (counting the hashes it made
//! and whether its answer was the honest one), and runs the forward pass
//! that a rebuild or a dropped level's recomputation costs, counting its
//! entries. At k = 32 the hashes that grow
//! with the plot (a forward pass, a rebuild) scale by `2^(32 - k)` from
//! the largest size measured, those that do not (rainbow lookups, grinds
//! of a few bits) stay, and each level's entries keep their measured
//! share of `2^k`. The gate asks, of each saving of space, the cheapest
//! attack that answers 90% of challenges with equal quality.
//!
//! A table-chain plot's space is counted in a compact encoding
//! ([`Compact`]) for the honest plot and the attacker alike: the file
//! takes about 2% more (its parks' slack and its index), and an attacker
//! would shed that first, for no hashes.

mod carry;
mod compact;
mod verdict;

pub use compact::Compact;
pub use verdict::{frontier, GateLine, PowerFit};

use crate::machine::{self, Machine};
use crate::BenchError;
use carry::carry;
use serde::Serialize;
use spacevault::attack::rainbow::{self, Rainbow};
use spacevault::attack::table_chain;
use spacevault::hard::{HardPlotFile, HardPlotOptions};
use spacevault::plot::NoProgress;
use spacevault::PlotOptions;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use verdict::{gate, spread};

/// The size the attacks are carried to.
pub const TARGET_K: u8 = 32;

/// The most bits ground off one level's entries (2^24 tries a challenge).
pub const MAX_GRIND_BITS: u32 = 24;

/// The most bits ground off every level at once: the tries multiply
/// down the tree, about `2^(4b)` a challenge.
pub const MAX_NESTED_BITS: u32 = 6;

/// The share of challenges an attack must answer with equal quality to
/// count for the gate.
pub const ANSWERED: f64 = 0.9;

/// The gate: saving this factor of the space must cost more than this
/// many hashes a challenge.
pub const GATE: [(f64, f64); 2] = [(2.0, 1e9), (4.0, 3e11)];

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct AttackOptions {
    /// Plot sizes measured.
    pub ks: Vec<u8>,
    /// Challenges each attack answers at each size.
    pub challenges: u32,
    /// Chain lengths of the rainbow tables tried on the plain scheme.
    pub rainbow_lengths: Vec<u32>,
    /// Tables an attacker holds (each `2^k / length` chains).
    pub rainbow_tables: u32,
    /// Bits dropped from each entry of one level of the table-chain plot.
    pub grind_bits: Vec<u32>,
    /// Bits dropped from each entry of every level at once.
    pub nested_bits: Vec<u32>,
    /// Bits dropped from each top entry by an attacker who also drops
    /// and recomputes middle levels (run at the largest size only: these
    /// are the rows the gate is decided by, and the slowest).
    pub combined_bits: Vec<u32>,
    pub threads: usize,
    /// Where the plots go (deleted after each size).
    pub dir: PathBuf,
}

impl Default for AttackOptions {
    fn default() -> AttackOptions {
        AttackOptions {
            ks: vec![18, 20, 22],
            challenges: 100,
            rainbow_lengths: vec![32, 128, 512],
            rainbow_tables: 4,
            grind_bits: vec![4, 8, 12],
            nested_bits: vec![2, 3, 4, 5],
            combined_bits: vec![12, 16],
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            dir: PathBuf::from("."),
        }
    }
}

/// One attack at one size.
#[derive(Clone, Debug, Serialize)]
pub struct AttackRow {
    pub scheme: &'static str,
    pub attack: String,
    pub k: u8,
    /// Carried to this size from the largest measured, not run at it.
    pub extrapolated: bool,
    /// The honest plot's bytes, and the attacker's.
    pub honest_bytes: f64,
    pub attacker_bytes: f64,
    /// Share of challenges answered with the honest answer's quality.
    pub answered: f64,
    /// Hashes a challenge: the median, and the least that answers
    /// [`ANSWERED`] of challenges (None when fewer are ever answered).
    pub hashes_median: f64,
    pub hashes_p90: Option<f64>,
    /// Hashes made once, before any challenge (the rainbow tables).
    pub precomputed_hashes: f64,
    /// Seconds a challenge took here (measured rows only).
    pub seconds_per_challenge: Option<f64>,
}

impl AttackRow {
    /// Honest bytes over the attacker's: None for an attacker who keeps
    /// nothing.
    pub fn saving(&self) -> Option<f64> {
        (self.attacker_bytes > 0.0).then(|| self.honest_bytes / self.attacker_bytes)
    }

    fn saves_at_least(&self, factor: f64) -> bool {
        self.saving().is_none_or(|s| s >= factor)
    }
}

/// What `bench attack` measured.
#[derive(Clone, Debug, Serialize)]
pub struct AttackReport {
    pub machine: Machine,
    pub options: AttackOptions,
    /// Hashes a second this machine's cores make (the plotter's kernel).
    pub hash_rate: f64,
    pub rows: Vec<AttackRow>,
    /// The table-chain plots' sizes: the file, and the compact count the
    /// rows measure space in.
    pub hard_sizes: Vec<HardSize>,
    /// Each scheme's trade-off at k = 32: the cheapest attack for each
    /// saving, saving by saving (the lower envelope of the chart).
    pub frontier: Vec<AttackRow>,
    /// The rainbow tables' cost against their saving at k = 32, fitted as
    /// `hashes = coefficient · saving^exponent` (Hellman's trade-off has
    /// exponent 2).
    pub rainbow_fit: Option<PowerFit>,
    pub gate: Vec<GateLine>,
}

/// A table-chain plot as the plotter wrote it and in the compact count.
#[derive(Clone, Debug, Serialize)]
pub struct HardSize {
    pub k: u8,
    /// None for the size carried to k = 32.
    pub file_bytes: Option<u64>,
    pub compact_bytes: f64,
    /// The "levels dropped" attack run for real at this size: every
    /// middle level rebuilt from the plot's id (forward pass, pruning,
    /// renumbering) in this many seconds, and found equal to the file's
    /// (a difference fails the bench). None for the size carried.
    pub rebuilt_seconds: Option<f64>,
    /// Middle entries rebuilt and compared.
    pub rebuilt_entries: Option<u64>,
}

/// The challenges every attack answers.
pub fn challenge(i: u32) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"spacevault bench attack challenge");
    h.update(&i.to_le_bytes());
    *h.finalize().as_bytes()
}

/// Runs every attack at every size of `options`.
pub fn run(
    options: &AttackOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<AttackReport, BenchError> {
    if options.ks.is_empty() || options.challenges == 0 {
        return Err(BenchError::Invalid(
            "at least one size and one challenge are needed".into(),
        ));
    }
    for &k in &options.ks {
        if !(spacevault::hard::construction::MIN_K..=24).contains(&k) {
            return Err(BenchError::Invalid(format!(
                "k = {k}: the attacks run at k = 16 to 24"
            )));
        }
    }
    if let Some(t) = options
        .rainbow_lengths
        .iter()
        .find(|&&t| !(1..=65_536).contains(&t))
    {
        return Err(BenchError::Invalid(format!(
            "a rainbow chain of {t} steps: 1 to 65536"
        )));
    }
    let one_level = options.grind_bits.iter().chain(&options.combined_bits);
    if let Some(b) = one_level.clone().find(|&&b| b > MAX_GRIND_BITS) {
        return Err(BenchError::Invalid(format!(
            "{b} bits ground off one level: at most {MAX_GRIND_BITS} (2^{MAX_GRIND_BITS} tries a challenge)"
        )));
    }
    if let Some(b) = options.nested_bits.iter().find(|&&b| b > MAX_NESTED_BITS) {
        return Err(BenchError::Invalid(format!(
            "{b} bits ground off every level: at most {MAX_NESTED_BITS} (about 2^(4b) tries a challenge)"
        )));
    }
    // Carried to k = 32 from the largest size, whatever the order given.
    let mut ks = options.ks.clone();
    ks.sort_unstable();
    ks.dedup();
    std::fs::create_dir_all(&options.dir)
        .map_err(|e| BenchError::io(format!("creating {}", options.dir.display()), e))?;
    progress("measuring this machine's hash rate");
    let hash_rate = machine::hash_rate(options.threads, Duration::from_millis(500));
    let mut rows = Vec::new();
    let mut hard_sizes = Vec::new();
    let mut last = None;
    let largest = *ks.last().expect("one size at least");
    for &k in &ks {
        let plain = plain_rows(options, k, progress)?;
        let hard = hard_rows(options, k, k == largest, progress)?;
        rows.extend(plain.clone());
        rows.extend(hard.rows.clone());
        hard_sizes.push(HardSize {
            k,
            file_bytes: Some(hard.file_bytes),
            compact_bytes: hard.compact.bytes(),
            rebuilt_seconds: Some(hard.rebuilt.seconds),
            rebuilt_entries: Some(hard.rebuilt.entries),
        });
        last = Some((k, plain, hard));
    }
    let (k, plain, hard) = last.expect("one size at least");
    let carried = carry(k, &plain, &hard);
    if let Some(r) = carried.iter().find(|r| r.scheme == "hard") {
        hard_sizes.push(HardSize {
            k: TARGET_K,
            file_bytes: None,
            compact_bytes: r.honest_bytes,
            rebuilt_seconds: None,
            rebuilt_entries: None,
        });
    }
    let gate = gate(&carried);
    let rainbow: Vec<(f64, f64)> = carried
        .iter()
        .filter(|r| r.attack.starts_with("rainbow"))
        .filter_map(|r| Some((r.saving()?, r.hashes_p90?)))
        .collect();
    let frontier = frontier(&carried);
    rows.extend(carried);
    Ok(AttackReport {
        machine: Machine::this(),
        options: options.clone(),
        hash_rate,
        rows,
        hard_sizes,
        frontier,
        rainbow_fit: PowerFit::of(&rainbow),
        gate,
    })
}

/// The plain scheme at size `k`: from nothing, and rainbow tables.
fn plain_rows(
    options: &AttackOptions,
    k: u8,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<AttackRow>, BenchError> {
    progress(&format!("k = {k}: plotting the plain scheme"));
    let dir = PlotDir::new(options, "plain")?;
    let mut plot_options = PlotOptions::new(k, [0xA7; 32], [k; 32]);
    plot_options.threads = options.threads;
    let summary = spacevault::plot(&plot_options, &dir.0, &NoProgress)?;
    let file = spacevault::PlotFile::open(&summary.path)?;
    let honest: Vec<_> = (0..options.challenges)
        .map(|i| file.prove(&challenge(i)).map(|a| a.candidate()))
        .collect::<Result<_, _>>()
        .map_err(|e| BenchError::Invalid(format!("the honest plain plot: {e}")))?;
    let honest_bytes = summary.bytes as f64;
    let records = 1u64 << k;
    let mut rows = Vec::new();

    // From nothing: every record hashed, the best kept.
    progress(&format!("k = {k}: plain, from nothing"));
    let start = Instant::now();
    let mut costs = Vec::new();
    let n = options.challenges.min(10);
    for (i, honest) in honest.iter().enumerate().take(n as usize) {
        let best = spacevault::brute_force_best(&summary.plot_id, k, &challenge(i as u32));
        costs.push((best == *honest).then_some(records));
    }
    rows.push(row(
        "plain",
        "from nothing".into(),
        k,
        honest_bytes,
        0.0,
        &costs,
        0.0,
        start.elapsed().as_secs_f64() / f64::from(n),
    ));

    for &length in &options.rainbow_lengths {
        progress(&format!(
            "k = {k}: plain, {} rainbow tables of chains {length} long",
            options.rainbow_tables
        ));
        let chains = (records / u64::from(length)).max(1);
        let tables: Vec<Rainbow> = (0..options.rainbow_tables)
            .map(|salt| Rainbow::build(&summary.plot_id, k, chains, length, u64::from(salt)))
            .collect();
        let stored_bits: u64 = tables.iter().map(Rainbow::stored_bits).sum();
        let start = Instant::now();
        let costs: Vec<Option<u64>> = honest
            .iter()
            .enumerate()
            .map(|(i, honest)| {
                let got = rainbow::answer(&tables, &challenge(i as u32));
                (got.value == Some(*honest)).then_some(got.hashes)
            })
            .collect();
        rows.push(row(
            "plain",
            format!("rainbow t={length} x{}", options.rainbow_tables),
            k,
            honest_bytes,
            stored_bits as f64 / 8.0,
            &costs,
            (chains * u64::from(length) * u64::from(options.rainbow_tables)) as f64,
            start.elapsed().as_secs_f64() / f64::from(options.challenges),
        ));
    }
    Ok(rows)
}

/// What the table-chain plot at one size measured, kept for carrying to
/// k = 32.
#[derive(Clone)]
struct HardMeasured {
    rows: Vec<AttackRow>,
    file_bytes: u64,
    rebuilt: table_chain::Recomputed,
    compact: Compact,
    /// Entries matched at each level.
    matched: Vec<u64>,
    /// Per grind row: the levels and bits it dropped.
    grinds: Vec<(Vec<u8>, u32)>,
    /// Per combined row: what it did, and each challenge's grind alone.
    combined: Vec<Combined>,
}

/// Levels 2 to `high` dropped and recomputed, and `bits` ground off each
/// top entry with them in memory.
#[derive(Clone)]
struct Combined {
    high: u8,
    bits: u32,
    /// Each challenge's grinding hashes, None where its answer was not
    /// the honest one.
    grinds: Vec<Option<u64>>,
}

fn hard_rows(
    options: &AttackOptions,
    k: u8,
    with_combined: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<HardMeasured, BenchError> {
    progress(&format!("k = {k}: plotting the table-chain scheme"));
    let dir = PlotDir::new(options, "hard")?;
    let mut plot_options = HardPlotOptions::new(k, [0xA7; 32], [k; 32]);
    plot_options.threads = options.threads;
    let summary = spacevault::hard::plot(&plot_options, &dir.0)?;
    let file = HardPlotFile::open(&summary.path)?;
    let levels = summary.levels;
    let compact = Compact {
        k,
        levels,
        stored: summary.stored.clone(),
    };
    let honest_bytes = compact.bytes();
    let mut rows = Vec::new();

    progress(&format!(
        "k = {k}: table chain, every middle level rebuilt and compared with the file's"
    ));
    let rebuilt = table_chain::recompute_middle(&file, options.threads)?;
    if let Some((level, i)) = rebuilt.first_difference {
        return Err(BenchError::Invalid(format!(
            "k = {k}: level {level} rebuilt from the plot's id differs from the file's at \
             entry {i}: the levels-dropped attack does not recompute what the plot stores"
        )));
    }
    progress(&format!("k = {k}: table chain, the forward pass"));
    let forward = table_chain::forward(&summary.plot_id, k, levels, options.threads);
    let exact = |hashes: u64| vec![Some(hashes); 1];
    rows.push(row(
        "hard",
        "from nothing".into(),
        k,
        honest_bytes,
        0.0,
        &exact(forward.hashes_to(levels)),
        0.0,
        summary.seconds,
    ));
    for (name, dropped) in dropped_level_sets(levels) {
        let top_dropped = *dropped.last().unwrap();
        let matched = forward.hashes[usize::from(top_dropped) - 1] as f64;
        let kept = compact.without_levels(&dropped, matched);
        rows.push(row(
            "hard",
            name,
            k,
            honest_bytes,
            kept,
            &exact(recompute_hashes(&forward.hashes, top_dropped)),
            0.0,
            forward.seconds[usize::from(top_dropped) - 1],
        ));
    }

    let honest: Vec<_> = (0..options.challenges)
        .map(|i| file.prove(&challenge(i)).map(|a| a.map(|a| a.score)))
        .collect::<Result<_, _>>()?;
    let mut grinds = Vec::new();
    let every: Vec<u8> = (2..=levels).collect();
    let single = (2..=levels).flat_map(|l| options.grind_bits.iter().map(move |&b| (vec![l], b)));
    let nested = options.nested_bits.iter().map(|&b| (every.clone(), b));
    for (dropped, bits) in single.chain(nested) {
        let name = grind_name(&dropped, levels, bits);
        progress(&format!("k = {k}: table chain, {name}"));
        let start = Instant::now();
        let mut costs = Vec::new();
        for (i, honest) in honest.iter().enumerate() {
            let got = table_chain::grind(&file, &dropped, bits, &challenge(i as u32))?;
            costs.push((got.score.is_some() && got.score == *honest).then_some(got.hashes));
        }
        rows.push(row(
            "hard",
            name,
            k,
            honest_bytes,
            compact.without_bits(&dropped, bits),
            &costs,
            0.0,
            start.elapsed().as_secs_f64() / f64::from(options.challenges),
        ));
        grinds.push((dropped, bits));
    }
    let mut combined = Vec::new();
    let combined_bits = if with_combined {
        &options.combined_bits[..]
    } else {
        &[]
    };
    for high in 2..levels {
        let recompute = recompute_hashes(&forward.hashes, high);
        let dropped: Vec<u8> = (2..=high).collect();
        let matched = forward.hashes[usize::from(high) - 1] as f64;
        for &bits in combined_bits {
            let name = combined_name(high, bits);
            progress(&format!("k = {k}: table chain, {name}"));
            let start = Instant::now();
            let mut grinds = Vec::new();
            for (i, honest) in honest.iter().enumerate() {
                // Level `high`'s entries are hashed as the grind needs
                // them; the levels below are in memory.
                let got = table_chain::grind_recomputed(
                    &file,
                    high - 1,
                    &[levels],
                    bits,
                    &challenge(i as u32),
                )?;
                grinds.push((got.score.is_some() && got.score == *honest).then_some(got.hashes));
            }
            let costs: Vec<Option<u64>> = grinds.iter().map(|g| g.map(|h| h + recompute)).collect();
            let ground = start.elapsed().as_secs_f64() / f64::from(options.challenges);
            rows.push(row(
                "hard",
                name,
                k,
                honest_bytes,
                compact.without(&dropped, matched, &[levels], bits),
                &costs,
                0.0,
                forward.seconds[usize::from(high) - 1] + ground,
            ));
            combined.push(Combined { high, bits, grinds });
        }
    }
    Ok(HardMeasured {
        rows,
        file_bytes: summary.bytes,
        rebuilt,
        compact,
        matched: summary.matched,
        grinds,
        combined,
    })
}

fn combined_name(high: u8, bits: u32) -> String {
    if high == 2 {
        format!("level 2 recomputed, {bits} bits off the top")
    } else {
        format!("levels 2-{high} recomputed, {bits} bits off the top")
    }
}

fn grind_name(dropped: &[u8], levels: u8, bits: u32) -> String {
    match dropped {
        [level] if *level == levels => format!("{bits} bits off the top level"),
        [level] => format!("{bits} bits off level {level}"),
        _ => format!("{bits} bits off every level"),
    }
}

/// The hashes that recompute dropped levels up to `high`: the entries
/// of every level below it (the leaves, then each join, whose outputs
/// the next level matches on). Level `high`'s own entries are found by
/// matching and numbered by their children's positions, which take no
/// hash, and a quality needs only leaves.
fn recompute_hashes(matched: &[u64], high: u8) -> u64 {
    matched[..usize::from(high) - 1].iter().sum()
}

/// Every run of middle levels an attacker may drop, with the top: each
/// is recomputed by the forward pass up to its highest level. Dropping
/// the top is rebuilding from nothing.
fn dropped_level_sets(levels: u8) -> Vec<(String, Vec<u8>)> {
    let mut sets = Vec::new();
    for low in 2..levels {
        for high in low..levels {
            let name = if low == high {
                format!("drop level {low}")
            } else {
                format!("drop levels {low}-{high}")
            };
            sets.push((name, (low..=high).collect()));
        }
    }
    sets
}

#[allow(clippy::too_many_arguments)]
fn row(
    scheme: &'static str,
    attack: String,
    k: u8,
    honest_bytes: f64,
    attacker_bytes: f64,
    costs: &[Option<u64>],
    precomputed_hashes: f64,
    seconds_per_challenge: f64,
) -> AttackRow {
    let (median, p90, answered) = spread(costs);
    AttackRow {
        scheme,
        attack,
        k,
        extrapolated: false,
        honest_bytes,
        attacker_bytes,
        answered,
        hashes_median: median,
        hashes_p90: p90,
        precomputed_hashes,
        seconds_per_challenge: Some(seconds_per_challenge),
    }
}

/// A directory for one size's plot, removed when dropped (an attack that
/// fails part way leaves nothing behind either).
struct PlotDir(PathBuf);

impl PlotDir {
    fn new(options: &AttackOptions, what: &str) -> Result<PlotDir, BenchError> {
        let dir = options
            .dir
            .join(format!("spacevault-attack-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
        Ok(PlotDir(dir))
    }
}

impl Drop for PlotDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_measures_both_schemes_and_carries_them_to_k_32() {
        let dir = tempfile::tempdir().unwrap();
        let options = AttackOptions {
            // Carried from the larger, whatever the order.
            ks: vec![17, 16],
            challenges: 20,
            rainbow_lengths: vec![16],
            rainbow_tables: 2,
            grind_bits: vec![2],
            nested_bits: vec![2],
            combined_bits: vec![4],
            threads: 2,
            dir: dir.path().to_path_buf(),
        };
        let report = run(&options, &mut |_| {}).unwrap();
        let measured: Vec<_> = report.rows.iter().filter(|r| !r.extrapolated).collect();
        let carried: Vec<_> = report.rows.iter().filter(|r| r.extrapolated).collect();
        // Every row at both sizes, carried from the larger; the three
        // combined rows (levels 2, 2-3, 2-4) at the larger alone.
        assert_eq!(measured.len() + 3, 2 * carried.len());
        // A level recomputed costs what it did at k = 17, times 2^15; a
        // grind's hashes do not grow.
        let at = |rows: &[&AttackRow], attack: &str| {
            rows.iter()
                .find(|r| r.scheme == "hard" && r.attack == attack && (r.k == 17 || r.extrapolated))
                .map(|r| r.hashes_median)
                .unwrap()
        };
        assert_eq!(
            at(&carried, "drop level 2"),
            at(&measured, "drop level 2") * 2f64.powi(15)
        );
        // Level 2 recomputed is its leaves: 2^k hashes.
        assert_eq!(at(&measured, "drop level 2"), 2f64.powi(17));
        assert_eq!(
            at(&carried, "2 bits off level 3"),
            at(&measured, "2 bits off level 3")
        );
        let nothing = measured
            .iter()
            .find(|r| r.scheme == "plain" && r.attack == "from nothing")
            .unwrap();
        assert_eq!((nothing.answered, nothing.hashes_median), (1.0, 65536.0));
        let hard_nothing = carried
            .iter()
            .find(|r| r.scheme == "hard" && r.attack == "from nothing")
            .unwrap();
        assert!(hard_nothing.hashes_median > 4.0 * 2f64.powi(32));
        // Level 2 recomputed and 4 bits off the top: the leaves, then a
        // few joins; it keeps less than either attack alone.
        let both = "level 2 recomputed, 4 bits off the top";
        let measured_both = at(&measured, both);
        assert!(
            measured_both > 2f64.powi(17) && measured_both < 2f64.powi(17) + 1e4,
            "{measured_both}"
        );
        assert_eq!(
            at(&carried, both) - at(&carried, "drop level 2"),
            measured_both - 2f64.powi(17)
        );
        let kept = |attack: &str| {
            carried
                .iter()
                .find(|r| r.scheme == "hard" && r.attack == attack)
                .unwrap()
                .attacker_bytes
        };
        assert!(kept(both) < kept("drop level 2"));
        assert!(!measured.iter().any(|r| r.k == 16 && r.attack == both));
        // A grind of two bits finds nearly every honest answer.
        let ground = measured
            .iter()
            .find(|r| r.attack == "2 bits off level 2")
            .unwrap();
        assert!(ground.answered >= 0.9, "{}", ground.answered);
        assert_eq!(report.gate.len(), 4);
        // Nothing is left of the plots.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
