//! A plot file of any layout: a header made as the `header` target makes
//! its second one (a mask byte, then the fields), then whatever bytes
//! follow, each region of them sealed with a right checksum when the mask's
//! top bit is set. Opening it gives an error or a plot, never a panic, and
//! a plot that opens answers a challenge and is checked without panicking.
//! Run with room for a whole small plot: `-max_len=300000`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::format::{seal, HEADER_SIZE};
use spacevault::fuzzing::{derived_fields, sealed_header, HEADER_FIELDS};

fuzz_target!(|data: &[u8]| {
    let Some((&mask, data)) = data.split_first() else {
        return;
    };
    let (fields, rest) = data.split_at(data.len().min(HEADER_FIELDS));
    let header = sealed_header(&derived_fields(mask, fields));
    let mut file = header.to_vec();
    file.extend_from_slice(rest);
    let region_size = u32::from_le_bytes(header[16..20].try_into().unwrap()) as usize;
    if mask & 0x80 != 0 && (8..=1 << 20).contains(&region_size) {
        file[HEADER_SIZE..]
            .chunks_exact_mut(region_size)
            .for_each(seal);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.plot");
    std::fs::write(&path, file).unwrap();
    if let Ok(plot) = spacevault::PlotFile::open(&path) {
        let _ = plot.prove(&[0x5a; 32]);
        let options = spacevault::check::CheckOptions::full();
        let _ = spacevault::check::check(&path, options);
    }
});
