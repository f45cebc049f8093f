//! The table-chain plotter, in memory: hash level 1, match and join each
//! level into the next (sorting by output), drop the entries no top entry
//! reaches, renumber every level by its sorted line points, and write the
//! file once, durably.

use super::construction::{
    join_message, k_is_supported, levels_are_supported, line_point, node_of, plot_id, top_prefix,
    Node, B, BUCKET, C, IS_TARGET,
};
use super::format::{bucket_bits, widths, Header, LevelInfo};
use super::park::{encode_level, encode_top};
use super::sort::sort_by;
use crate::aligned::{AlignedBuf, ALIGN};
use crate::kernel::Kernel;
use crate::plot::files::{self, TempPlot};
use crate::plot::{plot_file_name, PlotError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The largest plot the in-memory plotter makes: a level's positions are
/// 32 bits, and a level of a k = 32 plot may hold more than 2^32 entries.
pub const MAX_IN_MEMORY_K: u8 = 31;

/// What to plot, and how.
#[derive(Clone, Debug)]
pub struct HardPlotOptions {
    pub k: u8,
    pub levels: u8,
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    pub threads: usize,
    /// Upper bound for the plotter's memory, in bytes.
    pub memory: u64,
    pub force: bool,
    pub strategy: HardStrategy,
    /// Where the disk plotter keeps its temp files (default: the output
    /// directory).
    pub temp_dir: Option<PathBuf>,
}

/// Where the plotter keeps the levels it builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HardStrategy {
    /// In memory below [`DISK_FASTER_FROM_K`] when the levels fit
    /// `memory`, else through disk.
    #[default]
    Auto,
    Memory,
    Disk,
}

/// From this size on, the plotter through disk is the faster one (its
/// spill files sort within the cores' caches, where the in-memory one
/// sorts whole levels): on two cores, k = 20 took 1.10 s in memory and
/// 1.26 s through disk, k = 22 6.3 s and 4.7 s, k = 24 26.0 s and 20.9 s.
pub const DISK_FASTER_FROM_K: u8 = 22;

impl HardPlotOptions {
    pub fn new(k: u8, farmer_key: [u8; 32], seed: [u8; 32]) -> HardPlotOptions {
        HardPlotOptions {
            k,
            levels: super::construction::LEVELS,
            farmer_key,
            seed,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory: crate::plot::default_memory(),
            force: false,
            strategy: HardStrategy::Auto,
            temp_dir: None,
        }
    }

    /// The in-memory plotter's peak, as measured: 794 MiB at k = 22 and
    /// five levels (`/usr/bin/time`), 199 bytes a leaf. A level being
    /// built holds its joined entries, the sort's copy and the level
    /// below (about 32 bytes an entry each), and every level's pointers
    /// stay until the tables are written (8 bytes an entry a level).
    pub fn memory_needed(&self) -> u64 {
        let entries = 1u64 << self.k;
        entries * (160 + 8 * u64::from(self.levels))
    }
}

/// A finished table-chain plot.
#[derive(Clone, Debug)]
pub struct HardPlotSummary {
    pub path: PathBuf,
    pub k: u8,
    pub levels: u8,
    pub plot_id: [u8; 32],
    pub bytes: u64,
    pub seconds: f64,
    /// Entries of levels 1 to `levels` as matched, before pruning.
    pub matched: Vec<u64>,
    /// Entries of levels 2 to `levels` as stored.
    pub stored: Vec<u64>,
    /// The most the disk plotter's temp files held at once, and all it
    /// wrote to them (0 for a plot made in memory).
    pub temp_peak_bytes: u64,
    pub temp_written_bytes: u64,
}

/// An entry of a level being built: output, children, digest.
pub(crate) type Joined = (u64, [u32; 2], [u8; 16]);

/// One level as the forward pass leaves it: sorted by output, with each
/// entry's two children's positions in the level below (for level 1,
/// `[x, 0]`).
pub(crate) struct Level {
    ys: Vec<u64>,
    metas: Vec<[u8; 16]>,
    pub(crate) back: Vec<[u32; 2]>,
}

/// The stored tables: levels 2 to `levels - 1` as sorted values, the top
/// level as sorted `(prefix, value)`.
pub(crate) struct Tables {
    pub matched: Vec<u64>,
    pub middle: Vec<Vec<u128>>,
    pub top: Vec<(u64, u128)>,
}

/// Splits `0..n` into `parts` ranges of nearly equal size.
pub(crate) fn split(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    (0..parts)
        .map(|i| n * i / parts..n * (i + 1) / parts)
        .filter(|r| !r.is_empty())
        .collect()
}

pub(crate) fn level_one(id: &[u8; 32], k: u8, threads: usize) -> Level {
    let n = 1usize << k;
    let kernel = Kernel::new(id);
    let mut keyed: Vec<(u64, u32, [u8; 16])> = vec![(0, 0, [0; 16]); n];
    let ranges = split(n, threads);
    let mut rest = keyed.as_mut_slice();
    std::thread::scope(|s| {
        for range in ranges {
            let (mine, tail) = rest.split_at_mut(range.len());
            rest = tail;
            let kernel = &kernel;
            s.spawn(move || {
                const CHUNK: usize = 4096;
                let mut nonces = vec![0u64; CHUNK];
                let mut hashes = vec![[0u8; 32]; CHUNK];
                for (c, out) in mine.chunks_mut(CHUNK).enumerate() {
                    let first = range.start + c * CHUNK;
                    for (i, x) in nonces[..out.len()].iter_mut().enumerate() {
                        *x = (first + i) as u64;
                    }
                    kernel.hashes(&nonces[..out.len()], &mut hashes[..out.len()]);
                    for (i, slot) in out.iter_mut().enumerate() {
                        let node = node_of(&hashes[i], k);
                        *slot = (node.y, (first + i) as u32, node.meta);
                    }
                }
            });
        }
    });
    let bound = 1u128 << (k + super::construction::EXTRA_BITS);
    let keyed = sort_by(keyed, bound, |e| u128::from(e.0), |e| (e.0, e.1), threads);
    Level {
        ys: keyed.iter().map(|e| e.0).collect(),
        metas: keyed.iter().map(|e| e.2).collect(),
        back: keyed.iter().map(|e| [e.1, 0]).collect(),
    }
}

/// The start of each bucket's run in sorted outputs, and its bucket.
pub(crate) fn bucket_runs(ys: &[u64]) -> Vec<(u64, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < ys.len() {
        let bucket = ys[i] / BUCKET;
        runs.push((bucket, i));
        // Entries of one bucket are few (about 236): a linear walk.
        while i < ys.len() && ys[i] / BUCKET == bucket {
            i += 1;
        }
    }
    runs
}

/// Every matching pair of a left run (bucket `bucket`) and the right run
/// after it, as positions in `ys`, left by left.
fn match_runs(
    ys: &[u64],
    bucket: u64,
    left: std::ops::Range<usize>,
    right: std::ops::Range<usize>,
    out: &mut Vec<[u32; 2]>,
) {
    let (base_l, base_r) = (bucket * BUCKET, (bucket + 1) * BUCKET);
    // Rights sorted by output are sorted by (b, c): group them by b.
    let mut starts = [0usize; B as usize + 1];
    for &y in &ys[right.clone()] {
        starts[((y - base_r) / C) as usize + 1] += 1;
    }
    for b in 0..B as usize {
        starts[b + 1] += starts[b];
    }
    let parity = (bucket % 2) as usize;
    for l in left {
        let offset = ys[l] - base_l;
        let (lb, lc) = (offset / C, offset % C);
        let tb = ((lb + 1) % B) as usize;
        let first = right.start + starts[tb];
        for (r, &y) in (first..).zip(&ys[first..right.start + starts[tb + 1]]) {
            let rc = (y - base_r) % C;
            if IS_TARGET[parity][((rc + C - lc) % C) as usize] {
                out.push([l as u32, r as u32]);
            }
        }
    }
}

/// The matching pairs whose left entries lie in runs `share`.
fn match_share(
    ys: &[u64],
    runs: &[(u64, usize)],
    share: std::ops::Range<usize>,
    out: &mut Vec<[u32; 2]>,
) {
    for i in share {
        let (bucket, start) = runs[i];
        let Some(&(next, next_start)) = runs.get(i + 1) else {
            continue;
        };
        if next != bucket + 1 {
            continue;
        }
        let end = runs.get(i + 2).map_or(ys.len(), |r| r.1);
        match_runs(ys, bucket, start..next_start, next_start..end, out);
    }
}

/// Every matching pair of a level sorted by output, in one thread: what
/// the test of the fast path against [`super::construction::matches`]
/// calls.
#[cfg(test)]
fn find_matches(ys: &[u64]) -> Vec<[u32; 2]> {
    let runs = bucket_runs(ys);
    let mut out = Vec::with_capacity(ys.len());
    match_share(ys, &runs, 0..runs.len(), &mut out);
    out
}

/// The entries of `level` joined from the matching pairs whose left
/// entries lie in runs `lefts` of the sorted level below (`ys`, `metas`;
/// `runs` from [`bucket_runs`]), the runs split between threads, each
/// thread's share in one part, which the thread hands to `then` (so that
/// what follows a join, serializing it, runs on the threads too);
/// children are positions in `ys`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn join_runs<T: Send>(
    kernel: &Kernel,
    k: u8,
    level: u8,
    (ys, metas): (&[u64], &[[u8; 16]]),
    runs: &[(u64, usize)],
    lefts: std::ops::Range<usize>,
    threads: usize,
    then: impl Fn(Vec<Joined>) -> T + Sync,
) -> Vec<T> {
    let shares: Vec<_> = split(lefts.len(), threads)
        .into_iter()
        .map(|r| lefts.start + r.start..lefts.start + r.end)
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| {
                let then = &then;
                s.spawn(move || {
                    let mut pairs = Vec::new();
                    match_share(ys, runs, share, &mut pairs);
                    // The joins hashed a batch at a time, a register's lanes at once.
                    const BATCH: usize = 1024;
                    let mut joined = Vec::with_capacity(pairs.len());
                    let mut blocks = vec![[0u8; 64]; BATCH];
                    let mut hashes = vec![[0u8; 32]; BATCH];
                    for batch in pairs.chunks(BATCH) {
                        let node = |i: u32| Node {
                            y: ys[i as usize],
                            meta: metas[i as usize],
                        };
                        for (block, &[l, r]) in blocks.iter_mut().zip(batch) {
                            *block = join_message(level, &node(l), &node(r));
                        }
                        let n = batch.len();
                        kernel.hash_blocks(&blocks[..n], &mut hashes[..n]);
                        for (hash, &pair) in hashes.iter().zip(batch) {
                            let node = node_of(hash, k);
                            joined.push((node.y, pair, node.meta));
                        }
                    }
                    then(joined)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a plotting thread panicked"))
            .collect()
    })
}

/// Level `level` from the one below it.
pub(crate) fn next_level(id: &[u8; 32], k: u8, level: u8, below: &Level, threads: usize) -> Level {
    let runs = bucket_runs(&below.ys);
    let kernel = Kernel::new(id);
    let parts = join_runs(
        &kernel,
        k,
        level,
        (&below.ys, &below.metas),
        &runs,
        0..runs.len(),
        threads,
        |joined| joined,
    );
    let all = parts.concat();
    drop(parts);
    let bound = 1u128 << (k + super::construction::EXTRA_BITS);
    let all = sort_by(all, bound, |e| u128::from(e.0), |e| (e.0, e.1), threads);
    Level {
        ys: all.iter().map(|e| e.0).collect(),
        metas: all.iter().map(|e| e.2).collect(),
        back: all.iter().map(|e| e.1).collect(),
    }
}

pub(crate) fn stored_value(left: u64, right: u64) -> u128 {
    2 * line_point(left, right) + u128::from(left > right)
}

/// The forward pass, pruning and renumbering: the tables a plot stores.
pub(crate) fn build_tables(id: &[u8; 32], k: u8, levels: u8, threads: usize) -> Tables {
    let mut built = vec![level_one(id, k, threads)];
    for level in 2..=levels {
        let next = next_level(id, k, level, built.last().unwrap(), threads);
        // Outputs and digests are needed only by the next join.
        let below = built.last_mut().unwrap();
        below.ys = Vec::new();
        below.metas = Vec::new();
        built.push(next);
    }
    let matched: Vec<u64> = built.iter().map(|l| l.back.len() as u64).collect();
    let top_index = usize::from(levels) - 1;

    // Backward: which entries of each level some top entry reaches.
    let mut keep: Vec<Vec<bool>> = built.iter().map(|l| vec![false; l.back.len()]).collect();
    keep[top_index].fill(true);
    for i in (1..top_index).rev() {
        let (lower, upper) = keep.split_at_mut(i + 1);
        for (e, &kept) in built[i + 1].back.iter().zip(&upper[0]) {
            if kept {
                lower[i][e[0] as usize] = true;
                lower[i][e[1] as usize] = true;
            }
        }
    }

    // Forward: each kept level sorted by its values; `position` maps an
    // entry of the level below to what the level above points at (for
    // level 1, its x).
    let mut position: Vec<u64> = built[0].back.iter().map(|b| u64::from(b[0])).collect();
    let mut middle = Vec::new();
    for i in 1..top_index {
        // The lookups in `position` are random: shared between threads.
        let (back, kept, position_ref) = (&built[i].back, &keep[i], &position);
        let values: Vec<(u128, u32)> = std::thread::scope(|s| {
            let parts: Vec<_> = split(back.len(), threads)
                .into_iter()
                .map(|share| {
                    s.spawn(move || {
                        share
                            .filter(|&e| kept[e])
                            .map(|e| {
                                let b = back[e];
                                let (l, r) =
                                    (position_ref[b[0] as usize], position_ref[b[1] as usize]);
                                (stored_value(l, r), e as u32)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            parts
                .into_iter()
                .flat_map(|h| h.join().expect("a plotting thread panicked"))
                .collect()
        });
        let bound = values.iter().map(|v| v.0).max().map_or(1, |m| m + 1);
        let values = sort_by(values, bound, |v| v.0, |v| *v, threads);
        let mut next = vec![u64::MAX; built[i].back.len()];
        for (rank, &(_, e)) in values.iter().enumerate() {
            next[e as usize] = rank as u64;
        }
        position = next;
        built[i].back = Vec::new();
        middle.push(values.into_iter().map(|v| v.0).collect());
    }
    let top_level = &built[top_index];
    let top: Vec<(u64, u128)> = top_level
        .back
        .iter()
        .zip(&top_level.ys)
        .map(|(b, &y)| {
            (
                top_prefix(y),
                stored_value(position[b[0] as usize], position[b[1] as usize]),
            )
        })
        .collect();
    let top = sort_by(top, 1u128 << k, |t| u128::from(t.0), |t| *t, threads);
    Tables {
        matched,
        middle,
        top,
    }
}

/// The header of a plot made now with `options`, its levels `stored`
/// and its top level's `index`.
pub(crate) fn header_of(
    options: &HardPlotOptions,
    plot_id: [u8; 32],
    stored: Vec<LevelInfo>,
    index: &[u8],
) -> Header {
    Header {
        k: options.k,
        levels: options.levels,
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        farmer_key: options.farmer_key,
        seed: options.seed,
        plot_id,
        stored,
        index_crc: crc32fast::hash(index),
    }
}

/// Writes `bytes` at `offset` (a multiple of the page size) through
/// page-aligned copies, as a file opened for O_DIRECT needs; the last
/// page is padded with zeros, which the next section or the file's final
/// size overwrites.
fn write_aligned(file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    const CHUNK: usize = 16 << 20;
    let mut buf = AlignedBuf::zeroed(CHUNK.min(bytes.len().next_multiple_of(ALIGN)).max(ALIGN));
    for (i, chunk) in bytes.chunks(CHUNK).enumerate() {
        let len = chunk.len().next_multiple_of(ALIGN);
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[chunk.len()..len].fill(0);
        file.write_all_at(&buf[..len], offset + (i * CHUNK) as u64)?;
    }
    Ok(())
}

/// Plots a table-chain plot into `out_dir`, in memory.
pub fn plot(options: &HardPlotOptions, out_dir: &Path) -> Result<HardPlotSummary, PlotError> {
    let started = Instant::now();
    let (k, levels) = (options.k, options.levels);
    if !k_is_supported(k) {
        return Err(PlotError::InvalidOptions(format!(
            "k = {k} is outside the hard scheme's {}..={}",
            super::construction::MIN_K,
            super::construction::MAX_K
        )));
    }
    if !levels_are_supported(levels) {
        return Err(PlotError::InvalidOptions(format!(
            "{levels} levels is outside {}..={}",
            super::construction::MIN_LEVELS,
            super::construction::MAX_LEVELS
        )));
    }
    crate::plot::check_threads(options.threads)?;
    let needed = options.memory_needed();
    let fits = k <= MAX_IN_MEMORY_K && options.memory >= needed;
    let memory_faster = k < DISK_FASTER_FROM_K;
    let temp_dir = options.temp_dir.as_deref().unwrap_or(out_dir);
    match options.strategy {
        HardStrategy::Memory if k > MAX_IN_MEMORY_K => {
            return Err(PlotError::InvalidOptions(format!(
                "k = {k}: the hard scheme's plotter works in memory up to k = \
                 {MAX_IN_MEMORY_K} (positions of 32 bits); larger plots go through disk"
            )));
        }
        HardStrategy::Memory if !fits => {
            return Err(PlotError::MemoryTooSmall {
                given: options.memory,
                needed,
            });
        }
        HardStrategy::Disk => {}
        HardStrategy::Auto if !fits => {}
        // Faster through disk, if it can start; else in memory.
        HardStrategy::Auto
            if !memory_faster && super::disk::can_plot_on_disk(options, out_dir, temp_dir) => {}
        _ => return plot_in_memory(options, out_dir, started),
    }
    super::disk::plot_on_disk(options, out_dir, temp_dir)
}

/// The plot's id and its file's path in `out_dir`, once a finished plot
/// of that name is known not to be overwritten without `force`; temp
/// files an interrupted run left in `out_dir` are removed. Both plotters
/// start here.
pub(crate) fn destination(
    options: &HardPlotOptions,
    out_dir: &Path,
) -> Result<([u8; 32], PathBuf), PlotError> {
    let id = plot_id(
        &options.farmer_key,
        &options.seed,
        options.k,
        options.levels,
    );
    let final_path = out_dir.join(plot_file_name(options.k, &id));
    if final_path.exists() && !options.force {
        return Err(PlotError::AlreadyExists(final_path));
    }
    files::remove_stale_temps(out_dir);
    Ok((id, final_path))
}

fn plot_in_memory(
    options: &HardPlotOptions,
    out_dir: &Path,
    started: Instant,
) -> Result<HardPlotSummary, PlotError> {
    let (k, levels) = (options.k, options.levels);
    let (id, final_path) = destination(options, out_dir)?;

    let tables = build_tables(&id, k, levels, options.threads);
    let mut counts: Vec<u64> = tables.middle.iter().map(|t| t.len() as u64).collect();
    counts.push(tables.top.len() as u64);
    let widths = widths(k, &counts);
    let mut sections = Vec::with_capacity(counts.len());
    let mut stored = Vec::with_capacity(counts.len());
    for (values, &width) in tables.middle.iter().zip(&widths) {
        let level = encode_level(values, width);
        stored.push(LevelInfo {
            count: values.len() as u64,
            bytes: level.bytes.len() as u64,
            crc: crc32fast::hash(&level.bytes),
            park_bytes: u32::try_from(level.park_bytes).map_err(|_| {
                PlotError::InvalidOptions(format!("parks of {} bytes", level.park_bytes))
            })?,
            fixed_bits: level.fixed_bits as u8,
        });
        sections.push(level.bytes);
    }
    let (top, index) = encode_top(&tables.top, k, bucket_bits(k), *widths.last().unwrap());
    stored.push(LevelInfo {
        count: tables.top.len() as u64,
        bytes: top.len() as u64,
        crc: crc32fast::hash(&top),
        park_bytes: 0,
        fixed_bits: 0,
    });
    sections.push(top);
    let header = header_of(options, id, stored, &index);
    let layout = header.layout()?;

    files::check_space(out_dir, layout.file_size, out_dir, 0)?;
    let temp_path = files::temp_path(&final_path);
    let temp = TempPlot::create(&temp_path, layout.file_size)?;
    let offsets = layout.sections.iter().map(|s| s.offset);
    for (bytes, offset) in sections
        .iter()
        .chain([&index])
        .zip(offsets.chain([layout.index.offset]))
    {
        write_aligned(temp.file(), bytes, offset)
            .map_err(|e| PlotError::io(format!("writing {}", temp_path.display()), e))?;
    }
    let bytes = temp.finish_with(&header.encode(), layout.file_size, &final_path)?;
    Ok(HardPlotSummary {
        path: final_path,
        k,
        levels,
        plot_id: id,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        matched: tables.matched,
        stored: counts,
        temp_peak_bytes: 0,
        temp_written_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hard::construction::matches;

    #[test]
    fn the_fast_matching_finds_every_pair_the_rule_allows() {
        // Outputs spread over a few dozen buckets at the plots' density.
        let mut ys: Vec<u64> = (0..12_000u64)
            .map(|i| {
                let h = blake3::hash(&i.to_le_bytes());
                u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap()) % (BUCKET * 50)
            })
            .collect();
        ys.sort_unstable();
        let fast = find_matches(&ys);
        let mut slow = Vec::new();
        for l in 0..ys.len() {
            for r in 0..ys.len() {
                if matches(ys[l], ys[r]) {
                    slow.push([l as u32, r as u32]);
                }
            }
        }
        assert!(slow.len() > 11_000 / 2, "{} pairs", slow.len());
        assert_eq!(fast, slow);
    }
}
