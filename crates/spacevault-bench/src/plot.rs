//! `bench plot`: a plot, timed, with the machine's bounds measured in the
//! same run and the plot's ratio to them; repeated, with the spread of each
//! figure.

use crate::machine::{
    blake3_rate, concurrent_speed, disk_speed, hash_rate, peak_rss, reset_peak_rss,
    ConcurrentSpeed, DiskSpeed, IoCounters, Machine,
};
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::aligned;
use spacevault::plot::{Phase, Progress, Strategy};
use spacevault::PlotOptions;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long freed memory is left alone before plotting. A VM host that
/// backs guest memory lazily takes freed guest pages back after about two
/// seconds; until then a new allocation
/// finds them ready, and the plot would pay less for fresh memory than it
/// does on its own.
const FRESH_MEMORY_SETTLE: Duration = Duration::from_secs(4);

pub struct PlotBenchOptions {
    pub plot: PlotOptions,
    /// Where the plot (and the disk-speed scratch files) go; the temp file
    /// goes to `plot.tmp_dir` when set.
    pub dir: PathBuf,
    /// Keep the plot afterwards.
    pub keep: bool,
    /// How long to measure the hash rate, in all (two measurements, the
    /// better counts).
    pub hash_seconds: f64,
    /// Bytes for the disk-speed measurement (see [`default_disk_bytes`]).
    pub disk_bytes: u64,
    /// One [`spacevault::Plotter`] for every run of [`run_repeated`], as
    /// `plot --count` has: the runs after the first reuse its sort buffers
    /// instead of bringing fresh memory into use.
    pub reuse_memory: bool,
}

/// The disk measurement's size for a plot of 2^k records when none is
/// given: a quarter of the plot, at least 1 GiB and at most 4 GiB. A bound
/// must be reachable by the plot's own I/O, and a small scratch file is
/// not read the way a plot's many gigabytes are: a VM host that caches
/// recently written data serves a small file faster than a plot's temp
/// file, which would make the bound one no plot can reach.
pub fn default_disk_bytes(k: u8) -> u64 {
    const GIB: u64 = 1 << 30;
    // About k + 1 bits a record (docs/FORMAT.md).
    let plot = (1u64 << k) / 8 * (k as u64 + 1);
    (plot / 4).clamp(GIB, 4 * GIB) >> 20 << 20
}

/// The machine's limits, measured in the same run.
#[derive(Clone, Debug, Serialize)]
pub struct Bounds {
    /// spacevault's own kernel, computing only the hash bytes a plot needs
    /// ([`hash_rate`]).
    pub hash_records_per_second: f64,
    pub kernel_backend: &'static str,
    /// The `blake3` crate's SIMD `hash_many`, whole 32-byte hashes
    /// ([`blake3_rate`]): the machine's BLAKE3 hash rate.
    pub blake3_records_per_second: f64,
    /// The output directory's disk.
    pub disk: DiskSpeed,
    /// The temp directory's disk, when it is another file system.
    pub temp_disk: Option<DiskSpeed>,
    /// Reading in the temp directory while writing in the output directory
    /// (external plots only): what phase 2 does.
    pub concurrent: Option<ConcurrentSpeed>,
    /// Fresh memory the plot brought into use on every thread at once
    /// before hashing, bytes a second (the kernel zeroes each new page; a
    /// VM's host may have to back it); `None` when the plot needed none.
    pub fresh_memory_bytes_per_second: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlotBench {
    pub machine: Machine,
    pub k: u8,
    pub records: u64,
    pub strategy: &'static str,
    /// What the plotter settled before any work (`PlotPlan`).
    pub plan: spacevault::plot::PlotPlan,
    pub threads: usize,
    pub memory_limit: u64,
    pub path: Option<PathBuf>,
    pub file_bytes: u64,
    pub wall_seconds: f64,
    pub records_per_second: f64,
    pub file_mb_per_second: f64,
    pub temp_bytes_written: u64,
    /// Rounds of the external plotter's first phase (0 in memory), and how
    /// many stayed in memory instead of going through the temp file.
    pub rounds: u64,
    pub rounds_in_memory: u64,
    /// Seconds the temp file took to close once the plot was done: the file
    /// system freeing its blocks (trimming them, where mounted with
    /// `discard`). Not part of `wall_seconds`; plots made one after another
    /// overlap it with the next plot.
    pub temp_close_seconds: f64,
    /// Seconds in each phase of the plotter.
    pub phases: Vec<(Phase, f64)>,
    /// Seconds the plotter spent in the write calls that put the plot's
    /// regions in its file (all in its last phase), and the plot's bytes
    /// over them: the rate the disk gave the plot's own writes, to set
    /// beside `bounds.disk`'s. When the seconds come close to the last
    /// phase's, the disk set that phase's pace.
    pub file_write_seconds: f64,
    pub file_write_bytes_per_second: f64,
    /// CPU time the process used in the plotter's last phase, and its share
    /// of the time the plotter's threads' cores had in that phase: how busy
    /// writing the plot kept the cores (`plot --count` overlaps plots made
    /// in memory when that share is low).
    pub last_phase_cpu_seconds: f64,
    pub last_phase_cores_busy: f64,
    /// Storage I/O of the plotting, from /proc/self/io.
    pub io: Option<IoCounters>,
    pub bytes_written_per_plot_byte: Option<f64>,
    pub bytes_read_per_plot_byte: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    /// The most memory the plot held at once from the system's huge page
    /// pool (`vm.nr_hugepages`), which the kernel does not count in
    /// `peak_rss_bytes`: the plot's peak memory is about the sum of the two.
    /// 0 where the machine has no pool or `SPACEVAULT_HUGE_PAGE_POOL=never`.
    pub peak_huge_page_pool_bytes: u64,
    pub bounds: Bounds,
    /// Hashing all 2^k records on every core: the floor for any plotter.
    pub hash_bound_seconds: f64,
    /// `hash_bound_seconds / wall_seconds`.
    pub ratio_to_hash_bound: f64,
    /// Hashing all 2^k records with the `blake3` crate's `hash_many` on
    /// every core, and `blake3_bound_seconds / wall_seconds`.
    pub blake3_bound_seconds: f64,
    pub ratio_to_blake3_bound: f64,
    /// The floor of this strategy: hashing and the I/O it needs, overlapped
    /// where the data allows (see docs/DESIGN.md).
    pub design_bound_seconds: f64,
    /// Whether an I/O term of the design bound came from the plot's own
    /// phase, because the disk measured before it was slower than what the
    /// phase then did.
    pub design_io_capped_by_plot: bool,
    /// `wall_seconds / design_bound_seconds`.
    pub wall_over_design_bound: f64,
    /// The plot's time bringing its new sort buffers into use before
    /// hashing (0 when it reused buffers): time the hashing cores cannot
    /// hash in.
    pub first_touch_seconds: f64,
    /// The design bound with the first touch added to hashing, and the
    /// wall's ratio to it.
    pub design_bound_with_first_touch_seconds: f64,
    pub wall_over_design_bound_with_first_touch: f64,
}

/// Measures the bounds, then plots once with `plotter`.
pub fn run(
    options: &PlotBenchOptions,
    plotter: &spacevault::Plotter,
    progress: &dyn Progress,
) -> Result<PlotBench, BenchError> {
    let threads = options.plot.threads;
    let plan = spacevault::plot::PlotPlan::new(&options.plot)?;
    let external = plan.strategy == Strategy::External;
    // Memory an earlier process freed just now would come back ready to a
    // plot that brings fresh memory into use; settle first.
    if plotter.holds_no_buffers() {
        std::thread::sleep(FRESH_MEMORY_SETTLE);
    }
    // The hash rate is the best of two measurements, one before the
    // disk measurements and one after: on the development
    // VM, a one-second measurement now and then came out 15 to 20% below
    // the usual (while the host takes freed memory back, or schedules the
    // two virtual cores on one physical core), and a bound from it would
    // flatter the plot.
    let hash_time = Duration::from_secs_f64(options.hash_seconds / 2.0);
    let first_hash = hash_rate(threads, hash_time);
    let first_blake3 = blake3_rate(threads, hash_time);
    let disk = disk_speed(&options.dir, options.disk_bytes)?;
    let tmp_dir = options.plot.tmp_dir.as_deref().unwrap_or(&options.dir);
    let temp_disk = match same_file_system(tmp_dir, &options.dir) {
        false if external => Some(disk_speed(tmp_dir, options.disk_bytes)?),
        _ => None,
    };
    let concurrent = match external {
        true => Some(concurrent_speed(tmp_dir, &options.dir, options.disk_bytes)?),
        false => None,
    };
    let hash = first_hash.max(hash_rate(threads, hash_time));
    let blake3 = first_blake3.max(blake3_rate(threads, hash_time));

    let rss_reset = reset_peak_rss();
    aligned::reset_pool_peak();
    let io_before = IoCounters::now();
    let summary = plotter.plot(&options.plot, &options.dir, progress)?;
    let io = io_before.and_then(|b| IoCounters::now().map(|a| a.since(&b)));
    let closing = Instant::now();
    plotter.wait_for_temp_files();
    let temp_close_seconds = closing.elapsed().as_secs_f64();
    let peak = if rss_reset { peak_rss() } else { None };
    let peak_pool = aligned::pool_peak() as u64;
    // The plot's own first touch, timed as a phase of its own: measured
    // apart, it came out several times faster or slower than what the plot
    // paid, depending on what the VM's host still backed (see
    // `Pages::Base`).
    let first_touch = summary.stats.first_touch_seconds();
    let fresh_memory = (summary.stats.fresh_memory_bytes > 0 && first_touch > 0.0)
        .then(|| summary.stats.fresh_memory_bytes as f64 / first_touch);
    let bounds = Bounds {
        hash_records_per_second: hash,
        kernel_backend: spacevault::kernel::Backend::active().name(),
        blake3_records_per_second: blake3,
        disk,
        temp_disk,
        concurrent,
        fresh_memory_bytes_per_second: fresh_memory,
    };

    let records = 1u64 << options.plot.k;
    let file = summary.bytes as f64;
    let hash_bound = records as f64 / hash;
    let design_io = DesignIo::of(&summary, disk, temp_disk, concurrent);
    let design_bound = |first_touch: f64| design_io.bound(&summary, hash_bound, first_touch);
    let design = design_bound(0.0);
    let with_touch = design_bound(first_touch);
    let path = if options.keep {
        Some(summary.path.clone())
    } else {
        std::fs::remove_file(&summary.path)
            .map_err(|e| BenchError::io("removing the benchmark plot", e))?;
        None
    };
    Ok(PlotBench {
        machine: Machine::this(),
        k: options.plot.k,
        records,
        strategy: summary.strategy.name(),
        plan,
        threads,
        memory_limit: options.plot.memory,
        path,
        file_bytes: summary.bytes,
        wall_seconds: summary.seconds,
        records_per_second: summary.records_per_second(),
        file_mb_per_second: file / summary.seconds / 1e6,
        temp_bytes_written: summary.temp_bytes_written,
        rounds: summary.stats.rounds,
        rounds_in_memory: summary.stats.rounds_in_memory,
        temp_close_seconds,
        phases: summary.stats.phases.clone(),
        file_write_seconds: summary.stats.file_write_seconds,
        file_write_bytes_per_second: file / summary.stats.file_write_seconds.max(1e-9),
        last_phase_cpu_seconds: summary.stats.last_phase_cpu_seconds,
        last_phase_cores_busy: summary.stats.last_phase_cores_busy(threads).unwrap_or(0.0),
        io,
        bytes_written_per_plot_byte: io.map(|i| i.write_bytes as f64 / file),
        bytes_read_per_plot_byte: io.map(|i| i.read_bytes as f64 / file),
        peak_rss_bytes: peak,
        peak_huge_page_pool_bytes: peak_pool,
        bounds,
        hash_bound_seconds: hash_bound,
        ratio_to_hash_bound: hash_bound / summary.seconds,
        blake3_bound_seconds: records as f64 / blake3,
        ratio_to_blake3_bound: records as f64 / blake3 / summary.seconds,
        design_bound_seconds: design,
        design_io_capped_by_plot: design_io.capped_by_plot,
        wall_over_design_bound: summary.seconds / design,
        first_touch_seconds: first_touch,
        design_bound_with_first_touch_seconds: with_touch,
        wall_over_design_bound_with_first_touch: summary.seconds / with_touch,
    })
}

/// The I/O a plot's design bound counts, seconds at the disk's measured
/// speeds: what must be written while hashing (the temp file), and what
/// must be read and written after it (the plot file, and the temp file
/// read back).
#[derive(Clone, Copy, Debug, PartialEq)]
struct DesignIo {
    during_hashing: f64,
    after_hashing: f64,
    /// Whether a term is the plot's own phase instead (see [`Self::of`]).
    capped_by_plot: bool,
}

impl DesignIo {
    /// The measurements are taken minutes before the plot, and on a shared
    /// host the disk's speed swings by half from one minute to the next: a
    /// measurement slower than what the plot's own phase then did is no
    /// bound (the disk did that I/O in the phase's time) and would flatter
    /// the plot, so each term is capped by the phase that did its I/O.
    fn of(
        summary: &spacevault::PlotSummary,
        disk: DiskSpeed,
        temp_disk: Option<DiskSpeed>,
        concurrent: Option<ConcurrentSpeed>,
    ) -> DesignIo {
        let capped = |measured: f64, phase: Phase| match summary.stats.phase_seconds(phase) {
            Some(done_in) if done_in < measured => (done_in, true),
            _ => (measured, false),
        };
        let file = summary.bytes as f64;
        match (summary.strategy, concurrent) {
            (Strategy::External, Some(both)) => {
                let temp = summary.temp_bytes_written as f64;
                let temp_disk = temp_disk.unwrap_or(disk);
                let (during, capped_during) = capped(
                    temp / temp_disk.write_bytes_per_second,
                    Phase::HashingToTemp,
                );
                let (after, capped_after) = capped(
                    read_while_writing_seconds(
                        temp,
                        file,
                        (temp_disk.read_bytes_per_second, disk.write_bytes_per_second),
                        (both.read_bytes_per_second, both.write_bytes_per_second),
                    ),
                    Phase::Writing,
                );
                DesignIo {
                    during_hashing: during,
                    after_hashing: after,
                    capped_by_plot: capped_during || capped_after,
                }
            }
            _ => {
                let (after, capped_after) =
                    capped(file / disk.write_bytes_per_second, Phase::Writing);
                DesignIo {
                    during_hashing: 0.0,
                    after_hashing: after,
                    capped_by_plot: capped_after,
                }
            }
        }
    }

    /// The design bound: hashing (plus `first_touch`, which takes the same
    /// cores) overlapped with the temp file's writing, then the I/O after
    /// hashing, overlapped with hashing again where the plot hashes twice.
    fn bound(&self, summary: &spacevault::PlotSummary, hash_bound: f64, first_touch: f64) -> f64 {
        match summary.strategy {
            Strategy::External => {
                let rehash = if summary.stats.hashed_twice {
                    hash_bound
                } else {
                    0.0
                };
                (hash_bound + first_touch).max(self.during_hashing) + rehash.max(self.after_hashing)
            }
            // Every byte of the plot depends on every record (bucket 0 may
            // hold the last nonce hashed), so no write can start before the
            // last hash: the whole file is written after hashing, not
            // during it.
            _ => hash_bound + first_touch + self.after_hashing,
        }
    }
}

/// Several runs of [`run`], each measuring the bounds again just before its
/// plot, so that each ratio pairs a plot with the machine as it was at the
/// time: on a shared host the disk's speed swings by a third from one
/// minute to the next, and one run's ratio says as much about the host as
/// about the plotter.
#[derive(Clone, Debug, Serialize)]
pub struct Repeated {
    /// Whether the runs shared one plotter's memory (see
    /// [`PlotBenchOptions::reuse_memory`]).
    pub reuse_memory: bool,
    pub runs: Vec<PlotBench>,
    pub summary: RepeatedSummary,
    /// With memory reused and two runs or more, the spread over the runs
    /// after the first: those are the plots a `plot --count` run makes after
    /// its first, while the first pays for bringing fresh memory into use
    /// (on a VM that backs memory lazily, up to half the plot) and so says
    /// more about the host than about the plotter.
    pub reused_summary: Option<RepeatedSummary>,
}

/// The spread over the runs of the figures that move from run to run.
#[derive(Clone, Debug, Serialize)]
pub struct RepeatedSummary {
    pub wall_seconds: Summary,
    pub records_per_second: Summary,
    pub hash_bound_seconds: Summary,
    pub ratio_to_hash_bound: Summary,
    pub ratio_to_blake3_bound: Summary,
    pub design_bound_seconds: Summary,
    pub wall_over_design_bound: Summary,
    pub wall_over_design_bound_with_first_touch: Summary,
    /// The disk's measured write rate, and the rate the plot's own writes
    /// got: their spread shows how much of a ratio's spread is the disk's.
    pub disk_write_bytes_per_second: Summary,
    pub file_write_bytes_per_second: Summary,
}

impl RepeatedSummary {
    pub fn of(runs: &[PlotBench]) -> RepeatedSummary {
        let over = |f: fn(&PlotBench) -> f64| Summary::of(&runs.iter().map(f).collect::<Vec<_>>());
        RepeatedSummary {
            wall_seconds: over(|r| r.wall_seconds),
            records_per_second: over(|r| r.records_per_second),
            hash_bound_seconds: over(|r| r.hash_bound_seconds),
            ratio_to_hash_bound: over(|r| r.ratio_to_hash_bound),
            ratio_to_blake3_bound: over(|r| r.ratio_to_blake3_bound),
            design_bound_seconds: over(|r| r.design_bound_seconds),
            wall_over_design_bound: over(|r| r.wall_over_design_bound),
            wall_over_design_bound_with_first_touch: over(|r| {
                r.wall_over_design_bound_with_first_touch
            }),
            disk_write_bytes_per_second: over(|r| r.bounds.disk.write_bytes_per_second),
            file_write_bytes_per_second: over(|r| r.file_write_bytes_per_second),
        }
    }
}

/// Runs the benchmark `runs` times (at least once); `started(i)` is called
/// before run i (from 0), for progress.
pub fn run_repeated(
    options: &PlotBenchOptions,
    runs: usize,
    progress: &dyn Progress,
    mut started: impl FnMut(usize),
) -> Result<Repeated, BenchError> {
    let mut done = Vec::with_capacity(runs.max(1));
    let shared = spacevault::Plotter::default();
    for i in 0..runs.max(1) {
        started(i);
        let fresh;
        let plotter = match options.reuse_memory {
            true => &shared,
            false => {
                fresh = spacevault::Plotter::default();
                &fresh
            }
        };
        done.push(run(options, plotter, progress)?);
    }
    let summary = RepeatedSummary::of(&done);
    let reused_summary =
        (options.reuse_memory && done.len() > 1).then(|| RepeatedSummary::of(&done[1..]));
    Ok(Repeated {
        reuse_memory: options.reuse_memory,
        runs: done,
        summary,
        reused_summary,
    })
}

/// The least time to read `read` bytes and write `write` bytes, given each
/// direction's speed alone and the speeds the two get at once (all bytes a
/// second). Any mix of the three ways of running (reading alone, writing
/// alone, both at once) is possible, so this is a small linear program; its
/// cost is convex in the time spent running both, and least where one
/// direction runs out or where both never overlap. On two independent disks
/// it comes to the slower direction's time; on one disk whose bandwidth the
/// two directions share, to the sum of both.
pub fn read_while_writing_seconds(
    read: f64,
    write: f64,
    (read_alone, write_alone): (f64, f64),
    (read_both, write_both): (f64, f64),
) -> f64 {
    let cost = |both: f64| {
        both + (read - read_both * both).max(0.0) / read_alone
            + (write - write_both * both).max(0.0) / write_alone
    };
    [0.0, read / read_both, write / write_both]
        .into_iter()
        .filter(|t| t.is_finite())
        .map(cost)
        .fold(f64::INFINITY, f64::min)
}

/// Whether two directories are on one file system (and so most likely one
/// disk).
fn same_file_system(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_measurement_grows_with_the_plot_within_limits() {
        assert_eq!(default_disk_bytes(20), 1 << 30);
        assert_eq!(default_disk_bytes(28), 1 << 30);
        // 2^31 records of 32 bits: 8 GiB, a quarter of it.
        assert_eq!(default_disk_bytes(31), 2 << 30);
        assert_eq!(default_disk_bytes(32), 4 << 30);
        assert_eq!(default_disk_bytes(40), 4 << 30);
    }

    #[test]
    fn reading_while_writing_takes_the_best_mix() {
        let t = |r, w, alone, both| read_while_writing_seconds(r, w, alone, both);
        // Two independent disks: both directions at full speed at once.
        assert!((t(10.0, 20.0, (1.0, 4.0), (1.0, 4.0)) - 10.0).abs() < 1e-9);
        // One disk sharing its time: no better than one after the other.
        assert!((t(10.0, 20.0, (1.0, 4.0), (0.5, 2.0)) - 15.0).abs() < 1e-9);
        // Worse than that at once: the directions are better run apart.
        assert!((t(10.0, 20.0, (1.0, 4.0), (0.2, 0.8)) - 15.0).abs() < 1e-9);
        // In between: both at once until the writes are done (10 s, 8
        // bytes read), then the last 2 bytes read alone.
        let got = t(10.0, 20.0, (1.0, 4.0), (0.8, 2.0));
        assert!((got - 12.0).abs() < 1e-9, "{got}");
        // Nothing to read: the writes alone.
        assert!((t(0.0, 20.0, (1.0, 4.0), (0.5, 2.0)) - 5.0).abs() < 1e-9);
    }

    fn summary(strategy: Strategy, phases: &[(Phase, f64)]) -> spacevault::PlotSummary {
        spacevault::PlotSummary {
            path: PathBuf::new(),
            k: 20,
            plot_id: [0; 32],
            bytes: 1000,
            seconds: phases.iter().map(|p| p.1).sum(),
            strategy,
            temp_bytes_written: if strategy == Strategy::External {
                800
            } else {
                0
            },
            stats: spacevault::plot::PlotStats {
                phases: phases.to_vec(),
                ..Default::default()
            },
        }
    }

    fn disk(write: f64, read: f64) -> DiskSpeed {
        DiskSpeed {
            write_bytes_per_second: write,
            read_bytes_per_second: read,
            direct: true,
            bytes: 0,
        }
    }

    #[test]
    fn the_bound_in_memory_is_hashing_then_writing_the_file() {
        let plot = summary(
            Strategy::Memory,
            &[(Phase::Hashing, 3.0), (Phase::Writing, 2.0)],
        );
        // 1000 bytes at 1000 a second: 1 s, faster than the plot's phase.
        let io = DesignIo::of(&plot, disk(1000.0, 1000.0), None, None);
        assert_eq!(io.after_hashing, 1.0);
        assert!(!io.capped_by_plot);
        assert_eq!(io.bound(&plot, 2.5, 0.0), 3.5);
        assert_eq!(io.bound(&plot, 2.5, 0.5), 4.0);
    }

    #[test]
    fn a_disk_measured_slower_than_the_plot_ran_gives_way_to_the_plot() {
        // 1000 bytes at 100 a second would take 10 s; the plot wrote them
        // in 2 s, so the disk can do at least that.
        let plot = summary(
            Strategy::Memory,
            &[(Phase::Hashing, 3.0), (Phase::Writing, 2.0)],
        );
        let io = DesignIo::of(&plot, disk(100.0, 100.0), None, None);
        assert_eq!(io.after_hashing, 2.0);
        assert!(io.capped_by_plot);

        let plot = summary(
            Strategy::External,
            &[(Phase::HashingToTemp, 5.0), (Phase::Writing, 4.0)],
        );
        let both = ConcurrentSpeed {
            read_bytes_per_second: 100.0,
            write_bytes_per_second: 100.0,
            bytes: 0,
        };
        // A fast disk: the temp file's 800 bytes in 0.8 s while hashing
        // (3 s), then 800 read and 1000 written at 1000 a second, one after
        // the other being best: 1.8 s.
        let fast = DesignIo::of(&plot, disk(1000.0, 1000.0), None, Some(both));
        assert!(!fast.capped_by_plot);
        assert!((fast.bound(&plot, 3.0, 0.0) - 4.8).abs() < 1e-9);
        // A slow one: 8 s of temp writes and 18 s after hashing, each
        // capped by the phase that did them.
        let slow = DesignIo::of(&plot, disk(100.0, 100.0), None, Some(both));
        assert!(slow.capped_by_plot);
        assert_eq!((slow.during_hashing, slow.after_hashing), (5.0, 4.0));
        assert_eq!(slow.bound(&plot, 3.0, 0.0), 9.0);
    }
}
