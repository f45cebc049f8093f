//! Plotting a plot whose sort keys fit in memory: hash every nonce once,
//! scatter the keys into partitions, then sort, pack and write partition by
//! partition. The plot file is written once and nothing else is.

use super::pack::SlotPlacer;
use super::partition::Partitioning;
use super::pipeline::{pack_and_write, PartitionSource, Scratch};
use super::scatter::Scatter;
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress};
use crate::kernel::Kernel;
use std::fs::File;

/// Records a partition holds: small enough that sorting it stays in L2.
pub(crate) const PARTITION_RECORDS: u64 = 1 << 17;

/// How 4-byte sort keys split: the bucket within the partition on top, the
/// low bits of the nonce below. The nonce's high bits (its *epoch*) are not
/// stored: each thread notes, at every epoch boundary, how many keys each
/// partition has, so a key's position says its epoch.
#[derive(Clone, Copy)]
struct KeyShape {
    low_bits: u32,
}

impl KeyShape {
    fn new(parting: &Partitioning) -> KeyShape {
        let local_bits = 64 - (parting.buckets_per_part.max(2) - 1).leading_zeros();
        KeyShape {
            low_bits: 32 - local_bits,
        }
    }

    #[inline(always)]
    fn key(&self, local: u64, nonce: u64) -> u32 {
        ((local << self.low_bits) | (nonce & ((1 << self.low_bits) - 1))) as u32
    }

    fn epoch_len(&self) -> u64 {
        1 << self.low_bits
    }
}

/// Bytes of memory the in-memory plotter needs for 2^k records, beyond a
/// few tens of MiB of buffers.
pub(crate) fn memory_needed(parting: &Partitioning, threads: usize) -> u64 {
    let cap = slot_capacity(parting, threads);
    let epochs = parting
        .layout
        .record_count()
        .div_ceil(KeyShape::new(parting).epoch_len())
        + threads as u64;
    threads as u64 * Scatter::<u32>::bytes(parting.count as usize, cap as usize)
        + epochs * parting.count * 4
}

/// Room for one thread's keys of one partition: the mean plus six standard
/// deviations; the rare excess goes to an overflow list.
fn slot_capacity(parting: &Partitioning, threads: usize) -> u64 {
    let mean = parting.records_per_part() as f64 / threads as f64;
    (mean + 6.0 * mean.sqrt() + 64.0) as u64
}

/// One thread's keys and where each epoch starts in every partition.
struct ThreadKeys {
    scatter: Scatter<u32>,
    /// (epoch, keys each partition had when the epoch began), in order.
    marks: Vec<(u64, Vec<u32>)>,
    /// Keys each partition had at the end.
    totals: Vec<u32>,
}

impl ThreadKeys {
    /// Calls `each(key, epoch)` for partition p's keys, in the order pushed:
    /// by ascending nonce.
    #[inline(always)]
    fn for_each_key(&self, p: u64, mut each: impl FnMut(u32, u64)) {
        let (slice, extra) = self.scatter.records(p);
        let p = p as usize;
        // Overflowed keys (rare) follow the array's.
        let extra: Vec<u32> = extra.collect();
        for (m, (epoch, starts)) in self.marks.iter().enumerate() {
            let start = starts[p] as usize;
            let end = self.marks.get(m + 1).map_or(self.totals[p], |n| n.1[p]) as usize;
            let in_array = start.min(slice.len())..end.min(slice.len());
            slice[in_array].iter().for_each(|&key| each(key, *epoch));
            if end > slice.len() {
                let in_extra = start.max(slice.len()) - slice.len()..end - slice.len();
                extra[in_extra].iter().for_each(|&key| each(key, *epoch));
            }
        }
    }
}

/// Every thread's keys: the source of the in-memory plot's partitions.
struct Keys {
    per_thread: Vec<ThreadKeys>,
    shape: KeyShape,
}

impl PartitionSource for Keys {
    fn count(&self, p: u64, _: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError> {
        let low_bits = self.shape.low_bits;
        for t in &self.per_thread {
            let (slice, extra) = t.scatter.records(p);
            for key in slice.iter().copied().chain(extra) {
                counts[(key >> low_bits) as usize] += 1;
            }
        }
        Ok(())
    }

    fn fill(&self, p: u64, _: &mut Scratch, placer: &mut SlotPlacer) {
        // Threads in order, epochs in order: nonces ascend.
        let low_bits = self.shape.low_bits;
        let low_mask = self.shape.epoch_len() - 1;
        for t in &self.per_thread {
            t.for_each_key(p, |key, epoch| {
                let nonce = (epoch << low_bits) | (key as u64 & low_mask);
                placer.put((key >> low_bits) as usize, nonce);
            });
        }
    }
}

/// Runs the whole in-memory plot; returns the slot after the last record.
pub(crate) fn plot(
    parting: &Partitioning,
    kernel: &Kernel,
    threads: usize,
    file: &File,
    progress: &dyn Progress,
) -> Result<u64, PlotError> {
    let layout = parting.layout;
    let n = layout.record_count();
    let parts = parting.count as usize;
    let cap = slot_capacity(parting, threads);
    let shape = KeyShape::new(parting);

    progress.phase("hashing", n);
    let per_thread: Vec<ThreadKeys> =
        std::thread::scope(|s| -> Vec<Result<ThreadKeys, PlotError>> {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let range =
                        (n * t as u64 / threads as u64)..(n * (t as u64 + 1) / threads as u64);
                    s.spawn(move || -> Result<ThreadKeys, PlotError> {
                        let mut scatter = Scatter::<u32>::new(parts, cap as usize)?;
                        let mut marks = Vec::new();
                        let locator = parting.locator();
                        let mut prefixes = vec![0u64; 4096];
                        let mut x = range.start;
                        while x < range.end && !stop_requested() {
                            // Stop at epoch boundaries so a block never spans two.
                            let epoch = x >> shape.low_bits;
                            if marks.last().is_none_or(|(e, _)| *e != epoch) {
                                marks.push((epoch, scatter.pushed_counts()));
                            }
                            let epoch_end = (epoch + 1) << shape.low_bits;
                            let len =
                                (range.end.min(epoch_end) - x).min(prefixes.len() as u64) as usize;
                            kernel.prefixes(x, &mut prefixes[..len]);
                            scatter.push_all(prefixes[..len].iter().zip(x..).map(
                                |(&prefix, nonce)| {
                                    let (p, local) = locator.locate(prefix);
                                    (p as usize, shape.key(local, nonce))
                                },
                            ));
                            x += len as u64;
                            progress.advance(len as u64);
                        }
                        scatter.finish();
                        let totals = scatter.pushed_counts();
                        Ok(ThreadKeys {
                            scatter,
                            marks,
                            totals,
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("hashing thread panicked"))
                .collect()
        })
        .into_iter()
        .collect::<Result<_, _>>()?;
    if stop_requested() {
        return Err(PlotError::Interrupted);
    }

    progress.phase("sorting and writing", n);
    let mut sink = RegionSink::new(file, parting);
    pack_and_write(
        parting,
        threads,
        &mut sink,
        progress,
        &Keys { per_thread, shape },
    )
}
