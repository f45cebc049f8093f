//! The `spacevault` command line tool: a thin layer over the `spacevault`
//! and `spacevault-bench` libraries.

#[macro_use]
mod out;
mod allocator;
mod cmd;
mod input;
mod keys;
mod logs;
mod progress;
mod signals;
mod size;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Proof-of-Space plots of keyed BLAKE3 records, and the vaults that farm them.
#[derive(Parser, Debug)]
#[command(
    name = "spacevault",
    version,
    about = "Proof-of-Space plots of keyed BLAKE3 records: plot, prove, verify, check, benchmark; and vaults that farm them, agree on a chain and keep clients' data",
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
    /// Chain specs: what the vaults of one network agree on.
    #[command(subcommand)]
    Chain(cmd::chain::ChainCommand),
    /// Run a vault: farm plots, follow the chain, keep clients' data.
    Node(cmd::node::NodeArgs),
    /// Store and fetch data through a vault.
    Client(cmd::client::ClientArgs),
    /// Show the farmer key and the peer id of this machine's vault.
    Identity(cmd::identity::IdentityArgs),
    /// Client stress test of vault networks over a grid of vaults × clients.
    Stress(cmd::stress::StressArgs),
    /// Tables of the vaults' crypto operations from `stress --trace-crypto` traces.
    Report(cmd::report::ReportArgs),
}

impl Command {
    /// Whether the command was asked for JSON on stdout.
    fn json(&self) -> bool {
        match self {
            Command::Plot(a) => a.json,
            Command::Prove(a) => a.json,
            Command::Verify(a) => a.json,
            Command::Check(a) => a.json,
            Command::Info(a) => a.json,
            Command::Bench(c) => c.json(),
            Command::Chain(cmd::chain::ChainCommand::Init(a)) => a.json,
            Command::Node(a) => a.json,
            Command::Client(a) => a.json,
            Command::Identity(a) => a.json,
            Command::Stress(a) => a.json(),
            Command::Report(a) => a.json,
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<bool> {
    if let Err(e) = spacevault::kernel::backend_setting() {
        anyhow::bail!("{e}");
    }
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
        signals::install();
        allocator::keep_freed_memory();
    }
    match cli.command {
        Command::Plot(a) if a.scheme == cmd::plot::SchemeArg::Hard => {
            cmd::plot_hard::run(&a).map(|_| true)
        }
        Command::Plot(a) => cmd::plot::run(a).map(|_| true),
        Command::Prove(a) => cmd::prove::run(a).map(|_| true),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Info(a) => cmd::info::run(a).map(|_| true),
        Command::Bench(c) => cmd::bench::run(c).map(|_| true),
        Command::Chain(c) => cmd::chain::run(c).map(|_| true),
        Command::Node(a) => cmd::node::run(a).map(|_| true),
        Command::Client(a) => cmd::client::run(a).map(|_| true),
        Command::Identity(a) => cmd::identity::run(a).map(|_| true),
        Command::Stress(a) => cmd::stress::run(a).map(|_| true),
        Command::Report(a) => cmd::report::run(a).map(|_| true),
    }
}

/// Exit statuses: 0 done (a valid proof, sound plots); 1 an error, an
/// invalid proof or a damaged plot; 2 a command line clap refused;
/// 128 + N stopped by signal N; 141 (128 + SIGPIPE) stdout closed by its
/// reader, as `ls | head` reports.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let json = std::env::args_os().any(|a| a == "--json");
            if json && e.use_stderr() {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or_default();
                print_json_error(first.strip_prefix("error: ").unwrap_or(first));
            }
            e.exit();
        }
    };
    let json = cli.command.json();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) if e.downcast_ref::<cmd::ExitWith>().is_some() => {
            ExitCode::from(e.downcast_ref::<cmd::ExitWith>().map_or(1, |x| x.0))
        }
        Err(e) if e.downcast_ref::<signals::StoppedBy>().is_some() => {
            let signal = e.downcast_ref::<signals::StoppedBy>().map_or(0, |s| s.0);
            ExitCode::from(128 + signal as u8)
        }
        Err(e) if e.chain().any(|c| c.is::<out::StdoutClosed>()) => {
            spacevault::plot::request_stop();
            ExitCode::from(128 + libc::SIGPIPE as u8)
        }
        Err(e) => {
            let interrupted = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<spacevault::PlotError>(),
                    Some(spacevault::PlotError::Interrupted)
                )
            });
            let line = one_line(&e);
            errln!("error: {line}");
            if json && !out::wrote_stdout() {
                print_json_error(&line);
            }
            ExitCode::from(if interrupted {
                signals::exit_status()
            } else {
                1
            })
        }
    }
}

/// `{"error": "..."}` on stdout, for a JSON reader that would otherwise
/// get nothing to parse.
fn print_json_error(message: &str) {
    let _ = out::line(format_args!("{}", serde_json::json!({ "error": message })));
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
