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
}
