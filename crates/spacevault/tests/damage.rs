//! Damaged, truncated and foreign files: clear errors that name the damage.

use spacevault::check::{check, CheckOptions, Completeness};
use spacevault::plot::{NoProgress, Strategy};
use spacevault::{plot, PlotFile, PlotOptions, ReadError};
use std::path::PathBuf;

fn make_plot(dir: &std::path::Path) -> PathBuf {
    let mut o = PlotOptions::new(16, [5; 32], [6; 32]);
    o.strategy = Strategy::Memory;
    plot(&o, dir, &NoProgress).unwrap().path
}

fn full() -> CheckOptions {
    CheckOptions::full()
}

#[test]
fn a_good_plot_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let report = check(&path, full());
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.completeness, Completeness::EveryNonceOnce);
    assert_eq!(report.records, 1 << 16);
    assert_eq!(report.records_rehashed, 1 << 16);
    let sampled = check(&path, CheckOptions::sampled(1000));
    assert!(sampled.is_ok());
    assert!(sampled.records_rehashed < 1 << 16);
}

#[test]
fn a_flipped_bit_names_its_region_and_prove_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let region = 5u64;
    bytes[4096 + region as usize * 4096 + 700] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let report = check(&path, full());
    assert!(!report.is_ok());
    assert_eq!(
        report.damaged_regions.iter().copied().collect::<Vec<_>>(),
        vec![region]
    );
    assert_eq!(report.unreadable_regions, report.damaged_regions);
    // The damaged region's records could not be read: their nonces count
    // as missing.
    assert!(matches!(
        report.completeness,
        Completeness::Incomplete { missing: Some(m), duplicates: Some(0), .. } if m > 0
    ));
    assert!(
        report.problems[0].what.contains("region 5"),
        "{:?}",
        report.problems
    );

    // A lookup that lands in the damaged group reports it; others still work.
    let plot = PlotFile::open(&path).unwrap();
    let layout = plot.header().layout;
    let mut hit_damage = false;
    for i in 0..400u64 {
        let c = *blake3::hash(&i.to_le_bytes()).as_bytes();
        let g = layout.group_of_bucket(layout.bucket_of(&c));
        match plot.prove(&c) {
            Ok(_) => assert!(g != region && g + 1 != region),
            Err(ReadError::Damaged { region: r, .. }) => {
                assert_eq!(r, region);
                hit_damage = true;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(hit_damage);
}

#[test]
fn truncated_foreign_and_future_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let bytes = std::fs::read(&path).unwrap();

    let cut = dir.path().join("cut.plot");
    std::fs::write(&cut, &bytes[..bytes.len() - 4096]).unwrap();
    let e = PlotFile::open(&cut).err().unwrap().to_string();
    assert!(e.contains("truncated"), "{e}");

    let foreign = dir.path().join("foreign.plot");
    std::fs::write(&foreign, b"hello, this is not a plot").unwrap();
    let e = PlotFile::open(&foreign).err().unwrap();
    assert!(e.to_string().contains("not a spacevault plot"), "{e}");
    // Reports that name the file already take the reason alone.
    assert!(e.to_string().contains("foreign.plot"), "{e}");
    assert!(e.reason().starts_with("not a spacevault plot"), "{e}");

    let empty = dir.path().join("empty.plot");
    std::fs::write(&empty, b"").unwrap();
    assert!(PlotFile::open(&empty).is_err());

    let mut future = bytes.clone();
    future[8] = 2;
    let fut = dir.path().join("future.plot");
    std::fs::write(&fut, &future).unwrap();
    let e = PlotFile::open(&fut).err().unwrap().to_string();
    assert!(e.contains("version 2"), "{e}");

    let report = check(&cut, CheckOptions::default());
    assert!(!report.is_ok() && report.problems[0].region.is_none());
}

#[test]
fn swapped_records_are_caught_by_rehashing() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let plot = PlotFile::open(&path).unwrap();
    let layout = plot.header().layout;
    // Rewrite region 3 with its first slot changed and a fresh checksum: the
    // checksum passes, the hash check must not.
    let mut bytes = std::fs::read(&path).unwrap();
    let off = 4096 + 3 * 4096;
    let area = off + layout.slot_area_offset();
    let region_start = 3 * layout.slots_per_region as u64
        + u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as u64;
    assert!(region_start < 4 * layout.slots_per_region as u64);
    bytes[area] ^= 0x01;
    let crc = crc32_bit_by_bit(&bytes[off + 4..off + 4096]);
    bytes[off..off + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let report = check(&path, full());
    assert!(!report.is_ok());
    // The checksum passes, so every record is read; the problems found in
    // region 3 make it damaged all the same.
    assert!(report.unreadable_regions.is_empty());
    assert_eq!(
        report.damaged_regions.iter().copied().collect::<Vec<_>>(),
        vec![3]
    );
    assert!(matches!(
        report.completeness,
        Completeness::Incomplete {
            missing: Some(1),
            duplicates: Some(_),
            ..
        }
    ));
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.what.contains("hashes elsewhere")
                || p.what.contains("missing")
                || p.what.contains("out of order")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_duplicated_record_is_caught_without_rehashing() {
    // Slots are 16 bits at k = 16: copy a region's first record over its
    // second and seal the region again. A sampled check, which rehashes
    // almost nothing, must still find one nonce twice and one missing.
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let layout = PlotFile::open(&path).unwrap().header().layout;
    assert_eq!(layout.k, 16);
    let mut bytes = std::fs::read(&path).unwrap();
    let off = 4096 + 5 * 4096;
    let area = off + layout.slot_area_offset();
    let first = [bytes[area], bytes[area + 1]];
    assert_ne!(first, [bytes[area + 2], bytes[area + 3]]);
    bytes[area + 2..area + 4].copy_from_slice(&first);
    let crc = crc32_bit_by_bit(&bytes[off + 4..off + 4096]);
    bytes[off..off + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let sampled = CheckOptions::sampled(10);
    let report = check(&path, sampled);
    let said = |what: &str| report.problems.iter().any(|p| p.what.contains(what));
    assert!(
        said("1 of 65536 nonces are missing"),
        "{:?}",
        report.problems
    );
    assert!(said("1 records are duplicates"), "{:?}", report.problems);
}

#[test]
fn a_set_bit_in_the_padding_after_the_last_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let layout = PlotFile::open(&path).unwrap().header().layout;
    let mut bytes = std::fs::read(&path).unwrap();
    let off = bytes.len() - 4096;
    // The last slot of the last region: 16 bits at k = 16.
    let last = off + layout.slot_area_offset() + 2 * (layout.slots_per_region as usize - 1);
    assert_eq!(
        bytes[last..last + 2],
        [0, 0],
        "the last region ends in padding"
    );
    bytes[last + 1] = 0x80;
    let crc = crc32_bit_by_bit(&bytes[off + 4..]);
    bytes[off..off + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let report = check(&path, full());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.what.contains("padding slot") && p.what.contains("is not zero")),
        "{:?}",
        report.problems
    );
}

fn crc32_bit_by_bit(b: &[u8]) -> u32 {
    // The format's checksum, CRC-32 (IEEE), computed a bit at a time: an
    // obviously correct twin of the table-driven crc32fast the library uses.
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in b {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_last_group_offset_past_the_end_of_the_file_is_reported_not_a_panic() {
    // The padding before a group is checked up to where the group claims to
    // start; a claim past the end of the file must not read past it.
    let dir = tempfile::tempdir().unwrap();
    let path = make_plot(dir.path());
    let layout = PlotFile::open(&path).unwrap().header().layout;
    let mut bytes = std::fs::read(&path).unwrap();
    let off = bytes.len() - layout.region_size as usize;
    let offset = layout.slots_per_region + layout.slots_per_region / 2;
    bytes[off + 4..off + 8].copy_from_slice(&offset.to_le_bytes());
    let crc = crc32_bit_by_bit(&bytes[off + 4..]);
    bytes[off..off + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let report = check(&path, full());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.what.contains("group starts at slot")),
        "{:?}",
        report.problems
    );
}
