//! Plotting a plot whose sort keys fit in memory: hash every nonce once,
//! scatter the keys into partitions, then sort, pack and write partition by
//! partition. The plot file is written once and nothing else is.

use super::pack::{pack, place, sort_key, sort_partition, Packed, Placement, SortedPartition};
use super::partition::Partitioning;
use super::scatter::Scatter;
use super::sink::RegionSink;
use super::{PlotError, Progress};
use crate::kernel::Kernel;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

/// The turn given when a worker failed: everyone stops.
const ABORTED: u64 = u64::MAX;

/// Records a partition holds: its keys (8 bytes each) fit in L2 while sorted.
pub(crate) const PARTITION_RECORDS: u64 = 1 << 17;

/// Bytes of memory the in-memory plotter needs for 2^k records, beyond a
/// few tens of MiB of buffers.
pub(crate) fn memory_needed(parting: &Partitioning, threads: usize) -> u64 {
    let cap = slot_capacity(parting, threads);
    threads as u64 * Scatter::<u64>::bytes(parting.count as usize, cap as usize)
}

/// Room for one thread's keys of one partition: the mean plus six standard
/// deviations; the rare excess goes to an overflow list.
fn slot_capacity(parting: &Partitioning, threads: usize) -> u64 {
    let mean = parting.records_per_part() as f64 / threads as f64;
    (mean + 6.0 * mean.sqrt() + 64.0) as u64
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

    progress.phase("hashing", n);
    let per_thread: Vec<Scatter<u64>> =
        std::thread::scope(|s| -> Vec<Result<Scatter<u64>, PlotError>> {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let range =
                        (n * t as u64 / threads as u64)..(n * (t as u64 + 1) / threads as u64);
                    s.spawn(move || -> Result<Scatter<u64>, PlotError> {
                        let mut scatter = Scatter::<u64>::new(parts, cap as usize)?;
                        let mut prefixes = vec![0u64; 4096];
                        let mut x = range.start;
                        while x < range.end {
                            let len = (range.end - x).min(prefixes.len() as u64) as usize;
                            kernel.prefixes(x, &mut prefixes[..len]);
                            for (i, &prefix) in prefixes[..len].iter().enumerate() {
                                let (p, local) = parting.locate(layout.bucket_of_prefix(prefix));
                                scatter.push(p, sort_key(local, x + i as u64));
                            }
                            x += len as u64;
                            progress.advance(len as u64);
                        }
                        scatter.finish();
                        Ok(scatter)
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

    progress.phase("sorting and writing", n);
    let mut sink = RegionSink::new(file, parting);
    sort_pack_write(parting, threads, &mut sink, progress, |p| {
        // Each thread's overflow follows its own keys, keeping nonces ascending.
        let mut ordered: Vec<&[u64]> = Vec::with_capacity(2 * threads);
        let extras: Vec<Vec<u64>> = per_thread
            .iter()
            .map(|t| t.records(p).1.collect())
            .collect();
        for (t, extra) in per_thread.iter().zip(extras.iter()) {
            ordered.push(t.records(p).0);
            ordered.push(extra);
        }
        Ok(sort_partition(parting, p, &ordered))
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
    sorted: impl Fn(u64) -> Result<SortedPartition, PlotError> + Sync,
) -> Result<u64, PlotError> {
    let next = AtomicU64::new(0);
    // (partition whose turn it is to be placed, end of the previous one)
    let turn = Mutex::new((0u64, 0u64));
    let turn_changed = Condvar::new();
    let failed = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Result<Packed, PlotError>>(threads);
    std::thread::scope(|s| -> Result<u64, PlotError> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, turn, turn_changed, failed, sorted) =
                (&next, &turn, &turn_changed, &failed, &sorted);
            s.spawn(move || loop {
                let p = next.fetch_add(1, Ordering::Relaxed);
                if p >= parting.count || failed.load(Ordering::Relaxed) {
                    return;
                }
                let result = sorted(p).and_then(|part| {
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
                    let packed = pack(parting, &part, &placement);
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
            });
        }
        drop(tx);
        let mut first_error = None;
        for result in rx {
            match result {
                Ok(packed) if first_error.is_none() => {
                    if let Err(e) = sink.accept(packed) {
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
        if failed.load(Ordering::Relaxed) {
            return Err(PlotError::Aborted);
        }
        assert!(sink.is_complete(), "every partition was written");
        Ok(turn.lock().unwrap().1)
    })
}
