//! Helpers for the fuzz targets and property tests: plot files whose regions
//! are arbitrary bytes behind valid checksums.

use crate::construction::plot_id;
use crate::format::{seal, Header, Layout, HEADER_SIZE, MAGIC, VERSION};
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

/// A header block whose fields (k through the seed, bytes 10 to 127) are
/// `fields`, cut or zero-padded, behind the right magic and version, plot
/// id and checksum: bytes a fuzzer could not have made pass those checks,
/// so that it reaches the layout and count checks behind them.
pub fn sealed_header(fields: &[u8]) -> [u8; HEADER_SIZE] {
    let mut b = [0u8; HEADER_SIZE];
    b[..8].copy_from_slice(&MAGIC);
    b[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let n = fields.len().min(128 - 10);
    b[10..10 + n].copy_from_slice(&fields[..n]);
    let farmer_key: [u8; 32] = b[64..96].try_into().unwrap();
    let seed: [u8; 32] = b[96..128].try_into().unwrap();
    let id = plot_id(&farmer_key, &seed, b[10]);
    b[128..160].copy_from_slice(&id);
    let crc = crc32fast::hash(&b[..HEADER_SIZE - 4]);
    b[HEADER_SIZE - 4..].copy_from_slice(&crc.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatError;

    #[test]
    fn a_real_headers_fields_seal_to_the_real_header() {
        let layout = Layout::for_k(20).unwrap();
        let (farmer_key, seed) = ([7u8; 32], [9u8; 32]);
        let header = Header {
            layout,
            region_count: layout.group_count() + 1,
            created_unix: 1_700_000_000,
            farmer_key,
            seed,
            plot_id: plot_id(&farmer_key, &seed, 20),
        };
        let real = header.encode();
        assert_eq!(sealed_header(&real[10..128]), real);
        assert_eq!(Header::decode(&sealed_header(&real[10..128])), Ok(header));
        // Fields that are not a header's still get past the checksum.
        assert_ne!(
            Header::decode(&sealed_header(&[20, 99])),
            Err(FormatError::HeaderChecksum)
        );
    }
}
