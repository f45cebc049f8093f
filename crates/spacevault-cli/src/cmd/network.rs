//! `spacevault bench network`: the table and JSON of a network benchmark.

use super::node::Switch;
use crate::size::{format_size, parse_rate, parse_size};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use spacevault_bench::network::{self, Mode, NetworkBenchOptions, OpStats};
use spacevault_bench::profiles::{Distance, RegionMatrix};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Every vault in this process, over the in-memory transport.
    Inprocess,
    /// Each vault its own process, on loopback TCP.
    Processes,
}

impl ModeArg {
    /// The launcher's mode: vault processes run this very program.
    pub fn mode(self) -> Result<Mode> {
        Ok(match self {
            ModeArg::Inprocess => Mode::InProcess,
            ModeArg::Processes => Mode::Processes {
                exe: std::env::current_exe().context("finding this program to start vaults")?,
            },
        })
    }
}

/// How far apart the vaults of a test network are.
#[derive(Args, Debug)]
pub struct DistanceArgs {
    /// Delay between vaults: lan (nothing added), continent (4 regions,
    /// round trips up to 70 ms), global (8 regions, up to 400 ms), or a
    /// matrix file (docs/PROFILING.md).
    #[arg(long, value_name = "PROFILE", default_value = "lan")]
    pub latency: String,
    /// Cap on what each connection carries each way, e.g. 2Gbit, 100Mbit,
    /// 50MiB (per second).
    #[arg(long, value_name = "RATE")]
    pub bandwidth: Option<String>,
}

impl DistanceArgs {
    pub fn distance(&self) -> Result<Distance> {
        Ok(Distance {
            matrix: RegionMatrix::named(&self.latency)?,
            bytes_per_second: self
                .bandwidth
                .as_deref()
                .map(|b| parse_rate(b).map_err(|e| anyhow::anyhow!("--bandwidth: {e}")))
                .transpose()?,
        })
    }
}

#[derive(Args, Debug)]
pub struct BenchNetworkArgs {
    /// Vaults in the network.
    #[arg(long, default_value_t = 64)]
    pub vaults: usize,
    /// Each vault's plot size.
    #[arg(short = 'k', long = "k", value_name = "K", default_value_t = 18)]
    pub k: u8,
    /// The scheme of every vault's plot, the only one the chain takes.
    #[arg(long, value_enum, default_value_t = super::plot::SchemeArg::Plain)]
    pub scheme: super::plot::SchemeArg,
    /// The chain's slot.
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
    /// How long the network runs once every vault joined before the idle
    /// phase: its vaults finding each other, measured on its own.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub settle_seconds: f64,
    /// How long the network runs without clients once it settled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub idle_seconds: f64,
    /// How long the clients work, after the idle phase.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    pub seconds: f64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Each blob's size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1KiB")]
    pub size: u64,
    #[arg(long, value_enum, default_value_t = ModeArg::Inprocess)]
    pub mode: ModeArg,
    /// Vaults in one process share the slot outputs they checked, as
    /// vaults on machines of their own each check every output once (off:
    /// each checks its own, a cost that grows with the vaults on these
    /// cores; vault processes always check their own).
    #[arg(long, value_enum, value_name = "ON|OFF", default_value_t = Switch::On)]
    pub shared_slot_checks: Switch,
    #[command(flatten)]
    pub distance: DistanceArgs,
    /// Each vault closes connections unused for 30 s beyond this many, at
    /// least 12 (by default a vault stays connected to every peer it met).
    #[arg(long, value_name = "N")]
    pub max_peers: Option<usize>,
    /// Where the vaults' plots (kept for the next run) and stores go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-bench-network")]
    pub dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchNetworkArgs) -> Result<()> {
    // The vaults' own logs, in process, when asked for.
    if std::env::var_os("RUST_LOG").is_some() {
        crate::logs::init();
    }
    crate::cmd::node::check_max_peers(a.max_peers)?;
    if !(1..=1024).contains(&a.vaults) {
        anyhow::bail!("--vaults must be 1 to 1024");
    }
    if !(0.5..=3600.0).contains(&a.seconds) {
        anyhow::bail!("--seconds must be 0.5 to 3600");
    }
    if !(0.0..=3600.0).contains(&a.idle_seconds) {
        anyhow::bail!("--idle-seconds must be 0 to 3600");
    }
    if !(0.0..=3600.0).contains(&a.settle_seconds) {
        anyhow::bail!("--settle-seconds must be 0 to 3600");
    }
    let json = a.json;
    let options = options_of(a)?;
    if !json {
        errln!(
            "starting {} vaults with a k={} {} plot each, then {} clients for {} s ...",
            options.vaults,
            options.k,
            options.scheme.name(),
            options.clients,
            options.seconds
        );
    }
    let r = network::run(&options)?;
    if json {
        return crate::cmd::print_json(&r);
    }
    print_report(&options, &r)
}

fn options_of(a: BenchNetworkArgs) -> Result<NetworkBenchOptions> {
    let mode = a.mode.mode()?;
    Ok(NetworkBenchOptions {
        vaults: a.vaults,
        k: a.k,
        scheme: a.scheme.kind(),
        slot_ms: a.slot_ms,
        pot_iterations: a.pot_iterations,
        replication: a.replication,
        settle_seconds: a.settle_seconds,
        idle_seconds: a.idle_seconds,
        seconds: a.seconds,
        clients: a.clients,
        blob_bytes: a.size as usize,
        mode,
        shared_slot_checks: a.shared_slot_checks == Switch::On,
        distance: a.distance.distance()?,
        max_peers: a.max_peers,
        dir: a.dir,
    })
}

/// The benchmark's figures, a line each.
fn print_report(options: &NetworkBenchOptions, r: &network::NetworkBench) -> Result<()> {
    outln!("machine         {}", r.machine.describe());
    outln!(
        "network         {} vaults ({}), k={} plots, {} ms slots, {} copies a blob, {}",
        options.vaults,
        match (&options.mode, options.shared_slot_checks) {
            (Mode::InProcess, true) =>
                "one process, in-memory transport, slot outputs checked once for all",
            (Mode::InProcess, false) =>
                "one process, in-memory transport, every vault checking each slot's output",
            (Mode::Processes { .. }, _) => "one process each, loopback TCP",
        },
        options.k,
        options.slot_ms,
        options.replication,
        options.distance.name()
    );
    if let Some(max) = options.max_peers {
        outln!("connections     unused ones beyond {max} a vault closed");
    }
    outln!(
        "started         {:.2} s (every vault listening)",
        r.started_seconds
    );
    outln!(
        "joined          {:.2} s (every vault with a peer and a block; block 1 was due at {:.2} s)",
        r.joined_seconds,
        r.first_block_due_seconds
    );
    outln!(
        "heights         {} to {}; {} settled heights compared, {} disagreements, {} blocks some vault never imported",
        r.heights.0,
        r.heights.1,
        r.settled_heights,
        r.disagreements,
        r.blocks_missing_somewhere
    );
    outln!(
        "producers       {} blocks signed for {} heights ({}), {} changes of branch (deepest {})",
        r.chain.blocks_produced,
        r.chain.height,
        r.chain
            .blocks_a_height()
            .map(|b| format!("{b:.2} a height"))
            .unwrap_or_else(|| "no height".into()),
        r.chain.reorgs,
        r.chain.deepest_reorg
    );
    print_phases(r)?;
    let op = |name: &str, s: &OpStats| -> Result<()> {
        match &s.latency_ms {
            Some(l) => outln!(
                "{name:<15} {} ok, {} errors, {:.0}/s; latency p50 {:.2} ms, p99 {:.2} ms",
                s.ok,
                s.errors,
                s.per_second,
                l.median,
                l.p99
            ),
            None => outln!("{name:<15} {} ok, {} errors", s.ok, s.errors),
        }
        Ok(())
    };
    op("put", &r.put)?;
    op("get", &r.get)?;
    for (i, trips) in r.round_trips.iter().enumerate() {
        let head = if i == 0 { "round trips" } else { "" };
        outln!("{head:<15} {}", trips.describe());
    }
    Ok(())
}

/// Each phase's propagation and CPU, and the memory a vault.
fn print_phases(r: &network::NetworkBench) -> Result<()> {
    // Each phase on a line of its own: a block's time to reach every
    // vault, from its producer's import to the last vault's.
    let phases = [
        ("settling", &r.propagation_settling_ms, &r.settling),
        ("idle", &r.propagation_idle_ms, &r.idle),
        ("load", &r.propagation_load_ms, &r.load),
    ];
    for (i, (name, p, _)) in phases.iter().enumerate() {
        let head = if i == 0 { "propagation" } else { "" };
        match p {
            Some(p) => outln!(
                "{head:<15} {name:<9} p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} blocks)",
                p.median,
                p.p99,
                p.max,
                p.count
            ),
            None => outln!("{head:<15} {name:<9} no settled block reached every vault"),
        }
    }
    if let Some(m) = r.memory_per_vault_bytes {
        outln!("memory          {} a vault", format_size(m));
    }
    if let Some(p) = &r.peers_per_vault {
        outln!(
            "peers           {:.1} a vault (min {:.0}, max {:.0}) at the idle phase's end",
            p.mean,
            p.min,
            p.max
        );
    }
    for (i, (name, _, phase)) in phases.iter().enumerate() {
        let head = if i == 0 { "cpu" } else { "" };
        if let Some(c) = phase.cpu_ms_per_block {
            outln!(
                "{head:<15} {name:<9} {:.1} ms a block, all vaults together ({} blocks, {:.1} CPU-s in {:.1} s; {:.1} ms a vault a second)",
                c,
                phase.blocks,
                phase.cpu_seconds.unwrap_or(0.0),
                phase.seconds,
                phase.cpu_ms_per_vault_second.unwrap_or(0.0)
            );
        }
    }
    Ok(())
}
