use super::*;
use crate::blob_address;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The tree as its definition says, built bottom-up from the whole file:
/// parts grouped `fanout` at a time into manifests, those grouped again,
/// until one manifest holds the rest. The builder must make the same.
fn naive_tree(
    data: &[u8],
    part_bytes: usize,
    fanout: usize,
) -> (Manifest, BTreeMap<[u8; 32], Manifest>) {
    let mut below = BTreeMap::new();
    let mut entries: Vec<([u8; 32], usize, usize)> = data
        .chunks(part_bytes)
        .enumerate()
        .map(|(i, c)| (blob_address(c), i * part_bytes, i * part_bytes + c.len()))
        .collect();
    let mut depth = 0;
    while entries.len() > fanout {
        entries = entries
            .chunks(fanout)
            .map(|group| {
                let (start, end) = (group[0].1, group[group.len() - 1].2);
                let m = Manifest {
                    bytes: (end - start) as u64,
                    hash: *blake3::hash(&data[start..end]).as_bytes(),
                    part_bytes: part_bytes as u32,
                    depth,
                    entries: group.iter().map(|e| e.0).collect(),
                };
                let address = blob_address(&m.encode());
                below.insert(address, m);
                (address, start, end)
            })
            .collect();
        depth += 1;
    }
    let root = Manifest {
        bytes: data.len() as u64,
        hash: *blake3::hash(data).as_bytes(),
        part_bytes: part_bytes as u32,
        depth,
        entries: entries.iter().map(|e| e.0).collect(),
    };
    (root, below)
}

fn built_tree(data: &[u8], part_bytes: usize, fanout: usize) -> (Manifest, Vec<Manifest>) {
    let mut builder = TreeBuilder::new(part_bytes as u32, fanout);
    let mut closed = Vec::new();
    for part in data.chunks(part_bytes) {
        closed.extend(builder.part(blob_address(part), part));
    }
    let (root, rest) = builder.finish().expect("a file of parts");
    closed.extend(rest);
    (root, closed)
}

/// Reads a file back through the walker and checker from blobs by address.
fn read_back(root: &[u8; 32], blobs: &BTreeMap<[u8; 32], Vec<u8>>) -> Result<Vec<u8>, FileError> {
    let fetch = |a: &[u8; 32]| {
        blobs
            .get(a)
            .filter(|b| blob_address(b) == *a)
            .cloned()
            .ok_or(FileError::Inconsistent("a blob is missing"))
    };
    let mut walker = Walker::new(Manifest::decode(&fetch(root)?)?);
    let mut checker = Checker::new();
    let mut out = Vec::new();
    loop {
        match walker.step()? {
            Next::Done => break,
            Next::Manifest(a) => walker.give(Manifest::decode(&fetch(&a)?)?)?,
            Next::Part { address, bytes } => {
                let data = fetch(&address)?;
                if data.len() != bytes as usize {
                    return Err(FileError::Inconsistent("a part of the wrong size"));
                }
                checker.expect(walker.take_ranges());
                checker.feed(&data)?;
                out.extend_from_slice(&data);
            }
        }
    }
    assert_eq!(checker.finish()?, out.len() as u64);
    Ok(out)
}

fn stored(
    data: &[u8],
    part_bytes: usize,
    fanout: usize,
) -> ([u8; 32], BTreeMap<[u8; 32], Vec<u8>>) {
    let (root, closed) = built_tree(data, part_bytes, fanout);
    let mut blobs: BTreeMap<[u8; 32], Vec<u8>> = data
        .chunks(part_bytes)
        .map(|c| (blob_address(c), c.to_vec()))
        .collect();
    for m in closed.iter().chain([&root]) {
        let b = m.encode();
        blobs.insert(blob_address(&b), b);
    }
    (blob_address(&root.encode()), blobs)
}

#[test]
fn a_manifest_encodes_to_these_bytes() {
    let m = Manifest {
        bytes: 5,
        hash: [1; 32],
        part_bytes: 4,
        depth: 0,
        entries: vec![[2; 32], [3; 32]],
    };
    let expected = concat!(
        "73766669 6c65",
        "0100",
        "0500000000000000",
        "0101010101010101010101010101010101010101010101010101010101010101",
        "04000000",
        "00",
        "02000000",
        "0202020202020202020202020202020202020202020202020202020202020202",
        "0303030303030303030303030303030303030303030303030303030303030303",
    )
    .replace(' ', "");
    assert_eq!(hex::encode(m.encode()), expected);
    assert_eq!(m.encode().len(), HEADER_BYTES + 64);
    assert_eq!(Manifest::decode(&m.encode()), Ok(m));
}

#[test]
fn manifests_that_do_not_hold_together_are_refused() {
    let good = Manifest {
        bytes: 9,
        hash: [1; 32],
        part_bytes: 4,
        depth: 0,
        entries: vec![[2; 32]; 3],
    };
    assert!(Manifest::decode(&good.encode()).is_ok());
    let refused = |m: Manifest| Manifest::decode(&m.encode()).is_err();
    assert!(
        refused(Manifest {
            bytes: 8,
            ..good.clone()
        }),
        "two parts' bytes, three parts"
    );
    assert!(
        refused(Manifest {
            bytes: 13,
            ..good.clone()
        }),
        "four parts' bytes, three parts"
    );
    assert!(refused(Manifest {
        bytes: 0,
        entries: vec![],
        ..good.clone()
    }));
    assert!(refused(Manifest {
        part_bytes: 0,
        ..good.clone()
    }));
    assert!(refused(Manifest {
        part_bytes: MAX_PART_BYTES + 1,
        bytes: 1,
        entries: vec![[0; 32]],
        ..good.clone()
    }));
    assert!(refused(Manifest {
        depth: MAX_DEPTH + 1,
        ..good.clone()
    }));
    assert!(
        refused(Manifest {
            depth: 1,
            bytes: 8,
            ..good.clone()
        }),
        "3 entries of at least a part in 2 parts' bytes"
    );
    assert!(!refused(Manifest {
        depth: 1,
        bytes: 1000,
        ..good.clone()
    }));
    let bytes = good.encode();
    for cut in 0..bytes.len() {
        assert!(Manifest::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(Manifest::decode(&longer), Err(DecodeError::Trailing(1)));
    let mut later = bytes.clone();
    later[6] = 2;
    assert!(matches!(
        Manifest::decode(&later),
        Err(DecodeError::UnknownVersion { version: 2, .. })
    ));
    let mut forged_count = bytes;
    forged_count[HEADER_BYTES - 4..HEADER_BYTES].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(Manifest::decode(&forged_count).is_err());
    assert!(is_manifest(&good.encode()) && !is_manifest(b"svfil"));
}

#[test]
fn a_walker_given_what_it_did_not_ask_for_refuses_it() {
    let m = Manifest {
        bytes: 4,
        hash: [0; 32],
        part_bytes: 4,
        depth: 0,
        entries: vec![[1; 32]],
    };
    let mut walker = Walker::new(m.clone());
    assert!(matches!(walker.step(), Ok(Next::Part { bytes: 4, .. })));
    assert_eq!(walker.step(), Ok(Next::Done));
    assert!(walker.give(m).is_err());
}

#[test]
fn the_depth_a_file_needs_is_the_fewest_levels_that_cover_its_parts() {
    assert_eq!(depth_for(1, 4), 0);
    assert_eq!(depth_for(4, 4), 0);
    assert_eq!(depth_for(5, 4), 1);
    assert_eq!(depth_for(16, 4), 1);
    assert_eq!(depth_for(17, 4), 2);
    assert_eq!(depth_for(u64::MAX, 2), 63);
    assert!(depth_for(513, 2) > MAX_DEPTH, "a writer must refuse it");
}

#[test]
fn a_manifest_holds_as_many_entries_as_a_blob_has_room_for() {
    assert_eq!(fanout(1 << 20), Some(((1 << 20) - HEADER_BYTES) / 32));
    assert_eq!(fanout((HEADER_BYTES + 64) as u32), Some(2));
    assert_eq!(fanout((HEADER_BYTES + 63) as u32), None);
    let m = Manifest {
        bytes: 1 << 40,
        hash: [0; 32],
        part_bytes: 1 << 20,
        depth: 1,
        entries: vec![[0; 32]; fanout(1 << 20).unwrap()],
    };
    assert_eq!(m.encode().len(), HEADER_BYTES + 32 * m.entries.len());
    assert!(m.encode().len() <= 1 << 20);
}

#[test]
fn a_file_three_manifests_deep_is_read_back() {
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (root, blobs) = stored(&data, 10, 4);
    let decoded = Manifest::decode(&blobs[&root]).unwrap();
    assert_eq!(decoded.depth, 3, "100 parts, 4 a manifest: 25, 7, 2");
    assert_eq!(decoded.hash, *blake3::hash(&data).as_bytes());
    assert_eq!(read_back(&root, &blobs).unwrap(), data);
}

#[test]
fn a_manifest_whose_range_hash_lies_is_caught_when_the_range_ends() {
    let data = vec![7u8; 64];
    let (root, mut blobs) = stored(&data, 4, 4);
    let mut m = Manifest::decode(&blobs[&root]).unwrap();
    m.hash[0] ^= 1;
    let forged = m.encode();
    let forged_root = blob_address(&forged);
    blobs.insert(forged_root, forged);
    assert_eq!(
        read_back(&forged_root, &blobs),
        Err(FileError::WrongRange { start: 0, end: 64 })
    );
}

#[test]
fn a_child_manifest_that_does_not_fit_its_parent_is_refused() {
    let data: Vec<u8> = (0..64u8).collect();
    let (root, mut blobs) = stored(&data, 4, 4);
    let mut top = Manifest::decode(&blobs[&root]).unwrap();
    assert_eq!(top.depth, 1);
    // A child that claims more bytes than the file has left.
    let mut child = Manifest::decode(&blobs[&top.entries[3]]).unwrap();
    child.bytes += 4;
    child.entries.push(blob_address(&data[..4]));
    let child = child.encode();
    top.entries[3] = blob_address(&child);
    blobs.insert(top.entries[3], child);
    let forged = top.encode();
    let forged_root = blob_address(&forged);
    blobs.insert(forged_root, forged);
    assert!(matches!(
        read_back(&forged_root, &blobs),
        Err(FileError::Inconsistent(_))
    ));
}

proptest! {
    #[test]
    fn the_builder_makes_the_tree_the_definition_names_and_it_reads_back(
        data in proptest::collection::vec(any::<u8>(), 1..400),
        part_bytes in 1usize..9,
        fanout in 2usize..6,
    ) {
        let (root, closed) = built_tree(&data, part_bytes, fanout);
        let (naive_root, naive_below) = naive_tree(&data, part_bytes, fanout);
        prop_assert_eq!(&root, &naive_root);
        let parts = data.len().div_ceil(part_bytes) as u64;
        prop_assert_eq!(root.depth, depth_for(parts, fanout));
        // A file that ends just as a manifest closes has that one for its
        // root, handed out with the parts that closed it.
        let mut below: BTreeMap<[u8; 32], Manifest> =
            closed.into_iter().map(|m| (blob_address(&m.encode()), m)).collect();
        below.remove(&blob_address(&root.encode()));
        prop_assert!(below == naive_below, "the manifests below the root differ");
        let (root, blobs) = stored(&data, part_bytes, fanout);
        prop_assert_eq!(read_back(&root, &blobs).unwrap(), data);
    }
}
