//! `spacevault stress compare`: the results of several stress runs (other
//! machines, or other settings on one) side by side, as the profiling
//! study ranked instance types: every cell's time in each run and as a
//! ratio to the first, heatmaps on one colour scale, and a ranking by time
//! and by cost at each machine's price per hour.

use crate::heatmap::Heatmap;
use crate::stats::{round_up_125, Summary};
use crate::BenchError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

/// What a comparison reads of a run's `results.json`; the rest of the
/// file is left alone, so that results of older and newer builds compare.
#[derive(Clone, Debug, Deserialize)]
pub struct RunResults {
    pub machine: MachineView,
    pub options: OptionsView,
    pub cells: Vec<CellView>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct MachineView {
    pub cpu: String,
    pub cores: usize,
    #[serde(default)]
    pub memory_bytes: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct OptionsView {
    pub immutable: usize,
    pub mutable: usize,
    pub size: usize,
    #[serde(default)]
    pub in_flight: Option<usize>,
    #[serde(default)]
    pub price_per_hour: Option<f64>,
    /// The API URLs of attached vaults: the machine is then the clients'.
    #[serde(default)]
    pub network: Option<Vec<String>>,
}

impl OptionsView {
    fn workload(&self) -> String {
        format!(
            "{} blobs and {} registers of {} B a client, {} in flight",
            self.immutable,
            self.mutable,
            self.size,
            self.in_flight.map_or("?".into(), |n| n.to_string())
        )
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct CellView {
    pub vaults: usize,
    pub clients: usize,
    pub seconds: f64,
    pub put_immutable: OpView,
    pub put_mutable: OpView,
    pub get_immutable: OpView,
    pub get_mutable: OpView,
}

#[derive(Clone, Debug, Deserialize)]
pub struct OpView {
    #[serde(default)]
    pub errors: usize,
    pub lost: usize,
    pub wrong: usize,
}

impl CellView {
    /// Operations that did not succeed: refused or failed, lost, wrong. A
    /// run whose vaults fail fast is not a fast run.
    fn failed(&self) -> usize {
        [
            &self.put_immutable,
            &self.put_mutable,
            &self.get_immutable,
            &self.get_mutable,
        ]
        .iter()
        .map(|o| o.errors + o.lost + o.wrong)
        .sum()
    }
}

/// One run to compare, under the name the tables give it.
#[derive(Clone, Debug)]
pub struct NamedRun {
    pub label: String,
    pub results: RunResults,
    /// The price per hour to cost it at: given for the comparison, or the
    /// one the run was made with.
    pub price_per_hour: Option<f64>,
}

impl NamedRun {
    /// Reads `results.json` in `path` (a run's output directory, or the
    /// file itself).
    pub fn read(label: &str, path: &Path) -> Result<NamedRun, BenchError> {
        let file = if path.is_dir() {
            path.join("results.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&file)
            .map_err(|e| BenchError::io(format!("reading {}", file.display()), e))?;
        let results: RunResults = serde_json::from_str(&text).map_err(|e| {
            BenchError::Invalid(format!(
                "{} is not the results.json of a stress run: {e}",
                file.display()
            ))
        })?;
        if results.cells.is_empty() {
            return Err(BenchError::Invalid(format!(
                "{} holds no runs",
                file.display()
            )));
        }
        let price_per_hour = results.options.price_per_hour;
        Ok(NamedRun {
            label: label.to_string(),
            results,
            price_per_hour,
        })
    }

    /// The median time of a cell over its repeats.
    pub fn median_seconds(&self, vaults: usize, clients: usize) -> Option<f64> {
        let runs: Vec<f64> = self.cells_of(vaults, clients).map(|c| c.seconds).collect();
        (!runs.is_empty()).then(|| Summary::of(&runs).median)
    }

    fn cells_of(&self, vaults: usize, clients: usize) -> impl Iterator<Item = &CellView> {
        self.results
            .cells
            .iter()
            .filter(move |c| c.vaults == vaults && c.clients == clients)
    }

    fn failed(&self, vaults: usize, clients: usize) -> usize {
        self.cells_of(vaults, clients).map(CellView::failed).sum()
    }

    fn describe(&self) -> String {
        let m = &self.results.machine;
        let memory = m
            .memory_bytes
            .map(|b| format!(", {:.0} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_default();
        let machine = format!("{} ({} cores{memory})", m.cpu, m.cores);
        match &self.results.options.network {
            Some(apis) => format!(
                "clients on {machine}; {} vaults attached, on machines of their own",
                apis.len()
            ),
            None => machine,
        }
    }
}

/// One run's place in the ranking.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Rank {
    pub label: String,
    /// The geometric mean of the ranked cells' median times.
    pub seconds: f64,
    /// `seconds` over the first run's.
    pub ratio: f64,
    /// Operations of the ranked cells that did not succeed: a run with
    /// any ranks after every run without.
    pub failed: usize,
    /// The ranked cells' median times summed, at the run's price.
    pub cost_usd: Option<f64>,
}

/// One cell of the grid across the runs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CellRow {
    pub vaults: usize,
    pub clients: usize,
    /// Each run's median seconds, in the runs' order; None where it did
    /// not run this cell.
    pub seconds: Vec<Option<f64>>,
    /// Each run's operations in this cell that did not succeed.
    pub failed: Vec<usize>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub labels: Vec<String>,
    pub machines: Vec<String>,
    /// What each run's clients did.
    pub workloads: Vec<String>,
    pub prices_per_hour: Vec<Option<f64>>,
    pub rows: Vec<CellRow>,
    /// The cells the ranking is over: every run ran them.
    pub ranked_cells: Vec<(usize, usize)>,
    /// Fastest first.
    pub by_time: Vec<Rank>,
    /// Cheapest first; only runs with a price.
    pub by_cost: Vec<Rank>,
    /// Where the heatmaps' colour scale ends.
    pub scale_max: f64,
}

/// Compares `runs`, the first one the baseline; ranks over `cell` alone
/// when given, else over every cell all of them ran.
pub fn compare(
    runs: &[NamedRun],
    cell: Option<(usize, usize)>,
    scale_max: Option<f64>,
) -> Result<Comparison, BenchError> {
    if runs.len() < 2 {
        return Err(BenchError::Invalid(
            "compare needs at least two runs".into(),
        ));
    }
    let mut files = BTreeSet::new();
    for r in runs {
        if !files.insert(file_safe(&r.label)) {
            return Err(BenchError::Invalid(format!(
                "two runs are named {} (or alike in a file name): name them apart with NAME=PATH",
                r.label
            )));
        }
    }
    let grid: BTreeSet<(usize, usize)> = runs
        .iter()
        .flat_map(|r| r.results.cells.iter().map(|c| (c.vaults, c.clients)))
        .collect();
    let rows: Vec<CellRow> = grid
        .iter()
        .map(|&(v, c)| CellRow {
            vaults: v,
            clients: c,
            seconds: runs.iter().map(|r| r.median_seconds(v, c)).collect(),
            failed: runs.iter().map(|r| r.failed(v, c)).collect(),
        })
        .collect();
    let ranked_cells: Vec<(usize, usize)> = match cell {
        Some(cell) => {
            if let Some(r) = runs
                .iter()
                .find(|r| r.median_seconds(cell.0, cell.1).is_none())
            {
                return Err(BenchError::Invalid(format!(
                    "{} did not run the cell {} vaults x {} clients",
                    r.label, cell.0, cell.1
                )));
            }
            vec![cell]
        }
        None => rows
            .iter()
            .filter(|row| row.seconds.iter().all(Option::is_some))
            .map(|row| (row.vaults, row.clients))
            .collect(),
    };
    if ranked_cells.is_empty() {
        return Err(BenchError::Invalid(
            "the runs share no cell of the grid to rank them on".into(),
        ));
    }
    let ranks: Vec<Rank> = runs
        .iter()
        .map(|r| {
            let times: Vec<f64> = ranked_cells
                .iter()
                .map(|&(v, c)| {
                    r.median_seconds(v, c)
                        .expect("every run ran the ranked cells")
                })
                .collect();
            let log_mean = times.iter().map(|t| t.max(1e-9).ln()).sum::<f64>() / times.len() as f64;
            Rank {
                label: r.label.clone(),
                seconds: log_mean.exp(),
                ratio: 0.0,
                failed: ranked_cells.iter().map(|&(v, c)| r.failed(v, c)).sum(),
                cost_usd: r
                    .price_per_hour
                    .map(|p| p * times.iter().sum::<f64>() / 3600.0),
            }
        })
        .collect();
    let base = ranks[0].seconds;
    let ranks: Vec<Rank> = ranks
        .into_iter()
        .map(|r| Rank {
            ratio: r.seconds / base,
            ..r
        })
        .collect();
    let mut by_time = ranks.clone();
    by_time.sort_by(|a, b| {
        (a.failed > 0)
            .cmp(&(b.failed > 0))
            .then(a.seconds.total_cmp(&b.seconds))
    });
    let mut by_cost: Vec<Rank> = ranks.into_iter().filter(|r| r.cost_usd.is_some()).collect();
    by_cost.sort_by(|a, b| {
        (a.failed > 0)
            .cmp(&(b.failed > 0))
            .then(a.cost_usd.unwrap().total_cmp(&b.cost_usd.unwrap()))
    });
    let slowest = rows
        .iter()
        .flat_map(|r| r.seconds.iter().flatten())
        .fold(0.0f64, |m, &s| m.max(s));
    Ok(Comparison {
        labels: runs.iter().map(|r| r.label.clone()).collect(),
        machines: runs.iter().map(NamedRun::describe).collect(),
        workloads: runs.iter().map(|r| r.results.options.workload()).collect(),
        prices_per_hour: runs.iter().map(|r| r.price_per_hour).collect(),
        rows,
        ranked_cells,
        by_time,
        by_cost,
        scale_max: scale_max.unwrap_or_else(|| round_up_125(slowest)),
    })
}

impl Comparison {
    fn axes(&self) -> (Vec<usize>, Vec<usize>) {
        let vaults: BTreeSet<usize> = self.rows.iter().map(|r| r.vaults).collect();
        let clients: BTreeSet<usize> = self.rows.iter().map(|r| r.clients).collect();
        (vaults.into_iter().collect(), clients.into_iter().collect())
    }

    fn row(&self, vaults: usize, clients: usize) -> Option<&CellRow> {
        self.rows
            .iter()
            .find(|r| r.vaults == vaults && r.clients == clients)
    }

    fn grid<T>(&self, value: impl Fn(&CellRow) -> Option<T>) -> Vec<Vec<Option<T>>> {
        let (vaults, clients) = self.axes();
        vaults
            .iter()
            .map(|&v| {
                clients
                    .iter()
                    .map(|&c| self.row(v, c).and_then(&value))
                    .collect()
            })
            .collect()
    }

    fn heatmap(
        &self,
        title: &str,
        subtitle: &str,
        values: Vec<Vec<Option<f64>>>,
        failed: Vec<Vec<Option<String>>>,
        scale_max: f64,
        unit: &str,
    ) -> String {
        let (vaults, clients) = self.axes();
        Heatmap {
            title,
            subtitle,
            x_label: "concurrent clients",
            y_label: "vaults",
            xs: clients.iter().map(|c| c.to_string()).collect(),
            ys: vaults.iter().map(|v| v.to_string()).collect(),
            values,
            failed,
            scale_max,
            unit,
            failed_note: "red frame: N operations refused, failed, lost or wrong",
        }
        .svg()
    }

    /// A heatmap of each run's times on one scale, then one of each later
    /// run's times over the first's: (file name, SVG).
    pub fn charts(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, label) in self.labels.iter().enumerate() {
            let values = self.grid(|r| r.seconds[i]);
            let failed = self.grid(|r| match r.failed[i] {
                0 => None,
                n => Some(format!("{n} failed")),
            });
            let title = format!("Time to run: {label}");
            out.push((
                format!("heatmap-{}.svg", file_safe(label)),
                self.heatmap(
                    &title,
                    &self.machines[i],
                    values,
                    failed,
                    self.scale_max,
                    "seconds",
                ),
            ));
        }
        let ratio = |r: &CellRow, i: usize| match (r.seconds[0], r.seconds[i]) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a),
            _ => None,
        };
        for i in 1..self.labels.len() {
            let values = self.grid(|r| ratio(r, i));
            let top = values
                .iter()
                .flatten()
                .flatten()
                .fold(2.0f64, |m, &v| m.max(v));
            let failed = self.grid(|_| None::<String>);
            let title = format!("{} ÷ {}: time to run", self.labels[i], self.labels[0]);
            let subtitle = format!("under 1: {} was faster in that cell", self.labels[i]);
            out.push((
                format!("ratio-{}.svg", file_safe(&self.labels[i])),
                self.heatmap(
                    &title,
                    &subtitle,
                    values,
                    failed,
                    round_up_125(top),
                    "× the first run",
                ),
            ));
        }
        out
    }

    /// The comparison a reader opens first.
    pub fn markdown(&self) -> String {
        let cell = |t: &str| t.replace('|', "\\|");
        let label = |i: usize| cell(&self.labels[i]);
        let mut s = String::from("# spacevault stress, runs compared\n\n");
        let _ = writeln!(
            s,
            "| run | machine | clients' work | price per hour |\n|---|---|---|---:|"
        );
        for i in 0..self.labels.len() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                label(i),
                cell(&self.machines[i]),
                self.workloads[i],
                self.prices_per_hour[i]
                    .map(|p| format!("${p:.4}"))
                    .unwrap_or_else(|| "–".into())
            );
        }
        if self.workloads.iter().any(|w| *w != self.workloads[0]) {
            let _ = writeln!(
                s,
                "\n**The runs' clients did different work**: their times compare the work as well as the machines."
            );
        }
        let cells = match self.ranked_cells.as_slice() {
            [(v, c)] => format!("the cell {v} vaults × {c} clients"),
            all => format!("the {} cells every run ran (geometric mean of their median times; cost: their times summed)", all.len()),
        };
        let _ = writeln!(
            s,
            "\n## Ranked by time\n\nOver {cells}. A run with operations that did not succeed there ranks after every run without.\n\n| rank | run | seconds | × {} | failed operations |\n|---:|---|---:|---:|---:|",
            label(0)
        );
        for (i, r) in self.by_time.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {} | {} | {:.2} | {:.2} | {} |",
                i + 1,
                cell(&r.label),
                r.seconds,
                r.ratio,
                r.failed
            );
        }
        if !self.by_cost.is_empty() {
            let _ = writeln!(
                s,
                "\n## Ranked by cost\n\n| rank | run | USD | seconds | failed operations |\n|---:|---|---:|---:|---:|"
            );
            for (i, r) in self.by_cost.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.6} | {:.2} | {} |",
                    i + 1,
                    cell(&r.label),
                    r.cost_usd.expect("ranked by cost"),
                    r.seconds,
                    r.failed
                );
            }
        }
        let _ = write!(
            s,
            "\n## Every cell (median seconds; in brackets, × {})\n\n| vaults | clients |",
            label(0)
        );
        for i in 0..self.labels.len() {
            let _ = write!(s, " {} |", label(i));
        }
        let _ = write!(s, "\n|---:|---:|");
        for _ in &self.labels {
            s.push_str("---:|");
        }
        s.push('\n');
        for row in &self.rows {
            let _ = write!(s, "| {} | {} |", row.vaults, row.clients);
            for (i, t) in row.seconds.iter().enumerate() {
                let bad = match row.failed[i] {
                    0 => String::new(),
                    n => format!(" **{n} failed**"),
                };
                match (t, row.seconds[0]) {
                    (Some(t), Some(base)) if i > 0 && base > 0.0 => {
                        let _ = write!(s, " {t:.2} ({:.2}){bad} |", t / base);
                    }
                    (Some(t), _) => {
                        let _ = write!(s, " {t:.2}{bad} |");
                    }
                    (None, _) => s.push_str(" – |"),
                }
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "\nHeatmaps: `heatmap-NAME.svg` for each run on one scale (0 to {} s), `ratio-NAME.svg` for each run over {}.",
            self.scale_max,
            label(0)
        );
        s
    }
}

/// A label as a file name: letters, digits, `-`, `_` and `.` kept, the
/// rest `_`.
pub fn file_safe(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, cells: &[(usize, usize, f64)], price: Option<f64>) -> NamedRun {
        failing(label, cells, price, 0)
    }

    /// A run whose every cell had `errors` operations refused.
    fn failing(
        label: &str,
        cells: &[(usize, usize, f64)],
        price: Option<f64>,
        errors: usize,
    ) -> NamedRun {
        let cells: Vec<serde_json::Value> = cells
            .iter()
            .map(|&(v, c, s)| {
                let op = serde_json::json!({"ok": 1, "errors": errors, "lost": 0, "wrong": 0});
                serde_json::json!({
                    "vaults": v, "clients": c, "repeat": 0, "seconds": s,
                    "put_immutable": op, "put_mutable": op,
                    "get_immutable": op, "get_mutable": op,
                    "some_newer_field": [1, 2, 3],
                })
            })
            .collect();
        let json = serde_json::json!({
            "machine": {"cpu": "test cpu", "cores": 2, "memory_bytes": null, "simd": "avx2"},
            "options": {"immutable": 1, "mutable": 1, "size": 1024, "price_per_hour": price},
            "cells": cells,
        });
        NamedRun {
            label: label.into(),
            results: serde_json::from_value(json).unwrap(),
            price_per_hour: price,
        }
    }

    #[test]
    fn runs_rank_by_the_geometric_mean_of_the_cells_they_share() {
        let a = run("a", &[(1, 1, 10.0), (4, 1, 40.0), (8, 1, 99.0)], Some(1.0));
        // Twice as fast on the shared cells, without the 8-vault one.
        let b = run("b", &[(1, 1, 5.0), (4, 1, 20.0)], Some(4.0));
        let c = compare(&[a.clone(), b.clone()], None, None).unwrap();
        assert_eq!(c.ranked_cells, vec![(1, 1), (4, 1)]);
        assert_eq!(c.by_time[0].label, "b");
        assert!((c.by_time[0].seconds - 10.0).abs() < 1e-9);
        assert!((c.by_time[0].ratio - 0.5).abs() < 1e-9);
        assert!((c.by_time[1].seconds - 20.0).abs() < 1e-9);
        // Cost: a at $1/h for 50 s; b at $4/h for 25 s.
        assert_eq!(c.by_cost[0].label, "a");
        assert!((c.by_cost[0].cost_usd.unwrap() - 50.0 / 3600.0).abs() < 1e-12);
        assert!((c.by_cost[1].cost_usd.unwrap() - 100.0 / 3600.0).abs() < 1e-12);
        assert_eq!(c.rows.len(), 3);
        assert_eq!(c.rows[2].seconds, vec![Some(99.0), None]);
        assert_eq!(c.scale_max, 100.0);
        // One cell alone.
        let one = compare(&[a.clone(), b.clone()], Some((4, 1)), None).unwrap();
        assert_eq!(one.ranked_cells, vec![(4, 1)]);
        assert!(compare(&[a.clone(), b.clone()], Some((8, 1)), None).is_err());
        let md = c.markdown();
        assert!(md.contains("| 4 | 1 | 40.00 | 20.00 (0.50) |"), "{md}");
        let charts = c.charts();
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["heatmap-a.svg", "heatmap-b.svg", "ratio-b.svg"]);
    }

    #[test]
    fn comparisons_that_cannot_be_made_say_why() {
        let a = run("a", &[(1, 1, 10.0)], None);
        let b = run("b", &[(2, 1, 10.0)], None);
        let err = |r: Result<Comparison, BenchError>| r.unwrap_err().to_string();
        assert!(err(compare(std::slice::from_ref(&a), None, None)).contains("at least two"));
        assert!(err(compare(&[a.clone(), b.clone()], None, None)).contains("share no cell"));
        assert!(err(compare(&[a.clone(), a.clone()], None, None)).contains("NAME=PATH"));
        let c = compare(&[a, run("c", &[(1, 1, 20.0)], None)], None, None).unwrap();
        assert!(c.by_cost.is_empty());
        assert!(!c.markdown().contains("Ranked by cost"));
    }

    #[test]
    fn a_run_that_failed_fast_ranks_after_one_that_worked() {
        let slow = run("slow", &[(1, 1, 50.0)], Some(1.0));
        let broken = failing("broken", &[(1, 1, 0.5)], Some(1.0), 3);
        let c = compare(&[slow, broken], None, None).unwrap();
        assert_eq!(c.by_time[0].label, "slow");
        // Three refused in each of the four kinds of operation.
        assert_eq!(
            (c.by_time[1].label.as_str(), c.by_time[1].failed),
            ("broken", 12)
        );
        assert_eq!(c.by_cost[0].label, "slow");
        assert_eq!(c.rows[0].failed, vec![0, 12]);
        let md = c.markdown();
        assert!(md.contains("0.50 (0.01) **12 failed**"), "{md}");
        assert!(c.charts()[1].1.contains("12 failed"));
    }

    #[test]
    fn names_stay_apart_in_files_and_tables() {
        assert_eq!(file_safe("c5.large / eu"), "c5.large___eu");
        let a = run("a b", &[(1, 1, 1.0)], None);
        let b = run("a/b", &[(1, 1, 2.0)], None);
        let err = compare(&[a.clone(), b], None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("name them apart"), "{err}");
        let piped = run("x|y", &[(1, 1, 2.0)], None);
        let md = compare(&[a, piped], None, None).unwrap().markdown();
        assert!(md.contains("| x\\|y |"), "{md}");
    }
}
