//! Which files a command that takes plots works on.
//!
//! A farmer passes one path a drive. A missing drive, a dangling link or an
//! empty directory is reported for that path alone: the other drives are
//! still farmed or checked.

use serde::Serialize;
use spacevault::plot::{temps_in, PLOT_EXTENSION};
use std::path::{Path, PathBuf};

/// A path that gave no plot, and why.
#[derive(Serialize, Clone, Debug)]
pub struct PathProblem {
    pub path: PathBuf,
    pub error: String,
}

/// A temp file of spacevault's found in a directory of plots.
#[derive(Serialize, Clone, Debug)]
pub struct TempFileJson {
    pub path: PathBuf,
    pub bytes: u64,
    /// Whether a running plotter holds it; a file no process holds is what
    /// an interrupted plot left, which the next plot in that directory
    /// removes.
    pub in_use: bool,
}

/// What the paths given hold.
pub struct Found {
    /// Plot files, in the order given (each directory's sorted).
    pub plots: Vec<PathBuf>,
    /// Paths that gave no plot.
    pub problems: Vec<PathProblem>,
    /// spacevault's temp files in the directories given.
    pub temp_files: Vec<TempFileJson>,
}

/// Plot files under the paths: files as given, directories scanned (not
/// recursively) for `*.plot`. A directory without plots is a problem that
/// names the subdirectories holding plots, if any: a farmer pointing at the
/// parent of their plot directories learns what to pass instead.
pub fn collect_plots(paths: &[PathBuf]) -> Found {
    let mut found = Found {
        plots: Vec::new(),
        problems: Vec::new(),
        temp_files: Vec::new(),
    };
    for p in paths {
        let problem = |error: String| PathProblem {
            path: p.clone(),
            error,
        };
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => match plots_in(p, &mut found.problems) {
                Ok(plots) if plots.is_empty() => {
                    found.problems.push(problem(no_plots_in(p)));
                }
                Ok(plots) => found.plots.extend(plots),
                Err(e) => found.problems.push(problem(e)),
            },
            Ok(m) if m.is_file() => found.plots.push(p.clone()),
            Ok(m) => found.problems.push(problem(format!(
                "not a regular file (a {})",
                spacevault::aligned::file_kind(&m.file_type())
            ))),
            Err(e) => found.problems.push(problem(missing(p, e))),
        }
        if p.is_dir() {
            found
                .temp_files
                .extend(
                    temps_in(p)
                        .into_iter()
                        .map(|(path, bytes, in_use)| TempFileJson {
                            path,
                            bytes,
                            in_use,
                        }),
                );
        }
    }
    found
}

/// Why a path cannot be read: missing, a link to nothing, or the OS's word.
fn missing(p: &Path, e: std::io::Error) -> String {
    if e.kind() != std::io::ErrorKind::NotFound {
        return e.to_string();
    }
    match std::fs::read_link(p) {
        Ok(target) => format!(
            "a symbolic link to {}, which does not exist",
            target.display()
        ),
        Err(_) => "does not exist".into(),
    }
}

/// The problem of a directory without plots, naming subdirectories that
/// hold some.
fn no_plots_in(dir: &Path) -> String {
    let below: Vec<PathBuf> = subdirectories(dir)
        .into_iter()
        .filter(|d| plots_in(d, &mut Vec::new()).is_ok_and(|plots| !plots.is_empty()))
        .collect();
    if below.is_empty() {
        return "holds no plots".into();
    }
    format!(
        "holds no plots; directories are not searched recursively, and plots are in {}: pass those",
        display_list(&below)
    )
}

/// The `*.plot` files directly in `dir`, sorted; entries named `*.plot`
/// that are not plot files (dangling links, FIFOs, directories) go to
/// `problems`.
fn plots_in(dir: &Path, problems: &mut Vec<PathProblem>) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("reading the directory failed: {e}"))?;
    let (mut found, mut odd) = (Vec::new(), Vec::new());
    for entry in entries.flatten() {
        let f = entry.path();
        if f.extension().is_none_or(|x| x != PLOT_EXTENSION) {
            continue;
        }
        match std::fs::metadata(&f) {
            Ok(m) if m.is_file() => found.push(f),
            Ok(m) => odd.push(PathProblem {
                error: format!(
                    "not a regular file (a {})",
                    spacevault::aligned::file_kind(&m.file_type())
                ),
                path: f,
            }),
            Err(e) => odd.push(PathProblem {
                error: missing(&f, e),
                path: f,
            }),
        }
    }
    found.sort();
    odd.sort_by(|a, b| a.path.cmp(&b.path));
    problems.extend(odd);
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
