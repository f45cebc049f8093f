//! `spacevault plot --scheme hard`: table-chain plots, one after another,
//! the output directories taken in turn; each in memory, or through temp
//! files in --tmp when its levels do not fit --memory.

use super::plot::{failure_of, key_and_seed, nth_seed, PlotArgs, PlotJson, StrategyArg};
use crate::size::format_size;
use anyhow::{bail, Result};
use spacevault::hard::construction::{MAX_K, MIN_K};
use spacevault::hard::{HardPlotOptions, HardPlotSummary, HardStrategy};
use std::time::Instant;

pub fn run(args: &PlotArgs) -> Result<()> {
    if !(MIN_K..=MAX_K).contains(&args.k) {
        bail!(
            "k = {} is not supported by the hard scheme: use {MIN_K} to {MAX_K}",
            args.k
        );
    }
    super::plot::prepare(args)?;
    let (farmer_key, seed) = key_and_seed(args)?;
    let mut base = HardPlotOptions::new(args.k, farmer_key, seed);
    if let Some(m) = args.memory {
        base.memory = m;
    }
    if let Some(t) = super::plot::checked_threads(args)? {
        base.threads = t;
    }
    base.force = args.force;
    base.strategy = match args.strategy {
        StrategyArg::Auto => HardStrategy::Auto,
        StrategyArg::Memory => HardStrategy::Memory,
        StrategyArg::External => HardStrategy::Disk,
    };
    base.temp_dir = args.tmp.clone();
    let started = Instant::now();
    let mut summaries = Vec::new();
    for i in 0..args.count {
        let mut options = base.clone();
        options.seed = nth_seed(&seed, i);
        let out = &args.out[(i % args.out.len() as u64) as usize];
        if !args.json {
            errln!(
                "[{}/{}] plotting k={} (hard) in {}",
                i + 1,
                args.count,
                args.k,
                out.display()
            );
        }
        let summary = spacevault::hard::plot(&options, out).map_err(|e| {
            failure_of(e).context(format!(
                "plot {} of {} in {}",
                i + 1,
                args.count,
                out.display()
            ))
        })?;
        if args.json {
            summaries.push(json_of(&summary));
        } else {
            errln!(
                "{}",
                plotted_line(&format!("[{}/{}]", i + 1, args.count), &summary)
            );
            outln!("{}", summary.path.display());
        }
    }
    if args.json {
        crate::cmd::print_json(&summaries)?;
    } else if args.count > 1 {
        let seconds = started.elapsed().as_secs_f64();
        errln!(
            "{} plots in {seconds:.2} s, {:.2} s a plot",
            args.count,
            seconds / args.count as f64
        );
    }
    Ok(())
}

fn plotted_line(prefix: &str, s: &HardPlotSummary) -> String {
    let stored: u64 = s.stored.iter().sum();
    let place = match s.temp_peak_bytes {
        0 => "in memory".to_string(),
        peak => format!(
            "through temp files (at most {}, {} written)",
            format_size(peak),
            format_size(s.temp_written_bytes)
        ),
    };
    format!(
        "{prefix} plotted k={} hard ({}, {:.2} bytes an entry) in {:.2} s, {:.2} M leaves/s, {place}",
        s.k,
        format_size(s.bytes),
        s.bytes as f64 / stored.max(1) as f64,
        s.seconds,
        (1u64 << s.k) as f64 / s.seconds / 1e6
    )
}

fn json_of(s: &HardPlotSummary) -> PlotJson {
    PlotJson {
        path: s.path.clone(),
        scheme: "hard",
        k: s.k,
        plot_id: hex::encode(s.plot_id),
        bytes: s.bytes,
        seconds: s.seconds,
        records_per_second: (1u64 << s.k) as f64 / s.seconds,
        strategy: if s.temp_peak_bytes == 0 {
            "memory"
        } else {
            "external"
        },
        temp_bytes_written: s.temp_written_bytes,
        temp_peak_bytes: Some(s.temp_peak_bytes),
    }
}
