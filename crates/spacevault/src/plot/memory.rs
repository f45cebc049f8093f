//! Plotting a plot whose sort keys fit in memory: hash every nonce once,
//! scatter the keys into partitions, then sort, pack and write partition by
//! partition. The plot file is written once and nothing else is.

use super::pack::{
    pack, place, sort_key, sort_partition, BufPool, Packed, Placement, Scratch, SortedPartition,
};
use super::partition::Partitioning;
use super::scatter::Scatter;
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress};
use crate::kernel::Kernel;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

/// The turn given when a worker failed: everyone stops.
const ABORTED: u64 = u64::MAX;

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
    /// Appends partition p's keys to `out` as 8-byte sort keys, in order.
    /// Counts each bucket's keys in `counts` on the way.
    fn decode_into(&self, p: u64, shape: KeyShape, out: &mut Vec<u64>, counts: &mut [u32]) {
        let (slice, extra) = self.scatter.records(p);
        let extra: Vec<u32> = extra.collect();
        let low_mask = shape.epoch_len() - 1;
        let p = p as usize;
        for (m, (epoch, starts)) in self.marks.iter().enumerate() {
            let start = starts[p] as usize;
            let end = self.marks.get(m + 1).map_or(self.totals[p], |n| n.1[p]) as usize;
            let base = epoch << shape.low_bits;
            let mut decode = |key: &u32| {
                counts[(*key >> shape.low_bits) as usize] += 1;
                sort_key(
                    *key as u64 >> shape.low_bits,
                    base | (*key as u64 & low_mask),
                )
            };
            // The epoch's keys: in the array, then (rarely) in the overflow.
            let in_array = start.min(slice.len())..end.min(slice.len());
            out.extend(slice[in_array].iter().map(&mut decode));
            if end > slice.len() {
                let in_extra = start.max(slice.len()) - slice.len()..end - slice.len();
                out.extend(extra[in_extra].iter().map(&mut decode));
            }
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
                            for (i, &prefix) in prefixes[..len].iter().enumerate() {
                                let (p, local) = parting.locate(layout.bucket_of_prefix(prefix));
                                scatter.push(p, shape.key(local, x + i as u64));
                            }
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
    sort_pack_write(parting, threads, &mut sink, progress, |p, scratch| {
        // Threads in order, epochs in order: nonces ascend.
        scratch.keys.clear();
        let buckets = parting.buckets(p);
        let mut counts = vec![0u32; (buckets.end - buckets.start) as usize];
        for t in &per_thread {
            t.decode_into(p, shape, &mut scratch.keys, &mut counts);
        }
        let out = std::mem::take(&mut scratch.nonces);
        Ok(sort_partition(
            p,
            &scratch.keys,
            counts,
            &mut scratch.tmp,
            out,
        ))
    })
}

/// Sorts, places, packs and writes every partition with `threads` workers;
/// `sorted(p)` gives partition p's records in file order. Placement follows
/// partition order; everything else runs in parallel.
pub(crate) fn sort_pack_write(
    parting: &Partitioning,
    threads: usize,
    sink: &mut RegionSink,
    progress: &dyn Progress,
    sorted: impl Fn(u64, &mut Scratch) -> Result<SortedPartition, PlotError> + Sync,
) -> Result<u64, PlotError> {
    let pool = BufPool::default();
    let next = AtomicU64::new(0);
    // (partition whose turn it is to be placed, end of the previous one)
    let turn = Mutex::new((0u64, 0u64));
    let turn_changed = Condvar::new();
    let failed = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Result<Packed, PlotError>>(threads);
    std::thread::scope(|s| -> Result<u64, PlotError> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, turn, turn_changed, failed, sorted, pool) =
                (&next, &turn, &turn_changed, &failed, &sorted, &pool);
            s.spawn(move || {
                let mut scratch = Scratch::default();
                loop {
                    let p = next.fetch_add(1, Ordering::Relaxed);
                    if p >= parting.count || failed.load(Ordering::Relaxed) || stop_requested() {
                        // Partitions waiting for their turn must not wait forever.
                        let mut t = turn.lock().unwrap();
                        if p < parting.count {
                            t.0 = ABORTED;
                        }
                        turn_changed.notify_all();
                        return;
                    }
                    let result = sorted(p, &mut scratch).and_then(|mut part| {
                        let placement: Placement = {
                            let mut t = turn.lock().unwrap();
                            while t.0 != p && t.0 != ABORTED {
                                t = turn_changed.wait(t).unwrap();
                            }
                            if t.0 == ABORTED {
                                return Err(PlotError::Aborted);
                            }
                            let placement = place(parting, &part, t.1);
                            *t = (p + 1, placement.end);
                            turn_changed.notify_all();
                            placement
                        };
                        let records = part.nonces.len() as u64;
                        let packed = pack(parting, &part, &placement, pool);
                        scratch.nonces = std::mem::take(&mut part.nonces);
                        progress.advance(records);
                        packed
                    });
                    if result.is_err() {
                        failed.store(true, Ordering::Relaxed);
                        // Let partitions waiting for their turn go on and stop.
                        let mut t = turn.lock().unwrap();
                        t.0 = ABORTED;
                        turn_changed.notify_all();
                    }
                    if tx.send(result).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut first_error = None;
        for result in rx {
            match result {
                Ok(packed) if first_error.is_none() => {
                    if let Err(e) = sink.accept(packed, &pool) {
                        failed.store(true, Ordering::Relaxed);
                        first_error = Some(PlotError::io("writing the plot", e));
                    }
                }
                Ok(_) => {}
                Err(PlotError::Aborted) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if stop_requested() {
            return Err(PlotError::Interrupted);
        }
        if failed.load(Ordering::Relaxed) {
            return Err(PlotError::Aborted);
        }
        assert!(sink.is_complete(), "every partition was written");
        Ok(turn.lock().unwrap().1)
    })
}
