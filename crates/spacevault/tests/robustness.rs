//! The fuzz targets' properties, run on stable with proptest: arbitrary
//! bytes never make the parsers, the prover, the checker or the verifier panic.

use proptest::prelude::*;
use spacevault::check::{check, CheckOptions};
use spacevault::format::{Header, HEADER_SIZE};
use spacevault::fuzzing::plot_from_region_bytes;
use spacevault::{quality, verify, PlotFile, Proof};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn header_parsing_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..5000), magic in any::<bool>()) {
        if magic && bytes.len() >= 10 {
            bytes[..8].copy_from_slice(b"SPCVAULT");
            bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
        }
        if let Ok(h) = Header::decode(&bytes) {
            prop_assert_eq!(&h.encode()[..], &bytes[..HEADER_SIZE]);
        }
    }

    #[test]
    fn verify_never_panics(f in any::<[u8; 32]>(), s in any::<[u8; 32]>(), k in any::<u8>(), nonce in any::<u64>(), c in any::<[u8; 32]>()) {
        if let Ok(v) = verify(&Proof { farmer_key: f, seed: s, k, nonce }, &c) {
            prop_assert_eq!(v.quality, quality(&v.distance));
            prop_assert!((16..=40).contains(&k) && nonce < 1u64 << k);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn arbitrary_regions_with_valid_checksums_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000),
        sparse in any::<bool>(),
        challenge in any::<[u8; 32]>(),
    ) {
        // Mostly-zero regions look like real ones (small counts, small offsets).
        let bytes: Vec<u8> = if sparse { bytes.iter().map(|&b| if b % 7 == 0 { b % 40 } else { 0 }).collect() } else { bytes };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.plot");
        plot_from_region_bytes(&path, &bytes).unwrap();
        if let Ok(plot) = PlotFile::open(&path) {
            let _ = plot.prove(&challenge);
        }
        let report = check(&path, CheckOptions { full: true, sample: 1 });
        prop_assert!(!report.is_ok());
    }
}
