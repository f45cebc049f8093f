//! `spacevault bench chain`: the chain's rules against what the spec
//! wants, and an attacker's share of the blocks by what it tries.

use anyhow::Result;
use clap::Args;
use spacevault_bench::chain::{self, ChainOptions, ChainReport, Run};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchChainArgs {
    /// Farmers, one plot each.
    #[arg(long, default_value_t = 10)]
    pub farmers: usize,
    /// Of them, the attacker's (3 of 10: 30% of the space).
    #[arg(long, default_value_t = 3)]
    pub attackers: usize,
    /// Each farmer's plot size.
    #[arg(short = 'k', long = "k", default_value_t = 16)]
    pub k: u8,
    /// Slots each run lasts.
    #[arg(long, default_value_t = 2000)]
    pub slots: u64,
    /// The spec's slots a block on average.
    #[arg(long, default_value_t = 2)]
    pub block_interval_slots: u64,
    /// The spec's blocks an era (the target moves at each era's end).
    #[arg(long, default_value_t = 32)]
    pub era_blocks: u64,
    /// The first target's records as a multiple of the farmers' records:
    /// 4 makes the first target four times too easy (a network that lost
    /// three quarters of its space), and shows the eras bring it back.
    #[arg(long, default_value_t = 1.0)]
    pub initial_records_factor: f64,
    /// The proof of time's discriminant for its measurements.
    #[arg(long, default_value_t = 1024)]
    pub discriminant_bits: u32,
    /// Where the plots (kept for the next run) and the runs' stores go.
    #[arg(long, value_name = "DIR", default_value = "spacevault-bench-chain")]
    pub dir: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchChainArgs) -> Result<()> {
    if a.attackers >= a.farmers {
        anyhow::bail!("--attackers must be fewer than --farmers");
    }
    if !(1..=1_000_000).contains(&a.slots) {
        anyhow::bail!("--slots must be 1 to 1000000");
    }
    if !(a.initial_records_factor > 0.0 && a.initial_records_factor <= 1e6) {
        anyhow::bail!("--initial-records-factor must be above 0 and at most 1e6");
    }
    if !(512..=1024).contains(&a.discriminant_bits) || !a.discriminant_bits.is_multiple_of(8) {
        anyhow::bail!("--discriminant-bits must be 512 to 1024, whole bytes");
    }
    let options = ChainOptions {
        farmers: a.farmers,
        attackers: a.attackers,
        k: a.k,
        slots: a.slots,
        block_interval_slots: a.block_interval_slots,
        era_blocks: a.era_blocks,
        initial_records_factor: a.initial_records_factor,
        discriminant_bits: a.discriminant_bits,
        dir: a.dir,
    };
    if !a.json {
        errln!(
            "{} farmers of a k={} plot ({} the attacker's), {} slots a run, three runs ...",
            options.farmers,
            options.k,
            options.attackers,
            options.slots
        );
    }
    let r = chain::run(&options)?;
    if a.json {
        return crate::cmd::print_json(&r);
    }
    print_report(&r)
}

fn run_line(name: &str, run: &Run) -> Result<()> {
    outln!(
        "{name:<12} {:>7} {:>10.3} {:>9.2} {:>7} {:>8} {:>10.1}%{}",
        run.blocks,
        run.blocks_per_slot,
        run.produced as f64 / run.blocks.max(1) as f64,
        run.reorgs,
        run.deepest_reorg,
        run.attacker_share * 100.0,
        if run.races > 0 {
            format!(
                "  ({} of {} releases took the head)",
                run.races_won, run.races
            )
        } else {
            String::new()
        }
    );
    Ok(())
}

fn print_report(r: &ChainReport) -> Result<()> {
    outln!("machine      {}", r.machine.describe());
    outln!(
        "chain        a block every {} slots wanted ({:.3} a slot), eras of {} blocks, first target for {}x the farmers' records",
        r.options.block_interval_slots,
        r.wanted_blocks_per_slot,
        r.options.era_blocks,
        r.options.initial_records_factor
    );
    outln!(
        "attacker     {} of {} farmers: {:.0}% of the space",
        r.options.attackers,
        r.options.farmers,
        r.attacker_space * 100.0
    );
    outln!();
    outln!(
        "{:<12} {:>7} {:>10} {:>9} {:>7} {:>8} {:>11}",
        "run",
        "blocks",
        "a slot",
        "signed/b",
        "reorgs",
        "deepest",
        "attacker"
    );
    run_line("honest", &r.honest)?;
    run_line("withholding", &r.selfish)?;
    let p = &r.private;
    outln!(
        "{:<12} {:>7} blocks against {}: {:.2} of the honest chain's weight; heavier after {} slots (the honest chain then {} blocks long at most)",
        "private",
        p.private_blocks,
        p.honest_blocks,
        p.weight_ratio,
        p.heavier_after.len(),
        p.heavier_after.iter().map(|&(_, b)| b).max().unwrap_or(0)
    );
    outln!();
    let c = &r.slot_costs;
    outln!(
        "proof of time {} bits: {:.0} squarings/s on one core; a slot's check {:.2} ms",
        c.discriminant_bits,
        c.squarings_per_second,
        c.check_ms
    );
    outln!(
        "a slot, a vault: {:.3} ms for its plot's lookup, {:.2} ms for the check",
        c.lookup_ms,
        c.check_ms
    );
    Ok(())
}
