//! `bench plot`: one plot, timed, with the machine's bounds measured in the
//! same run and the plot's ratio to them.

use crate::machine::{disk_speed, hash_rate, peak_rss, reset_peak_rss, DiskSpeed, IoCounters};
use crate::BenchError;
use serde::Serialize;
use spacevault::plot::{Progress, Strategy};
use spacevault::PlotOptions;
use std::path::PathBuf;
use std::time::Duration;

pub struct PlotBenchOptions {
    pub plot: PlotOptions,
    /// Where the plot (and the disk-speed scratch file) go.
    pub dir: PathBuf,
    /// Keep the plot afterwards.
    pub keep: bool,
    /// How long to measure the hash rate.
    pub hash_seconds: f64,
    /// Bytes for the disk-speed measurement.
    pub disk_bytes: u64,
}

/// The machine's limits, measured in the same run.
#[derive(Clone, Debug, Serialize)]
pub struct Bounds {
    pub hash_records_per_second: f64,
    pub kernel_backend: &'static str,
    pub disk: DiskSpeed,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlotBench {
    pub k: u8,
    pub records: u64,
    pub strategy: &'static str,
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
    /// Seconds in each phase of the plotter.
    pub phases: Vec<(String, f64)>,
    /// Storage I/O of the plotting, from /proc/self/io.
    pub io: Option<IoCounters>,
    pub bytes_written_per_plot_byte: Option<f64>,
    pub bytes_read_per_plot_byte: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    pub bounds: Bounds,
    /// Hashing all 2^k records on every core: the floor for any plotter.
    pub hash_bound_seconds: f64,
    /// `hash_bound_seconds / wall_seconds`.
    pub ratio_to_hash_bound: f64,
    /// The floor of this strategy: hashing, overlapped with the I/O it needs
    /// (see docs/DESIGN.md).
    pub design_bound_seconds: f64,
    /// `wall_seconds / design_bound_seconds`.
    pub wall_over_design_bound: f64,
}

/// Measures the bounds, then plots once.
pub fn run(options: &PlotBenchOptions, progress: &dyn Progress) -> Result<PlotBench, BenchError> {
    let threads = options.plot.threads;
    let hash = hash_rate(threads, Duration::from_secs_f64(options.hash_seconds));
    let disk = disk_speed(&options.dir, options.disk_bytes)?;
    let bounds = Bounds {
        hash_records_per_second: hash,
        kernel_backend: spacevault::kernel::Backend::active().name(),
        disk,
    };

    let rss_reset = reset_peak_rss();
    let io_before = IoCounters::now();
    let summary = spacevault::plot(&options.plot, &options.dir, progress)?;
    let io = io_before.and_then(|b| IoCounters::now().map(|a| a.since(&b)));
    let peak = if rss_reset { peak_rss() } else { None };

    let records = 1u64 << options.plot.k;
    let file = summary.bytes as f64;
    let hash_bound = records as f64 / hash;
    let temp = summary.temp_bytes_written as f64;
    let design = match summary.strategy {
        Strategy::External => {
            let rehash = if summary.hashed_twice {
                hash_bound
            } else {
                0.0
            };
            hash_bound.max(temp / disk.write_bytes_per_second)
                + rehash
                    .max(temp / disk.read_bytes_per_second)
                    .max(file / disk.write_bytes_per_second)
        }
        _ => hash_bound.max(file / disk.write_bytes_per_second),
    };
    let path = if options.keep {
        Some(summary.path.clone())
    } else {
        std::fs::remove_file(&summary.path)
            .map_err(|e| BenchError::io("removing the benchmark plot", e))?;
        None
    };
    Ok(PlotBench {
        k: options.plot.k,
        records,
        strategy: summary.strategy.name(),
        threads,
        memory_limit: options.plot.memory,
        path,
        file_bytes: summary.bytes,
        wall_seconds: summary.seconds,
        records_per_second: summary.records_per_second(),
        file_mb_per_second: file / summary.seconds / 1e6,
        temp_bytes_written: summary.temp_bytes_written,
        rounds: summary.rounds,
        rounds_in_memory: summary.rounds_in_memory,
        phases: summary.phases.clone(),
        io,
        bytes_written_per_plot_byte: io.map(|i| i.write_bytes as f64 / file),
        bytes_read_per_plot_byte: io.map(|i| i.read_bytes as f64 / file),
        peak_rss_bytes: peak,
        bounds,
        hash_bound_seconds: hash_bound,
        ratio_to_hash_bound: hash_bound / summary.seconds,
        design_bound_seconds: design,
        wall_over_design_bound: summary.seconds / design,
    })
}
