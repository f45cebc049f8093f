//! How records are spread over regions.
//!
//! Buckets are the top `bucket_bits` bits of a record's hash. Consecutive
//! buckets form groups; group g's bucket counts sit in region g's header and
//! its records fill slots from region g onwards. Each region has a little more
//! room than a group needs on average, so a group that overflows its region
//! spills into the next one and the spill soon drains: a lookup reads regions
//! g and g + 1 and almost never more, with no index to keep in memory.

use super::{FormatError, REGION_HEADER_SIZE};
use crate::construction::k_is_supported;

/// Regions are 4 KiB: the unit of a random read on SSDs and of O_DIRECT.
pub const DEFAULT_REGION_SIZE: u32 = 4096;

/// Average records per bucket in the default layout: small enough that a
/// lookup rehashes little, large enough that counts cost a quarter bit each.
pub const DEFAULT_BUCKET_RECORDS_LOG2: u8 = 5;

/// Room for this many times the expected records of a group (65/64): the
/// drift that keeps spills short. A spill past one whole region then has a
/// probability of about exp(-2 * slots / 64).
const SLACK_NUM: u128 = 65;
const SLACK_DEN: u128 = 64;

/// The parameters that place every record; stored in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub k: u8,
    pub bucket_bits: u8,
    pub region_size: u32,
    pub buckets_per_group: u32,
    pub slots_per_region: u32,
}

impl Layout {
    /// The layout `plot` uses for k.
    pub fn for_k(k: u8) -> Result<Layout, FormatError> {
        Layout::new(
            k,
            k.saturating_sub(DEFAULT_BUCKET_RECORDS_LOG2),
            DEFAULT_REGION_SIZE,
        )
    }

    /// A layout with chosen bucket bits and region size; the group size is
    /// the largest that leaves the slack above.
    pub fn new(k: u8, bucket_bits: u8, region_size: u32) -> Result<Layout, FormatError> {
        if !k_is_supported(k) {
            return Err(FormatError::UnsupportedK(k));
        }
        // Counts are one byte: at most 64 records a bucket on average keeps
        // an overflow (255) out of reach. More bucket bits than k + 4 would
        // only waste space.
        if u16::from(bucket_bits) + 6 < u16::from(k) || bucket_bits > k + 4 || bucket_bits > 48 {
            return Err(FormatError::InvalidLayout(format!(
                "bucket_bits {bucket_bits} is outside {}..={} for k = {k}",
                k.saturating_sub(6),
                (k + 4).min(48)
            )));
        }
        if !(512..=1 << 20).contains(&region_size) || !region_size.is_power_of_two() {
            return Err(FormatError::InvalidLayout(format!(
                "region size {region_size} is not a power of two from 512 to 1 MiB"
            )));
        }
        let bucket_count = 1u128 << bucket_bits;
        let mut best = None;
        let max_groups = (region_size as usize - REGION_HEADER_SIZE) / 2;
        for bpg in 1..=max_groups.min(bucket_count as usize) {
            let slots = slots_for(region_size, bpg as u32, k);
            // bpg * 2^k / 2^bucket_bits * 65/64 <= slots
            if ((bpg as u128) * SLACK_NUM) << k <= ((slots as u128) * SLACK_DEN) << bucket_bits {
                best = Some((bpg as u32, slots));
            } else {
                break;
            }
        }
        let (buckets_per_group, slots_per_region) = best.ok_or_else(|| {
            FormatError::InvalidLayout(format!(
                "a {region_size}-byte region cannot hold one bucket of 2^{} records",
                k as i32 - bucket_bits as i32
            ))
        })?;
        Ok(Layout {
            k,
            bucket_bits,
            region_size,
            buckets_per_group,
            slots_per_region,
        })
    }

    /// Checks stored parameters against the ones [`Layout::new`] derives.
    pub fn validate(&self) -> Result<(), FormatError> {
        let derived = Layout::new(self.k, self.bucket_bits, self.region_size)?;
        if derived != *self {
            return Err(FormatError::InvalidLayout(format!(
                "the header's layout ({self}) is not the one its k, bucket bits and region size give ({derived})"
            )));
        }
        Ok(())
    }

    pub fn record_count(&self) -> u64 {
        1u64 << self.k
    }

    pub fn bucket_count(&self) -> u64 {
        1u64 << self.bucket_bits
    }

    pub fn group_count(&self) -> u64 {
        self.bucket_count().div_ceil(self.buckets_per_group as u64)
    }

    /// Buckets in group g (the last group may be short).
    pub fn buckets_in_group(&self, g: u64) -> u32 {
        let first = g * self.buckets_per_group as u64;
        (self.bucket_count() - first).min(self.buckets_per_group as u64) as u32
    }

    /// The bucket of a hash, from its first 8 bytes read big-endian.
    #[inline]
    pub fn bucket_of_prefix(&self, prefix: u64) -> u64 {
        prefix >> (64 - self.bucket_bits as u32)
    }

    /// The bucket of a 32-byte hash or challenge.
    pub fn bucket_of(&self, hash: &[u8; 32]) -> u64 {
        self.bucket_of_prefix(u64::from_be_bytes(hash[..8].try_into().unwrap()))
    }

    pub fn group_of_bucket(&self, bucket: u64) -> u64 {
        bucket / self.buckets_per_group as u64
    }

    /// Byte offset of the slot area inside a region.
    pub fn slot_area_offset(&self) -> usize {
        REGION_HEADER_SIZE + self.buckets_per_group as usize
    }

    /// Regions needed when the last record ends at global slot `end_slot`.
    pub fn region_count(&self, end_slot: u64) -> u64 {
        self.group_count()
            .max(end_slot.div_ceil(self.slots_per_region as u64))
    }

    /// Bits on disk per record for a plot of `regions` regions, header included.
    pub fn bits_per_record(&self, regions: u64) -> f64 {
        let bytes = super::HEADER_SIZE as u64 + regions * self.region_size as u64;
        bytes as f64 * 8.0 / self.record_count() as f64
    }
}

fn slots_for(region_size: u32, buckets_per_group: u32, k: u8) -> u32 {
    let bits = (region_size as usize - REGION_HEADER_SIZE - buckets_per_group as usize) * 8;
    (bits / k as usize) as u32
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "k {}, {} bucket bits, {}-byte regions of {} buckets and {} slots",
            self.k,
            self.bucket_bits,
            self.region_size,
            self.buckets_per_group,
            self.slots_per_region
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_layouts_have_slack_and_little_overhead() {
        for k in crate::MIN_K..=crate::MAX_K {
            let l = Layout::for_k(k).unwrap();
            let expected = l.buckets_per_group as f64 * 32.0;
            let slack = l.slots_per_region as f64 / expected - 1.0;
            assert!(
                (1.0 / 64.0 - 1e-9..0.07).contains(&slack),
                "k {k}: slack {slack}"
            );
            // The 4 KiB header only matters at the smallest k.
            let regions = l.group_count() * l.region_size as u64 * 8;
            let bits = regions as f64 / l.record_count() as f64;
            assert!(bits < k as f64 * 1.075, "k {k}: {bits} bits a record");
            l.validate().unwrap();
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert_eq!(Layout::for_k(15), Err(FormatError::UnsupportedK(15)));
        assert_eq!(Layout::for_k(41), Err(FormatError::UnsupportedK(41)));
        assert!(Layout::new(20, 10, 4096).is_err());
        assert!(Layout::new(20, 25, 4096).is_err());
        assert!(Layout::new(20, 15, 4000).is_err());
        // A header's bucket bits are any byte.
        for bits in [0, 6, 49, 250, 255] {
            assert!(Layout::new(20, bits, 4096).is_err(), "bucket_bits {bits}");
        }
    }

    #[test]
    fn buckets_come_from_the_top_bits() {
        let l = Layout::for_k(20).unwrap();
        assert_eq!(l.bucket_bits, 15);
        assert_eq!(l.bucket_of_prefix(u64::MAX), (1 << 15) - 1);
        let mut h = [0u8; 32];
        h[0] = 0x80;
        assert_eq!(l.bucket_of(&h), 1 << 14);
        let last = l.group_count() - 1;
        assert!(l.buckets_in_group(last) <= l.buckets_per_group);
        assert_eq!(
            last * l.buckets_per_group as u64 + l.buckets_in_group(last) as u64,
            l.bucket_count()
        );
    }
}
