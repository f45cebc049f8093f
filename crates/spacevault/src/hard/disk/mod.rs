//! The table-chain plotter through disk, for plots whose levels do not
//! fit in memory (k = 32 takes about 200 bytes a leaf in memory, 800 GiB):
//! every level lives in temp files between the steps, each step reads
//! them in order, and what must be sorted is spilled by the sort key's
//! high bits into as many files as make each one sort within the memory
//! limit. The file it writes is the in-memory plotter's, byte for byte
//! (the tests compare them), and it is written once, durably, the same
//! way.
//!
//! What stays in memory for the whole plot: one bit an entry a level for
//! the pruning, the top level's index (16 bytes a bucket of about 256
//! entries) and a summary of each park (48 bytes a park of 1024). The
//! rest is a spill file a thread (each sorted, encoded or renumbered on
//! its own thread, the results taken in order: `ordered`) and a window of
//! the level being matched, whose joins each thread serializes into its
//! own share of the spill's files.

mod backward;
mod forward;
mod ordered;
mod temp;

use super::format::{bucket_bits, pair_width, LevelInfo, HEADER_SIZE, SECTION_ALIGN};
use super::park::{fixed_bits_from, park_bytes_from, park_bytes_of, TopEncoder, PARK_ENTRIES};
use super::plot::{destination, header_of, HardPlotOptions, HardPlotSummary};
use crate::aligned::{AlignedBuf, ALIGN};
use crate::plot::files::{self, TempPlot};
use crate::plot::{plot_file_name, PlotError};
use backward::VALUE;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use temp::{get, TempPlace, Usage};

/// How the plot is cut to fit the memory limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Each spill is `2^log2` files.
    pub log2: u32,
    /// Entries a spill file holds on average.
    pub bucket_entries: u64,
    pub threads: usize,
    /// Spill files (or other pieces) worked on at once, each by a thread.
    pub parallel: usize,
}

impl Plan {
    /// Threads for the sort of one of the `parallel` files in hand.
    fn sort_threads(&self) -> usize {
        (self.threads / self.parallel).max(1)
    }
}

/// The plan and where its temp files go.
struct Work {
    plan: Plan,
    temps: TempPlace,
}

/// The most files one spill is cut into: each is an open file and a
/// write buffer.
const MAX_LOG2: u32 = 9;

/// Entries a spill file holds, as a power of two, where memory allows
/// more files: a k = 22 plot took 12.6 s in 2 spill files of 2^21 and
/// 7.2 s in 32 of 2^17.
const CACHED_LOG2: u32 = 17;

/// Memory an entry of a spill file takes while it is sorted: its record
/// read, the decoded entries and the sort's copy, the outputs being
/// written, and a fifth more for a file fuller than the average.
const BYTES_PER_SORTED_ENTRY: u64 = 176;

/// Memory a piece of fixed size takes while a thread works on it (a
/// piece of pointers read and its records gathered for the next spill, or
/// a run of parks being encoded), beside what its spill files take.
const BYTES_PER_PIECE: u64 = 16 << 20;

/// Memory the disk plotter needs at size `k` with spills of `2^log2`
/// files, `parallel` of them (or of other pieces) in hand at once: the
/// pruning's bitmaps (a level holds about 2^k entries), the top level's
/// index, the parks' summaries, the spill files being sorted and the
/// pieces being worked on, the write buffers of the two spills open at
/// once, and 16 MiB for the file's writer and the rest.
pub fn disk_memory_needed(k: u8, levels: u8, log2: u32, parallel: usize) -> u64 {
    let leaves = 1u64 << k;
    let bitmaps = u64::from(levels) * leaves / 8 * 11 / 10;
    let index = leaves / 16;
    let parks = leaves / PARK_ENTRIES * 48;
    let in_hand =
        (BYTES_PER_SORTED_ENTRY * (leaves >> log2) + BYTES_PER_PIECE) * parallel.max(1) as u64;
    let buffers = 2 * (1u64 << log2) * temp::BUFFER as u64;
    bitmaps + index + parks + in_hand + buffers + (16 << 20)
}

/// What a plot of size `k` takes in its directory, about 19.5 bytes a
/// leaf, and in the temp directory.
fn space_needed(k: u8) -> (u64, u64) {
    ((1u64 << k) * 20, (1u64 << k) * TEMP_BYTES_PER_LEAF)
}

/// Whether the plotter through disk can start: a plan within the memory
/// and open-files limits, and the space it needs in both directories.
pub(crate) fn can_plot_on_disk(options: &HardPlotOptions, out_dir: &Path, temp_dir: &Path) -> bool {
    let (plot, temp) = space_needed(options.k);
    Plan::for_options(options).is_ok() && files::check_space(out_dir, plot, temp_dir, temp).is_ok()
}

/// Temp disk the plotter holds at most, a leaf: 47 measured at k = 22
/// (the records' widths are the same at every k), where the file system
/// punches holes behind the readers, as Linux's common ones do; 67 where
/// it does not, which the check of free space before the start does not
/// foresee (the plot then stops with the disk full, its files removed).
pub const TEMP_BYTES_PER_LEAF: u64 = 50;

impl Plan {
    /// The fewest spill files that fit `options.memory`.
    pub fn for_options(options: &HardPlotOptions) -> Result<Plan, PlotError> {
        let (k, levels) = (options.k, options.levels);
        // Two spills may be open at once, beside a few other files.
        let files = temp::open_files_allowed();
        let most = (1..=MAX_LOG2)
            .rev()
            .find(|&log2| 2 * (1u64 << log2) + 32 <= files)
            .ok_or_else(|| {
                PlotError::InvalidOptions(format!(
                    "{files} open files allowed: plotting through disk needs at least 36"
                ))
            })?;
        let fits = |log2: u32, parallel: usize| {
            log2 <= most && disk_memory_needed(k, levels, log2, parallel) <= options.memory
        };
        // A spill file a thread, or as many as the memory allows.
        let (parallel, fewest) = (1..=options.threads.max(1))
            .rev()
            .find_map(|p| (1..=MAX_LOG2).find(|&l| fits(l, p)).map(|l| (p, l)))
            .ok_or(PlotError::MemoryTooSmall {
                given: options.memory,
                needed: (1..=most)
                    .map(|log2| disk_memory_needed(k, levels, log2, 1))
                    .min()
                    .unwrap_or(u64::MAX),
            })?;
        // Spill files of about 2^CACHED_LOG2 entries sort within the
        // cores' caches: more files than the memory needs, where it allows.
        let wanted = u32::from(k).saturating_sub(CACHED_LOG2).clamp(fewest, most);
        let log2 = (fewest..=wanted)
            .rev()
            .find(|&l| fits(l, parallel))
            .unwrap_or(fewest);
        Ok(Plan {
            log2,
            bucket_entries: (1u64 << k) >> log2,
            threads: options.threads,
            parallel,
        })
    }
}

/// Writes a section of the plot from `offset` (page aligned) on, through
/// an aligned buffer as a file opened for O_DIRECT needs, summing its
/// CRC; the last page is padded with zeros.
struct SectionWriter<'a> {
    file: &'a File,
    offset: u64,
    buffer: AlignedBuf,
    filled: usize,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<'a> SectionWriter<'a> {
    const CHUNK: usize = 8 << 20;

    fn new(file: &'a File, offset: u64) -> SectionWriter<'a> {
        SectionWriter {
            file,
            offset,
            buffer: AlignedBuf::zeroed(Self::CHUNK),
            filled: 0,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        }
    }

    fn write(&mut self, mut data: &[u8]) -> std::io::Result<()> {
        self.crc.update(data);
        self.bytes += data.len() as u64;
        while !data.is_empty() {
            let n = data.len().min(Self::CHUNK - self.filled);
            self.buffer[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == Self::CHUNK {
                self.file.write_all_at(&self.buffer, self.offset)?;
                self.offset += Self::CHUNK as u64;
                self.filled = 0;
            }
        }
        Ok(())
    }

    /// The section's length and CRC.
    fn finish(mut self) -> std::io::Result<(u64, u32)> {
        if self.filled > 0 {
            let len = self.filled.next_multiple_of(ALIGN);
            self.buffer[self.filled..len].fill(0);
            self.file.write_all_at(&self.buffer[..len], self.offset)?;
        }
        Ok((self.bytes, self.crc.finalize()))
    }
}

/// Plots a table-chain plot into `out_dir` through temp files in
/// `temp_dir`. The options are checked by the caller ([`super::plot`]).
pub(crate) fn plot_on_disk(
    options: &HardPlotOptions,
    out_dir: &Path,
    temp_dir: &Path,
) -> Result<HardPlotSummary, PlotError> {
    let plan = Plan::for_options(options)?;
    plot_with_plan(options, out_dir, temp_dir, plan)
}

fn plot_with_plan(
    options: &HardPlotOptions,
    out_dir: &Path,
    temp_dir: &Path,
    plan: Plan,
) -> Result<HardPlotSummary, PlotError> {
    let started = Instant::now();
    let (k, levels) = (options.k, options.levels);
    let (id, final_path) = destination(options, out_dir)?;
    files::remove_stale_temps(temp_dir);
    let (plot_estimate, temp_estimate) = space_needed(k);
    files::check_space(out_dir, plot_estimate, temp_dir, temp_estimate)?;
    let work = Work {
        plan,
        temps: TempPlace {
            dir: temp_dir.to_path_buf(),
            prefix: format!("{}-hard", plot_file_name(k, &id).trim_end_matches(".plot")),
            usage: Arc::new(Usage::default()),
        },
    };

    let mut sorted = vec![forward::level_one(&id, k, &work)?];
    for level in 2..=levels {
        let below = sorted
            .last_mut()
            .and_then(|l| l.stream.take())
            .expect("every level below the top has a stream");
        let next = forward::next_level(&id, k, level, level == levels, below, &work)?;
        sorted.push(next);
    }
    let matched: Vec<u64> = sorted.iter().map(|l| l.count).collect();
    let kept = backward::reached(&sorted)?;

    let temp_path = files::temp_path(&final_path);
    let temp = TempPlot::create(&temp_path, plot_estimate)?;
    let io = |e| PlotError::io(format!("writing {}", temp_path.display()), e);
    let mut stored = Vec::new();
    let mut offset = HEADER_SIZE as u64;
    // Level 1's positions are its x, which its pointers file holds.
    let mut sorted = sorted.into_iter();
    let mut positions = sorted.next().expect("level 1").back;
    let mut below_count = 1u64 << k;
    for (i, level) in sorted.by_ref().take(usize::from(levels) - 2).enumerate() {
        let width = pair_width(below_count);
        let r = backward::renumber_middle(
            level,
            &kept[i + 1],
            (positions, matched[i]),
            below_count,
            &work,
        )?;
        let fixed_bits = fixed_bits_from(&r.parks, width);
        let park_bytes = park_bytes_from(&r.parks, width, fixed_bits);
        let mut writer = SectionWriter::new(temp.file(), offset);
        // Parks encoded on the threads a run of them at a time.
        const RUN: u64 = 256;
        let piece = RUN * PARK_ENTRIES * VALUE as u64;
        ordered::map_in_order(
            r.values.pieces(piece),
            work.plan.parallel,
            |bytes| {
                let values: Vec<u128> = bytes?.chunks_exact(VALUE).map(get).collect();
                let mut encoded = Vec::with_capacity(park_bytes as usize * RUN as usize);
                for park in values.chunks(PARK_ENTRIES as usize) {
                    encoded.extend(park_bytes_of(park, width, fixed_bits, park_bytes as usize));
                }
                Ok(encoded)
            },
            |encoded| writer.write(&encoded).map_err(io),
        )?;
        let (bytes, crc) = writer.finish().map_err(io)?;
        stored.push(LevelInfo {
            count: r.count,
            bytes,
            crc,
            park_bytes: u32::try_from(park_bytes)
                .map_err(|_| PlotError::InvalidOptions(format!("parks of {park_bytes} bytes")))?,
            fixed_bits: fixed_bits as u8,
        });
        offset = (offset + bytes).next_multiple_of(SECTION_ALIGN);
        positions = r.positions;
        below_count = r.count;
    }
    let top = sorted.next().expect("the top level");
    let below_matched = matched[usize::from(levels) - 2];
    let mut encoder = TopEncoder::new(k, bucket_bits(k), pair_width(below_count));
    let mut writer = SectionWriter::new(temp.file(), offset);
    let mut out = Vec::new();
    backward::renumber_top(k, top, (positions, below_matched), &work, |entries| {
        out.clear();
        encoder.push(entries, &mut out);
        writer.write(&out).map_err(io)
    })?;
    out.clear();
    let index = encoder.finish(&mut out);
    writer.write(&out).map_err(io)?;
    let (bytes, crc) = writer.finish().map_err(io)?;
    let top_count = matched[usize::from(levels) - 1];
    stored.push(LevelInfo {
        count: top_count,
        bytes,
        crc,
        park_bytes: 0,
        fixed_bits: 0,
    });
    offset = (offset + bytes).next_multiple_of(SECTION_ALIGN);

    let header = header_of(options, id, stored, &index);
    let layout = header.layout()?;
    if layout.index.offset != offset {
        return Err(PlotError::Inconsistent(format!(
            "the index written at {offset}, where the layout puts it at {}",
            layout.index.offset
        )));
    }
    let mut writer = SectionWriter::new(temp.file(), offset);
    writer.write(&index).map_err(io)?;
    writer.finish().map_err(io)?;
    let bytes = temp.finish_with(&header.encode(), layout.file_size, &final_path)?;
    let stored_counts = header.stored.iter().map(|l| l.count).collect();
    Ok(HardPlotSummary {
        path: final_path,
        k,
        levels,
        plot_id: id,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        matched,
        stored: stored_counts,
        temp_peak_bytes: work.temps.usage.peak(),
        temp_written_bytes: work.temps.usage.written(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hard::format::{Header, HEADER_SIZE};
    use crate::hard::HardStrategy;

    fn options(k: u8, threads: usize) -> HardPlotOptions {
        let mut o = HardPlotOptions::new(k, [3; 32], [k; 32]);
        o.threads = threads;
        o
    }

    /// The file without its creation time, which the two runs differ in.
    fn contents(path: &Path) -> (Header, Vec<u8>) {
        let bytes = std::fs::read(path).unwrap();
        let mut header = Header::decode(&bytes[..HEADER_SIZE]).unwrap();
        header.created_unix = 0;
        (header, bytes[HEADER_SIZE..].to_vec())
    }

    #[test]
    fn the_disk_plotter_writes_the_in_memory_plotters_file() {
        for (k, log2, threads, parallel) in [
            (16, 1, 1, 1),
            (16, 6, 2, 2),
            (17, 3, 3, 2),
            (18, 4, 2, 1),
            (18, 5, 4, 4),
        ] {
            let (memory, disk, temp) = (
                tempfile::tempdir().unwrap(),
                tempfile::tempdir().unwrap(),
                tempfile::tempdir().unwrap(),
            );
            let mut o = options(k, threads);
            o.strategy = HardStrategy::Memory;
            let reference = crate::hard::plot(&o, memory.path()).unwrap();
            let plan = Plan {
                log2,
                bucket_entries: (1u64 << k) >> log2,
                threads,
                parallel,
            };
            let got = plot_with_plan(&o, disk.path(), temp.path(), plan).unwrap();
            assert_eq!(got.matched, reference.matched, "k {k} log2 {log2}");
            assert_eq!(got.stored, reference.stored, "k {k} log2 {log2}");
            assert_eq!(got.bytes, reference.bytes);
            assert!(
                contents(&got.path) == contents(&reference.path),
                "k {k} log2 {log2}: the files differ"
            );
            assert!(got.temp_peak_bytes > 0 && got.temp_written_bytes >= got.temp_peak_bytes);
            let left: Vec<_> = std::fs::read_dir(temp.path()).unwrap().collect();
            assert!(left.is_empty(), "temp files left: {left:?}");
        }
    }

    #[test]
    fn the_disk_plotter_cannot_start_without_its_temp_space() {
        let (out, temp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let o = options(22, 2);
        assert!(can_plot_on_disk(&o, out.path(), temp.path()));
        let gone = temp.path().join("not-there");
        assert!(!can_plot_on_disk(&o, out.path(), &gone));
        let mut short = o.clone();
        short.memory = 1 << 20;
        assert!(!can_plot_on_disk(&short, out.path(), temp.path()));
    }

    #[test]
    fn auto_goes_through_disk_when_memory_is_short_and_refuses_too_little() {
        let (out, temp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut o = options(18, 2);
        o.memory = disk_memory_needed(18, o.levels, 3, 1);
        assert!(o.memory < o.memory_needed());
        o.temp_dir = Some(temp.path().to_path_buf());
        let summary = crate::hard::plot(&o, out.path()).unwrap();
        assert!(summary.temp_peak_bytes > 0, "made in memory");
        let plot = crate::hard::HardPlotFile::open(&summary.path).unwrap();
        assert_eq!(plot.header().k, 18);

        o.memory = 1 << 20;
        o.force = true;
        assert!(matches!(
            crate::hard::plot(&o, out.path()),
            Err(PlotError::MemoryTooSmall { .. })
        ));
        o.strategy = HardStrategy::Memory;
        o.memory = disk_memory_needed(18, o.levels, 3, 1);
        assert!(matches!(
            crate::hard::plot(&o, out.path()),
            Err(PlotError::MemoryTooSmall { .. })
        ));
    }
}
