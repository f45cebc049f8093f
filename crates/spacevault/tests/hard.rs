//! The table-chain scheme under hostile input: a proof with one bit
//! changed is refused, a header with one bit changed does not open,
//! arbitrary proofs never make the verifier panic, and a plot whose
//! tables were damaged on disk gives errors or proofs that verify, never
//! a panic or a proof that does not.

use proptest::prelude::*;
use spacevault::hard::format::{Header, HEADER_SIZE};
use spacevault::hard::{plot, verify, HardPlotFile, HardPlotOptions, HardProof};
use std::path::PathBuf;
use std::sync::OnceLock;

fn challenge(i: u32) -> [u8; 32] {
    *blake3::hash(&i.to_le_bytes()).as_bytes()
}

/// A k = 16 plot, made once for every test here, and its proofs for 16
/// challenges.
struct Sample {
    _dir: tempfile::TempDir,
    path: PathBuf,
    proofs: Vec<([u8; 32], HardProof)>,
}

fn sample() -> &'static Sample {
    static SAMPLE: OnceLock<Sample> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut options = HardPlotOptions::new(16, [5; 32], [6; 32]);
        options.threads = 2;
        let path = plot(&options, dir.path()).unwrap().path;
        let file = HardPlotFile::open(&path).unwrap();
        let proofs = (0..16)
            .map(|i| {
                let c = challenge(i);
                let answer = file.prove(&c).unwrap().unwrap();
                (c, file.proof(&answer).unwrap())
            })
            .collect();
        Sample {
            _dir: dir,
            path,
            proofs,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_proof_with_one_bit_changed_is_refused(which in 0usize..16, bit in 0usize..(32 + 32 + 1 + 16 * 8) * 8) {
        let (challenge, honest) = &sample().proofs[which];
        prop_assert!(verify(honest, challenge).is_ok());
        let mut p = honest.clone();
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        match byte {
            0..32 => p.farmer_key[byte] ^= mask,
            32..64 => p.seed[byte - 32] ^= mask,
            64 => p.k ^= mask,
            _ => {
                let leaf = (byte - 65) / 8;
                p.xs[leaf] ^= u64::from(mask) << (8 * ((byte - 65) % 8));
            }
        }
        prop_assert!(verify(&p, challenge).is_err(), "byte {byte} mask {mask:#x}");
    }

    #[test]
    fn a_header_with_one_bit_changed_does_not_decode(bit in 0usize..HEADER_SIZE * 8) {
        let bytes = std::fs::read(&sample().path).unwrap();
        let mut header = bytes[..HEADER_SIZE].to_vec();
        prop_assert!(Header::decode(&header).is_ok());
        header[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(Header::decode(&header).is_err());
    }

    #[test]
    fn verify_never_panics(
        f in any::<[u8; 32]>(),
        k in any::<u8>(),
        xs in proptest::collection::vec(any::<u64>(), 0..40),
        small in any::<bool>(),
        c in any::<[u8; 32]>(),
    ) {
        // Leaves in range often enough to reach the matching checks.
        let xs = if small { xs.iter().map(|x| x & 0xFFFF).collect() } else { xs };
        if let Ok(v) = verify(&HardProof { farmer_key: f, seed: f, k, xs }, &c) {
            prop_assert_eq!(v.quality, spacevault::quality(&v.distance));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Damage anywhere past the header: every answer the plot still gives
    /// verifies, and what it cannot answer is an error, not a panic.
    #[test]
    fn damaged_tables_give_errors_or_proofs_that_verify(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..200),
    ) {
        let bytes = std::fs::read(&sample().path).unwrap();
        let mut damaged = bytes.clone();
        let span = damaged.len() - HEADER_SIZE;
        for (at, bit) in &flips {
            damaged[HEADER_SIZE + at.index(span)] ^= 1 << bit;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("damaged.plot");
        std::fs::write(&path, &damaged).unwrap();
        let file = HardPlotFile::open(&path).unwrap();
        for i in 0..64 {
            let c = challenge(1000 + i);
            let Ok(Some(answer)) = file.prove(&c) else { continue };
            if let Ok(proof) = file.proof(&answer) {
                let v = verify(&proof, &c);
                prop_assert!(v.is_ok());
                prop_assert_eq!(v.unwrap().distance, answer.score);
            }
        }
    }
}
