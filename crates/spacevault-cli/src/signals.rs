//! Stopping cleanly on every signal that would otherwise end the process.
//!
//! A plot in progress holds gigabytes of temp files. Ctrl-C (SIGINT),
//! `kill` (SIGTERM), a closed terminal or SSH session (SIGHUP) and the
//! other signals whose default action ends the process all ask running
//! plots to stop and remove their files; the command then exits with
//! 128 + the signal's number, as a shell reports a process the signal
//! ended. A second signal of any of these kinds ends the process at once.
//!
//! Not handled: SIGPIPE, which Rust ignores (a closed stdout is an error
//! that ends the command quietly, see `out`), and the signals of a fault
//! (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP), after which
//! nothing the process does can be trusted.

use std::sync::atomic::{AtomicI32, Ordering};

/// Signals whose default action ends the process, and that a plot turns
/// into a clean stop.
pub const STOPPING: [libc::c_int; 13] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGIO,
    libc::SIGPWR,
];

/// The first stopping signal received, 0 before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(signal: libc::c_int) {
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
    spacevault::plot::request_stop();
    for s in STOPPING {
        // SAFETY: signal() is async-signal-safe; this restores the default
        // action, so that a second signal ends the process.
        unsafe { libc::signal(s, libc::SIG_DFL) };
    }
}

/// Turns every stopping signal into a request to stop.
pub fn install() {
    for s in STOPPING {
        // SAFETY: the handler only does async-signal-safe things: atomic
        // stores and signal().
        unsafe { libc::signal(s, on_stop_signal as *const () as libc::sighandler_t) };
    }
}

/// A command that stopped, cleanly, because signal `.0` asked it to: the
/// process exits 128 + its number, saying nothing more.
#[derive(Debug)]
pub struct StoppedBy(pub libc::c_int);

impl std::fmt::Display for StoppedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stopped by signal {}", self.0)
    }
}

impl std::error::Error for StoppedBy {}

/// The exit status for a command a signal stopped: 128 + its number
/// (130 for an interruption with no signal seen).
pub fn exit_status() -> u8 {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => 128 + libc::SIGINT as u8,
        s => 128 + s as u8,
    }
}
