//! `spacevault bench holders`: what taking every holder place of one
//! address costs, with places at keys and with registered, salted places.

use anyhow::Result;
use clap::Args;
use spacevault_bench::holders::{self, HolderOptions};

#[derive(Args, Debug)]
pub struct BenchHoldersArgs {
    /// Honest holders.
    #[arg(long, default_value_t = 256)]
    pub holders: usize,
    /// The attacker's registrations, each ground without a plot.
    #[arg(long, default_value_t = 256)]
    pub attacker: usize,
    /// Copies of each blob.
    #[arg(long, default_value_t = 4)]
    pub replication: usize,
    /// The chain's smallest plot size (the registration threshold's).
    #[arg(long, default_value_t = 16)]
    pub min_k: u8,
    /// Salts drawn after the registrations.
    #[arg(long, default_value_t = 4000)]
    pub salts: usize,
    /// Seeds keys, target and salts.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchHoldersArgs) -> Result<()> {
    if !(1..=1_000_000).contains(&a.holders) || a.attacker > 1_000_000 {
        anyhow::bail!("--holders must be 1 to 1000000 and --attacker at most 1000000");
    }
    if !(1..=64).contains(&a.replication) {
        anyhow::bail!("--replication must be 1 to 64");
    }
    let sizes = spacevault_chain::ProofKind::Plain.sizes();
    if !sizes.contains(&a.min_k) || a.min_k > 24 {
        anyhow::bail!(
            "--min-k must be {} to 24 (a registration without a plot takes 2^(k-2) hashes)",
            sizes.start()
        );
    }
    if !(1..=1_000_000).contains(&a.salts) {
        anyhow::bail!("--salts must be 1 to 1000000");
    }
    let options = HolderOptions {
        holders: a.holders,
        attacker: a.attacker,
        replication: a.replication,
        min_k: a.min_k,
        salts: a.salts,
        seed: a.seed,
    };
    if !a.json {
        errln!(
            "{} honest holders, {} registrations ground at min k = {} ...",
            a.holders,
            a.attacker,
            a.min_k
        );
    }
    let report = holders::run(&options);
    if a.json {
        return crate::cmd::print_json(&report);
    }
    outln!("{}", holders::table(&report).trim_end());
    Ok(())
}
