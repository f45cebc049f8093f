//! `spacevault bench attack`: the known attacks on both schemes, counted
//! in hashes, carried to k = 32 and held against the gate.

use anyhow::{Context, Result};
use clap::Args;
use spacevault_bench::attack::{self, AttackOptions, AttackReport, AttackRow};
use spacevault_bench::attack_chart;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchAttackArgs {
    /// Plot sizes measured (16 to 24).
    #[arg(
        short = 'k',
        long = "k",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "18,20,22"
    )]
    pub ks: Vec<u8>,
    /// Challenges each attack answers at each size.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub challenges: u32,
    /// Chain lengths of the rainbow tables tried on the plain scheme.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "32,128,512"
    )]
    pub rainbow_lengths: Vec<u32>,
    /// Rainbow tables the plain scheme's attacker holds.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub rainbow_tables: u32,
    /// Bits dropped from each entry of one level of a table-chain plot.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "4,8,12"
    )]
    pub grind_bits: Vec<u32>,
    /// Bits dropped from each entry of every level of a table-chain plot
    /// at once (each entry tried below the top must be ground back too).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "2,3,4,5"
    )]
    pub nested_bits: Vec<u32>,
    /// Bits dropped from each top entry of a table-chain plot by an
    /// attacker who also drops middle levels and recomputes them, the
    /// recomputed entries then costing nothing to grind against (at the
    /// largest size only; each bit doubles a row's time: at k = 22, 20
    /// bits took five minutes a row on two cores).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "12,16"
    )]
    pub combined_bits: Vec<u32>,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Where the plots are made (each deleted when its size is done).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Where attack.json and attack.svg (the trade-off chart) go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-bench-attack")]
    pub out: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchAttackArgs) -> Result<()> {
    let threads = match a.threads {
        Some(t) => {
            spacevault::plot::check_threads(t)
                .map_err(|e| anyhow::anyhow!("--threads {t}: {e}"))?;
            t
        }
        None => AttackOptions::default().threads,
    };
    let options = AttackOptions {
        ks: a.ks,
        challenges: a.challenges,
        rainbow_lengths: a.rainbow_lengths,
        rainbow_tables: a.rainbow_tables,
        grind_bits: a.grind_bits,
        nested_bits: a.nested_bits,
        combined_bits: a.combined_bits,
        threads,
        dir: a.dir,
    };
    let quiet = a.json;
    let report = attack::run(&options, &mut |what| {
        if !quiet {
            errln!("{what}");
        }
    })?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(a.out.join("attack.json"), json + "\n")
        .with_context(|| format!("writing {}", a.out.join("attack.json").display()))?;
    std::fs::write(a.out.join("attack.svg"), attack_chart::svg(&report))
        .with_context(|| format!("writing {}", a.out.join("attack.svg").display()))?;
    if a.json {
        return crate::cmd::print_json(&report);
    }
    print_report(&report)?;
    errln!(
        "wrote {} and {}",
        a.out.join("attack.json").display(),
        a.out.join("attack.svg").display()
    );
    Ok(())
}

fn hashes(h: Option<f64>) -> String {
    h.map_or("-".into(), |h| format!("{h:.2e}"))
}

fn print_row(r: &AttackRow) -> Result<()> {
    let saving = r.saving().map_or("all".into(), |s| format!("{s:.2}x"));
    let seconds = r
        .seconds_per_challenge
        .map_or("-".into(), |s| format!("{s:.4}"));
    outln!(
        "{:<6} {:<28} {:>3} {:>8} {:>8.1}% {:>10} {:>10} {:>10}",
        r.scheme,
        r.attack,
        r.k,
        saving,
        r.answered * 100.0,
        hashes(Some(r.hashes_median)),
        hashes(r.hashes_p90),
        seconds
    );
    Ok(())
}

fn print_report(r: &AttackReport) -> Result<()> {
    outln!("machine  {}", r.machine.describe());
    outln!(
        "hashes   {:.3e} a second on {} threads (the plotter's kernel)",
        r.hash_rate,
        r.options.threads
    );
    for size in &r.hard_sizes {
        let rebuilt = match (size.rebuilt_seconds, size.rebuilt_entries) {
            (Some(s), Some(n)) => {
                format!("; its {n} middle entries rebuilt from its id in {s:.2} s, all equal")
            }
            _ => String::new(),
        };
        outln!(
            "table chain k = {}: {}{} compact, as space is counted here{rebuilt}",
            size.k,
            size.file_bytes.map_or(String::new(), |b| format!(
                "file {}, ",
                crate::size::format_size(b)
            )),
            crate::size::format_size(size.compact_bytes as u64)
        );
    }
    outln!();
    outln!(
        "{:<6} {:<28} {:>3} {:>8} {:>9} {:>10} {:>10} {:>10}",
        "scheme",
        "attack",
        "k",
        "saves",
        "answered",
        "median",
        "90%",
        "s/chal"
    );
    for row in r.rows.iter().filter(|r| !r.extrapolated) {
        print_row(row)?;
    }
    outln!();
    outln!(
        "carried to k = {} (hashes that grow with the plot scaled from the largest k measured):",
        attack::TARGET_K
    );
    for row in r.rows.iter().filter(|r| r.extrapolated) {
        print_row(row)?;
    }
    outln!();
    outln!(
        "the trade-off at k = {}: the cheapest attack for each saving",
        attack::TARGET_K
    );
    for row in &r.frontier {
        print_row(row)?;
    }
    if let Some(f) = r.rainbow_fit {
        outln!(
            "plain, rainbow tables fitted: hashes = {:.3e} * saving^{:.2} (Hellman's trade-off: exponent 2)",
            f.coefficient,
            f.exponent
        );
    }
    outln!();
    outln!("the gate at k = {}: saving a factor of the space must cost more than its threshold in hashes a challenge", attack::TARGET_K);
    for g in &r.gate {
        outln!(
            "{:<6} {:>2}x  > {:.0e}: {:<5}  cheapest {} at {} hashes ({:.1} s of this machine's hashing)",
            g.scheme,
            g.factor,
            g.threshold,
            if g.passes { "pass" } else { "FAIL" },
            g.cheapest.as_deref().unwrap_or("none"),
            hashes(g.hashes),
            g.hashes.unwrap_or(0.0) / r.hash_rate
        );
    }
    Ok(())
}
