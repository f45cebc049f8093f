//! The fuzz targets' properties, run on stable with proptest: arbitrary
//! bytes never make the parsers, the prover, the checker or the verifier panic.

use proptest::prelude::*;
use spacevault::check::{check, CheckOptions};
use spacevault::format::{seal, Header, Layout, HEADER_SIZE};
use spacevault::fuzzing::{plot_from_region_bytes, sealed_header};
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

/// A header's fields (bytes 10 to 127) that are each either what a real
/// plot of this k, bucket bits and region size would hold, or arbitrary.
fn header_fields() -> impl Strategy<Value = Vec<u8>> {
    (
        // Mostly k small enough that a whole plot is written and opened.
        prop_oneof![3 => 16u8..=21, 1 => 14u8..=42, 1 => any::<u8>()],
        any::<u8>(),
        prop_oneof![3 => (8u32..=21).prop_map(|b| 1 << b), 1 => any::<u32>()],
        proptest::array::uniform6(proptest::bool::weighted(0.875)),
        any::<[u64; 5]>(),
        1u64..4,
        any::<[u8; 64]>(),
    )
        .prop_map(|(k, bits, region_size, honest, noise, extra, keys)| {
            let bits = if honest[0] {
                k.wrapping_sub(bits % 11).wrapping_add(4)
            } else {
                bits
            };
            let derived = Layout::new(k, bits, region_size).ok();
            let mut f = vec![0u8; 118];
            f[0] = k;
            f[1] = bits;
            f[2..6].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
            f[6..10].copy_from_slice(&region_size.to_le_bytes());
            let pick = |honest: bool, real: Option<u64>, noise: u64| match real {
                Some(real) if honest => real,
                _ => noise,
            };
            let (bpg, slots) = (
                derived.map(|l| l.buckets_per_group as u64),
                derived.map(|l| l.slots_per_region as u64),
            );
            let groups = derived.map(|l| l.group_count());
            f[10..14].copy_from_slice(&(pick(honest[1], bpg, noise[0]) as u32).to_le_bytes());
            f[14..18].copy_from_slice(&(pick(honest[2], slots, noise[1]) as u32).to_le_bytes());
            f[22..30].copy_from_slice(&pick(honest[3], groups, noise[2]).to_le_bytes());
            f[30..38].copy_from_slice(
                &pick(honest[4], groups.map(|g| g + extra - 1), noise[3]).to_le_bytes(),
            );
            let records = if k < 64 { 1u64 << k } else { 0 };
            f[38..46].copy_from_slice(&pick(honest[5], Some(records), noise[4]).to_le_bytes());
            f[54..118].copy_from_slice(&keys);
            f
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
        let _ = check(&path, CheckOptions { full: true, sample: 1 });
    }
}
