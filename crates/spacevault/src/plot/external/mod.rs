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

mod phase_two;
mod plan;
mod temp_file;
#[cfg(test)]
mod tests;

use super::closer::Closer;
use super::files::{create_locked, unique_temp_name};
use super::keys::{EpochMarks, RangeKeys};
use super::pipeline::{pack_and_write, LastPhaseMemory};
use super::readahead::ReadAhead;
use super::scatter::{bring_into_use, Room, ScatterPool};
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress};
use crate::aligned::AlignedBuf;
use crate::kernel::Kernel;
use phase_two::*;
#[cfg(test)]
use plan::temp_size;
use plan::*;
pub(crate) use plan::{temp_size_of, Plan as ExternalPlan};
use std::fs::File;
use std::path::Path;
use std::sync::mpsc;
use temp_file::*;

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
    plan: &Plan,
    kernel: &Kernel,
    threads: usize,
    memory: u64,
    (tmp_dir, closer): (&Path, &'a Closer),
    progress: &dyn Progress,
    (pool, spares, kept): (&ScatterPool, Spares, &LastPhaseMemory),
) -> Result<Sorted<'a>, PlotError> {
    let plan = plan.clone();
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
    progress.phase(super::Phase::HashingToTemp, n);
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
    progress.phase(super::Phase::Writing, n);
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
