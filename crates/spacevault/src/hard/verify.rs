//! Checking a proof of the table-chain scheme: rebuild its tree from the
//! leaves, check every join matches, and score the path the challenge
//! selects. `2^levels - 1` compressions and one for the quality.

use super::construction::{
    join, k_is_supported, leaf, leaves, matches, path_pair, plot_id, quality_hash, score,
    top_prefix, Node, LEVELS, MAX_K, MIN_K,
};
use crate::verify::{Verified, VerifyError};

/// A proof of the table-chain scheme: the plot, and the leaves of one top
/// entry's tree in proof order (at every join the left child, whose
/// output is the smaller, first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HardProof {
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    pub k: u8,
    pub xs: Vec<u64>,
}

/// What can be checked without hashing: k, the number of leaves, each
/// leaf's range.
pub fn well_formed_with(levels: u8, proof: &HardProof) -> Result<(), VerifyError> {
    if !super::construction::levels_are_supported(levels) {
        return Err(VerifyError::UnsupportedLevels(levels));
    }
    if !k_is_supported(proof.k) {
        return Err(VerifyError::UnsupportedSchemeK {
            scheme: "hard",
            k: proof.k,
            min: MIN_K,
            max: MAX_K,
        });
    }
    let expected = leaves(levels);
    if proof.xs.len() != expected {
        return Err(VerifyError::LeafCount {
            expected,
            actual: proof.xs.len(),
        });
    }
    if let Some(&x) = proof.xs.iter().find(|&&x| x >> proof.k != 0) {
        return Err(VerifyError::LeafOutOfRange { x, k: proof.k });
    }
    Ok(())
}

/// The top entry a proof's leaves make, checking that every join matches.
/// Leaves at or past 2^k are the caller's to refuse ([`well_formed_with`]).
pub fn top_of(id: &[u8; 32], k: u8, levels: u8, xs: &[u64]) -> Result<Node, VerifyError> {
    if !super::construction::levels_are_supported(levels) {
        return Err(VerifyError::UnsupportedLevels(levels));
    }
    if xs.len() != leaves(levels) {
        return Err(VerifyError::LeafCount {
            expected: leaves(levels),
            actual: xs.len(),
        });
    }
    let mut nodes: Vec<Node> = xs.iter().map(|&x| leaf(id, k, x)).collect();
    for level in 2..=levels {
        let mut next = Vec::with_capacity(nodes.len() / 2);
        for (pair, two) in nodes.chunks_exact(2).enumerate() {
            if !matches(two[0].y, two[1].y) {
                return Err(VerifyError::NoMatch {
                    level: level - 1,
                    pair: 2 * pair,
                });
            }
            next.push(join(id, k, level, &two[0], &two[1]));
        }
        nodes = next;
    }
    Ok(nodes[0])
}

/// Verifies a proof of a plot of `levels` levels against a challenge.
pub fn verify_with(
    levels: u8,
    proof: &HardProof,
    challenge: &[u8; 32],
) -> Result<Verified, VerifyError> {
    well_formed_with(levels, proof)?;
    let id = plot_id(&proof.farmer_key, &proof.seed, proof.k, levels);
    let top = top_of(&id, proof.k, levels, &proof.xs)?;
    let pair = path_pair(challenge, levels);
    let hash = quality_hash(&id, challenge, proof.xs[2 * pair], proof.xs[2 * pair + 1]);
    let distance = score(proof.k, top_prefix(top.y), challenge, &hash);
    Ok(Verified {
        plot_id: id,
        hash,
        distance,
        quality: crate::construction::quality(&distance),
    })
}

/// Verifies a proof of the chain's scheme ([`LEVELS`] levels).
pub fn verify(proof: &HardProof, challenge: &[u8; 32]) -> Result<Verified, VerifyError> {
    verify_with(LEVELS, proof, challenge)
}
