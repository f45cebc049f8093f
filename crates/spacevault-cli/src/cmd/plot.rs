//! `spacevault plot`: make plots, filling the output directories in turn.

use crate::keys::{parse_hex32, random32, stored_farmer_key};
use crate::progress::Bars;
use crate::size::{format_size, parse_size};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use spacevault::plot::{Overlap, PlotJob, PlotSummary, Strategy};
use spacevault::PlotError;
use spacevault::{PlotOptions, MAX_K, MIN_K};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Plot size: 2^K records (16 to 40; 16 to 32 for the hard scheme).
    #[arg(short = 'k', long = "k", value_name = "K", default_value_t = 24)]
    pub k: u8,
    /// The proof-of-space scheme: plain (one table of hashes, one read a
    /// proof: for hashing research and benchmarks) or hard (a chain of
    /// matched tables that resists time-memory trade-offs: for a chain).
    /// Hard plots larger than --memory are made through temp files.
    #[arg(long, value_enum, default_value_t = SchemeArg::Plain)]
    pub scheme: SchemeArg,
    /// Directory for finished plots; repeat to fill several drives in turn.
    #[arg(long = "out", value_name = "DIR", default_value = ".")]
    pub out: Vec<PathBuf>,
    /// Directory for the temp files of plots larger than --memory (default: the plot's --out).
    #[arg(long, value_name = "DIR")]
    pub tmp: Option<PathBuf>,
    /// Memory limit for the plotter, e.g. 4GiB (default: half the machine's memory).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Number of plots to make.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u64,
    /// Farmer key as 64 hex digits (default: the key in the config directory, made on first use).
    #[arg(long, value_name = "HEX")]
    pub farmer_key: Option<String>,
    /// Plot seed as 64 hex digits, for reproducible plots (default: random). With --count, plot i uses seed + i.
    #[arg(long, value_name = "HEX")]
    pub seed: Option<String>,
    /// Overwrite a finished plot with the same name.
    #[arg(long)]
    pub force: bool,
    /// How to sort: in memory, through a temp file, or whichever the memory limit allows.
    #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
    pub strategy: StrategyArg,
    /// When a plot sorts while the next one hashes: auto does it for plots in
    /// memory when two fit in --memory and writing one alone left the cores
    /// idle a quarter of the time or more (then one plot per --out drive is
    /// written at once, as many as --memory holds), and for plots larger
    /// than --memory (each in half of it) when the next plot's temp file is
    /// on another drive.
    #[arg(long, value_enum, default_value_t = OverlapArg::Auto)]
    pub overlap: OverlapArg,
    /// Print a JSON summary instead of paths, and no progress bar.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    Plain,
    Hard,
}

impl SchemeArg {
    pub fn kind(self) -> spacevault_chain::ProofKind {
        match self {
            SchemeArg::Plain => spacevault_chain::ProofKind::Plain,
            SchemeArg::Hard => spacevault_chain::ProofKind::Hard,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StrategyArg {
    Auto,
    Memory,
    External,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OverlapArg {
    Auto,
    Always,
    Never,
}

impl From<OverlapArg> for Overlap {
    fn from(o: OverlapArg) -> Overlap {
        match o {
            OverlapArg::Auto => Overlap::Auto,
            OverlapArg::Always => Overlap::Always,
            OverlapArg::Never => Overlap::Never,
        }
    }
}

impl From<StrategyArg> for Strategy {
    fn from(s: StrategyArg) -> Strategy {
        match s {
            StrategyArg::Auto => Strategy::Auto,
            StrategyArg::Memory => Strategy::Memory,
            StrategyArg::External => Strategy::External,
        }
    }
}

/// One finished plot, as `--json` prints it.
#[derive(Serialize)]
pub struct PlotJson {
    pub path: PathBuf,
    pub scheme: &'static str,
    pub k: u8,
    pub plot_id: String,
    pub bytes: u64,
    pub seconds: f64,
    pub records_per_second: f64,
    pub strategy: &'static str,
    pub temp_bytes_written: u64,
    /// The most a hard plot's temp files held at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_peak_bytes: Option<u64>,
}

/// `seed + i` as a 256-bit little-endian integer.
pub(crate) fn nth_seed(seed: &[u8; 32], i: u64) -> [u8; 32] {
    let mut out = *seed;
    let mut carry = i as u128;
    for chunk in out.chunks_mut(8) {
        let v = u64::from_le_bytes(chunk.try_into().unwrap()) as u128 + carry;
        chunk.copy_from_slice(&(v as u64).to_le_bytes());
        carry = v >> 64;
    }
    out
}

/// The farmer key and first seed a run's plots take.
pub(crate) fn key_and_seed(args: &PlotArgs) -> Result<([u8; 32], [u8; 32])> {
    let farmer_key = match &args.farmer_key {
        Some(h) => parse_hex32("--farmer-key", h)?,
        None => stored_farmer_key()?,
    };
    let seed = match &args.seed {
        Some(h) => parse_hex32("--seed", h)?,
        None => random32()?,
    };
    Ok((farmer_key, seed))
}

/// `--threads`, refused past what a plot takes (both schemes' runs).
pub(crate) fn checked_threads(args: &PlotArgs) -> Result<Option<usize>> {
    if let Some(t) = args.threads {
        spacevault::plot::check_threads(t).map_err(|e| anyhow::anyhow!("--threads {t}: {e}"))?;
    }
    Ok(args.threads)
}

pub fn options_from(args: &PlotArgs) -> Result<PlotOptions> {
    if !(MIN_K..=MAX_K).contains(&args.k) {
        bail!("k = {} is not supported: use {MIN_K} to {MAX_K}", args.k);
    }
    let (farmer_key, seed) = key_and_seed(args)?;
    let mut o = PlotOptions::new(args.k, farmer_key, seed);
    if let Some(m) = args.memory {
        o.memory = m;
    }
    if let Some(t) = checked_threads(args)? {
        o.threads = t;
    }
    o.tmp_dir = args.tmp.clone();
    o.force = args.force;
    o.strategy = args.strategy.into();
    Ok(o)
}

/// The checks of `--count` and the output directories both schemes' runs
/// begin with.
pub(crate) fn prepare(args: &PlotArgs) -> Result<()> {
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if args.count > MAX_COUNT {
        bail!(
            "--count {}: at most {MAX_COUNT} plots a run, as the run lists them all before it starts",
            args.count
        );
    }
    for dir in args.out.iter().chain(args.tmp.iter()) {
        create_output_dir(dir)?;
    }
    Ok(())
}

pub fn run(args: PlotArgs) -> Result<()> {
    prepare(&args)?;
    let base = options_from(&args)?;
    warn_of_a_large_temp_file(&base);
    let jobs = jobs_of(&args, &base);
    let started = Instant::now();
    let bars = Bars::new(args.json);
    let shown = RefCell::new(HashMap::new());
    let mut summaries = Vec::new();
    let mut failure = None;
    // One plotter for every plot: the plots after the first reuse its memory.
    let plotter = spacevault::Plotter::default();
    plotter.plot_all(
        &jobs,
        args.overlap.into(),
        |i| {
            let bar = bars.add(format!("[{}/{}]", i + 1, args.count));
            shown.borrow_mut().insert(i, bar.clone());
            bar
        },
        |i, result| {
            let bar = shown.borrow_mut().remove(&i).expect("a bar for every plot");
            bar.finish();
            let summary = match result {
                Ok(summary) => summary,
                Err(e) => {
                    let out = jobs[i].out_dir.display();
                    let e = failure_of(e);
                    failure = Some(e.context(format!("plot {} of {} in {out}", i + 1, args.count)));
                    return false;
                }
            };
            if args.json {
                summaries.push(PlotJson::from(&summary));
            } else {
                let line = plotted_line(bar.prefix(), &summary);
                let printed = bars.suspend(|| -> Result<()> {
                    errln!("{line}");
                    outln!("{}", summary.path.display());
                    Ok(())
                });
                // A closed stdout stops the run, as an error would: the
                // plots being made are removed.
                if let Err(e) = printed {
                    failure = Some(e);
                    return false;
                }
            }
            true
        },
    );
    for bar in shown.borrow().values() {
        bar.finish();
    }
    // The plots made before a failure are whole: a script still learns of
    // them.
    if args.json {
        crate::cmd::print_json(&summaries)?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if !args.json && args.count > 1 {
        let seconds = started.elapsed().as_secs_f64();
        errln!(
            "{} plots in {seconds:.2} s, {:.2} s a plot",
            args.count,
            seconds / args.count as f64
        );
    }
    Ok(())
}

/// The run's plots: each with its own seed, the output directories taken
/// in turn.
fn jobs_of(args: &PlotArgs, base: &PlotOptions) -> Vec<PlotJob> {
    (0..args.count)
        .map(|i| PlotJob {
            options: {
                let mut options = base.clone();
                options.seed = nth_seed(&base.seed, i);
                options
            },
            out_dir: args.out[(i % args.out.len() as u64) as usize].clone(),
        })
        .collect()
}

/// A plot's failure, as the user is told of it.
pub(crate) fn failure_of(e: PlotError) -> anyhow::Error {
    match e {
        PlotError::AlreadyExists(path) => anyhow::anyhow!(
            "{} already exists (pass --force to overwrite it)",
            path.display()
        ),
        e => anyhow::Error::new(e),
    }
}

/// The line a finished plot gets on stderr. What went through the temp
/// file is the SSD wear beyond the plot itself.
fn plotted_line(prefix: &str, summary: &PlotSummary) -> String {
    let temp = match summary.temp_bytes_written {
        0 => String::new(),
        bytes => format!(", {} through its temp file", format_size(bytes)),
    };
    format!(
        "{prefix} plotted k={} ({}) in {:.2} s, {:.1} M records/s, {}{temp}",
        summary.k,
        format_size(summary.bytes),
        summary.seconds,
        summary.records_per_second() / 1e6,
        summary.strategy.name()
    )
}

/// Plots a run may make: enough for any farm, and the list of them stays
/// small in memory.
pub(crate) const MAX_COUNT: u64 = 100_000;

/// Makes an output directory and its parents where missing, as tools that
/// write into a directory do; a path that exists and is not a directory is
/// an error.
pub fn create_output_dir(dir: &std::path::Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if dir.exists() {
        bail!("{} is not a directory", dir.display());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("creating the directory {}: {e}", dir.display()))
}

/// A memory limit near its floor makes small rounds and a temp file several
/// times the sort keys it holds: worth knowing before the SSD writes it.
/// (An error here is left to the plot itself, which reports it.)
fn warn_of_a_large_temp_file(options: &PlotOptions) {
    let Ok(plan) = spacevault::plot::PlotPlan::new(options) else {
        return;
    };
    let temp = plan.temp_bytes_at_most;
    let keys = 4u64 << options.k;
    if temp > keys / 2 * 3 {
        errln!(
            "warning: with --memory {} a plot may write up to {} to its temp file, {:.1} times \
             the {} of sort keys that a larger limit writes at most",
            format_size(options.memory),
            format_size(temp),
            temp as f64 / keys as f64,
            format_size(keys)
        );
    }
}

impl From<&PlotSummary> for PlotJson {
    fn from(summary: &PlotSummary) -> PlotJson {
        PlotJson {
            path: summary.path.clone(),
            scheme: "plain",
            k: summary.k,
            plot_id: hex::encode(summary.plot_id),
            bytes: summary.bytes,
            seconds: summary.seconds,
            records_per_second: summary.records_per_second(),
            strategy: summary.strategy.name(),
            temp_bytes_written: summary.temp_bytes_written,
            temp_peak_bytes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nth_seed;

    #[test]
    fn seeds_count_up_with_carry() {
        let mut s = [0u8; 32];
        assert_eq!(nth_seed(&s, 0), s);
        s[0] = 0xFF;
        let t = nth_seed(&s, 1);
        assert_eq!((t[0], t[1]), (0, 1));
        let all = [0xFFu8; 32];
        assert_eq!(nth_seed(&all, 1), [0u8; 32]);
    }
}
