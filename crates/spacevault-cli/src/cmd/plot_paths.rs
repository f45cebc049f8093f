//! Which files a command that takes plots works on.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Plot files under the paths: files as given, directories scanned (not
/// recursively) for `*.plot`. Finding none is an error that names the
/// subdirectories holding plots, if any: a farmer pointing at the parent
/// of their plot directories learns what to pass instead.
pub fn collect_plots(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            out.extend(plots_in(p)?);
        } else if p.exists() {
            out.push(p.clone());
        } else {
            bail!("{} does not exist", p.display());
        }
    }
    if out.is_empty() {
        let below: Vec<PathBuf> = paths
            .iter()
            .filter(|p| p.is_dir())
            .flat_map(|p| subdirectories(p))
            .filter(|d| plots_in(d).is_ok_and(|plots| !plots.is_empty()))
            .collect();
        if below.is_empty() {
            bail!("no plots found in {}", display_list(paths));
        }
        bail!(
            "no plots found in {}; directories are not searched recursively, and plots are in {}: pass those",
            display_list(paths),
            display_list(&below)
        );
    }
    Ok(out)
}

/// The `*.plot` files directly in `dir`, sorted.
fn plots_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| {
            f.extension()
                .is_some_and(|x| x == spacevault::plot::PLOT_EXTENSION)
                && f.is_file()
        })
        .collect();
    found.sort();
    Ok(found)
}

fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn display_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
