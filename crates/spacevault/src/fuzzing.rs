//! Helpers for the fuzz targets and property tests: plot files whose regions
//! are arbitrary bytes behind valid checksums.

use crate::construction::plot_id;
use crate::format::{seal, Header, Layout};
use std::path::Path;

/// Writes a k=16 plot file whose regions are `bytes` (repeated or cut to the
/// layout's region count), each sealed with a correct checksum.
pub fn plot_from_region_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let layout = Layout::for_k(16).expect("k=16 is supported");
    let (farmer_key, seed) = ([3u8; 32], [4u8; 32]);
    let region_count = layout.group_count() + (bytes.first().copied().unwrap_or(0) % 3) as u64;
    let header = Header {
        layout,
        region_count,
        created_unix: 0,
        farmer_key,
        seed,
        plot_id: plot_id(&farmer_key, &seed, 16),
    };
    let size = layout.region_size as usize;
    let mut file = header.encode().to_vec();
    for r in 0..region_count as usize {
        let mut region = vec![0u8; size];
        if !bytes.is_empty() {
            for (i, b) in region.iter_mut().enumerate().skip(4) {
                *b = bytes[(r * size + i) % bytes.len()];
            }
        }
        seal(&mut region);
        file.extend_from_slice(&region);
    }
    std::fs::write(path, file)
}
