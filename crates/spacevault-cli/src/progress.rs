//! A progress bar on stderr, only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct Bar {
    bar: ProgressBar,
    prefix: String,
}

impl Bar {
    /// A bar, hidden unless stderr is a terminal and `quiet` is false.
    pub fn new(prefix: String, quiet: bool) -> Bar {
        let bar = if quiet || !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(8));
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix} {msg:<24} [{bar:30}] {percent:>3}%  {per_sec:>14}  ETA {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        };
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
    fn phase(&self, name: &str, total: u64) {
        // A phase without a count (bringing memory into use) shows 0%
        // until the next one, rather than indicatif's 100% for length 0.
        self.bar.set_length(total.max(1));
        self.bar.set_position(0);
        self.bar.reset_eta();
        self.bar.set_message(name.to_string());
    }

    fn advance(&self, records: u64) {
        self.bar.inc(records);
    }
}
