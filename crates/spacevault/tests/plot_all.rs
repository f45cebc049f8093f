//! `Plotter::plot_all`: plots that overlap (one sorting while the next one
//! hashes: external plots each in half the memory, plots in memory side by
//! side) are the plots each would be alone, are reported in order, and an
//! error stops the run.

use spacevault::plot::{NoProgress, Overlap, Phase, PlotJob, Progress, Strategy};
use spacevault::{plot, PlotError, PlotOptions, PlotSummary, Plotter};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

fn options(k: u8, strategy: Strategy, memory: u64, seed: u8) -> PlotOptions {
    let mut o = PlotOptions::new(k, [0xA5 ^ seed; 32], [seed; 32]);
    o.strategy = strategy;
    o.memory = memory;
    o.threads = 2;
    o
}

fn job(options: PlotOptions, out_dir: &Path) -> PlotJob {
    PlotJob {
        options,
        out_dir: out_dir.to_path_buf(),
    }
}

/// Each result handed to `done`, with its plot's index.
type Reported = Vec<(usize, Result<PlotSummary, PlotError>)>;

/// Runs `jobs` and returns what was reported, and how
/// many progress observers were asked for.
fn run(jobs: &[PlotJob], overlap: Overlap) -> (Reported, usize) {
    let asked = AtomicUsize::new(0);
    let mut results = Vec::new();
    Plotter::default().plot_all(
        jobs,
        overlap,
        |_| {
            asked.fetch_add(1, Ordering::Relaxed);
            NoProgress
        },
        |i, result| {
            results.push((i, result));
            true
        },
    );
    (results, asked.into_inner())
}

#[test]
fn overlapped_plots_are_the_plots_made_alone() {
    // k = 20 through a temp file in 84 MiB, or in its half (42 MiB); the
    // k = 18 plot is made in memory and overlaps neither neighbour.
    let dir = tempfile::tempdir().unwrap();
    let alone_dir = tempfile::tempdir().unwrap();
    let ext = Strategy::External;
    let jobs = [
        job(options(20, ext, 84 << 20, 1), dir.path()),
        job(options(20, ext, 84 << 20, 2), dir.path()),
        job(options(18, Strategy::Auto, 84 << 20, 3), dir.path()),
        job(options(20, ext, 84 << 20, 4), dir.path()),
    ];
    let (results, asked) = run(&jobs, Overlap::Always);
    assert_eq!(asked, jobs.len());
    let order: Vec<usize> = results.iter().map(|(i, _)| *i).collect();
    assert_eq!(order, [0, 1, 2, 3]);
    // The first two overlap; the last has no external plot beside it.
    let halved = [true, true, false, false];
    for (((_, result), job), halved) in results.into_iter().zip(&jobs).zip(halved) {
        let overlapped = result.unwrap();
        let alone = plot(&job.options, alone_dir.path(), &NoProgress).unwrap();
        assert_eq!(overlapped.strategy, alone.strategy);
        let seed = job.options.seed[0];
        if halved {
            // Half the memory: smaller rounds, so more of them.
            assert!(overlapped.stats.rounds > alone.stats.rounds, "seed {seed}");
        } else {
            assert_eq!(overlapped.stats.rounds, alone.stats.rounds, "seed {seed}");
        }
        let (a, b) = (
            std::fs::read(&overlapped.path).unwrap(),
            std::fs::read(&alone.path).unwrap(),
        );
        assert!(a[4096..] == b[4096..], "seed {seed}");
    }
    // Nothing but the four plots is left.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
}

#[test]
fn plots_on_one_drive_do_not_overlap_unless_told_to() {
    // Both plots and their temp files are on one drive: each plot has the
    // whole limit, as it would alone.
    let dir = tempfile::tempdir().unwrap();
    let alone_dir = tempfile::tempdir().unwrap();
    let ext = Strategy::External;
    let jobs = [
        job(options(20, ext, 84 << 20, 5), dir.path()),
        job(options(20, ext, 84 << 20, 6), dir.path()),
    ];
    for overlap in [Overlap::Auto, Overlap::Never] {
        let mut jobs = jobs.clone();
        jobs.iter_mut().for_each(|j| j.options.force = true);
        let (results, _) = run(&jobs, overlap);
        for ((_, result), job) in results.into_iter().zip(&jobs) {
            let alone = plot(&job.options, alone_dir.path(), &NoProgress).unwrap();
            assert_eq!(
                result.unwrap().stats.rounds,
                alone.stats.rounds,
                "{overlap:?}"
            );
        }
    }
}

#[test]
fn an_error_stops_the_run_after_the_plots_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let ext = Strategy::External;
    let taken = options(20, ext, 84 << 20, 8);
    plot(&taken, dir.path(), &NoProgress).unwrap();
    let jobs = [
        job(options(20, ext, 84 << 20, 7), dir.path()),
        job(taken, dir.path()),
        job(options(20, ext, 84 << 20, 9), dir.path()),
    ];
    let (results, asked) = run(&jobs, Overlap::Always);
    assert_eq!(asked, 2, "the plot after the error is not started");
    assert_eq!(results.len(), 2);
    assert!(results[0].1.is_ok());
    assert_eq!(results[1].0, 1);
    assert!(matches!(results[1].1, Err(PlotError::AlreadyExists(_))));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn done_returning_false_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<PlotJob> = (10..13)
        .map(|seed| job(options(20, Strategy::External, 84 << 20, seed), dir.path()))
        .collect();
    let mut reported = Vec::new();
    Plotter::default().plot_all(
        &jobs,
        Overlap::Always,
        |_| NoProgress,
        |i, result| {
            reported.push(i);
            result.is_ok() && i < 1
        },
    );
    // Plot 2 was hashing while plot 1 sorted: it is dropped, files and all.
    assert_eq!(reported, [0, 1]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// What happened, in order: each plot's phases and each result.
#[derive(Default)]
struct Log(std::sync::Mutex<Vec<String>>);

impl Log {
    fn push(&self, event: String) {
        self.0.lock().unwrap().push(event);
    }

    fn position(&self, event: &str) -> usize {
        let events = self.0.lock().unwrap();
        let found = events.iter().position(|e| e == event);
        found.unwrap_or_else(|| panic!("no {event:?} in {events:?}"))
    }
}

struct Logged<'a>(&'a Log, usize);

impl Progress for Logged<'_> {
    fn phase(&self, name: Phase, _total: u64) {
        self.0.push(format!("{} {name}", self.1));
    }
}

#[test]
fn plots_in_memory_hash_while_the_one_before_is_written() {
    // Three k = 18 plots in memory: 256 MiB holds two at once.
    let dir = tempfile::tempdir().unwrap();
    let alone_dir = tempfile::tempdir().unwrap();
    let jobs: Vec<PlotJob> = (20..23)
        .map(|seed| job(options(18, Strategy::Auto, 256 << 20, seed), dir.path()))
        .collect();
    for overlap in [Overlap::Always, Overlap::Never, Overlap::Auto] {
        let log = Log::default();
        let mut results = Vec::new();
        let mut jobs = jobs.clone();
        jobs.iter_mut().for_each(|j| j.options.force = true);
        Plotter::default().plot_all(
            &jobs,
            overlap,
            |i| Logged(&log, i),
            |i, result| {
                log.push(format!("{i} done"));
                results.push(result);
                true
            },
        );
        for i in 1..jobs.len() {
            let hashing = log.position(&format!("{i} hashing"));
            let done = log.position(&format!("{} done", i - 1));
            // Overlapped, plot i hashes while plot i - 1 is written, and
            // plot i - 1 is reported once plot i is hashed.
            // With `Auto` the first plot is written alone, to see how busy
            // that keeps the cores; whether the next ones overlap depends
            // on it.
            match (overlap, i) {
                (Overlap::Always, _) => assert!(hashing < done),
                (Overlap::Never, _) | (Overlap::Auto, 1) => assert!(done < hashing, "{overlap:?}"),
                _ => {}
            }
        }
        assert_eq!(results.len(), jobs.len());
        for (result, job) in results.into_iter().zip(&jobs) {
            let made = result.unwrap();
            assert_eq!(made.strategy, Strategy::Memory);
            let alone = plot(&job.options, alone_dir.path(), &NoProgress).unwrap();
            let (a, b) = (
                std::fs::read(&made.path).unwrap(),
                std::fs::read(&alone.path).unwrap(),
            );
            assert!(a[4096..] == b[4096..], "seed {}", job.options.seed[0]);
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}
