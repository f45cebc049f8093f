//! Attacks on the table-chain scheme ([`crate::hard`]).
//!
//! - **From nothing** ([`forward`]): the plot rebuilt for each challenge,
//!   the forward pass's hashes (one a leaf, one a join) and its sorts.
//! - **Levels dropped** (costed by [`forward`]): the attacker keeps every
//!   section but a run of middle levels, and a bit a matched entry of the
//!   highest saying whether the plot kept it; to answer, it recomputes
//!   the levels below (the dropped entries exist only as matches found
//!   among the whole level below), matches, and renumbers as the plotter
//!   did. Hellman's tables invert a function at one point, and no level
//!   above the leaves is one: the leaves' hash is, but its outputs are not
//!   what the plot stores.
//! - **Bits dropped** ([`grind`]): the attacker keeps each entry of some
//!   levels without its low bits and grinds them back when a challenge's
//!   path crosses the entry: completions are tried until one checks out,
//!   its children's outputs rebuilt from the levels below and checked
//!   against the matching rule (and, for a top entry, against its stored
//!   prefix). Where a level below is short of bits too, each child tried
//!   must be ground back first: the costs multiply down the tree.
//! - **Both** ([`grind_recomputed`]): levels recomputed for the
//!   challenge (costed as above) are in memory whole, so their entries
//!   cost no hash while the bits dropped above them are ground back.

use crate::hard::construction::{
    join, leaf, line_point_pair, matches, quality_hash, score, top_prefix, Node,
};
use crate::hard::plot::{level_one, next_level};
use crate::hard::reader::{HardPlotFile, TopEntry};
use crate::reader::ReadError;
use std::collections::HashMap;
use std::time::Instant;

/// The forward pass up to a level: its hashes and time, level by level.
#[derive(Clone, Debug, PartialEq)]
pub struct Forward {
    /// Entries made at levels 1 to `upto`, one hash each.
    pub hashes: Vec<u64>,
    /// Seconds from the start to the end of each level.
    pub seconds: Vec<f64>,
}

impl Forward {
    /// Hashes of levels 1 to `level`.
    pub fn hashes_to(&self, level: u8) -> u64 {
        self.hashes[..usize::from(level)].iter().sum()
    }
}

/// Runs the plotter's forward pass for the plot `id` up to level `upto`.
pub fn forward(id: &[u8; 32], k: u8, upto: u8, threads: usize) -> Forward {
    let start = Instant::now();
    let mut level = level_one(id, k, threads);
    let mut out = Forward {
        hashes: vec![level.back.len() as u64],
        seconds: vec![start.elapsed().as_secs_f64()],
    };
    for l in 2..=upto {
        level = next_level(id, k, l, &level, threads);
        out.hashes.push(level.back.len() as u64);
        out.seconds.push(start.elapsed().as_secs_f64());
    }
    out
}

/// The middle levels rebuilt from nothing as an attacker who dropped
/// them does, and compared with the plot's.
#[derive(Clone, Debug, PartialEq)]
pub struct Recomputed {
    /// The whole rebuild: forward pass, pruning, renumbering.
    pub seconds: f64,
    /// Middle entries compared with the plot's sections.
    pub entries: u64,
    /// The first entry that differs (level, index), or None when every
    /// level came back as the plot stores it.
    pub first_difference: Option<(u8, u64)>,
}

/// Rebuilds `plot`'s middle levels (2 to the one below the top) from its
/// id alone: the forward pass, the pruning (here by the top level, which
/// the attacker's bit a matched entry of its highest dropped level
/// stands for), and the renumbering by sorted line points; then compares
/// each with the level the file stores, entry by entry. This is the
/// "levels dropped" attack run, where the bench counts its hashes.
pub fn recompute_middle(plot: &HardPlotFile, threads: usize) -> Result<Recomputed, ReadError> {
    let started = Instant::now();
    let h = plot.header();
    let tables = crate::hard::plot::build_tables(&h.plot_id, h.k, h.levels, threads);
    let seconds = started.elapsed().as_secs_f64();
    let mut entries = 0;
    for (level, values) in (2u8..).zip(&tables.middle) {
        if values.len() as u64 != plot.layout().level(level).count {
            return Ok(Recomputed {
                seconds,
                entries,
                first_difference: Some((level, values.len() as u64)),
            });
        }
        for (i, &value) in (0u64..).zip(values) {
            entries += 1;
            if plot.entry(level, i)? != value {
                return Ok(Recomputed {
                    seconds,
                    entries,
                    first_difference: Some((level, i)),
                });
            }
        }
    }
    Ok(Recomputed {
        seconds,
        entries,
        first_difference: None,
    })
}

/// What grinding a challenge's path back cost, and the answer it gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ground {
    /// The best score found, or None when no completion of a dropped
    /// entry checked out.
    pub score: Option<[u8; 32]>,
    pub pair: Option<(u64, u64)>,
    pub hashes: u64,
}

/// Answers `challenge` from `plot` as an attacker would who kept the
/// levels `dropped` (2 to the top) without the low `bits` bits of each
/// entry (at most 64: each entry is tried `2^bits` ways at most).
pub fn grind(
    plot: &HardPlotFile,
    dropped: &[u8],
    bits: u32,
    challenge: &[u8; 32],
) -> Result<Ground, ReadError> {
    grind_recomputed(plot, 0, dropped, bits, challenge)
}

/// [`grind`] by an attacker who has recomputed levels 1 to `recomputed`
/// for this challenge and holds them in memory: their entries cost no
/// hash here (the recomputation's hashes are the caller's to count). The
/// levels short of bits must lie above them.
pub fn grind_recomputed(
    plot: &HardPlotFile,
    recomputed: u8,
    dropped: &[u8],
    bits: u32,
    challenge: &[u8; 32],
) -> Result<Ground, ReadError> {
    assert!(bits <= 64, "{bits} bits: more tries than any run can make");
    assert!(
        dropped.iter().all(|&l| l > recomputed),
        "levels {dropped:?} short of bits, but recomputed up to {recomputed}"
    );
    let h = plot.header();
    let mut grinder = Grinder {
        plot,
        recomputed,
        dropped: dropped.to_vec(),
        bits,
        nodes: HashMap::new(),
        hashes: 0,
    };
    let mut best: Option<([u8; 32], (u64, u64))> = None;
    let mut unresolved = false;
    for top in plot.candidates(challenge)? {
        let Some(pair) = grinder.path(&top, challenge)? else {
            unresolved = true;
            continue;
        };
        grinder.hashes += 1;
        let q = quality_hash(&h.plot_id, challenge, pair.0, pair.1);
        let s = score(h.k, top.prefix, challenge, &q);
        if best.is_none_or(|b| s < b.0) {
            best = Some((s, pair));
        }
    }
    let hashes = grinder.hashes;
    Ok(match best {
        // A candidate left unresolved could have been the best.
        Some((s, pair)) if !unresolved => Ground {
            score: Some(s),
            pair: Some(pair),
            hashes,
        },
        _ => Ground {
            score: None,
            pair: None,
            hashes,
        },
    })
}

struct Grinder<'a> {
    plot: &'a HardPlotFile,
    /// Levels 1 to this are in memory: their entries cost no hash.
    recomputed: u8,
    dropped: Vec<u8>,
    bits: u32,
    /// Entries rebuilt so far, by level and position.
    nodes: HashMap<(u8, u64), Option<Node>>,
    hashes: u64,
}

impl Grinder<'_> {
    /// The two leaves the challenge's path selects below `top`, or None
    /// when no completion of the dropped bits checks out.
    fn path(
        &mut self,
        top: &TopEntry,
        challenge: &[u8; 32],
    ) -> Result<Option<(u64, u64)>, ReadError> {
        let levels = self.plot.header().levels;
        let mut children = if self.dropped.contains(&levels) {
            match self.ground(levels, top.value, Some(top.prefix))? {
                Some(c) => c,
                None => return Ok(None),
            }
        } else {
            self.plot.children(levels, top.index, top.value)?
        };
        for (step, level) in (2..levels).rev().enumerate() {
            let right = (challenge[31] >> step) & 1 == 1;
            let next = if right { children.1 } else { children.0 };
            let value = self.plot.entry(level, next)?;
            children = if self.dropped.contains(&level) {
                match self.ground(level, value, None)? {
                    Some(c) => c,
                    None => return Ok(None),
                }
            } else {
                self.plot.children(level, next, value)?
            };
        }
        Ok(Some(children))
    }

    /// The children of an entry of `level` when only its value's high
    /// bits are known: the first completion whose children match (and
    /// make `prefix`, for a top entry). An attacker stops there: a wrong
    /// completion passes the k-bit prefix about once in 2^k tries, the
    /// matching rule about once in 2^k pairs, and a wrong answer shows
    /// as a challenge not answered with the honest quality.
    fn ground(
        &mut self,
        level: u8,
        value: u128,
        prefix: Option<u64>,
    ) -> Result<Option<(u64, u64)>, ReadError> {
        let h = self.plot.header();
        let (id, k) = (h.plot_id, h.k);
        let high = value >> self.bits;
        for low in 0..1u128 << self.bits {
            let candidate = (high << self.bits) | low;
            let Some((l, r)) = self.decoded(level, candidate) else {
                continue;
            };
            let Some(left) = self.node(level - 1, l)? else {
                continue;
            };
            let Some(right) = self.node(level - 1, r)? else {
                continue;
            };
            if !matches(left.y, right.y) {
                continue;
            }
            if let Some(p) = prefix {
                self.hashes += 1;
                if top_prefix(join(&id, k, level, &left, &right).y) != p {
                    continue;
                }
            }
            return Ok(Some((l, r)));
        }
        Ok(None)
    }

    /// A value's children in proof order, if they lie within the level
    /// below.
    fn decoded(&self, level: u8, value: u128) -> Option<(u64, u64)> {
        let lp = value >> 1;
        let (a, b) = line_point_pair(lp);
        let bound = if level == 2 {
            1u64 << self.plot.header().k
        } else {
            self.plot.layout().level(level - 1).count
        };
        if a >= bound || a == b {
            return None;
        }
        Some(if value & 1 == 1 { (a, b) } else { (b, a) })
    }

    /// Entry `index` of `level` rebuilt from the levels below it: None
    /// when an entry short of bits on the way cannot be told apart.
    fn node(&mut self, level: u8, index: u64) -> Result<Option<Node>, ReadError> {
        if let Some(n) = self.nodes.get(&(level, index)) {
            return Ok(*n);
        }
        let h = self.plot.header();
        let (id, k) = (h.plot_id, h.k);
        let cost = u64::from(level > self.recomputed);
        let n = if level == 1 {
            self.hashes += cost;
            Some(leaf(&id, k, index))
        } else {
            let value = self.plot.entry(level, index)?;
            let children = if self.dropped.contains(&level) {
                self.ground(level, value, None)?
            } else {
                Some(self.plot.children(level, index, value)?)
            };
            match children {
                Some((l, r)) => match (self.node(level - 1, l)?, self.node(level - 1, r)?) {
                    (Some(left), Some(right)) => {
                        self.hashes += cost;
                        Some(join(&id, k, level, &left, &right))
                    }
                    _ => None,
                },
                None => None,
            }
        };
        self.nodes.insert((level, index), n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hard::{plot as hard_plot, HardPlotOptions};

    fn small_plot(dir: &std::path::Path, k: u8) -> HardPlotFile {
        let mut o = HardPlotOptions::new(k, [5; 32], [6; 32]);
        o.threads = 2;
        let s = hard_plot(&o, dir).unwrap();
        HardPlotFile::open(&s.path).unwrap()
    }

    #[test]
    fn recomputed_levels_are_the_plots_and_another_plots_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        let r = recompute_middle(&plot, 2).unwrap();
        assert_eq!(r.first_difference, None);
        let stored: u64 = (2..5).map(|l| plot.layout().level(l).count).sum();
        assert_eq!(r.entries, stored);

        // The same sections under another plot's header: the rebuild
        // (from the other id) differs at once.
        let other = tempfile::tempdir().unwrap();
        let mut o = HardPlotOptions::new(16, [5; 32], [7; 32]);
        o.threads = 2;
        let s = hard_plot(&o, other.path()).unwrap();
        let mut bytes = std::fs::read(plot.path()).unwrap();
        let theirs = std::fs::read(&s.path).unwrap();
        let mut header = crate::hard::format::Header::decode(&bytes[..4096]).unwrap();
        let their_header = crate::hard::format::Header::decode(&theirs[..4096]).unwrap();
        header.seed = their_header.seed;
        header.plot_id = their_header.plot_id;
        bytes[..4096].copy_from_slice(&header.encode());
        let forged = dir.path().join("forged.plot");
        std::fs::write(&forged, &bytes).unwrap();
        let forged = HardPlotFile::open(&forged).unwrap();
        let r = recompute_middle(&forged, 2).unwrap();
        assert!(r.first_difference.is_some());
    }

    #[test]
    fn the_forward_pass_counts_what_the_plotter_matched() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = HardPlotOptions::new(16, [5; 32], [6; 32]);
        o.threads = 2;
        let s = hard_plot(&o, dir.path()).unwrap();
        let f = forward(&s.plot_id, 16, 5, 2);
        assert_eq!(f.hashes, s.matched);
        assert_eq!(f.hashes_to(1), 1 << 16);
        assert!(f.seconds.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn grinding_no_bits_gives_the_honest_answer_and_few_bits_still_do() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        for dropped in 2..=5u8 {
            for bits in [0, 6] {
                let mut equal = 0;
                for i in 0..20u8 {
                    let c = [i.wrapping_mul(37); 32];
                    let honest = plot.prove(&c).unwrap().map(|a| (a.score, a.pair));
                    let got = grind(&plot, &[dropped], bits, &c).unwrap();
                    if let Some(s) = got.score {
                        // What the attacker finds is the plot's answer.
                        assert_eq!(Some((s, got.pair.unwrap())), honest);
                        equal += 1;
                    }
                    assert!(got.hashes >= 1);
                }
                // Nothing is ground at 0 bits; at 6, a wrong completion
                // passes about once in 2^10 tries.
                let least = if bits == 0 { 20 } else { 18 };
                assert!(
                    equal >= least,
                    "level {dropped}, {bits} bits: {equal} of 20"
                );
            }
        }
    }

    #[test]
    fn more_dropped_bits_cost_more_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        let c = [7; 32];
        let few = grind(&plot, &[3], 2, &c).unwrap().hashes;
        let many = grind(&plot, &[3], 8, &c).unwrap().hashes;
        assert!(many > 10 * few, "{few} then {many}");
    }

    #[test]
    fn levels_held_in_memory_make_the_bits_above_them_cheap() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        let (mut alone, mut held, mut equal) = (0, 0, 0);
        for i in 0..10u8 {
            let c = [i.wrapping_mul(29); 32];
            let honest = plot.prove(&c).unwrap().map(|a| (a.score, a.pair));
            alone += grind(&plot, &[5], 8, &c).unwrap().hashes;
            let got = grind_recomputed(&plot, 3, &[5], 8, &c).unwrap();
            held += got.hashes;
            if let Some(s) = got.score {
                assert_eq!(Some((s, got.pair.unwrap())), honest);
                equal += 1;
            }
        }
        assert!(equal >= 9, "{equal} of 10");
        // Each level-4 entry tried costs one join over the children held,
        // against its whole subtree of eight leaves and seven joins.
        assert!(
            held > 0 && 4 * held < alone,
            "{alone} with nothing held, {held} with levels 1-3 held"
        );
        // With everything below the top held, only the top's joins cost.
        let top_only = grind_recomputed(&plot, 4, &[5], 8, &[3; 32]).unwrap();
        assert!(top_only.hashes < 1 << 8, "{}", top_only.hashes);
    }

    #[test]
    #[should_panic(expected = "short of bits, but recomputed")]
    fn a_level_cannot_be_both_recomputed_and_short_of_bits() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        let _ = grind_recomputed(&plot, 3, &[3, 5], 4, &[1; 32]);
    }

    #[test]
    fn bits_dropped_from_every_level_multiply_down_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let plot = small_plot(dir.path(), 16);
        let (mut one, mut all, mut equal) = (0, 0, 0);
        for i in 0..10u8 {
            let c = [i.wrapping_mul(53); 32];
            let honest = plot.prove(&c).unwrap().map(|a| (a.score, a.pair));
            one += grind(&plot, &[5], 5, &c).unwrap().hashes;
            let got = grind(&plot, &[2, 3, 4, 5], 5, &c).unwrap();
            all += got.hashes;
            if let Some(s) = got.score {
                assert_eq!(Some((s, got.pair.unwrap())), honest);
                equal += 1;
            }
        }
        assert!(equal >= 9, "{equal} of 10");
        // Each entry tried below the top must be ground back first: about
        // 16 new positions a level (the flip bit's tries share their
        // children), four levels deep, against 16 at the top alone.
        assert!(
            all > 50 * one,
            "{one} for the top alone, {all} for every level"
        );
    }
}
