//! The `spacevault` command line tool: a thin layer over the `spacevault`
//! and `spacevault-bench` libraries.

mod cmd;
mod keys;
mod progress;
mod size;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Proof-of-Space plots of keyed BLAKE3 records: plot, prove, verify, check.
#[derive(Parser, Debug)]
#[command(
    name = "spacevault",
    version,
    about = "Proof-of-Space plots of keyed BLAKE3 records: plot, prove, verify, check, benchmark",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Make plots.
    Plot(cmd::plot::PlotArgs),
    /// Answer a challenge from plots.
    Prove(cmd::prove::ProveArgs),
    /// Verify a proof (exit 0 when valid, 1 when not).
    Verify(cmd::verify::VerifyArgs),
    /// Check plots for damage (exit 1 when any is damaged).
    Check(cmd::check::CheckArgs),
    /// Show a plot's header.
    Info(cmd::info::InfoArgs),
    /// Benchmarks: plotting and lookups against this machine's limits, and hash functions.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
}

/// The first Ctrl-C (or SIGTERM) asks running plots to stop and clean up;
/// a second one ends the process at once.
extern "C" fn on_stop_signal(signal: libc::c_int) {
    spacevault::plot::request_stop();
    // SAFETY: signal() is async-signal-safe; restoring the default action.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

fn install_stop_handler() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only does async-signal-safe things.
        unsafe { libc::signal(signal, on_stop_signal as *const () as libc::sighandler_t) };
    }
}

fn run(cli: Cli) -> anyhow::Result<bool> {
    if let Err(value) = spacevault::aligned::pool_setting() {
        anyhow::bail!(
            "{} is `{value}`: set it to `never` to keep spacevault out of the huge page pool, or to `try` (the default) or nothing to use it",
            spacevault::aligned::POOL_ENV
        );
    }
    if matches!(
        cli.command,
        Command::Plot(_) | Command::Bench(cmd::bench::BenchCommand::Plot(_))
    ) {
        install_stop_handler();
    }
    match cli.command {
        Command::Plot(a) => cmd::plot::run(a).map(|_| true),
        Command::Prove(a) => cmd::prove::run(a).map(|_| true),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Info(a) => cmd::info::run(a).map(|_| true),
        Command::Bench(c) => cmd::bench::run(c).map(|_| true),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let interrupted = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<spacevault::PlotError>(),
                    Some(spacevault::PlotError::Interrupted)
                )
            });
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(if interrupted { 130 } else { 1 })
        }
    }
}

/// The error and its causes on one line, outermost first. The library's
/// errors name their cause in their own message and also expose it as
/// their source (thiserror does both for a field named `source`), so a
/// cause the line already holds is not added again.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}
