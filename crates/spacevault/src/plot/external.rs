//! Plotting a plot larger than the memory limit.
//!
//! Phase 1 hashes the nonces in rounds that fit in memory and appends each
//! round's 4-byte sort keys to a temp file, grouped by partition, with the
//! epoch marks that complete them (`keys.rs`). Two sets of round buffers
//! alternate: one is hashed into while a writer thread writes the other,
//! straight from memory with O_DIRECT. The last rounds, as many as fit
//! beside phase 2's own memory, are never written: phase 2 takes their keys
//! from memory. Phase 2 reads each partition back once, places its records
//! and writes the plot.
//!
//! Up to k = 32 the keys carry each record's bucket, so phase 2 does not
//! hash at all. Beyond, the marks would take a quarter of a byte a record or
//! more (they grow with the square of the plot), so the keys hold only the
//! nonce and phase 2 hashes every nonce again to find its bucket.
//! The temp file is this process's own, in native byte order. Bytes
//! written: the temp file (about 4 bytes a record, one plot) and the plot;
//! bytes read: the temp file once.

use super::closer::Closer;
use super::files::{create_locked, unique_temp_name, write_all_vectored_at};
use super::keys::{for_each_run, hash_range, EpochMarks, KeyShape, RangeKeys};
use super::pack::SlotPlacer;
use super::partition::Partitioning;
use super::pipeline::{pack_and_write, LastPhaseMemory, PartitionSource, Scratch};
use super::readahead::ReadAhead;
use super::scatter::{bring_into_use, Room, Scatter, ScatterPool};
use super::sink::RegionSink;
use super::windows::Windows;
use super::{stop_requested, PlotError, Progress};
use crate::aligned::AlignedBuf;
use crate::format::Layout;
use crate::kernel::Kernel;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Bytes of temp file a record takes.
const TEMP_RECORD: u64 = 4;
/// Segments are padded to whole pages for O_DIRECT.
const PAGE: u64 = 4096;
/// Memory set aside for everything but the round buffers and partitions.
const RESERVED: u64 = 40 << 20;
/// Records a round hashes at most, for each hashing thread (and never
/// fewer than for two: 2^28). Larger rounds make fewer, larger temp
/// segments, but round buffers beyond this only cost the time to fault in
/// their pages (about 2.5 CPU-seconds a GiB on the development VM) and phase 2
/// reads fine from segments of this size. The limit grows with the threads
/// because a round's keys are split into a segment per thread and
/// partition, each padded to whole pages: with 2^28 records a round, 192
/// threads would leave about 2700 keys a segment at k = 32, and the padding
/// would be a third of the temp file.
const MAX_ROUND_PER_THREAD: u64 = 1 << 27;

fn max_round(threads: usize) -> u64 {
    MAX_ROUND_PER_THREAD * threads.max(2) as u64
}
/// Threads reading the temp file in phase 2.
const READERS: usize = 2;
/// Partitions read ahead in phase 2 beyond one per worker. Four rather
/// than two keep the disk busy while the workers fill: k = 30 with 1 GiB,
/// phase 2 6.2 s -> 5.6 s; more gained nothing.
const READ_AHEAD_EXTRA: usize = 4;
/// Phase 2 holds about this many bytes per record of a partition in
/// flight, for `threads + 2` partitions (the extra read-ahead buffers,
/// 4 bytes a record each, included).
const PHASE2_BYTES_PER_RECORD: u64 = 30;

/// An upper bound on the temp file's size: the keys and marks of the
/// rounds that are written, and up to two pages of padding for each of
/// their segments (one per round, partition and thread).
pub(crate) fn temp_size(layout: &Layout, threads: usize, memory: u64) -> Result<u64, PlotError> {
    let plan = Plan::new(layout, threads, memory, &Overrides::default())?;
    Ok(temp_size_of(&plan, threads))
}

fn temp_size_of(plan: &Plan, threads: usize) -> u64 {
    let written = plan.rounds - plan.resident;
    let segments = written * plan.parting.count * threads as u64;
    let marks = segments * plan.shape.epochs(plan.round / threads as u64 + 1) * MARK;
    temp_key_bytes(plan) + marks + segments * 2 * PAGE
}

/// The keys of the rounds that go through the temp file.
fn temp_key_bytes(plan: &Plan) -> u64 {
    let written = plan.rounds - plan.resident;
    (written * plan.round).min(plan.parting.layout.record_count()) * TEMP_RECORD
}

/// How the two phases share the memory limit.
#[derive(Clone)]
struct Plan {
    parting: Partitioning,
    shape: KeyShape,
    /// Records a round hashes, and rounds in all.
    round: u64,
    rounds: u64,
    /// Room per (thread, partition) in a set of round buffers.
    cap: usize,
    /// The last rounds, whose keys stay in memory for phase 2 instead of
    /// going through the temp file.
    resident: u64,
    /// Sets of round buffers phase 1 allocates.
    sets: u64,
    /// Phase 2's share of the threads: each has a partition in flight (and
    /// one worker more, see [`phase_two`]).
    workers: usize,
}

/// Choices tests force to cover every path at small k.
#[derive(Clone, Copy, Default)]
struct Overrides {
    shape: Option<KeyShape>,
    resident: Option<u64>,
    workers: Option<usize>,
}

impl Plan {
    /// The plan for `threads` hashing threads within `memory`, or an error
    /// that says the least memory that would do.
    fn new(
        layout: &Layout,
        threads: usize,
        memory: u64,
        overrides: &Overrides,
    ) -> Result<Plan, PlotError> {
        Plan::choose(layout, threads, memory, overrides).ok_or_else(|| PlotError::MemoryTooSmall {
            given: memory,
            needed: least_memory(layout, threads, overrides),
        })
    }

    /// Phase 2 with one partition in flight for each thread, unless that
    /// makes partitions so small that the padding of phase 1's segments
    /// (one a round, partition and hashing thread, each padded to whole
    /// pages) becomes a noticeable part of the temp file: many threads
    /// with little memory. Fewer phase 2 workers leave room for larger
    /// partitions, hence fewer and larger segments, so then the most
    /// workers that keep the padding small, or failing that the fewest
    /// bytes of padding and marks for each key: a machine with that many
    /// threads for its memory waits for its disk in phase 2 anyway.
    fn choose(layout: &Layout, threads: usize, memory: u64, overrides: &Overrides) -> Option<Plan> {
        let threads = threads.max(1);
        if let Some(workers) = overrides.workers {
            return Plan::with_workers(layout, threads, workers, memory, overrides);
        }
        let mut least: Option<(Plan, f64)> = None;
        let mut workers = threads;
        loop {
            if let Some(plan) = Plan::with_workers(layout, threads, workers, memory, overrides) {
                let overhead = temp_overhead(&plan, threads);
                if overhead <= MAX_TEMP_OVERHEAD {
                    return Some(plan);
                }
                // Ties go to the plan with more workers, tried first.
                if least.as_ref().is_none_or(|(_, o)| overhead < *o) {
                    least = Some((plan, overhead));
                }
            }
            if workers == 1 {
                return least.map(|(plan, _)| plan);
            }
            workers /= 2;
        }
    }

    fn with_workers(
        layout: &Layout,
        threads: usize,
        workers: usize,
        memory: u64,
        overrides: &Overrides,
    ) -> Option<Plan> {
        let parting = partitioning(layout, workers, memory);
        let shape = overrides.shape.unwrap_or_else(|| temp_shape(&parting));
        let (round, cap) = rounds_plan(layout, &parting, shape, threads, memory)?;
        // Rounds of equal size: a short last round would make keeping the
        // last rounds in memory save less.
        let rounds = layout.record_count().div_ceil(round);
        let round = layout.record_count().div_ceil(rounds);
        // Every set of round buffers that phase 2 can keep beside its own
        // working memory saves writing and reading a round of keys.
        let set = round_set_bytes(&parting, shape, round, cap, threads);
        let phase2 = (workers as u64 + 2) * parting.records_per_part() * PHASE2_BYTES_PER_RECORD;
        let fits = memory.saturating_sub(RESERVED).saturating_sub(phase2) / set;
        let resident = overrides.resident.unwrap_or(fits).min(rounds);
        Some(Plan {
            parting,
            shape,
            round,
            rounds,
            cap,
            resident,
            sets: resident.max(2).min(rounds),
            workers,
        })
    }
}

/// The temp file's bytes beyond its keys (page padding and epoch marks),
/// as a share of the keys: about 4% at k = 32 with two threads and 1 to
/// 4 GiB.
fn temp_overhead(plan: &Plan, threads: usize) -> f64 {
    let keys = temp_key_bytes(plan);
    if keys == 0 {
        return 0.0;
    }
    (temp_size_of(plan, threads) - keys) as f64 / keys as f64
}

/// Beyond this share of padding and marks in the temp file, phase 2 gives
/// up workers for larger partitions.
const MAX_TEMP_OVERHEAD: f64 = 1.0 / 16.0;

/// The least memory limit, to a MiB, for which there is a plan: phase 1
/// needs two sets of round buffers, and a round buffer at least a few
/// pages for each partition and thread.
fn least_memory(layout: &Layout, threads: usize, overrides: &Overrides) -> u64 {
    const MIB: u64 = 1 << 20;
    let works = |mib: u64| Plan::choose(layout, threads, mib * MIB, overrides).is_some();
    let (mut fails, mut enough) = (0u64, 1u64 << 10);
    while !works(enough) {
        if enough >= 1 << 30 {
            return enough * MIB;
        }
        fails = enough;
        enough *= 2;
    }
    while enough - fails > 1 {
        let mid = fails + (enough - fails) / 2;
        if works(mid) {
            enough = mid;
        } else {
            fails = mid;
        }
    }
    enough * MIB
}

/// Bytes of temp file an epoch mark takes.
const MARK: u64 = 4;

/// Keys with buckets when their marks take at most a sixth of a byte a
/// record (k = 32: an eighth), otherwise keys with nonces only.
fn temp_shape(parting: &Partitioning) -> KeyShape {
    let shape = KeyShape::with_buckets(parting);
    let n = parting.layout.record_count();
    let marks = parting.count * shape.epochs(n) * MARK;
    if marks <= n / 6 {
        shape
    } else {
        KeyShape::nonces_only()
    }
}

/// Phase-2 partitions sized so that one per worker fits the memory limit.
fn partitioning(layout: &Layout, workers: usize, memory: u64) -> Partitioning {
    let n = layout.record_count();
    let budget = memory.saturating_sub(RESERVED);
    let by_memory = budget / PHASE2_BYTES_PER_RECORD / (workers as u64 + 2);
    // About 512 partitions keep phase 1's scatter lines close (128 bytes a
    // partition: 64 KiB a thread) and make phase 2's reads larger: at
    // k = 32 with 4 GiB, partitions of 2^23 records rather than 2^21 took
    // phase 1 from 28 to 25.6 s and phase 2 from 20 to 18.7 s. But larger
    // partitions take phase 2 memory that could keep rounds out of the
    // temp file, so beyond 2^21 records they get at most half the budget.
    let wanted = (n / 512).max(1 << 21);
    let target = wanted.min((by_memory / 2).max(1 << 21)).min(by_memory);
    // Over 2^16 partitions would cost a page-padded segment each per round
    // and thread.
    let target = target.max(n >> 16).max(1 << 12);
    Partitioning::new(*layout, target)
}

pub(crate) struct ExternalResult {
    /// The end of the last record, the round buffers' fresh memory and the
    /// time in the plot file's writes.
    pub written: super::Written,
    pub temp_bytes_written: u64,
    /// Whether phase 2 hashed the records again.
    pub hashed_twice: bool,
    /// Rounds phase 1 hashed, and how many of them never went to the temp
    /// file.
    pub rounds: u64,
    pub rounds_in_memory: u64,
}

/// One round's keys of one partition from one thread: the thread's array,
/// page-padded, then a tail of its overflowed keys and the key count in each
/// epoch from `first_epoch` on, page-padded.
#[derive(Clone, Copy)]
struct Segment {
    offset: u64,
    /// Keys in the array, in the overflow, and epochs marked.
    array: u32,
    extra: u32,
    epochs: u32,
    first_epoch: u64,
}

impl Segment {
    fn array_bytes(&self) -> u64 {
        (self.array as u64 * TEMP_RECORD).div_ceil(PAGE) * PAGE
    }

    fn tail_bytes(&self) -> u64 {
        (self.extra as u64 * TEMP_RECORD + self.epochs as u64 * MARK).div_ceil(PAGE) * PAGE
    }

    /// The segment's length in the temp file.
    fn bytes(&self) -> u64 {
        self.array_bytes() + self.tail_bytes()
    }

    /// Its array, overflow and epoch counts, from its bytes.
    fn parts<'b>(&self, bytes: &'b [u8]) -> (&'b [u32], &'b [u32], &'b [u32]) {
        let words = as_words(&bytes[..self.bytes() as usize]);
        let array = &words[..self.array as usize];
        let tail = &words[(self.array_bytes() / TEMP_RECORD) as usize..];
        let (extra, rest) = tail.split_at(self.extra as usize);
        (array, extra, &rest[..self.epochs as usize])
    }
}

/// Page-aligned bytes as native-endian u32 words.
fn as_words(bytes: &[u8]) -> &[u32] {
    // SAFETY: every bit pattern is a valid u32; align_to only yields
    // correctly aligned words, and the checks below make sure none is lost.
    let (head, words, tail) = unsafe { bytes.align_to::<u32>() };
    assert!(
        head.is_empty() && tail.is_empty(),
        "segments are page-aligned"
    );
    words
}

/// The temp file; unlinked when dropped, and closed by `closer` (the close
/// frees its blocks, which can take seconds).
struct TempFile<'a> {
    path: PathBuf,
    file: Option<File>,
    closer: &'a Closer,
}

impl TempFile<'_> {
    fn file(&self) -> &File {
        self.file.as_ref().expect("open until dropped")
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(file) = self.file.take() {
            self.closer.close_later(file);
        }
    }
}

/// Nonces per round and room per (thread, partition), for two sets of round
/// buffers within the memory limit; none when the limit leaves too little
/// room for even small rounds.
fn rounds_plan(
    layout: &Layout,
    parting: &Partitioning,
    shape: KeyShape,
    threads: usize,
    memory: u64,
) -> Option<(u64, usize)> {
    let budget = memory.saturating_sub(RESERVED) / 2;
    let n = layout.record_count();
    let mut round = (budget / TEMP_RECORD).min(n).min(max_round(threads));
    loop {
        let cap = slot_capacity(round, parting.count, threads);
        if round_set_bytes(parting, shape, round, cap, threads) <= budget {
            return Some((round, cap));
        }
        round = round * 9 / 10;
        if round < parting.count * threads as u64 * 64 {
            return None;
        }
    }
}

/// Memory one set of round buffers takes: each thread's scatter and marks
/// (a count per partition at every epoch).
fn round_set_bytes(
    parting: &Partitioning,
    shape: KeyShape,
    round: u64,
    cap: usize,
    threads: usize,
) -> u64 {
    let marks = shape.epochs(round / threads as u64 + 1) * parting.count * 4;
    threads as u64 * (Scatter::<u32>::bytes(parting.count as usize, cap, Room::Pages) + marks)
}

fn slot_capacity(round: u64, parts: u64, threads: usize) -> usize {
    let mean = round as f64 / (parts as f64 * threads as f64);
    (mean + 6.0 * mean.sqrt() + 16.0) as usize
}

/// Each partition's segments in one round.
type RoundSegments = Vec<Vec<Segment>>;

/// One round's buffers: a scatter per thread.
type RoundBuffers = Vec<RangeKeys>;

/// Phase 1's work, ready for phase 2: the temp file and the round buffers
/// kept in memory.
pub(crate) struct Sorted<'a> {
    plan: Plan,
    temp: TempFile<'a>,
    segments: Vec<RoundSegments>,
    resident: Vec<RoundBuffers>,
    temp_bytes_written: u64,
    fresh_bytes: u64,
}

/// What phase 1 does with the sets of round buffers that do not stay in
/// memory for phase 2.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Spares {
    /// Frees them before phase 2 allocates its own memory: a plot alone
    /// has the whole limit to itself in each phase.
    Free,
    /// Gives them to the pool for the next plot's phase 1, which runs
    /// beside this plot's phase 2 in the other half of the limit.
    Pool,
}

/// Phase 1: hashes every nonce into round buffers taken from `pool` and
/// writes all but the last rounds to a temp file in `tmp_dir`.
pub(crate) fn phase_one<'a>(
    layout: &Layout,
    kernel: &Kernel,
    threads: usize,
    memory: u64,
    (tmp_dir, closer): (&Path, &'a Closer),
    progress: &dyn Progress,
    (pool, spares, kept): (&ScatterPool, Spares, &LastPhaseMemory),
) -> Result<Sorted<'a>, PlotError> {
    let plan = Plan::new(layout, threads, memory, &Overrides::default())?;
    // The last plot's phase 2 buffers wait for this plot's phase 2 beside
    // the round buffers only where the limit holds both: a plan that keeps
    // fewer than two rounds in memory still needs two sets of round
    // buffers, which can take the memory phase 2 will use.
    let sets =
        plan.sets * round_set_bytes(&plan.parting, plan.shape, plan.round, plan.cap, threads);
    if sets + kept.bytes() > memory.saturating_sub(RESERVED) {
        kept.free();
    }
    hash_to_temp(
        plan,
        kernel,
        threads,
        (tmp_dir, closer),
        progress,
        (pool, spares),
    )
}

fn hash_to_temp<'a>(
    plan: Plan,
    kernel: &Kernel,
    threads: usize,
    (tmp_dir, closer): (&Path, &'a Closer),
    progress: &dyn Progress,
    (pool, spares): (&ScatterPool, Spares),
) -> Result<Sorted<'a>, PlotError> {
    let Plan {
        ref parting,
        shape,
        round,
        cap,
        ..
    } = plan;
    let layout = &parting.layout;
    let n = layout.record_count();
    let parts = parting.count as usize;

    // Several plotters may share a temp directory, even plotting the same
    // plot into different output directories: the name is this run's own.
    let temp_path = tmp_dir.join(unique_temp_name(
        &format!(
            "spacevault-k{}-{}",
            layout.k,
            hex::encode(&kernel.hash(u64::MAX)[..8])
        ),
        "sort",
    ));
    let file = create_locked(&temp_path, true)
        .map_err(|e| PlotError::io(format!("creating temp file {}", temp_path.display()), e))?;
    let temp = TempFile {
        path: temp_path,
        file: Some(file),
        closer,
    };

    // Hash into one set of buffers while the writer writes another; the
    // last rounds stay in memory.
    let rounds: Vec<u64> = (0..plan.rounds).map(|r| r * round).collect();
    let written_rounds = (plan.rounds - plan.resident) as usize;
    pool.keep_only(&vec![
        (parts, cap, Room::Pages);
        plan.sets as usize * threads
    ]);
    let mut sets: Vec<RoundBuffers> = Vec::new();
    for _ in 0..plan.sets {
        sets.push(
            (0..threads)
                .map(|_| {
                    pool.take(parts, cap, Room::Pages).map(|scatter| RangeKeys {
                        scatter,
                        marks: EpochMarks::default(),
                    })
                })
                .collect::<Result<_, _>>()?,
        );
    }
    let scatters = sets.iter_mut().flatten().map(|t| &mut t.scatter).collect();
    let fresh_bytes = bring_into_use(scatters, threads, progress);
    progress.phase(super::TEMP_PHASE, n);
    let (segments, temp_bytes_written, resident) = std::thread::scope(
        |s| -> Result<(Vec<RoundSegments>, u64, Vec<RoundBuffers>), PlotError> {
            let (to_writer, writer_rx) = mpsc::sync_channel::<RoundBuffers>(1);
            let (from_writer, returned) = mpsc::channel::<Result<RoundBuffers, PlotError>>();
            let temp = &temp;
            let writer = s.spawn(move || -> (Vec<RoundSegments>, u64) {
                let mut offset = 0u64;
                let mut all = Vec::new();
                let mut staging = AlignedBuf::zeroed(PAGE as usize);
                for buffers in writer_rx {
                    match write_round(temp.file(), &buffers, parts, &mut offset, &mut staging) {
                        Ok(segs) => {
                            all.push(segs);
                            if from_writer.send(Ok(buffers)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = from_writer.send(Err(e));
                            break;
                        }
                    }
                }
                (all, offset)
            });
            let mut hashers = Hashers::start(s, threads, (kernel, parting, shape), progress);
            let mut free = sets;
            let mut kept = Vec::new();
            // Each round is handed to the hashing threads before the one
            // before it is finished, so a thread done with its share goes
            // on to the next round's instead of waiting for the others.
            let mut finish = |j: usize, hashers: &mut Hashers| -> Result<(), PlotError> {
                let buffers = hashers.collect(j)?;
                if stop_requested() {
                    return Err(PlotError::Interrupted);
                }
                if j < written_rounds {
                    to_writer.send(buffers).map_err(|_| PlotError::Aborted)?;
                } else {
                    kept.push(buffers);
                }
                Ok(())
            };
            let mut pending = None;
            for (i, &base) in rounds.iter().enumerate() {
                let buffers = match free.pop() {
                    Some(b) => b,
                    None => returned.recv().map_err(|_| PlotError::Aborted)??,
                };
                hashers.hand_out(i, base..base + round.min(n - base), buffers)?;
                if let Some(j) = pending.replace(i) {
                    finish(j, &mut hashers)?;
                }
            }
            if let Some(j) = pending {
                finish(j, &mut hashers)?;
            }
            drop(hashers);
            drop(to_writer);
            // Surface a write error from the last rounds. The sets not kept
            // are freed here, before phase 2 allocates its own memory, or
            // handed on to the next plot.
            let spare = free.into_iter().map(Ok).chain(returned.iter());
            for buffers in spare {
                let buffers = buffers?;
                if spares == Spares::Pool {
                    buffers.into_iter().for_each(|t| pool.give(t.scatter));
                }
            }
            let (all, bytes) = writer.join().expect("temp writer panicked");
            if all.len() != written_rounds {
                return Err(PlotError::Aborted);
            }
            Ok((all, bytes, kept))
        },
    )?;
    Ok(Sorted {
        plan,
        temp,
        segments,
        resident,
        temp_bytes_written,
        fresh_bytes,
    })
}

/// Phase 2: reads each partition back from the temp file and the rounds
/// kept in memory, places its records and writes the plot to `out`. The
/// resident round buffers go back to `pool`, phase 2's own to `kept`.
pub(crate) fn phase_two(
    sorted: Sorted,
    kernel: &Kernel,
    out: &File,
    progress: &dyn Progress,
    (pool, kept): (&ScatterPool, &LastPhaseMemory),
) -> Result<ExternalResult, PlotError> {
    let Sorted {
        plan,
        temp,
        segments,
        resident,
        temp_bytes_written,
        fresh_bytes,
    } = sorted;
    let Plan {
        ref parting, shape, ..
    } = plan;
    let n = parting.layout.record_count();

    // Reader threads read partitions ahead; one more worker than the plan's
    // share of the cores keeps them busy while a worker waits for its turn
    // to place.
    progress.phase(super::WRITING_PHASE, n);
    let mut buffers = kept.take(parting);
    let staging = std::mem::take(&mut buffers.staging);
    let mut sink = RegionSink::with_staging(out, parting, staging)
        .map_err(|e| PlotError::io("starting the plot's writer", e))?;
    let ahead = ReadAhead::with_buffers(
        plan.workers + READ_AHEAD_EXTRA,
        std::mem::take(&mut buffers.reads),
    );
    let source = TempSource {
        segments: &segments,
        resident: &resident,
        shape,
        parting,
        kernel,
        ahead: &ahead,
    };
    let end = std::thread::scope(|s| {
        // Two reads in flight read faster than one, even from one disk.
        for _ in 0..READERS {
            s.spawn(|| {
                ahead.run(parting.count, |p, buf| {
                    read_partition(temp.file(), &segments, p, buf)
                })
            });
        }
        let end = pack_and_write(
            parting,
            plan.workers + 1,
            &mut sink,
            progress,
            &source,
            &buffers,
        );
        ahead.close();
        end
    })?;
    buffers.reads = ahead.into_buffers();
    let write_time = sink.write_time;
    buffers.staging = sink.into_staging();
    kept.keep(parting, buffers);
    drop(temp);
    // The next plot's phase 1 takes them from the pool.
    resident
        .into_iter()
        .flatten()
        .for_each(|t| pool.give(t.scatter));
    Ok(ExternalResult {
        written: super::Written {
            end,
            fresh_bytes,
            write_time,
        },
        temp_bytes_written,
        hashed_twice: !shape.has_buckets(),
        rounds: plan.rounds,
        rounds_in_memory: plan.resident,
    })
}

/// Phase 2's partitions: read back from the temp file, then taken from the
/// rounds kept in memory (and hashed again when the keys hold no buckets).
struct TempSource<'a> {
    segments: &'a [RoundSegments],
    resident: &'a [RoundBuffers],
    shape: KeyShape,
    parting: &'a Partitioning,
    kernel: &'a Kernel,
    ahead: &'a ReadAhead,
}

/// Reads partition p's segments, one after another, into `buf`. Segments
/// that follow each other in the file (a round's threads) are read at once.
fn read_partition(
    file: &File,
    segments: &[RoundSegments],
    p: u64,
    buf: &mut AlignedBuf,
) -> Result<(), PlotError> {
    let segs = || segments.iter().flat_map(|round| &round[p as usize]);
    let total: u64 = segs().map(Segment::bytes).sum();
    if (buf.len() as u64) < total {
        *buf = AlignedBuf::zeroed(total as usize);
    }
    // (file offset, length) of each run of adjacent segments.
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for seg in segs() {
        match runs.last_mut() {
            Some((offset, len)) if *offset + *len == seg.offset => *len += seg.bytes(),
            _ => runs.push((seg.offset, seg.bytes())),
        }
    }
    let mut at = 0usize;
    for (offset, len) in runs {
        file.read_exact_at(&mut buf[at..at + len as usize], offset)
            .map_err(|e| match e.kind() {
                // Only another process could have cut the file short.
                std::io::ErrorKind::UnexpectedEof => PlotError::io(
                    "reading the temp file",
                    std::io::Error::other(format!(
                        "it ends before byte {}, which this plot wrote: another process truncated it",
                        offset + len
                    )),
                ),
                _ => PlotError::io("reading the temp file", e),
            })?;
        at += len as usize;
    }
    Ok(())
}

impl PartitionSource for TempSource<'_> {
    /// Takes the partition's keys from the read-ahead, then from the rounds
    /// kept in memory (ascending by nonce: rounds, threads and each
    /// thread's array then overflow all come in nonce order), counts them
    /// by bucket and files them by window.
    fn count(&self, p: u64, scratch: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError> {
        let Scratch {
            windows,
            nonces,
            prefixes,
        } = scratch;
        windows.reset(counts.len(), self.parting.records_per_part() as usize);
        let buf = self.ahead.take(p)?;
        let mut at = 0usize;
        for seg in self.segments.iter().flat_map(|round| &round[p as usize]) {
            let (array, extra, epochs) = seg.parts(&buf[at..]);
            at += seg.bytes() as usize;
            let keys = (array, extra, seg.first_epoch, epochs.iter().copied());
            self.file_keys(p, keys, windows, nonces, prefixes)?;
        }
        self.ahead.give_back(buf);
        for thread in self.resident.iter().flatten() {
            let (array, extra, first_epoch, epochs) = thread.partition(p);
            let keys = (array, &extra[..], first_epoch, epochs);
            self.file_keys(p, keys, windows, nonces, prefixes)?;
        }
        windows.add_counts(counts);
        Ok(())
    }

    fn fill(&self, _: u64, scratch: &mut Scratch, placer: &mut SlotPlacer) {
        scratch.windows.place(placer);
    }
}

impl TempSource<'_> {
    /// Counts one thread's keys of one round by bucket and files them by
    /// window: `(array, overflow, first epoch, keys in each epoch)`.
    fn file_keys(
        &self,
        p: u64,
        (array, extra, first_epoch, epochs): (&[u32], &[u32], u64, impl Iterator<Item = u32>),
        windows: &mut Windows,
        nonces: &mut Vec<u64>,
        prefixes: &mut Vec<u64>,
    ) -> Result<(), PlotError> {
        let shape = self.shape;
        let damaged = || {
            PlotError::Inconsistent(format!(
                "the temp file's keys of partition {p} do not add up"
            ))
        };
        let covered = if shape.has_buckets() {
            windows
                .file_keys((array, extra), first_epoch, epochs, shape)
                .ok_or_else(damaged)?
        } else {
            nonces.clear();
            let covered = for_each_run(array, extra, first_epoch, epochs, |keys, epoch| {
                nonces.extend(keys.iter().map(|&key| shape.nonce(key, epoch)))
            });
            self.bucket_by_hashing(p, nonces, prefixes, windows)?;
            covered
        };
        if covered != array.len() + extra.len() {
            return Err(damaged());
        }
        Ok(())
    }

    /// Hashes `nonces` a block at a time to find their buckets, counts them
    /// and files them by window.
    fn bucket_by_hashing(
        &self,
        p: u64,
        nonces: &[u64],
        prefixes: &mut Vec<u64>,
        windows: &mut Windows,
    ) -> Result<(), PlotError> {
        let layout = &self.parting.layout;
        let first_bucket = self.parting.buckets(p).start;
        prefixes.resize(HASH_BLOCK, 0);
        for block in nonces.chunks(HASH_BLOCK) {
            let n = block.len();
            self.kernel.prefixes_of(block, &mut prefixes[..n]);
            // Every record belongs here, so its bucket within the
            // partition is a subtraction; anything out of range wraps to a
            // huge value and is caught below.
            let mut worst = 0u64;
            for prefix in prefixes[..n].iter_mut() {
                *prefix = layout.bucket_of_prefix(*prefix).wrapping_sub(first_bucket);
                worst = worst.max(*prefix);
            }
            if worst >= windows.buckets() as u64 {
                let (q, _) = self.parting.locate(worst.wrapping_add(first_bucket));
                return Err(PlotError::Inconsistent(format!(
                    "a record of partition {q} came back with partition {p}"
                )));
            }
            windows.file_nonces(block, &prefixes[..n]);
        }
        Ok(())
    }
}

/// Nonces hashed at once in phase 2: their buffers stay in L1.
const HASH_BLOCK: usize = 2048;

/// A thread's share of a round: its nonces and the buffers they go to.
struct Share {
    round: usize,
    nonces: Range<u64>,
    keys: RangeKeys,
}

/// A share hashed, or the error that stopped it.
struct HashedShare {
    round: usize,
    thread: usize,
    keys: RangeKeys,
    result: Result<(), PlotError>,
}

/// Phase 1's hashing threads, one for each of a round's buffers, kept for
/// the whole phase. Each hashes its contiguous share of every round in
/// turn. With a join after every round, the faster thread waited for the
/// slower at each round's end: 0.8 s in all over a k = 32 plot's 16
/// rounds (0.003 to 0.16 s a round), 4% of phase 1. Now a thread done
/// with its share goes on to its share of the next round as soon as that
/// round's buffers are free, which they are while the writer keeps up.
struct Hashers {
    shares: Vec<mpsc::SyncSender<Share>>,
    hashed: mpsc::Receiver<HashedShare>,
    /// Shares of later rounds that came in while waiting for an earlier.
    early: Vec<HashedShare>,
}

impl Hashers {
    fn start<'scope>(
        s: &'scope std::thread::Scope<'scope, '_>,
        threads: usize,
        (kernel, parting, shape): (&'scope Kernel, &'scope Partitioning, KeyShape),
        progress: &'scope dyn Progress,
    ) -> Hashers {
        let (done, hashed) = mpsc::channel();
        let shares = (0..threads)
            .map(|thread| {
                // Room for the share after the one in hand.
                let (tx, rx) = mpsc::sync_channel::<Share>(2);
                let done = done.clone();
                s.spawn(move || {
                    for Share {
                        round,
                        nonces,
                        keys,
                    } in rx
                    {
                        let RangeKeys {
                            mut scatter,
                            mut marks,
                        } = keys;
                        scatter.clear();
                        let result = hash_range(
                            kernel,
                            parting,
                            shape,
                            nonces,
                            &mut scatter,
                            &mut marks,
                            progress,
                        );
                        let keys = RangeKeys { scatter, marks };
                        let share = HashedShare {
                            round,
                            thread,
                            keys,
                            result,
                        };
                        if done.send(share).is_err() {
                            return;
                        }
                    }
                });
                tx
            })
            .collect();
        Hashers {
            shares,
            hashed,
            early: Vec::new(),
        }
    }

    /// Hands round `round`'s nonces to the threads, a contiguous share
    /// each, into `buffers` (one for each thread).
    fn hand_out(
        &self,
        round: usize,
        nonces: Range<u64>,
        buffers: RoundBuffers,
    ) -> Result<(), PlotError> {
        let threads = self.shares.len() as u64;
        assert_eq!(buffers.len() as u64, threads, "a buffer a thread");
        let (base, len) = (nonces.start, nonces.end - nonces.start);
        for ((t, keys), to) in buffers.into_iter().enumerate().zip(&self.shares) {
            let t = t as u64;
            let nonces = base + len * t / threads..base + len * (t + 1) / threads;
            let share = Share {
                round,
                nonces,
                keys,
            };
            to.send(share).map_err(|_| PlotError::Aborted)?;
        }
        Ok(())
    }

    /// Waits for every share of round `round`; returns its buffers in
    /// thread order.
    fn collect(&mut self, round: usize) -> Result<RoundBuffers, PlotError> {
        let mut buffers: Vec<Option<RangeKeys>> = self.shares.iter().map(|_| None).collect();
        let mut missing = buffers.len();
        while missing > 0 {
            let share = match self.early.iter().position(|s| s.round == round) {
                Some(i) => self.early.swap_remove(i),
                None => self.hashed.recv().map_err(|_| PlotError::Aborted)?,
            };
            if share.round != round {
                self.early.push(share);
                continue;
            }
            share.result?;
            buffers[share.thread] = Some(share.keys);
            missing -= 1;
        }
        Ok(buffers
            .into_iter()
            .map(|b| b.expect("every share"))
            .collect())
    }
}

/// Tails staged before they are written, with the arrays between them, in
/// one vectored write.
const STAGING_BYTES: usize = 4 << 20;

/// Appends one round to the temp file: for each partition, each thread's
/// array (page-padded, written in place) and tail. Returns the segments by
/// partition.
fn write_round(
    file: &File,
    buffers: &RoundBuffers,
    parts: usize,
    offset: &mut u64,
    staging: &mut AlignedBuf,
) -> Result<Vec<Vec<Segment>>, PlotError> {
    let mut segments = Vec::with_capacity(parts);
    let err = |e| PlotError::io("writing the temp file", e);
    // Segments staged (partition, thread, segment), whose bytes start at
    // `batch_start`.
    let mut batch: Vec<(u64, usize, Segment)> = Vec::new();
    let mut batch_start = *offset;
    let mut staged = 0usize;
    for p in 0..parts as u64 {
        let mut segs = Vec::with_capacity(buffers.len());
        for (t, round) in buffers.iter().enumerate() {
            let (_, count) = round.scatter.page_padded_bytes(p);
            let extra: Vec<u32> = round.scatter.records(p).1.collect();
            if count == 0 && extra.is_empty() {
                continue;
            }
            let (first_epoch, counts) = round.marks.counts(p);
            let tail: Vec<u32> = extra.iter().copied().chain(counts).collect();
            let seg = Segment {
                offset: *offset,
                array: count as u32,
                extra: extra.len() as u32,
                epochs: (tail.len() - extra.len()) as u32,
                first_epoch,
            };
            let tail_bytes = seg.tail_bytes() as usize;
            if staged + tail_bytes > staging.len() {
                flush_batch(file, buffers, &mut batch, batch_start, staging).map_err(err)?;
                batch_start = *offset;
                staged = 0;
                if tail_bytes > staging.len() {
                    *staging = AlignedBuf::zeroed(tail_bytes.max(STAGING_BYTES));
                }
            }
            let dst = &mut staging[staged..staged + tail_bytes];
            dst.fill(0);
            for (d, v) in dst.chunks_exact_mut(4).zip(&tail) {
                d.copy_from_slice(&v.to_ne_bytes());
            }
            staged += tail_bytes;
            *offset += seg.bytes();
            batch.push((p, t, seg));
            segs.push(seg);
        }
        segments.push(segs);
    }
    flush_batch(file, buffers, &mut batch, batch_start, staging).map_err(err)?;
    Ok(segments)
}

/// Writes the batch's segments, each its array straight from the scatter
/// and its tail from `staging`, in as few system calls as possible.
fn flush_batch(
    file: &File,
    buffers: &RoundBuffers,
    batch: &mut Vec<(u64, usize, Segment)>,
    start: u64,
    staging: &AlignedBuf,
) -> std::io::Result<()> {
    let mut slices: Vec<&[u8]> = Vec::with_capacity(batch.len() * 2);
    let mut staged = 0usize;
    for (p, t, seg) in batch.iter() {
        let (array, _) = buffers[*t].scatter.page_padded_bytes(*p);
        debug_assert_eq!(array.len() as u64, seg.array_bytes());
        slices.push(array);
        let tail = seg.tail_bytes() as usize;
        slices.push(&staging[staged..staged + tail]);
        staged += tail;
    }
    let result = write_all_vectored_at(file, &slices, start);
    batch.clear();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::NoProgress;

    /// Keys with buckets and keys that make phase 2 hash again give the
    /// same plot, whether every round goes through the temp file, some
    /// stay in memory or all do, and with one phase 2 worker or more (which
    /// changes the partitions): in many rounds and partitions with 42 MiB,
    /// in one round with 120 MiB. Buffers kept from one plot are reused by
    /// the next, as they are for `--count`.
    #[test]
    fn key_shapes_and_resident_rounds_make_the_same_plot() {
        let layout = Layout::for_k(20).unwrap();
        let kernel = Kernel::new(&[7; 32]);
        let dir = tempfile::tempdir().unwrap();
        let nonces = Some(KeyShape::nonces_only());
        let mut plots = Vec::new();
        let pool = ScatterPool::default();
        // Phase 2's buffers, kept from plot to plot: each plot must come
        // out the same whatever the buffers held before.
        let last_phase = LastPhaseMemory::default();
        let closer = Closer::default();
        for (memory, shape, resident, workers, spares) in [
            (42 << 20, None, Some(0), None, Spares::Free),
            (42 << 20, None, Some(2), None, Spares::Free),
            (42 << 20, None, Some(99), None, Spares::Free),
            (42 << 20, None, Some(1), Some(1), Spares::Free),
            (42 << 20, nonces, Some(0), None, Spares::Pool),
            (42 << 20, nonces, Some(1), None, Spares::Pool),
            (120 << 20, nonces, Some(0), None, Spares::Free),
            (120 << 20, None, None, None, Spares::Free),
        ] {
            let out = File::create(dir.path().join("plot")).unwrap();
            let overrides = Overrides {
                shape,
                resident,
                workers,
            };
            let plan = Plan::new(&layout, 2, memory, &overrides).unwrap();
            let temp = (dir.path(), &closer);
            let sorted = hash_to_temp(plan.clone(), &kernel, 2, temp, &NoProgress, (&pool, spares));
            // Sets that phase 2 does not need are freed or handed on.
            let spare_sets = plan.sets - plan.resident;
            let (handed_on, kept) = match spares {
                Spares::Free => (0, plan.resident),
                Spares::Pool => (spare_sets, plan.sets),
            };
            assert_eq!(pool.kept() as u64, handed_on * 2);
            let pools = (&pool, &last_phase);
            let result = phase_two(sorted.unwrap(), &kernel, &out, &NoProgress, pools).unwrap();
            let (regions, scratch, reads, _) = last_phase.kept_buffers();
            assert!(regions > 0 && reads > 0);
            assert_eq!(scratch, plan.workers + 1);
            assert_eq!(result.rounds, plan.rounds);
            assert_eq!(result.rounds_in_memory, plan.resident);
            assert_eq!(pool.kept() as u64, kept * 2);
            let written = plan.rounds - plan.resident;
            assert!(result.temp_bytes_written >= (written * plan.round).min(1 << 20) * 4);
            assert!(result.temp_bytes_written <= temp_size_of(&plan, 2));
            plots.push((
                result.written.end,
                std::fs::read(dir.path().join("plot")).unwrap(),
            ));
        }
        let plan = Plan::new(&layout, 2, 42 << 20, &Overrides::default()).unwrap();
        assert!(plan.shape.has_buckets());
        assert!(plan.round * 3 < layout.record_count() && plan.parting.count > 10);
        assert!(plots.iter().all(|p| *p == plots[0]), "the plots differ");
        // Nothing is left behind in the temp directory.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn phase_one_keeps_phase_two_buffers_only_within_the_limit() {
        let layout = Layout::for_k(20).unwrap();
        let kernel = Kernel::new(&[7; 32]);
        let dir = tempfile::tempdir().unwrap();
        let (pool, closer) = (ScatterPool::default(), Closer::default());
        // At 42 MiB two sets of round buffers take what is left after the
        // reserve; at 400 MiB every round stays in memory with room to spare.
        for (memory, still_kept) in [(42 << 20, false), (400 << 20, true)] {
            let plan = Plan::new(&layout, 2, memory, &Overrides::default()).unwrap();
            let kept = LastPhaseMemory::default();
            let mut buffers = kept.take(&plan.parting);
            buffers.reads = vec![AlignedBuf::zeroed(8 << 20)];
            kept.keep(&plan.parting, buffers);
            assert_eq!(kept.bytes(), 8 << 20);
            let temp = (dir.path(), &closer);
            let pools = (&pool, Spares::Free, &kept);
            let sorted = phase_one(&layout, &kernel, 2, memory, temp, &NoProgress, pools).unwrap();
            assert_eq!(kept.bytes() > 0, still_kept, "{memory} bytes");
            drop(sorted);
        }
    }

    #[test]
    fn memory_to_spare_keeps_rounds_out_of_the_temp_file() {
        // k = 32 with 4 GiB: rounds of 2^28 records, 1 GiB each; phase 2
        // sets aside 960 MiB for partitions of 2^23 records, so two rounds
        // stay in memory.
        let layout = Layout::for_k(32).unwrap();
        let plan = Plan::new(&layout, 2, 4 << 30, &Overrides::default()).unwrap();
        assert_eq!((plan.round, plan.rounds, plan.workers), (1 << 28, 16, 2));
        assert!((510..=515).contains(&plan.parting.count));
        assert_eq!((plan.resident, plan.sets), (2, 2));
        // With half of that, as plots that overlap get: 19 rounds, one of
        // them kept.
        let plan = Plan::new(&layout, 2, 2 << 30, &Overrides::default()).unwrap();
        assert_eq!((plan.rounds, plan.resident, plan.sets), (19, 1, 2));
        // k = 30 with 1 GiB: two sets of about 490 MiB in phase 1, and
        // one of them fits beside phase 2's 240 MiB.
        let layout = Layout::for_k(30).unwrap();
        let plan = Plan::new(&layout, 2, 1 << 30, &Overrides::default()).unwrap();
        assert_eq!((plan.resident, plan.sets), (1, 2));
        // With 256 MiB phase 2 needs all of it: no round stays.
        let plan = Plan::new(&layout, 2, 256 << 20, &Overrides::default()).unwrap();
        assert_eq!((plan.resident, plan.sets), (0, 2));
        // The temp file shrinks by the rounds kept.
        let full = temp_size_of(
            &Plan {
                resident: 0,
                ..plan
            },
            2,
        );
        assert!(temp_size(&Layout::for_k(32).unwrap(), 2, 4 << 30).unwrap() < full * 4);
    }

    #[test]
    fn a_limit_too_small_says_the_least_that_works() {
        // Checked against the planner itself, to the MiB: machines from
        // one thread to many, plots from small to large.
        for (k, threads) in [(20u8, 1usize), (26, 2), (32, 2), (32, 4), (34, 64)] {
            let layout = Layout::for_k(k).unwrap();
            let plan = |memory| Plan::new(&layout, threads, memory, &Overrides::default());
            let Err(PlotError::MemoryTooSmall { given, needed }) = plan(1 << 20) else {
                panic!("k {k}, {threads} threads: 1 MiB was enough");
            };
            assert_eq!(given, 1 << 20);
            assert!(plan(needed).is_ok(), "k {k}, {threads} threads: {needed}");
            assert!(
                plan(needed - (1 << 20)).is_err(),
                "k {k}, {threads} threads"
            );
            // Not the figure of a partitioning for 1 MiB (65536 partitions
            // at k = 32, 2.1 GiB with four threads): at most a few hundred
            // MiB up to k = 32, on up to four threads.
            if threads <= 4 {
                assert!(needed <= 320 << 20, "k {k}, {threads} threads: {needed}");
            }
        }
    }

    #[test]
    fn many_threads_keep_the_temp_files_padding_small() {
        // Every round, partition and hashing thread has a page-padded
        // segment. With one phase 2 worker a thread and rounds of 2^28,
        // k = 34 on 192 threads with 64 GiB wrote 3.8 bytes of temp file a
        // plot byte, k = 36 15.5; larger rounds and fewer workers, when
        // that is what keeps partitions large, bring both below 1.
        for (k, threads, memory_gib) in [(34u8, 192usize, 64u64), (36, 192, 64), (34, 64, 64)] {
            let layout = Layout::for_k(k).unwrap();
            let plan =
                Plan::new(&layout, threads, memory_gib << 30, &Overrides::default()).unwrap();
            let overhead = temp_overhead(&plan, threads);
            assert!(overhead <= MAX_TEMP_OVERHEAD, "k {k}: {overhead}");
            let plot_bytes = layout.record_count() * (k as u64 + 1) / 8;
            assert!(temp_size_of(&plan, threads) < plot_bytes, "k {k}");
            assert!(plan.workers >= 8, "k {k}: {} workers", plan.workers);
        }
        // Where padding is small, every thread is a phase 2 worker.
        let plan = Plan::new(
            &Layout::for_k(32).unwrap(),
            16,
            16 << 30,
            &Overrides::default(),
        );
        assert_eq!(plan.unwrap().workers, 16);
    }

    #[test]
    fn marks_decide_the_key_shape() {
        // k = 32 in 2^21-record partitions: an eighth of a byte of marks a
        // record, so the keys carry buckets; k = 34: half a byte, so not.
        for (k, buckets) in [(32u8, true), (34, false)] {
            let parting = partitioning(&Layout::for_k(k).unwrap(), 2, 4 << 30);
            assert_eq!(temp_shape(&parting).has_buckets(), buckets, "k {k}");
        }
    }
}
