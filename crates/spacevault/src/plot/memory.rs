//! Plotting a plot whose sort keys fit in memory: hash every nonce once,
//! scatter the keys into partitions, then count, place, fill and write
//! partition by partition. The plot file is written once and nothing else
//! is.

use super::key_shape::KeyShape;
use super::keys::{each_key_prefetched, hash_range, EpochMarks, RangeKeys};
use super::pack::SlotPlacer;
use super::partition::{partitioning, Partitioning};
use super::pipeline::{pack_and_write, LastPhaseMemory, PartitionSource, Scratch};
use super::scatter::{bring_into_use, Room, Scatter, ScatterPool};
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress, Written};
use crate::format::Layout;
use crate::kernel::Kernel;
use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The smallest ranges of nonces the hashing threads take, as a share of
/// the plot (see [`hash_ranges`]).
const LAST_RANGES_LOG2: u32 = 9;

/// Records a range holds at least: smaller ones would keep more room for
/// each partition's share (six standard deviations) than they save.
const MIN_RANGE: u64 = 1 << 16;

/// The ranges of nonces the plot is hashed in, in nonce order, which the
/// hashing threads take in turn. One contiguous share a thread left the
/// threads waiting for the slowest one at the end (on a VM one core takes
/// the disk's interrupts, and the host's other guests slow either now and
/// then). Ranges shrink as the work left does: each
/// thread's next range is a quarter of what is left for it, down to
/// 1/512th of the plot, so the threads finish a few milliseconds apart.
/// Each range has a scatter of its own, and the last phase reads the
/// ranges in nonce order, so it sees the keys in the same order as with
/// one range a thread.
fn hash_ranges(n: u64, threads: usize) -> Vec<Range<u64>> {
    let threads = threads.max(1) as u64;
    let smallest = (n >> LAST_RANGES_LOG2).max(MIN_RANGE);
    let mut ranges = Vec::new();
    let mut start = 0;
    // One thread has no one to wait for.
    if threads > 1 {
        loop {
            let len = (n - start) / (2 * threads);
            if len < smallest {
                break;
            }
            for _ in 0..threads {
                ranges.push(start..start + len);
                start += len;
            }
        }
    }
    // What is left, a share a thread.
    let left = n - start;
    for t in 0..threads {
        ranges.push(start + left * t / threads..start + left * (t + 1) / threads);
    }
    ranges
}

/// Bytes a record of a partition in flight in the last phase takes at
/// most: its slot (k <= 40 bits and the regions' headers), its share of
/// the counts, and for a worker's partition filed by window its entry.
const LAST_PHASE_BYTES_PER_RECORD: u64 = 8;

/// Bytes of memory the in-memory plotter needs for 2^k records, beyond a
/// few tens of MiB of buffers: the keys, their epoch marks, and the
/// partitions in flight in the last phase (one in each worker, as many
/// waiting for the writer, and the writer's).
pub(crate) fn memory_needed(parting: &Partitioning, threads: usize) -> u64 {
    let n = parting.layout.record_count();
    let ranges = hash_ranges(n, threads);
    let epochs = KeyShape::with_buckets(parting).epochs(n) + ranges.len() as u64;
    let in_flight = 2 * threads as u64 + 1;
    ranges
        .iter()
        .map(|range| {
            let cap = slot_capacity(parting, range.end - range.start);
            Scatter::<u32>::bytes(parting.count as usize, cap, Room::Lines)
        })
        .sum::<u64>()
        + epochs * parting.count * 4
        + in_flight * parting.records_per_part() * LAST_PHASE_BYTES_PER_RECORD
}

/// Room for the keys of one partition from a range of `len` nonces: the
/// mean plus six standard deviations; the rare excess goes to an overflow
/// list.
fn slot_capacity(parting: &Partitioning, len: u64) -> usize {
    let share = len as f64 / parting.layout.record_count() as f64;
    let mean = parting.records_per_part() as f64 * share;
    (mean + 6.0 * mean.sqrt() + 64.0) as usize
}

/// Partitions of more records than this are filed by window before their
/// slots are filled (see `windows.rs`); smaller ones are filled straight
/// from the keys. Filled straight, a partition's slots spill from L2 into
/// L3, and beyond 2^20 records out of L3 too, where filing by window is
/// more than twice as fast; at 2^20 records filling straight is still the
/// faster (`cargo bench -p spacevault --bench phases`).
const FILED_FROM: u64 = 1 << 20;

/// Every range's keys, ranges in nonce order: the source of the in-memory
/// plot's partitions.
struct Keys {
    ranges: Vec<RangeKeys>,
    shape: KeyShape,
    records_per_part: u64,
}

impl Keys {
    fn new(ranges: Vec<RangeKeys>, parting: &Partitioning) -> Keys {
        Keys {
            ranges,
            shape: KeyShape::with_buckets(parting),
            records_per_part: parting.records_per_part(),
        }
    }

    /// Whether partitions are filed by window (more than [`FILED_FROM`]
    /// records).
    fn filed(&self) -> bool {
        self.records_per_part > FILED_FROM
    }
}

impl PartitionSource for Keys {
    fn count(&self, p: u64, scratch: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError> {
        let shape = self.shape;
        if self.filed() {
            let windows = &mut scratch.windows;
            windows.reset(counts.len(), self.records_per_part as usize);
            for t in &self.ranges {
                let (array, extra, first_epoch, epochs) = t.partition(p);
                let covered = windows.file_keys((array, &extra), first_epoch, epochs, shape);
                if covered != Some(array.len() + extra.len()) {
                    return Err(PlotError::Inconsistent(format!(
                        "the keys of partition {p} do not add up"
                    )));
                }
            }
            windows.add_counts(counts);
            return Ok(());
        }
        for t in &self.ranges {
            let (slice, extra) = t.scatter.records(p);
            // The array's keys come from memory the cache has not seen:
            // fetched ahead, the histogram no longer waits on each line.
            each_key_prefetched(slice, |key| counts[shape.local(key)] += 1);
            for key in extra {
                counts[shape.local(key)] += 1;
            }
        }
        Ok(())
    }

    fn fill(&self, p: u64, scratch: &mut Scratch, placer: &mut SlotPlacer) {
        if self.filed() {
            scratch.windows.place(placer);
            return;
        }
        placer.open_all();
        // Ranges in order, epochs in order: nonces ascend.
        let shape = self.shape;
        for t in &self.ranges {
            t.for_each_run(p, |keys, epoch| placer.put_keys(keys, shape, epoch));
        }
    }
}

/// An in-memory plot whose records are all hashed: its keys, ready for the
/// last phase. Its scatters go back to the pool once it is written.
pub(crate) struct Hashed<'a> {
    parting: Partitioning,
    keys: Keys,
    fresh_bytes: u64,
    pool: &'a ScatterPool,
}

/// Hashes every record of the plot into scatters taken from `pool`, on
/// `threads` threads taking the [`hash_ranges`] in turn.
pub(crate) fn hash<'a>(
    parting: &Partitioning,
    kernel: &Kernel,
    threads: usize,
    progress: &dyn Progress,
    pool: &'a ScatterPool,
) -> Result<Hashed<'a>, PlotError> {
    let n = parting.layout.record_count();
    let parts = parting.count as usize;
    let ranges = hash_ranges(n, threads);
    let shapes: Vec<_> = ranges
        .iter()
        .map(|r| (parts, slot_capacity(parting, r.end - r.start), Room::Lines))
        .collect();
    let shape = KeyShape::with_buckets(parting);
    pool.keep_only(&shapes);
    let mut scatters = shapes
        .iter()
        .map(|&(parts, cap, room)| pool.take(parts, cap, room))
        .collect::<Result<Vec<_>, _>>()?;
    let fresh_bytes = bring_into_use(scatters.iter_mut().collect(), threads, progress);

    progress.phase(super::Phase::Hashing, n);
    let scatters: Vec<_> = scatters.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let hashed: Vec<Mutex<Option<Result<RangeKeys, PlotError>>>> =
        ranges.iter().map(|_| Mutex::new(None)).collect();
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let r = next.fetch_add(1, Ordering::Relaxed);
                if r >= ranges.len() || failed.load(Ordering::Relaxed) {
                    return;
                }
                let mut scatter = scatters[r].lock().unwrap().take().expect("each range once");
                let mut marks = EpochMarks::default();
                let result = hash_range(
                    kernel,
                    parting,
                    shape,
                    ranges[r].clone(),
                    &mut scatter,
                    &mut marks,
                    progress,
                )
                .map(|()| RangeKeys { scatter, marks });
                failed.fetch_or(result.is_err(), Ordering::Relaxed);
                *hashed[r].lock().unwrap() = Some(result);
            });
        }
    });
    let mut done = Vec::with_capacity(ranges.len());
    for result in hashed.into_iter().map(|h| h.into_inner().unwrap()) {
        match result {
            Some(Ok(keys)) => done.push(keys),
            Some(Err(e)) => return Err(e),
            // Not taken once another range failed.
            None => {}
        }
    }
    if stop_requested() {
        return Err(PlotError::Interrupted);
    }
    assert_eq!(done.len(), ranges.len(), "every range hashed");
    Ok(Hashed {
        parting: parting.clone(),
        keys: Keys::new(done, parting),
        fresh_bytes,
        pool,
    })
}

impl Hashed<'_> {
    /// The last phase: counts, places, fills and writes every partition,
    /// in buffers from `kept`, which gets them back.
    pub fn write(
        self,
        threads: usize,
        file: &File,
        progress: &dyn Progress,
        kept: &LastPhaseMemory,
    ) -> Result<Written, PlotError> {
        let Hashed {
            parting,
            keys,
            fresh_bytes,
            pool,
        } = self;
        progress.phase(super::Phase::Writing, parting.layout.record_count());
        let mut buffers = kept.take(&parting);
        let staging = std::mem::take(&mut buffers.staging);
        let mut sink = RegionSink::with_staging(file, &parting, staging)
            .map_err(|e| PlotError::io("starting the plot's writer", e))?;
        let end = pack_and_write(&parting, threads, &mut sink, progress, &keys, &buffers);
        keys.ranges.into_iter().for_each(|t| pool.give(t.scatter));
        let write_time = sink.write_time;
        if end.is_ok() {
            buffers.staging = sink.into_staging();
            kept.keep(&parting, buffers);
        }
        Ok(Written {
            end: end?,
            fresh_bytes,
            write_time,
        })
    }
}

/// The last phase's CPU work on one thread, without the disk: counting,
/// placing (and zeroing the slots) and filling every partition of a
/// k = 28 plot hashed in the ranges two threads take, in its partitions
/// and in partitions of 2^20 records (k = 30's): `cargo bench -p spacevault --bench phases`.
pub(crate) fn last_phase_speed() {
    let layout = Layout::for_k(28).unwrap();
    last_phase_speed_of(partitioning(layout));
    last_phase_speed_of(Partitioning::new(layout, 1 << 20));
}

fn last_phase_speed_of(parting: Partitioning) {
    use crate::plot::pack::{place, SlotPlacer};
    use crate::plot::sink::BufPool;
    use crate::plot::NoProgress;
    use std::time::{Duration, Instant};
    let shape = KeyShape::with_buckets(&parting);
    let kernel = Kernel::new(&[7; 32]);
    let n = parting.layout.record_count();
    let ranges = hash_ranges(n, 2)
        .into_iter()
        .map(|range| {
            let cap = slot_capacity(&parting, range.end - range.start);
            let mut scatter = Scatter::new(parting.count as usize, cap, Room::Lines).unwrap();
            let mut marks = EpochMarks::default();
            hash_range(
                &kernel,
                &parting,
                shape,
                range,
                &mut scatter,
                &mut marks,
                &NoProgress,
            )
            .unwrap();
            RangeKeys { scatter, marks }
        })
        .collect();
    let keys = Keys::new(ranges, &parting);
    let pool = BufPool::default();
    let (mut scratch, mut cursors, mut counts) = (Scratch::default(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let (mut counting, mut opening, mut filling) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut end = 0;
        for p in 0..parting.count {
            let buckets = parting.buckets(p);
            counts.clear();
            counts.resize((buckets.end - buckets.start) as usize, 0u32);
            let t = Instant::now();
            keys.count(p, &mut scratch, &mut counts).unwrap();
            counting += t.elapsed();
            let t = Instant::now();
            let placement = place(&parting, p, &counts, end);
            end = placement.end;
            let mut placer = SlotPlacer::new(
                &parting,
                p,
                &counts,
                &placement,
                &pool,
                std::mem::take(&mut cursors),
            )
            .unwrap();
            placer.open_all();
            opening += t.elapsed();
            let t = Instant::now();
            keys.fill(p, &mut scratch, &mut placer);
            let (packed, reused) = placer.finish(&parting, &counts, &placement).unwrap();
            filling += t.elapsed();
            cursors = reused;
            pool.give(packed.buf);
        }
        let ns = |d: Duration| d.as_secs_f64() * 1e9 / n as f64;
        println!(
            "k = 28 in {} partitions on one thread, ns a record: counting {:.2}, placing \
             and zeroing {:.2}, filling {:.2}",
            parting.count,
            ns(counting),
            ns(opening),
            ns(filling)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::NoProgress;

    /// The ranges cover every nonce once, in order; with two threads or
    /// more they shrink to about 1/512th of the plot, never below
    /// [`MIN_RANGE`] but for the last ones of a small plot.
    #[test]
    fn hash_ranges_cover_the_plot_and_shrink() {
        for k in [16, 20, 24, 28, 32, 40] {
            let n = 1u64 << k;
            for threads in [1, 2, 3, 16, 192] {
                let ranges = hash_ranges(n, threads);
                let case = format!("k = {k}, {threads} threads");
                assert_eq!(ranges[0].start, 0, "{case}");
                assert_eq!(ranges.last().unwrap().end, n, "{case}");
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{case}");
                assert!(ranges.iter().all(|r| r.start < r.end), "{case}");
                assert_eq!(ranges.len() % threads, 0, "{case}");
                let lens: Vec<u64> = ranges.iter().map(|r| r.end - r.start).collect();
                let shrink = lens.windows(2).all(|w| w[0] + threads as u64 >= w[1]);
                assert!(shrink, "{case}: {lens:?}");
                let (last, smallest) = (*lens.last().unwrap(), (n >> 9).max(MIN_RANGE));
                if threads == 1 {
                    assert_eq!(ranges, vec![0..n], "{case}");
                } else {
                    assert!(last < 2 * smallest, "{case}: {lens:?}");
                }
            }
        }
        let k28: Vec<u64> = hash_ranges(1 << 28, 2)
            .iter()
            .map(|r| r.end - r.start)
            .collect();
        assert_eq!(k28.len(), 18);
        assert_eq!(k28[..2], [1 << 26, 1 << 26]);
        assert_eq!(k28[16..], [1 << 19, 1 << 19]);
    }

    /// The partitions' size changes how the records are sorted, not where
    /// they go: small, default and large partitions, filled straight or
    /// filed by window first, make the same file.
    #[test]
    fn any_partition_size_makes_the_same_plot() {
        let layout = Layout::for_k(22).unwrap();
        let kernel = Kernel::new(&[9; 32]);
        let dir = tempfile::tempdir().unwrap();
        let pool = ScatterPool::default();
        let last_phase = LastPhaseMemory::default();
        let (mut plots, mut filed) = (Vec::new(), Vec::new());
        for parting in [
            Partitioning::new(layout, 1 << 12),
            partitioning(layout),
            Partitioning::new(layout, FILED_FROM),
            Partitioning::new(layout, 2 * FILED_FROM),
            Partitioning::new(layout, 2 * layout.record_count()),
        ] {
            // The second plot of each size reuses the first one's last-phase
            // buffers, and must come out the same.
            let mut twice = Vec::new();
            for time in 0..2 {
                let path = dir.path().join(format!("plot-{}", parting.count));
                let file = File::create(&path).unwrap();
                let hashed = hash(&parting, &kernel, 2, &NoProgress, &pool).unwrap();
                if time == 0 {
                    filed.push(hashed.keys.filed());
                }
                let written = hashed.write(2, &file, &NoProgress, &last_phase).unwrap();
                let (_, scratch, _, staging) = last_phase.kept_buffers();
                assert_eq!(scratch, 2, "a scratch a worker");
                // Small partitions are staged for the writer, in at most
                // three buffers (two being written, one being filled).
                assert!(staging <= 3);
                assert!(staging > 0 || parting.records_per_part() > 1 << 12);
                twice.push((written.end, std::fs::read(&path).unwrap()));
            }
            assert!(twice[0] == twice[1], "{} partitions", parting.count);
            let (end, bytes) = twice.pop().unwrap();
            plots.push((parting.count, end, bytes));
        }
        assert!(plots[0].0 > 1000);
        assert_eq!(plots[4].0, 1);
        assert_eq!(filed, [false, false, false, true, true]);
        for (count, end, bytes) in &plots[1..] {
            assert_eq!(*end, plots[0].1, "{count} partitions");
            assert!(*bytes == plots[0].2, "{count} partitions make another file");
        }
    }
}
