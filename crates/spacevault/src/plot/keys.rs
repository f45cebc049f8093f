//! Four-byte sort keys and the epoch marks that complete them.
//!
//! A key holds the bucket within its partition on top and the low bits of
//! the nonce below. The nonce's high bits (its *epoch*) are not stored: each
//! hashing thread notes, at every epoch boundary, how many keys each
//! partition has, so a key's position says its epoch. A shape with no bucket
//! bits stores only the low 32 bits of the nonce; its bucket is found again
//! by hashing.

use super::partition::{Locator, Partitioning};
use super::scatter::Scatter;
use super::{stop_requested, Progress};
use crate::kernel::Kernel;
use std::ops::Range;

/// How a 4-byte key splits into bucket and nonce bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyShape {
    pub low_bits: u32,
}

impl KeyShape {
    /// Keys that carry the bucket within a partition of `parting`.
    pub fn with_buckets(parting: &Partitioning) -> KeyShape {
        let local_bits = 64 - (parting.buckets_per_part.max(2) - 1).leading_zeros();
        KeyShape {
            low_bits: 32 - local_bits,
        }
    }

    /// Keys that are the low 32 bits of the nonce and nothing else.
    pub fn nonces_only() -> KeyShape {
        KeyShape { low_bits: 32 }
    }

    pub fn has_buckets(&self) -> bool {
        self.low_bits < 32
    }

    #[inline(always)]
    pub fn key(&self, local: u64, nonce: u64) -> u32 {
        ((local << self.low_bits) | (nonce & (self.epoch_len() - 1))) as u32
    }

    /// The bucket within the partition (0 for a shape without buckets).
    #[inline(always)]
    pub fn local(&self, key: u32) -> usize {
        (key as u64 >> self.low_bits) as usize
    }

    #[inline(always)]
    pub fn nonce(&self, key: u32, epoch: u64) -> u64 {
        (epoch << self.low_bits) | (key as u64 & (self.epoch_len() - 1))
    }

    pub fn epoch_len(&self) -> u64 {
        1 << self.low_bits
    }

    /// Epoch marks a thread takes for `records` nonces, at most.
    pub fn epochs(&self, records: u64) -> u64 {
        records.div_ceil(self.epoch_len()) + 1
    }
}

/// Where each epoch starts in every partition, for one thread's keys.
pub(crate) struct EpochMarks {
    /// (epoch, keys each partition had when the epoch began), epochs
    /// consecutive.
    marks: Vec<(u64, Vec<u32>)>,
    /// Keys each partition had at the end.
    totals: Vec<u32>,
}

impl EpochMarks {
    /// The first epoch and partition p's key count in each epoch from it.
    pub fn counts(&self, p: u64) -> (u64, impl Iterator<Item = u32> + '_) {
        let p = p as usize;
        let first = self.marks.first().map_or(0, |m| m.0);
        let counts = self.marks.iter().enumerate().map(move |(m, (_, starts))| {
            let end = self.marks.get(m + 1).map_or(self.totals[p], |n| n.1[p]);
            end - starts[p]
        });
        (first, counts)
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
    progress: &dyn Progress,
) -> EpochMarks {
    let mut marks = Vec::new();
    let locator = parting.locator();
    let mut prefixes = vec![0u64; BLOCK];
    let (mut parts, mut keys) = (vec![0u32; BLOCK], vec![0u32; BLOCK]);
    let mut x = range.start;
    while x < range.end && !stop_requested() {
        // Stop at epoch boundaries so a block never spans two.
        let epoch = x >> shape.low_bits;
        if marks.last().is_none_or(|(e, _)| *e != epoch) {
            marks.push((epoch, scatter.pushed_counts()));
        }
        let epoch_end = (epoch + 1) << shape.low_bits;
        let len = (range.end.min(epoch_end) - x).min(prefixes.len() as u64) as usize;
        kernel.prefixes(x, &mut prefixes[..len]);
        locate_block(
            &locator,
            shape,
            x,
            &prefixes[..len],
            &mut parts[..len],
            &mut keys[..len],
        );
        scatter.push_block(&parts[..len], &keys[..len]);
        x += len as u64;
        progress.advance(len as u64);
    }
    scatter.finish();
    EpochMarks {
        marks,
        totals: scatter.pushed_counts(),
    }
}

/// The partition and key of each of a block of nonces from `first` on,
/// given their hash prefixes. Locating first and scattering after, each in
/// a function of its own, keeps each loop small enough for its values to
/// stay in registers.
#[inline(never)]
fn locate_block(
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    prefixes: &[u64],
    parts: &mut [u32],
    keys: &mut [u32],
) {
    let locator = *locator;
    let located = parts.iter_mut().zip(keys.iter_mut());
    for ((part, key), (&prefix, nonce)) in located.zip(prefixes.iter().zip(first..)) {
        let (p, local) = locator.locate(prefix);
        (*part, *key) = (p as u32, shape.key(local, nonce));
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

/// Calls `each` for every key, fetching the keys 2 KiB ahead into the
/// cache: a partition's keys come from memory the cache has not seen, and
/// waiting on every new line costs a counting loop most of its time.
#[inline(always)]
pub(crate) fn each_key_prefetched(keys: &[u32], mut each: impl FnMut(u32)) {
    const LINE: usize = 16;
    const AHEAD: usize = 32 * LINE;
    for (i, line) in keys.chunks(LINE).enumerate() {
        #[cfg(target_arch = "x86_64")]
        if let Some(ahead) = keys.get(i * LINE + AHEAD) {
            // SAFETY: prefetching only hints the cache; the address is valid.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>((ahead as *const u32).cast());
            }
        }
        line.iter().for_each(|&key| each(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_give_back_bucket_and_nonce() {
        let shape = KeyShape { low_bits: 20 };
        let key = shape.key(0x5A5, 0x1_2345_6789);
        assert_eq!(shape.local(key), 0x5A5);
        assert_eq!(shape.nonce(key, 0x1_2345_6789 >> 20), 0x1_2345_6789);
        let nonces = KeyShape::nonces_only();
        assert!(!nonces.has_buckets());
        let key = nonces.key(0, 0x7_DEAD_BEEF);
        assert_eq!(nonces.local(key), 0);
        assert_eq!(nonces.nonce(key, 7), 0x7_DEAD_BEEF);
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
