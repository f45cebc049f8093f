//! How an external plot shares its memory limit between its two phases:
//! rounds, partitions, the key shape, and the temp file's size.

use super::temp_file::{MARK, PAGE, TEMP_RECORD};
use crate::format::Layout;
use crate::plot::key_shape::KeyShape;
use crate::plot::partition::Partitioning;
use crate::plot::scatter::{Room, Scatter};
use crate::plot::PlotError;

/// Memory set aside for everything but the round buffers and partitions.
pub(super) const RESERVED: u64 = 40 << 20;
/// Records a round hashes at most, for each hashing thread (and never
/// fewer than for two: 2^28). Larger rounds make fewer, larger temp
/// segments, but round buffers beyond this only cost the time to fault in
/// their pages, and phase 2 reads fine from segments of this size. The limit grows with the threads
/// because a round's keys are split into a segment per thread and
/// partition, each padded to whole pages: with 2^28 records a round, 192
/// threads would leave about 2700 keys a segment at k = 32, and the padding
/// would be a third of the temp file.
pub(super) const MAX_ROUND_PER_THREAD: u64 = 1 << 27;

pub(super) fn max_round(threads: usize) -> u64 {
    MAX_ROUND_PER_THREAD * threads.max(2) as u64
}
/// Threads reading the temp file in phase 2.
pub(super) const READERS: usize = 2;
/// Partitions read ahead in phase 2 beyond one per worker. Four rather
/// than two keep the disk busy while the workers fill; more gained
/// nothing.
pub(super) const READ_AHEAD_EXTRA: usize = 4;
/// Phase 2 holds about this many bytes per record of a partition in
/// flight, for `threads + 2` partitions (the extra read-ahead buffers,
/// 4 bytes a record each, included).
pub(super) const PHASE2_BYTES_PER_RECORD: u64 = 30;

/// An upper bound on the temp file's size: the keys and marks of the
/// rounds that are written, and up to two pages of padding for each of
/// their segments (one per round, partition and thread).
#[cfg(test)]
pub(crate) fn temp_size(layout: &Layout, threads: usize, memory: u64) -> Result<u64, PlotError> {
    let plan = Plan::new(layout, threads, memory, &Overrides::default())?;
    Ok(temp_size_of(&plan, threads))
}

pub(crate) fn temp_size_of(plan: &Plan, threads: usize) -> u64 {
    let written = plan.rounds - plan.resident;
    let segments = written * plan.parting.count * threads as u64;
    let marks = segments * plan.shape.epochs(plan.round / threads as u64 + 1) * MARK;
    temp_key_bytes(plan) + marks + segments * 2 * PAGE
}

/// The keys of the rounds that go through the temp file.
pub(super) fn temp_key_bytes(plan: &Plan) -> u64 {
    let written = plan.rounds - plan.resident;
    (written * plan.round).min(plan.parting.layout.record_count()) * TEMP_RECORD
}

/// How the two phases share the memory limit.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(super) parting: Partitioning,
    pub(super) shape: KeyShape,
    /// Records a round hashes, and rounds in all.
    pub(super) round: u64,
    pub(super) rounds: u64,
    /// Room per (thread, partition) in a set of round buffers.
    pub(super) cap: usize,
    /// The last rounds, whose keys stay in memory for phase 2 instead of
    /// going through the temp file.
    pub(super) resident: u64,
    /// Sets of round buffers phase 1 allocates.
    pub(super) sets: u64,
    /// Phase 2's share of the threads: each has a partition in flight (and
    /// one worker more, see [`phase_two`]).
    pub(super) workers: usize,
}

/// Choices tests force to cover every path at small k.
#[derive(Clone, Copy, Default)]
pub(super) struct Overrides {
    pub(super) shape: Option<KeyShape>,
    pub(super) resident: Option<u64>,
    pub(super) workers: Option<usize>,
}

impl Plan {
    /// The plan for `threads` hashing threads within `memory`.
    pub(crate) fn for_limit(
        layout: &Layout,
        threads: usize,
        memory: u64,
    ) -> Result<Plan, PlotError> {
        Plan::new(layout, threads, memory, &Overrides::default())
    }

    pub(crate) fn partitions(&self) -> u64 {
        self.parting.count
    }

    pub(crate) fn rounds(&self) -> u64 {
        self.rounds
    }

    pub(crate) fn records_per_round(&self) -> u64 {
        self.round
    }

    pub(crate) fn rounds_in_memory(&self) -> u64 {
        self.resident
    }

    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// The plan for `threads` hashing threads within `memory`, or an error
    /// that says the least memory that would do.
    pub(super) fn new(
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
    pub(super) fn choose(
        layout: &Layout,
        threads: usize,
        memory: u64,
        overrides: &Overrides,
    ) -> Option<Plan> {
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

    pub(super) fn with_workers(
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
pub(super) fn temp_overhead(plan: &Plan, threads: usize) -> f64 {
    let keys = temp_key_bytes(plan);
    if keys == 0 {
        return 0.0;
    }
    (temp_size_of(plan, threads) - keys) as f64 / keys as f64
}

/// Beyond this share of padding and marks in the temp file, phase 2 gives
/// up workers for larger partitions.
pub(super) const MAX_TEMP_OVERHEAD: f64 = 1.0 / 16.0;

/// The least memory limit, to a MiB, for which there is a plan: phase 1
/// needs two sets of round buffers, and a round buffer at least a few
/// pages for each partition and thread.
pub(super) fn least_memory(layout: &Layout, threads: usize, overrides: &Overrides) -> u64 {
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

/// Keys with buckets when their marks take at most a sixth of a byte a
/// record (k = 32: an eighth), otherwise keys with nonces only.
pub(super) fn temp_shape(parting: &Partitioning) -> KeyShape {
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
pub(super) fn partitioning(layout: &Layout, workers: usize, memory: u64) -> Partitioning {
    let n = layout.record_count();
    let budget = memory.saturating_sub(RESERVED);
    let by_memory = budget / PHASE2_BYTES_PER_RECORD / (workers as u64 + 2);
    // About 512 partitions keep phase 1's scatter lines close (128 bytes a
    // partition: 64 KiB a thread) and make phase 2's reads larger, which
    // made both phases faster than partitions of 2^21 records. But larger
    // partitions take phase 2 memory that could keep rounds out of the
    // temp file, so beyond 2^21 records they get at most half the budget.
    let wanted = (n / 512).max(1 << 21);
    let target = wanted.min((by_memory / 2).max(1 << 21)).min(by_memory);
    // Over 2^16 partitions would cost a page-padded segment each per round
    // and thread.
    let target = target.max(n >> 16).max(1 << 12);
    Partitioning::new(*layout, target)
}

/// Nonces per round and room per (thread, partition), for two sets of round
/// buffers within the memory limit; none when the limit leaves too little
/// room for even small rounds.
pub(super) fn rounds_plan(
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
pub(super) fn round_set_bytes(
    parting: &Partitioning,
    shape: KeyShape,
    round: u64,
    cap: usize,
    threads: usize,
) -> u64 {
    let marks = shape.epochs(round / threads as u64 + 1) * parting.count * 4;
    threads as u64 * (Scatter::<u32>::bytes(parting.count as usize, cap, Room::Pages) + marks)
}

pub(super) fn slot_capacity(round: u64, parts: u64, threads: usize) -> usize {
    let mean = round as f64 / (parts as f64 * threads as f64);
    (mean + 6.0 * mean.sqrt() + 16.0) as usize
}
