//! `spacevault report TRACE...`: the profiling study's tables of cryptographic
//! operations (tally, concurrency, duplication) and the ideal minimum, from
//! the crypto traces `spacevault stress --trace-crypto` writes.

use anyhow::Result;
use clap::Args;
use spacevault_bench::crypto_trace;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Trace files, or directories of them (one run's vaults: a cell's
    /// directory under OUT/traces).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn trace_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "svtrace"))
        .collect();
    files.sort();
    if files.is_empty() {
        anyhow::bail!("{} holds no .svtrace files", path.display());
    }
    Ok(files)
}

pub fn run(a: ReportArgs) -> Result<()> {
    let mut traces = Vec::new();
    for path in &a.traces {
        for file in trace_files(path)? {
            traces.push(crypto_trace::read(&file)?);
        }
    }
    let report = crypto_trace::report(&traces)?;
    if a.json {
        return super::print_json(&report);
    }
    outln!("{}", crypto_trace::markdown(&report));
    Ok(())
}
