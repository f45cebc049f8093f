//! Proof-of-space schemes as a chain sees them: each has a kind number
//! that blocks carry, the plot a proof comes from, its check, and a score
//! on one scale shared by every scheme and size, so that a chain compares
//! proofs of different schemes by the space they stand for and never by
//! a scheme's raw numbers.
//!
//! The shared scale is the plain scheme's: a proof's *score* is 32 bytes
//! whose top 64 bits, for a plot that stands for `n` records, lie below
//! `x` with probability `1 − (1 − x/2^64)^n` (the least of `n` uniform
//! draws), whatever the scheme. A scheme whose raw quality is distributed
//! otherwise maps it onto that scale in [`ProofScheme::verify`], and says
//! how many records of the scale a plot of each size stands for in
//! [`ProofScheme::records`].

use crate::verify::{Proof, Verified, VerifyError};

/// One proof-of-space construction.
pub trait ProofScheme {
    /// The number blocks and chain specs name the scheme by (never 0).
    const KIND: u8;
    /// The scheme's name for people.
    const NAME: &'static str;
    /// The plot sizes the scheme supports.
    const MIN_K: u8;
    const MAX_K: u8;
    /// A proof, as the scheme's prover gives it.
    type Proof;

    /// The plot `proof` comes from.
    fn plot_id(proof: &Self::Proof) -> [u8; 32];

    /// What can be checked of `proof` without hashing: its size and its
    /// fields' ranges. A vault checks this much of a block it cannot yet
    /// check in full (an orphan); [`ProofScheme::verify`] checks it too.
    fn well_formed(proof: &Self::Proof) -> Result<(), VerifyError>;

    /// Checks `proof` for `challenge`; its [`Verified::distance`] is the
    /// proof's score on the shared scale.
    fn verify(proof: &Self::Proof, challenge: &[u8; 32]) -> Result<Verified, VerifyError>;

    /// The records of the shared scale a plot of size `k` stands for: the
    /// `n` of the score's distribution for the best proof such a plot
    /// gives.
    fn records(k: u8) -> u64;
}

/// Kind 1: one table of BLAKE3 hashes of a counter under the plot's key,
/// bucketed by prefix (the construction of this crate's plotter). A proof
/// names one record; its score is that record's distance to the
/// challenge, already on the shared scale (the best of a plot's `2^k`
/// uniform records).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plain;

impl ProofScheme for Plain {
    const KIND: u8 = 1;
    const NAME: &'static str = "plain";
    const MIN_K: u8 = crate::construction::MIN_K;
    const MAX_K: u8 = crate::construction::MAX_K;
    type Proof = Proof;

    fn plot_id(proof: &Proof) -> [u8; 32] {
        crate::construction::plot_id(&proof.farmer_key, &proof.seed, proof.k)
    }

    fn well_formed(proof: &Proof) -> Result<(), VerifyError> {
        crate::verify::well_formed(proof)
    }

    fn verify(proof: &Proof, challenge: &[u8; 32]) -> Result<Verified, VerifyError> {
        crate::verify::verify(proof, challenge)
    }

    fn records(k: u8) -> u64 {
        1u64.checked_shl(u32::from(k)).unwrap_or(u64::MAX)
    }
}

/// Kind 2: the table-chain scheme of [`crate::hard`], five levels of
/// matched joins. A proof names the 16 leaves of one top entry's tree;
/// its score (the top entry's prefix distance, then its quality hash) is
/// already on the shared scale, the best of the plot's top entries, of
/// which a plot of size k has about `2^k` (0.95 of it at k = 16, 0.99 at
/// k = 20: the matching's losses at the edges of the output range shrink
/// as the range grows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hard;

impl ProofScheme for Hard {
    const KIND: u8 = 2;
    const NAME: &'static str = "hard";
    const MIN_K: u8 = crate::hard::construction::MIN_K;
    const MAX_K: u8 = crate::hard::construction::MAX_K;
    type Proof = crate::hard::HardProof;

    fn plot_id(proof: &Self::Proof) -> [u8; 32] {
        crate::hard::construction::plot_id(
            &proof.farmer_key,
            &proof.seed,
            proof.k,
            crate::hard::construction::LEVELS,
        )
    }

    fn well_formed(proof: &Self::Proof) -> Result<(), VerifyError> {
        crate::hard::verify::well_formed_with(crate::hard::construction::LEVELS, proof)
    }

    fn verify(proof: &Self::Proof, challenge: &[u8; 32]) -> Result<Verified, VerifyError> {
        crate::hard::verify(proof, challenge)
    }

    fn records(k: u8) -> u64 {
        1u64.checked_shl(u32::from(k)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(d: &[u8; 32]) -> u64 {
        u64::from_be_bytes(d[..8].try_into().unwrap())
    }

    #[test]
    fn the_plain_schemes_score_is_its_records_distance() {
        let proof = Proof {
            farmer_key: [1; 32],
            seed: [2; 32],
            k: 16,
            nonce: 77,
        };
        let challenge = [9; 32];
        let v = Plain::verify(&proof, &challenge).unwrap();
        assert_eq!(v.plot_id, Plain::plot_id(&proof));
        assert_eq!(
            v.distance,
            crate::construction::distance(&v.hash, &challenge)
        );
        assert_eq!(Plain::records(16), 1 << 16);
        assert_eq!(Plain::records(40), 1 << 40);
    }

    /// The shared scale, checked on the plain scheme's records: the best
    /// distance among 2^k of them, over many challenges, has a median
    /// near ln 2 · 2^64 / 2^k (the least of 2^k uniform draws). Smaller
    /// than any plot, so that it runs in a moment; a plot's records are
    /// the same hashes.
    #[test]
    fn the_best_score_of_a_plot_stands_for_its_records() {
        let k = 10u8;
        let id = crate::construction::plot_id(&[3; 32], &[4; 32], 16);
        let hashes: Vec<[u8; 32]> = (0..1u64 << k)
            .map(|nonce| crate::construction::record_hash(&id, nonce))
            .collect();
        let mut best: Vec<u64> = (0..401u32)
            .map(|c| {
                let challenge = *blake3::hash(&c.to_le_bytes()).as_bytes();
                hashes
                    .iter()
                    .map(|h| top(&crate::construction::distance(h, &challenge)))
                    .min()
                    .unwrap()
            })
            .collect();
        best.sort_unstable();
        let median = best[best.len() / 2] as f64;
        let expected = std::f64::consts::LN_2 * 2f64.powi(64) / Plain::records(k) as f64;
        // The sample median of 401 draws of an exponential has a relative
        // spread of 1/(ln 2 · √401) ≈ 7%: within 22% (3σ). The challenges
        // are fixed, so the test gives one answer.
        assert!(
            (median / expected - 1.0).abs() < 0.22,
            "median {median:e}, expected {expected:e}"
        );
    }
}
