//! The genesis: the hash that stands for block 0 of a chain, the parent
//! of block 1 and the entropy of the proof of time's first two eras.

use spacevault_meter::{self as meter, Op};

/// The context string of BLAKE3's `derive_key` for the genesis hash.
pub const CONTEXT: &str = "spacevault 2026-11 chain genesis v1";

/// The parent hash of block 1.
pub fn genesis_hash(chain_id: &[u8; 32]) -> [u8; 32] {
    meter::timed(Op::HashChallenge, || blake3::derive_key(CONTEXT, chain_id))
}
