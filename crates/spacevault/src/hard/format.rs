//! The table-chain plot file: a 4 KiB header, then one section for each
//! stored level and one for the top level's index, each starting on a
//! 4 KiB boundary. `docs/FORMAT.md` describes every byte.
//!
//! Levels 2 to `levels - 1` each hold their entries' values sorted
//! ascending, in parks ([`super::park`]): a value is `2 · line_point(a,
//! b) + flip`, where `(a, b)`, `a > b`, are the two children's positions
//! in the level below (for level 2, the two leaves x), and `flip` is 1
//! when the left child of the join is `a`. The top level holds the same
//! kind of value with each entry's prefix (k bits), in buckets by the
//! prefix's high bits; the index gives where each bucket starts.

use super::construction::{k_is_supported, levels_are_supported, line_point, plot_id};
use super::park::{BUCKET_ENTRIES_LOG2, MAX_PARK_BYTES, MAX_WIDTH, PARK_ENTRIES};
use crate::format::FormatError;

pub const MAGIC: [u8; 8] = *b"SPCVTABL";
/// 2: parks and buckets (version 1 stored fixed-width values).
pub const VERSION: u16 = 2;
pub const HEADER_SIZE: usize = 4096;
const CRC_OFFSET: usize = HEADER_SIZE - 4;
const LEVELS_OFFSET: usize = 128;
const LEVEL_FIELD: usize = 32;
/// Sections start on this boundary, so that a read of one entry never
/// touches two sections' pages.
pub const SECTION_ALIGN: u64 = 4096;

/// Bytes an index value takes: the bucket's first entry and its byte
/// offset in the top level's section, u64 each.
pub const INDEX_VALUE_BYTES: u64 = 16;

/// The index's bucket bits for a plot of size k.
pub fn bucket_bits(k: u8) -> u8 {
    k - BUCKET_ENTRIES_LOG2
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

/// The width of each stored level's values, given the levels' counts
/// (levels 2 to the top).
pub fn widths(k: u8, counts: &[u64]) -> Vec<u32> {
    let below = std::iter::once(1u64 << k).chain(counts.iter().copied());
    below.take(counts.len()).map(pair_width).collect()
}

/// One stored level as the header gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    pub count: u64,
    /// The section's length.
    pub bytes: u64,
    pub crc: u32,
    /// A park's bytes (middle levels; 0 for the top).
    pub park_bytes: u32,
    /// The low bits of a park's offsets kept in fixed fields (0 for the top).
    pub fixed_bits: u8,
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
    /// For levels 2 to `levels`.
    pub sections: Vec<Section>,
    /// `2^bucket_bits + 1` values of [`INDEX_VALUE_BYTES`].
    pub index: Section,
    pub bucket_bits: u8,
    pub file_size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    pub count: u64,
    /// Bits of a value (a park's first, or a top entry's).
    pub width: u32,
    pub fixed_bits: u32,
    pub park_bytes: u64,
    pub offset: u64,
    pub bytes: u64,
}

impl Section {
    /// Where the park holding entry `i` lies, and the entry's place in it:
    /// `(offset, length, place)`.
    pub fn park_of(&self, i: u64) -> (u64, usize, u64) {
        let park = i / PARK_ENTRIES;
        (
            self.offset + park * self.park_bytes,
            self.park_bytes as usize,
            i % PARK_ENTRIES,
        )
    }
}

fn invalid(what: String) -> FormatError {
    FormatError::InvalidLayout(what)
}

impl Layout {
    pub fn new(k: u8, levels: u8, stored: &[LevelInfo]) -> Result<Layout, FormatError> {
        if !k_is_supported(k) {
            return Err(invalid(format!(
                "k = {k} is outside the table-chain scheme's {}..={}",
                super::construction::MIN_K,
                super::construction::MAX_K
            )));
        }
        if !levels_are_supported(levels) {
            return Err(invalid(format!("{levels} levels")));
        }
        if stored.len() != usize::from(levels) - 1 {
            return Err(invalid(format!(
                "{} stored levels for {levels} levels",
                stored.len()
            )));
        }
        // A level has at most a few times 2^k entries; far more is damage.
        let limit = 4u64 << k;
        if let Some(l) = stored.iter().find(|l| l.count > limit) {
            return Err(invalid(format!("a level of {} entries", l.count)));
        }
        let bucket_bits = bucket_bits(k);
        let counts: Vec<u64> = stored.iter().map(|l| l.count).collect();
        let mut offset = HEADER_SIZE as u64;
        let mut sections = Vec::with_capacity(stored.len());
        for (i, (info, width)) in stored.iter().zip(widths(k, &counts)).enumerate() {
            let level = i + 2;
            if width > MAX_WIDTH {
                return Err(invalid(format!("level {level}: width {width}")));
            }
            let fixed_bits = u32::from(info.fixed_bits);
            let park_bytes = u64::from(info.park_bytes);
            if level < usize::from(levels) {
                if fixed_bits > width {
                    return Err(invalid(format!(
                        "level {level}: {fixed_bits} fixed bits over its width {width}"
                    )));
                }
                if park_bytes < u64::from(width).div_ceil(8) || park_bytes > MAX_PARK_BYTES {
                    return Err(invalid(format!(
                        "level {level}: parks of {park_bytes} bytes"
                    )));
                }
                if info.bytes != info.count.div_ceil(PARK_ENTRIES) * park_bytes {
                    return Err(invalid(format!(
                        "level {level}: {} bytes for {} parks of {park_bytes}",
                        info.bytes,
                        info.count.div_ceil(PARK_ENTRIES)
                    )));
                }
            } else {
                if fixed_bits != 0 || park_bytes != 0 {
                    return Err(invalid("the top level has no parks".into()));
                }
                // Each entry's value and the bit ending its prefix step;
                // the steps' other bits, at most 2^k in all; each bucket's
                // padding.
                let least = (info.count * (u64::from(width) + 1)).div_ceil(8);
                let most =
                    (info.count * (u64::from(width) + 1) + (1u64 << k) + (8u64 << bucket_bits))
                        .div_ceil(8);
                if info.bytes < least || info.bytes > most {
                    return Err(invalid(format!(
                        "the top level takes {} bytes, outside {least}..={most} for {} entries",
                        info.bytes, info.count
                    )));
                }
            }
            sections.push(Section {
                count: info.count,
                width,
                fixed_bits,
                park_bytes,
                offset,
                bytes: info.bytes,
            });
            offset = (offset + info.bytes).next_multiple_of(SECTION_ALIGN);
        }
        let index_count = (1u64 << bucket_bits) + 1;
        let index = Section {
            count: index_count,
            width: 8 * INDEX_VALUE_BYTES as u32,
            fixed_bits: 0,
            park_bytes: 0,
            offset,
            bytes: index_count * INDEX_VALUE_BYTES,
        };
        Ok(Layout {
            k,
            levels,
            sections,
            index,
            bucket_bits,
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
        Layout::new(self.k, self.levels, &self.stored)
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
        b[24] = layout.bucket_bits;
        b[28..32].copy_from_slice(&self.index_crc.to_le_bytes());
        b[32..64].copy_from_slice(&self.farmer_key);
        b[64..96].copy_from_slice(&self.seed);
        b[96..128].copy_from_slice(&self.plot_id);
        for (i, (level, section)) in self.stored.iter().zip(&layout.sections).enumerate() {
            let o = LEVELS_OFFSET + i * LEVEL_FIELD;
            b[o..o + 8].copy_from_slice(&level.count.to_le_bytes());
            b[o + 8..o + 16].copy_from_slice(&level.bytes.to_le_bytes());
            b[o + 16..o + 20].copy_from_slice(&level.crc.to_le_bytes());
            b[o + 20..o + 24].copy_from_slice(&level.park_bytes.to_le_bytes());
            b[o + 24] = section.width as u8;
            b[o + 25] = level.fixed_bits;
        }
        let crc = crc32fast::hash(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses and checks a header: magic, version, checksum, k, levels,
    /// widths, parks, reserved bytes and plot id. The file size is the
    /// caller's to check against [`Layout::file_size`].
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
            return Err(invalid(format!("{levels} levels")));
        }
        if u32_at(12) as usize != HEADER_SIZE {
            return Err(invalid(format!("header size {}", u32_at(12))));
        }
        let stored_end = LEVELS_OFFSET + (usize::from(levels) - 1) * LEVEL_FIELD;
        let stored: Vec<LevelInfo> = (0..usize::from(levels) - 1)
            .map(|i| {
                let o = LEVELS_OFFSET + i * LEVEL_FIELD;
                LevelInfo {
                    count: u64_at(o),
                    bytes: u64_at(o + 8),
                    crc: u32_at(o + 16),
                    park_bytes: u32_at(o + 20),
                    fixed_bits: b[o + 25],
                }
            })
            .collect();
        let layout = Layout::new(k, levels, &stored)?;
        if b[24] != layout.bucket_bits {
            return Err(invalid(format!("bucket bits {}", b[24])));
        }
        for (i, section) in layout.sections.iter().enumerate() {
            let o = LEVELS_OFFSET + i * LEVEL_FIELD;
            if u32::from(b[o + 24]) != section.width || b[o + 26..o + 32].iter().any(|&x| x != 0) {
                return Err(invalid(format!(
                    "level {} has width {}, its count needs {}",
                    i + 2,
                    b[o + 24],
                    section.width
                )));
            }
        }
        if b[25..28].iter().any(|&x| x != 0) || b[stored_end..CRC_OFFSET].iter().any(|&x| x != 0) {
            return Err(invalid("reserved header bytes are not zero".into()));
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
                .map(|(i, &count)| {
                    let top = i == counts.len() - 1;
                    let park_bytes = if top { 0 } else { 2400 + i as u32 };
                    LevelInfo {
                        count,
                        bytes: if top {
                            240_000
                        } else {
                            count.div_ceil(PARK_ENTRIES) * u64::from(park_bytes)
                        },
                        crc: 0x1000 + i as u32,
                        park_bytes,
                        fixed_bits: if top { 0 } else { 15 },
                    }
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
        // A width that is not the one its count needs, resealed; and parks,
        // fixed bits or section lengths the counts refuse.
        let reseal = |change: &dyn Fn(&mut [u8; HEADER_SIZE])| {
            let mut b = sample().encode();
            change(&mut b);
            let crc = crc32fast::hash(&b[..CRC_OFFSET]);
            b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
            Header::decode(&b)
        };
        let field = |level: usize| LEVELS_OFFSET + (level - 2) * LEVEL_FIELD;
        type Change<'a> = &'a dyn Fn(&mut [u8; HEADER_SIZE]);
        let refused: [Change; 8] = [
            &|b| b[field(2) + 24] += 1,
            &|b| b[field(2)..field(2) + 8].copy_from_slice(&u64::MAX.to_le_bytes()),
            &|b| b[field(3) + 8] ^= 1,
            &|b| b[field(3) + 20] ^= 1,
            &|b| b[field(3) + 25] = 40,
            &|b| b[field(5) + 20] = 1,
            &|b| b[field(5) + 8..field(5) + 16].copy_from_slice(&(1u64 << 30).to_le_bytes()),
            &|b| b[field(4) + 31] = 1,
        ];
        for (i, change) in refused.iter().enumerate() {
            assert!(
                matches!(reseal(change), Err(FormatError::InvalidLayout(_))),
                "change {i}: {:?}",
                reseal(change)
            );
        }
        // The top level's length is its own (any between the bounds), but
        // not shorter than its entries' values.
        assert!(reseal(&|b| b[field(5) + 8] ^= 1).is_ok());
        assert!(matches!(
            reseal(&|b| b[field(5) + 8..field(5) + 16].copy_from_slice(&1000u64.to_le_bytes())),
            Err(FormatError::InvalidLayout(_))
        ));
    }

    #[test]
    fn the_layout_is_what_format_md_says() {
        let layout = sample().layout().unwrap();
        // Level 2 joins leaves: 2·lp(2^16 - 1, 2^16 - 2) + 1 < 2^32.
        assert_eq!(layout.sections[0].width, 32);
        assert_eq!(layout.sections[0].offset, 4096);
        assert_eq!(layout.sections[0].bytes, 59 * 2400);
        assert_eq!(layout.sections[0].park_of(1025), (4096 + 2400, 2400, 1));
        assert_eq!(
            layout.sections[1].offset,
            (4096u64 + 59 * 2400).next_multiple_of(4096)
        );
        // The top level: a pair of 58_500 positions; 2^8 entries a bucket.
        assert_eq!(layout.sections[3].width, pair_width(58_500));
        assert_eq!(layout.bucket_bits, 8);
        assert_eq!(layout.index.bytes, ((1 << 8) + 1) * 16);
        assert_eq!(
            layout.file_size,
            layout.sections[3].offset + 240_000u64.next_multiple_of(4096) + layout.index.bytes
        );
    }
}
