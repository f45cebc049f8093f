//! The second half of every plot: for each partition, count its records per
//! bucket, place it after the previous partition, write its records into
//! their slots and hand the regions to the writer. Counting and slot
//! writing run on every worker at once; placing is strictly in partition
//! order but costs microseconds.

use super::pack::{place, SlotPlacer};
use super::partition::Partitioning;
use super::sink::{seal_settled, RegionSink};
use super::sink::{BufPool, Packed};
use super::windows::Windows;
use super::{stop_requested, PlotError, Progress};
use crate::aligned::AlignedBuf;
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

impl Scratch {
    fn bytes(&self) -> usize {
        self.windows.bytes() + (self.nonces.capacity() + self.prefixes.capacity()) * 8
    }
}

/// The last phase's buffers, kept from one plot to the next by a
/// `Plotter`: the packed regions' buffers, the workers' scratch, the
/// writer's staging buffers and the external strategy's read-ahead
/// buffers: fresh, they cost a k = 32 plot's phase 2 (0.55 GB of them) the
/// time to bring them into use, which on a VM that backs memory lazily is
/// seconds.
///
/// They are kept for plots of one shape (k and partition size), as a
/// `plot --count` run makes: a plot of another shape frees them first, so
/// that what is kept is never more than what the plot being made uses in
/// its last phase. The in-memory plan counts that memory beside the keys
/// in every phase; an external plot's phase 1 may need more than the
/// memory its phase 2 leaves (two sets of round buffers at least), and
/// then frees them before it starts (see `external::phase_one`).
#[derive(Default)]
pub(crate) struct LastPhaseMemory {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// (k, records per partition) of the plots the buffers served.
    shape: Option<(u8, u64)>,
    regions: Vec<AlignedBuf>,
    scratch: Vec<Scratch>,
    reads: Vec<AlignedBuf>,
    staging: Vec<AlignedBuf>,
}

impl Kept {
    fn shape_of(parting: &Partitioning) -> (u8, u64) {
        (parting.layout.k, parting.records_per_part())
    }
}

/// The buffers one plot's last phase takes, given back by
/// [`LastPhaseMemory::keep`].
#[derive(Default)]
pub(crate) struct LastPhaseBuffers {
    pub regions: BufPool,
    /// Taken by the workers; as many as there are workers at most.
    scratch: Mutex<Vec<Scratch>>,
    /// For the external strategy's read-ahead.
    pub reads: Vec<AlignedBuf>,
    /// For the writer's staging of small partitions.
    pub staging: Vec<AlignedBuf>,
}

impl LastPhaseMemory {
    /// The buffers kept for plots of `parting`'s shape; none when the
    /// last plot had another shape, whose buffers are freed now.
    pub fn take(&self, parting: &Partitioning) -> LastPhaseBuffers {
        let shape = Kept::shape_of(parting);
        let mut kept = self.kept.lock().unwrap();
        if kept.shape != Some(shape) {
            *kept = Kept {
                shape: Some(shape),
                ..Kept::default()
            };
        }
        LastPhaseBuffers {
            regions: BufPool::with(std::mem::take(&mut kept.regions)),
            scratch: Mutex::new(std::mem::take(&mut kept.scratch)),
            reads: std::mem::take(&mut kept.reads),
            staging: std::mem::take(&mut kept.staging),
        }
    }

    /// Keeps a plot's last-phase buffers for the next plot of its shape.
    /// Plots whose last phases run at once (`plot_all` writes a plot in
    /// memory beside another) give back a set each; one set is kept.
    pub fn keep(&self, parting: &Partitioning, buffers: LastPhaseBuffers) {
        let shape = Kept::shape_of(parting);
        let mut kept = self.kept.lock().unwrap();
        // Workers always leave scratch: with some kept, a set is.
        if kept.shape != Some(shape) || !kept.scratch.is_empty() {
            return;
        }
        kept.regions = buffers.regions.into_buffers();
        kept.scratch = buffers.scratch.into_inner().unwrap();
        kept.reads = buffers.reads;
        kept.staging = buffers.staging;
    }

    /// Bytes of the buffers kept now.
    pub fn bytes(&self) -> u64 {
        let kept = self.kept.lock().unwrap();
        let bufs = |v: &[AlignedBuf]| v.iter().map(|b| b.len()).sum::<usize>();
        (bufs(&kept.regions)
            + bufs(&kept.reads)
            + bufs(&kept.staging)
            + kept.scratch.iter().map(Scratch::bytes).sum::<usize>()) as u64
    }

    /// Frees every buffer kept.
    pub fn free(&self) {
        *self.kept.lock().unwrap() = Kept::default();
    }

    /// How many buffers of each kind are kept now, for tests.
    #[cfg(test)]
    pub fn kept_buffers(&self) -> (usize, usize, usize, usize) {
        let kept = self.kept.lock().unwrap();
        let Kept {
            regions,
            scratch,
            reads,
            staging,
            ..
        } = &*kept;
        (regions.len(), scratch.len(), reads.len(), staging.len())
    }
}

/// Counts, places, packs and writes every partition with `threads` workers.
/// Returns the slot after the last record.
pub(crate) fn pack_and_write(
    parting: &Partitioning,
    threads: usize,
    sink: &mut RegionSink,
    progress: &dyn Progress,
    source: &impl PartitionSource,
    buffers: &LastPhaseBuffers,
) -> Result<u64, PlotError> {
    let pool = &buffers.regions;
    let next = AtomicU64::new(0);
    // (partition whose turn it is to be placed, end of the previous one)
    let turn = Mutex::new((0u64, 0u64));
    let turn_changed = Condvar::new();
    let failed = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Result<Packed, PlotError>>(threads);
    std::thread::scope(|s| -> Result<u64, PlotError> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, turn, turn_changed, failed) = (&next, &turn, &turn_changed, &failed);
            let kept_scratch = &buffers.scratch;
            s.spawn(move || {
                let mut scratch = kept_scratch.lock().unwrap().pop().unwrap_or_default();
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
                        break;
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
                        break;
                    }
                }
                kept_scratch.lock().unwrap().push(scratch);
            });
        }
        drop(tx);
        let mut first_error = None;
        for result in rx {
            match result {
                Ok(packed) if first_error.is_none() => {
                    if let Err(e) = sink.accept(packed, pool) {
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
        sink.finish(pool)
            .map_err(|e| PlotError::io("writing the plot", e))?;
        assert!(sink.is_complete(), "every partition was written");
        Ok(turn.lock().unwrap().1)
    })
}
