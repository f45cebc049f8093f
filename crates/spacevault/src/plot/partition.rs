//! Partitions: runs of whole groups, the unit the plotter sorts, packs and
//! writes. Whole groups keep packing independent between partitions except
//! for the spill into the next partition's first region.

use crate::format::Layout;
use std::ops::Range;

#[derive(Clone, Debug)]
pub(crate) struct Partitioning {
    pub layout: Layout,
    pub groups_per_part: u64,
    pub buckets_per_part: u64,
    pub count: u64,
    /// ceil(2^64 / buckets_per_part), to divide by multiplying.
    reciprocal: u64,
}

impl Partitioning {
    /// Partitions of about `target_records` records each.
    pub fn new(layout: Layout, target_records: u64) -> Partitioning {
        let records_per_group = ((layout.buckets_per_group as u64 * layout.record_count())
            >> layout.bucket_bits)
            .max(1);
        let groups_per_part = (target_records / records_per_group).clamp(1, layout.group_count());
        let buckets_per_part = groups_per_part * layout.buckets_per_group as u64;
        let count = layout.group_count().div_ceil(groups_per_part);
        let reciprocal = if buckets_per_part == 1 {
            0
        } else {
            ((1u128 << 64) / buckets_per_part as u128 + 1) as u64
        };
        Partitioning {
            layout,
            groups_per_part,
            buckets_per_part,
            count,
            reciprocal,
        }
    }

    /// (partition, bucket index within it) of a bucket.
    #[inline(always)]
    pub fn locate(&self, bucket: u64) -> (u64, u64) {
        self.locator().locate_bucket(bucket)
    }

    /// A copy of what [`locate`](Self::locate) needs, for hot loops to keep
    /// in registers.
    pub fn locator(&self) -> Locator {
        // With r = floor(2^64 / d) + 1, (b * r) >> 64 is b / d exactly
        // whenever b * d < 2^64: the error b * (r - 2^64 / d) / 2^64 is
        // then below 1 / d, too little to carry the quotient over.
        let buckets = self.layout.bucket_count() as u128;
        Locator {
            bucket_shift: 64 - self.layout.bucket_bits as u32,
            buckets_per_part: self.buckets_per_part,
            reciprocal: self.reciprocal,
            exact: buckets * self.buckets_per_part as u128 <= 1 << 64,
            inverse: 1.0 / self.buckets_per_part as f64,
            buckets_below_2_53: buckets <= 1 << 53,
        }
    }

    pub fn groups(&self, p: u64) -> Range<u64> {
        let start = p * self.groups_per_part;
        start..(start + self.groups_per_part).min(self.layout.group_count())
    }

    pub fn buckets(&self, p: u64) -> Range<u64> {
        let start = p * self.buckets_per_part;
        start..(start + self.buckets_per_part).min(self.layout.bucket_count())
    }

    /// Expected records in one partition.
    pub fn records_per_part(&self) -> u64 {
        // In 128 bits: at k = 40 a partition of 2^30 records has more than
        // 2^24 buckets.
        ((self.buckets_per_part as u128 * self.layout.record_count() as u128)
            >> self.layout.bucket_bits) as u64
    }
}

/// Records a partition holds at least: small enough that its slots stay in
/// L2 while they are filled.
pub(crate) const PARTITION_RECORDS: u64 = 1 << 17;

/// Partitions the hashing threads scatter into, at most. Each partition is
/// a stream of line writes into its own pages, and with more streams than
/// the TLB holds pages every line written missed it: at k = 30, 8201
/// partitions made the hashing phase twice as long as 1026 did. Larger
/// partitions fill more slowly (their slots spill from L2), which costs
/// the last phase a fraction of that.
const MAX_PARTITIONS: u64 = 1 << 10;

/// The in-memory plotter's partitions for `layout`: of [`PARTITION_RECORDS`]
/// records, or larger where that would make more than [`MAX_PARTITIONS`].
pub(crate) fn partitioning(layout: Layout) -> Partitioning {
    let records = PARTITION_RECORDS.max(layout.record_count() / MAX_PARTITIONS);
    Partitioning::new(layout, records)
}

/// The partition of a hash prefix, with the constants in a local value.
#[derive(Clone, Copy)]
pub(crate) struct Locator {
    bucket_shift: u32,
    buckets_per_part: u64,
    reciprocal: u64,
    /// Whether multiplying by the reciprocal is exact for every bucket.
    exact: bool,
    /// 1 / buckets_per_part, for [`Locator::locate_f64`] (which only the
    /// AVX-512 scatter uses).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    inverse: f64,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    buckets_below_2_53: bool,
}

impl Locator {
    /// (partition, bucket within it) of the hash whose first 8 bytes,
    /// big-endian, are `prefix`.
    #[inline(always)]
    pub fn locate(&self, prefix: u64) -> (u64, u64) {
        // A layout has at least 10 bucket bits, so the shift is below 64.
        self.locate_bucket(prefix >> self.bucket_shift)
    }

    #[inline(always)]
    pub fn locate_bucket(&self, bucket: u64) -> (u64, u64) {
        if self.buckets_per_part == 1 {
            return (bucket, 0);
        }
        let mut p = ((bucket as u128 * self.reciprocal as u128) >> 64) as u64;
        if !self.exact {
            // Can be one too many for large buckets; fix it.
            if p * self.buckets_per_part > bucket {
                p -= 1;
            } else if (p + 1) * self.buckets_per_part <= bucket {
                p += 1;
            }
        }
        (p, bucket - p * self.buckets_per_part)
    }

    /// Whether [`locate_f64`](Self::locate_f64) is exact for every bucket.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn divides_in_f64(&self) -> bool {
        self.buckets_below_2_53 && self.buckets_per_part > 1
    }

    /// (bucket shift, multiplier m, shift s, buckets_per_part) such that
    /// `bucket / buckets_per_part == (bucket * m) >> s` for every bucket,
    /// with bucket and m below 2^32: what SIMD lanes compute with one
    /// 32x32 -> 64-bit multiply (`vpmuludq`), where the floating-point
    /// division takes several conversions. None where the buckets take
    /// more than 31 bits (k > 36).
    ///
    /// With m = ceil(2^s / d) = (2^s + e) / d, 0 <= e < d, and b < 2^n:
    /// b * m / 2^s = b / d + b * e / (d * 2^s), and the error is below
    /// 2^(n - s) <= 1 / d once s >= n + ceil(log2 d), too little to carry
    /// the quotient over.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn multiply_constants(&self) -> Option<(u32, u64, u32, u64)> {
        let n = 64 - self.bucket_shift;
        let d = self.buckets_per_part;
        if d < 2 || n > 31 {
            return None;
        }
        let s = n + (64 - (d - 1).leading_zeros());
        let m = (1u64 << s).div_ceil(d);
        (m < 1 << 32).then_some((self.bucket_shift, m, s, d))
    }

    /// This locator with 1 / buckets_per_part off by `factor`, so that tests
    /// see the floating-point quotient corrected both ways.
    #[cfg(test)]
    pub fn with_inverse_nudged(mut self, factor: f64) -> Locator {
        self.inverse *= factor;
        self
    }

    /// (bucket shift, 1 / buckets_per_part, buckets_per_part) for SIMD
    /// versions of [`locate_f64`](Self::locate_f64).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn f64_constants(&self) -> (u32, f64, f64) {
        (
            self.bucket_shift,
            self.inverse,
            self.buckets_per_part as f64,
        )
    }

    /// [`locate`](Self::locate) in floating point, which SIMD lanes do
    /// (there is no vector 64x64-bit high multiply). Every value is an
    /// integer below 2^53, so each is exact in an f64 and so is
    /// `bucket - p * buckets_per_part`; the quotient's estimate is off by at
    /// most one, and the remainder's sign and size show which way.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn locate_f64(&self, prefix: u64) -> (u64, u64) {
        let bucket = (prefix >> self.bucket_shift) as f64;
        let d = self.buckets_per_part as f64;
        let mut p = (bucket * self.inverse).floor();
        let mut local = bucket - p * d;
        if local < 0.0 {
            p -= 1.0;
            local += d;
        }
        if local >= d {
            p += 1.0;
            local -= d;
        }
        (p as u64, local as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_divides_exactly() {
        for k in [16u8, 24, 33, 40] {
            let layout = Layout::for_k(k).unwrap();
            for target in [1u64, 1000, 1 << 17, 1 << 20] {
                let p = Partitioning::new(layout, target);
                let last = layout.bucket_count() - 1;
                let probes = [
                    0,
                    1,
                    p.buckets_per_part - 1,
                    p.buckets_per_part,
                    last,
                    last / 3,
                    last / 7 * 5,
                ];
                let locator = p.locator();
                let near_multiples = (1..4).flat_map(|m: u64| {
                    let b = last / 4 * m / p.buckets_per_part * p.buckets_per_part;
                    [b.saturating_sub(1), b, b + 1]
                });
                for b in probes
                    .into_iter()
                    .chain(near_multiples)
                    .filter(|&b| b <= last)
                {
                    let (part, local) = p.locate(b);
                    let prefix = b << (64 - layout.bucket_bits as u32);
                    assert_eq!(locator.locate(prefix), (part, local));
                    if locator.divides_in_f64() {
                        assert_eq!(
                            locator.locate_f64(prefix | 0xFF),
                            (part, local),
                            "bucket {b}"
                        );
                    }
                    assert_eq!(part, b / p.buckets_per_part);
                    assert_eq!(local, b % p.buckets_per_part);
                    assert!(p.buckets(part).contains(&b));
                }
                assert_eq!(p.groups(p.count - 1).end, layout.group_count());
            }
        }
    }

    #[test]
    fn locate_divides_every_bucket_of_a_small_plot() {
        let layout = Layout::for_k(18).unwrap();
        for target in [1u64, 300, 4096, 1 << 15] {
            let p = Partitioning::new(layout, target);
            let locator = p.locator();
            assert!(locator.exact || p.buckets_per_part == 1);
            for b in 0..layout.bucket_count() {
                let prefix = (b << (64 - layout.bucket_bits as u32)) | ((b * 7919) & 0xFF);
                let want = (b / p.buckets_per_part, b % p.buckets_per_part);
                assert_eq!(locator.locate(prefix), want, "bucket {b}");
                if locator.divides_in_f64() {
                    assert_eq!(locator.locate_f64(prefix), want, "bucket {b}");
                }
            }
        }
    }

    /// Up to k = 27 partitions of 2^17 records; beyond, the fewest that
    /// keep at most about a thousand.
    #[test]
    fn partitions_grow_only_past_a_thousand() {
        for k in 16..=40 {
            let layout = Layout::for_k(k).unwrap();
            let parting = partitioning(layout);
            if k <= 27 {
                let small = Partitioning::new(layout, PARTITION_RECORDS);
                assert_eq!(parting.groups_per_part, small.groups_per_part, "k = {k}");
            } else {
                // Whole groups round the count up a little.
                assert!(parting.count > MAX_PARTITIONS / 2, "k = {k}");
                assert!(parting.count <= MAX_PARTITIONS + 8, "k = {k}");
            }
            // Neither too few nor wrapped around (k = 40's partitions have
            // more than 2^24 buckets of 2^16 records).
            let (records, n) = (parting.records_per_part(), layout.record_count());
            assert!(records >= PARTITION_RECORDS / 2, "k = {k}");
            assert!(
                records >= n / (MAX_PARTITIONS + 8) && records / 2 <= n,
                "k = {k}"
            );
        }
    }
}
