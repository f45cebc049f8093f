//! Results on stdout and notes on stderr, written without ever panicking.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`spacevault
//! check DIR | head -1`), and `eprintln!` when stderr is a terminal that
//! closed with its SSH session. Here a closed stdout ends the command with
//! [`StdoutClosed`], which `main` turns into a quiet exit, and a note that
//! cannot be written to stderr is dropped.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Stdout was closed by its reader: the command stops, as `ls | head` does.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether anything was written to stdout: a JSON error object is printed
/// only where no JSON document was.
static WROTE: AtomicBool = AtomicBool::new(false);

pub fn wrote_stdout() -> bool {
    WROTE.load(Ordering::Relaxed)
}

/// Writes a line to stdout. Any write error but a closed reader is one too
/// (a full disk behind a redirection), reported as such.
pub fn line(args: std::fmt::Arguments) -> anyhow::Result<()> {
    WROTE.store(true, Ordering::Relaxed);
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
    }
}

/// Writes a line to stderr, dropping it where stderr is gone.
pub fn note(args: std::fmt::Arguments) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `println!` that returns [`StdoutClosed`] (or another write error) from
/// the enclosing function, which returns `anyhow::Result`.
macro_rules! outln {
    () => { $crate::out::line(format_args!(""))? };
    ($($arg:tt)*) => { $crate::out::line(format_args!($($arg)*))? };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::out::note(format_args!($($arg)*)) };
}
