//! Plotting a plot larger than the memory limit.
//!
//! Phase 1 hashes the nonces in rounds that fit in memory and appends each
//! round's nonces to a temp file, grouped by partition, as 4-byte offsets
//! from the round's first nonce. Two sets of round buffers alternate: one is
//! hashed into while a writer thread writes the other, straight from memory
//! with O_DIRECT. Phase 2 reads each partition back once, hashes its nonces
//! again to recover their buckets (hashing is cheaper than writing the
//! buckets and reading them back), sorts, packs and writes the plot.
//! The temp file is this process's own, in native byte order. Bytes
//! written: the temp file (4 bytes a record, about one plot) and the
//! plot; bytes read: the temp file once.

use super::files::open_direct;
use super::pack::SlotPlacer;
use super::partition::Partitioning;
use super::pipeline::{pack_and_write, PartitionSource, Scratch};
use super::readahead::ReadAhead;
use super::scatter::Scatter;
use super::sink::RegionSink;
use super::{stop_requested, PlotError, Progress};
use crate::aligned::AlignedBuf;
use crate::format::Layout;
use crate::kernel::Kernel;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Bytes of temp file a record takes.
const TEMP_RECORD: u64 = 4;
/// Segments are padded to whole pages for O_DIRECT.
const PAGE: u64 = 4096;
/// Memory set aside for everything but the round buffers and partitions.
const RESERVED: u64 = 40 << 20;
/// Records a round hashes at most. Larger rounds make fewer, larger temp
/// segments, but round buffers beyond this only cost the time to fault in
/// their pages (about 1.5 s a GiB of CPU on the development VM) and phase 2
/// reads fine from segments of this size.
const MAX_ROUND: u64 = 1 << 28;
/// Phase 2 holds about this many bytes per record of a partition in flight.
const PHASE2_BYTES_PER_RECORD: u64 = 28;

/// An upper bound on the temp file's size: the records, plus a page of
/// padding for each segment (one per round, partition and thread, and one
/// more for each overflow).
pub(crate) fn temp_size(layout: &Layout, threads: usize, memory: u64) -> Result<u64, PlotError> {
    let parting = partitioning(layout, threads, memory);
    let (round, _) = rounds_plan(layout, &parting, threads, memory)?;
    let segments = layout.record_count().div_ceil(round) * parting.count * threads as u64 * 2;
    Ok(layout.record_count() * TEMP_RECORD + segments * PAGE)
}

/// Phase-2 partitions sized so that one per worker fits the memory limit.
fn partitioning(layout: &Layout, threads: usize, memory: u64) -> Partitioning {
    let budget = memory.saturating_sub(RESERVED);
    // Up to 2^21 records a partition, more when that would make over 2^16
    // partitions: each costs a page-padded segment per round and thread.
    let largest = (1u64 << 21).max(layout.record_count() >> 16);
    let target = (budget / PHASE2_BYTES_PER_RECORD / (threads as u64 + 2)).clamp(1 << 12, largest);
    Partitioning::new(*layout, target)
}

pub(crate) struct ExternalResult {
    pub end: u64,
    pub temp_bytes_written: u64,
}

/// Records of one round, one partition, one thread (or its overflow).
#[derive(Clone, Copy)]
struct Segment {
    offset: u64,
    count: u64,
}

/// The temp file; removed when dropped.
struct TempFile {
    path: PathBuf,
    file: File,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Nonces per round and room per (thread, partition), for two sets of round
/// buffers within the memory limit.
fn rounds_plan(
    layout: &Layout,
    parting: &Partitioning,
    threads: usize,
    memory: u64,
) -> Result<(u64, usize), PlotError> {
    let budget = memory.saturating_sub(RESERVED) / 2;
    let n = layout.record_count();
    let mut round = (budget / TEMP_RECORD).min(n).min(MAX_ROUND);
    loop {
        let cap = slot_capacity(round, parting.count, threads);
        let bytes = threads as u64 * Scatter::<u32>::bytes(parting.count as usize, cap);
        if bytes <= budget {
            return Ok((round, cap));
        }
        round = round * 9 / 10;
        if round < parting.count * threads as u64 * 64 {
            let needed =
                RESERVED + 2 * threads as u64 * Scatter::<u32>::bytes(parting.count as usize, 1024);
            return Err(PlotError::MemoryTooSmall {
                given: memory,
                needed,
            });
        }
    }
}

fn slot_capacity(round: u64, parts: u64, threads: usize) -> usize {
    let mean = round as f64 / (parts as f64 * threads as f64);
    (mean + 6.0 * mean.sqrt() + 16.0) as usize
}

/// Each partition's segments in one round.
type RoundSegments = Vec<Vec<Segment>>;

/// One round's buffers: a scatter per thread.
type RoundBuffers = Vec<Scatter<u32>>;

pub(crate) fn plot(
    layout: &Layout,
    kernel: &Kernel,
    threads: usize,
    memory: u64,
    tmp_dir: &Path,
    out: &File,
    progress: &dyn Progress,
) -> Result<ExternalResult, PlotError> {
    let parting = partitioning(layout, threads, memory);
    let (round, cap) = rounds_plan(layout, &parting, threads, memory)?;
    let n = layout.record_count();
    let parts = parting.count as usize;

    let temp_path = tmp_dir.join(format!(
        "spacevault-k{}-{}.sort.tmp",
        layout.k,
        hex::encode(&kernel.hash(u64::MAX)[..8])
    ));
    let file = open_direct(&temp_path, false)
        .map_err(|e| PlotError::io(format!("creating temp file {}", temp_path.display()), e))?;
    let temp = TempFile {
        path: temp_path,
        file,
    };
    // SAFETY: flock on a valid descriptor; keeps stale-file cleanup away.
    unsafe {
        libc::flock(
            std::os::unix::io::AsRawFd::as_raw_fd(&temp.file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };

    // Phase 1: hash into one set of buffers while the writer writes the other.
    progress.phase("hashing to temp file", n);
    let rounds: Vec<u64> = (0..n.div_ceil(round)).map(|r| r * round).collect();
    let mut sets: Vec<RoundBuffers> = Vec::new();
    for _ in 0..2.min(rounds.len()) {
        sets.push(
            (0..threads)
                .map(|_| Scatter::<u32>::new(parts, cap))
                .collect::<Result<_, _>>()?,
        );
    }
    let (segments, temp_bytes_written) =
        std::thread::scope(|s| -> Result<(Vec<RoundSegments>, u64), PlotError> {
            let (to_writer, writer_rx) = mpsc::sync_channel::<RoundBuffers>(1);
            let (from_writer, returned) = mpsc::channel::<Result<RoundBuffers, PlotError>>();
            let temp = &temp;
            let writer = s.spawn(move || -> (Vec<RoundSegments>, u64) {
                let mut offset = 0u64;
                let mut all = Vec::new();
                let mut staging = AlignedBuf::zeroed(PAGE as usize);
                for buffers in writer_rx {
                    match write_round(&temp.file, &buffers, parts, &mut offset, &mut staging) {
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
            let mut free = sets;
            for &base in &rounds {
                let mut buffers = match free.pop() {
                    Some(b) => b,
                    None => returned.recv().map_err(|_| PlotError::Aborted)??,
                };
                let len = round.min(n - base);
                hash_round(kernel, &parting, base, len, &mut buffers, progress);
                if stop_requested() {
                    return Err(PlotError::Interrupted);
                }
                to_writer.send(buffers).map_err(|_| PlotError::Aborted)?;
            }
            drop(to_writer);
            // Surface a write error from the last rounds.
            for r in returned.iter() {
                r?;
            }
            let (all, bytes) = writer.join().expect("temp writer panicked");
            if all.len() != rounds.len() {
                return Err(PlotError::Aborted);
            }
            Ok((all, bytes))
        })?;

    // Phase 2: one more worker than cores, so a core computes while a worker
    // waits for its reads.
    progress.phase("sorting and writing", n);
    let mut sink = RegionSink::new(out, &parting);
    let ahead = ReadAhead::new(threads + 2);
    let source = TempSource {
        segments: &segments,
        round_bases: &rounds,
        parting: &parting,
        kernel,
        ahead: &ahead,
    };
    let end = std::thread::scope(|s| {
        s.spawn(|| {
            ahead.run(parting.count, |p, buf| {
                read_partition(&temp.file, &segments, p, buf)
            })
        });
        let end = pack_and_write(&parting, threads + 1, &mut sink, progress, &source);
        ahead.close();
        end
    })?;
    drop(temp);
    Ok(ExternalResult {
        end,
        temp_bytes_written,
    })
}

/// Phase 2's partitions: read back from the temp file and hashed again.
struct TempSource<'a> {
    segments: &'a [RoundSegments],
    round_bases: &'a [u64],
    parting: &'a Partitioning,
    kernel: &'a Kernel,
    ahead: &'a ReadAhead,
}

/// A segment's length in the temp file: padded to whole pages.
fn padded_len(seg: &Segment) -> u64 {
    (seg.count * TEMP_RECORD).div_ceil(PAGE) * PAGE
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
    let total: u64 = segs().map(padded_len).sum();
    if (buf.len() as u64) < total {
        *buf = AlignedBuf::zeroed(total as usize);
    }
    // (file offset, length) of each run of adjacent segments.
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for seg in segs() {
        match runs.last_mut() {
            Some((offset, len)) if *offset + *len == seg.offset => *len += padded_len(seg),
            _ => runs.push((seg.offset, padded_len(seg))),
        }
    }
    let mut at = 0usize;
    for (offset, len) in runs {
        file.read_exact_at(&mut buf[at..at + len as usize], offset)
            .map_err(|e| PlotError::io("reading the temp file", e))?;
        at += len as usize;
    }
    Ok(())
}

impl PartitionSource for TempSource<'_> {
    /// Takes the partition's nonces from the read-ahead (ascending: rounds,
    /// threads and each thread's array then overflow all come in nonce
    /// order), hashes them a block at a time and keeps each one with its
    /// bucket.
    fn count(&self, p: u64, scratch: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError> {
        let Scratch {
            windows,
            nonces,
            prefixes,
        } = scratch;
        // A window per run of buckets whose slots and cursors fit in L2:
        // `fill` then writes each window's slots while they are in cache.
        windows.resize_with(counts.len().div_ceil(1 << WINDOW_BUCKETS_LOG2), Vec::new);
        windows.iter_mut().for_each(Vec::clear);
        nonces.resize(HASH_BLOCK, 0);
        prefixes.resize(HASH_BLOCK, 0);
        let layout = &self.parting.layout;
        let first_bucket = self.parting.buckets(p).start;
        let buf = self.ahead.take(p)?;
        let mut at = 0usize;
        for (round_segments, &base) in self.segments.iter().zip(self.round_bases) {
            for seg in &round_segments[p as usize] {
                let records = &buf[at..at + (seg.count * TEMP_RECORD) as usize];
                at += padded_len(seg) as usize;
                for block in records.chunks(HASH_BLOCK * 4) {
                    let n = block.len() / 4;
                    for (x, c) in nonces.iter_mut().zip(block.chunks_exact(4)) {
                        *x = base + u32::from_ne_bytes(c.try_into().unwrap()) as u64;
                    }
                    self.kernel.prefixes_of(&nonces[..n], &mut prefixes[..n]);
                    // Every record belongs here, so its bucket within the
                    // partition is a subtraction; anything out of range
                    // wraps to a huge value and is caught below.
                    let mut worst = 0u64;
                    for prefix in prefixes[..n].iter_mut() {
                        *prefix = layout.bucket_of_prefix(*prefix).wrapping_sub(first_bucket);
                        worst = worst.max(*prefix);
                    }
                    if worst >= counts.len() as u64 {
                        let (q, _) = self.parting.locate(worst.wrapping_add(first_bucket));
                        return Err(PlotError::Inconsistent(format!(
                            "a record of partition {q} came back with partition {p}"
                        )));
                    }
                    for (&x, &local) in nonces[..n].iter().zip(&prefixes[..n]) {
                        counts[local as usize] += 1;
                        windows[(local >> WINDOW_BUCKETS_LOG2) as usize].push(sort_key(local, x));
                    }
                }
            }
        }
        self.ahead.give_back(buf);
        Ok(())
    }

    fn fill(&self, _: u64, scratch: &mut Scratch, placer: &mut SlotPlacer) {
        for &key in scratch.windows.iter().flatten() {
            placer.put((key >> NONCE_BITS) as usize, key & NONCE_MASK);
        }
    }
}

/// Nonces hashed at once in phase 2: their buffers stay in L1.
const HASH_BLOCK: usize = 2048;

/// Buckets whose slots and cursors together fit in L2 (about 300 KiB).
const WINDOW_BUCKETS_LOG2: u32 = 11;

/// A phase-2 sort key: the bucket within the partition above the nonce.
const NONCE_BITS: u32 = 40;
const NONCE_MASK: u64 = (1 << NONCE_BITS) - 1;

fn sort_key(local: u64, nonce: u64) -> u64 {
    (local << NONCE_BITS) | nonce
}

/// Hashes nonces `base .. base + len` into the round's buffers, each thread a
/// contiguous share, as offsets from `base`.
fn hash_round(
    kernel: &Kernel,
    parting: &Partitioning,
    base: u64,
    len: u64,
    buffers: &mut RoundBuffers,
    progress: &dyn Progress,
) {
    let threads = buffers.len() as u64;
    std::thread::scope(|s| {
        for (t, scatter) in buffers.iter_mut().enumerate() {
            let range = (base + len * t as u64 / threads)..(base + len * (t as u64 + 1) / threads);
            s.spawn(move || {
                scatter.clear();
                let locator = parting.locator();
                let mut prefixes = vec![0u64; 4096];
                let mut x = range.start;
                while x < range.end && !stop_requested() {
                    let chunk = (range.end - x).min(prefixes.len() as u64) as usize;
                    kernel.prefixes(x, &mut prefixes[..chunk]);
                    let offset = (x - base) as u32;
                    scatter.push_all(
                        prefixes[..chunk]
                            .iter()
                            .zip(offset..)
                            .map(|(&prefix, offset)| (locator.locate(prefix).0 as usize, offset)),
                    );
                    x += chunk as u64;
                    progress.advance(chunk as u64);
                }
                scatter.finish();
            });
        }
    });
}

/// Appends one round to the temp file: for each partition, each thread's
/// array (page-padded, written in place) and its overflow. Returns the
/// segments by partition.
fn write_round(
    file: &File,
    buffers: &RoundBuffers,
    parts: usize,
    offset: &mut u64,
    staging: &mut AlignedBuf,
) -> Result<Vec<Vec<Segment>>, PlotError> {
    let mut segments = Vec::with_capacity(parts);
    let err = |e| PlotError::io("writing the temp file", e);
    for p in 0..parts as u64 {
        let mut segs = Vec::with_capacity(buffers.len());
        for scatter in buffers {
            let (bytes, count) = scatter.page_padded_bytes(p);
            if count > 0 {
                file.write_all_at(bytes, *offset).map_err(err)?;
                segs.push(Segment {
                    offset: *offset,
                    count: count as u64,
                });
                *offset += bytes.len() as u64;
            }
            let extra: Vec<u32> = scatter.records(p).1.collect();
            if !extra.is_empty() {
                let len = (extra.len() as u64 * TEMP_RECORD).div_ceil(PAGE) * PAGE;
                if (staging.len() as u64) < len {
                    *staging = AlignedBuf::zeroed(len as usize);
                }
                for (i, v) in extra.iter().enumerate() {
                    staging[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
                }
                file.write_all_at(&staging[..len as usize], *offset)
                    .map_err(err)?;
                segs.push(Segment {
                    offset: *offset,
                    count: extra.len() as u64,
                });
                *offset += len;
            }
        }
        segments.push(segs);
    }
    Ok(segments)
}
