//! One region: `crc32 (4) | group offset (4) | bucket counts (1 each) | slots`.

use super::bits::read_slot;
use super::Layout;

/// Bytes before the bucket counts: the checksum and the group offset.
pub const REGION_HEADER_SIZE: usize = 8;

/// A region's bytes, read-only, with the layout to interpret them.
#[derive(Clone, Copy)]
pub struct Region<'a> {
    pub bytes: &'a [u8],
    pub layout: &'a Layout,
}

impl<'a> Region<'a> {
    pub fn stored_crc(&self) -> u32 {
        u32::from_le_bytes(self.bytes[0..4].try_into().unwrap())
    }

    pub fn computed_crc(&self) -> u32 {
        crc32fast::hash(&self.bytes[4..])
    }

    pub fn crc_ok(&self) -> bool {
        self.stored_crc() == self.computed_crc()
    }

    /// Slots at the start of this region taken by earlier groups: the group
    /// of the same index starts at global slot `index * slots + offset`.
    pub fn group_offset(&self) -> u32 {
        u32::from_le_bytes(self.bytes[4..8].try_into().unwrap())
    }

    pub fn counts(&self) -> &'a [u8] {
        &self.bytes[REGION_HEADER_SIZE..self.layout.slot_area_offset()]
    }

    pub fn slots(&self) -> &'a [u8] {
        &self.bytes[self.layout.slot_area_offset()..]
    }

    pub fn slot(&self, j: usize) -> u64 {
        read_slot(self.slots(), j, self.layout.k as u32)
    }
}

/// Fills in a region's checksum once its other bytes are final.
pub fn seal(region: &mut [u8]) {
    let crc = crc32fast::hash(&region[4..]);
    region[0..4].copy_from_slice(&crc.to_le_bytes());
}
