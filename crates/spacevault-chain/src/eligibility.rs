//! Eligibility by threshold: a proof may make a block in a slot when the
//! top 64 bits of its distance to the slot's challenge lie below the
//! chain's target. No proof waits for a better one: every holder of an
//! eligible proof produces at once, and the fork choice settles between
//! them by the work each block's target stands for.
//!
//! A record's distance to a challenge is uniform, so a record is eligible
//! in a slot with probability `target / 2^64`, and a network that holds
//! `n` records makes `n * target / 2^64` eligible proofs a slot on
//! average. The target follows the chain's own history: every era of
//! `era_blocks` blocks it is scaled by the slots the era took against the
//! slots it should have taken, so that on average one block comes every
//! `block_interval_slots` slots, whatever space the network holds.

use crate::types::Ranked;

/// A slot's threshold on proofs' distances. A block's weight is
/// `2^64 / target`: the records that, evaluated once each, make one
/// eligible proof on average. A chain of made-up proofs must evaluate as
/// many records for each of its blocks to weigh as much as an honest one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target(pub u64);

/// How far one era may move the target, up or down: a network whose
/// space changes faster follows over several eras, and an era of blocks
/// made in a burst moves it no further.
pub const MAX_ADJUSTMENT: u64 = 4;

/// The top 64 bits of a distance, big-endian: what targets compare.
pub fn distance_top(distance: &[u8; 32]) -> u64 {
    u64::from_be_bytes(distance[..8].try_into().expect("8 bytes"))
}

impl Target {
    /// The target at which `records` records make one eligible proof every
    /// `interval_slots` slots on average (at least 1, at most `u64::MAX`).
    pub fn for_records(records: u64, interval_slots: u64) -> Target {
        let per_slot = u128::from(records.max(1)) * u128::from(interval_slots.max(1));
        Target(((1u128 << 64) / per_slot).clamp(1, u128::from(u64::MAX)) as u64)
    }

    /// Whether a proof of rank `rank` may make a block under this target.
    pub fn admits(&self, rank: &Ranked) -> bool {
        distance_top(&rank.distance) < self.0
    }

    /// The work a block under this target stands for: `2^64 / target`,
    /// rounded up, so that the easiest target still weighs 1.
    pub fn weight(&self) -> u128 {
        (1u128 << 64).div_ceil(u128::from(self.0.max(1)))
    }

    /// The records a network holds, as this target and the blocks'
    /// interval imply them (the inverse of [`Target::for_records`]).
    pub fn records(&self, interval_slots: u64) -> f64 {
        (1u128 << 64) as f64 / (self.0.max(1) as f64 * interval_slots.max(1) as f64)
    }

    /// The target of the era after one whose `blocks` blocks took
    /// `slots_taken` slots, where one block every `interval_slots` slots
    /// was wanted: scaled by taken over wanted (blocks that came too fast
    /// make it smaller, harder), the factor held within
    /// [`MAX_ADJUSTMENT`] either way, and the result within 1 to
    /// `u64::MAX`.
    pub fn adjusted(&self, slots_taken: u64, blocks: u64, interval_slots: u64) -> Target {
        let wanted = u128::from(blocks.max(1)) * u128::from(interval_slots.max(1));
        let taken = u128::from(slots_taken.max(1)).clamp(
            wanted.div_ceil(u128::from(MAX_ADJUSTMENT)),
            wanted * u128::from(MAX_ADJUSTMENT),
        );
        let scaled = u128::from(self.0) * taken / wanted;
        Target(scaled.clamp(1, u128::from(u64::MAX)) as u64)
    }
}

/// How a chain's target moves: the spec's `era_blocks` and
/// `block_interval_slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eras {
    pub era_blocks: u64,
    pub block_interval_slots: u64,
}

/// The target the child of block `height` must meet, the block having met
/// `target`: the same, but after the last block of an era (a height that
/// is a multiple of `era_blocks`), when it is [adjusted](Target::adjusted)
/// by the slots the era took: this block's slot less the slot of the
/// block that closed the era before (the genesis, slot 0, for the first),
/// which `era_slots` gives and is asked for only then.
pub fn next_target(
    eras: Eras,
    height: u64,
    target: Target,
    era_slots: impl FnOnce() -> u64,
) -> Target {
    if height == 0 || !height.is_multiple_of(eras.era_blocks) {
        return target;
    }
    target.adjusted(era_slots(), eras.era_blocks, eras.block_interval_slots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rank_at(top: u64) -> Ranked {
        let mut distance = [0xff; 32];
        distance[..8].copy_from_slice(&top.to_be_bytes());
        Ranked {
            distance,
            tiebreak: 0,
            plot_id: [0; 32],
            quality: 0,
        }
    }

    #[test]
    fn a_target_admits_exactly_the_distances_below_it() {
        let t = Target(1000);
        assert!(t.admits(&rank_at(0)));
        assert!(t.admits(&rank_at(999)));
        assert!(!t.admits(&rank_at(1000)));
        assert!(!t.admits(&rank_at(u64::MAX)));
        // The lower bytes never decide.
        let mut r = rank_at(999);
        r.distance[8..].fill(0xff);
        assert!(t.admits(&r));
    }

    #[test]
    fn targets_from_records_and_their_weights() {
        // One record, one block a slot: every distance but the largest.
        assert_eq!(Target::for_records(1, 1), Target(u64::MAX));
        assert_eq!(Target(u64::MAX).weight(), 2);
        assert_eq!(Target::for_records(1 << 20, 4), Target(1 << 42));
        assert_eq!(Target(1 << 42).weight(), 1 << 22);
        assert_eq!(Target(1).weight(), 1 << 64);
        assert!((Target(1 << 42).records(4) - (1u64 << 20) as f64).abs() < 1e-6);
        // Nothing makes a target of 0, which would admit nothing.
        assert_eq!(Target::for_records(u64::MAX, u64::MAX), Target(1));
    }

    #[test]
    fn an_era_on_time_keeps_its_target_and_one_off_moves_it_in_proportion() {
        let t = Target(1 << 40);
        assert_eq!(t.adjusted(128, 32, 4), t);
        // Twice as slow: twice the target (easier).
        assert_eq!(t.adjusted(256, 32, 4), Target(1 << 41));
        // Twice as fast: half.
        assert_eq!(t.adjusted(64, 32, 4), Target(1 << 39));
        // Far off either way: by MAX_ADJUSTMENT at most.
        assert_eq!(t.adjusted(1, 32, 4), Target(1 << 38));
        assert_eq!(t.adjusted(u64::MAX, 32, 4), Target(1 << 42));
        assert_eq!(Target(u64::MAX).adjusted(u64::MAX, 32, 4), Target(u64::MAX));
        assert_eq!(Target(1).adjusted(1, 32, 4), Target(1));
    }

    #[test]
    fn the_target_moves_only_after_an_eras_last_block() {
        let spec = Eras {
            era_blocks: 8,
            block_interval_slots: 2,
        };
        let t = Target(1 << 40);
        let never = || -> u64 { panic!("asked for an era's slots off its end") };
        assert_eq!(next_target(spec, 0, t, never), t);
        assert_eq!(next_target(spec, 7, t, never), t);
        assert_eq!(next_target(spec, 9, t, never), t);
        assert_eq!(next_target(spec, 8, t, || 16), t);
        assert_eq!(next_target(spec, 16, t, || 32), Target(1 << 41));
    }

    proptest! {
        #[test]
        fn adjustment_is_the_clamped_ratio_rounded_down(
            target in 1u64.., taken in 0u64..1 << 40, blocks in 1u64..1 << 16, interval in 1u64..1 << 10,
        ) {
            let got = Target(target).adjusted(taken, blocks, interval).0 as f64;
            let wanted = blocks * interval;
            let taken = taken.max(1).clamp(wanted.div_ceil(MAX_ADJUSTMENT), wanted * MAX_ADJUSTMENT);
            let exact = (target as f64 * taken as f64 / wanted as f64).clamp(1.0, u64::MAX as f64);
            // Within the rounding of the integer division (and f64's own).
            prop_assert!((got - exact).abs() <= 1.0 + exact * 1e-12, "{got} vs {exact}");
        }

        #[test]
        fn more_slots_never_make_a_harder_target(
            target in 1u64.., a in 0u64..1 << 30, b in 0u64..1 << 30, blocks in 1u64..256,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            prop_assert!(Target(target).adjusted(lo, blocks, 4) <= Target(target).adjusted(hi, blocks, 4));
        }

        #[test]
        fn a_harder_target_weighs_at_least_as_much(a in 1u64.., b in 1u64..) {
            let (easy, hard) = (Target(a.max(b)), Target(a.min(b)));
            prop_assert!(hard.weight() >= easy.weight());
        }
    }
}
