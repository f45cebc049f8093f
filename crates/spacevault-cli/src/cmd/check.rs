//! `spacevault check`: find damage in plots.

use super::plot_paths::{collect_plots, PathProblem, TempFileJson};
use crate::size::format_size;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use spacevault::check::{check, CheckOptions, CheckReport, Completeness};
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

/// One plot's report; docs/API.md ("JSON output of the commands") says
/// what each field means.
#[derive(Serialize)]
struct PlotCheckJson {
    path: PathBuf,
    scheme: &'static str,
    ok: bool,
    k: Option<u8>,
    regions: u64,
    damaged_regions: Vec<u64>,
    unreadable_regions: Vec<u64>,
    records: u64,
    records_rehashed: u64,
    completeness: &'static str,
    nonces_missing: Option<u64>,
    duplicate_records: Option<u64>,
    problems: Vec<ProblemJson>,
}

#[derive(Serialize)]
struct CheckJson {
    ok: bool,
    plots: Vec<PlotCheckJson>,
    errors: Vec<PathProblem>,
    temp_files: Vec<TempFileJson>,
}

impl From<&CheckReport> for PlotCheckJson {
    fn from(r: &CheckReport) -> PlotCheckJson {
        let (missing, duplicates) = match r.completeness {
            Completeness::EveryNonceOnce => (Some(0), Some(0)),
            Completeness::Incomplete {
                missing,
                duplicates,
                ..
            } => (missing, duplicates),
            _ => (None, None),
        };
        PlotCheckJson {
            path: r.path.clone(),
            scheme: "plain",
            ok: r.is_ok(),
            k: r.header.as_ref().map(|h| h.k()),
            regions: r.regions,
            damaged_regions: r.damaged_regions.iter().copied().collect(),
            unreadable_regions: r.unreadable_regions.iter().copied().collect(),
            records: r.records,
            records_rehashed: r.records_rehashed,
            completeness: r.completeness.name(),
            nonces_missing: missing,
            duplicate_records: duplicates,
            problems: r
                .problems
                .iter()
                .map(|p| ProblemJson {
                    region: p.region,
                    problem: p.what.clone(),
                })
                .collect(),
        }
    }
}

impl PlotCheckJson {
    /// A table-chain plot's report in the same shape: it has no regions
    /// or records; `records` counts its stored entries, and
    /// `records_rehashed` the hashes of the trees it verified.
    fn of_hard(r: &spacevault::hard::check::HardCheckReport) -> PlotCheckJson {
        PlotCheckJson {
            path: r.path.clone(),
            scheme: "hard",
            ok: r.is_ok(),
            k: r.k,
            regions: 0,
            damaged_regions: Vec::new(),
            unreadable_regions: Vec::new(),
            records: r.entries,
            records_rehashed: r.trees_verified * r.hashes_per_tree,
            completeness: "trees verified",
            nonces_missing: None,
            duplicate_records: None,
            problems: r
                .problems
                .iter()
                .map(|p| ProblemJson {
                    region: None,
                    problem: p.clone(),
                })
                .collect(),
        }
    }
}

/// Returns whether every path gave plots and every plot is sound.
pub fn run(args: CheckArgs) -> Result<bool> {
    let found = collect_plots(&args.paths);
    let options = match args.full {
        true => CheckOptions::full(),
        false => CheckOptions::default(),
    };
    let mut all_ok = found.problems.is_empty();
    if !args.json {
        for e in &found.problems {
            outln!("ERROR    {}: {}", e.path.display(), e.error);
        }
        for t in &found.temp_files {
            outln!(
                "temp     {}  ({}, {})",
                t.path.display(),
                format_size(t.bytes),
                if t.in_use {
                    "in use by a running plotter"
                } else {
                    "left by an interrupted plot; the next plot in its directory removes it"
                }
            );
        }
    }
    let mut plots = Vec::new();
    for path in &found.plots {
        if spacevault::any::kind_of_file(path).ok().flatten()
            == Some(<spacevault::Hard as spacevault::ProofScheme>::KIND)
        {
            let r = spacevault::hard::check::check(path, args.full);
            all_ok &= r.is_ok();
            if args.json {
                plots.push(PlotCheckJson::of_hard(&r));
            } else if r.is_ok() {
                outln!(
                    "ok       {}  (k={} hard, {} entries, {} trees verified)",
                    r.path.display(),
                    r.k.unwrap_or(0),
                    r.entries,
                    r.trees_verified
                );
            } else {
                outln!("DAMAGED  {}", r.path.display());
                for p in &r.problems {
                    outln!("         {p}");
                }
            }
            continue;
        }
        let r = check(path, options);
        all_ok &= r.is_ok();
        if args.json {
            plots.push(PlotCheckJson::from(&r));
        } else if r.is_ok() {
            outln!(
                "ok       {}  (k={}, {} records, {} rehashed{})",
                r.path.display(),
                r.header.as_ref().map_or(0, |h| h.k()),
                r.records,
                r.records_rehashed,
                match r.completeness {
                    Completeness::EveryNonceOnce => ", every nonce present once",
                    _ => ", record count right (too large to prove every nonce once)",
                }
            );
        } else {
            outln!("DAMAGED  {}", r.path.display());
            for p in r.problems.iter().take(20) {
                outln!("         {}", p.what);
            }
            if r.problems.len() > 20 {
                outln!("         ... and {} more problems", r.problems.len() - 20);
            }
        }
    }
    if args.json {
        crate::cmd::print_json(&CheckJson {
            ok: all_ok,
            plots,
            errors: found.problems,
            temp_files: found.temp_files,
        })?;
    }
    Ok(all_ok)
}
