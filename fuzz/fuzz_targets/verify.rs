//! Any proof and challenge: verify returns a result or an error, never panics,
//! and a valid proof's quality matches its distance.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::{quality, verify, Proof};

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 + 32 + 1 + 8 + 32 {
        return;
    }
    let proof = Proof {
        farmer_key: data[0..32].try_into().unwrap(),
        seed: data[32..64].try_into().unwrap(),
        k: data[64],
        nonce: u64::from_le_bytes(data[65..73].try_into().unwrap()),
    };
    let challenge: [u8; 32] = data[73..105].try_into().unwrap();
    if let Ok(v) = verify(&proof, &challenge) {
        assert_eq!(v.quality, quality(&v.distance));
    }
});
