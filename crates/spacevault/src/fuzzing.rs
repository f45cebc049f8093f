//! Helpers for the fuzz targets and property tests: headers and plot files
//! made from arbitrary bytes, with the checks a fuzzer cannot pass by chance
//! (checksums, the plot id, fields that must equal what the layout derives)
//! made to pass, so that it reaches the code behind them.

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

/// Bytes 10 to 127 of a header: k through the seed.
pub const HEADER_FIELDS: usize = 118;

/// A header block whose fields (bytes 10 to 127) are `fields`, cut or
/// zero-padded, behind the right magic and version, plot id and checksum.
pub fn sealed_header(fields: &[u8]) -> [u8; HEADER_SIZE] {
    let mut b = [0u8; HEADER_SIZE];
    b[..8].copy_from_slice(&MAGIC);
    b[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let n = fields.len().min(HEADER_FIELDS);
    b[10..10 + n].copy_from_slice(&fields[..n]);
    let farmer_key: [u8; 32] = b[64..96].try_into().unwrap();
    let seed: [u8; 32] = b[96..128].try_into().unwrap();
    let id = plot_id(&farmer_key, &seed, b[10]);
    b[128..160].copy_from_slice(&id);
    let crc = crc32fast::hash(&b[..HEADER_SIZE - 4]);
    b[HEADER_SIZE - 4..].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Header fields from `fields` (cut or zero-padded), where each bit of
/// `mask` makes one field what a real plot of the fields' k, bucket bits
/// and region size holds: the header size (bit 0), buckets a group (1),
/// slots a region (2), the reserved word (3), the group count (4), the
/// region count (5: the group count plus 0 to 3) and the record count (6).
/// A fuzzer would hardly find these values, which must match exactly.
pub fn derived_fields(mask: u8, fields: &[u8]) -> [u8; HEADER_FIELDS] {
    let mut f = [0u8; HEADER_FIELDS];
    let n = fields.len().min(HEADER_FIELDS);
    f[..n].copy_from_slice(&fields[..n]);
    // These two hold whatever the layout.
    if mask & 1 != 0 {
        f[2..6].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
    }
    if mask & (1 << 3) != 0 {
        f[18..22].fill(0);
    }
    let region_size = u32::from_le_bytes(f[6..10].try_into().unwrap());
    let Ok(layout) = Layout::new(f[0], f[1], region_size) else {
        return f;
    };
    let groups = layout.group_count();
    let derived: [(u8, usize, &[u8]); 5] = [
        (1, 10, &layout.buckets_per_group.to_le_bytes()),
        (2, 14, &layout.slots_per_region.to_le_bytes()),
        (4, 22, &groups.to_le_bytes()),
        (5, 30, &(groups + (f[30] % 4) as u64).to_le_bytes()),
        (6, 38, &layout.record_count().to_le_bytes()),
    ];
    for (bit, at, value) in derived {
        if mask & (1 << bit) != 0 {
            f[at..at + value.len()].copy_from_slice(value);
        }
    }
    f
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
        // k, bucket bits and region size are enough with every field derived.
        let mut fields = [0u8; 10];
        fields[..2].copy_from_slice(&[20, layout.bucket_bits]);
        fields[6..10].copy_from_slice(&layout.region_size.to_le_bytes());
        let derived = sealed_header(&derived_fields(0x7f, &fields));
        let decoded = Header::decode(&derived).unwrap();
        assert_eq!(decoded.layout, layout);
        assert_eq!(decoded.region_count, layout.group_count());
        let no_slots = sealed_header(&derived_fields(0x7f ^ (1 << 2), &fields));
        assert!(matches!(
            Header::decode(&no_slots),
            Err(FormatError::InvalidLayout(_))
        ));
    }
}
