//! From a partition's records to region bytes. Once a partition's bucket
//! counts are known, its groups are *placed* in the slot stream (where each
//! starts depends on where the previous one ended) and every record is then
//! written straight into its slot: no sorted copy of the partition is made.

use super::key_shape::KeyShape;
use super::partition::Partitioning;
use super::placer::{place_by_runs, Dense, Placer, WINDOW_BUCKETS_LOG2};
use super::sink::{BufPool, Packed};
use super::PlotError;
use crate::aligned::AlignedBuf;
use crate::format::REGION_HEADER_SIZE;

/// Where each group of a partition starts in the global slot stream.
pub(crate) struct Placement {
    pub group_starts: Vec<u64>,
    /// The slot after the partition's last record.
    pub end: u64,
}

/// Group g starts at `max(g * slots_per_region, end of group g - 1)`.
pub(crate) fn place(
    parting: &Partitioning,
    index: u64,
    counts: &[u32],
    previous_end: u64,
) -> Placement {
    let layout = &parting.layout;
    let slots = layout.slots_per_region as u64;
    let bpg = layout.buckets_per_group as usize;
    let mut end = previous_end;
    let groups = parting.groups(index);
    let mut group_starts = Vec::with_capacity((groups.end - groups.start) as usize);
    for (i, g) in groups.enumerate() {
        let counts = &counts[i * bpg..((i + 1) * bpg).min(counts.len())];
        let n: u64 = counts.iter().map(|&c| c as u64).sum();
        let start = end.max(g * slots);
        group_starts.push(start);
        end = start + n;
    }
    Placement { group_starts, end }
}

/// Bytes past the last region that a slot write may touch: slots are
/// written as whole little-endian u64 words.
const WORD_SLACK: usize = 8;

/// Cursors come in whole windows of buckets (or the partition's bucket
/// count rounded up to a power of two, when that is less), so that a run of
/// a window's entries, whose bucket is `first + (entry >> shift)`, needs
/// one bounds check, not one per record (see [`SlotPlacer::put_entries`]).
const CURSOR_RUN: usize = 1 << WINDOW_BUCKETS_LOG2;

/// Writes a placed partition's records straight into their slots.
///
/// Each bucket has a cursor, its next free slot; [`SlotPlacer::put`] stores a
/// nonce there. Records of a bucket must come in ascending nonce order, and
/// [`SlotPlacer::finish`] checks that every bucket got exactly its count.
///
/// A cursor is the slot's bit position in the buffer (above
/// [`LEFT_BITS`]) and the slots left in its region (below), so that moving
/// to the next slot is an addition and only a move to the next region
/// needs more.
///
/// Slot writes are not bounds-checked one by one (the checks cost a sixth
/// of the placing time in `phase2_speed`); instead every cursor always
/// points at a slot of one of the partition's regions or of one more, the
/// *landing* region after them, which is in the buffer but never written
/// out. Cursors are made that way, advance within their region, and one
/// that would move past the landing region stays on its first slot. A
/// bucket that gets more records than it counted thus writes only within
/// the buffer, and [`SlotPlacer::finish`] refuses the partition.
pub(crate) struct SlotPlacer {
    index: u64,
    first_region: u64,
    regions: u64,
    buf: AlignedBuf,
    /// Bytes before this are zeroed, ready for slots; see
    /// [`SlotPlacer::open_buckets`].
    zeroed: usize,
    /// The bytes of `buf` the partition uses: its regions, the landing
    /// region and the slack of the last slot's word. A buffer from the pool
    /// may be longer.
    used: usize,
    /// One for each bucket, then as many padding cursors (pointing into
    /// the landing region) as make whole runs of [`CURSOR_RUN`].
    cursors: Vec<u64>,
    buckets: usize,
    slots: u64,
    region_size_log2: u32,
    area: usize,
    k: u32,
    mask: u64,
}

/// A slot as (region, slot within the region), counted from the first
/// slot of a partition's first region. Walked bucket by bucket rather than
/// divided out for each: a 64-bit division per bucket was most of
/// [`SlotPlacer::new`]'s and [`SlotPlacer::finish`]'s time (2^27 of each
/// at k = 32, about 2% of a plot's CPU time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotWalk {
    region: u64,
    j: u64,
}

impl SlotWalk {
    fn at(s: u64, slots: u64) -> SlotWalk {
        SlotWalk {
            region: s / slots,
            j: s % slots,
        }
    }

    /// Moves `n` slots on.
    #[inline(always)]
    fn advance(&mut self, n: u64, slots: u64) {
        self.j += n;
        while self.j >= slots {
            self.j -= slots;
            self.region += 1;
        }
    }
}

/// Bits of a cursor that count the slots left in its region (a region holds
/// at most 2^19 slots: 1 MiB of 16-bit slots).
const LEFT_BITS: u32 = 20;
const LEFT_MASK: u64 = (1 << LEFT_BITS) - 1;

impl SlotPlacer {
    /// Takes a buffer from `pool` for the partition's regions and points each
    /// bucket's cursor at its first slot; [`finish`](Self::finish) writes
    /// the region headers. `cursors` is memory to reuse.
    pub fn new(
        parting: &Partitioning,
        index: u64,
        counts: &[u32],
        placement: &Placement,
        pool: &BufPool,
        mut cursors: Vec<u64>,
    ) -> Result<SlotPlacer, PlotError> {
        let layout = &parting.layout;
        let slots = layout.slots_per_region as u64;
        assert!(slots > 1, "a region holds more than one slot");
        let region_size = layout.region_size as usize;
        let bpg = layout.buckets_per_group as usize;
        let groups = parting.groups(index);
        let is_last = groups.end == layout.group_count();
        let first_region = groups.start;
        let last_touched = (groups.end - 1).max(placement.end.saturating_sub(1) / slots);
        let end_region = if is_last {
            layout.region_count(placement.end)
        } else {
            last_touched + 1
        };
        let regions = end_region - first_region;
        let used = (regions as usize + 1) * region_size + WORD_SLACK;
        let buf = pool.take(used);
        let base = first_region * slots;

        let mut placer = SlotPlacer {
            index,
            first_region,
            regions,
            buf,
            zeroed: 0,
            used,
            cursors: Vec::new(),
            buckets: counts.len(),
            slots,
            region_size_log2: layout.region_size.trailing_zeros(),
            area: layout.slot_area_offset(),
            k: layout.k as u32,
            mask: (1u64 << layout.k) - 1,
        };
        let padded = counts
            .len()
            .next_multiple_of(counts.len().next_power_of_two().min(CURSOR_RUN));
        cursors.clear();
        cursors.reserve(padded);
        let mut last = SlotWalk { region: 0, j: 0 };
        for (i, &start) in placement.group_starts.iter().enumerate() {
            let group_counts = &counts[i * bpg..((i + 1) * bpg).min(counts.len())];
            let mut next = SlotWalk::at(start - base, slots);
            for (j, &c) in group_counts.iter().enumerate() {
                if c > u8::MAX as u32 {
                    return Err(PlotError::BucketOverflow {
                        bucket: parting.buckets(index).start + (i * bpg + j) as u64,
                        records: c,
                    });
                }
                cursors.push(placer.cursor_of(next));
                next.advance(c as u64, slots);
            }
            last = next;
        }
        // Slots only move forward, so the last bucket's end is the furthest
        // any cursor points: an empty bucket at the very end may start in
        // the landing region, none beyond it.
        assert!(
            last.region <= regions,
            "partition {index}'s slots reach past its regions"
        );
        assert_eq!(cursors.len(), counts.len(), "a cursor for every bucket");
        cursors.resize(padded, placer.landing_cursor());
        placer.cursors = cursors;
        Ok(placer)
    }

    /// The first slot of the landing region.
    fn landing_cursor(&self) -> u64 {
        self.cursor_of(SlotWalk {
            region: self.regions,
            j: 0,
        })
    }

    fn miscounted(&self) -> PlotError {
        PlotError::Inconsistent(format!(
            "partition {} received a different number of records than it counted",
            self.index
        ))
    }

    /// The cursor of a slot.
    #[inline(always)]
    fn cursor_of(&self, slot: SlotWalk) -> u64 {
        let byte = (slot.region << self.region_size_log2) + self.area as u64;
        ((byte * 8 + slot.j * self.k as u64) << LEFT_BITS) | (self.slots - slot.j)
    }

    /// Makes buckets `..end` ready to be filled by zeroing their bytes: a
    /// source fills its buckets in runs and opens each run before filling it,
    /// so that a run's bytes are zeroed while they are about to be used and
    /// still in cache. Buckets must be opened in order.
    pub fn open_buckets(&mut self, end: usize) {
        let upto = match self.cursors[..self.buckets].get(end) {
            // Through the byte that bucket `end` starts in: the last slot of
            // bucket `end - 1` may end there.
            Some(&cursor) => ((cursor >> LEFT_BITS) / 8 + 1) as usize,
            None => self.used,
        };
        if upto > self.zeroed {
            self.buf[self.zeroed..upto].fill(0);
            self.zeroed = upto;
        }
    }

    /// Opens every bucket at once.
    pub fn open_all(&mut self) {
        self.open_buckets(self.cursors.len());
    }

    /// Stores `nonce` in the next slot of bucket `local` (counted within
    /// the partition), which must be open.
    #[inline(always)]
    pub fn put(&mut self, local: usize, nonce: u64) {
        assert!(local < self.cursors.len(), "bucket {local} has no cursor");
        let nonce = nonce & self.mask;
        // SAFETY: checked just now.
        unsafe {
            match self.k {
                32 => self.put_unchecked::<4>(local, nonce),
                16 => self.put_unchecked::<2>(local, nonce),
                _ => self.put_unchecked::<0>(local, nonce),
            }
        }
    }

    /// Stores each of `entries` in the next slot of its bucket, `first +
    /// entry / 2^shift`, its nonce being `high | (entry % 2^shift)`: a run
    /// of [`Windows`](super::windows::Windows) entries. Every bucket that
    /// can be named must be within the cursors (padded to whole runs).
    #[inline(always)]
    pub fn put_entries(&mut self, first: usize, entries: &[u32], shift: u32, high: u64) {
        assert!(
            shift <= 32 && first + (1 << (32 - shift)) <= self.cursors.len(),
            "a run of entries names buckets {first}.. beyond the cursors"
        );
        // Masked once here so that every nonce is below 2^k.
        let (low_mask, high) = (((1u64 << shift) - 1) & self.mask, high & self.mask);
        // One loop for each kind of slot, so that the kind is chosen once
        // a run rather than once a record.
        // SAFETY: entry >> shift < 2^(32 - shift), checked above.
        unsafe {
            match self.k {
                32 => self.put_run::<4>(first, entries, shift, low_mask, high),
                16 => self.put_run::<2>(first, entries, shift, low_mask, high),
                _ => self.put_run::<0>(first, entries, shift, low_mask, high),
            }
        }
    }

    /// Stores each of `keys` (of `shape`, all of epoch `epoch`) in the next
    /// slot of its bucket, as [`put`](Self::put) would one by one. A key
    /// has the form of a run entry (the bucket above `shape.low_bits`, the
    /// nonce's low bits below) with buckets counted from 0, so where the
    /// cursors cover every bucket a key can name (every partition but a
    /// short last one) the run goes to [`put_entries`](Self::put_entries),
    /// with one check and one choice of slot kind for the run rather than
    /// for each key.
    #[inline(always)]
    pub fn put_keys(&mut self, keys: &[u32], shape: KeyShape, epoch: u64) {
        let shift = shape.low_bits;
        if shift <= 32 && 1u64 << (32 - shift) <= self.cursors.len() as u64 {
            self.put_entries(0, keys, shift, epoch << shift);
        } else {
            for &key in keys {
                self.put(shape.local(key), shape.nonce(key, epoch));
            }
        }
    }

    /// # Safety
    /// As [`put_unchecked`](Self::put_unchecked), for every entry's bucket.
    #[inline(always)]
    unsafe fn put_run<const SLOT_BYTES: usize>(
        &mut self,
        first: usize,
        entries: &[u32],
        shift: u32,
        low_mask: u64,
        high: u64,
    ) {
        for &entry in entries {
            let entry = entry as u64;
            self.put_unchecked::<SLOT_BYTES>(
                first + (entry >> shift) as usize,
                high | (entry & low_mask),
            );
        }
    }

    /// Stores `nonce`, which must be below 2^k (or it spills into the
    /// next slot), in the next slot of bucket `local`. `SLOT_BYTES` is
    /// k / 8 for slots of 2 or 4 whole bytes, else 0.
    ///
    /// # Safety
    /// `local` must be below `self.cursors.len()`.
    #[inline(always)]
    unsafe fn put_unchecked<const SLOT_BYTES: usize>(&mut self, local: usize, nonce: u64) {
        debug_assert!(SLOT_BYTES == 0 || SLOT_BYTES * 8 == self.k as usize);
        let cursor = *self.cursors.get_unchecked(local);
        let bit = cursor >> LEFT_BITS;
        let byte = (bit >> 3) as usize;
        debug_assert!(byte < self.zeroed, "bucket {local} is not open");
        debug_assert!(byte + 8 <= self.used, "cursor {cursor:#x} is out of bounds");
        // SAFETY: the cursor points at a slot of a region up to the landing
        // one (see the type's comment), whose word ends within `used`
        // (WORD_SLACK), and `used <= buf.len()`.
        let at = self.buf.as_mut_ptr().add(byte);
        match SLOT_BYTES {
            // Slots of whole bytes share them with no other slot, so they
            // are stored rather than ORed in: reading the word first was
            // an eighth of the placing time at k = 32 (and the kind of
            // slot is chosen once a run, not once a record).
            4 => at.cast::<u32>().write_unaligned((nonce as u32).to_le()),
            2 => at.cast::<u16>().write_unaligned((nonce as u16).to_le()),
            _ => {
                // k <= 40 bits shifted by at most 7 stay within one u64;
                // the bits around the slot are ORed with zeros and so kept.
                let word = at.cast::<u64>();
                let value = u64::from_le(word.read_unaligned()) | (nonce << (bit & 7));
                word.write_unaligned(value.to_le());
            }
        }
        *self.cursors.get_unchecked_mut(local) = if cursor & LEFT_MASK > 1 {
            cursor + ((self.k as u64) << LEFT_BITS) - 1
        } else {
            self.next_region(byte)
        };
    }

    /// Whether slots are whole 4-byte words (k = 32), which
    /// [`place_window_dense`](Self::place_window_dense) takes.
    pub fn whole_words(&self) -> bool {
        self.k == 32
    }

    /// Places a window of k = 32 records: buckets `first..` (a whole
    /// window of `2^(32 - shift)` cursors), `entries` records in all, in
    /// runs of entries as [`put_entries`](Self::put_entries) takes them.
    ///
    /// The records go into a plain array of 4-byte slots first, each
    /// bucket's cursor an index into it, and the array is then copied into
    /// the regions: the placing loop has no region to cross and no cursor
    /// to unpack, which is faster, the copy included. A cursor starts at most at the
    /// array's `top` and moves on once a record, and no more than
    /// `entries` records are put, so the array of `top + entries + 1`
    /// slots holds every write; a bucket that gets more or fewer records
    /// than it counted leaves its cursor where `finish` refuses it.
    pub fn place_window_dense<'a>(
        &mut self,
        first: usize,
        runs: impl Iterator<Item = (&'a [u32], u64)>,
        shift: u32,
        entries: usize,
        dense: &mut Dense,
    ) {
        assert_eq!(self.k, 32, "whole 4-byte slots");
        assert!(
            (1..=32).contains(&shift) && first + (1 << (32 - shift)) <= self.cursors.len(),
            "a window names buckets {first}.. beyond the cursors"
        );
        let window = &self.cursors[first..first + (1 << (32 - shift))];
        let s0 = self.slot_of(window[0]);
        dense.cursors.clear();
        dense
            .cursors
            .extend(window.iter().map(|&c| (self.slot_of(c) - s0) as u32));
        let top = dense.cursors.iter().copied().max().unwrap_or(0) as usize;
        dense.slots.clear();
        dense.slots.resize(top + entries + 1, 0);
        let (low_mask, mut budget) = ((1u64 << shift) - 1, entries);
        for (run, high) in runs {
            assert!(run.len() <= budget, "a window got more entries than it has");
            budget -= run.len();
            let (slots, cursors) = (dense.slots.as_mut_ptr(), dense.cursors.as_mut_ptr());
            for &entry in run {
                let entry = entry as u64;
                // SAFETY: entry >> shift < 2^(32 - shift), the cursors'
                // length; every cursor stays below `top + entries + 1`,
                // the slots' length (see above).
                unsafe {
                    let cursor = cursors.add((entry >> shift) as usize);
                    let d = *cursor;
                    debug_assert!((d as usize) < dense.slots.len());
                    *slots.add(d as usize) = (high | (entry & low_mask)) as u32;
                    *cursor = d + 1;
                }
            }
        }
        let real = self.buckets.saturating_sub(first).min(dense.cursors.len());
        let used = dense.cursors[..real].iter().copied().max().unwrap_or(0) as usize;
        self.copy_slots(s0, &dense.slots[..used]);
        for (i, &d) in dense.cursors.iter().enumerate() {
            let cursor = self.cursors[first + i];
            let moved = s0 + d as u64 - self.slot_of(cursor);
            self.cursors[first + i] = self.moved_on(cursor, moved);
        }
    }

    /// A cursor's slot, counted from the partition's first slot.
    fn slot_of(&self, cursor: u64) -> u64 {
        let region = ((cursor >> LEFT_BITS) / 8) >> self.region_size_log2;
        region * self.slots + self.slots - (cursor & LEFT_MASK)
    }

    /// `cursor` after `n` records, as [`put_unchecked`](Self::put_unchecked)
    /// would leave it.
    fn moved_on(&self, cursor: u64, n: u64) -> u64 {
        if n < cursor & LEFT_MASK {
            cursor + n * ((self.k as u64) << LEFT_BITS) - n
        } else {
            self.cursor_of(SlotWalk::at(self.slot_of(cursor) + n, self.slots))
        }
    }

    /// Copies 4-byte slots into the regions from slot `s` on (counted from
    /// the partition's first slot), through the landing region at most.
    fn copy_slots(&mut self, mut s: u64, mut from: &[u32]) {
        let end = (self.regions + 1) * self.slots;
        while !from.is_empty() && s < end {
            let (region, j) = (s / self.slots, s % self.slots);
            let n = (self.slots - j).min(end - s).min(from.len() as u64) as usize;
            let at = (region << self.region_size_log2) as usize + self.area + 4 * j as usize;
            for (to, &slot) in self.buf[at..at + 4 * n].chunks_exact_mut(4).zip(&from[..n]) {
                to.copy_from_slice(&slot.to_le_bytes());
            }
            from = &from[n..];
            s += n as u64;
        }
    }

    /// The region is full: on to the first slot of the next, and never
    /// past the landing region.
    #[inline(always)]
    fn next_region(&self, byte: usize) -> u64 {
        let next = (byte >> self.region_size_log2) + 1;
        let region = next.min(self.regions as usize);
        // Past the landing region, a cursor stays on its first slot with
        // one slot left, which no cursor made from a count has there:
        // `finish` sees it. (Arithmetic rather than a call: a call on this
        // rare path made the placing loop keep fewer values in registers.)
        let left = if next > region { 1 } else { self.slots };
        ((((region << self.region_size_log2) + self.area) as u64 * 8) << LEFT_BITS) | left
    }

    /// The packed regions, once every bucket got exactly its count of
    /// records, and the cursor memory for reuse.
    pub fn finish(
        mut self,
        parting: &Partitioning,
        counts: &[u32],
        placement: &Placement,
    ) -> Result<(Packed, Vec<u64>), PlotError> {
        let layout = &parting.layout;
        let bpg = layout.buckets_per_group as usize;
        let base = self.first_region * self.slots;
        for (i, &start) in placement.group_starts.iter().enumerate() {
            let mut next = SlotWalk::at(start - base, self.slots);
            let range = i * bpg..((i + 1) * bpg).min(counts.len());
            for (&c, &cursor) in counts[range.clone()].iter().zip(&self.cursors[range]) {
                next.advance(c as u64, self.slots);
                if cursor != self.cursor_of(next) {
                    return Err(self.miscounted());
                }
            }
        }
        let landing = self.landing_cursor();
        if self.cursors[self.buckets..].iter().any(|&c| c != landing) {
            return Err(self.miscounted());
        }
        // Regions past the last slot, then the headers: slot writes only
        // ever ORed zeros into header bytes.
        self.open_all();
        let region_size = layout.region_size as usize;
        let slots = self.slots;
        let groups = parting.groups(self.index);
        for (i, g) in groups.clone().enumerate() {
            let start = placement.group_starts[i];
            let group_counts = &counts[i * bpg..((i + 1) * bpg).min(counts.len())];
            let at = (g - self.first_region) as usize * region_size;
            let region = &mut self.buf[at..at + region_size];
            region[4..8].copy_from_slice(&((start - g * slots) as u32).to_le_bytes());
            for (j, &c) in group_counts.iter().enumerate() {
                region[REGION_HEADER_SIZE + j] = c as u8;
            }
        }
        if groups.end == layout.group_count() {
            // The last partition also heads the regions its spill reaches.
            for r in layout.group_count()..self.first_region + self.regions {
                let offset = placement.end.saturating_sub(r * slots);
                let at = (r - self.first_region) as usize * region_size;
                self.buf[at + 4..at + 8].copy_from_slice(&(offset as u32).to_le_bytes());
            }
        }
        let packed = Packed {
            index: self.index,
            first_region: self.first_region,
            regions: self.regions,
            buf: self.buf,
        };
        Ok((packed, self.cursors))
    }
}

impl Placer for SlotPlacer {
    #[inline(always)]
    fn open_buckets(&mut self, end: usize) {
        SlotPlacer::open_buckets(self, end)
    }

    #[inline(always)]
    fn put_entries(&mut self, first: usize, entries: &[u32], shift: u32, high: u64) {
        SlotPlacer::put_entries(self, first, entries, shift, high)
    }

    #[inline(always)]
    fn place_window<'a>(
        &mut self,
        first: usize,
        end: usize,
        runs: impl Iterator<Item = (&'a [u32], u64)>,
        shift: u32,
        entries: usize,
        dense: &mut Dense,
    ) {
        if self.whole_words() {
            SlotPlacer::open_buckets(self, end);
            self.place_window_dense(first, runs, shift, entries, dense);
        } else {
            place_by_runs(self, first, end, runs, shift);
        }
    }
}

#[cfg(test)]
mod tests;
