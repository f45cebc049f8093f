//! Four-byte sort keys and the epoch marks that complete them.
//!
//! A key holds the bucket within its partition on top and the low bits of
//! the nonce below. The nonce's high bits (its *epoch*) are not stored: each
//! hashing thread notes, at every epoch boundary, how many keys each
//! partition has, so a key's position says its epoch. A shape with no bucket
//! bits stores only the low 32 bits of the nonce; its bucket is found again
//! by hashing.

use super::key_shape::KeyShape;
use super::partition::{Locator, Partitioning};
use super::scatter::Scatter;
#[cfg(target_arch = "x86_64")]
use super::simd::avx512;
use super::simd::Simd;
use super::{stop_requested, PlotError, Progress};
use crate::aligned::{MappedBuf, Pages};
use crate::kernel::Kernel;
use std::ops::Range;

/// How many keys each partition got in each epoch, for one thread's keys
/// (no epochs before the thread has hashed).
///
/// Stored by partition, so that reading one partition's counts (phase 2,
/// the temp writer) is a sequential read; stored by epoch, each partition's
/// counts were a cache miss an epoch apart. Taken by epoch instead, the
/// marks stay cheap: each partition's line of marks is written 16 epochs in
/// a row, so all those lines (32 KiB at 512 partitions) stay in cache, and
/// huge pages keep the pages they lie in (one a partition) from missing
/// the TLB.
#[derive(Default)]
pub(crate) struct EpochMarks {
    first: u64,
    epochs: usize,
    /// Partition p's counts at `p * (epochs + 1)`, `epochs` of them. While
    /// hashing, each partition's key count at every epoch's start and at
    /// the end, turned into counts by `finish`.
    marks: Option<MappedBuf<u32>>,
    len: usize,
}

impl EpochMarks {
    /// The first epoch and partition p's key count in each epoch from it.
    pub fn counts(&self, p: u64) -> (u64, impl Iterator<Item = u32> + '_) {
        let start = (p as usize * (self.epochs + 1)).min(self.len);
        let counts = self.marks()[start..][..self.epochs].iter().copied();
        (self.first, counts)
    }

    fn marks(&self) -> &[u32] {
        self.marks.as_ref().map_or(&[], |m| &m[..self.len])
    }

    /// Makes room for `epochs` epochs from `first` of `parts` partitions,
    /// keeping the memory where it is large enough.
    fn begin(&mut self, first: u64, epochs: usize, parts: usize) -> Result<(), PlotError> {
        self.first = first;
        self.epochs = epochs;
        self.len = parts * (epochs + 1);
        if self.marks.as_ref().is_none_or(|m| m.len() < self.len) {
            self.marks = None;
            let buf = MappedBuf::zeroed(self.len.max(1), Pages::Huge)
                .map_err(|e| PlotError::io("allocating epoch marks", e))?;
            self.marks = Some(buf);
        }
        Ok(())
    }

    /// Notes each partition's key count at mark `e` (an epoch's start, or
    /// `epochs` for the end).
    fn mark(&mut self, e: usize, scatter: &Scatter<u32>) {
        let stride = self.epochs + 1;
        let marks = self.marks.as_mut().expect("begun");
        for (p, pushed) in scatter.pushed().enumerate() {
            marks[p * stride + e] = pushed;
        }
    }

    /// Turns the marks into counts. Wrapping: after an interrupted run the
    /// marks of the epochs not reached are stale, and unused.
    fn finish(&mut self) {
        let (epochs, len) = (self.epochs, self.len);
        let Some(marks) = self.marks.as_mut() else {
            return;
        };
        for marks in marks[..len].chunks_mut(epochs + 1) {
            for e in 0..epochs {
                marks[e] = marks[e + 1].wrapping_sub(marks[e]);
            }
        }
    }
}

/// Nonces hashed at once: the block's buffers stay in L1.
const BLOCK: usize = 4096;

/// Hashes the nonces of `range` into `scatter` as keys of `shape`, a block
/// at a time, and marks the epochs. Stops early when asked to stop.
pub(crate) fn hash_range(
    kernel: &Kernel,
    parting: &Partitioning,
    shape: KeyShape,
    range: Range<u64>,
    scatter: &mut Scatter<u32>,
    marks: &mut EpochMarks,
    progress: &dyn Progress,
) -> Result<(), PlotError> {
    let first_epoch = range.start >> shape.low_bits;
    let epochs = match range.end.checked_sub(1) {
        Some(last) if !range.is_empty() => (last >> shape.low_bits) - first_epoch + 1,
        _ => 0,
    };
    marks.begin(first_epoch, epochs as usize, scatter.parts())?;
    let mut marked = None;
    let locator = parting.locator();
    let mut prefixes = vec![0u64; BLOCK];
    let (mut parts, mut keys) = (vec![0u32; BLOCK], vec![0u32; BLOCK]);
    let simd = Simd::of(kernel);
    let mut x = range.start;
    // Reported in batches: a progress bar's count takes a clock reading
    // and atomics each time, 0.1 s of CPU over a k = 32 plot's 2 M blocks.
    let mut unreported = 0u64;
    while x < range.end && !stop_requested() {
        // Stop at epoch boundaries so a block never spans two.
        let epoch = x >> shape.low_bits;
        if marked != Some(epoch) {
            marks.mark((epoch - first_epoch) as usize, scatter);
            marked = Some(epoch);
        }
        let epoch_end = (epoch + 1) << shape.low_bits;
        let len = (range.end.min(epoch_end) - x).min(prefixes.len() as u64) as usize;
        let (prefixes, parts, keys) = (&mut prefixes[..len], &mut parts[..len], &mut keys[..len]);
        let pushed = match simd {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 { .. } => hash_locate_and_push(
                kernel, simd, &locator, shape, x, prefixes, parts, keys, scatter,
            ),
            Simd::Plain => {
                hash_and_locate(kernel, simd, &locator, shape, x, prefixes, parts, keys);
                0
            }
        };
        scatter.push_block(&parts[pushed..], &keys[pushed..], simd);
        x += len as u64;
        unreported += len as u64;
        if unreported >= PROGRESS_BATCH {
            progress.advance(std::mem::take(&mut unreported));
        }
    }
    progress.advance(unreported);
    scatter.finish();
    marks.mark(epochs as usize, scatter);
    marks.finish();
    Ok(())
}

/// Records hashed between progress reports: about half a millisecond of
/// one core's hashing, far finer than a progress bar draws.
const PROGRESS_BATCH: u64 = 1 << 16;

/// [`hash_and_locate`], pushing as many of the records as it can to
/// `scatter` in the same loop (AVX-512 and buckets of at most 31 bits);
/// returns how many it pushed, in order from the first.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hash_locate_and_push(
    kernel: &Kernel,
    simd: Simd,
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    prefixes: &mut [u64],
    parts: &mut [u32],
    keys: &mut [u32],
    scatter: &mut Scatter<u32>,
) -> usize {
    match (simd, locator.multiply_constants()) {
        (Simd::Avx512 { .. }, Some(constants)) => {
            let done = parts.len().min(keys.len()) / 16 * 16;
            // SAFETY: Simd::Avx512 stands for AVX-512F and VL, and the
            // kernel runs its AVX-512 backend.
            let pushed = unsafe {
                avx512::hash_locate_and_push(
                    kernel,
                    constants,
                    shape,
                    first,
                    &mut parts[..done],
                    &mut keys[..done],
                    &mut scatter.line_pusher(),
                )
            };
            let tail = &mut (&mut prefixes[..], &mut parts[..], &mut keys[..]);
            hash_then_locate_from(done, kernel, simd, locator, shape, first, tail);
            pushed
        }
        _ => {
            hash_and_locate(kernel, simd, locator, shape, first, prefixes, parts, keys);
            0
        }
    }
}

/// The partition and key of each of a block of nonces from `first` on,
/// hashing them first (`prefixes` is room for their hash prefixes).
///
/// With AVX-512 and buckets of at most 31 bits (k <= 36) the bucket is in
/// the hash's first word, so only that word is computed
/// ([`Kernel::top_words`], into `parts`), and the lookup then takes 16
/// words a register. Otherwise the prefixes go to [`locate_block`], which
/// is also the plain twin the tests hold this path to. This way is faster
/// than prefixes then [`locate_block`], and than the lookup fused into the
/// hash loop, which then runs short of registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hash_and_locate(
    kernel: &Kernel,
    simd: Simd,
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    prefixes: &mut [u64],
    parts: &mut [u32],
    keys: &mut [u32],
) {
    let done = match (simd, locator.multiply_constants()) {
        #[cfg(target_arch = "x86_64")]
        (Simd::Avx512 { .. }, Some(constants)) => {
            let done = parts.len().min(keys.len()) / 16 * 16;
            kernel.top_words(first, &mut parts[..done]);
            // SAFETY: Simd::Avx512 stands for AVX-512F.
            unsafe {
                avx512::locate_top_words(
                    constants,
                    shape,
                    first,
                    &mut parts[..done],
                    &mut keys[..done],
                )
            };
            done
        }
        _ => 0,
    };
    let block = &mut (&mut prefixes[..], &mut parts[..], &mut keys[..]);
    hash_then_locate_from(done, kernel, simd, locator, shape, first, block);
}

/// A block's hash prefixes, partitions and keys.
type BlockBuffers<'a> = (&'a mut [u64], &'a mut [u32], &'a mut [u32]);

/// The block's nonces from index `done` on, hashed to prefixes and then
/// located: what the AVX-512 loops leave (fewer than 16), or all of them.
#[inline(always)]
fn hash_then_locate_from(
    done: usize,
    kernel: &Kernel,
    simd: Simd,
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    (prefixes, parts, keys): &mut BlockBuffers,
) {
    let rest = first + done as u64;
    let prefixes = &mut prefixes[done..];
    kernel.prefixes(rest, prefixes);
    locate_block(
        locator,
        shape,
        rest,
        prefixes,
        &mut parts[done..],
        &mut keys[done..],
        simd,
    );
}

/// The partition and key of each of a block of nonces from `first` on,
/// given their hash prefixes. Locating first and scattering after, each in
/// a function of its own, keeps each loop small enough for its values to
/// stay in registers. With AVX-512 the division is done in floating point
/// ([`Locator::locate_f64`]), eight lanes at a time. Up to k = 36
/// [`hash_and_locate`] takes this way only for the last few nonces of a
/// range that are not a multiple of 16.
#[inline(never)]
fn locate_block(
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    prefixes: &[u64],
    parts: &mut [u32],
    keys: &mut [u32],
    simd: Simd,
) {
    match simd {
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 { dq: true } if locator.divides_in_f64() => {
            // SAFETY: Simd::Avx512 { dq: true } stands for AVX-512F and DQ.
            unsafe { avx512::locate_block(locator, shape, first, prefixes, parts, keys) };
        }
        _ => {
            let locator = *locator;
            let located = parts.iter_mut().zip(keys.iter_mut());
            for ((part, key), (&prefix, nonce)) in located.zip(prefixes.iter().zip(first..)) {
                let (p, local) = locator.locate(prefix);
                (*part, *key) = (p as u32, shape.key(local, nonce));
            }
        }
    }
}

/// Calls `each(keys, epoch)` for runs of the keys of `array` then `extra`
/// (one partition's keys from one thread, in the order pushed), every key
/// of a run in `epoch`; `counts` gives how many keys belong to each epoch
/// from `first_epoch` on. Returns the number of keys the counts covered.
/// Handing out runs lets the caller's loop over a run keep its state in
/// registers.
#[inline(always)]
pub(crate) fn for_each_run(
    array: &[u32],
    extra: &[u32],
    first_epoch: u64,
    counts: impl Iterator<Item = u32>,
    mut each: impl FnMut(&[u32], u64),
) -> usize {
    let mut start = 0usize;
    for (epoch, count) in (first_epoch..).zip(counts) {
        let end = start + count as usize;
        let in_array = start.min(array.len())..end.min(array.len());
        if !in_array.is_empty() {
            each(&array[in_array], epoch);
        }
        if end > array.len() {
            let from = start.max(array.len()) - array.len();
            let to = (end - array.len()).min(extra.len());
            if from < to {
                each(&extra[from..to], epoch);
            }
        }
        start = end;
    }
    start
}

/// The keys of one range of nonces, scattered by partition, and where each
/// epoch starts in every partition: what [`hash_range`] leaves.
pub(crate) struct RangeKeys {
    pub scatter: Scatter<u32>,
    pub marks: EpochMarks,
}

impl RangeKeys {
    /// Partition p's keys as they lie in memory after hashing: `(array,
    /// overflow, first epoch, keys in each epoch)`, what [`for_each_run`]
    /// takes. The overflow (rare) is collected into a vector.
    pub fn partition(&self, p: u64) -> (&[u32], Vec<u32>, u64, impl Iterator<Item = u32> + '_) {
        let (array, extra) = self.scatter.records(p);
        let (first_epoch, counts) = self.marks.counts(p);
        (array, extra.collect(), first_epoch, counts)
    }

    /// Calls `each(keys, epoch)` for runs of partition p's keys, in the
    /// order pushed: by ascending nonce.
    #[inline(always)]
    pub fn for_each_run(&self, p: u64, each: impl FnMut(&[u32], u64)) {
        let (array, extra, first, counts) = self.partition(p);
        for_each_run(array, &extra, first, counts, each);
    }
}

/// Calls `each` for every key, fetching the keys 2 KiB ahead into the
/// cache: a partition's keys come from memory the cache has not seen, and
/// waiting on every new line costs a counting loop most of its time.
#[inline(always)]
pub(crate) fn each_key_prefetched(keys: &[u32], mut each: impl FnMut(u32)) {
    const LINE: usize = 16;
    const AHEAD: usize = 32 * LINE;
    for (i, line) in keys.chunks(LINE).enumerate() {
        crate::prefetch::for_read(keys.as_ptr().wrapping_add(i * LINE + AHEAD));
        line.iter().for_each(|&key| each(key));
    }
}

/// Phase 1's CPU work on one thread, without the disk, against hashing
/// alone, for the shapes plots take: an external k = 32 plot (512
/// partitions) and in-memory k = 28 and k = 30 plots (1024 each):
/// `cargo bench -p spacevault --bench phases`.
pub(crate) fn phase1_speed() {
    use crate::format::Layout;
    use crate::plot::partition::partitioning;
    phase1_speed_of(Partitioning::new(Layout::for_k(32).unwrap(), 1 << 23));
    phase1_speed_of(partitioning(Layout::for_k(28).unwrap()));
    phase1_speed_of(partitioning(Layout::for_k(30).unwrap()));
}

fn phase1_speed_of(parting: Partitioning) {
    use crate::plot::scatter::Room;
    use crate::plot::NoProgress;
    use std::time::Instant;
    let k = parting.layout.k;
    let shape = KeyShape::with_buckets(&parting);
    let kernel = Kernel::new(&[7; 32]);
    let n = 1u64 << 26;
    let cap = (n / parting.count + 8 * ((n / parting.count) as f64).sqrt() as u64 + 64) as usize;
    let mut scatter = Scatter::new(parting.count as usize, cap, Room::Lines).unwrap();
    scatter.prefault();
    let mut prefixes = vec![0u64; BLOCK];
    let mut tops = vec![0u32; BLOCK];
    let (mut best_top, mut best_prefix, mut best_all) = (f64::MAX, f64::MAX, f64::MAX);
    let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / n as f64;
    for _ in 0..6 {
        let t = Instant::now();
        for x in (0..n).step_by(BLOCK) {
            kernel.top_words(x, &mut tops);
        }
        best_top = best_top.min(ns(t.elapsed()));
        let t = Instant::now();
        for x in (0..n).step_by(BLOCK) {
            kernel.prefixes(x, &mut prefixes);
        }
        best_prefix = best_prefix.min(ns(t.elapsed()));
        scatter.clear();
        let mut marks = EpochMarks::default();
        let t = Instant::now();
        hash_range(
            &kernel,
            &parting,
            shape,
            0..n,
            &mut scatter,
            &mut marks,
            &NoProgress,
        )
        .unwrap();
        best_all = best_all.min(ns(t.elapsed()));
    }
    println!(
        "k = {k}, {} partitions, best of 6, ns a record: hashing to first words {best_top:.2} \
         (the bench's hash bound), to prefixes {best_prefix:.2}; hashing, locating and \
         scattering {best_all:.2} (beyond the first words {:.2})",
        parting.count,
        best_all - best_top
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Backend;

    /// Shapes from the smallest k to the largest, with the partition sizes
    /// plots of them use, on both sides of k = 36 (buckets of 31 bits).
    fn partitionings() -> impl Iterator<Item = (u8, Partitioning)> {
        use crate::format::Layout;
        let shapes = [
            (18u8, 4096u64),
            (28, 1 << 17),
            (32, 1 << 23),
            (36, 1 << 23),
            (40, 1 << 21),
        ];
        shapes
            .into_iter()
            .map(|(k, target)| (k, Partitioning::new(Layout::for_k(k).unwrap(), target)))
    }

    /// Every backend's locate_block gives what the plain integer division
    /// gives, for random prefixes and for buckets at and around the
    /// partition boundaries, in blocks whose length is not a multiple of
    /// the lanes.
    #[test]
    fn locating_a_block_agrees_with_plain_division_on_every_backend() {
        for (k, parting) in partitionings() {
            let shape = KeyShape::with_buckets(&parting);
            let bits = parting.layout.bucket_bits as u32;
            let d = parting.buckets_per_part;
            let mut prefixes: Vec<u64> = (0..1000u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 40))
                .collect();
            // Every partition boundary, where a quotient one off shows.
            for m in 1..parting.count {
                for b in [m * d - 1, m * d, m * d + 1] {
                    prefixes.push((b << (64 - bits)) | (m & 0xFF));
                }
            }
            let first = 0xABCD_0000u64;
            let want: Vec<(u32, u32)> = prefixes
                .iter()
                .zip(first..)
                .map(|(&prefix, nonce)| {
                    let bucket = prefix >> (64 - bits);
                    let key = shape.key(bucket % d, nonce);
                    ((bucket / d) as u32, key)
                })
                .collect();
            // A nudged reciprocal makes the floating-point quotient one too
            // small or too large at the boundaries: the corrections must
            // repair it.
            for nudge in [1.0, 1.0 + 1e-9, 1.0 - 1e-9] {
                let locator = parting.locator().with_inverse_nudged(nudge);
                for simd in Simd::all_here() {
                    let n = prefixes.len();
                    let (mut parts, mut keys) = (vec![0; n], vec![0; n]);
                    locate_block(
                        &locator, shape, first, &prefixes, &mut parts, &mut keys, simd,
                    );
                    let got: Vec<(u32, u32)> = parts.into_iter().zip(keys).collect();
                    assert_eq!(got, want, "k {k}, {simd:?}, nudge {nudge}");
                }
            }
        }
    }

    /// Hashing first words and locating them (AVX-512) gives what hashing, then
    /// dividing plainly gives, on every backend, for blocks that cross a
    /// multiple of 2^32 nonces and whose length is not a multiple of 16.
    #[test]
    fn hashing_and_locating_agrees_with_hashing_then_dividing() {
        for (k, parting) in partitionings() {
            let bits = parting.layout.bucket_bits as u32;
            let d = parting.buckets_per_part;
            for shape in [KeyShape::with_buckets(&parting), KeyShape::nonces_only()] {
                for backend in Backend::ALL.into_iter().filter(|b| b.is_supported()) {
                    let kernel = Kernel::with_backend(&[k; 32], backend);
                    for (first, n) in [(0u64, 4096usize), ((1 << 32) - 40, 1000), (977, 37)] {
                        let mut prefixes = vec![0u64; n];
                        kernel.prefixes(first, &mut prefixes);
                        let want: Vec<(u32, u32)> = prefixes
                            .iter()
                            .zip(first..)
                            .map(|(&prefix, nonce)| {
                                let bucket = prefix >> (64 - bits);
                                ((bucket / d) as u32, shape.key(bucket % d, nonce))
                            })
                            .collect();
                        let (mut parts, mut keys) = (vec![0; n], vec![0; n]);
                        let locator = parting.locator();
                        let mut room = vec![0u64; n];
                        let simd = Simd::of(&kernel);
                        hash_and_locate(
                            &kernel, simd, &locator, shape, first, &mut room, &mut parts, &mut keys,
                        );
                        let got: Vec<(u32, u32)> = parts.into_iter().zip(keys).collect();
                        assert_eq!(got, want, "k {k}, {backend:?}, from {first}, {shape:?}");
                    }
                }
            }
        }
    }

    /// Hashing a range into a scatter gives every partition the same keys,
    /// in the same order, and the same epoch counts on every backend: the
    /// AVX-512 loop that pushes as it hashes against the portable kernel,
    /// which locates and pushes one block after the other. Arrays with room
    /// for the mean make the fast loop stop at a full array halfway through
    /// blocks, and ranges start and end off the multiples of 16.
    #[test]
    fn hashing_into_a_scatter_agrees_on_every_backend() {
        use crate::plot::scatter::Room;
        use crate::plot::NoProgress;
        for (k, parting) in partitionings().filter(|(k, _)| *k <= 32) {
            let shape = KeyShape::with_buckets(&parting);
            let parts = parting.count as usize;
            let range = 977u64..977 + (64 << 10).min(parting.layout.record_count());
            let mean = (range.end - range.start) as usize / parts;
            for cap in [mean + 8 * (mean as f64).sqrt() as usize + 64, mean.max(1)] {
                let hashed = |backend: Backend| {
                    let kernel = Kernel::with_backend(&[k ^ 0x5A; 32], backend);
                    let mut scatter = Scatter::new(parts, cap, Room::Lines).unwrap();
                    let mut marks = EpochMarks::default();
                    hash_range(
                        &kernel,
                        &parting,
                        shape,
                        range.clone(),
                        &mut scatter,
                        &mut marks,
                        &NoProgress,
                    )
                    .unwrap();
                    (0..parting.count)
                        .map(|p| {
                            let (slice, extra) = scatter.records(p);
                            let keys: Vec<u32> = slice.iter().copied().chain(extra).collect();
                            let (first, counts) = marks.counts(p);
                            (keys, first, counts.collect::<Vec<_>>())
                        })
                        .collect::<Vec<_>>()
                };
                let want = hashed(Backend::Portable);
                for backend in Backend::ALL.into_iter().filter(|b| b.is_supported()) {
                    assert!(hashed(backend) == want, "k {k}, room {cap}, {backend:?}");
                }
            }
        }
    }

    #[test]
    fn epochs_split_keys_across_array_and_extra() {
        let array = [1, 2, 3];
        let extra = [4, 5];
        let mut seen = Vec::new();
        let covered = for_each_run(&array, &extra, 10, [2, 0, 2, 1].into_iter(), |keys, e| {
            seen.extend(keys.iter().map(|&k| (k, e)))
        });
        assert_eq!(covered, 5);
        assert_eq!(seen, [(1, 10), (2, 10), (3, 12), (4, 12), (5, 13)]);
    }
}
