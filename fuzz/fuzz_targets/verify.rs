//! Any proof of either scheme and any challenge: verify returns a result
//! or an error, never panics, and a valid proof's quality matches its
//! distance. The first byte picks the scheme; for the table-chain one
//! every 8 bytes after the challenge are a leaf, however many.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::hard::HardProof;
use spacevault::{quality, verify, Proof};

fuzz_target!(|data: &[u8]| {
    let Some((&kind, data)) = data.split_first() else {
        return;
    };
    if data.len() < 32 + 32 + 1 + 32 {
        return;
    }
    let farmer_key: [u8; 32] = data[0..32].try_into().unwrap();
    let seed: [u8; 32] = data[32..64].try_into().unwrap();
    let k = data[64];
    let challenge: [u8; 32] = data[65..97].try_into().unwrap();
    let rest = &data[97..];
    let verified = if kind % 2 == 0 {
        if rest.len() < 8 {
            return;
        }
        let nonce = u64::from_le_bytes(rest[..8].try_into().unwrap());
        verify(&Proof { farmer_key, seed, k, nonce }, &challenge)
    } else {
        let xs = rest
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        spacevault::hard::verify(&HardProof { farmer_key, seed, k, xs }, &challenge)
    };
    if let Ok(v) = verified {
        assert_eq!(v.quality, quality(&v.distance));
    }
});
