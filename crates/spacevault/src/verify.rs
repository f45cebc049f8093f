//! Checking a proof: derive the plot id, rehash one record.

use crate::construction::{distance, k_is_supported, plot_id, quality, record_hash};

/// A proof of space: which plot, and which of its records.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proof {
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    pub k: u8,
    pub nonce: u64,
}

/// What a valid proof is worth against its challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub plot_id: [u8; 32],
    pub hash: [u8; 32],
    pub distance: [u8; 32],
    pub quality: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    #[error("k = {0} is not supported (spacevault supports {min} to {max})", min = crate::MIN_K, max = crate::MAX_K)]
    UnsupportedK(u8),
    #[error("nonce {nonce} is not below 2^{k}")]
    NonceOutOfRange { nonce: u64, k: u8 },
    #[error("k = {k} is not supported by the {scheme} scheme ({min} to {max})")]
    UnsupportedSchemeK {
        scheme: &'static str,
        k: u8,
        min: u8,
        max: u8,
    },
    #[error("{0} levels is not a table-chain plot's (3 to 7)")]
    UnsupportedLevels(u8),
    #[error("a proof has {expected} leaves, this one {actual}")]
    LeafCount { expected: usize, actual: usize },
    #[error("leaf {x} is not below 2^{k}")]
    LeafOutOfRange { x: u64, k: u8 },
    #[error("entries {pair} and {} of level {level} do not match", pair + 1)]
    NoMatch { level: u8, pair: usize },
}

/// Whether a proof's k is supported and its nonce names a record of a
/// plot of that size: what can be checked without hashing.
pub fn well_formed(proof: &Proof) -> Result<(), VerifyError> {
    if !k_is_supported(proof.k) {
        return Err(VerifyError::UnsupportedK(proof.k));
    }
    if proof.nonce >> proof.k != 0 {
        return Err(VerifyError::NonceOutOfRange {
            nonce: proof.nonce,
            k: proof.k,
        });
    }
    Ok(())
}

/// Verifies a proof against a challenge: one `derive_key` and one hash.
pub fn verify(proof: &Proof, challenge: &[u8; 32]) -> Result<Verified, VerifyError> {
    well_formed(proof)?;
    let id = plot_id(&proof.farmer_key, &proof.seed, proof.k);
    let hash = record_hash(&id, proof.nonce);
    let d = distance(&hash, challenge);
    Ok(Verified {
        plot_id: id,
        hash,
        distance: d,
        quality: quality(&d),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_is_refused() {
        let p = Proof {
            farmer_key: [0; 32],
            seed: [0; 32],
            k: 16,
            nonce: 1 << 16,
        };
        assert_eq!(
            verify(&p, &[0; 32]),
            Err(VerifyError::NonceOutOfRange {
                nonce: 1 << 16,
                k: 16
            })
        );
        let p = Proof {
            k: 41,
            nonce: 0,
            ..p
        };
        assert_eq!(verify(&p, &[0; 32]), Err(VerifyError::UnsupportedK(41)));
    }

    #[test]
    fn quality_matches_distance() {
        let p = Proof {
            farmer_key: [1; 32],
            seed: [2; 32],
            k: 20,
            nonce: 12345,
        };
        let v = verify(&p, &[0; 32]).unwrap();
        assert_eq!(v.distance, v.hash);
        assert_eq!(v.quality, quality(&v.hash));
        let v2 = verify(&p, &v.hash).unwrap();
        assert_eq!(v2.quality, 256);
    }
}
