//! A whole plot: the bytes of a k = 16 plot made with fixed inputs, which
//! every strategy must produce, and its answer to a challenge.

use crate::file::Vector;
use crate::{challenge, FARMER_KEY, SEED};
use spacevault::check::{check, CheckOptions};
use spacevault::format::{Header, HEADER_SIZE};
use spacevault::plot::{plot_file_name, NoProgress, Strategy};
use spacevault::{plot, PlotFile, PlotOptions};

/// The file with its creation time, the one field that is not a function
/// of the inputs, set to 0 (and the header's checksum made again).
fn normalized(mut file: Vec<u8>) -> Vec<u8> {
    let mut header = Header::decode(&file[..HEADER_SIZE]).expect("the plot's header decodes");
    header.created_unix = 0;
    file[..HEADER_SIZE].copy_from_slice(&header.encode());
    file
}

#[test]
fn a_small_plot_is_the_same_file_by_every_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    // At k = 16 the external strategy keeps its one round in memory: its
    // own pipeline, without the temp file.
    let strategies = [
        (Strategy::Memory, 64 << 20),
        (Strategy::External, 48 << 20),
        (Strategy::Auto, 64 << 20),
    ];
    for (strategy, memory) in strategies {
        let mut o = PlotOptions::new(16, FARMER_KEY, SEED);
        o.strategy = strategy;
        o.memory = memory;
        o.threads = 2;
        o.force = true;
        let summary = plot(&o, dir.path(), &NoProgress).unwrap();
        let name = summary
            .path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let file = normalized(std::fs::read(&summary.path).unwrap());
        let report = check(&summary.path, CheckOptions::full());
        assert!(report.is_ok(), "{}: {report:?}", strategy.name());
        let answer = PlotFile::open(&summary.path)
            .unwrap()
            .prove(&challenge())
            .unwrap();
        files.push((strategy, name, file, answer));
    }
    let (_, name, file, answer) = &files[0];
    let header = Header::decode(&file[..HEADER_SIZE]).unwrap();
    let region_size = header.layout.region_size as usize;
    let crcs: Vec<u8> = file[HEADER_SIZE..]
        .chunks(region_size)
        .flat_map(|r| r[..4].to_vec())
        .collect();
    let c = Vector::new(
        "plot_k16",
        "the k = 16 plot of farmer_key [1; 32] and seed [2; 32] in the default\n\
         layout, made by the in-memory and the external strategies and by `auto`,\n\
         which must all write the same bytes.\n\
         file_blake3: the BLAKE3 of the whole file with its header's created time\n\
         set to 0 and the header's checksum made again; file_size: u64 LE;\n\
         region_crcs: each region's stored CRC-32 (u32 LE), in order; file_name:\n\
         the file's name (ASCII); answer_nonce (u64 LE) and answer_hash: the\n\
         plot's best proof for the challenge 00 01 02 .. 1f",
    )
    .field("file_blake3", blake3::hash(file).as_bytes())
    .field("file_size", (file.len() as u64).to_le_bytes())
    .field("region_crcs", &crcs)
    .field("file_name", name.as_bytes())
    .field("answer_nonce", answer.nonce.to_le_bytes())
    .field("answer_hash", answer.hash)
    .check();
    for (strategy, other_name, other, other_answer) in &files[1..] {
        let strategy = strategy.name();
        assert_eq!(
            blake3::hash(other).as_bytes(),
            c.get("file_blake3"),
            "{strategy}"
        );
        assert_eq!(other_name.as_bytes(), c.get("file_name"), "{strategy}");
        assert_eq!(other_answer.nonce, answer.nonce, "{strategy}");
    }
    assert_eq!(
        plot_file_name(16, &header.plot_id).as_bytes(),
        c.get("file_name")
    );
    // The plot proves what brute force and the proof vector find.
    let proof = spacevault::brute_force_best(&header.plot_id, 16, &challenge());
    assert_eq!(proof.nonce, answer.nonce);
}
