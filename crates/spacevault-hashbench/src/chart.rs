//! Line charts as standalone SVG: throughput against threads, and against
//! message size. Plain SVG 1.1, no scripts, so they drop into papers.

use crate::report;
use crate::suite::Report;
use std::fmt::Write;

const W: f64 = 800.0;
const H: f64 = 460.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 225.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
const DASHES: [&str; 4] = ["", "8 4", "2 3", "10 3 2 3"];
const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One line: a colour per algorithm and a dash pattern per implementation,
/// so that the lines of one algorithm read as a family.
pub struct Series {
    pub name: String,
    pub color: usize,
    pub dash: usize,
    pub points: Vec<(f64, f64)>,
}

fn ticks_log(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut t = 10f64.powf(lo.log10().floor());
    while t <= hi * 1.0001 {
        if t >= lo / 1.0001 {
            out.push(t);
        }
        t *= 10.0;
    }
    if out.len() < 2 {
        out = vec![lo, hi];
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A chart with a log y axis; x is linear, or log2 when `log2_x`.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log2_x: bool,
    x_tick_label: &dyn Fn(f64) -> String,
    y_tick_label: &dyn Fn(f64) -> String,
) -> String {
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 1.0, 10.0);
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    let fx = |x: f64| if log2_x { x.log2() } else { x };
    let (lx0, lx1) = (fx(x0), fx(x1).max(fx(x0) + 1e-9));
    let (ly0, ly1) = ((y0 / 1.5).log10(), (y1 * 1.5).log10());
    let px = |x: f64| LEFT + (fx(x) - lx0) / (lx1 - lx0) * (W - LEFT - RIGHT);
    let py = |y: f64| TOP + (1.0 - (y.log10() - ly0) / (ly1 - ly0)) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" font-size="16" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        esc(title)
    );
    // Axes and grid.
    let (ax0, ax1, ay0, ay1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    for t in ticks_log(10f64.powf(ly0), 10f64.powf(ly1)) {
        let y = py(t);
        let _ = writeln!(
            s,
            r##"<line x1="{ax0}" y1="{y:.1}" x2="{ax1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            ax0 - 6.0,
            y + 4.0,
            esc(&y_tick_label(t))
        );
    }
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    let mut last_label = f64::MIN;
    for x in xs {
        let at = px(x);
        // A label closer than this to the last would overlap it; the grid
        // line still shows.
        if at - last_label < 42.0 {
            let _ = writeln!(
                s,
                r##"<line x1="{at:.1}" y1="{ay0}" x2="{at:.1}" y2="{ay1}" stroke="#eee"/>"##
            );
            continue;
        }
        last_label = at;
        let _ = writeln!(
            s,
            r##"<line x1="{at:.1}" y1="{ay0}" x2="{at:.1}" y2="{ay1}" stroke="#eee"/><text x="{at:.1}" y="{}" text-anchor="middle">{}</text>"##,
            ay1 + 18.0,
            esc(&x_tick_label(x))
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{ax0}" y1="{ay1}" x2="{ax1}" y2="{ay1}" stroke="#333"/><line x1="{ax0}" y1="{ay0}" x2="{ax0}" y2="{ay1}" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (ax0 + ax1) / 2.0,
        H - 18.0,
        esc(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(22 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (ay0 + ay1) / 2.0,
        esc(y_label)
    );
    // Lines and the legend.
    for (i, ser) in series.iter().enumerate() {
        let c = COLORS[ser.color % COLORS.len()];
        let dash = match DASHES[ser.dash % DASHES.len()] {
            "" => String::new(),
            d => format!(r#" stroke-dasharray="{d}""#),
        };
        let path: Vec<String> = ser
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in &ser.points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = TOP + 10.0 + i as f64 * 20.0;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="3"{dash}/><text x="{}" y="{}">{}</text>"#,
            W - RIGHT + 15.0,
            W - RIGHT + 40.0,
            W - RIGHT + 46.0,
            ly + 4.0,
            esc(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The charts of a report: (file name, SVG).
pub fn charts(r: &Report) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let pairs: Vec<_> = {
        let mut p: Vec<_> = r.measurements.iter().map(|m| (m.algo, m.backend)).collect();
        p.dedup();
        p
    };
    let mut sizes: Vec<usize> = r.measurements.iter().map(|m| m.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    // One line per implementation through the measurements `keep` selects,
    // at the (x, y) that `xy` takes from each.
    let lines = |keep: &dyn Fn(&crate::Measurement) -> bool,
                 xy: &dyn Fn(&crate::Measurement) -> (f64, f64)|
     -> Vec<Series> {
        pairs
            .iter()
            .map(|&(a, b)| Series {
                name: if a.backends().len() > 1 {
                    format!("{a} ({b})")
                } else {
                    a.name().to_string()
                },
                color: crate::Algo::ALL.iter().position(|&x| x == a).unwrap_or(0),
                dash: a.backends().iter().position(|&x| x == b).unwrap_or(0),
                points: r
                    .measurements
                    .iter()
                    .filter(|m| m.algo == a && m.backend == b && m.processes == 1 && keep(m))
                    .map(xy)
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    for &size in &sizes {
        let series = lines(&|m| m.size == size, &|m| {
            (m.threads as f64, m.hashes_per_second.median)
        });
        if series.iter().all(|s| s.points.len() < 2) {
            continue;
        }
        let svg = line_chart(
            &format!(
                "Hashes per second against threads, {} messages",
                report::size(size)
            ),
            "threads",
            "hashes per second (log scale)",
            &series,
            false,
            &|x| format!("{x}"),
            &|y| report::rate(y).replace("/s", ""),
        );
        out.push((format!("threads-{size}B.svg"), svg));
    }
    let max_threads = r
        .measurements
        .iter()
        .filter(|m| m.processes == 1)
        .map(|m| m.threads)
        .max()
        .unwrap_or(1);
    let series = lines(&|m| m.threads == max_threads, &|m| {
        (m.size as f64, m.bytes_per_second.median)
    });
    if sizes.len() > 1 {
        let svg = line_chart(
            &format!(
                "Throughput against message size, {max_threads} thread{}",
                if max_threads == 1 { "" } else { "s" }
            ),
            "message size (log scale)",
            "bytes per second (log scale)",
            &series,
            true,
            &|x| report::size(x as usize),
            &|y| report::bytes_rate(y),
        );
        out.push(("sizes.svg".to_string(), svg));
    }
    out
}

/// Renders an SVG file to PNG with `rsvg-convert` when it is installed;
/// returns whether a PNG was written.
pub fn png_from_svg(svg: &std::path::Path, png: &std::path::Path) -> bool {
    std::process::Command::new("rsvg-convert")
        .args(["--width", "1520", "--output"])
        .arg(png)
        .arg(svg)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
