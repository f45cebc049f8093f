//! A partition's records filed by window, for phase 2 of an external plot.
//!
//! A phase-2 partition of 2^21 to 2^23 records has 2^16 to 2^18 buckets,
//! whose slots (8 to 34 MiB) do not fit in L2: placing records straight
//! from the temp file's keys, which come in nonce order, would miss the
//! cache for nearly every record. They are first filed by *window*, a run
//! of 2^11 buckets whose slots and cursors fit in L2, and then placed a
//! window at a time.
//!
//! An entry is 4 bytes: the bucket within the window above the nonce's low
//! `32 - window bits` bits. Records arrive in ascending nonce order, so the
//! nonce's high bits change rarely (every 2^21 nonces at k = 32, about 32
//! records a window); each change is noted once for all windows, with where
//! each window's entries stood, as the epoch marks do for the temp file's
//! keys. Entries of 8 bytes (the whole nonce) made filing, the largest part
//! of phase 2's work, twice the memory traffic.

use super::key_shape::KeyShape;
use super::keys::for_each_run;
use super::placer::{Dense, Placer, WINDOW_BUCKETS_LOG2};

/// Records filed at once at most: the bucket range check is done once
/// for each such run.
const CHUNK: usize = 1024;

#[derive(Default)]
pub(crate) struct Windows {
    window_bits: u32,
    /// Nonce bits an entry keeps.
    low_bits: u32,
    count: usize,
    /// Room per window in `buf`.
    cap: usize,
    buf: Vec<u32>,
    /// Where each window's next entry goes in `buf`.
    ends: Vec<usize>,
    /// Entries every window still has room for, at least.
    room: usize,
    /// Buckets of the partition being filed.
    buckets: usize,
    /// The nonce's high bits in each run, and where in `buf` each window's
    /// entries of that run begin (`count` positions a run).
    highs: Vec<u64>,
    starts: Vec<usize>,
    /// Where a window of k = 32 records is placed before its regions.
    dense: Dense,
}

impl Windows {
    /// Forgets every record and makes room for about `expected` records of
    /// a partition with `buckets` buckets, keeping the memory.
    pub fn reset(&mut self, buckets: usize, expected: usize) {
        let local_bits = usize::BITS - buckets.saturating_sub(1).leading_zeros();
        self.window_bits = local_bits.min(WINDOW_BUCKETS_LOG2);
        self.low_bits = 32 - self.window_bits;
        self.count = buckets.div_ceil(1 << self.window_bits).max(1);
        let mean = expected as f64 / self.count as f64;
        self.cap = (mean + 6.0 * mean.sqrt()) as usize + CHUNK;
        if self.buf.len() < self.count * self.cap {
            self.buf.resize(self.count * self.cap, 0);
        }
        self.ends.clear();
        self.ends.extend((0..self.count).map(|w| w * self.cap));
        self.room = self.cap;
        self.buckets = buckets;
        self.highs.clear();
        self.starts.clear();
    }

    /// Files one thread's keys of the partition, as [`for_each_run`] hands
    /// them out (`array` then `extra`, `epochs` keys in each epoch from
    /// `first_epoch` on, ascending by nonce), and counts them by bucket.
    /// Returns the keys the epoch counts covered, or `None` when a key's
    /// bucket is beyond the partition's (the keys are damaged).
    ///
    /// One call takes a whole segment rather than a run: runs are about 32
    /// keys at k = 32, and checking and setting up each run on its own cost
    /// nearly as much as filing its keys.
    pub fn file_keys(
        &mut self,
        (array, extra): (&[u32], &[u32]),
        first_epoch: u64,
        epochs: impl Iterator<Item = u32>,
        shape: KeyShape,
    ) -> Option<usize> {
        assert!(
            shape.has_buckets() && shape.low_bits <= self.low_bits,
            "a run of keys spans one run of entries"
        );
        let mut in_range = true;
        let covered = for_each_run(array, extra, first_epoch, epochs, |keys, epoch| {
            in_range &= self.file_run(keys, shape, epoch);
        });
        in_range.then_some(covered)
    }

    /// Files one run of keys of `shape`, all of epoch `epoch`; stops at
    /// the first key whose bucket is beyond the partition's and returns
    /// false.
    #[inline(always)]
    fn file_run(&mut self, keys: &[u32], shape: KeyShape, epoch: u64) -> bool {
        let base = epoch << shape.low_bits;
        self.begin_run(base >> self.low_bits);
        let low_mask = (1u64 << self.low_bits) - 1;
        let base_low = (base & low_mask) as u32;
        let key_mask = (shape.epoch_len() - 1) as u32;
        let key_low = shape.low_bits;
        let (window_bits, low_bits) = (self.window_bits, self.low_bits as u64);
        let window_mask = (1u32 << window_bits) - 1;
        let buckets = self.buckets as u32;
        for chunk in keys.chunks(CHUNK) {
            self.make_room(chunk.len());
            self.room -= chunk.len();
            let (buf, ends) = (self.buf.as_mut_ptr(), self.ends.as_mut_ptr());
            for (i, &key) in chunk.iter().enumerate() {
                if i % 16 == 0 {
                    // The keys come from memory the cache has not seen.
                    crate::prefetch::for_read(chunk.as_ptr().wrapping_add(i + 512));
                }
                let local = key >> key_low;
                if local >= buckets {
                    return false;
                }
                let entry = ((((local & window_mask) as u64) << low_bits) as u32)
                    | base_low
                    | (key & key_mask);
                // SAFETY: local < buckets (checked just now), so its
                // window is below `count`, the length of `ends`;
                // `make_room` left each window room for the whole chunk.
                // (The end is read once: read again after the write through
                // `buf`, which the compiler cannot tell from `ends`, it cost
                // a load a key.)
                unsafe {
                    let end = ends.add((local >> window_bits) as usize);
                    let at = *end;
                    *buf.add(at) = entry;
                    crate::prefetch::for_write(buf.wrapping_add(at + 64));
                    *end = at + 1;
                }
            }
        }
        true
    }

    /// Files nonces, in ascending order, with their buckets within the
    /// partition, which the caller has checked are in range, and counts
    /// them.
    pub fn file_nonces(&mut self, nonces: &[u64], locals: &[u64]) {
        assert_eq!(nonces.len(), locals.len());
        let low_mask = (1u64 << self.low_bits) - 1;
        let window_mask = (1u64 << self.window_bits) - 1;
        for (nonces, locals) in nonces.chunks(CHUNK).zip(locals.chunks(CHUNK)) {
            self.make_room(nonces.len());
            self.room -= nonces.len();
            for (&x, &local) in nonces.iter().zip(locals) {
                self.begin_run(x >> self.low_bits);
                let entry = (((local & window_mask) << self.low_bits) | (x & low_mask)) as u32;
                let end = &mut self.ends[(local >> self.window_bits) as usize];
                self.buf[*end] = entry;
                *end += 1;
            }
        }
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.buf.capacity() * 4
            + (self.ends.capacity() + self.starts.capacity() + self.highs.capacity()) * 8
            + self.dense.bytes()
    }

    /// Buckets of the partition being filed.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// Adds the records filed to each bucket since `reset` to `counts`.
    ///
    /// Counted here, a window at a time, rather than while filing: a
    /// window's counts (8 KiB) stay in L1, where a count for each bucket
    /// of the partition kept while filing (a u16 each, 512 KiB at k = 32)
    /// missed L1 for nearly every record; in a profile of a k = 32 plot's
    /// phase 2 that increment had a third of the filing's samples.
    pub fn add_counts(&self, counts: &mut [u32]) {
        let counts = &mut counts[..self.buckets];
        for (w, window) in counts.chunks_mut(1 << self.window_bits).enumerate() {
            for &entry in &self.buf[w * self.cap..self.ends[w]] {
                // In u64: a partition of one bucket has windows of one
                // bucket, no window bits, and `low_bits` of 32, the whole
                // width of an entry.
                window[((entry as u64) >> self.low_bits) as usize] += 1;
            }
        }
    }

    /// Puts every record into `placer`, a window at a time, each window's
    /// buckets opened just before its records arrive (so their slots are
    /// zeroed while in cache), records of a window in the order filed.
    #[inline(always)]
    pub fn place(&mut self, placer: &mut impl Placer) {
        let runs = self.highs.len();
        let (count, low_bits) = (self.count, self.low_bits);
        let (buf, highs, starts, ends) = (&self.buf, &self.highs, &self.starts, &self.ends);
        for w in 0..count {
            let run = |r: usize| {
                let start = starts[r * count + w];
                let end = if r + 1 < runs {
                    starts[(r + 1) * count + w]
                } else {
                    ends[w]
                };
                (&buf[start..end], highs[r] << low_bits)
            };
            placer.place_window(
                w << self.window_bits,
                (w + 1) << self.window_bits,
                (0..runs).map(run),
                low_bits,
                ends[w] - w * self.cap,
                &mut self.dense,
            );
        }
    }

    /// Starts a run of entries whose nonces have high bits `high`.
    fn begin_run(&mut self, high: u64) {
        if self.highs.last() != Some(&high) {
            self.highs.push(high);
            self.starts.extend_from_slice(&self.ends);
        }
    }

    /// Makes sure every window has room for `n` more entries. Runs of keys
    /// are short (about 32 at k = 32), so the exact room is only worked out
    /// when the lower bound kept runs short.
    #[inline(always)]
    fn make_room(&mut self, n: usize) {
        if self.room < n {
            self.find_room(n);
        }
    }

    #[inline(never)]
    fn find_room(&mut self, n: usize) {
        let least = (0..self.count)
            .map(|w| (w + 1) * self.cap - self.ends[w])
            .min()
            .unwrap_or(0);
        self.room = least;
        if least >= n {
            return;
        }
        // Rare (6 sigma above the mean, or a short `expected`): move every
        // window into a larger layout.
        let cap = self.cap * 2 + n;
        let mut buf = vec![0u32; self.count * cap];
        for w in 0..self.count {
            let (from, len) = (w * self.cap, self.ends[w] - w * self.cap);
            buf[w * cap..w * cap + len].copy_from_slice(&self.buf[from..from + len]);
        }
        // Positions are kept by window: one at the very end of a window's
        // room still belongs to that window.
        let old = self.cap;
        for (i, s) in self.starts.iter_mut().enumerate() {
            let w = i % self.count;
            *s = w * cap + (*s - w * old);
        }
        for (w, e) in self.ends.iter_mut().enumerate() {
            *e = w * cap + (*e - w * old);
        }
        self.buf = buf;
        self.room += cap - old;
        self.cap = cap;
    }

    /// Every record in the order `place` gives them: (bucket, nonce).
    #[cfg(test)]
    fn records(&mut self) -> Vec<(usize, u64)> {
        let mut all = Vec::new();
        self.place(&mut all);
        all
    }
}

#[cfg(test)]
impl Placer for Vec<(usize, u64)> {
    fn open_buckets(&mut self, _: usize) {}

    fn put_entries(&mut self, first: usize, entries: &[u32], shift: u32, high: u64) {
        let low_mask = (1u64 << shift) - 1;
        self.extend(entries.iter().map(|&e| {
            let e = e as u64;
            (first + (e >> shift) as usize, high | (e & low_mask))
        }));
    }
}

/// Phase 2's CPU work on one partition of a k = 32 plot, without the
/// disk, printed by the `phases` benchmark
/// (`cargo bench -p spacevault --bench phases`).
pub(crate) fn phase2_speed() {
    use crate::format::Layout;
    use crate::plot::pack::{place, SlotPlacer};
    use crate::plot::partition::Partitioning;
    use crate::plot::sink::BufPool;
    use std::time::Instant;
    let layout = Layout::for_k(32).unwrap();
    let parting = Partitioning::new(layout, 1 << 23);
    let buckets = parting.buckets(0);
    let n_buckets = (buckets.end - buckets.start) as usize;
    let shape = KeyShape::with_buckets(&parting);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || crate::plot::xorshift(&mut rng);
    // One segment of keys with its counts epoch by epoch, as the temp
    // file gives them.
    let n = n_buckets * 32;
    let (mut keys, mut counts) = (Vec::with_capacity(n), Vec::new());
    let (mut x, first_epoch) = (0u64, 0u64);
    for _ in 0..n {
        x += 1 + next() % 1023;
        let epoch = (x >> shape.low_bits) as usize;
        counts.resize(epoch + 1, 0u32);
        counts[epoch] += 1;
        keys.push(shape.key(next() % n_buckets as u64, x));
    }
    let pool = BufPool::default();
    let mut windows = Windows::default();
    let mut cursors = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        windows.reset(n_buckets, n);
        let covered = windows.file_keys((&keys, &[]), first_epoch, counts.iter().copied(), shape);
        assert_eq!(covered, Some(n));
        let filed_only = t.elapsed();
        let mut counts = vec![0u32; n_buckets];
        windows.add_counts(&mut counts);
        let filed = t.elapsed();
        let placement = place(&parting, 0, &counts, 0);
        let t = Instant::now();
        let mut placer = SlotPlacer::new(
            &parting,
            0,
            &counts,
            &placement,
            &pool,
            std::mem::take(&mut cursors),
        )
        .unwrap();
        windows.place(&mut placer);
        let (packed, reused) = placer.finish(&parting, &counts, &placement).unwrap();
        let placed = t.elapsed();
        cursors = reused;
        pool.give(packed.buf);
        let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / n as f64;
        println!(
            "{n} records: filing {:.2} ns and counting {:.2} ns, placing {:.2} ns a record",
            ns(filed_only),
            ns(filed - filed_only),
            ns(placed)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The obvious way: every record, stably sorted by window.
    fn by_window(records: &[(usize, u64)], buckets: usize) -> Vec<(usize, u64)> {
        let local_bits = usize::BITS - buckets.saturating_sub(1).leading_zeros();
        let window_bits = local_bits.min(WINDOW_BUCKETS_LOG2);
        let mut sorted = records.to_vec();
        sorted.sort_by_key(|&(bucket, _)| bucket >> window_bits);
        sorted
    }

    fn counted(records: &[(usize, u64)], buckets: usize) -> Vec<u32> {
        let mut counts = vec![0u32; buckets];
        records.iter().for_each(|&(b, _)| counts[b] += 1);
        counts
    }

    /// Ascending nonces from `first`, with random gaps, each in the bucket
    /// its seed picks among `buckets`.
    fn records(first: u64, gaps: &[u16], seeds: &[u32], buckets: usize) -> Vec<(usize, u64)> {
        let mut x = first;
        gaps.iter()
            .zip(seeds)
            .map(|(&gap, &seed)| {
                x += gap as u64 + 1;
                (seed as usize % buckets, x)
            })
            .collect()
    }

    /// `windows` gives back every record in window order, and counts them.
    fn check_filed(
        windows: &mut Windows,
        records: &[(usize, u64)],
        buckets: usize,
    ) -> Result<(), TestCaseError> {
        let mut counts = vec![0u32; buckets];
        windows.add_counts(&mut counts);
        prop_assert_eq!(windows.records(), by_window(records, buckets));
        prop_assert_eq!(counts, counted(records, buckets));
        Ok(())
    }

    proptest! {
        #[test]
        fn filing_keys_keeps_every_record_in_window_order(
            local_bits in 1u32..15,
            first in 0u64..1 << 34,
            gaps in proptest::collection::vec(any::<u16>(), 0..3000),
            seeds in proptest::collection::vec(any::<u32>(), 3000),
            expected in 0usize..4000,
            split in 0usize..3500,
        ) {
            let buckets = (1usize << local_bits) - (seeds[0] as usize % (1 << local_bits)) / 2;
            let buckets = buckets.max(1);
            let records = records(first, &gaps, &seeds, buckets);
            let shape = KeyShape { low_bits: 32 - local_bits };
            let mut windows = Windows::default();
            windows.reset(buckets, expected);
            // One segment, with its keys' counts epoch by epoch, as the
            // temp file gives them, split between array and overflow.
            let keys: Vec<u32> = records.iter().map(|&(b, x)| shape.key(b as u64, x)).collect();
            let epoch_of = |x: u64| x >> shape.low_bits;
            let first_epoch = records.first().map_or(0, |r| epoch_of(r.1));
            let last_epoch = records.last().map_or(0, |r| epoch_of(r.1));
            let counts: Vec<u32> = (first_epoch..=last_epoch)
                .map(|e| records.iter().filter(|r| epoch_of(r.1) == e).count() as u32)
                .collect();
            let (array, extra) = keys.split_at(split.min(keys.len()));
            let covered = windows.file_keys((array, extra), first_epoch, counts.into_iter(), shape);
            prop_assert_eq!(covered, Some(keys.len()));
            check_filed(&mut windows, &records, buckets)?;
        }

        #[test]
        fn filing_nonces_keeps_every_record_in_window_order(
            buckets in 1usize..20000,
            first in 0u64..1 << 39,
            gaps in proptest::collection::vec(any::<u16>(), 0..3000),
            seeds in proptest::collection::vec(any::<u32>(), 3000),
            expected in 0usize..4000,
        ) {
            let records = records(first, &gaps, &seeds, buckets);
            let mut windows = Windows::default();
            windows.reset(buckets, expected);
            let nonces: Vec<u64> = records.iter().map(|r| r.1).collect();
            let locals: Vec<u64> = records.iter().map(|r| r.0 as u64).collect();
            windows.file_nonces(&nonces, &locals);
            check_filed(&mut windows, &records, buckets)?;
        }
    }

    /// k = 32 windows go through a plain array of slots
    /// (`SlotPlacer::place_window_dense`): they give the bytes that placing
    /// each record does, in a whole partition and a short last one (whose
    /// last window has padding cursors), and a bucket that gets a record
    /// more or fewer than it counted is refused.
    #[test]
    fn dense_windows_place_as_records_do() {
        use crate::format::Layout;
        use crate::plot::pack::{place, SlotPlacer};
        use crate::plot::partition::Partitioning;
        use crate::plot::sink::BufPool;
        use crate::plot::xorshift;
        let layout = Layout::for_k(32).unwrap();
        // 2418 buckets a partition (two windows, padding cursors in the
        // second) and 1802 in the last (one window, padded).
        let parting = Partitioning::new(layout, (1 << 16) + 12345);
        let shape = KeyShape::with_buckets(&parting);
        let mut rng = 0x5EED_0032_u64;
        for index in [0, parting.count - 1] {
            let buckets = parting.buckets(index);
            let n_buckets = (buckets.end - buckets.start) as usize;
            let n = n_buckets * 32;
            let mut x = xorshift(&mut rng) % (1 << 30);
            let records: Vec<(usize, u64)> = (0..n)
                .map(|_| {
                    x += 1 + xorshift(&mut rng) % 1023;
                    (xorshift(&mut rng) as usize % n_buckets, x)
                })
                .collect();
            let keys: Vec<u32> = records
                .iter()
                .map(|&(b, x)| shape.key(b as u64, x))
                .collect();
            let epoch_of = |x: u64| x >> shape.low_bits;
            let (first_epoch, last_epoch) = (epoch_of(records[0].1), epoch_of(x));
            let epochs: Vec<u32> = (first_epoch..=last_epoch)
                .map(|e| records.iter().filter(|r| epoch_of(r.1) == e).count() as u32)
                .collect();
            let mut windows = Windows::default();
            windows.reset(n_buckets, n);
            let covered = windows.file_keys((&keys, &[]), first_epoch, epochs.into_iter(), shape);
            assert_eq!(covered, Some(n));
            assert!(index > 0 || windows.count > 1, "several windows");
            let mut counts = vec![0u32; n_buckets];
            windows.add_counts(&mut counts);
            let pool = BufPool::default();
            let placed = |counts: &[u32], windows: &mut Windows| {
                let placement = place(&parting, index, counts, 0);
                let mut placer =
                    SlotPlacer::new(&parting, index, counts, &placement, &pool, Vec::new())
                        .unwrap();
                assert!(placer.whole_words());
                windows.place(&mut placer);
                placer.finish(&parting, counts, &placement).map(|(p, _)| p)
            };
            let placement = place(&parting, index, &counts, 0);
            let mut one_by_one =
                SlotPlacer::new(&parting, index, &counts, &placement, &pool, Vec::new()).unwrap();
            one_by_one.open_all();
            records.iter().for_each(|&(b, x)| one_by_one.put(b, x));
            let want = one_by_one.finish(&parting, &counts, &placement).unwrap().0;
            let got = placed(&counts, &mut windows).unwrap();
            let len = want.regions as usize * layout.region_size as usize;
            assert_eq!(got.regions, want.regions);
            assert_eq!(&got.buf[..len], &want.buf[..len], "partition {index}");
            for change in [1i64, -1] {
                let mut miscounted = counts.clone();
                let b = (0..n_buckets).find(|&b| counts[b] > 0).unwrap() + n_buckets / 2;
                miscounted[b % n_buckets] = (counts[b % n_buckets] as i64 + change) as u32;
                assert!(
                    placed(&miscounted, &mut windows).is_err(),
                    "partition {index}, a record {change} in a bucket"
                );
            }
        }
    }

    #[test]
    fn a_key_beyond_the_buckets_is_refused() {
        let shape = KeyShape { low_bits: 20 };
        let mut windows = Windows::default();
        windows.reset(100, 10);
        let file = |w: &mut Windows, keys: &[u32], extra: &[u32]| {
            let n = (keys.len() + extra.len()) as u32;
            w.file_keys((keys, extra), 0, [n].into_iter(), shape)
        };
        assert_eq!(file(&mut windows, &[shape.key(99, 5)], &[]), Some(1));
        assert_eq!(file(&mut windows, &[shape.key(100, 6)], &[]), None);
        assert_eq!(file(&mut windows, &[], &[shape.key(100, 6)]), None);
    }

    #[test]
    fn a_reset_forgets_the_last_partition() {
        let shape = KeyShape { low_bits: 16 };
        let mut windows = Windows::default();
        windows.reset(5000, 3);
        let two = [shape.key(4000, 1), shape.key(7, 2)];
        assert_eq!(
            windows.file_keys((&two, &[]), 3, [2].into_iter(), shape),
            Some(2)
        );
        windows.reset(300, 3);
        let one = [shape.key(299, 9)];
        assert_eq!(
            windows.file_keys((&one, &[]), 1, [1].into_iter(), shape),
            Some(1)
        );
        assert_eq!(windows.records(), vec![(299, (1 << 16) | 9)]);
        let mut counts = vec![0u32; 300];
        windows.add_counts(&mut counts);
        assert_eq!((counts[299], counts.iter().sum::<u32>()), (1, 1));
    }
}
