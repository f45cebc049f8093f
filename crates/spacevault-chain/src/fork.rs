//! Fork choice: which of two chains a vault follows, the chain it follows
//! being one of them:
//!
//! 1. the chain of more weight wins: each block weighs the work its
//!    target stands for ([`Target::weight`](crate::eligibility::Target::weight)),
//!    so a chain of many blocks under an easy target never outweighs the
//!    network's blocks under the target its space has set;
//! 2. of two chains of one weight whose first blocks after their common
//!    ancestor were made in one slot, the better proof wins (the smaller
//!    distance, then the smaller tie-break, then the smaller plot id, as
//!    [`Ranked::beats`]), and failing that (two blocks from one proof) the
//!    smaller block hash: every vault settles on one of a slot's blocks;
//! 3. of two chains of one weight whose first blocks were made in
//!    different slots, the one followed stays. Neither slot may win: if the
//!    later won, any later eligible proof could replace an honest block
//!    by building beside it; if the earlier won, a producer could withhold
//!    its block and release it when an honest block came in a later slot,
//!    replacing that block every time (selfish mining that always wins its
//!    race, and pays with a share of the blocks above its share of the
//!    space). Keeping the block seen first leaves a withheld block's race
//!    to the honest blocks that build on the one seen.
//!
//! Rules 1 and 2 are the same for every vault; rule 3 depends on what a
//! vault saw first, and the next block settles it.
//!
//! Whatever the weights, a branch whose common ancestor with the
//! canonical chain lies more than the spec's finality depth below the
//! head is never followed ([`within_finality`]).

use crate::types::Ranked;

/// A block as fork choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fork {
    pub hash: [u8; 32],
    /// The slot it was made in.
    pub slot: u64,
    pub rank: Ranked,
    /// The block's own weight (its target's).
    pub weight: u128,
}

/// The weight of a run of blocks.
pub fn weight_of(blocks: &[Fork]) -> u128 {
    blocks.iter().map(|f| f.weight).sum()
}

/// Whether the chain that goes on with `candidate` after the common
/// ancestor should replace the one followed, `current`: each list holds
/// its chain's blocks after the ancestor, oldest first.
pub fn prefer(current: &[Fork], candidate: &[Fork]) -> bool {
    let (now, then) = (weight_of(current), weight_of(candidate));
    if now != then {
        return then > now;
    }
    match (current.first(), candidate.first()) {
        (Some(a), Some(b)) if a.hash != b.hash => rival_wins(a, b),
        _ => false,
    }
}

/// Whether block `b` replaces block `a`, the one followed, a rival on the
/// same parent (of the same weight): only in `a`'s slot, with the better
/// proof, then the smaller hash.
pub fn rival_wins(a: &Fork, b: &Fork) -> bool {
    a.slot == b.slot && (b.rank.beats(&a.rank) || (b.rank == a.rank && b.hash < a.hash))
}

/// A block the operator trusts to be on the network's chain (weak
/// subjectivity): a vault given one never follows a chain without it, and
/// until its chain holds it, finality does not hold the vault to the chain
/// it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub height: u64,
    pub hash: [u8; 32],
}

impl std::str::FromStr for Checkpoint {
    type Err = String;

    /// `HEIGHT:HASH`, the hash in hex: as the page and `GET /v1/blocks`
    /// show a block.
    fn from_str(s: &str) -> Result<Checkpoint, String> {
        let (height, hash) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not HEIGHT:HASH"))?;
        let height: u64 = height
            .parse()
            .map_err(|_| format!("{height:?} is not a height"))?;
        if height == 0 {
            return Err("the genesis needs no checkpoint: give a block's height, 1 or more".into());
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hash, &mut bytes)
            .map_err(|_| format!("{hash:?} is not a block hash (64 hex digits)"))?;
        Ok(Checkpoint {
            height,
            hash: bytes,
        })
    }
}

impl std::fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.height, hex::encode(self.hash))
    }
}

/// Whether a branch from the canonical block at `ancestor_height` may
/// replace the chain above it, the head being at `head_height`: only when
/// it leaves at most `finality_depth` blocks (the blocks below are
/// final).
pub fn within_finality(ancestor_height: u64, head_height: u64, finality_depth: u64) -> bool {
    head_height.saturating_sub(ancestor_height) <= finality_depth
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(distance: u8, hash: u8) -> Fork {
        weighing(distance, hash, 1)
    }

    fn weighing(distance: u8, hash: u8, weight: u128) -> Fork {
        Fork {
            hash: [hash; 32],
            slot: 1,
            rank: Ranked {
                distance: [distance; 32],
                tiebreak: 0,
                plot_id: [0; 32],
                quality: 0,
            },
            weight,
        }
    }

    #[test]
    fn weight_not_length_decides() {
        // Three light blocks lose to one heavy one, and win over it when
        // together they weigh more.
        let light = [weighing(0, 1, 10), weighing(0, 2, 10), weighing(0, 3, 10)];
        assert!(!prefer(&[weighing(9, 4, 31)], &light));
        assert!(prefer(&[weighing(9, 4, 29)], &light));
        // Equal weight: the first block's proof, whatever the lengths.
        assert!(prefer(&light, &[weighing(0, 0, 30)]));
        assert!(!prefer(&[weighing(0, 0, 30)], &light));
    }

    #[test]
    fn of_rivals_as_heavy_from_two_slots_the_one_followed_stays_whatever_the_proofs() {
        let early = Fork {
            slot: 4,
            ..fork(9, 1)
        };
        let late = Fork {
            slot: 5,
            ..fork(0, 2)
        };
        // A later rival with a better proof does not replace the block
        // followed; nor does an earlier one, released late.
        assert!(!prefer(&[early], &[late]));
        assert!(!prefer(&[late], &[early]));
        assert!(!rival_wins(&late, &early) && !rival_wins(&early, &late));
        // One block more still wins.
        assert!(prefer(&[late], &[early, fork(9, 3)]));
    }

    #[test]
    fn a_checkpoint_reads_as_height_colon_hash_and_says_what_is_wrong() {
        let text = format!("42:{}", "ab".repeat(32));
        let cp: Checkpoint = text.parse().unwrap();
        assert_eq!(
            cp,
            Checkpoint {
                height: 42,
                hash: [0xab; 32]
            }
        );
        assert_eq!(cp.to_string(), text);
        for bad in [
            "42",
            "x:ab",
            "0:00",
            "42:abc",
            &format!("42:{}", "g".repeat(64)),
        ] {
            let why = bad.parse::<Checkpoint>().unwrap_err();
            assert!(!why.is_empty(), "{bad}");
        }
    }

    #[test]
    fn branches_from_below_the_finality_depth_are_never_followed() {
        assert!(within_finality(90, 100, 10));
        assert!(!within_finality(89, 100, 10));
        assert!(within_finality(0, 5, 10));
        // An ancestor above the head (a branch from a block the head has
        // not reached) is within.
        assert!(within_finality(7, 5, 0));
    }

    #[test]
    fn heavier_then_better_proof_then_smaller_hash() {
        let a = [fork(5, 1)];
        assert!(prefer(&a, &[fork(9, 2), fork(9, 3)]));
        assert!(!prefer(&[fork(9, 2), fork(9, 3)], &a));
        assert!(prefer(&[fork(5, 1)], &[fork(4, 9)]));
        assert!(!prefer(&[fork(4, 9)], &[fork(5, 1)]));
        assert!(prefer(&[fork(4, 9)], &[fork(4, 8)]));
        assert!(!prefer(&[fork(4, 8)], &[fork(4, 9)]));
        // The same chain is never preferred over itself, nor a block
        // over itself as its own rival.
        assert!(!prefer(&a, &a));
        assert!(!prefer(&[], &[]));
        assert!(!rival_wins(&a[0], &a[0]));
    }

    fn ranked(distance: u8, tiebreak: u64, plot: u8) -> Ranked {
        Ranked {
            distance: [distance; 32],
            tiebreak,
            plot_id: [plot; 32],
            quality: 0,
        }
    }

    #[test]
    fn equal_distances_go_to_the_smaller_tiebreak_then_the_smaller_plot_id_then_the_smaller_hash() {
        let block = |rank: Ranked, hash: u8| Fork {
            hash: [hash; 32],
            slot: 1,
            rank,
            weight: 1,
        };
        // The tie-break decides before the plot id, whatever the hashes.
        let low_tiebreak = block(ranked(4, 1, 9), 9);
        let high_tiebreak = block(ranked(4, 2, 1), 1);
        assert!(prefer(&[high_tiebreak], &[low_tiebreak]));
        assert!(!prefer(&[low_tiebreak], &[high_tiebreak]));
        // Then the plot id, whatever the hashes.
        let low_plot = block(ranked(4, 1, 2), 9);
        let high_plot = block(ranked(4, 1, 3), 1);
        assert!(prefer(&[high_plot], &[low_plot]));
        assert!(!prefer(&[low_plot], &[high_plot]));
        // The distance decides before either.
        let near = block(ranked(3, 9, 9), 8);
        assert!(prefer(&[low_tiebreak], &[near]));
        assert!(!prefer(&[near], &[low_tiebreak]));
        // One proof in two blocks: the smaller hash.
        assert!(prefer(
            &[block(ranked(4, 1, 2), 8)],
            &[block(ranked(4, 1, 2), 7)]
        ));
        assert!(!prefer(
            &[block(ranked(4, 1, 2), 7)],
            &[block(ranked(4, 1, 2), 8)]
        ));
    }

    #[test]
    fn only_the_first_block_after_the_ancestor_decides_between_chains_as_heavy() {
        // The current chain's later block is far better; the first decides.
        let current = [fork(6, 1), fork(0, 2)];
        let candidate = [fork(5, 3), fork(9, 4)];
        assert!(prefer(&current, &candidate));
        assert!(!prefer(&candidate, &current));
        // A longer chain wins whatever its proofs.
        assert!(prefer(&[fork(0, 1)], &[fork(9, 2), fork(9, 3)]));
        // From nothing (the genesis is the head), any block wins.
        assert!(prefer(&[], &[fork(9, 1)]));
        assert!(!prefer(&[fork(9, 1)], &[]));
    }
}
