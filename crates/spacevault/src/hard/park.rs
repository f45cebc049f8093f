//! The compact encodings of a table-chain file's levels (FORMAT.md,
//! "Layout"), and the bit streams they are written in.
//!
//! A middle level's sorted values are cut into *parks* of
//! [`PARK_ENTRIES`], each an Elias–Fano sequence: the park's first value
//! at the level's full width, then each other value's offset from it
//! split in two, the low `fixed_bits` bits in fixed fields and the rest as a
//! unary bit vector. Sorted uniform values then take about two bits an
//! entry more than `fixed_bits`, near their entropy, and entry `j` of a park is
//! one fixed field and a count of ones, not a walk through the `j`
//! before it. Every park takes the same number of bytes (the plot's
//! largest park), so that entry `i` is one read at a place its number
//! gives.
//!
//! The top level is cut into *buckets* by the high bits of its prefixes,
//! about `2^BUCKET_ENTRIES_LOG2` entries each: an entry's remaining prefix
//! bits as the unary difference to the entry before, then its value at the
//! level's width. A lookup decodes a whole bucket, so a walk is what it
//! needs. Buckets differ in size, so an index gives where each starts.

/// Entries a park of a middle level holds (the last may hold fewer).
pub const PARK_ENTRIES: u64 = 1024;

/// Top entries a bucket holds on average: 2^8. A bucket is then one read
/// of about 2 KiB, and the index costs half a bit an entry.
pub const BUCKET_ENTRIES_LOG2: u8 = 8;

/// The most bytes a park may take: 32 an entry, where an honest park takes
/// about five.
pub const MAX_PARK_BYTES: u64 = 32 * PARK_ENTRIES;

/// The widest value a stream holds in one piece: with up to 7 bits of
/// offset it still fits the 128 bits a read loads.
pub const MAX_WIDTH: u32 = 121;

/// Writes bits most significant first.
pub struct BitWriter {
    bytes: Vec<u8>,
    acc: u128,
    pending: u32,
    written: u64,
}

impl BitWriter {
    pub fn new(capacity_bytes: usize) -> BitWriter {
        BitWriter {
            bytes: Vec::with_capacity(capacity_bytes),
            acc: 0,
            pending: 0,
            written: 0,
        }
    }

    /// The low `width` bits of `value` (which has no other bits set).
    pub fn push(&mut self, value: u128, width: u32) {
        debug_assert!(width <= MAX_WIDTH && (width == 0 || value >> width == 0));
        if width == 0 {
            return;
        }
        // acc holds fewer than 8 pending bits; 121 more still fit.
        self.acc = (self.acc << width) | value;
        self.pending += width;
        self.written += u64::from(width);
        while self.pending >= 8 {
            self.pending -= 8;
            self.bytes.push((self.acc >> self.pending) as u8);
        }
        self.acc &= (1u128 << self.pending) - 1;
    }

    /// `q` one bits, then a zero.
    pub fn push_unary(&mut self, mut q: u64) {
        while q >= 64 {
            self.push(u128::from(u64::MAX), 64);
            q -= 64;
        }
        self.push(((1u128 << q) - 1) << 1, q as u32 + 1);
    }

    /// Bits written so far.
    pub fn bits(&self) -> u64 {
        self.written
    }

    /// The bytes, the last padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        if self.pending > 0 {
            self.bytes.push((self.acc << (8 - self.pending)) as u8);
        }
        self.bytes
    }
}

/// Reads bits most significant first; every read past the end is `None`.
pub struct BitReader<'a> {
    bytes: &'a [u8],
    position: u64,
}

impl<'a> BitReader<'a> {
    pub fn new(bytes: &'a [u8]) -> BitReader<'a> {
        BitReader { bytes, position: 0 }
    }

    /// Bits read so far.
    pub fn position(&self) -> u64 {
        self.position
    }

    fn total(&self) -> u64 {
        8 * self.bytes.len() as u64
    }

    /// The 128 bits from the current byte on, zeros past the end.
    fn window(&self) -> u128 {
        let first = (self.position / 8) as usize;
        let mut buf = [0u8; 16];
        if first < self.bytes.len() {
            let n = (self.bytes.len() - first).min(16);
            buf[..n].copy_from_slice(&self.bytes[first..first + n]);
        }
        u128::from_be_bytes(buf)
    }

    pub fn read(&mut self, width: u32) -> Option<u128> {
        debug_assert!(width <= MAX_WIDTH);
        if width == 0 {
            return Some(0);
        }
        if self.position + u64::from(width) > self.total() {
            return None;
        }
        let shift = (self.position % 8) as u32;
        let value = (self.window() << shift) >> (128 - width);
        self.position += u64::from(width);
        Some(value)
    }

    /// Moves to bit `position`.
    pub fn seek(&mut self, position: u64) {
        self.position = position;
    }

    /// The position of the `m`-th one bit (from 0) at or after the
    /// current position; the reader moves past it.
    pub fn nth_one(&mut self, mut m: u64) -> Option<u64> {
        loop {
            if self.position >= self.total() {
                return None;
            }
            let shift = (self.position % 8) as u32;
            let mut bits = ((self.window() << shift) >> 64) as u64;
            let ones = u64::from(bits.count_ones());
            if m < ones {
                for _ in 0..m {
                    bits ^= 1 << (63 - bits.leading_zeros());
                }
                let at = self.position + u64::from(bits.leading_zeros());
                self.position = at + 1;
                return (at < self.total()).then_some(at);
            }
            m -= ones;
            self.position += 64;
        }
    }

    /// A unary number (ones ended by a zero) of at most `limit`.
    pub fn read_unary(&mut self, limit: u64) -> Option<u64> {
        let mut q = 0u64;
        loop {
            let shift = (self.position % 8) as u32;
            // 121 bits at least lie in the window past the offset; 64 are
            // looked at a time.
            let bits = ((self.window() << shift) >> 64) as u64;
            let ones = u64::from(bits.leading_ones());
            q += ones;
            if q > limit {
                return None;
            }
            if ones < 64 {
                self.position += ones + 1;
                return (self.position <= self.total()).then_some(q);
            }
            self.position += 64;
            if self.position >= self.total() {
                return None;
            }
        }
    }

    /// Whether every bit left is zero and fewer than 8 are left: what a
    /// stream padded to its last byte ends with.
    pub fn at_padding(&self) -> bool {
        let left = self.total() - self.position.min(self.total());
        left < 8 && (left == 0 || self.window() << (self.position % 8) == 0)
    }
}

/// What choosing a level's fixed bits needs of one park: its first and
/// last values and how many it holds. A plotter that streams a level
/// keeps these and never the level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParkSummary {
    pub first: u128,
    pub last: u128,
    pub n: u64,
}

impl ParkSummary {
    /// The summary of one park of sorted `values` (none when empty).
    pub fn of(values: &[u128]) -> Option<ParkSummary> {
        Some(ParkSummary {
            first: *values.first()?,
            last: *values.last()?,
            n: values.len() as u64,
        })
    }

    /// The bits the park takes with `fixed_bits` low bits.
    pub fn bits(&self, width: u32, fixed_bits: u32) -> u64 {
        let highs = u64::try_from((self.last - self.first) >> fixed_bits).unwrap_or(u64::MAX);
        let fields = (self.n - 1) * (u64::from(fixed_bits) + 1);
        u64::from(width)
            .saturating_add(fields)
            .saturating_add(highs)
    }
}

/// The bits one park of sorted `values` takes with `fixed_bits` low bits.
pub fn park_bits(values: &[u128], width: u32, fixed_bits: u32) -> u64 {
    ParkSummary::of(values).map_or(0, |p| p.bits(width, fixed_bits))
}

/// The number of low bits kept in fixed fields that makes a
/// level's largest park, which every park's size is, the smallest; among
/// equals, the fewest bits in all, then the smallest parameter.
pub fn fixed_bits_for(values: &[u128], width: u32) -> u32 {
    let parks: Vec<ParkSummary> = values
        .chunks(PARK_ENTRIES as usize)
        .filter_map(ParkSummary::of)
        .collect();
    fixed_bits_from(&parks, width)
}

/// [`fixed_bits_for`] from the level's park summaries.
pub fn fixed_bits_from(parks: &[ParkSummary], width: u32) -> u32 {
    let cost = |fixed_bits: u32| {
        parks
            .iter()
            .map(|park| park.bits(width, fixed_bits))
            .fold((0u64, 0u64), |(most, all), b| {
                (most.max(b), all.saturating_add(b))
            })
    };
    (0..=width.min(MAX_WIDTH))
        .min_by_key(|&fixed_bits| (cost(fixed_bits), fixed_bits))
        .unwrap_or(0)
}

/// The bytes every park of a level takes: its largest park's, and at
/// least its first value's.
pub fn park_bytes_from(parks: &[ParkSummary], width: u32, fixed_bits: u32) -> u64 {
    let largest = parks
        .iter()
        .map(|p| p.bits(width, fixed_bits))
        .max()
        .unwrap_or(0);
    largest.div_ceil(8).max(u64::from(width).div_ceil(8))
}

/// One park of sorted `values` as `park_bytes` bytes, zero padded.
pub fn park_bytes_of(values: &[u128], width: u32, fixed_bits: u32, park_bytes: usize) -> Vec<u8> {
    let mut w = BitWriter::new(park_bytes);
    encode_park(values, width, fixed_bits, &mut w);
    let mut bytes = w.finish();
    bytes.resize(park_bytes, 0);
    bytes
}

/// Writes one park of sorted `values` (at most [`PARK_ENTRIES`]): the
/// first at `width` bits; then each other value's offset from the first,
/// its low `fixed_bits` bits as fields in order; then their high parts, for
/// each value the difference to the high part before it (0 before the
/// first) in zero bits, then a one.
pub fn encode_park(values: &[u128], width: u32, fixed_bits: u32, out: &mut BitWriter) {
    let Some((&first, rest)) = values.split_first() else {
        return;
    };
    out.push(first, width);
    let mask = (1u128 << fixed_bits) - 1;
    for &v in rest {
        out.push((v - first) & mask, fixed_bits);
    }
    let mut previous = 0u128;
    for &v in rest {
        let high = (v - first) >> fixed_bits;
        let mut gap = high - previous;
        while gap >= 64 {
            out.push(0, 64);
            gap -= 64;
        }
        out.push(1, gap as u32 + 1);
        previous = high;
    }
}

/// A middle level's sorted values as a section of parks of `park_bytes`
/// each, with the fixed bits and the park size chosen for them.
pub struct EncodedLevel {
    pub bytes: Vec<u8>,
    pub fixed_bits: u32,
    pub park_bytes: u64,
}

pub fn encode_level(values: &[u128], width: u32) -> EncodedLevel {
    let parks: Vec<ParkSummary> = values
        .chunks(PARK_ENTRIES as usize)
        .filter_map(ParkSummary::of)
        .collect();
    let fixed_bits = fixed_bits_from(&parks, width);
    let park_bytes = park_bytes_from(&parks, width, fixed_bits);
    let mut bytes = Vec::with_capacity(parks.len() * park_bytes as usize);
    for park in values.chunks(PARK_ENTRIES as usize) {
        bytes.extend_from_slice(&park_bytes_of(park, width, fixed_bits, park_bytes as usize));
    }
    EncodedLevel {
        bytes,
        fixed_bits,
        park_bytes,
    }
}

/// Value `j` of a park of `n` values: its first value, plus the offset
/// whose low bits field `j - 1` holds and whose high part the place of
/// the `j`-th one in the high parts' bits gives.
pub fn park_value(
    park: &[u8],
    width: u32,
    fixed_bits: u32,
    n: u64,
    j: u64,
) -> Result<u128, &'static str> {
    const SHORT: &str = "its park ends before it";
    if j >= n || n > PARK_ENTRIES {
        return Err("it lies past its park");
    }
    let mut r = BitReader::new(park);
    let first = r.read(width).ok_or(SHORT)?;
    if j == 0 {
        return Ok(first);
    }
    let fields = u64::from(width);
    r.seek(fields + (j - 1) * u64::from(fixed_bits));
    let low = r.read(fixed_bits).ok_or(SHORT)?;
    let highs = fields + (n - 1) * u64::from(fixed_bits);
    r.seek(highs);
    let one = r.nth_one(j - 1).ok_or(SHORT)?;
    let high = u128::from(one - highs - (j - 1));
    let offset = high
        .checked_shl(fixed_bits)
        .filter(|o| o >> fixed_bits == high)
        .ok_or("its park's values overflow")?
        | low;
    first
        .checked_add(offset)
        .ok_or("its park's values overflow")
}

/// Writes one bucket of top entries, sorted by `(low, value)`: `low` the
/// prefix bits below the bucket's (fewer than 2^`low_bits`).
pub fn encode_bucket(entries: &[(u64, u128)], width: u32, out: &mut BitWriter) {
    let mut previous = 0u64;
    for &(low, value) in entries {
        out.push_unary(low - previous);
        out.push(value, width);
        previous = low;
    }
}

/// Writes the top level's section and its index from its entries
/// sorted by `(prefix, value)`, fed in order in as many calls as the
/// caller likes: bucket `b` holds the prefixes whose high `bucket_bits`
/// bits are `b`, and index value `b` is the bucket's first entry and its
/// first byte (u64 LE each), value `2^bucket_bits` the count and the
/// section's length.
pub struct TopEncoder {
    low_bits: u8,
    width: u32,
    buckets: u64,
    /// The bucket being gathered; its index value is written.
    current: u64,
    entries: Vec<(u64, u128)>,
    count: u64,
    bytes: u64,
    index: Vec<u8>,
}

impl TopEncoder {
    pub fn new(k: u8, bucket_bits: u8, width: u32) -> TopEncoder {
        let buckets = 1u64 << bucket_bits;
        let mut encoder = TopEncoder {
            low_bits: k - bucket_bits,
            width,
            buckets,
            current: 0,
            entries: Vec::new(),
            count: 0,
            bytes: 0,
            index: Vec::with_capacity(((buckets + 1) * 16) as usize),
        };
        encoder.open_bucket();
        encoder
    }

    fn open_bucket(&mut self) {
        self.index.extend_from_slice(&self.count.to_le_bytes());
        self.index.extend_from_slice(&self.bytes.to_le_bytes());
    }

    /// Encodes the gathered bucket onto `out` and opens the next.
    fn close_bucket(&mut self, out: &mut Vec<u8>) {
        let mut w = BitWriter::new(self.entries.len() * (self.width as usize + 3) / 8 + 1);
        encode_bucket(&self.entries, self.width, &mut w);
        let bytes = w.finish();
        self.bytes += bytes.len() as u64;
        out.extend_from_slice(&bytes);
        self.entries.clear();
        self.current += 1;
        self.open_bucket();
    }

    /// Takes the next entries, in order after every entry before; appends
    /// the bytes of the buckets they close to `out`.
    pub fn push(&mut self, top: &[(u64, u128)], out: &mut Vec<u8>) {
        let mask = (1u64 << self.low_bits) - 1;
        for &(prefix, value) in top {
            let bucket = prefix >> self.low_bits;
            assert!(
                bucket >= self.current && bucket < self.buckets,
                "top entries sorted by prefix, below 2^k"
            );
            while self.current < bucket {
                self.close_bucket(out);
            }
            self.entries.push((prefix & mask, value));
            self.count += 1;
        }
    }

    /// Closes every bucket left, appending their bytes to `out`; returns
    /// the index.
    pub fn finish(mut self, out: &mut Vec<u8>) -> Vec<u8> {
        while self.current < self.buckets {
            self.close_bucket(out);
        }
        self.index
    }
}

/// The top level's section and its index, from its entries sorted by
/// `(prefix, value)`, in one piece: [`TopEncoder`] fed once.
pub fn encode_top(top: &[(u64, u128)], k: u8, bucket_bits: u8, width: u32) -> (Vec<u8>, Vec<u8>) {
    let mut encoder = TopEncoder::new(k, bucket_bits, width);
    let mut section = Vec::with_capacity(top.len() * (width as usize + 3) / 8);
    encoder.push(top, &mut section);
    let index = encoder.finish(&mut section);
    (section, index)
}

/// The most bytes a bucket of `count` entries can take: each entry's
/// value and the bit that ends its prefix step, and the steps' other bits,
/// fewer than the `2^low_bits` prefixes a bucket spans.
pub fn bucket_bytes_bound(count: u64, width: u32, low_bits: u8) -> u64 {
    (count * (u64::from(width) + 1) + (1u64 << low_bits)).div_ceil(8)
}

/// The `count` entries of one bucket's bytes, `(low prefix, value)`; the
/// bytes must hold exactly them and zero padding.
pub fn decode_bucket(
    bytes: &[u8],
    count: u64,
    low_bits: u8,
    width: u32,
) -> Result<Vec<(u64, u128)>, &'static str> {
    const SHORT: &str = "its bucket ends before its entries do";
    let range = 1u64 << low_bits;
    let mut r = BitReader::new(bytes);
    let mut low = 0u64;
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        low += r.read_unary(range).ok_or(SHORT)?;
        if low >= range {
            return Err("its prefix lies past its bucket");
        }
        out.push((low, r.read(width).ok_or(SHORT)?));
    }
    if !r.at_padding() {
        return Err("its bucket holds more than its entries");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bit `i` of `bytes`, most significant first: the packing read one
    /// bit at a time.
    fn bit(bytes: &[u8], i: u64) -> u8 {
        bytes[(i / 8) as usize] >> (7 - i % 8) & 1
    }

    #[test]
    fn a_park_is_its_first_value_then_low_fields_then_high_parts() {
        // 5 at 8 bits; offsets 9 and 11 with fixed_bits 2: lows "01" and "11";
        // highs 2 and 2: "001" (two zeros, a one), then "1".
        let mut w = BitWriter::new(0);
        encode_park(&[5, 14, 16], 8, 2, &mut w);
        assert_eq!(w.bits(), park_bits(&[5, 14, 16], 8, 2));
        assert_eq!(w.bits(), 8 + 4 + 4);
        let park = w.finish();
        assert_eq!(park, [0b0000_0101, 0b0111_0011]);
        let values: Vec<u128> = (0..3)
            .map(|j| park_value(&park, 8, 2, 3, j).unwrap())
            .collect();
        assert_eq!(values, [5, 14, 16]);
        assert_eq!(park_value(&park, 8, 2, 3, 3), Err("it lies past its park"));
        // A park said to hold more values than its bits do.
        assert_eq!(
            park_value(&park, 8, 2, 5, 4),
            Err("its park ends before it")
        );
    }

    #[test]
    fn high_parts_far_apart_take_zero_bits_past_a_word() {
        let values = [0u128, 1, 300, 301, 10_000];
        let mut w = BitWriter::new(0);
        encode_park(&values, 16, 0, &mut w);
        assert_eq!(w.bits(), park_bits(&values, 16, 0));
        let park = w.finish();
        for (j, &v) in values.iter().enumerate() {
            assert_eq!(park_value(&park, 16, 0, 5, j as u64), Ok(v));
        }
    }

    #[test]
    fn a_bucket_is_unary_prefix_steps_then_values() {
        // Lows 0, 0, 3 with 4-bit values 9, 10, 1.
        let mut w = BitWriter::new(0);
        encode_bucket(&[(0, 9), (0, 10), (3, 1)], 4, &mut w);
        let bytes = w.finish();
        // "0 1001" "0 1010" "1110 0001": 18 bits, then padding.
        let expected = "010010101011100001000000";
        let got: String = (0..24).map(|i| char::from(b'0' + bit(&bytes, i))).collect();
        assert_eq!(got, expected);
        assert_eq!(
            decode_bucket(&bytes, 3, 8, 4).unwrap(),
            [(0, 9), (0, 10), (3, 1)]
        );
        // One entry fewer leaves bits that are not padding; two more run
        // out (one more reads the padding as a step of 0 and a value of 0:
        // the count is the index's to give); a prefix past the bucket's
        // range is refused.
        assert!(decode_bucket(&bytes, 2, 8, 4).is_err());
        assert!(decode_bucket(&bytes, 5, 8, 4).is_err());
        assert!(decode_bucket(&bytes, 3, 1, 4).is_err());
    }

    #[test]
    fn unary_runs_longer_than_a_word_round_trip() {
        let mut w = BitWriter::new(0);
        for q in [0u64, 1, 63, 64, 65, 200] {
            w.push_unary(q);
            w.push(1, 1);
        }
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        for q in [0u64, 1, 63, 64, 65, 200] {
            assert_eq!(r.read_unary(1000), Some(q));
            assert_eq!(r.read(1), Some(1));
        }
        assert!(r.at_padding());
        // A run of ones to the end is no number; a limit is kept.
        assert_eq!(BitReader::new(&[0xFF; 20]).read_unary(1000), None);
        assert_eq!(BitReader::new(&[0xFF, 0]).read_unary(3), None);
    }

    #[test]
    fn the_fixed_bits_leave_about_one_high_bit_an_entry() {
        // Differences of about 1000: offsets in a park of 1024 span about
        // 2^20, so 9 or 10 low bits leave about one high bit an entry.
        let values: Vec<u128> = (0..5000u128).map(|i| i * 1000 + (i * 7919) % 500).collect();
        let fixed_bits = fixed_bits_for(&values, 40);
        assert!((9..=10).contains(&fixed_bits), "{fixed_bits}");
        let slow = (0..=40)
            .min_by_key(|&r| {
                let parks = values.chunks(PARK_ENTRIES as usize);
                let bits: Vec<u64> = parks.map(|p| park_bits(p, 40, r)).collect();
                (bits.iter().max().copied(), bits.iter().sum::<u64>())
            })
            .unwrap();
        assert_eq!(fixed_bits, slow);
        assert_eq!(fixed_bits_for(&[7], 40), 0);
    }

    proptest! {
        #[test]
        fn levels_round_trip(
            mut values in proptest::collection::vec(0u128..1 << 60, 0..3000),
        ) {
            values.sort_unstable();
            let width = 60;
            let level = encode_level(&values, width);
            let parks = level.bytes.len() as u64 / level.park_bytes.max(1);
            prop_assert_eq!(parks, (values.len() as u64).div_ceil(PARK_ENTRIES));
            for (i, &v) in values.iter().enumerate() {
                let p = i as u64 / PARK_ENTRIES;
                let start = (p * level.park_bytes) as usize;
                let park = &level.bytes[start..start + level.park_bytes as usize];
                let n = PARK_ENTRIES.min(values.len() as u64 - p * PARK_ENTRIES);
                prop_assert_eq!(
                    park_value(park, width, level.fixed_bits, n, i as u64 % PARK_ENTRIES),
                    Ok(v)
                );
            }
        }

        #[test]
        fn damaged_parks_and_buckets_are_errors_not_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            width in 0u32..=MAX_WIDTH,
            fixed_bits in 0u32..=MAX_WIDTH,
            n in 0u64..2000,
            j in 0u64..2000,
            count in 0u64..100,
            low_bits in 0u8..40,
        ) {
            let _ = park_value(&bytes, width, fixed_bits, n, j);
            let _ = decode_bucket(&bytes, count, low_bits, width);
        }
    }
}
