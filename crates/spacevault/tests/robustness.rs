//! The fuzz targets' properties, run on stable with proptest: arbitrary
//! bytes never make the parsers, the prover, the checker or the verifier panic.

use proptest::prelude::*;
use spacevault::check::{check, CheckOptions};
use spacevault::format::{seal, Header, HEADER_SIZE};
use spacevault::fuzzing::{derived_fields, plot_from_region_bytes, sealed_header, HEADER_FIELDS};
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
        let report = check(&path, CheckOptions::full());
        prop_assert!(!report.is_ok());
    }
}

/// A header's fields (bytes 10 to 127) whose derived fields are each
/// likely, but not sure, to be what a real plot of their k, bucket bits and
/// region size holds.
fn header_fields() -> impl Strategy<Value = [u8; HEADER_FIELDS]> {
    (
        // Mostly k small enough that a whole plot is written and opened.
        prop_oneof![3 => 16u8..=21, 1 => 14u8..=42, 1 => any::<u8>()],
        prop_oneof![3 => (0u8..=10).prop_map(Some), 1 => Just(None)],
        prop_oneof![3 => (8u32..=21).prop_map(|b| 1 << b), 1 => any::<u32>()],
        proptest::array::uniform7(proptest::bool::weighted(0.875)),
        proptest::collection::vec(any::<u8>(), HEADER_FIELDS),
    )
        .prop_map(|(k, below_max_bits, region_size, derive, mut fields)| {
            fields[0] = k;
            if let Some(below) = below_max_bits {
                fields[1] = k.wrapping_add(4).wrapping_sub(below);
            }
            fields[6..10].copy_from_slice(&region_size.to_le_bytes());
            let mask = (0..7).filter(|&b| derive[b]).fold(0u8, |m, b| m | 1 << b);
            derived_fields(mask, &fields)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The fuzz targets `header` and `open`: a header that gets past the
    /// checksum and plot id, with any layout, parses to an error or to a
    /// header that encodes back to itself; a small plot behind it, with any
    /// sealed regions, opens, answers and is checked without a panic.
    #[test]
    fn sealed_headers_of_any_layout_never_panic(fields in header_fields(), body in any::<u64>(), challenge in any::<[u8; 32]>()) {
        let sealed = sealed_header(&fields);
        let Ok(header) = Header::decode(&sealed) else { return Ok(()) };
        prop_assert_eq!(header.encode(), sealed);
        prop_assert!(header.layout.validate().is_ok());
        if header.file_size() > 8 << 20 {
            return Ok(());
        }
        let size = header.layout.region_size as usize;
        let mut file = sealed.to_vec();
        let mut x = body | 1;
        for _ in 0..header.region_count {
            let mut region = vec![0u8; size];
            for b in region.iter_mut().skip(4) {
                // Mostly zero, some small values: like a real region's counts and slots.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = if x % 5 == 0 { (x >> 8) as u8 % 40 } else { 0 };
            }
            seal(&mut region);
            file.extend_from_slice(&region);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.plot");
        std::fs::write(&path, file).unwrap();
        let plot = PlotFile::open(&path);
        prop_assert!(plot.is_ok(), "{:?}", plot.err());
        let _ = plot.unwrap().prove(&challenge);
        let _ = check(&path, CheckOptions::full());
    }
}
