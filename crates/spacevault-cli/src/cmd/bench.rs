//! `spacevault bench`: plotting and lookup benchmarks.

use crate::progress::Bar;
use crate::size::{format_size, parse_size};
use anyhow::Result;
use clap::{Args, Subcommand};
use spacevault_bench::lookup::{self, LookupOptions};
use spacevault_bench::plot::{self as plot_bench, PlotBenchOptions};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Time one plot against this machine's hash and disk bounds.
    Plot(BenchPlotArgs),
    /// Lookup latency of a plot of either scheme, warm and cold, the whole
    /// proof's reads where they are more than the lookup, and verification.
    Lookup(BenchLookupArgs),
    /// Hash functions compared: BLAKE3, SHA-256, SHA-512, SHA3-256, BLAKE2b.
    Hash(super::hash::BenchHashArgs),
    /// A network of vaults on this machine: start-up, agreement, block
    /// propagation, memory and CPU per vault, clients' PUT and GET.
    Network(super::network::BenchNetworkArgs),
    /// The chain's rules on their own: blocks a slot against the spec's
    /// interval, rivals and reorgs, an attacker's share of the blocks
    /// producing honestly, withholding and on a private chain, and what
    /// the proof of time costs.
    Chain(super::bench_chain::BenchChainArgs),
    /// The known attacks on both schemes (rainbow tables, a plot rebuilt
    /// from nothing, levels and bits dropped), counted in hashes, carried
    /// to k = 32 and held against the trade-off gate; a table, JSON and a
    /// chart.
    Attack(super::bench_attack::BenchAttackArgs),
    /// What taking every holder place of one address costs: key pairs
    /// ground against places at keys, registrations ground and salts
    /// drawn against registered places.
    Holders(super::bench_holders::BenchHoldersArgs),
    /// Clients' data through a network of vaults: 1 MiB blobs and a file
    /// put and read back, what the audits cost, and the time back to R
    /// copies after a holder vanishes.
    Data(super::bench_data::BenchDataArgs),
    /// One process of a `bench hash --processes` run (internal).
    #[command(hide = true)]
    HashWorker(super::hash::HashWorkerArgs),
}

impl BenchCommand {
    /// Whether the benchmark was asked for JSON on stdout.
    pub fn json(&self) -> bool {
        match self {
            BenchCommand::Plot(a) => a.json,
            BenchCommand::Lookup(a) => a.json,
            BenchCommand::Hash(a) => a.json,
            BenchCommand::Network(a) => a.json,
            BenchCommand::Chain(a) => a.json,
            BenchCommand::Attack(a) => a.json,
            BenchCommand::Holders(a) => a.json,
            BenchCommand::Data(a) => a.json,
            BenchCommand::HashWorker(_) => false,
        }
    }
}

#[derive(Args, Debug)]
pub struct BenchPlotArgs {
    /// Plot size: 2^K records.
    #[arg(short = 'k', long = "k", value_name = "K", default_value_t = 26)]
    pub k: u8,
    /// Memory limit, e.g. 4GiB (default: half the machine's memory).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Sorting strategy.
    #[arg(long, value_enum, default_value_t = super::plot::StrategyArg::Auto)]
    pub strategy: super::plot::StrategyArg,
    /// Directory to plot into (and to measure the disk of).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Temp directory for plots larger than --memory (default: --dir).
    #[arg(long, value_name = "DIR")]
    pub tmp: Option<PathBuf>,
    /// Keep the plot instead of deleting it.
    #[arg(long)]
    pub keep: bool,
    /// Bytes written to measure the disk's sequential speed (default: a
    /// quarter of the plot's size, at least 1GiB and at most 4GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub disk_bytes: Option<u64>,
    /// Repeat the whole benchmark (bounds and plot) N times and report the
    /// spread of each figure.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Keep the plotter's memory from run to run, as `plot --count` does:
    /// the runs after the first reuse its sort buffers.
    #[arg(long)]
    pub reuse_memory: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchLookupArgs {
    /// The plot file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Number of random challenges.
    #[arg(short = 'n', value_name = "N", default_value_t = 1000)]
    pub n: usize,
    /// Also measure cold lookups (page cache dropped where allowed, O_DIRECT reads).
    #[arg(long)]
    pub cold: bool,
    /// Seed for the challenges.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Plot(a) => bench_plot(a),
        BenchCommand::Lookup(a) => bench_lookup(a),
        BenchCommand::Hash(a) => super::hash::run(a),
        BenchCommand::Network(a) => super::network::run(a),
        BenchCommand::Chain(a) => super::bench_chain::run(a),
        BenchCommand::Attack(a) => super::bench_attack::run(a),
        BenchCommand::Holders(a) => super::bench_holders::run(a),
        BenchCommand::Data(a) => super::bench_data::run(a),
        BenchCommand::HashWorker(a) => super::hash::worker(a),
    }
}

fn bench_plot(a: BenchPlotArgs) -> Result<()> {
    for dir in std::iter::once(&a.dir).chain(a.tmp.iter()) {
        super::plot::create_output_dir(dir)?;
    }
    let args = super::plot::PlotArgs {
        scheme: super::plot::SchemeArg::Plain,
        k: a.k,
        out: vec![a.dir.clone()],
        tmp: a.tmp.clone(),
        memory: a.memory,
        threads: a.threads,
        count: 1,
        farmer_key: Some("00".repeat(32)),
        seed: None,
        force: false,
        strategy: a.strategy,
        overlap: super::plot::OverlapArg::Never,
        json: a.json,
    };
    let plot = super::plot::options_from(&args)?;
    if !a.json {
        let times = match a.runs {
            1 => String::new(),
            n => format!(", {n} times"),
        };
        errln!(
            "measuring this machine's hash rate and disk speed, then plotting k={}{times} ...",
            a.k
        );
    }
    let bar = Bar::new("[bench]".into(), a.json);
    let options = PlotBenchOptions {
        plot,
        dir: a.dir,
        keep: a.keep,
        hash_seconds: 2.0,
        disk_bytes: a
            .disk_bytes
            .unwrap_or_else(|| plot_bench::default_disk_bytes(a.k)),
        reuse_memory: a.reuse_memory,
    };
    let runs = a.runs as usize;
    let repeated = plot_bench::run_repeated(&options, runs, &bar, |i| {
        if runs > 1 {
            bar.set_prefix(format!("[bench {}/{runs}]", i + 1));
        }
    });
    bar.finish();
    let mut repeated = repeated?;
    if runs > 1 {
        if a.json {
            return super::print_json(&repeated);
        }
        return print_repeated(&repeated);
    }
    let r = repeated.runs.pop().expect("one run");
    if a.json {
        return super::print_json(&r);
    }
    print_plot_bench(r)
}

/// The spread of `bench plot --runs N`: what every run shares, a line a
/// run, then the least, median and greatest of each figure.
fn print_repeated(repeated: &plot_bench::Repeated) -> Result<()> {
    let first = &repeated.runs[0];
    outln!("machine         {}", first.machine.describe());
    outln!(
        "plot            k={} ({} records), {} strategy, {} threads, memory limit {}, {} runs{}",
        first.k,
        first.records,
        first.strategy,
        first.threads,
        format_size(first.memory_limit),
        repeated.runs.len(),
        if repeated.reuse_memory {
            ", memory kept from run to run"
        } else {
            ", each in fresh memory"
        }
    );
    outln!("plan            {}", first.plan.describe());
    outln!(
        "file            {} ({:.3} bits a record)",
        format_size(first.file_bytes),
        first.file_bytes as f64 * 8.0 / first.records as f64
    );
    outln!();
    outln!(
        "{:>3}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {:>9}  {:>9}  {:>12}  {:>12}  phases (s)",
        "run",
        "wall s",
        "M rec/s",
        "b3 ratio",
        "hash ratio",
        "design s",
        "x design",
        "x +touch",
        "disk w MB/s",
        "plot w MB/s"
    );
    for (i, r) in repeated.runs.iter().enumerate() {
        let phases: Vec<String> = r.phases.iter().map(|(_, s)| format!("{s:.2}")).collect();
        outln!(
            "{:>3}  {:>8.3}  {:>10.1}  {:>10.3}  {:>10.3}  {:>10}  {:>9.3}  {:>9.3}  {:>12.0}  {:>12.0}  {}",
            i + 1,
            r.wall_seconds,
            r.records_per_second / 1e6,
            r.ratio_to_blake3_bound,
            r.ratio_to_hash_bound,
            format!(
                "{:.3}{}",
                r.design_bound_seconds,
                if r.design_io_capped_by_plot { "*" } else { " " }
            ),
            r.wall_over_design_bound,
            r.wall_over_design_bound_with_first_touch,
            r.bounds.disk.write_bytes_per_second / 1e6,
            r.file_write_bytes_per_second / 1e6,
            phases.join(" / ")
        );
    }
    if repeated.runs.iter().any(|r| r.design_io_capped_by_plot) {
        outln!("  * the disk measured slower than the plot's own I/O then ran: the bound takes the plot's phase for that I/O");
    }
    outln!();
    print_spread("all runs", &repeated.summary)?;
    if let Some(reused) = &repeated.reused_summary {
        outln!();
        print_spread(
            &format!("runs 2 to {}, memory reused", repeated.runs.len()),
            reused,
        )?;
    }
    for r in &repeated.runs {
        if let Some(p) = &r.path {
            outln!("kept            {}", p.display());
        }
    }
    Ok(())
}

/// Least, median and greatest of each figure that moves from run to run.
fn print_spread(title: &str, s: &plot_bench::RepeatedSummary) -> Result<()> {
    outln!(
        "{title:<34}  {:>10}  {:>10}  {:>10}",
        "min",
        "median",
        "max"
    );
    let row = |name: &str, x: &spacevault_bench::stats::Summary, scale: f64| -> Result<()> {
        outln!(
            "{name:<34}  {:>10.3}  {:>10.3}  {:>10.3}",
            x.min / scale,
            x.median / scale,
            x.max / scale
        );
        Ok(())
    };
    row("wall (s)", &s.wall_seconds, 1.0)?;
    row("records/s (M)", &s.records_per_second, 1e6)?;
    row("ratio to BLAKE3 bound", &s.ratio_to_blake3_bound, 1.0)?;
    row("hash bound (s)", &s.hash_bound_seconds, 1.0)?;
    row("ratio to hash bound", &s.ratio_to_hash_bound, 1.0)?;
    row("design bound (s)", &s.design_bound_seconds, 1.0)?;
    row("wall / design bound", &s.wall_over_design_bound, 1.0)?;
    row(
        "wall / design bound + first touch",
        &s.wall_over_design_bound_with_first_touch,
        1.0,
    )?;
    row("disk write (MB/s)", &s.disk_write_bytes_per_second, 1e6)?;
    row("plot's writes (MB/s)", &s.file_write_bytes_per_second, 1e6)?;
    Ok(())
}

fn print_plot_bench(r: plot_bench::PlotBench) -> Result<()> {
    outln!("machine         {}", r.machine.describe());
    outln!(
        "plot            k={} ({} records), {} strategy, {} threads, memory limit {}",
        r.k,
        r.records,
        r.strategy,
        r.threads,
        format_size(r.memory_limit)
    );
    outln!("plan            {}", r.plan.describe());
    outln!(
        "file            {} ({:.3} bits a record)",
        format_size(r.file_bytes),
        r.file_bytes as f64 * 8.0 / r.records as f64
    );
    outln!("wall            {:.3} s", r.wall_seconds);
    outln!("records/s       {:.1} M", r.records_per_second / 1e6);
    let phases: Vec<String> = r
        .phases
        .iter()
        .map(|(n, s)| format!("{n} {s:.3} s"))
        .collect();
    outln!("phases          {}", phases.join(", "));
    outln!("file MB/s       {:.0}", r.file_mb_per_second);
    let last_phase = r.phases.last().map_or(0.0, |p| p.1);
    outln!(
        "plot writes     {:.0} MB/s: {:.3} s in the plot file's write calls, {:.0}% of the last phase's {:.3} s",
        r.file_write_bytes_per_second / 1e6,
        r.file_write_seconds,
        100.0 * r.file_write_seconds / last_phase.max(1e-9),
        last_phase
    );
    outln!(
        "last phase CPU  {:.3} s, the cores {:.0}% busy",
        r.last_phase_cpu_seconds,
        100.0 * r.last_phase_cores_busy
    );
    if let Some(io) = r.io {
        outln!(
            "disk I/O        {} written ({:.2} per plot byte), {} read ({:.2} per plot byte), {} cancelled",
            format_size(io.write_bytes),
            r.bytes_written_per_plot_byte.unwrap_or(0.0),
            format_size(io.read_bytes),
            r.bytes_read_per_plot_byte.unwrap_or(0.0),
            format_size(io.cancelled_write_bytes)
        );
    }
    if r.rounds > 0 {
        outln!(
            "temp written    {} ({} of {} rounds; {} kept in memory)",
            format_size(r.temp_bytes_written),
            r.rounds - r.rounds_in_memory,
            r.rounds,
            r.rounds_in_memory
        );
        outln!(
            "temp closed     {:.3} s after the plot was done (its blocks freed; not in the wall, and overlapped by the next plot of a --count run)",
            r.temp_close_seconds
        );
    } else {
        outln!("temp written    {}", format_size(r.temp_bytes_written));
    }
    match r.peak_rss_bytes {
        Some(p) => outln!("peak RSS        {}", format_size(p)),
        None => outln!("peak RSS        (not measurable here)"),
    }
    if r.peak_huge_page_pool_bytes > 0 {
        outln!(
            "huge page pool  {} at most, besides the RSS (the kernel does not count it there)",
            format_size(r.peak_huge_page_pool_bytes)
        );
    }
    print_bounds(&r)?;
    print_ratios(&r)?;
    if let Some(p) = r.path {
        outln!("kept            {}", p.display());
    }
    Ok(())
}

/// What this machine allows a plot: hashing, disks, fresh memory.
fn print_bounds(r: &plot_bench::PlotBench) -> Result<()> {
    let b = &r.bounds;
    outln!(
        "machine bounds  BLAKE3 hash_many {:.1} M records/s, spacevault kernel {:.1} M records/s ({}), disk write {:.0} MB/s, read {:.0} MB/s{}",
        b.blake3_records_per_second / 1e6,
        b.hash_records_per_second / 1e6,
        b.kernel_backend,
        b.disk.write_bytes_per_second / 1e6,
        b.disk.read_bytes_per_second / 1e6,
        if b.disk.direct {
            " (O_DIRECT)"
        } else {
            " (buffered)"
        }
    );
    if let Some(t) = b.temp_disk {
        outln!(
            "temp disk       write {:.0} MB/s, read {:.0} MB/s",
            t.write_bytes_per_second / 1e6,
            t.read_bytes_per_second / 1e6
        );
    }
    if let Some(c) = b.concurrent {
        outln!(
            "read + write    {:.0} MB/s read from the temp directory while writing {:.0} MB/s to the plot's, both at once",
            c.read_bytes_per_second / 1e6,
            c.write_bytes_per_second / 1e6
        );
    }
    if let Some(rate) = b.fresh_memory_bytes_per_second {
        outln!(
            "fresh memory    {:.2} GB/s: the plot brought its new sort buffers into use on {} threads in {:.3} s before hashing (kernel zeroing, and on a VM the host backing them)",
            rate / 1e9,
            r.threads,
            r.first_touch_seconds
        );
    }
    Ok(())
}

/// The wall against each bound.
fn print_ratios(r: &plot_bench::PlotBench) -> Result<()> {
    outln!(
        "BLAKE3 bound    {:.3} s   ratio {:.2}  (hashing every record with the blake3 crate's hash_many / wall)",
        r.blake3_bound_seconds, r.ratio_to_blake3_bound
    );
    outln!(
        "hash bound      {:.3} s   ratio {:.2}  (hashing only what a plot needs with spacevault's kernel / wall)",
        r.hash_bound_seconds, r.ratio_to_hash_bound
    );
    outln!(
        "design bound    {:.3} s   wall is {:.2}x the bound of this strategy (hashing and its I/O){}",
        r.design_bound_seconds,
        r.wall_over_design_bound,
        if r.design_io_capped_by_plot {
            "; the disk measured slower than the plot's own I/O ran, so the bound takes the plot's phase for it"
        } else {
            ""
        }
    );
    if r.first_touch_seconds > 0.0 {
        outln!(
            "+ first touch   {:.3} s   wall is {:.2}x (adds the plot's {:.3} s of bringing memory into use, which takes the hashing cores)",
            r.design_bound_with_first_touch_seconds,
            r.wall_over_design_bound_with_first_touch,
            r.first_touch_seconds
        );
        // Only where a pool would be used and none is reserved, and where
        // fresh memory took enough of the wall for a pool to pay.
        let no_pool = r.machine.huge_page_pool_bytes.unwrap_or(0) == 0;
        if no_pool
            && spacevault::aligned::pool_allowed()
            && r.first_touch_seconds > 0.1 * r.wall_seconds
        {
            outln!(
                "note            {:.0}% of the wall went to bringing fresh memory into use: a huge page pool would save that in every process after its first (README, \"A huge page pool\")",
                100.0 * r.first_touch_seconds / r.wall_seconds
            );
        }
    }
    Ok(())
}

fn bench_lookup(a: BenchLookupArgs) -> Result<()> {
    let r = lookup::run(&LookupOptions {
        path: a.path,
        lookups: a.n,
        cold: a.cold,
        seed: a.seed,
    })?;
    if a.json {
        return super::print_json(&r);
    }
    outln!("machine     {}", r.machine.describe());
    outln!(
        "plot        {} ({} scheme, k={}), {} random challenges",
        r.path.display(),
        r.scheme,
        r.k,
        r.lookups
    );
    outln!(
        "{:<12}{:>10}{:>10}{:>10}{:>10}{:>14}",
        "",
        "min us",
        "median",
        "p99",
        "max",
        "reads/lookup"
    );
    let row =
        |name: &str, s: &spacevault_bench::stats::Summary, reads: Option<f64>| -> Result<()> {
            outln!(
                "{:<12}{:>10.2}{:>10.2}{:>10.2}{:>10.2}{:>14}",
                name,
                s.min,
                s.median,
                s.p99,
                s.max,
                reads.map_or(String::new(), |r| format!("{r:.2}"))
            );
            Ok(())
        };
    row("warm", &r.warm.micros, Some(r.warm.reads_per_lookup))?;
    if let Some(p) = &r.warm.proof_micros {
        row("warm proof", p, r.warm.reads_per_proof)?;
    }
    if let Some(c) = &r.cold {
        row("cold", &c.micros, Some(c.reads_per_lookup))?;
        if let Some(p) = &c.proof_micros {
            row("cold proof", p, c.reads_per_proof)?;
        }
    }
    if let Some(rr) = &r.random_read_4k_micros {
        row("4KiB read", rr, None)?;
    }
    row("verify", &r.verify_micros, None)?;
    if let Some(n) = &r.cold_note {
        outln!("cold: {n}");
    }
    if let Some(x) = r.cold_over_random_read {
        outln!("cold median is {x:.2}x the disk's 4 KiB random read median");
    }
    Ok(())
}
