//! The second half of every plot: for each partition, count its records per
//! bucket, place it after the previous partition, write its records into
//! their slots and hand the regions to the writer. Counting and slot
//! writing run on every worker at once; placing is strictly in partition
//! order but costs microseconds.

use super::pack::{place, BufPool, Packed, SlotPlacer};
use super::partition::Partitioning;
use super::sink::{seal_settled, RegionSink};
use super::windows::Windows;
use super::{stop_requested, PlotError, Progress};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

/// The turn given when a worker failed: everyone stops.
const ABORTED: u64 = u64::MAX;

/// Where a partition's records come from.
pub(crate) trait PartitionSource: Sync {
    /// Adds partition p's records to `counts` (one zeroed entry per bucket of
    /// the partition), keeping in `scratch` whatever [`fill`](Self::fill)
    /// needs.
    fn count(&self, p: u64, scratch: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError>;

    /// Puts each of partition p's records into `placer`, the records of
    /// each bucket in ascending nonce order.
    fn fill(&self, p: u64, scratch: &mut Scratch, placer: &mut SlotPlacer);
}

/// Buffers a worker reuses from partition to partition: allocating them
/// afresh would have the kernel fault in and zero gigabytes of pages.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Records filed by runs of buckets.
    pub windows: Windows,
    pub nonces: Vec<u64>,
    pub prefixes: Vec<u64>,
}

/// Counts, places, packs and writes every partition with `threads` workers.
/// Returns the slot after the last record.
pub(crate) fn pack_and_write(
    parting: &Partitioning,
    threads: usize,
    sink: &mut RegionSink,
    progress: &dyn Progress,
    source: &impl PartitionSource,
) -> Result<u64, PlotError> {
    let pool = BufPool::default();
    let next = AtomicU64::new(0);
    // (partition whose turn it is to be placed, end of the previous one)
    let turn = Mutex::new((0u64, 0u64));
    let turn_changed = Condvar::new();
    let failed = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Result<Packed, PlotError>>(threads);
    std::thread::scope(|s| -> Result<u64, PlotError> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, turn, turn_changed, failed, pool) =
                (&next, &turn, &turn_changed, &failed, &pool);
            s.spawn(move || {
                let mut scratch = Scratch::default();
                let mut counts = Vec::new();
                let mut cursors = Vec::new();
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
                    let buckets = parting.buckets(p);
                    counts.clear();
                    counts.resize((buckets.end - buckets.start) as usize, 0u32);
                    let result = source.count(p, &mut scratch, &mut counts).and_then(|()| {
                        let placement = {
                            let mut t = turn.lock().unwrap();
                            while t.0 != p && t.0 != ABORTED {
                                t = turn_changed.wait(t).unwrap();
                            }
                            if t.0 == ABORTED {
                                return Err(PlotError::Aborted);
                            }
                            let placement = place(parting, p, &counts, t.1);
                            *t = (p + 1, placement.end);
                            turn_changed.notify_all();
                            placement
                        };
                        let mut placer = SlotPlacer::new(
                            parting,
                            p,
                            &counts,
                            &placement,
                            pool,
                            std::mem::take(&mut cursors),
                        )?;
                        source.fill(p, &mut scratch, &mut placer);
                        let (mut packed, reused) = placer.finish(parting, &counts, &placement)?;
                        seal_settled(parting, &mut packed);
                        cursors = reused;
                        progress.advance(counts.iter().map(|&c| c as u64).sum());
                        Ok(packed)
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
        sink.finish(&pool)
            .map_err(|e| PlotError::io("writing the plot", e))?;
        assert!(sink.is_complete(), "every partition was written");
        Ok(turn.lock().unwrap().1)
    })
}
