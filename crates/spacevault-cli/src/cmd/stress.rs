//! `spacevault stress`: the vault-network profiling study's client stress test over a grid of
//! network sizes and client counts, written as CSV, JSON, a Markdown
//! summary and heatmaps.

use crate::size::parse_size;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use spacevault_bench::stress::{self, Progress, StressOptions};
use spacevault_bench::stress_output;
use std::path::PathBuf;

use super::network::{DistanceArgs, ModeArg};
use super::node::Switch;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct StressArgs {
    #[command(subcommand)]
    pub command: Option<StressCommand>,
    /// Network sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    pub vaults: Vec<usize>,
    /// Concurrent clients, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20,40")]
    pub clients: Vec<usize>,
    /// Immutable blobs each client PUTs and then GETs.
    #[arg(long, default_value_t = 100)]
    pub immutable: usize,
    /// Registers each client writes and then reads.
    #[arg(long, default_value_t = 100)]
    pub mutable: usize,
    /// Each blob's (and register value's, at most 1 KiB) size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1KiB")]
    pub size: u64,
    /// Operations each client keeps outstanding.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub in_flight: usize,
    /// Runs of each cell.
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    /// The machine's price, for a cost column.
    #[arg(long, value_name = "USD")]
    pub price_per_hour: Option<f64>,
    /// The heatmap's colour scale ends here, so that charts of two
    /// machines compare by colour.
    #[arg(long, value_name = "SECONDS", default_value_t = 240.0)]
    pub scale_max: f64,
    /// Each vault's plot size.
    #[arg(short = 'k', long = "k", value_name = "K", default_value_t = 16)]
    pub k: u8,
    /// The scheme of every vault's plot, the only one the chain takes.
    #[arg(long, value_enum, default_value_t = super::plot::SchemeArg::Plain)]
    pub scheme: super::plot::SchemeArg,
    /// The chain's slot: by default the spec's (`chain init`'s), a block
    /// every two seconds on average. Shorter slots make blocks faster than
    /// 64 vaults sharing two cores relay them under load (docs/PROFILING.md).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub slot_ms: u64,
    /// The proof of time's squarings a slot (default: the spec's, 50 a
    /// millisecond of slot). The timekeeper (vault 0) shares the machine
    /// with the vaults here; a real one runs on a machine of its own.
    #[arg(long, value_name = "N")]
    pub pot_iterations: Option<u64>,
    /// Copies of each blob.
    #[arg(long, default_value_t = 4)]
    pub replication: u32,
    #[arg(long, value_enum, default_value_t = ModeArg::Inprocess)]
    pub mode: ModeArg,
    /// Where the clients run: in this process, or each in a process of
    /// its own, whose CPU is reported apart from the vaults'.
    #[arg(long, value_enum, default_value_t = ModeArg::Inprocess)]
    pub clients_mode: ModeArg,
    #[command(flatten)]
    pub distance: DistanceArgs,
    /// The vaults remember signatures they verified.
    #[arg(long, value_enum, value_name = "ON|OFF", default_value_t = Switch::On)]
    pub verify_cache: Switch,
    /// Vaults in one process share the slot outputs they checked, as
    /// vaults on machines of their own each check every output once (off:
    /// each checks its own; vault processes always check their own).
    #[arg(long, value_enum, value_name = "ON|OFF", default_value_t = Switch::On)]
    pub shared_slot_checks: Switch,
    /// Keep every crypto operation's start, end and input in a trace file
    /// a vault (OUT/traces), for `spacevault report`.
    #[arg(long)]
    pub trace_crypto: bool,
    /// Drive vaults already running (started by hand, or on other
    /// machines) instead of starting a network a cell: FILE holds their
    /// API URLs, one a line (`#` starts a comment). The grid's network
    /// size is their count; the chain's slots and copies are theirs.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "vaults", "k", "scheme", "slot_ms", "pot_iterations", "replication",
        "mode", "latency", "bandwidth", "verify_cache", "shared_slot_checks",
    ])]
    pub network: Option<PathBuf>,
    /// Where the results go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-stress")]
    pub out: PathBuf,
    /// Where the vaults' plots (kept for the next run) and stores go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-bench-network")]
    pub dir: PathBuf,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// One client's job, read from stdin, run, and answered on stdout.
fn client() -> Result<()> {
    let mut job = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut job).context("reading the job")?;
    let job: stress::ClientJob = serde_json::from_str(&job).context("the job is not a client's")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let mut answer = runtime.block_on(stress::run_job(job))?;
    // Every thread's CPU, the runtime's shut down first, to the
    // microsecond: a short client's ticks would round to nothing.
    drop(runtime);
    answer.cpu_seconds = own_cpu_seconds();
    crate::cmd::print_json(&answer)
}

/// This process's CPU time, user and system, all its threads.
fn own_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

/// The API URLs of a running network, one a line; blank lines and `#`
/// comments skipped.
fn read_network(path: &std::path::Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the network file {}", path.display()))?;
    let apis: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if apis.is_empty() {
        anyhow::bail!("the network file {} names no vault", path.display());
    }
    Ok(apis)
}

#[derive(Subcommand, Debug)]
pub enum StressCommand {
    /// Put the results of several runs (machines, settings) side by side:
    /// heatmaps on one scale, ratios to the first, a ranking by time and cost.
    Compare(super::stress_compare::CompareArgs),
    /// One client of a run in a process of its own: its job as JSON on
    /// stdin, its records as JSON on stdout (`--clients-mode processes`
    /// starts these).
    #[command(hide = true)]
    Client,
}

impl StressArgs {
    pub fn json(&self) -> bool {
        match &self.command {
            Some(StressCommand::Compare(c)) => c.json,
            // Its failure is a line on stderr, for the run that started it.
            Some(StressCommand::Client) => false,
            None => self.json,
        }
    }
}

pub fn run(a: StressArgs) -> Result<()> {
    match a.command {
        Some(StressCommand::Compare(c)) => return super::stress_compare::run(c),
        Some(StressCommand::Client) => return client(),
        None => {}
    }
    // The vaults' own logs, in process, when asked for.
    if std::env::var_os("RUST_LOG").is_some() {
        crate::logs::init();
    }
    if !(a.scale_max.is_finite() && a.scale_max > 0.0) {
        anyhow::bail!("--scale-max must be a positive number of seconds");
    }
    if a.vaults.iter().any(|&v| v > 1024) {
        anyhow::bail!("--vaults sizes must be at most 1024");
    }
    if a.price_per_hour
        .is_some_and(|p| !(p.is_finite() && p >= 0.0))
    {
        anyhow::bail!("--price-per-hour must be a non-negative number");
    }
    let mode = a.mode.mode()?;
    let network = a.network.as_deref().map(read_network).transpose()?;
    let options = StressOptions {
        vaults: match &network {
            Some(apis) => vec![apis.len()],
            None => a.vaults,
        },
        clients: a.clients,
        immutable: a.immutable,
        mutable: a.mutable,
        size: a.size as usize,
        in_flight: a.in_flight,
        k: a.k,
        scheme: a.scheme.kind(),
        slot_ms: a.slot_ms,
        pot_iterations: a.pot_iterations,
        replication: a.replication,
        mode,
        repeats: a.repeats,
        price_per_hour: a.price_per_hour,
        verify_cache: a.verify_cache == Switch::On,
        shared_slot_checks: a.shared_slot_checks == Switch::On,
        distance: a.distance.distance()?,
        trace_dir: a.trace_crypto.then(|| a.out.join("traces")),
        dir: a.dir,
        network,
        block_interval_slots: None,
        clients_mode: a.clients_mode.mode()?,
    };
    options.validate()?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let progress = |p: Progress| {
        let eta = match p.done {
            0 => "?".to_string(),
            d => {
                let left = p.elapsed.as_secs_f64() / d as f64 * (p.total - d) as f64;
                format!("{:.0} s", left)
            }
        };
        errln!(
            "[{}/{}] {} vaults × {} clients, run {} (elapsed {:.0} s, about {eta} left)",
            p.done + 1,
            p.total,
            p.vaults,
            p.clients,
            p.repeat + 1,
            p.elapsed.as_secs_f64()
        );
    };
    let report = stress::run(&options, &progress)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let date = stress_output::utc_date(now);
    let write = |name: &str, text: String| -> Result<PathBuf> {
        let path = a.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    write("results.csv", stress_output::csv(&report))?;
    write("timeline.csv", stress_output::timeline_csv(&report))?;
    let timelines = a.out.join("timelines");
    std::fs::create_dir_all(&timelines)
        .with_context(|| format!("creating {}", timelines.display()))?;
    for (name, chart) in stress_output::timeline_charts(&report) {
        write(&name, chart)?;
    }
    write("results.json", serde_json::to_string_pretty(&report)?)?;
    write(
        "summary.md",
        stress_output::markdown(&report, &command, &date),
    )?;
    let svg = write(
        "heatmap-time.svg",
        stress_output::heatmap(&report, a.scale_max),
    )?;
    let png = spacevault_hashbench::chart::png_from_svg(&svg, &svg.with_extension("png"));
    if !png {
        errln!("no PNG copy of the heatmap: install rsvg-convert (Debian: librsvg2-bin) for one");
    }
    if a.json {
        return crate::cmd::print_json(&report);
    }
    outln!("{}", stress_output::markdown(&report, &command, &date));
    outln!(
        "written to {}: results.csv, results.json, summary.md, timeline.csv, timelines/, heatmap-time.svg{}",
        a.out.display(),
        if png { ", heatmap-time.png" } else { "" }
    );
    let bad: usize = report.cells.iter().map(|c| c.lost_or_wrong()).sum();
    if bad > 0 {
        anyhow::bail!("{bad} operations lost or returned wrong data (see summary.md)");
    }
    Ok(())
}
