//! Heatmaps as standalone SVG: one value a cell over two axes, coloured on
//! a fixed scale that the caller chooses, so that two machines' charts of
//! the same experiment compare by colour. Plain SVG 1.1, no scripts.

use std::fmt::Write;

/// A grid of values to draw.
pub struct Heatmap<'a> {
    pub title: &'a str,
    /// A smaller second line under the title: the machine, the settings.
    pub subtitle: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Column and row labels; rows are drawn bottom to top.
    pub xs: Vec<String>,
    pub ys: Vec<String>,
    /// `values[row][column]`; None draws an empty cell.
    pub values: Vec<Vec<Option<f64>>>,
    /// Cells to mark as failed (drawn with a red frame and the word).
    pub failed: Vec<Vec<Option<String>>>,
    /// The colour scale runs from 0 to this; larger values take the top
    /// colour and read "≥".
    pub scale_max: f64,
    pub unit: &'a str,
    /// What a red frame means, under the chart when any cell has one.
    pub failed_note: &'a str,
}

/// Viridis, sampled: dark (small) to bright (large); readable in grey.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// The colour of `t` in 0..=1.
pub fn colour(t: f64) -> (u8, u8, u8) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Text made safe inside an SVG element or attribute.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn number(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl Heatmap<'_> {
    /// The SVG document, sized for a paper's column (about 9 cm at 100%).
    pub fn svg(&self) -> String {
        let (cols, rows) = (self.xs.len().max(1), self.ys.len().max(1));
        let cell_w = (420.0 / cols as f64).clamp(60.0, 110.0);
        let cell_h = (300.0 / rows as f64).clamp(30.0, 60.0);
        // The subtitle's lines, each kept within the picture: about 5.6
        // pixels a character at its size.
        let subtitle: Vec<&str> = self.subtitle.lines().collect();
        let longest = subtitle
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0);
        let (left, legend_w) = (80.0, 90.0);
        let top = 66.0 + 13.0 * subtitle.len().saturating_sub(1) as f64;
        let plot_w = cell_w * cols as f64;
        let plot_h = cell_h * rows as f64;
        let width = (left + plot_w + legend_w).max(longest as f64 * 5.6 + 20.0);
        let height = top + plot_h + 78.0;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
        );
        let _ = write!(
            s,
            r#"<rect width="100%" height="100%" fill="white"/><text x="{:.1}" y="22" font-size="15" text-anchor="middle" font-weight="bold">{}</text>"#,
            width / 2.0,
            escape(self.title),
        );
        for (i, line) in subtitle.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.0}" font-size="10" text-anchor="middle" fill="dimgray">{}</text>"#,
                width / 2.0,
                40.0 + 13.0 * i as f64,
                escape(line)
            );
        }
        for (r, row) in self.values.iter().enumerate() {
            // Row 0 at the bottom: the smallest network lowest, as a y axis.
            let y = top + plot_h - (r + 1) as f64 * cell_h;
            for (c, value) in row.iter().enumerate() {
                let x = left + c as f64 * cell_w;
                let failed = self
                    .failed
                    .get(r)
                    .and_then(|f| f.get(c))
                    .and_then(|f| f.as_deref());
                let (fill, text_colour, label) = match value {
                    Some(v) => {
                        let t = v / self.scale_max;
                        let (cr, cg, cb) = colour(t);
                        let bright = t > 0.55;
                        let label = if *v > self.scale_max {
                            format!("≥{}", number(self.scale_max))
                        } else {
                            number(*v)
                        };
                        (
                            format!("rgb({cr},{cg},{cb})"),
                            if bright { "black" } else { "white" },
                            label,
                        )
                    }
                    None => ("#eeeeee".to_string(), "#777777", "–".to_string()),
                };
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{cell_w:.1}" height="{cell_h:.1}" fill="{fill}" stroke="white" stroke-width="1"/>"#
                );
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="{text_colour}">{}</text>"#,
                    x + cell_w / 2.0,
                    y + cell_h / 2.0 + 4.0,
                    escape(&label)
                );
                if let Some(why) = failed {
                    let _ = write!(
                        s,
                        // The count on a white band, readable on any colour.
                        r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="red" stroke-width="3"/><rect x="{:.1}" y="{:.1}" width="{:.1}" height="11" fill="white"/><text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle" fill="red" font-weight="bold">{}</text>"#,
                        x + 1.5,
                        y + 1.5,
                        cell_w - 3.0,
                        cell_h - 3.0,
                        x + 3.0,
                        y + cell_h - 14.0,
                        cell_w - 6.0,
                        x + cell_w / 2.0,
                        y + cell_h - 5.5,
                        escape(why)
                    );
                }
            }
        }
        for (c, label) in self.xs.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
                left + (c as f64 + 0.5) * cell_w,
                top + plot_h + 16.0,
                escape(label)
            );
        }
        for (r, label) in self.ys.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
                left - 6.0,
                top + plot_h - (r as f64 + 0.5) * cell_h + 4.0,
                escape(label)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">{}</text>"#,
            left + plot_w / 2.0,
            top + plot_h + 38.0,
            escape(self.x_label)
        );
        let _ = write!(
            s,
            r#"<text transform="translate(22,{:.1}) rotate(-90)" font-size="13" text-anchor="middle">{}</text>"#,
            top + plot_h / 2.0,
            escape(self.y_label)
        );
        if self.failed.iter().flatten().any(Option::is_some) {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="red">{}</text>"#,
                left + plot_w / 2.0,
                top + plot_h + 58.0,
                escape(self.failed_note)
            );
        }
        // The legend: the fixed scale, bottom 0, top scale_max.
        let lx = left + plot_w + 24.0;
        let steps = 40;
        for i in 0..steps {
            let t = i as f64 / (steps - 1) as f64;
            let (cr, cg, cb) = colour(t);
            let h = plot_h / steps as f64;
            let _ = write!(
                s,
                r#"<rect x="{lx:.1}" y="{:.2}" width="16" height="{:.2}" fill="rgb({cr},{cg},{cb})"/>"#,
                top + plot_h - (i + 1) as f64 * h,
                h + 0.5
            );
        }
        for i in 0..=4 {
            let t = i as f64 / 4.0;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                lx + 20.0,
                top + plot_h - t * plot_h + 4.0,
                escape(&number(t * self.scale_max))
            );
        }
        let _ = write!(
            s,
            r#"<text x="{lx:.1}" y="{:.1}" font-size="11">{}</text>"#,
            top - 8.0,
            escape(self.unit)
        );
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_dark_to_bright_and_clamps() {
        assert_eq!(colour(0.0), VIRIDIS[0]);
        assert_eq!(colour(1.0), VIRIDIS[8]);
        assert_eq!(colour(7.0), VIRIDIS[8]);
        assert_eq!(colour(f64::NAN), VIRIDIS[8]);
        let luminance = |(r, g, b): (u8, u8, u8)| r as u32 * 3 + g as u32 * 6 + b as u32;
        let mut last = 0;
        for i in 0..=20 {
            let l = luminance(colour(i as f64 / 20.0));
            assert!(l >= last, "the scale darkens at {i}");
            last = l;
        }
    }

    #[test]
    fn cells_show_values_failures_and_the_fixed_scale() {
        let h = Heatmap {
            title: "time <to> run",
            subtitle: "a machine",
            x_label: "clients",
            y_label: "vaults",
            xs: vec!["1".into(), "5".into()],
            ys: vec!["1".into()],
            values: vec![vec![Some(2.5), Some(80.0)]],
            failed: vec![vec![None, Some("3 LOST".into())]],
            scale_max: 60.0,
            unit: "seconds",
            failed_note: "red: lost",
        };
        let svg = h.svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains(">2.50<"), "{svg}");
        assert!(svg.contains(">≥60.0<"), "a value past the scale says so");
        assert!(svg.contains(">3 LOST<") && svg.contains(r#"stroke="red""#));
        assert!(svg.contains(">red: lost<"), "the note says what red means");
        assert!(svg.contains("time &lt;to&gt; run"));
        assert!(
            svg.contains(">60.0<"),
            "the legend ends at the fixed maximum"
        );
    }
}
