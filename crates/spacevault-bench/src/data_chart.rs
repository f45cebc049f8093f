//! The recovery chart of `bench data`: how many of a vanished holder's
//! blobs are short of R copies, second by second after it vanished, with
//! the moments every other vault counted it gone and every blob was back.

use crate::data::{DataBench, Recovery};
use crate::stats::axis_step as step_for;
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 60.0;

/// The chart as an SVG document, or None when the run measured no
/// recovery.
pub fn svg(report: &DataBench) -> Option<String> {
    let r: &Recovery = report.recovery.as_ref()?;
    // The axis reaches the last look and every mark (the holder may leave
    // the chain's holders after its blobs are back).
    let last = r.short_over_time.last().map_or(1.0, |p| p.0);
    let marks_end = [r.forgotten_seconds, r.back_seconds, r.evicted_seconds]
        .into_iter()
        .flatten()
        .fold(last, f64::max);
    let x_max = marks_end.max(1.0);
    let y_max = (r.blobs_it_kept as f64).max(1.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x_of = |t: f64| LEFT + t / x_max * plot_w;
    let y_of = |n: f64| HEIGHT - BOTTOM - n / y_max * plot_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let o = &report.options;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="26" font-size="15">A vanished holder's blobs short of {} copies</text>"#,
        r.wanted
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="44" fill="#555">{} vaults, R = {}, the {} blobs it kept (the clients' blobs of {} bytes, a file's parts and manifests)</text>"##,
        o.vaults, o.replication, r.blobs_it_kept, o.blob_bytes
    );
    let x_step = step_for(x_max);
    let decimals = if x_step < 1.0 { 1 } else { 0 };
    let mut t = 0.0;
    while t <= x_max + 1e-9 {
        let x = x_of(t);
        let label = format!("{t:.decimals$}");
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            HEIGHT - BOTTOM,
            HEIGHT - BOTTOM + 18.0
        );
        t += x_step;
    }
    let y_step = step_for(y_max);
    let mut n = 0.0;
    while n <= y_max + 1e-9 {
        let y = y_of(n);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{n}</text>"##,
            WIDTH - RIGHT,
            LEFT - 8.0,
            y + 4.0
        );
        n += y_step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds after it vanished</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 16.0
    );
    let _ = writeln!(
        s,
        r#"<text x="20" y="{:.1}" transform="rotate(-90 20 {:.1})" text-anchor="middle">blobs short of R copies</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    // A step line: the count holds until the next look.
    let mut path = String::new();
    let mut before: Option<f64> = None;
    for &(t, short) in &r.short_over_time {
        let (x, y) = (x_of(t), y_of(short as f64));
        match before {
            None => {
                let _ = write!(path, "M{x:.1},{y:.1}");
            }
            Some(y0) => {
                let _ = write!(path, " L{x:.1},{y0:.1} L{x:.1},{y:.1}");
            }
        }
        before = Some(y);
    }
    let _ = writeln!(
        s,
        r##"<path d="{path}" fill="none" stroke="#1b9e77" stroke-width="2"/>"##
    );
    let marks = [
        (
            r.forgotten_seconds,
            "#d95f02",
            "counted gone by every vault",
        ),
        (r.back_seconds, "#7570b3", "every blob back at R"),
        (r.evicted_seconds, "#e7298a", "out of the chain's holders"),
    ];
    for (i, (at, colour, label)) in marks.into_iter().enumerate() {
        let Some(at) = at else { continue };
        let x = x_of(at);
        // Labels right of a line in the chart's left half, left of it in
        // the right half, so that none runs off the edge.
        let (text_x, anchor) = if x < LEFT + plot_w / 2.0 {
            (x + 4.0, "start")
        } else {
            (x - 4.0, "end")
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="{colour}" stroke-dasharray="4 3"/><text x="{text_x:.1}" y="{:.1}" fill="{colour}" text-anchor="{anchor}">{label}, {at:.1} s</text>"##,
            HEIGHT - BOTTOM,
            TOP + 14.0 + 16.0 * i as f64
        );
    }
    let _ = writeln!(s, "</svg>");
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::stats::axis_step as step_for;

    #[test]
    fn steps_are_round_and_split_the_axis_in_about_five() {
        for (max, step) in [
            (1.0, 0.2),
            (22.0, 5.0),
            (354.0, 100.0),
            (60.0, 20.0),
            (9.0, 2.0),
        ] {
            assert_eq!(step_for(max), step, "{max}");
        }
    }
}
