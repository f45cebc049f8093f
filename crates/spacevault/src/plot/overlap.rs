//! Making many plots, one's sorting beside the next one's hashing.
//!
//! An external plot's phase 1 is bound by the CPU (hashing) and writes its
//! temp file; its phase 2 is bound by the disk (reading the temp file while
//! writing the plot). When the next plot's temp file is on another drive,
//! one plot's phase 2 and the next one's phase 1 share nothing but the
//! cores, so they run together: each plot then gets half the memory limit,
//! so that the two stay within it, and the round buffers the first no
//! longer needs go straight to the second. On one drive the two phases
//! contend for it and the halved memory sends more keys through the temp
//! file: overlapping gains nothing there (docs/BENCHMARKS.md), so they do
//! not overlap unless asked to.
//!
//! A plot made in memory writes its file in its last phase, and the next
//! one's hashing needs no drive: when two fit in the memory limit at once,
//! they overlap whatever the drives, if writing leaves the cores enough
//! idle time for the hashing (see [`BUSY_ENOUGH_ALONE`]).

use super::external::{self, Spares};
use super::files::drive_of;
use super::{begin, PlotError, PlotOptions, PlotPlan, PlotSummary, Plotter, Progress, Strategy};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::thread::ScopedJoinHandle;

/// One plot of a [`Plotter::plot_all`] run.
#[derive(Clone, Debug)]
pub struct PlotJob {
    pub options: PlotOptions,
    pub out_dir: PathBuf,
}

impl PlotJob {
    fn tmp_dir(&self) -> &Path {
        self.options.tmp_dir.as_deref().unwrap_or(&self.out_dir)
    }
}

/// When a plot sorts while the next one hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Overlap {
    /// Plots in memory when two fit in the limit and writing the last one
    /// made alone left the cores idle enough; plots larger than the limit
    /// when the next plot's temp file is on another drive than this plot's
    /// temp file and plot.
    #[default]
    Auto,
    Always,
    Never,
}

/// A plot whose last phase runs in the background.
struct Background<'s> {
    index: usize,
    /// The drive its file is written to (None: not known).
    drive: Option<String>,
    /// The memory it holds until it is done.
    memory: u64,
    handle: ScopedJoinHandle<'s, Result<PlotSummary, PlotError>>,
}

/// The plots being written in the background, oldest first.
type Running<'s> = VecDeque<Background<'s>>;

impl Plotter {
    /// Makes `jobs` in order, giving each its progress from `progress_for`
    /// and handing each result to `done` as soon as it is known, in order;
    /// `done` returns false to stop the run (plots already being written
    /// are still reported). A plot may sort while the next one hashes (see
    /// [`Overlap`]): plots larger than the memory limit each in half of it,
    /// plots in memory as many at once as the limit holds, one per drive.
    /// With [`Overlap::Auto`], the first plot in memory is written alone,
    /// to see how busy writing keeps the cores.
    ///
    /// An error stops the run: a plot that fails while the next one hashes
    /// is reported once that hashing is done, and the next plot is dropped
    /// with its files.
    pub fn plot_all<P: Progress + Send>(
        &self,
        jobs: &[PlotJob],
        overlap: Overlap,
        progress_for: impl FnMut(usize) -> P,
        done: impl FnMut(usize, Result<PlotSummary, PlotError>) -> bool,
    ) {
        self.plot_all_on(jobs, overlap, drive_of, progress_for, done);
    }

    /// [`plot_all`](Self::plot_all) with the drives a directory is on
    /// given by `drive_of`.
    fn plot_all_on<P: Progress + Send>(
        &self,
        jobs: &[PlotJob],
        overlap: Overlap,
        drive_of: impl Fn(&Path) -> Option<String>,
        mut progress_for: impl FnMut(usize) -> P,
        mut done: impl FnMut(usize, Result<PlotSummary, PlotError>) -> bool,
    ) {
        let pairings = overlapping_pairs(jobs, overlap, &drive_of);
        let overlaps: Vec<bool> = pairings.iter().map(|&p| p != Pairing::Apart).collect();
        // How busy the last plot that sorted alone kept the cores then.
        let mut busy = None;
        std::thread::scope(|s| {
            let mut running = Running::new();
            let mut stopped = false;
            for (i, job) in jobs.iter().enumerate() {
                let before = i > 0 && overlaps[i - 1];
                let (options, spares) = match (before, overlaps[i]) {
                    (false, false) => (job.options.clone(), Spares::Free),
                    (true, false) => (halved(&job.options).0, Spares::Free),
                    (_, true) => halved(&job.options),
                };
                let side = beside(&options);
                let memory = match side {
                    Beside::InMemory(needed) => needed,
                    _ => options.memory,
                };
                // The plots being written and this one stay within the
                // limit together.
                while running.iter().map(|b| b.memory).sum::<u64>() + memory > job.options.memory
                    && report_oldest(&mut running, &mut stopped, &mut done)
                {}
                if stopped {
                    break;
                }
                let begun = begin(
                    &options,
                    &job.out_dir,
                    progress_for(i),
                    self,
                    spares,
                    // A disk too full for two plots at once waits for the
                    // earlier one.
                    &mut || report_oldest(&mut running, &mut stopped, &mut done) && !stopped,
                );
                // Its file is written once the plots before it on its drive
                // are; an external plot's, once every plot before it is.
                let drive = drive_of(&job.out_dir);
                let last_on_drive = match side {
                    Beside::InMemory(_) => running
                        .iter()
                        .rposition(|b| drive.is_none() || b.drive.is_none() || b.drive == drive),
                    _ => running.len().checked_sub(1),
                };
                if let Some(last) = last_on_drive {
                    for _ in 0..=last {
                        report_oldest(&mut running, &mut stopped, &mut done);
                    }
                }
                if stopped {
                    break;
                }
                // A plot in memory written while earlier ones are (on other
                // drives) is written in the background too, the last one
                // included: its turn to be reported comes after theirs.
                let beside_earlier = matches!(side, Beside::InMemory(_)) && !running.is_empty();
                let together = beside_earlier
                    || match pairings[i] {
                        Pairing::Apart => false,
                        Pairing::Together => true,
                        Pairing::WhenCoresIdle => busy.is_some_and(|b| b < BUSY_ENOUGH_ALONE),
                    };
                let result = match begun {
                    Ok(begun) if together => {
                        let handle = s.spawn(move || begun.finish());
                        let index = i;
                        running.push_back(Background {
                            index,
                            drive,
                            memory,
                            handle,
                        });
                        continue;
                    }
                    Ok(begun) => {
                        while report_oldest(&mut running, &mut stopped, &mut done) {}
                        if stopped {
                            break;
                        }
                        let result = begun.finish();
                        if let Ok(summary) = &result {
                            busy = summary.stats.last_phase_cores_busy(options.threads);
                        }
                        result
                    }
                    Err(e) => Err(e),
                };
                while report_oldest(&mut running, &mut stopped, &mut done) {}
                let failed = result.is_err();
                if !done(i, result) || failed {
                    stopped = true;
                    break;
                }
            }
            while report_oldest(&mut running, &mut stopped, &mut done) {}
        });
    }
}

/// How a plot can run beside another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Beside {
    /// It cannot.
    No,
    /// An external plot, in half its memory limit.
    Halved,
    /// A plot in memory that needs this much memory.
    InMemory(u64),
}

fn beside(options: &PlotOptions) -> Beside {
    if halved(options).1 == Spares::Pool {
        return Beside::Halved;
    }
    match PlotPlan::new(options) {
        Ok(plan) if plan.strategy == Strategy::Memory => Beside::InMemory(plan.memory_in_memory),
        _ => Beside::No,
    }
}

/// Whether a plot sorts while the next one hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pairing {
    Apart,
    Together,
    /// When the last plot that sorted alone left the cores idle enough
    /// (see [`BUSY_ENOUGH_ALONE`]).
    WhenCoresIdle,
}

/// A plot in memory sorts while the next one hashes only when the last one
/// that sorted alone kept its threads' cores busy less than this share of
/// that phase: the hashing beside it needs the cores the writing leaves
/// idle. Measured with the disk's writes throttled to several speeds, a
/// last phase that kept the cores a third busy gained a quarter from
/// overlapping, one that kept them 72 to 85% busy a tenth, and from about
/// 90% on overlapping was slower (docs/BENCHMARKS.md).
const BUSY_ENOUGH_ALONE: f64 = 0.75;

/// Whether each plot sorts while the next one hashes (apart for the last).
/// Two external plots must fit in half their memory limits, and with
/// [`Overlap::Auto`], the next plot's temp file must be on another drive
/// than this plot's files. Two plots in memory must fit in the smaller of
/// their limits together; hashing uses no drive, so with
/// [`Overlap::Auto`] they overlap when the cores have time to spare while
/// a plot is written.
fn overlapping_pairs(
    jobs: &[PlotJob],
    overlap: Overlap,
    drive_of: &impl Fn(&Path) -> Option<String>,
) -> Vec<Pairing> {
    let sides: Vec<Beside> = jobs.iter().map(|j| beside(&j.options)).collect();
    let apart = |this: &PlotJob, next: &PlotJob| {
        let drives = [drive_of(&this.out_dir), drive_of(this.tmp_dir())];
        let next = drive_of(next.tmp_dir());
        next.is_some() && drives.iter().all(|d| d.is_some() && *d != next)
    };
    (0..jobs.len())
        .map(|i| {
            let Some(next) = jobs.get(i + 1) else {
                return Pairing::Apart;
            };
            let this = &jobs[i];
            let together = match (sides[i], sides[i + 1], overlap) {
                (_, _, Overlap::Never) => false,
                (Beside::Halved, Beside::Halved, Overlap::Always) => true,
                (Beside::Halved, Beside::Halved, Overlap::Auto) => apart(this, next),
                (Beside::InMemory(a), Beside::InMemory(b), overlap) => {
                    let fit = a + b <= this.options.memory.min(next.options.memory);
                    if fit && overlap == Overlap::Auto {
                        return Pairing::WhenCoresIdle;
                    }
                    fit
                }
                _ => false,
            };
            if together {
                Pairing::Together
            } else {
                Pairing::Apart
            }
        })
        .collect()
}

/// Waits for the oldest plot being written in the background, if any, and
/// reports it (true when there was one); notes in `stopped` when the run
/// goes no further.
fn report_oldest(
    running: &mut Running,
    stopped: &mut bool,
    done: &mut impl FnMut(usize, Result<PlotSummary, PlotError>) -> bool,
) -> bool {
    let Some(oldest) = running.pop_front() else {
        return false;
    };
    let result = oldest
        .handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let failed = result.is_err();
    *stopped |= !done(oldest.index, result) || failed;
    true
}

/// The options a plot runs with beside another: half the memory limit for
/// an external plot (its spare round buffers go to the next plot), or as
/// they are for a plot that fits in memory or does not fit in half.
fn halved(options: &PlotOptions) -> (PlotOptions, Spares) {
    let alone = (options.clone(), Spares::Free);
    if PlotPlan::new(options).map(|p| p.strategy).ok() != Some(Strategy::External) {
        return alone;
    }
    let Ok(layout) = options.layout() else {
        return alone;
    };
    let half = options.memory / 2;
    if external::ExternalPlan::for_limit(&layout, options.threads.max(1), half).is_err() {
        return alone;
    }
    let options = PlotOptions {
        memory: half,
        strategy: Strategy::External,
        ..options.clone()
    };
    (options, Spares::Pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{Phase, PlotStats};

    fn options(k: u8, strategy: Strategy, memory: u64) -> PlotOptions {
        let mut o = PlotOptions::new(k, [1; 32], [2; 32]);
        (o.strategy, o.memory, o.threads) = (strategy, memory, 2);
        o
    }

    #[test]
    fn only_external_plots_that_fit_in_half_the_limit_overlap() {
        let (auto, external) = (Strategy::Auto, Strategy::External);
        // k = 24 with 100 MiB does not fit in memory; 50 MiB is a plan.
        let (o, spares) = halved(&options(24, auto, 100 << 20));
        assert_eq!(
            (o.memory, o.strategy, spares),
            (50 << 20, external, Spares::Pool)
        );
        let (o, spares) = halved(&options(20, external, 84 << 20));
        assert_eq!((o.memory, spares), (42 << 20, Spares::Pool));
        // Half of 42 MiB is too little for any plan.
        let (o, spares) = halved(&options(20, external, 42 << 20));
        assert_eq!((o.memory, spares), (42 << 20, Spares::Free));
        // In memory: nothing to overlap.
        let (o, spares) = halved(&options(20, auto, 84 << 20));
        assert_eq!((o.memory, spares), (84 << 20, Spares::Free));
        assert_eq!(PlotPlan::new(&o).unwrap().strategy, Strategy::Memory);
    }

    #[test]
    fn plots_overlap_when_the_next_temp_file_is_on_another_drive() {
        // Drives by the directory's first letter: a/, b/ and c/.
        let drive = |dir: &Path| dir.to_str().and_then(|d| d.get(..1)).map(String::from);
        let external = options(20, Strategy::External, 84 << 20);
        let job = |out: &str, tmp: Option<&str>| PlotJob {
            options: PlotOptions {
                tmp_dir: tmp.map(PathBuf::from),
                ..external.clone()
            },
            out_dir: PathBuf::from(out),
        };
        let pairs = |jobs: &[PlotJob], overlap| -> Vec<bool> {
            let pairings = overlapping_pairs(jobs, overlap, &drive);
            pairings.iter().map(|&p| p == Pairing::Together).collect()
        };
        // Plots (and their temp files) alternating between two drives.
        let two_drives = [job("a/1", None), job("b/1", None), job("a/2", None)];
        assert_eq!(pairs(&two_drives, Overlap::Auto), [true, true, false]);
        assert_eq!(pairs(&two_drives, Overlap::Never), [false; 3]);
        // One drive, or one temp drive for every plot.
        let one_drive = [job("a/1", None), job("a/2", None)];
        assert_eq!(pairs(&one_drive, Overlap::Auto), [false, false]);
        assert_eq!(pairs(&one_drive, Overlap::Always), [true, false]);
        let one_tmp = [job("a/1", Some("c/t")), job("b/1", Some("c/t"))];
        assert_eq!(pairs(&one_tmp, Overlap::Auto), [false, false]);
        // The next temp file on the drive this plot is written to.
        let onto_out = [job("a/1", Some("c/t")), job("b/1", Some("a/t"))];
        assert_eq!(pairs(&onto_out, Overlap::Auto), [false, false]);
        // A device that cannot be found, and a plot that cannot be halved.
        let unknown = [job("a/1", None), job("", None)];
        assert_eq!(pairs(&unknown, Overlap::Auto), [false, false]);
        let mut small = two_drives.clone();
        small[1].options.memory = 42 << 20;
        assert_eq!(pairs(&small, Overlap::Always), [false, false, false]);
    }

    #[test]
    fn plots_in_memory_overlap_when_two_fit_in_the_limit() {
        // Every directory on one drive: hashing in memory uses none.
        let one_drive = |_: &Path| Some("a".to_string());
        let in_memory = options(20, Strategy::Auto, 1 << 30);
        let needed = PlotPlan::new(&in_memory).unwrap().memory_in_memory;
        let jobs = |memory: u64| {
            let options = PlotOptions {
                memory,
                ..in_memory.clone()
            };
            vec![
                PlotJob {
                    options,
                    out_dir: PathBuf::from("a/1"),
                };
                3
            ]
        };
        let pairs = |jobs: &[PlotJob], overlap| overlapping_pairs(jobs, overlap, &one_drive);
        use Pairing::{Apart, Together, WhenCoresIdle};
        let two_fit = jobs(2 * needed);
        assert_eq!(
            PlotPlan::new(&two_fit[0].options).unwrap().strategy,
            Strategy::Memory
        );
        let auto = pairs(&two_fit, Overlap::Auto);
        assert_eq!(auto, [WhenCoresIdle, WhenCoresIdle, Apart]);
        let always = pairs(&two_fit, Overlap::Always);
        assert_eq!(always, [Together, Together, Apart]);
        assert_eq!(pairs(&two_fit, Overlap::Never), [Apart; 3]);
        // One fits, two do not: each plot in memory, one after the other.
        let one_fits = jobs(2 * needed - 1);
        let strategy = PlotPlan::new(&one_fits[0].options).unwrap().strategy;
        assert_eq!(strategy, Strategy::Memory);
        assert_eq!(pairs(&one_fits, Overlap::Always), [Apart; 3]);
        // Beside an external plot, a plot in memory runs alone.
        let mut mixed = two_fit.clone();
        mixed[1].options.strategy = Strategy::External;
        assert_eq!(beside(&mixed[1].options), Beside::Halved);
        assert_eq!(pairs(&mixed, Overlap::Always), [Apart; 3]);
    }

    #[test]
    fn busy_is_the_last_phase_cpu_time_over_its_cores_time() {
        let summary = PlotSummary {
            path: PathBuf::new(),
            k: 20,
            plot_id: [0; 32],
            bytes: 0,
            seconds: 3.0,
            strategy: Strategy::Memory,
            temp_bytes_written: 0,
            stats: PlotStats {
                phases: vec![(Phase::Hashing, 1.0), (Phase::Writing, 2.0)],
                file_write_seconds: 1.5,
                last_phase_cpu_seconds: 1.0,
                ..Default::default()
            },
        };
        assert_eq!(summary.stats.last_phase_cores_busy(2), Some(0.25));
        assert_eq!(summary.stats.last_phase_cores_busy(0), None);
        let unfinished = PlotStats {
            phases: vec![(Phase::Hashing, 1.0)],
            ..summary.stats
        };
        assert_eq!(unfinished.last_phase_cores_busy(2), None);
    }

    /// What happened, in order: each plot's phases and each result.
    #[derive(Default)]
    struct Log(std::sync::Mutex<Vec<String>>);

    struct Logged<'a>(&'a Log, usize);

    impl Progress for Logged<'_> {
        fn phase(&self, phase: Phase, _total: u64) {
            let name = phase.describe();
            self.0 .0.lock().unwrap().push(format!("{} {name}", self.1));
        }
    }

    /// Two k = 20 plots that would overlap, on a disk whose free space is
    /// `free(dir)`; returns the log and the results.
    fn two_plots_on(
        free: impl Fn(&Path) -> u64 + 'static,
    ) -> (Vec<String>, Vec<Result<PlotSummary, PlotError>>) {
        let dir = tempfile::tempdir().unwrap();
        let jobs: Vec<PlotJob> = [1u8, 2]
            .map(|seed| {
                let mut options = options(20, Strategy::External, 84 << 20);
                options.seed = [seed; 32];
                PlotJob {
                    options,
                    out_dir: dir.path().to_path_buf(),
                }
            })
            .into();
        crate::plot::files::FAKE_FREE_SPACE.with(|f| *f.borrow_mut() = Some(Box::new(free)));
        let log = Log::default();
        let mut results = Vec::new();
        Plotter::default().plot_all(
            &jobs,
            Overlap::Always,
            |i| Logged(&log, i),
            |i, result| {
                log.0.lock().unwrap().push(format!("{i} done"));
                results.push(result);
                true
            },
        );
        crate::plot::files::FAKE_FREE_SPACE.with(|f| *f.borrow_mut() = None);
        (log.0.into_inner().unwrap(), results)
    }

    /// Runs three k = 18 plots in memory in `memory`, in directories `a`,
    /// `b` and `a` (`a` and `b` are drives of their own, or one drive), and
    /// returns the log.
    fn three_in_memory(memory: u64, two_drives: bool) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let jobs: Vec<PlotJob> = ["a", "b", "a"]
            .iter()
            .zip(1u8..)
            .map(|(sub, seed)| {
                let out_dir = dir.path().join(sub);
                std::fs::create_dir_all(&out_dir).unwrap();
                let mut options = options(18, Strategy::Auto, memory);
                options.seed = [seed; 32];
                PlotJob { options, out_dir }
            })
            .collect();
        let drive = |path: &Path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            Some(if two_drives { name } else { "a".into() })
        };
        let log = Log::default();
        Plotter::default().plot_all_on(
            &jobs,
            Overlap::Always,
            drive,
            |i| Logged(&log, i),
            |i, result| {
                assert!(result.is_ok(), "{result:?}");
                log.0.lock().unwrap().push(format!("{i} done"));
                true
            },
        );
        log.0.into_inner().unwrap()
    }

    #[test]
    fn plots_in_memory_are_written_side_by_side_one_per_drive() {
        let at = |log: &[String], event: &str| log.iter().position(|e| e == event).unwrap();
        let needed = PlotPlan::new(&options(18, Strategy::Auto, 1 << 30))
            .unwrap()
            .memory_in_memory;
        // On two drives, plots 0 and 1 are written at once while plot 2
        // hashes: plot 0 is reported only after that.
        let log = three_in_memory(3 * needed, true);
        assert!(at(&log, "2 hashing") < at(&log, "0 done"), "{log:?}");
        // On one drive, plot 1 is written after plot 0, so plot 0 is done
        // before plot 2 hashes.
        let log = three_in_memory(3 * needed, false);
        assert!(at(&log, "0 done") < at(&log, "2 hashing"), "{log:?}");
        // Two drives, but memory for two plots only: plot 2 waits for
        // plot 0's memory.
        let log = three_in_memory(2 * needed, true);
        assert!(at(&log, "0 done") < at(&log, "2 hashing"), "{log:?}");
        assert!(at(&log, "1 hashing") < at(&log, "0 done"), "{log:?}");
        // Reported in order all the same.
        let done: Vec<&String> = log.iter().filter(|e| e.ends_with("done")).collect();
        assert_eq!(done, ["0 done", "1 done", "2 done"]);
    }

    fn holds(dir: &Path, suffix: &str) -> bool {
        let names = std::fs::read_dir(dir).unwrap().flatten();
        names
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .any(|name| name.ends_with(suffix))
    }

    #[test]
    fn a_disk_too_full_for_two_plots_makes_the_next_wait_for_the_earlier() {
        // Room for one plot's files at a time: none while a temp file of
        // sort keys is there.
        let (log, results) = two_plots_on(|dir| if holds(dir, ".sort.tmp") { 0 } else { 1 << 40 });
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
        // The second plot hashed only once the first was done.
        let done = log.iter().position(|e| e == "0 done").unwrap();
        let hashing = log
            .iter()
            .position(|e| *e == format!("1 {}", Phase::HashingToTemp.describe()));
        assert!(hashing.unwrap() > done, "{log:?}");
        // In half the memory all the same: the plan was made for overlap.
        assert!(results[1].as_ref().unwrap().stats.rounds > 1);
    }

    #[test]
    fn a_disk_still_too_full_after_the_wait_stops_the_run() {
        // No room beside a sorting plot, nor beside a finished one.
        let (log, results) = two_plots_on(|dir| {
            if holds(dir, ".sort.tmp") || holds(dir, ".plot") {
                0
            } else {
                1 << 40
            }
        });
        assert_eq!(results.len(), 2, "{log:?}");
        assert!(results[0].is_ok());
        assert!(
            matches!(results[1], Err(PlotError::NoSpace { .. })),
            "{:?}",
            results[1]
        );
        assert!(!log.iter().any(|e| e.starts_with("1 hashing")), "{log:?}");
    }
}
