//! Plotting a plot larger than the memory limit.
//!
//! Phase 1 hashes the nonces in rounds that fit in memory and appends each
//! round's nonces to a temp file, grouped by partition, as 4-byte offsets
//! from the round's first nonce. Phase 2 reads each partition back once,
//! hashes its nonces again to recover their buckets (hashing is cheaper than
//! writing the buckets and reading them back), sorts, packs and writes the
//! plot. Bytes written: the temp file (4 bytes a record, about one plot) and
//! the plot; bytes read: the temp file once.

use super::memory::sort_pack_write;
use super::pack::{sort_key, sort_partition, Scratch};
use super::partition::Partitioning;
use super::sink::RegionSink;
use super::{PlotError, Progress};
use crate::format::Layout;
use crate::kernel::Kernel;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes of temp file a record takes.
const TEMP_RECORD: u64 = 4;
/// Memory set aside for everything but the round buffer and partitions.
const RESERVED: u64 = 40 << 20;
/// Phase 2 holds about this many bytes per record of a partition in flight.
const PHASE2_BYTES_PER_RECORD: u64 = 28;

pub(crate) fn temp_size(layout: &Layout) -> u64 {
    layout.record_count() * TEMP_RECORD
}

pub(crate) struct ExternalResult {
    pub end: u64,
    pub temp_bytes_written: u64,
}

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

fn rounds_plan(
    layout: &Layout,
    parting: &Partitioning,
    threads: usize,
    memory: u64,
) -> Result<(u64, u64), PlotError> {
    let budget = memory.saturating_sub(RESERVED);
    let n = layout.record_count();
    // Start from what fits without margins and shrink until the margins fit.
    let mut round = (budget / TEMP_RECORD).min(n).min(1 << 32);
    loop {
        let cap = slot_capacity(round, parting.count, threads);
        let bytes = cap * parting.count * threads as u64 * TEMP_RECORD;
        if bytes <= budget {
            return Ok((round, cap));
        }
        round = round * 9 / 10;
        if round < parting.count * threads as u64 {
            return Err(PlotError::MemoryTooSmall {
                given: memory,
                needed: RESERVED + (64 << 20),
            });
        }
    }
}

fn slot_capacity(round: u64, parts: u64, threads: usize) -> u64 {
    let mean = round as f64 / (parts as f64 * threads as f64);
    (mean + 6.0 * mean.sqrt() + 16.0) as u64
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn plot(
    layout: &Layout,
    kernel: &Kernel,
    threads: usize,
    memory: u64,
    tmp_dir: &Path,
    out: &File,
    progress: &dyn Progress,
) -> Result<ExternalResult, PlotError> {
    let budget = memory.saturating_sub(RESERVED);
    let target = (budget / PHASE2_BYTES_PER_RECORD / (threads as u64 + 1)).clamp(1 << 12, 1 << 21);
    let parting = Partitioning::new(*layout, target);
    let (round, cap) = rounds_plan(layout, &parting, threads, memory)?;
    let n = layout.record_count();
    let parts = parting.count as usize;

    let temp_path = tmp_dir.join(format!(
        "spacevault-k{}-{}.sort.tmp",
        layout.k,
        hex::encode(&kernel_id(kernel)[..8])
    ));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp_path)
        .map_err(|e| PlotError::io(format!("creating temp file {}", temp_path.display()), e))?;
    let temp = TempFile {
        path: temp_path,
        file,
    };
    // SAFETY: flock on a valid descriptor; keeps cleanup by others away.
    unsafe {
        libc::flock(
            std::os::unix::io::AsRawFd::as_raw_fd(&temp.file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };

    // Phase 1.
    progress.phase("hashing to temp file", n);
    let mut segments: Vec<Vec<Segment>> = Vec::new(); // [round][partition]
    let mut round_bases = Vec::new();
    let mut writer = BufWriter::with_capacity(4 << 20, &temp.file);
    let mut offset = 0u64;
    let mut buffers: Vec<(Vec<u32>, Vec<u64>, Vec<(u64, u32)>)> = (0..threads)
        .map(|_| {
            (
                vec![0u32; parts * cap as usize],
                vec![0u64; parts],
                Vec::new(),
            )
        })
        .collect();
    let mut base = 0u64;
    while base < n {
        let len = round.min(n - base);
        std::thread::scope(|s| {
            for (t, (keys, fill, overflow)) in buffers.iter_mut().enumerate() {
                let range = (base + len * t as u64 / threads as u64)
                    ..(base + len * (t as u64 + 1) / threads as u64);
                let parting = &parting;
                s.spawn(move || {
                    fill.iter_mut().for_each(|f| *f = 0);
                    overflow.clear();
                    let mut prefixes = vec![0u64; 4096];
                    let mut x = range.start;
                    while x < range.end {
                        let chunk = (range.end - x).min(prefixes.len() as u64) as usize;
                        kernel.prefixes(x, &mut prefixes[..chunk]);
                        for (i, &prefix) in prefixes[..chunk].iter().enumerate() {
                            let (p, _) = parting.locate(layout.bucket_of_prefix(prefix));
                            let rel = (x + i as u64 - base) as u32;
                            let f = fill[p as usize];
                            if f < cap {
                                keys[(p * cap + f) as usize] = rel;
                                fill[p as usize] = f + 1;
                            } else {
                                overflow.push((p, rel));
                            }
                        }
                        x += chunk as u64;
                        progress.advance(chunk as u64);
                    }
                });
            }
        });
        let mut round_segments = Vec::with_capacity(parts);
        for p in 0..parts as u64 {
            let start = offset;
            for (keys, fill, overflow) in &buffers {
                let slice = &keys[(p * cap) as usize..(p * cap + fill[p as usize]) as usize];
                write_u32s(&mut writer, slice)
                    .map_err(|e| PlotError::io("writing the temp file", e))?;
                offset += slice.len() as u64 * TEMP_RECORD;
                let extra: Vec<u32> = overflow
                    .iter()
                    .filter(|(q, _)| *q == p)
                    .map(|&(_, r)| r)
                    .collect();
                write_u32s(&mut writer, &extra)
                    .map_err(|e| PlotError::io("writing the temp file", e))?;
                offset += extra.len() as u64 * TEMP_RECORD;
            }
            round_segments.push(Segment {
                offset: start,
                count: (offset - start) / TEMP_RECORD,
            });
        }
        segments.push(round_segments);
        round_bases.push(base);
        base += len;
    }
    writer
        .flush()
        .map_err(|e| PlotError::io("writing the temp file", e))?;
    drop(writer);
    drop(buffers);
    let temp_bytes_written = offset;

    // Phase 2.
    progress.phase("sorting and writing", n);
    let mut sink = RegionSink::new(out, &parting);
    let end = sort_pack_write(&parting, threads, &mut sink, progress, |p, scratch| {
        let total: u64 = segments.iter().map(|r| r[p as usize].count).sum();
        let Scratch {
            keys,
            nonces: sorted_out,
            prefixes,
            raw,
        } = scratch;
        let mut nonces = std::mem::take(sorted_out);
        nonces.clear();
        nonces.reserve(total as usize);
        for (r, round_segments) in segments.iter().enumerate() {
            let seg = &round_segments[p as usize];
            raw.resize(seg.count as usize * TEMP_RECORD as usize, 0u8);
            temp.file
                .read_exact_at(raw, seg.offset)
                .map_err(|e| PlotError::io("reading the temp file", e))?;
            let base = round_bases[r];
            nonces.extend(
                raw.chunks_exact(4)
                    .map(|c| base + u32::from_le_bytes(c.try_into().unwrap()) as u64),
            );
        }
        prefixes.clear();
        prefixes.resize(nonces.len(), 0);
        kernel.prefixes_of(&nonces, prefixes);
        keys.clear();
        for (&x, &prefix) in nonces.iter().zip(prefixes.iter()) {
            let (q, local) = parting.locate(layout.bucket_of_prefix(prefix));
            if q != p {
                return Err(PlotError::io(
                    "reading the temp file",
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "a record came back in the wrong partition",
                    ),
                ));
            }
            keys.push(sort_key(local, x));
        }
        Ok(sort_partition(&parting, p, &[keys], nonces))
    })?;
    drop(temp);
    Ok(ExternalResult {
        end,
        temp_bytes_written,
    })
}

fn write_u32s(w: &mut impl Write, values: &[u32]) -> std::io::Result<()> {
    // Little-endian on disk; on little-endian machines this is the memory as is.
    let mut bytes = Vec::with_capacity(values.len().min(1 << 16) * 4);
    for chunk in values.chunks(1 << 16) {
        bytes.clear();
        for v in chunk {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// A name fragment that tells temp files of different plots apart.
fn kernel_id(kernel: &Kernel) -> [u8; 32] {
    kernel.hash(u64::MAX)
}
