//! A stress run over its own time: how many operations finished in each
//! slice of the run and how long they took. An average over the whole run
//! hides a machine that slows down part way (a burstable instance out of
//! CPU credits, a disk whose cache filled, a chain that fell behind); the
//! series shows when.

use crate::heatmap::escape;
use crate::stats::{axis_step as step_for, round_up_125, Summary};
use crate::stress_client::{Outcome, Record};
use serde::Serialize;
use std::fmt::Write;

/// A run is cut into at most this many slices.
const MAX_BINS: usize = 120;

/// One slice of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimeBin {
    /// The slice's start, in seconds from the clients' start.
    pub start_seconds: f64,
    /// Operations that finished in it and succeeded.
    pub ok: usize,
    /// Operations that finished in it with an error, lost or wrong.
    pub failed: usize,
    /// Latency of the successful ones, median and 99th percentile.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// A run's slices, each `bin_seconds` long but the last, which ends with
/// the run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Timeline {
    pub bin_seconds: f64,
    /// The run's length: the last slice's end.
    pub run_seconds: f64,
    pub bins: Vec<TimeBin>,
}

/// The shortest round slice (1, 2 or 5 times a power of ten, at least a
/// tenth of a second) that cuts `run_seconds` into at most [`MAX_BINS`].
pub fn bin_seconds(run_seconds: f64) -> f64 {
    round_up_125((run_seconds.max(0.0) / MAX_BINS as f64).max(0.1))
}

impl Timeline {
    pub(crate) fn of(records: &[Record], run_seconds: f64) -> Timeline {
        let width = bin_seconds(run_seconds);
        let count = ((run_seconds / width).ceil() as usize).max(1);
        let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); count];
        let mut failed = vec![0usize; count];
        for r in records {
            let i = ((r.end_seconds.max(0.0) / width) as usize).min(count - 1);
            match r.outcome {
                Outcome::Ok => latencies[i].push(r.ms),
                _ => failed[i] += 1,
            }
        }
        let bins = latencies
            .into_iter()
            .zip(failed)
            .enumerate()
            .map(|(i, (ms, failed))| {
                let summary = (!ms.is_empty()).then(|| Summary::of(&ms));
                TimeBin {
                    start_seconds: i as f64 * width,
                    ok: ms.len(),
                    failed,
                    p50_ms: summary.map(|s| s.median),
                    p99_ms: summary.map(|s| s.p99),
                }
            })
            .collect();
        Timeline {
            bin_seconds: width,
            run_seconds: run_seconds.max(0.0),
            bins,
        }
    }

    /// How long slice `i` lasted: the last one only until the run's end.
    pub fn length(&self, i: usize) -> f64 {
        let start = i as f64 * self.bin_seconds;
        if i + 1 == self.bins.len() {
            (self.run_seconds - start).clamp(1e-9, self.bin_seconds)
        } else {
            self.bin_seconds
        }
    }

    /// Successful operations a second over the slices whose start lies in
    /// the fraction `from..to` of the run.
    pub fn rate_between(&self, from: f64, to: f64) -> Option<f64> {
        let n = self.bins.len() as f64;
        let picked: Vec<usize> = (0..self.bins.len())
            .filter(|&i| (i as f64) >= from * n && (i as f64) < to * n)
            .collect();
        (!picked.is_empty()).then(|| {
            picked.iter().map(|&i| self.bins[i].ok).sum::<usize>() as f64
                / picked.iter().map(|&i| self.length(i)).sum::<f64>()
        })
    }

    /// The run's slowest and fastest median latency among slices with
    /// operations in them.
    pub fn p50_range_ms(&self) -> Option<(f64, f64)> {
        self.bins
            .iter()
            .filter_map(|b| b.p50_ms)
            .fold(None, |r, v| match r {
                None => Some((v, v)),
                Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
            })
    }
}

const WIDTH: f64 = 760.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 60.0;
const PANEL: f64 = 170.0;
const GAP: f64 = 50.0;
const BOTTOM: f64 = 50.0;

fn label(v: f64) -> String {
    if v >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Two panels over the run's time: operations a second (successful in
/// blue, failed stacked in red on top), and the successful ones' median
/// and 99th-percentile latency.
pub fn svg(timeline: &Timeline, title: &str, subtitle: &str) -> String {
    let width = timeline.bin_seconds;
    let x_max = (timeline.bins.len() as f64 * width).max(width);
    let rate_max = timeline
        .bins
        .iter()
        .enumerate()
        .map(|(i, b)| (b.ok + b.failed) as f64 / timeline.length(i))
        .fold(1.0, f64::max);
    let ms_max = timeline
        .bins
        .iter()
        .filter_map(|b| b.p99_ms)
        .fold(1.0, f64::max);
    let plot_w = WIDTH - LEFT - RIGHT;
    let height = TOP + 2.0 * PANEL + GAP + BOTTOM;
    let x_of = |t: f64| LEFT + t / x_max * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="42" fill="#555">{}</text>"##,
        escape(subtitle)
    );
    let panels = [
        (TOP, rate_max, "operations a second"),
        (TOP + PANEL + GAP, ms_max, "latency (ms)"),
    ];
    for (top, y_max, y_label) in panels {
        let step = step_for(y_max);
        let y_top = (y_max / step).ceil() * step;
        let bottom = top + PANEL;
        let y_of = |v: f64| bottom - v / y_top * PANEL;
        let mut v = 0.0;
        while v <= y_top * (1.0 + 1e-9) {
            let y = y_of(v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                label(v)
            );
            v += step;
        }
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{bottom}" x2="{:.1}" y2="{bottom}" stroke="#333"/><line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{bottom}" stroke="#333"/>"##,
            WIDTH - RIGHT
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(22 {:.1}) rotate(-90)" text-anchor="middle">{y_label}</text>"#,
            top + PANEL / 2.0
        );
        let x_step = step_for(x_max);
        let mut t = 0.0;
        while t <= x_max * (1.0 + 1e-9) {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x_of(t),
                bottom + 16.0,
                label(t)
            );
            t += x_step;
        }
        if top == TOP {
            let bar = (plot_w * width / x_max - 1.0).max(0.5);
            for (i, b) in timeline.bins.iter().enumerate() {
                let x = x_of(b.start_seconds);
                let ok = b.ok as f64 / timeline.length(i);
                let failed = b.failed as f64 / timeline.length(i);
                let _ = writeln!(
                    s,
                    r##"<rect x="{x:.1}" y="{:.1}" width="{bar:.1}" height="{:.1}" fill="#1f77b4"/>"##,
                    y_of(ok),
                    bottom - y_of(ok)
                );
                if b.failed > 0 {
                    let _ = writeln!(
                        s,
                        r##"<rect x="{x:.1}" y="{:.1}" width="{bar:.1}" height="{:.1}" fill="#d62728"/>"##,
                        y_of(ok + failed),
                        y_of(ok) - y_of(ok + failed)
                    );
                }
            }
        } else {
            let line = |pick: fn(&TimeBin) -> Option<f64>| -> String {
                timeline
                    .bins
                    .iter()
                    .filter_map(|b| {
                        pick(b).map(|ms| {
                            format!("{:.1},{:.1}", x_of(b.start_seconds + width / 2.0), y_of(ms))
                        })
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            for (pick, colour, dash) in [
                (
                    (|b: &TimeBin| b.p50_ms) as fn(&TimeBin) -> Option<f64>,
                    "#1f77b4",
                    "",
                ),
                (
                    |b: &TimeBin| b.p99_ms,
                    "#ff7f0e",
                    r#" stroke-dasharray="6 3""#,
                ),
            ] {
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                    line(pick)
                );
            }
        }
    }
    let legend_y = TOP - 6.0;
    let _ = writeln!(
        s,
        r##"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="#1f77b4"/><text x="{:.1}" y="{legend_y}">succeeded</text><rect x="{:.1}" y="{:.1}" width="10" height="10" fill="#d62728"/><text x="{:.1}" y="{legend_y}">failed</text>"##,
        WIDTH - RIGHT - 170.0,
        legend_y - 9.0,
        WIDTH - RIGHT - 156.0,
        WIDTH - RIGHT - 70.0,
        legend_y - 9.0,
        WIDTH - RIGHT - 56.0,
    );
    let legend_y = TOP + PANEL + GAP - 6.0;
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#1f77b4" stroke-width="2"/><text x="{:.1}" y="{legend_y}">p50</text><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ff7f0e" stroke-width="2" stroke-dasharray="6 3"/><text x="{:.1}" y="{legend_y}">p99</text>"##,
        WIDTH - RIGHT - 170.0,
        legend_y - 4.0,
        WIDTH - RIGHT - 150.0,
        legend_y - 4.0,
        WIDTH - RIGHT - 145.0,
        WIDTH - RIGHT - 70.0,
        legend_y - 4.0,
        WIDTH - RIGHT - 50.0,
        legend_y - 4.0,
        WIDTH - RIGHT - 45.0,
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds from the clients' start (slices of {} s)</text>"#,
        LEFT + plot_w / 2.0,
        height - 12.0,
        label(width)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress_client::OpKind;

    fn record(end_seconds: f64, ms: f64, outcome: Outcome) -> Record {
        Record {
            kind: OpKind::PutImmutable,
            ms,
            end_seconds,
            outcome,
        }
    }

    #[test]
    fn slices_are_round_and_at_most_a_hundred_and_twenty() {
        assert_eq!(bin_seconds(0.0), 0.1);
        assert_eq!(bin_seconds(12.0), 0.1);
        assert_eq!(bin_seconds(12.1), 0.2);
        assert_eq!(bin_seconds(100.0), 1.0);
        assert_eq!(bin_seconds(333.0), 5.0);
        assert_eq!(bin_seconds(3600.0), 50.0);
        for run in [0.5, 7.0, 59.9, 120.0, 121.0, 999.0, 86_400.0] {
            assert!(
                (run / bin_seconds(run)).ceil() as usize <= MAX_BINS,
                "{run}"
            );
        }
    }

    #[test]
    fn each_operation_lands_in_the_slice_it_finished_in() {
        // A 2 s run in slices of 0.1 s.
        let records = [
            record(0.05, 10.0, Outcome::Ok),
            record(0.09, 30.0, Outcome::Ok),
            record(0.15, 20.0, Outcome::Lost),
            record(1.95, 40.0, Outcome::Ok),
            // After the clock's last read: the last slice, not lost.
            record(2.3, 50.0, Outcome::Error("x".into())),
        ];
        let t = Timeline::of(&records, 2.0);
        assert_eq!(t.bin_seconds, 0.1);
        assert_eq!(t.bins.len(), 20);
        assert_eq!((t.bins[0].ok, t.bins[0].failed), (2, 0));
        // The median of two is their mean, as in the run's own summary.
        assert_eq!(t.bins[0].p50_ms, Some(20.0));
        assert_eq!((t.bins[1].ok, t.bins[1].failed), (0, 1));
        assert_eq!(t.bins[1].p50_ms, None);
        assert_eq!((t.bins[19].ok, t.bins[19].failed), (1, 1));
        let total: usize = t.bins.iter().map(|b| b.ok + b.failed).sum();
        assert_eq!(total, records.len());
        assert_eq!(t.p50_range_ms(), Some((20.0, 40.0)));
    }

    #[test]
    fn a_run_that_slows_down_shows_it_between_its_first_and_last_quarter() {
        // 100 operations a second for 30 s, then 20 a second for 10 s.
        let mut records = Vec::new();
        for i in 0..3000 {
            records.push(record(i as f64 / 100.0, 5.0, Outcome::Ok));
        }
        for i in 0..200 {
            records.push(record(30.0 + i as f64 / 20.0, 25.0, Outcome::Ok));
        }
        let t = Timeline::of(&records, 40.0);
        assert_eq!(t.bins.len(), 80);
        let first = t.rate_between(0.0, 0.25).unwrap();
        let last = t.rate_between(0.75, 1.0).unwrap();
        assert!((first - 100.0).abs() < 1.0, "{first}");
        assert!((last - 20.0).abs() < 1.0, "{last}");
        assert_eq!(t.p50_range_ms(), Some((5.0, 25.0)));
        // A last slice cut short by the run's end counts its own length:
        // 40.05 s in slices of 0.5 s, the last 0.05 s long.
        records.push(record(40.02, 25.0, Outcome::Ok));
        let cut = Timeline::of(&records, 40.05);
        assert_eq!(cut.bins.len(), 81);
        assert!((cut.rate_between(80.0 / 81.0, 1.0).unwrap() - 20.0).abs() < 1e-6);
        let svg = svg(&cut, "a run", "a machine");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // A bar a slice (every slice here has operations).
        assert_eq!(
            svg.matches(r##"fill="#1f77b4"/>"##).count(),
            cut.bins.len() + 1
        );
    }
}
