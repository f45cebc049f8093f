//! A table-chain plot file of any layout: a k = 16 header whose stored
//! levels' fields come from the input (sealed with a right checksum and a
//! right plot id), then the rest of the input, cut or padded with zeros to
//! the size the header's layout gives. Opening it gives an error or a
//! plot, never a panic, and a plot that opens answers challenges and is
//! checked in full without panicking. Run with room for a small plot:
//! `-max_len=300000`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::hard::construction::plot_id;
use spacevault::hard::format::{Header, LevelInfo};
use spacevault::hard::park::PARK_ENTRIES;

/// Bytes the input gives each of the four stored levels: count (u32),
/// park bytes (u16), fixed bits (u8), the top level's length (u32).
const FIELDS: usize = 4 * 11;

/// Files past this are not written: the layout alone is then the test.
const MOST_BYTES: u64 = 4 << 20;

fuzz_target!(|data: &[u8]| {
    if data.len() < FIELDS {
        return;
    }
    let (fields, rest) = data.split_at(FIELDS);
    let k = 16u8;
    let stored: Vec<LevelInfo> = fields
        .chunks_exact(11)
        .enumerate()
        .map(|(i, f)| {
            let count = u64::from(u32::from_le_bytes(f[..4].try_into().unwrap())) % (5 << k);
            let park_bytes = u32::from(u16::from_le_bytes(f[4..6].try_into().unwrap()));
            let top_bytes = u64::from(u32::from_le_bytes(f[7..11].try_into().unwrap()));
            if i == 3 {
                LevelInfo { count, bytes: top_bytes, crc: 0, park_bytes: 0, fixed_bits: 0 }
            } else {
                LevelInfo {
                    count,
                    bytes: count.div_ceil(PARK_ENTRIES) * u64::from(park_bytes),
                    crc: 0,
                    park_bytes,
                    fixed_bits: f[6],
                }
            }
        })
        .collect();
    let (farmer_key, seed) = ([3u8; 32], [4u8; 32]);
    let header = Header {
        k,
        levels: 5,
        created_unix: 0,
        farmer_key,
        seed,
        plot_id: plot_id(&farmer_key, &seed, k, 5),
        stored,
        index_crc: 0,
    };
    let Ok(layout) = header.layout() else {
        return;
    };
    if layout.file_size > MOST_BYTES {
        return;
    }
    let mut file = header.encode().to_vec();
    file.extend_from_slice(rest);
    file.resize(layout.file_size as usize, 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.plot");
    std::fs::write(&path, file).unwrap();
    let plot = spacevault::hard::HardPlotFile::open(&path).expect("a sound header opens");
    for c in 0..4u8 {
        if let Ok(Some(answer)) = plot.prove(&[c; 32]) {
            let _ = plot.proof(&answer);
        }
    }
    let _ = spacevault::hard::check::check(&path, true);
});
