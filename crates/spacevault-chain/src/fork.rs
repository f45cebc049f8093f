//! Fork choice: which of two chains a vault follows. Deterministic, so that
//! vaults that hold the same blocks follow the same chain:
//!
//! 1. the longer chain wins;
//! 2. of two chains of one height, the one whose first block after their
//!    common ancestor has the better proof wins (the smaller distance, then
//!    the smaller nonce, then the smaller plot id, as [`Ranked::beats`]);
//! 3. failing that (two blocks from one proof), the smaller block hash.

use crate::types::Ranked;

/// A block as fork choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fork {
    pub hash: [u8; 32],
    pub rank: Ranked,
}

/// Whether the chain that goes on with `candidate` after the common
/// ancestor should replace the one that goes on with `current`: each list
/// holds its chain's blocks after the ancestor, oldest first.
pub fn prefer(current: &[Fork], candidate: &[Fork]) -> bool {
    if candidate.len() != current.len() {
        return candidate.len() > current.len();
    }
    match (current.first(), candidate.first()) {
        (Some(a), Some(b)) if a.hash != b.hash => {
            b.rank.beats(&a.rank) || (b.rank == a.rank && b.hash < a.hash)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(distance: u8, hash: u8) -> Fork {
        Fork {
            hash: [hash; 32],
            rank: Ranked {
                distance: [distance; 32],
                nonce: 0,
                plot_id: [0; 32],
                quality: 0,
            },
        }
    }

    #[test]
    fn longer_then_better_proof_then_smaller_hash() {
        let a = [fork(5, 1)];
        assert!(prefer(&a, &[fork(9, 2), fork(9, 3)]));
        assert!(!prefer(&[fork(9, 2), fork(9, 3)], &a));
        assert!(prefer(&[fork(5, 1)], &[fork(4, 9)]));
        assert!(!prefer(&[fork(4, 9)], &[fork(5, 1)]));
        assert!(prefer(&[fork(4, 9)], &[fork(4, 8)]));
        assert!(!prefer(&[fork(4, 8)], &[fork(4, 9)]));
        // The same chain is never preferred over itself.
        assert!(!prefer(&a, &a));
        assert!(!prefer(&[], &[]));
    }

    fn ranked(distance: u8, nonce: u64, plot: u8) -> Ranked {
        Ranked {
            distance: [distance; 32],
            nonce,
            plot_id: [plot; 32],
            quality: 0,
        }
    }

    #[test]
    fn equal_distances_go_to_the_smaller_nonce_then_the_smaller_plot_id_then_the_smaller_hash() {
        let block = |rank: Ranked, hash: u8| Fork {
            hash: [hash; 32],
            rank,
        };
        // The nonce decides before the plot id, whatever the hashes.
        let low_nonce = block(ranked(4, 1, 9), 9);
        let high_nonce = block(ranked(4, 2, 1), 1);
        assert!(prefer(&[high_nonce], &[low_nonce]));
        assert!(!prefer(&[low_nonce], &[high_nonce]));
        // Then the plot id, whatever the hashes.
        let low_plot = block(ranked(4, 1, 2), 9);
        let high_plot = block(ranked(4, 1, 3), 1);
        assert!(prefer(&[high_plot], &[low_plot]));
        assert!(!prefer(&[low_plot], &[high_plot]));
        // The distance decides before either.
        let near = block(ranked(3, 9, 9), 8);
        assert!(prefer(&[low_nonce], &[near]));
        assert!(!prefer(&[near], &[low_nonce]));
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
    fn only_the_first_block_after_the_ancestor_decides_between_chains_as_long() {
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
