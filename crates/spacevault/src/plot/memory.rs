//! Plotting a plot whose sort keys fit in memory: hash every nonce once,
//! scatter the keys into partitions, then count, place, fill and write
//! partition by partition. The plot file is written once and nothing else
//! is.

use super::keys::{each_key_prefetched, hash_range, EpochMarks, KeyShape, RangeKeys};
use super::pack::SlotPlacer;
use super::partition::Partitioning;
use super::pipeline::{pack_and_write, PartitionSource, Scratch};
use super::scatter::{bring_into_use, Room, Scatter, ScatterPool};
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress, Written};
use crate::format::Layout;
use crate::kernel::Kernel;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Records a partition holds at least: small enough that its slots stay in
/// L2 while they are filled.
pub(crate) const PARTITION_RECORDS: u64 = 1 << 17;

/// Partitions the hashing threads scatter into, at most. Each partition is
/// a stream of line writes into its own pages, and with more streams than
/// the TLB holds pages every line written missed it: at k = 30, 8201
/// partitions of 2^17 records took the hashing phase to 8.3-9.8 s against
/// 5.2-6.8 s with 2051 and 4.6-5.0 s with 1026 (`bench plot -k 30
/// --reuse-memory`, runs in turns), for a hash bound of 4.1 s. Larger
/// partitions fill more slowly (their slots spill from L2: 1.85 ns a
/// record at 2^17 records, 3.6 at 2^20, `last_phase_speed`), which costs
/// the last phase a fraction of that.
const MAX_PARTITIONS: u64 = 1 << 10;

/// The in-memory plotter's partitions for `layout`: of [`PARTITION_RECORDS`]
/// records, or larger where that would make more than [`MAX_PARTITIONS`].
pub(crate) fn partitioning(layout: Layout) -> Partitioning {
    let records = PARTITION_RECORDS.max(layout.record_count() / MAX_PARTITIONS);
    Partitioning::new(layout, records)
}

/// Ranges of nonces each hashing thread's share is cut into, when there is
/// more than one thread. The threads take ranges in turn, so one slowed
/// down (on a shared host, one whose core another guest takes for a while)
/// leaves the rest of its work to the others instead of keeping them
/// waiting at the end: with one contiguous half each, k = 28's two threads
/// finished their halves 0.03 to 0.57 s apart on the development VM,
/// where hashing takes about 1.2 s. Each range has its own scatter, and
/// the ranges are read back in nonce order, so the last phase sees the
/// keys in the same order as before.
const RANGES_PER_THREAD: u64 = 8;

/// A range's mean share of a partition, at least, where there are ranges
/// to spare: each range has room for six standard deviations beyond its
/// mean in every partition, about 7% more memory at this share.
const RANGE_SHARE: u64 = 1 << 13;

/// The ranges the nonces are hashed in, with `threads` threads: one a
/// thread, or more where the partitions are large enough to share.
fn range_count(parting: &Partitioning, threads: usize) -> u64 {
    let threads = threads.max(1) as u64;
    if threads == 1 {
        return 1;
    }
    let shares = (parting.records_per_part() / RANGE_SHARE).max(1);
    (threads * RANGES_PER_THREAD).min(shares).max(threads)
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
    let ranges = range_count(parting, threads);
    let cap = slot_capacity(parting, ranges);
    let epochs = KeyShape::with_buckets(parting).epochs(parting.layout.record_count()) + ranges;
    let in_flight = 2 * threads as u64 + 1;
    ranges * Scatter::<u32>::bytes(parting.count as usize, cap as usize, Room::Lines)
        + epochs * parting.count * 4
        + in_flight * parting.records_per_part() * LAST_PHASE_BYTES_PER_RECORD
}

/// Room for one range's keys of one partition: the mean plus six standard
/// deviations; the rare excess goes to an overflow list.
fn slot_capacity(parting: &Partitioning, ranges: u64) -> u64 {
    let mean = parting.records_per_part() as f64 / ranges as f64;
    (mean + 6.0 * mean.sqrt() + 64.0) as u64
}

/// Partitions of more records than this are filed by window before their
/// slots are filled (see `windows.rs`); smaller ones are filled straight
/// from the keys. Filled straight, a partition's slots spill from L2 into
/// L3 (3.6 ns a record at 2^20 records against 1.85 at 2^17,
/// `last_phase_speed`), and beyond 2^20 records out of L3 too: k = 31's
/// last phase, in partitions of 2^21 records, took 12.2 s filled straight
/// and 5.1 s filed by window (`bench plot -k 31`). At 2^20 records filling
/// straight is still the faster (k = 30: 3.2-3.3 s against 4.1-4.3 s
/// filed, in 2^21-record partitions, session 17).
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
            t.for_each_run(p, |keys, epoch| {
                for &key in keys {
                    placer.put(shape.local(key), shape.nonce(key, epoch));
                }
            });
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
/// `threads` threads taking [`range_count`] ranges of nonces in turn.
pub(crate) fn hash<'a>(
    parting: &Partitioning,
    kernel: &Kernel,
    threads: usize,
    progress: &dyn Progress,
    pool: &'a ScatterPool,
) -> Result<Hashed<'a>, PlotError> {
    let n = parting.layout.record_count();
    let parts = parting.count as usize;
    let ranges = range_count(parting, threads) as usize;
    let cap = slot_capacity(parting, ranges as u64);
    let shape = KeyShape::with_buckets(parting);
    pool.keep_only(parts, cap as usize, Room::Lines, ranges);
    let mut scatters = (0..ranges)
        .map(|_| pool.take(parts, cap as usize, Room::Lines))
        .collect::<Result<Vec<_>, _>>()?;
    let fresh_bytes = bring_into_use(scatters.iter_mut().collect(), threads, progress);

    progress.phase("hashing", n);
    let scatters: Vec<_> = scatters.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let hashed: Vec<Mutex<Option<Result<RangeKeys, PlotError>>>> =
        (0..ranges).map(|_| Mutex::new(None)).collect();
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let r = next.fetch_add(1, Ordering::Relaxed);
                if r >= ranges || failed.load(Ordering::Relaxed) {
                    return;
                }
                let mut scatter = scatters[r].lock().unwrap().take().expect("each range once");
                let range = (n * r as u64 / ranges as u64)..(n * (r as u64 + 1) / ranges as u64);
                let mut marks = EpochMarks::default();
                let result = hash_range(
                    kernel,
                    parting,
                    shape,
                    range,
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
    let mut done = Vec::with_capacity(ranges);
    for result in hashed.into_iter().map(|h| h.into_inner().unwrap()) {
        match result {
            Some(Ok(keys)) => done.push(keys),
            Some(Err(e)) => return Err(e),
            // Left when another range failed.
            None => {}
        }
    }
    if stop_requested() {
        return Err(PlotError::Interrupted);
    }
    assert_eq!(done.len(), ranges, "every range hashed");
    Ok(Hashed {
        parting: parting.clone(),
        keys: Keys::new(done, parting),
        fresh_bytes,
        pool,
    })
}

impl Hashed<'_> {
    /// The last phase: counts, places, fills and writes every partition.
    pub fn write(
        self,
        threads: usize,
        file: &File,
        progress: &dyn Progress,
    ) -> Result<Written, PlotError> {
        let Hashed {
            parting,
            keys,
            fresh_bytes,
            pool,
        } = self;
        progress.phase(super::WRITING_PHASE, parting.layout.record_count());
        let mut sink = RegionSink::new(file, &parting)
            .map_err(|e| PlotError::io("starting the plot's writer", e))?;
        let end = pack_and_write(&parting, threads, &mut sink, progress, &keys);
        keys.ranges.into_iter().for_each(|t| pool.give(t.scatter));
        Ok(Written {
            end: end?,
            fresh_bytes,
            write_time: sink.write_time,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::NoProgress;

    /// Up to k = 27 partitions of 2^17 records; beyond, the fewest that
    /// keep at most about a thousand.
    #[test]
    fn partitions_grow_only_past_a_thousand() {
        for k in 16..=40 {
            let layout = Layout::for_k(k).unwrap();
            let parting = partitioning(layout);
            if k <= 27 {
                let small = Partitioning::new(layout, PARTITION_RECORDS);
                assert_eq!(parting.groups_per_part, small.groups_per_part, "k = {k}");
            } else {
                // Whole groups round the count up a little.
                assert!(parting.count > MAX_PARTITIONS / 2, "k = {k}");
                assert!(parting.count <= MAX_PARTITIONS + 8, "k = {k}");
            }
            // Neither too few nor wrapped around (k = 40's partitions have
            // more than 2^24 buckets of 2^16 records).
            let (records, n) = (parting.records_per_part(), layout.record_count());
            assert!(records >= PARTITION_RECORDS / 2, "k = {k}");
            assert!(
                records >= n / (MAX_PARTITIONS + 8) && records / 2 <= n,
                "k = {k}"
            );
        }
    }

    /// One range a thread, or eight where each range's share of a partition
    /// stays at least [`RANGE_SHARE`] records.
    #[test]
    fn ranges_are_cut_only_where_partitions_can_share() {
        let k28 = partitioning(Layout::for_k(28).unwrap());
        assert_eq!(range_count(&k28, 1), 1);
        assert_eq!(range_count(&k28, 2), 16);
        // 2^18 records a partition, a little less in whole groups.
        assert!((30..32).contains(&range_count(&k28, 4)));
        assert_eq!(range_count(&k28, 64), 64);
        let k16 = partitioning(Layout::for_k(16).unwrap());
        assert_eq!(range_count(&k16, 2), 8);
        for k in 16..=40 {
            let parting = partitioning(Layout::for_k(k).unwrap());
            for threads in [2, 3, 16, 192] {
                let ranges = range_count(&parting, threads);
                assert!(ranges >= threads as u64, "k = {k}, {threads} threads");
                assert!(
                    ranges == threads as u64 || parting.records_per_part() / ranges >= RANGE_SHARE,
                    "k = {k}, {threads} threads"
                );
            }
        }
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
        let (mut plots, mut filed) = (Vec::new(), Vec::new());
        for parting in [
            Partitioning::new(layout, 1 << 12),
            partitioning(layout),
            Partitioning::new(layout, FILED_FROM),
            Partitioning::new(layout, 2 * FILED_FROM),
            Partitioning::new(layout, 2 * layout.record_count()),
        ] {
            let path = dir.path().join(format!("plot-{}", parting.count));
            let file = File::create(&path).unwrap();
            let hashed = hash(&parting, &kernel, 2, &NoProgress, &pool).unwrap();
            filed.push(hashed.keys.filed());
            let written = hashed.write(2, &file, &NoProgress).unwrap();
            plots.push((parting.count, written.end, std::fs::read(&path).unwrap()));
        }
        assert!(plots[0].0 > 1000);
        assert_eq!(plots[4].0, 1);
        assert_eq!(filed, [false, false, false, true, true]);
        for (count, end, bytes) in &plots[1..] {
            assert_eq!(*end, plots[0].1, "{count} partitions");
            assert!(*bytes == plots[0].2, "{count} partitions make another file");
        }
    }

    /// The last phase's CPU work on one thread, without the disk: counting,
    /// placing (and zeroing the slots) and filling every partition of a
    /// k = 28 plot hashed in the ranges two threads take, in its partitions and in
    /// partitions of 2^20 records (k = 30's): `cargo test --release -p
    /// spacevault last_phase_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn last_phase_speed() {
        let layout = Layout::for_k(28).unwrap();
        last_phase_speed_of(partitioning(layout));
        last_phase_speed_of(Partitioning::new(layout, 1 << 20));
    }

    fn last_phase_speed_of(parting: Partitioning) {
        use crate::plot::pack::{place, BufPool, SlotPlacer};
        use std::time::{Duration, Instant};
        let ranges = range_count(&parting, 2);
        let shape = KeyShape::with_buckets(&parting);
        let kernel = Kernel::new(&[7; 32]);
        let n = parting.layout.record_count();
        let cap = slot_capacity(&parting, ranges) as usize;
        let ranges = (0..ranges)
            .map(|r| {
                let mut scatter = Scatter::new(parting.count as usize, cap, Room::Lines).unwrap();
                let mut marks = EpochMarks::default();
                let range = n * r / ranges..n * (r + 1) / ranges;
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
}
