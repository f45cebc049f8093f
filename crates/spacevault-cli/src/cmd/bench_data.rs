//! `spacevault bench data`: clients' blobs and a file through a network of
//! vaults on this machine, what the audits cost, and how long copies take
//! to be made again after a holder vanishes.

use crate::size::parse_size;
use anyhow::{Context, Result};
use clap::Args;
use spacevault_bench::data::{self, DataBench, DataBenchOptions, Transfer};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchDataArgs {
    /// Vaults, each with a plot of its own, in this process.
    #[arg(long, default_value_t = 8)]
    pub vaults: usize,
    /// Plot size of every vault: 2^K records.
    #[arg(short = 'k', long = "k", value_name = "K", default_value_t = 18)]
    pub k: u8,
    /// Length of a slot.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub slot_ms: u64,
    /// Copies of each blob.
    #[arg(long, default_value_t = 4)]
    pub replication: u32,
    /// Clients putting blobs at once, then reading them back.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Each blob's size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1MiB")]
    pub size: u64,
    /// How long the clients put blobs.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    pub seconds: f64,
    /// A file put and read back after the blobs (0: none).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256MiB")]
    pub file_size: u64,
    /// How often each vault audits the other holders of its blobs (a vault
    /// does once a minute by default; more often here, so that a short run
    /// measures enough of them).
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub audit_interval_ms: u64,
    /// Blobs each vault audits a round.
    #[arg(long, default_value_t = 4)]
    pub audit_blobs: usize,
    /// How long a vanished holder's blobs may take to be back at R copies.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub recovery_limit: f64,
    /// Blocks an era: the clients begin once every vault is a holder the
    /// chain registered (0: at once, in the bootstrap era, every vault at
    /// its key).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub era_blocks: u64,
    /// Where plots (kept for later runs), stores and the file go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-bench-data")]
    pub dir: PathBuf,
    /// Where to draw the recovery chart (SVG): a vanished holder's blobs
    /// short of R copies, second by second.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchDataArgs) -> Result<()> {
    if std::env::var_os("RUST_LOG").is_some() {
        crate::logs::init();
    }
    if !(1..=256).contains(&a.vaults) {
        anyhow::bail!("--vaults must be 1 to 256");
    }
    if !(1..=1024).contains(&a.clients) {
        anyhow::bail!("--clients must be 1 to 1024");
    }
    if !(0.5..=3600.0).contains(&a.seconds) {
        anyhow::bail!("--seconds must be 0.5 to 3600");
    }
    if !(0.0..=3600.0).contains(&a.recovery_limit) {
        anyhow::bail!("--recovery-limit must be 0 to 3600");
    }
    let max_blob = spacevault_chain::ChainSpec::new("x", 0, 1000).max_blob_bytes as u64;
    if !(1..=max_blob).contains(&a.size) {
        anyhow::bail!("--size must be 1 byte to {max_blob} bytes (a chain's largest blob)");
    }
    if a.era_blocks > 10_000 {
        anyhow::bail!("--era-blocks must be 0 to 10000");
    }
    if a.audit_interval_ms == 0 || a.audit_interval_ms > 3_600_000 {
        anyhow::bail!("--audit-interval-ms must be 1 to 3600000");
    }
    let options = DataBenchOptions {
        vaults: a.vaults,
        k: a.k,
        slot_ms: a.slot_ms,
        replication: a.replication,
        clients: a.clients,
        blob_bytes: a.size as usize,
        seconds: a.seconds,
        file_bytes: a.file_size,
        audit_interval_ms: a.audit_interval_ms,
        audit_blobs: a.audit_blobs,
        recovery_limit_seconds: a.recovery_limit,
        era_blocks: a.era_blocks,
        dir: a.dir,
    };
    if !a.json {
        errln!(
            "{} vaults (k = {}, R = {}), {} clients putting {} B blobs for {} s, then a {} B file, then a vault vanishes ...",
            options.vaults,
            options.k,
            options.replication,
            options.clients,
            options.blob_bytes,
            options.seconds,
            options.file_bytes
        );
    }
    let report = data::run(&options)?;
    if let Some(path) = &a.chart {
        match spacevault_bench::data_chart::svg(&report) {
            Some(svg) => {
                std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))?
            }
            None => errln!("no chart: the run measured no recovery"),
        }
    }
    if a.json {
        return crate::cmd::print_json(&report);
    }
    print_report(&report)
}

fn mib(bytes: f64) -> f64 {
    bytes / (1u64 << 20) as f64
}

fn transfer(name: &str, t: &Transfer) -> Result<()> {
    let latency = t
        .latency_ms
        .map(|l| format!("; latency p50 {:.1} ms, p99 {:.1} ms", l.median, l.p99))
        .unwrap_or_default();
    outln!(
        "{name:<15} {:.1} MiB/s ({} ok, {} errors, {:.1} MiB in {:.2} s){latency}",
        t.mib_per_second,
        t.ok,
        t.errors,
        mib(t.bytes as f64),
        t.seconds
    );
    Ok(())
}

fn print_report(r: &DataBench) -> Result<()> {
    let o = &r.options;
    outln!("machine         {}", r.machine.describe());
    outln!(
        "limits          BLAKE3 {:.0} MiB/s on every core, disk writes {:.0} MiB/s",
        mib(r.limits.blake3_bytes_per_second),
        mib(r.limits.disk_write_bytes_per_second)
    );
    outln!(
        "network         {} vaults in one process (in-memory transport), k={} plots, {} ms slots, R = {}; joined in {:.1} s{}; clients began at height {} (holder era {})",
        o.vaults,
        o.k,
        o.slot_ms,
        o.replication,
        r.joined_seconds,
        r.registered_seconds
            .map(|s| format!(", every vault a registered holder at {s:.1} s"))
            .unwrap_or_default(),
        r.height,
        r.era
    );
    transfer("put blobs", &r.put)?;
    if let Some(c) = &r.copies {
        outln!(
            "copies          {:.2} a PUT on average (fewest {}), {:.1} MiB/s of copies written ({:.0}% of the disk's write speed)",
            c.mean,
            c.min,
            r.copies_mib_per_second,
            100.0 * r.copies_disk_share
        );
    }
    transfer("get blobs", &r.get)?;
    if let Some(f) = &r.file {
        outln!(
            "file            {:.1} MiB in {} blobs and {} manifests, fewest copies {}, read back {}",
            mib(f.bytes as f64),
            f.parts,
            f.manifests,
            f.copies,
            if f.equal { "equal" } else { "DIFFERENT" }
        );
        transfer("put file", &f.put)?;
        transfer("get file", &f.get)?;
    }
    let a = &r.audits;
    outln!(
        "audits          {:.0} asked ({:.0} passed), {:.0} answered with {:.1} KiB of slices",
        a.audits,
        a.passed,
        a.answers,
        a.answer_bytes / 1024.0
    );
    outln!(
        "audit cost      CPU {:.3} s proving + {:.3} s checking (re-reads apart){}; bandwidth {}",
        a.proof_seconds,
        a.check_seconds,
        a.cpu_share
            .map(|s| format!(" = {:.3}% of the process's", 100.0 * s))
            .unwrap_or_default(),
        a.bandwidth_share
            .map(|s| format!("{:.4}% of the blob bytes stored and served", 100.0 * s))
            .unwrap_or_else(|| "no blob bytes moved".into())
    );
    if let (Some(bytes), Some(cpu)) = (a.default_hourly_bytes, a.default_hourly_cpu_seconds) {
        outln!(
            "audits by default  a vault an hour: {:.1} KiB of answers, {:.2} s of CPU",
            bytes / 1024.0,
            cpu
        );
    }
    match &r.recovery {
        None => outln!("recovery        not measured (one vault, or no blob stored)"),
        Some(v) => {
            let short = &v.vanished[..v.vanished.len().min(16)];
            outln!(
                "recovery        vault {short}… vanished keeping {} blobs (fewest copies before: {})",
                v.blobs_it_kept,
                v.fewest_before
            );
            let seconds = |s: Option<f64>| {
                s.map(|s| format!("{s:.1} s"))
                    .unwrap_or_else(|| "not within the limit".into())
            };
            outln!(
                "                counted gone by every vault after {}; every blob back at {} copies after {}{}",
                seconds(v.forgotten_seconds),
                v.wanted,
                seconds(v.back_seconds),
                if v.short_at_end > 0 {
                    format!(" ({} still short)", v.short_at_end)
                } else {
                    String::new()
                }
            );
            if o.era_blocks > 0 {
                outln!(
                    "                challenged on the chain and out of its holders after {}",
                    seconds(v.evicted_seconds)
                );
            }
        }
    }
    Ok(())
}
