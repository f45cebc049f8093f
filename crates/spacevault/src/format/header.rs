//! The 4 KiB header at the start of every plot.

use super::{FormatError, Layout};
use crate::construction::{k_is_supported, plot_id};

pub const MAGIC: [u8; 8] = *b"SPCVAULT";
pub const VERSION: u16 = 1;
/// The header fills one region-sized block so that regions stay aligned.
pub const HEADER_SIZE: usize = 4096;
const CRC_OFFSET: usize = HEADER_SIZE - 4;

/// Everything a plot file says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub layout: Layout,
    pub region_count: u64,
    pub created_unix: u64,
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    pub plot_id: [u8; 32],
}

impl Header {
    pub fn k(&self) -> u8 {
        self.layout.k
    }

    pub fn record_count(&self) -> u64 {
        self.layout.record_count()
    }

    /// The size the whole file must have.
    pub fn file_size(&self) -> u64 {
        HEADER_SIZE as u64 + self.region_count * self.layout.region_size as u64
    }

    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        let l = &self.layout;
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10] = l.k;
        b[11] = l.bucket_bits;
        b[12..16].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
        b[16..20].copy_from_slice(&l.region_size.to_le_bytes());
        b[20..24].copy_from_slice(&l.buckets_per_group.to_le_bytes());
        b[24..28].copy_from_slice(&l.slots_per_region.to_le_bytes());
        // 28..32 reserved, zero.
        b[32..40].copy_from_slice(&l.group_count().to_le_bytes());
        b[40..48].copy_from_slice(&self.region_count.to_le_bytes());
        b[48..56].copy_from_slice(&l.record_count().to_le_bytes());
        b[56..64].copy_from_slice(&self.created_unix.to_le_bytes());
        b[64..96].copy_from_slice(&self.farmer_key);
        b[96..128].copy_from_slice(&self.seed);
        b[128..160].copy_from_slice(&self.plot_id);
        let crc = crc32fast::hash(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses and checks a header: magic, version, checksum, k, layout,
    /// plot id. The file size is checked by the caller, who knows it.
    pub fn decode(b: &[u8]) -> Result<Header, FormatError> {
        if b.len() >= 8 && b[0..8] == crate::hard::format::MAGIC {
            return Err(FormatError::OtherScheme {
                found: "hard",
                wanted: "plain",
            });
        }
        if b.len() < 8 || b[0..8] != MAGIC {
            return Err(FormatError::NotAPlot);
        }
        if b.len() < HEADER_SIZE {
            return Err(FormatError::WrongSize {
                expected: HEADER_SIZE as u64,
                actual: b.len() as u64,
            });
        }
        let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let version = u16_at(8);
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion(version));
        }
        if crc32fast::hash(&b[..CRC_OFFSET]) != u32_at(CRC_OFFSET) {
            return Err(FormatError::HeaderChecksum);
        }
        let k = b[10];
        if !k_is_supported(k) {
            return Err(FormatError::UnsupportedK(k));
        }
        if u32_at(12) as usize != HEADER_SIZE {
            return Err(FormatError::InvalidLayout(format!(
                "header size {}",
                u32_at(12)
            )));
        }
        let layout = Layout {
            k,
            bucket_bits: b[11],
            region_size: u32_at(16),
            buckets_per_group: u32_at(20),
            slots_per_region: u32_at(24),
        };
        layout.validate()?;
        let reserved = u32_at(28);
        if reserved != 0 || b[160..CRC_OFFSET].iter().any(|&x| x != 0) {
            return Err(FormatError::InvalidLayout(
                "reserved header bytes are not zero".into(),
            ));
        }
        if u64_at(32) != layout.group_count() {
            return Err(FormatError::InvalidLayout(format!(
                "group count {}",
                u64_at(32)
            )));
        }
        if u64_at(48) != layout.record_count() {
            return Err(FormatError::InvalidLayout(format!(
                "record count {}",
                u64_at(48)
            )));
        }
        let region_count = u64_at(40);
        let max_regions = layout
            .record_count()
            .div_ceil(layout.slots_per_region as u64)
            + layout.group_count();
        if region_count < layout.group_count() || region_count > max_regions {
            return Err(FormatError::InvalidLayout(format!(
                "region count {region_count}"
            )));
        }
        let header = Header {
            layout,
            region_count,
            created_unix: u64_at(56),
            farmer_key: b[64..96].try_into().unwrap(),
            seed: b[96..128].try_into().unwrap(),
            plot_id: b[128..160].try_into().unwrap(),
        };
        if plot_id(&header.farmer_key, &header.seed, k) != header.plot_id {
            return Err(FormatError::PlotIdMismatch);
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        let layout = Layout::for_k(20).unwrap();
        let (farmer_key, seed) = ([1u8; 32], [2u8; 32]);
        Header {
            layout,
            region_count: layout.group_count() + 1,
            created_unix: 1_790_000_000,
            farmer_key,
            seed,
            plot_id: plot_id(&farmer_key, &seed, 20),
        }
    }

    #[test]
    fn round_trip() {
        let h = sample();
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
    }

    #[test]
    fn damage_is_named() {
        let good = sample().encode();
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Header::decode(&b), Err(FormatError::NotAPlot));
        let mut b = good;
        b[8] = 9;
        assert_eq!(Header::decode(&b), Err(FormatError::UnsupportedVersion(9)));
        let mut b = good;
        b[70] ^= 1;
        assert_eq!(Header::decode(&b), Err(FormatError::HeaderChecksum));
        assert!(matches!(
            Header::decode(&good[..100]),
            Err(FormatError::WrongSize { .. })
        ));
    }

    #[test]
    fn a_consistent_but_wrong_plot_id_is_caught() {
        let mut h = sample();
        h.plot_id[0] ^= 1;
        assert_eq!(
            Header::decode(&h.encode()),
            Err(FormatError::PlotIdMismatch)
        );
    }
}
