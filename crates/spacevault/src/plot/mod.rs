//! Plotting: filling a file with every nonce of `[0, 2^k)`, bucketed by hash.
//!
//! A plot is written under a temporary name (`….plot.tmp`), made durable
//! (fsync of the file, rename, fsync of the directory) and only then given
//! its final name, so an interrupted run never leaves a file that looks
//! finished. The header goes last: even a renamed partial file is refused.

mod behind;
mod closer;
mod external;
pub(crate) mod files;
pub use files::free_space;
mod key_shape;
mod keys;
mod lines;
mod memory;
mod overlap;
mod pack;
mod partition;
mod pipeline;
mod placer;
mod plan;
mod readahead;
mod scatter;
mod simd;
mod sink;
mod stop;
mod windows;

use crate::construction::plot_id;
use crate::format::{FormatError, Header, Layout, HEADER_SIZE};
use crate::kernel::Kernel;
use crate::units::human_bytes;
use closer::Closer;
use external::Spares;
use scatter::ScatterPool;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The CPU work of each phase on one thread, without the disk, printed
/// for `cargo bench -p spacevault --bench phases`. Not a stable interface:
/// it exists for that benchmark.
#[doc(hidden)]
pub mod phase_bench {
    /// Phase 1 (hashing, locating, scattering) at k = 28, 30 and 32.
    pub fn phase_one() {
        super::keys::phase1_speed();
    }

    /// An external plot's phase 2 on one k = 32 partition: filing by window,
    /// counting, placing.
    pub fn phase_two() {
        super::windows::phase2_speed();
    }

    /// The last phase of a k = 28 plot in memory: counting, placing,
    /// filling.
    pub fn last_phase() {
        super::memory::last_phase_speed();
    }
}

pub use files::{plot_file_name, temps_in, TempEntry, PLOT_EXTENSION, TEMP_EXTENSION};
pub use overlap::{Overlap, PlotJob};
pub use plan::PlotPlan;
pub use stop::{request_stop, stop_requested};

/// Why a plot could not be made. Messages name their cause (as a field,
/// not the error's `source()`, so that reporters that walk the chain do not
/// print it twice).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    #[error("{context}: {cause}")]
    Io {
        context: String,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A finished plot is only replaced where [`PlotOptions::force`] says so.
    #[error("{0} already exists: a finished plot is not overwritten unless asked to")]
    AlreadyExists(PathBuf),
    #[error("another plotter is writing {0}")]
    Busy(PathBuf),
    #[error("not enough free space in {dir}: the plot needs {}, {} are free", human_bytes(*needed), human_bytes(*available))]
    NoSpace {
        dir: PathBuf,
        needed: u64,
        available: u64,
    },
    #[error("a memory limit of {} is too small: this plot needs at least {}", human_bytes(*given), human_bytes(*needed))]
    MemoryTooSmall { given: u64, needed: u64 },
    #[error("bucket {bucket} has {records} records, more than a count byte holds")]
    BucketOverflow { bucket: u64, records: u32 },
    #[error("{0}")]
    InvalidOptions(String),
    #[error("{0}: the temp file or memory is damaged")]
    Inconsistent(String),
    #[error("plotting stopped after an error in another thread")]
    Aborted,
    #[error("interrupted: the unfinished plot was removed")]
    Interrupted,
}

impl PlotError {
    pub(crate) fn io(context: impl Into<String>, cause: std::io::Error) -> PlotError {
        PlotError::Io {
            context: context.into(),
            cause,
        }
    }
}

/// How the records are sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// In memory if the memory limit allows, otherwise through a temp file.
    Auto,
    /// All sort keys in memory; the plot is the only file written.
    Memory,
    /// Nonces written once to a temp file by partition and read back once.
    External,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Memory => "memory",
            Strategy::External => "external",
        }
    }
}

/// What to plot and how: [`PlotOptions::new`], then set the fields to
/// change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PlotOptions {
    pub k: u8,
    pub farmer_key: [u8; 32],
    pub seed: [u8; 32],
    /// Upper bound for the plotter's buffers, in bytes.
    pub memory: u64,
    pub threads: usize,
    /// Where the external strategy keeps its temp file (default: the output directory).
    pub tmp_dir: Option<PathBuf>,
    pub force: bool,
    pub strategy: Strategy,
    /// Bucket bits; None for the default layout of k.
    pub bucket_bits: Option<u8>,
}

impl PlotOptions {
    pub fn new(k: u8, farmer_key: [u8; 32], seed: [u8; 32]) -> PlotOptions {
        PlotOptions {
            k,
            farmer_key,
            seed,
            memory: default_memory(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tmp_dir: None,
            force: false,
            strategy: Strategy::Auto,
            bucket_bits: None,
        }
    }

    pub fn layout(&self) -> Result<Layout, FormatError> {
        match self.bucket_bits {
            Some(b) => Layout::new(self.k, b, crate::format::DEFAULT_REGION_SIZE),
            None => Layout::for_k(self.k),
        }
    }
}

/// The most worker threads a plot takes: four for each core this process
/// may run on, and at least 16. More would not plot faster, as hashing
/// keeps every core busy, but every thread has sort buffers of its own, and
/// past the system's limit a thread cannot even be started.
pub fn max_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_mul(4)
        .max(16)
}

/// Refuses a thread count of 0 or above [`max_threads`].
pub fn check_threads(threads: usize) -> Result<(), PlotError> {
    let max = max_threads();
    if threads == 0 {
        return Err(PlotError::InvalidOptions(
            "a plot needs at least 1 thread".into(),
        ));
    }
    if threads > max {
        return Err(PlotError::InvalidOptions(format!(
            "{threads} threads is more than {max}, four for each core this process may use: \
             more would not plot faster, and each thread takes sort buffers of its own"
        )));
    }
    Ok(())
}

/// Half of the machine's physical memory, and never less than 256 MiB.
pub fn default_memory() -> u64 {
    files::physical_memory()
        .map_or(1 << 30, |m| m / 2)
        .max(256 << 20)
}

/// Observes a plot's progress; every method has a silent default.
pub trait Progress: Sync {
    /// A new phase of `total` records starts.
    fn phase(&self, _phase: Phase, _total: u64) {}
    /// `records` more records of the current phase are done.
    fn advance(&self, _records: u64) {}
}

impl<T: Progress + ?Sized> Progress for &T {
    fn phase(&self, phase: Phase, total: u64) {
        (**self).phase(phase, total);
    }

    fn advance(&self, records: u64) {
        (**self).advance(records);
    }
}

/// Forwards progress and notes when each phase starts.
struct PhaseClock<P> {
    inner: P,
    marks: std::sync::Mutex<Vec<(Phase, Instant)>>,
}

impl<P: Progress> Progress for PhaseClock<P> {
    fn phase(&self, phase: Phase, total: u64) {
        self.marks.lock().unwrap().push((phase, Instant::now()));
        self.inner.phase(phase, total);
    }

    fn advance(&self, records: u64) {
        self.inner.advance(records);
    }
}

impl<P> PhaseClock<P> {
    /// Seconds spent in each phase, the last one ending at `end`.
    fn durations(&self, end: Instant) -> Vec<(Phase, f64)> {
        let marks = self.marks.lock().unwrap();
        marks
            .iter()
            .enumerate()
            .map(|(i, (name, t))| {
                let until = marks.get(i + 1).map_or(end, |m| m.1);
                (*name, (until - *t).as_secs_f64())
            })
            .collect()
    }
}

/// Progress that goes nowhere.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What a finished plot is.
#[derive(Clone, Debug)]
pub struct PlotSummary {
    pub path: PathBuf,
    pub k: u8,
    pub plot_id: [u8; 32],
    pub bytes: u64,
    pub seconds: f64,
    pub strategy: Strategy,
    /// Bytes the plotter wrote to temp files.
    pub temp_bytes_written: u64,
    /// How the time went: what benchmarks measure.
    pub stats: PlotStats,
}

/// Where a plot's time and memory went, for benchmarks and the curious.
#[derive(Clone, Debug, Default)]
pub struct PlotStats {
    /// Rounds the external plotter hashed the nonces in (0 in memory), and
    /// how many of them stayed in memory instead of going to the temp file.
    pub rounds: u64,
    pub rounds_in_memory: u64,
    /// Whether every record was hashed twice (external plots above k = 32,
    /// whose temp file holds nonces without buckets).
    pub hashed_twice: bool,
    /// Seconds spent in each phase, in order (the last includes making the
    /// file durable).
    pub phases: Vec<(Phase, f64)>,
    /// Bytes of fresh memory brought into use before hashing (0 when the
    /// plot reused an earlier plot's buffers), in [`Phase::FirstTouch`].
    pub fresh_memory_bytes: u64,
    /// Seconds spent in the write calls that put the plot's regions in its
    /// file, all in [`Phase::Writing`]: close to that phase's length, the
    /// disk set its pace; well below it, the workers did.
    pub file_write_seconds: f64,
    /// CPU time the whole process used (all its threads) during
    /// [`Phase::Writing`]: against that phase's length times the threads,
    /// how busy the plotter kept the cores while it wrote (anything else
    /// the process ran then counts too).
    pub last_phase_cpu_seconds: f64,
}

/// A stage of a plot, as [`Progress::phase`] announces it and
/// [`PlotStats::phases`] times it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    /// Bringing the pages of new sort buffers into use, before hashing:
    /// on a VM whose host backs guest memory lazily, a large share of a
    /// fresh plot's time.
    FirstTouch,
    /// An in-memory plot hashing every record into its sort buffers.
    Hashing,
    /// An external plot hashing every record and writing the rounds that
    /// do not stay in memory to the temp file.
    HashingToTemp,
    /// Every plot's last phase: sorting each partition's records into
    /// their buckets and writing the plot file (reading the temp file as it
    /// goes, for an external plot), then making the file durable.
    Writing,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

impl Phase {
    /// The phase in words, for progress bars and tables.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::FirstTouch => "bringing memory into use",
            Phase::Hashing => "hashing",
            Phase::HashingToTemp => "hashing to temp file",
            Phase::Writing => "sorting and writing",
        }
    }
}

impl PlotSummary {
    pub fn records_per_second(&self) -> f64 {
        (1u64 << self.k) as f64 / self.seconds
    }
}

impl PlotStats {
    /// Seconds of [`Phase::FirstTouch`] (0 when there was none).
    pub fn first_touch_seconds(&self) -> f64 {
        self.phase_seconds(Phase::FirstTouch).unwrap_or(0.0)
    }

    /// Seconds of `phase`, if the plot had it.
    pub fn phase_seconds(&self, phase: Phase) -> Option<f64> {
        let found = self.phases.iter().find(|(p, _)| *p == phase);
        found.map(|(_, seconds)| *seconds)
    }

    /// The share of `threads` cores the process kept busy in
    /// [`Phase::Writing`] (none for a plot without one, or no threads).
    pub fn last_phase_cores_busy(&self, threads: usize) -> Option<f64> {
        let wall = self.phase_seconds(Phase::Writing)?;
        (wall > 0.0 && threads > 0).then(|| self.last_phase_cpu_seconds / (wall * threads as f64))
    }
}

/// Makes one plot in `out_dir`. To make several, a [`Plotter`] is faster.
pub fn plot(
    options: &PlotOptions,
    out_dir: &Path,
    progress: &dyn Progress,
) -> Result<PlotSummary, PlotError> {
    Plotter::default().plot(options, out_dir, progress)
}

/// Makes plots one after another and keeps its large buffers from one plot
/// to the next: the plots after the first do not pay for fresh memory
/// (see `scatter::ScatterPool` for the sort buffers and
/// `pipeline::LastPhaseMemory` for the last phase's). Between plots it
/// holds at most what the last plot's memory limit allowed. [`Plotter::plot_all`] also overlaps
/// one plot's sorting with the next one's hashing.
///
/// A plot is done once its file is durable; a temp file it leaves goes on
/// being freed in the background (see `closer.rs`), overlapping the next
/// plot. Dropping the `Plotter` waits for that.
#[derive(Default)]
pub struct Plotter {
    scatters: ScatterPool,
    last_phase: pipeline::LastPhaseMemory,
    closer: Closer,
}

impl Plotter {
    /// Whether this plotter keeps no sort buffers from an earlier plot, so
    /// that its next plot brings fresh memory into use.
    pub fn holds_no_buffers(&self) -> bool {
        self.scatters.is_empty()
    }

    /// Makes one plot in `out_dir`.
    pub fn plot(
        &self,
        options: &PlotOptions,
        out_dir: &Path,
        progress: &dyn Progress,
    ) -> Result<PlotSummary, PlotError> {
        begin(options, out_dir, progress, self, Spares::Free, &mut || {
            false
        })?
        .finish()
    }

    /// Waits until the temp files of the plots made so far are closed and
    /// their space is free again.
    pub fn wait_for_temp_files(&self) {
        self.closer.wait();
    }
}

/// A plot whose records are all hashed. What is left: the last phase
/// (sorting and writing), then the header and making the file durable.
struct Begun<'a, P> {
    started: Instant,
    clock: PhaseClock<P>,
    options: PlotOptions,
    layout: Layout,
    id: [u8; 32],
    final_path: PathBuf,
    file: files::TempPlot,
    kernel: Kernel,
    strategy: Strategy,
    stage: Stage<'a>,
    plotter: &'a Plotter,
}

/// What a plot whose regions are all written leaves, whichever its
/// strategy.
pub(crate) struct Written {
    /// The slot after the last record.
    pub end: u64,
    /// Bytes of fresh memory brought into use for the sort buffers.
    pub fresh_bytes: u64,
    /// Time in the plot file's write calls.
    pub write_time: std::time::Duration,
}

enum Stage<'a> {
    /// Phase 1 of an external plot is done.
    Sorted(external::Sorted<'a>),
    /// Every record of an in-memory plot is hashed.
    Hashed(memory::Hashed<'a>),
}

/// Checks the options and the free space, creates the plot's temp file and
/// hashes every record (an external plot's phase 1, which also writes its
/// temp file). When the disk is too full, `make_room` may wait for
/// an earlier plot to finish (true when it did).
fn begin<'a, P: Progress>(
    options: &PlotOptions,
    out_dir: &Path,
    progress: P,
    plotter: &'a Plotter,
    spares: Spares,
    make_room: &mut dyn FnMut() -> bool,
) -> Result<Begun<'a, P>, PlotError> {
    let started = Instant::now();
    let clock = PhaseClock {
        inner: progress,
        marks: Default::default(),
    };
    let layout = options.layout()?;
    check_threads(options.threads)?;
    let id = plot_id(&options.farmer_key, &options.seed, options.k);
    let final_path = out_dir.join(plot_file_name(options.k, &id));
    if final_path.exists() && !options.force {
        return Err(PlotError::AlreadyExists(final_path));
    }
    files::remove_stale_temps(out_dir);
    if let Some(tmp) = &options.tmp_dir {
        files::remove_stale_temps(tmp);
    }

    let plan = PlotPlan::new(options)?;
    let threads = options.threads;
    let strategy = plan.strategy;

    // Expected size plus a few regions of spill at the end.
    let expected_size = HEADER_SIZE as u64 + (layout.group_count() + 4) * layout.region_size as u64;
    let tmp_dir = options
        .tmp_dir
        .clone()
        .unwrap_or_else(|| out_dir.to_path_buf());
    let temp_size = plan.temp_bytes_at_most;
    let check_space = || files::check_space(out_dir, expected_size, &tmp_dir, temp_size);
    let closer = &plotter.closer;
    loop {
        match check_space() {
            // The last plot's temp file may still be giving its space back,
            // or an earlier plot may still be sorting.
            Err(PlotError::NoSpace { .. }) if closer.busy() => closer.wait(),
            Err(PlotError::NoSpace { .. }) if make_room() => {}
            result => break result?,
        }
    }

    let temp_path = files::temp_path(&final_path);
    let file = files::TempPlot::create(&temp_path, expected_size)?;
    let kernel = Kernel::new(&id);
    let pool = &plotter.scatters;
    let stage = match &plan.detail {
        plan::Detail::External(external) => Stage::Sorted(external::phase_one(
            external,
            &kernel,
            threads,
            options.memory,
            (&tmp_dir, closer),
            &clock,
            (pool, spares, &plotter.last_phase),
        )?),
        plan::Detail::InMemory(in_memory) => {
            Stage::Hashed(memory::hash(in_memory, &kernel, threads, &clock, pool)?)
        }
    };
    Ok(Begun {
        started,
        clock,
        options: options.clone(),
        layout,
        id,
        final_path,
        file,
        kernel,
        strategy,
        stage,
        plotter,
    })
}

impl<P: Progress> Begun<'_, P> {
    /// Sorts and writes what is left, then seals the plot.
    fn finish(self) -> Result<PlotSummary, PlotError> {
        let Begun {
            started,
            clock,
            options,
            layout,
            id,
            final_path,
            file,
            kernel,
            strategy,
            stage,
            plotter,
        } = self;
        let cpu_before = process_cpu_time();
        let mut temp_bytes_written = 0;
        let mut hashed_twice = false;
        let (mut rounds, mut rounds_in_memory) = (0, 0);
        let written = match stage {
            Stage::Sorted(sorted) => {
                let pools = (&plotter.scatters, &plotter.last_phase);
                let ext = external::phase_two(sorted, &kernel, file.file(), &clock, pools)?;
                temp_bytes_written = ext.temp_bytes_written;
                hashed_twice = ext.hashed_twice;
                (rounds, rounds_in_memory) = (ext.rounds, ext.rounds_in_memory);
                ext.written
            }
            Stage::Hashed(hashed) => {
                hashed.write(options.threads, file.file(), &clock, &plotter.last_phase)?
            }
        };
        let end = written.end;
        let header = Header {
            layout,
            region_count: layout.region_count(end),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            farmer_key: options.farmer_key,
            seed: options.seed,
            plot_id: id,
        };
        let bytes = file.finish(&header, &final_path)?;
        let last_phase_cpu_seconds = (process_cpu_time() - cpu_before).as_secs_f64();
        Ok(PlotSummary {
            path: final_path,
            k: options.k,
            plot_id: id,
            bytes,
            seconds: started.elapsed().as_secs_f64(),
            strategy,
            temp_bytes_written,
            stats: PlotStats {
                rounds,
                rounds_in_memory,
                hashed_twice,
                phases: clock.durations(Instant::now()),
                fresh_memory_bytes: written.fresh_bytes,
                file_write_seconds: written.write_time.as_secs_f64(),
                last_phase_cpu_seconds,
            },
        })
    }
}

/// CPU time the process has used so far, all threads together.
fn process_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if status != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A cheap deterministic stream of test bytes, for the plotter's unit tests
/// and its phase benchmarks.
pub(crate) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
