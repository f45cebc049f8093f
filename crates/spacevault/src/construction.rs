//! The construction every implementation must share so that proofs verify
//! anywhere: plot identity, record hashes, distance and quality.

use crate::kernel::Kernel;

/// The smallest and largest k a plot may have (nonces up to 5 bytes).
pub const MIN_K: u8 = 16;
pub const MAX_K: u8 = 40;

/// BLAKE3 `derive_key` context for plot identities. Changing it changes
/// every plot: it is part of the construction, not a setting.
pub const PLOT_ID_CONTEXT: &str = "spacevault 2026-11 plot id v1";

/// `derive_key(PLOT_ID_CONTEXT, farmer_key || seed || [k])`.
pub fn plot_id(farmer_key: &[u8; 32], seed: &[u8; 32], k: u8) -> [u8; 32] {
    let mut material = [0u8; 65];
    material[..32].copy_from_slice(farmer_key);
    material[32..64].copy_from_slice(seed);
    material[64] = k;
    blake3::derive_key(PLOT_ID_CONTEXT, &material)
}

/// Whether plots of this k are supported.
pub fn k_is_supported(k: u8) -> bool {
    (MIN_K..=MAX_K).contains(&k)
}

/// The hash of one record, computed the plain way with the `blake3` crate:
/// `keyed_hash(plot_id, LE64(nonce) || 56 zero bytes)`. The SIMD kernel is
/// tested against this.
pub fn record_hash(plot_id: &[u8; 32], nonce: u64) -> [u8; 32] {
    let mut message = [0u8; 64];
    message[..8].copy_from_slice(&nonce.to_le_bytes());
    *blake3::keyed_hash(plot_id, &message).as_bytes()
}

/// `hash XOR challenge`; comparing two distances as byte arrays compares
/// them as 256-bit big-endian integers.
pub fn distance(hash: &[u8; 32], challenge: &[u8; 32]) -> [u8; 32] {
    let mut d = [0u8; 32];
    for i in 0..32 {
        d[i] = hash[i] ^ challenge[i];
    }
    d
}

/// The number of leading zero bits of a distance: 256 for a hash equal to
/// the challenge.
pub fn quality(distance: &[u8; 32]) -> u32 {
    let mut bits = 0;
    for &b in distance {
        if b == 0 {
            bits += 8;
        } else {
            return bits + b.leading_zeros();
        }
    }
    bits
}

/// A candidate answer to a challenge: the nonce and how far its hash is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub nonce: u64,
    pub distance: [u8; 32],
}

impl Candidate {
    /// Whether `self` is a better answer than `other`: the smaller distance,
    /// and on a tie the smaller nonce.
    pub fn beats(&self, other: &Candidate) -> bool {
        (self.distance, self.nonce) < (other.distance, other.nonce)
    }

    pub fn quality(&self) -> u32 {
        quality(&self.distance)
    }
}

/// The best nonce of a whole plot found by hashing every nonce: the obviously
/// correct twin of [`crate::prove`], usable at small k only.
pub fn brute_force_best(plot_id: &[u8; 32], k: u8, challenge: &[u8; 32]) -> Candidate {
    let kernel = Kernel::new(plot_id);
    let count = 1u64 << k;
    let mut best: Option<Candidate> = None;
    let mut nonces = vec![0u64; 4096];
    let mut hashes = vec![[0u8; 32]; 4096];
    let mut first = 0;
    while first < count {
        let n = (count - first).min(4096) as usize;
        for (i, x) in nonces[..n].iter_mut().enumerate() {
            *x = first + i as u64;
        }
        kernel.hashes(&nonces[..n], &mut hashes[..n]);
        for i in 0..n {
            let c = Candidate {
                nonce: nonces[i],
                distance: distance(&hashes[i], challenge),
            };
            if best.is_none_or(|b| c.beats(&b)) {
                best = Some(c);
            }
        }
        first += n as u64;
    }
    best.expect("a plot has at least one record")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_id_depends_on_every_input() {
        let f = [1u8; 32];
        let s = [2u8; 32];
        let id = plot_id(&f, &s, 20);
        assert_ne!(id, plot_id(&[3u8; 32], &s, 20));
        assert_ne!(id, plot_id(&f, &[3u8; 32], 20));
        assert_ne!(id, plot_id(&f, &s, 21));
        // The construction is fixed: this value, committed in
        // tests/vectors/plot_id.hex, must never change.
        assert_eq!(
            hex::encode(id),
            "102327f057272288784cea30a648ba8405b69381681d66d25b93b8f0a1bf1152"
        );
    }

    #[test]
    fn quality_counts_leading_zero_bits() {
        let mut d = [0u8; 32];
        assert_eq!(quality(&d), 256);
        d[0] = 0x80;
        assert_eq!(quality(&d), 0);
        d[0] = 0;
        d[2] = 0x10;
        assert_eq!(quality(&d), 16 + 3);
    }

    #[test]
    fn ties_go_to_the_smaller_nonce() {
        let a = Candidate {
            nonce: 3,
            distance: [5; 32],
        };
        let b = Candidate {
            nonce: 4,
            distance: [5; 32],
        };
        assert!(a.beats(&b));
        assert!(!b.beats(&a));
        let c = Candidate {
            nonce: 9,
            distance: [4; 32],
        };
        assert!(c.beats(&a));
    }

    #[test]
    fn kernel_agrees_with_record_hash() {
        let id = plot_id(&[7; 32], &[8; 32], 16);
        let kernel = Kernel::new(&id);
        for x in [0u64, 1, 65535, 1 << 39] {
            assert_eq!(kernel.hash(x), record_hash(&id, x));
        }
    }
}
