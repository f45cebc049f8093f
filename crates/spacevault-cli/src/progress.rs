//! Progress bars on stderr, only when stderr is a terminal.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;

#[derive(Clone)]
pub struct Bar {
    bar: ProgressBar,
    prefix: String,
}

fn shown(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

fn styled(bar: ProgressBar) -> ProgressBar {
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} {msg:<24} [{bar:30}] {percent:>3}%  {rate:>16}  ETA {eta}",
        )
        .expect("valid template")
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = std::fmt::Write::write_fmt(
                    w,
                    format_args!("{:.1} M records/s", state.per_sec() / 1e6),
                );
            },
        )
        .progress_chars("=> "),
    );
    bar
}

impl Bar {
    /// A bar, hidden unless stderr is a terminal and `quiet` is false.
    pub fn new(prefix: String, quiet: bool) -> Bar {
        let bar = match shown(quiet) {
            true => styled(ProgressBar::with_draw_target(
                Some(1),
                ProgressDrawTarget::stderr_with_hz(8),
            )),
            false => ProgressBar::hidden(),
        };
        Bar::with_prefix(bar, prefix)
    }

    /// A bar of bytes done out of a total, hidden like [`Bar::new`].
    pub fn bytes(prefix: String, quiet: bool) -> Bar {
        let bar = match shown(quiet) {
            true => {
                let bar =
                    ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr_with_hz(8));
                bar.set_style(
                    ProgressStyle::with_template(
                        "{prefix} [{bar:30}] {bytes}/{total_bytes}  {binary_bytes_per_sec}  ETA {eta}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                bar
            }
            false => ProgressBar::hidden(),
        };
        Bar::with_prefix(bar, prefix)
    }

    /// For a bar of bytes: `done` of `total`.
    pub fn set_bytes(&self, done: u64, total: u64) {
        self.bar.set_length(total.max(1));
        self.bar.set_position(done);
    }

    fn with_prefix(bar: ProgressBar, prefix: String) -> Bar {
        bar.set_prefix(prefix.clone());
        Bar { bar, prefix }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    pub fn set_prefix(&self, prefix: String) {
        self.bar.set_prefix(prefix);
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl spacevault::plot::Progress for Bar {
    fn phase(&self, phase: spacevault::plot::Phase, total: u64) {
        // A phase without a count (bringing memory into use) shows 0%
        // until the next one, rather than indicatif's 100% for length 0.
        self.bar.set_length(total.max(1));
        self.bar.set_position(0);
        self.bar.reset_eta();
        self.bar.set_message(phase.describe());
    }

    fn advance(&self, records: u64) {
        self.bar.inc(records);
    }
}

/// Bars that may be on screen together (plots that overlap), and lines
/// printed above them.
pub struct Bars {
    group: Option<MultiProgress>,
}

impl Bars {
    /// Hidden unless stderr is a terminal and `quiet` is false.
    pub fn new(quiet: bool) -> Bars {
        let group = shown(quiet)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(8)));
        Bars { group }
    }

    pub fn add(&self, prefix: String) -> Bar {
        let bar = match &self.group {
            Some(group) => styled(group.add(ProgressBar::new(1))),
            None => ProgressBar::hidden(),
        };
        Bar::with_prefix(bar, prefix)
    }

    /// Runs `f` (which prints) with the bars off the screen.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.group {
            Some(group) => group.suspend(f),
            None => f(),
        }
    }
}
