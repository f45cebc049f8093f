//! `spacevault stress compare`: several stress runs side by side.

use anyhow::{Context, Result};
use clap::Args;
use spacevault_bench::stress_compare::{self, NamedRun};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The runs: each a `stress --out` directory (or its results.json),
    /// as PATH or NAME=PATH; the first is the baseline of the ratios.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// Rank on this cell alone, as VAULTSxCLIENTS (the study ranked
    /// machines at 32x20); by default over every cell all runs share.
    #[arg(long, value_name = "VxC", value_parser = parse_cell)]
    pub cell: Option<(usize, usize)>,
    /// A run's price per hour, as NAME=USD, for the cost ranking (by
    /// default the price the run was made with, if any). Repeatable.
    #[arg(long, value_name = "NAME=USD")]
    pub price: Vec<String>,
    /// The heatmaps' colour scale ends here (by default the slowest
    /// cell, rounded up).
    #[arg(long, value_name = "SECONDS")]
    pub scale_max: Option<f64>,
    /// Where the comparison goes.
    #[arg(long, value_name = "DIR", default_value = "spacevault-stress-compare")]
    pub out: PathBuf,
    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn parse_cell(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("`{s}` is not VAULTSxCLIENTS, as 32x20");
    let (v, c) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (v, c) = (
        v.trim().parse().map_err(|_| bad())?,
        c.trim().parse().map_err(|_| bad())?,
    );
    if v == 0 || c == 0 {
        return Err(bad());
    }
    Ok((v, c))
}

/// A run's name: the one given, or its directory's.
fn name_and_path(arg: &str) -> (String, PathBuf) {
    if let Some((name, path)) = arg.split_once('=') {
        if !name.is_empty() {
            return (name.to_string(), PathBuf::from(path));
        }
    }
    let path = PathBuf::from(arg);
    let dir = if path.file_name().is_some_and(|n| n == "results.json") {
        path.parent().map(PathBuf::from).unwrap_or_default()
    } else {
        path.clone()
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| arg.to_string());
    (name, path)
}

pub fn run(a: CompareArgs) -> Result<()> {
    if a.scale_max.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        anyhow::bail!("--scale-max must be a positive number of seconds");
    }
    let mut runs = Vec::new();
    for arg in &a.runs {
        let (name, path) = name_and_path(arg);
        runs.push(NamedRun::read(&name, &path)?);
    }
    for p in &a.price {
        let (name, usd) = p
            .split_once('=')
            .with_context(|| format!("--price `{p}` is not NAME=USD"))?;
        let usd: f64 = usd
            .parse()
            .ok()
            .filter(|u: &f64| u.is_finite() && *u >= 0.0)
            .with_context(|| format!("--price `{p}`: {usd} is not a non-negative number"))?;
        let run = runs
            .iter_mut()
            .find(|r| r.label == name)
            .with_context(|| format!("--price `{p}`: no run is named {name}"))?;
        run.price_per_hour = Some(usd);
    }
    let comparison = stress_compare::compare(&runs, a.cell, a.scale_max)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        let path = a.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let markdown = comparison.markdown();
    write("compare.md", &markdown)?;
    write("compare.json", &serde_json::to_string_pretty(&comparison)?)?;
    for (name, svg) in comparison.charts() {
        write(&name, &svg)?;
    }
    if a.json {
        return crate::cmd::print_json(&comparison);
    }
    outln!("{markdown}");
    outln!(
        "written to {}: compare.md, compare.json, heatmap-*.svg, ratio-*.svg",
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_names_read_as_written() {
        assert_eq!(parse_cell("32x20"), Ok((32, 20)));
        assert_eq!(parse_cell("8X1"), Ok((8, 1)));
        assert!(parse_cell("32").is_err());
        assert!(parse_cell("0x1").is_err());
        assert_eq!(
            name_and_path("laptop=runs/a"),
            ("laptop".into(), PathBuf::from("runs/a"))
        );
        assert_eq!(
            name_and_path("runs/c5.large/results.json"),
            (
                "c5.large".into(),
                PathBuf::from("runs/c5.large/results.json")
            )
        );
        assert_eq!(
            name_and_path("runs/m5/"),
            ("m5".into(), PathBuf::from("runs/m5/"))
        );
    }
}
