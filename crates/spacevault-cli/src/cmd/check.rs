//! `spacevault check`: find damage in plots.

use super::plot_paths::collect_plots;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use spacevault::check::{check, CheckOptions};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Plot files, or directories of plots.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Rehash every record instead of a sample.
    #[arg(long)]
    pub full: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ProblemJson {
    region: Option<u64>,
    problem: String,
}

#[derive(Serialize)]
struct CheckJson {
    path: PathBuf,
    ok: bool,
    k: Option<u8>,
    regions: u64,
    damaged_regions: Vec<u64>,
    records: u64,
    records_rehashed: u64,
    completeness_proven: bool,
    problems: Vec<ProblemJson>,
}

/// Returns whether every plot is sound.
pub fn run(args: CheckArgs) -> Result<bool> {
    let plots = collect_plots(&args.paths)?;
    let options = CheckOptions {
        full: args.full,
        ..Default::default()
    };
    let mut all_ok = true;
    let mut out = Vec::new();
    for path in plots {
        let r = check(&path, options);
        all_ok &= r.is_ok();
        if args.json {
            out.push(CheckJson {
                path: r.path.clone(),
                ok: r.is_ok(),
                k: r.header.as_ref().map(|h| h.k()),
                regions: r.regions,
                damaged_regions: r.damaged_regions.iter().copied().collect(),
                records: r.records,
                records_rehashed: r.records_rehashed,
                completeness_proven: r.completeness_proven,
                problems: r
                    .problems
                    .iter()
                    .map(|p| ProblemJson {
                        region: p.region,
                        problem: p.what.clone(),
                    })
                    .collect(),
            });
        } else if r.is_ok() {
            println!(
                "ok       {}  (k={}, {} records, {} rehashed{})",
                r.path.display(),
                r.header.as_ref().map_or(0, |h| h.k()),
                r.records,
                r.records_rehashed,
                if r.completeness_proven {
                    ", every nonce present once"
                } else {
                    ""
                }
            );
        } else {
            println!("DAMAGED  {}", r.path.display());
            for p in r.problems.iter().take(20) {
                println!("         {}", p.what);
            }
            if r.problems.len() > 20 {
                println!("         ... and {} more problems", r.problems.len() - 20);
            }
        }
    }
    if args.json {
        crate::cmd::print_json(&out)?;
    }
    Ok(all_ok)
}
