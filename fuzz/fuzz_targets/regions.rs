//! A valid header over arbitrary region bytes with valid checksums, so the
//! fuzzer reaches the region parsing itself: prove and check report damage
//! and never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::fuzzing::plot_from_region_bytes;

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.plot");
    plot_from_region_bytes(&path, &data[32..]).unwrap();
    if let Ok(plot) = spacevault::PlotFile::open(&path) {
        let challenge: [u8; 32] = data[..32].try_into().unwrap();
        let _ = plot.prove(&challenge);
    }
    let _ = spacevault::check::check(
        &path,
        spacevault::check::CheckOptions::full(),
    );
});
