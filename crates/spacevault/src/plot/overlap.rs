//! Making many plots, one's sorting beside the next one's hashing.
//!
//! An external plot's phase 1 is bound by the CPU (hashing) and leaves the
//! disk half idle; its phase 2 is bound by the disk (reading the temp file
//! while writing the plot) and leaves a core half idle. Run one plot's
//! phase 2 while the next plot's phase 1 runs and each takes what the other
//! leaves. Each plot then gets half the memory limit, so that the two
//! together stay within it, and the round buffers the first no longer needs
//! go straight to the second.

use super::external::{self, Spares};
use super::{
    begin, strategy_for, PlotError, PlotOptions, PlotSummary, Plotter, Progress, Strategy,
};
use std::path::PathBuf;
use std::thread::ScopedJoinHandle;

/// One plot of a [`Plotter::plot_all`] run.
#[derive(Clone, Debug)]
pub struct PlotJob {
    pub options: PlotOptions,
    pub out_dir: PathBuf,
}

/// The plot whose phase 2 runs in the background, by its index.
type Running<'s> = Option<(usize, ScopedJoinHandle<'s, Result<PlotSummary, PlotError>>)>;

impl Plotter {
    /// Makes `jobs` in order, giving each its progress from `progress_for`
    /// and handing each result to `done` as soon as it is known, in order;
    /// `done` returns false to stop the run. With `overlap`, a plot larger
    /// than its memory limit sorts while the next one hashes, each in half
    /// of the limit (see [`overlapping`]).
    ///
    /// An error stops the run: a plot that fails while the next one hashes
    /// is reported once that hashing is done, and the next plot is dropped
    /// with its files.
    pub fn plot_all<P: Progress + Send>(
        &self,
        jobs: &[PlotJob],
        overlap: bool,
        mut progress_for: impl FnMut(usize) -> P,
        mut done: impl FnMut(usize, Result<PlotSummary, PlotError>) -> bool,
    ) {
        let overlap = overlap && jobs.len() > 1;
        std::thread::scope(|s| {
            let mut running: Running = None;
            let mut stopped = false;
            for (i, job) in jobs.iter().enumerate() {
                let (options, spares) = match overlap {
                    true => overlapping(&job.options),
                    false => (job.options.clone(), Spares::Free),
                };
                let background = spares == Spares::Pool;
                let begun = begin(
                    &options,
                    &job.out_dir,
                    progress_for(i),
                    self,
                    spares,
                    // A disk too full for two plots at once waits for the
                    // earlier one.
                    &mut || {
                        let waited = running.is_some();
                        report(&mut running, &mut stopped, &mut done);
                        waited && !stopped
                    },
                );
                report(&mut running, &mut stopped, &mut done);
                if stopped {
                    return;
                }
                let result = match begun {
                    Ok(begun) if background => {
                        running = Some((i, s.spawn(move || begun.finish())));
                        continue;
                    }
                    Ok(begun) => begun.finish(),
                    Err(e) => Err(e),
                };
                let failed = result.is_err();
                if !done(i, result) || failed {
                    return;
                }
            }
            report(&mut running, &mut stopped, &mut done);
        });
    }
}

/// Waits for the plot sorting in the background, if any, and reports it;
/// notes in `stopped` when the run goes no further.
fn report(
    running: &mut Running,
    stopped: &mut bool,
    done: &mut impl FnMut(usize, Result<PlotSummary, PlotError>) -> bool,
) {
    if let Some((i, handle)) = running.take() {
        let result = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let failed = result.is_err();
        *stopped |= !done(i, result) || failed;
    }
}

/// The options a plot runs with beside another: half the memory limit for
/// an external plot (its spare round buffers go to the next plot), or as
/// they are for a plot that fits in memory or does not fit in half.
fn overlapping(options: &PlotOptions) -> (PlotOptions, Spares) {
    let alone = (options.clone(), Spares::Free);
    if strategy_for(options).ok() != Some(Strategy::External) {
        return alone;
    }
    let Ok(layout) = options.layout() else {
        return alone;
    };
    let half = options.memory / 2;
    if external::temp_size(&layout, options.threads.max(1), half).is_err() {
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

    fn options(k: u8, strategy: Strategy, memory: u64) -> PlotOptions {
        let mut o = PlotOptions::new(k, [1; 32], [2; 32]);
        (o.strategy, o.memory, o.threads) = (strategy, memory, 2);
        o
    }

    #[test]
    fn only_external_plots_that_fit_in_half_the_limit_overlap() {
        let (auto, external) = (Strategy::Auto, Strategy::External);
        // k = 24 with 100 MiB does not fit in memory; 50 MiB is a plan.
        let (o, spares) = overlapping(&options(24, auto, 100 << 20));
        assert_eq!(
            (o.memory, o.strategy, spares),
            (50 << 20, external, Spares::Pool)
        );
        let (o, spares) = overlapping(&options(20, external, 84 << 20));
        assert_eq!((o.memory, spares), (42 << 20, Spares::Pool));
        // Half of 42 MiB is too little for any plan.
        let (o, spares) = overlapping(&options(20, external, 42 << 20));
        assert_eq!((o.memory, spares), (42 << 20, Spares::Free));
        // In memory: nothing to overlap.
        let (o, spares) = overlapping(&options(20, auto, 84 << 20));
        assert_eq!((o.memory, spares), (84 << 20, Spares::Free));
        assert_eq!(strategy_for(&o).unwrap(), Strategy::Memory);
    }
}
