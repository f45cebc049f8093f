//! The table-chain plot file: a 4 KiB header, then one section for each
//! stored level and one for the top level's index, each starting on a
//! 4 KiB boundary. `docs/FORMAT.md` describes every byte.
//!
//! Levels 2 to `levels - 1` each hold their entries as fixed-width
//! values sorted ascending: `2 · line_point(a, b) + flip`, where `(a, b)`,
//! `a > b`, are the two children's positions in the level below (for
//! level 2, the two leaves x), and `flip` is 1 when the left child of the
//! join is `a`. The top level holds `prefix ‖ value` (k bits, then the
//! same kind of value), sorted by prefix: the index gives, for each of
//! `2^index_bits` prefix buckets, where its entries start.

use super::construction::{k_is_supported, levels_are_supported, line_point, plot_id};
use crate::format::FormatError;

pub const MAGIC: [u8; 8] = *b"SPCVTABL";
pub const VERSION: u16 = 1;
pub const HEADER_SIZE: usize = 4096;
const CRC_OFFSET: usize = HEADER_SIZE - 4;
const LEVELS_OFFSET: usize = 128;
const LEVEL_FIELD: usize = 16;
/// Sections start on this boundary, so that a read of one entry never
/// touches two sections' pages.
pub const SECTION_ALIGN: u64 = 4096;
/// A value is read as 16 bytes at most: its width plus a bit offset of up
/// to 7 must fit.
pub const MAX_WIDTH: u32 = 121;

/// Top entries a prefix bucket holds on average: 2^3, so that a bucket's
/// entries are one small read and the index costs a byte an entry.
pub const INDEX_ENTRIES_LOG2: u8 = 3;

/// The index's bucket bits for a plot of size k.
pub fn index_bits(k: u8) -> u8 {
    k - INDEX_ENTRIES_LOG2
}

fn bit_length(v: u128) -> u32 {
    128 - v.leading_zeros()
}

/// Width in bits of a value that joins two positions of a level of
/// `count` entries (or, for level 2, two of `count` leaves).
pub fn pair_width(count: u64) -> u32 {
    if count < 2 {
        return 1;
    }
    bit_length(2 * line_point(count - 1, count - 2) + 1)
}

/// One stored level as the header gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    pub count: u64,
    pub crc: u32,
}

/// Everything a table-chain plot says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub k: u8,
    pub levels: u8,
    pub created_unix: u64,
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    pub plot_id: [u8; 32],
    /// Levels 2 to `levels`, in order.
    pub stored: Vec<LevelInfo>,
    pub index_crc: u32,
}

/// Where each section lies, derived from the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub k: u8,
    pub levels: u8,
    /// For levels 2 to `levels`: count, width in bits, byte offset, bytes.
    pub sections: Vec<Section>,
    pub index: Section,
    pub index_bits: u8,
    pub file_size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    pub count: u64,
    pub width: u32,
    pub offset: u64,
    pub bytes: u64,
}

impl Section {
    /// The byte range that holds entry `i`: `(offset, length, bit shift)`.
    pub fn entry_span(&self, i: u64) -> (u64, usize, u32) {
        let bit = i * u64::from(self.width);
        let first = bit / 8;
        let last = (bit + u64::from(self.width)).div_ceil(8);
        (
            self.offset + first,
            (last - first) as usize,
            (bit % 8) as u32,
        )
    }

    /// The bytes holding entries `first..end`, as [`Section::entry_span`].
    pub fn range_span(&self, first: u64, end: u64) -> (u64, usize, u32) {
        let bit = first * u64::from(self.width);
        let byte = bit / 8;
        let last = (end * u64::from(self.width)).div_ceil(8).max(byte);
        (self.offset + byte, (last - byte) as usize, (bit % 8) as u32)
    }
}

impl Layout {
    pub fn new(k: u8, levels: u8, counts: &[u64]) -> Result<Layout, FormatError> {
        if !k_is_supported(k) {
            return Err(FormatError::InvalidLayout(format!(
                "k = {k} is outside the table-chain scheme's {}..={}",
                super::construction::MIN_K,
                super::construction::MAX_K
            )));
        }
        if !levels_are_supported(levels) {
            return Err(FormatError::InvalidLayout(format!("{levels} levels")));
        }
        if counts.len() != usize::from(levels) - 1 {
            return Err(FormatError::InvalidLayout(format!(
                "{} level counts for {levels} levels",
                counts.len()
            )));
        }
        // A level has at most a few times 2^k entries; far more is damage.
        let limit = 4u64 << k;
        if let Some(&c) = counts.iter().find(|&&c| c > limit) {
            return Err(FormatError::InvalidLayout(format!(
                "a level of {c} entries"
            )));
        }
        let mut offset = HEADER_SIZE as u64;
        let mut sections = Vec::with_capacity(counts.len());
        let mut below = 1u64 << k;
        for (i, &count) in counts.iter().enumerate() {
            let pair = pair_width(below);
            let width = if i + 2 == usize::from(levels) {
                pair + u32::from(k)
            } else {
                pair
            };
            if width > MAX_WIDTH {
                return Err(FormatError::InvalidLayout(format!("width {width}")));
            }
            let bytes = (count * u64::from(width)).div_ceil(8);
            sections.push(Section {
                count,
                width,
                offset,
                bytes,
            });
            offset = (offset + bytes).next_multiple_of(SECTION_ALIGN);
            below = count;
        }
        let index_bits = index_bits(k);
        let index_count = (1u64 << index_bits) + 1;
        let index = Section {
            count: index_count,
            width: 64,
            offset,
            bytes: index_count * 8,
        };
        Ok(Layout {
            k,
            levels,
            sections,
            index,
            index_bits,
            file_size: offset + index.bytes,
        })
    }

    /// The section of `level` (2 to `levels`).
    pub fn level(&self, level: u8) -> &Section {
        &self.sections[usize::from(level) - 2]
    }

    pub fn top(&self) -> &Section {
        self.sections
            .last()
            .expect("at least two levels are stored")
    }
}

impl Header {
    pub fn counts(&self) -> Vec<u64> {
        self.stored.iter().map(|l| l.count).collect()
    }

    pub fn layout(&self) -> Result<Layout, FormatError> {
        Layout::new(self.k, self.levels, &self.counts())
    }

    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let layout = self
            .layout()
            .expect("a header is encoded from a valid layout");
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10] = self.k;
        b[11] = self.levels;
        b[12..16].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.created_unix.to_le_bytes());
        b[24] = layout.index_bits;
        b[28..32].copy_from_slice(&self.index_crc.to_le_bytes());
        b[32..64].copy_from_slice(&self.farmer_key);
        b[64..96].copy_from_slice(&self.seed);
        b[96..128].copy_from_slice(&self.plot_id);
        for (i, (level, section)) in self.stored.iter().zip(&layout.sections).enumerate() {
            let o = LEVELS_OFFSET + i * LEVEL_FIELD;
            b[o..o + 8].copy_from_slice(&level.count.to_le_bytes());
            b[o + 8..o + 12].copy_from_slice(&level.crc.to_le_bytes());
            b[o + 12] = section.width as u8;
        }
        let crc = crc32fast::hash(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses and checks a header: magic, version, checksum, k, levels,
    /// widths, reserved bytes and plot id. The file size is the caller's
    /// to check against [`Layout::file_size`].
    pub fn decode(b: &[u8]) -> Result<Header, FormatError> {
        if b.len() >= 8 && b[0..8] == crate::format::MAGIC {
            return Err(FormatError::OtherScheme {
                found: "plain",
                wanted: "hard",
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
        let (k, levels) = (b[10], b[11]);
        if !levels_are_supported(levels) {
            return Err(FormatError::InvalidLayout(format!("{levels} levels")));
        }
        if u32_at(12) as usize != HEADER_SIZE {
            return Err(FormatError::InvalidLayout(format!(
                "header size {}",
                u32_at(12)
            )));
        }
        let stored_end = LEVELS_OFFSET + (usize::from(levels) - 1) * LEVEL_FIELD;
        let stored: Vec<LevelInfo> = (0..usize::from(levels) - 1)
            .map(|i| {
                let o = LEVELS_OFFSET + i * LEVEL_FIELD;
                LevelInfo {
                    count: u64_at(o),
                    crc: u32_at(o + 8),
                }
            })
            .collect();
        let counts: Vec<u64> = stored.iter().map(|l| l.count).collect();
        let layout = Layout::new(k, levels, &counts)?;
        if b[24] != layout.index_bits {
            return Err(FormatError::InvalidLayout(format!("index bits {}", b[24])));
        }
        for (i, section) in layout.sections.iter().enumerate() {
            let o = LEVELS_OFFSET + i * LEVEL_FIELD;
            if u32::from(b[o + 12]) != section.width || b[o + 13..o + 16].iter().any(|&x| x != 0) {
                return Err(FormatError::InvalidLayout(format!(
                    "level {} has width {}, its count needs {}",
                    i + 2,
                    b[o + 12],
                    section.width
                )));
            }
        }
        if b[25..28].iter().any(|&x| x != 0) || b[stored_end..CRC_OFFSET].iter().any(|&x| x != 0) {
            return Err(FormatError::InvalidLayout(
                "reserved header bytes are not zero".into(),
            ));
        }
        let header = Header {
            k,
            levels,
            created_unix: u64_at(16),
            farmer_key: b[32..64].try_into().unwrap(),
            seed: b[64..96].try_into().unwrap(),
            plot_id: b[96..128].try_into().unwrap(),
            stored,
            index_crc: u32_at(28),
        };
        if plot_id(&header.farmer_key, &header.seed, k, levels) != header.plot_id {
            return Err(FormatError::PlotIdMismatch);
        }
        Ok(header)
    }
}

/// Packs values of one width, most significant bit first, into bytes.
pub struct BitWriter {
    bytes: Vec<u8>,
    acc: u128,
    bits: u32,
    width: u32,
}

impl BitWriter {
    pub fn new(width: u32, capacity_bytes: usize) -> BitWriter {
        assert!((1..=MAX_WIDTH).contains(&width));
        BitWriter {
            bytes: Vec::with_capacity(capacity_bytes),
            acc: 0,
            bits: 0,
            width,
        }
    }

    pub fn push(&mut self, value: u128) {
        debug_assert!(self.width == 128 || value >> self.width == 0);
        // acc holds fewer than 8 pending bits; 121 more still fit.
        self.acc = (self.acc << self.width) | value;
        self.bits += self.width;
        while self.bits >= 8 {
            self.bits -= 8;
            self.bytes.push((self.acc >> self.bits) as u8);
        }
        self.acc &= (1u128 << self.bits) - 1;
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.bits > 0 {
            self.bytes.push((self.acc << (8 - self.bits)) as u8);
        }
        self.bytes
    }
}

/// The value of `width` bits starting `shift` bits into `bytes` (which
/// holds at most 16 bytes and all of the value's bits).
pub fn read_value(bytes: &[u8], shift: u32, width: u32) -> u128 {
    debug_assert!(bytes.len() <= 16 && shift < 8 && width <= MAX_WIDTH);
    let mut acc = 0u128;
    for &b in bytes {
        acc = (acc << 8) | u128::from(b);
    }
    let total = 8 * bytes.len() as u32;
    let low = total - shift - width;
    (acc >> low) & ((1u128 << width) - 1)
}

/// Value `i` of a packed run that starts at bit `shift` of `bytes`.
pub fn value_at(bytes: &[u8], shift: u32, width: u32, i: u64) -> u128 {
    let bit = u64::from(shift) + i * u64::from(width);
    let first = (bit / 8) as usize;
    let last = (bit + u64::from(width)).div_ceil(8) as usize;
    read_value(&bytes[first..last], (bit % 8) as u32, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        let (farmer_key, seed) = ([1u8; 32], [2u8; 32]);
        let counts = [60_000u64, 59_000, 58_500, 58_000];
        Header {
            k: 16,
            levels: 5,
            created_unix: 1_790_000_000,
            farmer_key,
            seed,
            plot_id: plot_id(&farmer_key, &seed, 16, 5),
            stored: counts
                .iter()
                .enumerate()
                .map(|(i, &count)| LevelInfo {
                    count,
                    crc: 0x1000 + i as u32,
                })
                .collect(),
            index_crc: 77,
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
        for byte in [10usize, 11, 40, 130, 300, 4000] {
            let mut b = good;
            b[byte] ^= 1;
            assert_eq!(
                Header::decode(&b),
                Err(FormatError::HeaderChecksum),
                "byte {byte}"
            );
        }
        assert!(matches!(
            Header::decode(&good[..100]),
            Err(FormatError::WrongSize { .. })
        ));
    }

    #[test]
    fn consistent_but_wrong_fields_are_refused() {
        let mut h = sample();
        h.plot_id[0] ^= 1;
        assert_eq!(
            Header::decode(&h.encode()),
            Err(FormatError::PlotIdMismatch)
        );
        // A width that is not the one its count needs, resealed.
        let mut b = sample().encode();
        b[LEVELS_OFFSET + 12] += 1;
        let crc = crc32fast::hash(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            Header::decode(&b),
            Err(FormatError::InvalidLayout(_))
        ));
        // A count far past what the plot can hold.
        let mut b = sample().encode();
        b[LEVELS_OFFSET..LEVELS_OFFSET + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let crc = crc32fast::hash(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            Header::decode(&b),
            Err(FormatError::InvalidLayout(_))
        ));
    }

    #[test]
    fn the_layout_is_what_format_md_says() {
        let layout = sample().layout().unwrap();
        // Level 2 joins leaves: 2·lp(2^16 - 1, 2^16 - 2) + 1 < 2^32.
        assert_eq!(layout.sections[0].width, 32);
        assert_eq!(layout.sections[0].offset, 4096);
        assert_eq!(layout.sections[0].bytes, 60_000 * 4);
        assert_eq!(
            layout.sections[1].offset,
            (4096u64 + 240_000).next_multiple_of(4096)
        );
        // The top level: 16 prefix bits and a pair of 58_500 positions.
        assert_eq!(layout.sections[3].width, 16 + pair_width(58_500));
        assert_eq!(layout.index_bits, 13);
        assert_eq!(layout.index.bytes, ((1 << 13) + 1) * 8);
    }

    #[test]
    fn values_round_trip_at_every_width() {
        for width in [1u32, 7, 8, 31, 32, 33, 64, 65, 98, MAX_WIDTH] {
            let mask = if width == 128 {
                u128::MAX
            } else {
                (1u128 << width) - 1
            };
            let values: Vec<u128> = (0..50u128)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)) & mask)
                .collect();
            let mut w = BitWriter::new(width, 0);
            for &v in &values {
                w.push(v);
            }
            let bytes = w.finish();
            assert_eq!(bytes.len() as u64, (50 * u64::from(width)).div_ceil(8));
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(
                    value_at(&bytes, 0, width, i as u64),
                    v,
                    "width {width} value {i}"
                );
            }
        }
    }
}
