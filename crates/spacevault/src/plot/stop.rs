//! Stopping a plot from outside, e.g. from a Ctrl-C handler: the plotter
//! notices within a few milliseconds, returns [`super::PlotError::Interrupted`]
//! and removes its unfinished files.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks every running plot in this process to stop. Async-signal-safe: it
/// is one atomic store, so a signal handler may call it.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether a stop was requested.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
