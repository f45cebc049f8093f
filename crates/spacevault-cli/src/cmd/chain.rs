//! `spacevault chain init`: a new chain spec for a network of vaults.

use crate::cmd::plot::SchemeArg;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use spacevault_chain::{time, ChainSpec};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum ChainCommand {
    /// Write a new chain spec: every vault of one network runs with it.
    Init(InitArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Where to write the spec (JSON).
    #[arg(long, value_name = "SPEC")]
    pub out: PathBuf,
    /// The length of a slot: each has its own challenge from the proof of
    /// time.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub slot_ms: u64,
    /// Slots a block takes on average: the target follows the network's
    /// space to keep it so.
    #[arg(long, value_name = "SLOTS", default_value_t = spacevault_chain::spec::DEFAULT_BLOCK_INTERVAL_SLOTS)]
    pub block_interval_slots: u64,
    /// Records the network starts with (a plot of size k holds 2^k): the
    /// first target is set for them. Too many, and the first blocks are
    /// slow to come; too few, and they come fast; either way the target
    /// follows within a few eras.
    #[arg(long, value_name = "RECORDS", default_value_t = spacevault_chain::spec::DEFAULT_INITIAL_RECORDS)]
    pub initial_records: u64,
    /// Blocks below the head that no branch may replace.
    #[arg(long, value_name = "BLOCKS", default_value_t = 128)]
    pub finality_depth: u64,
    /// A name for the network.
    #[arg(long, default_value = "spacevault")]
    pub name: String,
    /// Vaults that keep each blob.
    #[arg(long, default_value_t = 4)]
    pub replication: u32,
    /// The proof-of-space schemes the chain takes blocks' proofs of: the
    /// plain one (kind 1), the hard one (kind 2, the table chain that
    /// resists trade-offs: docs/DESIGN.md), or both.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "plain")]
    pub schemes: Vec<SchemeArg>,
    /// The smallest plot a proof of each scheme may come from (the largest
    /// is the scheme's own: k = 40 plain, 32 hard).
    #[arg(long, value_name = "K", default_value_t = spacevault::MIN_K)]
    pub min_k: u8,
    /// Squarings of the proof of time a slot (default: what this machine
    /// evaluates and proves in 80% of a slot, measured now).
    #[arg(long, value_name = "N")]
    pub pot_iterations: Option<u64>,
    /// When the chain starts, in Unix milliseconds (default: now).
    #[arg(long, value_name = "MS")]
    pub genesis_ms: Option<u64>,
    /// Overwrite an existing spec.
    #[arg(long)]
    pub force: bool,
    /// Print the spec and its chain id as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: ChainCommand) -> Result<()> {
    match command {
        ChainCommand::Init(a) => init(a),
    }
}

fn init(a: InitArgs) -> Result<()> {
    if a.out.exists() && !a.force {
        bail!(
            "{} exists: a chain spec is the network's identity, pass --force to replace it",
            a.out.display()
        );
    }
    let mut spec = ChainSpec::new(
        &a.name,
        a.genesis_ms.unwrap_or_else(spacevault_node::now_ms),
        a.slot_ms,
    );
    spec.replication = a.replication;
    spec.proofs.clear();
    for scheme in &a.schemes {
        let kind = scheme.kind();
        spec.set_sizes(kind, a.min_k, (*kind.sizes().end()).max(a.min_k));
    }
    // One chain id for one set of rules, in whatever order they were named.
    spec.proofs.sort_by_key(|r| r.kind);
    spec.block_interval_slots = a.block_interval_slots;
    spec.initial_records = a.initial_records;
    spec.finality_depth = a.finality_depth;
    let measured = match a.pot_iterations {
        Some(n) => {
            spec.pot_iterations = n;
            None
        }
        None => {
            let rate = time::squarings_per_second(spec.pot_discriminant_bits, 300);
            spec.pot_iterations = time::proposed_iterations(rate, spec.slot_ms);
            Some(rate)
        }
    };
    spec.validate()?;
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&a.out, spec.to_json() + "\n")
        .with_context(|| format!("writing {}", a.out.display()))?;
    let chain_id = hex::encode(spec.chain_id());
    if a.json {
        crate::cmd::print_json(&serde_json::json!({
            "path": a.out,
            "chain_id": chain_id,
            "spec": spec,
        }))?;
    } else {
        outln!("{}", a.out.display());
        errln!(
            "chain id {chain_id}, {} ms slots, a block every {} slots on average, final {} blocks deep",
            spec.slot_ms,
            spec.block_interval_slots,
            spec.finality_depth
        );
        match measured {
            Some(rate) => errln!(
                "proof of time: {} squarings a slot (this machine does {:.0} a second: a timekeeper here evaluates and proves a slot in {:.0} ms; --pot-iterations sets another number)",
                spec.pot_iterations,
                rate,
                (spec.pot_iterations + time::proof_squarings(spec.pot_iterations)) as f64 / rate
                    * 1000.0
            ),
            None => errln!("proof of time: {} squarings a slot", spec.pot_iterations),
        }
    }
    Ok(())
}

/// Reads and checks a spec file.
pub fn read_spec(path: &std::path::Path) -> Result<ChainSpec> {
    // A spec is a few hundred bytes of JSON.
    let text = crate::input::read_text(path, "the chain spec", 64 << 10)?;
    ChainSpec::from_json(&text).with_context(|| format!("the chain spec {}", path.display()))
}
