//! The trade-off chart of `bench attack`: hashes a challenge against the
//! space an attacker saves, both log scales, each scheme's attacks at
//! k = 32 as points, and the gate as the line they must lie above.

use crate::attack::{AttackReport, AttackRow, GATE};
use crate::heatmap::escape;
use std::fmt::Write;

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 560.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
/// Savings from 1x to 10^4x; an attacker who keeps nothing is drawn at
/// the right edge.
const MAX_SAVING_LOG10: f64 = 4.0;
/// Hashes a challenge from 1 to 10^13.
const MAX_HASHES_LOG10: f64 = 13.0;

fn x_of(saving: Option<f64>) -> f64 {
    let s = saving.map_or(MAX_SAVING_LOG10, |s| {
        s.max(1.0).log10().min(MAX_SAVING_LOG10)
    });
    LEFT + s / MAX_SAVING_LOG10 * (WIDTH - LEFT - RIGHT)
}

fn y_of(hashes: f64) -> f64 {
    let h = hashes.max(1.0).log10().min(MAX_HASHES_LOG10);
    HEIGHT - BOTTOM - h / MAX_HASHES_LOG10 * (HEIGHT - TOP - BOTTOM)
}

fn colour(scheme: &str) -> &'static str {
    match scheme {
        "plain" => "#d95f02",
        _ => "#1b9e77",
    }
}

/// The chart as an SVG document: the carried rows of `report` that
/// answer at least 90% of challenges.
pub fn svg(report: &AttackReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="28" font-size="15">Hashes a challenge to answer 90% of challenges with the plot's quality, k = 32</text>"#
    );
    // Grid and axes.
    for d in 0..=MAX_HASHES_LOG10 as u32 {
        let y = y_of(10f64.powi(d as i32));
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">1e{d}</text>"##,
            WIDTH - RIGHT,
            LEFT - 8.0,
            y + 4.0
        );
    }
    for d in 0..=MAX_SAVING_LOG10 as u32 {
        let x = x_of(Some(10f64.powi(d as i32)));
        let label = if d == MAX_SAVING_LOG10 as u32 {
            "all".to_string()
        } else {
            format!("{}x", 10u64.pow(d))
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">space saved (the honest plot's bytes over the attacker's; "all": keeps nothing)</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - 22.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(24 {:.1}) rotate(-90)" text-anchor="middle">hashes a challenge</text>"#,
        (TOP + HEIGHT - BOTTOM) / 2.0
    );
    // The gate: above it from each saving on.
    let mut path = String::new();
    for (i, (factor, threshold)) in GATE.iter().enumerate() {
        let x0 = x_of(Some(*factor));
        let x1 = GATE
            .get(i + 1)
            .map_or(WIDTH - RIGHT, |next| x_of(Some(next.0)));
        let y = y_of(*threshold);
        let _ = write!(path, "M{x0:.1},{y:.1} L{x1:.1},{y:.1} ");
    }
    let _ = writeln!(
        s,
        r##"<path d="{path}" stroke="#c00" stroke-width="2" stroke-dasharray="6 4" fill="none"/>"##
    );
    // Points, labelled.
    let rows: Vec<&AttackRow> = report
        .rows
        .iter()
        .filter(|r| r.extrapolated && r.hashes_p90.is_some())
        .collect();
    for r in &rows {
        let (x, y) = (x_of(r.saving()), y_of(r.hashes_p90.unwrap()));
        let _ = writeln!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{}" fill-opacity="0.8"><title>{}: {}, {:.3e} hashes</title></circle>"#,
            colour(r.scheme),
            r.scheme,
            escape(&r.attack),
            r.hashes_p90.unwrap()
        );
    }
    // Legend.
    let lx = WIDTH - RIGHT + 20.0;
    for (i, (scheme, name)) in [("plain", "plain scheme"), ("hard", "table-chain scheme")]
        .iter()
        .enumerate()
    {
        let y = TOP + 20.0 + 22.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<circle cx="{lx}" cy="{:.1}" r="5" fill="{}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            y,
            colour(scheme),
            lx + 12.0,
            y + 4.0
        );
    }
    let y = TOP + 20.0 + 44.0;
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{y}" x2="{:.1}" y2="{y}" stroke="#c00" stroke-width="2" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}">the gate</text>"##,
        lx - 6.0,
        lx + 6.0,
        lx + 12.0,
        y + 4.0
    );
    for (i, g) in report.gate.iter().enumerate() {
        let y = TOP + 100.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<text x="{lx}" y="{y:.1}" font-size="11">{} {}x: {}</text>"#,
            g.scheme,
            g.factor,
            if g.passes { "passes" } else { "fails" }
        );
    }
    s.push_str("</svg>\n");
    s
}
