//! The table-chain scheme (kind 2): a k = 18 plot's file and its answer
//! to a challenge, which the reference must give too.

use crate::file::Vector;
use crate::{challenge, FARMER_KEY, SEED};
use spacevault::hard::construction::{leaf, plot_id, LEVELS};
use spacevault::hard::format::{Header, HEADER_SIZE};
use spacevault::hard::reference::ReferencePlot;
use spacevault::hard::{plot, verify, HardPlotFile, HardPlotOptions};

fn le64s(values: impl IntoIterator<Item = u64>) -> Vec<u8> {
    values.into_iter().flat_map(u64::to_le_bytes).collect()
}

#[test]
fn a_k18_table_chain_plot() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = HardPlotOptions::new(18, FARMER_KEY, SEED);
    options.threads = 2;
    let summary = plot(&options, dir.path()).unwrap();
    let mut file = std::fs::read(&summary.path).unwrap();
    let mut header = Header::decode(&file[..HEADER_SIZE]).unwrap();
    header.created_unix = 0;
    file[..HEADER_SIZE].copy_from_slice(&header.encode());

    let plot = HardPlotFile::open(&summary.path).unwrap();
    let answer = plot.prove(&challenge()).unwrap().unwrap();
    let proof = plot.proof(&answer).unwrap();
    let verified = verify(&proof, &challenge()).unwrap();
    assert_eq!(verified.distance, answer.score);
    let (score, leaves) = ReferencePlot::build(&FARMER_KEY, &SEED, 18, LEVELS)
        .best(&challenge())
        .unwrap();
    assert_eq!((score, &leaves), (answer.score, &proof.xs));

    let id = plot_id(&FARMER_KEY, &SEED, 18, LEVELS);
    let first = leaf(&id, 18, 0);
    let about = "\
the k = 18, five-level table-chain plot of farmer_key [1; 32] and seed
[2; 32]: plot_id; leaf_0: level 1's output y (u64 LE) and digest for
x = 0; counts: entries stored at levels 2 to 5 (u64 LE each); header:
its 4 KiB with the created time set to 0 and the checksum made again;
file_blake3: the BLAKE3 of that whole file; then the best proof for the
challenge 00 01 02 .. 1f: its 16 leaves (u64 LE each) in proof order,
the quality hash and the score";
    Vector::new("hard_k18", about)
        .field("plot_id", id)
        .field(
            "leaf_0",
            [first.y.to_le_bytes().as_slice(), &first.meta].concat(),
        )
        .field("counts", le64s(header.counts()))
        .field("header", &file[..HEADER_SIZE])
        .field("file_blake3", blake3::hash(&file).as_bytes())
        .field("proof_leaves", le64s(proof.xs.iter().copied()))
        .field("quality_hash", verified.hash)
        .field("score", verified.distance)
        .check();
    assert_eq!(Header::decode(&file[..HEADER_SIZE]).unwrap(), header);
}
