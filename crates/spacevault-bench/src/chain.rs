//! The chain's rules measured on their own (`spacevault bench chain`):
//! farmers of one plot each, some of them an attacker's, produce over
//! many slots under the real eligibility, targets and fork choice (each
//! view of the chain a real engine and store), with an ideal network:
//! every honest producer builds on the honest head and hears every block
//! at once. What a network adds (propagation, load) is `bench network`'s.
//!
//! Three runs share the same slots: everyone honest (blocks a slot against
//! the spec's interval, rivals, reorgs, the attacker's share), the attacker
//! withholding (Eyal and Sirer's selfish mining: it releases its blocks
//! when the honest chain comes within one of its own), and the attacker on
//! a private chain from the genesis (whether, and when, it ever weighed
//! more than the honest chain; released any later, finality refuses it
//! whatever it weighs). Beside them, the proof of time's speed and
//! what a slot costs a vault: its plot's lookup and the slot's check.

use crate::machine::Machine;
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::PlotFile;
use spacevault_chain::time::{SlotOutput, Timeline, FORM_BYTES};
use spacevault_chain::{Block, ChainProof, ChainSpec, Keypair, ProofKind, Ranked, Stamp};
use spacevault_node::engine::{Engine, Imported};
use spacevault_node::kit;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct ChainOptions {
    /// Farmers, one plot each.
    pub farmers: usize,
    /// Of them, the attacker's.
    pub attackers: usize,
    pub k: u8,
    pub slots: u64,
    pub block_interval_slots: u64,
    pub era_blocks: u64,
    /// The first target's records, as a multiple of the records the
    /// farmers hold: 1 is right, 4 a network that shrank to a quarter.
    pub initial_records_factor: f64,
    /// The proof of time's discriminant, for its measurements.
    pub discriminant_bits: u32,
    /// Where plots (kept for the next run) and stores go.
    pub dir: PathBuf,
}

impl Default for ChainOptions {
    fn default() -> ChainOptions {
        ChainOptions {
            farmers: 10,
            attackers: 3,
            k: 16,
            slots: 2000,
            block_interval_slots: 2,
            era_blocks: 32,
            initial_records_factor: 1.0,
            discriminant_bits: 1024,
            dir: PathBuf::from("spacevault-bench-chain"),
        }
    }
}

/// One farmer: its key and its plot.
pub struct Farmer {
    pub key: Keypair,
    pub plot: PlotFile,
    pub attacker: bool,
}

impl Farmer {
    /// Its proof for `slot`'s challenge, and the proof's rank.
    fn prove(&self, chain: &[u8; 32], slot: u64) -> Result<(ChainProof, Ranked), BenchError> {
        let challenge = stamp(slot).challenge(chain);
        let answer = self
            .plot
            .prove(&challenge)
            .map_err(|e| BenchError::Invalid(format!("a lookup failed: {e}")))?;
        let h = self.plot.header();
        let proof = ChainProof::plain(h.farmer_key, h.seed, h.k(), answer.nonce);
        let rank = proof
            .verify(&challenge)
            .map_err(|e| BenchError::Invalid(format!("a plot's own proof: {e}")))?;
        Ok((proof, rank))
    }
}

/// The farmers of `options`, their plots made under its directory the
/// first time (the vaults `bench network` and the tests use).
pub fn farmers(options: &ChainOptions) -> Result<Vec<Farmer>, BenchError> {
    (0..options.farmers)
        .map(|i| {
            let dir = kit::vault_plot(&options.dir, i, options.k)
                .map_err(|e| BenchError::Invalid(format!("plot of farmer {i}: {e}")))?;
            let file = std::fs::read_dir(&dir)
                .map_err(|e| BenchError::io(dir.display().to_string(), e))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "plot"))
                .ok_or_else(|| BenchError::Invalid(format!("no plot in {}", dir.display())))?;
            Ok(Farmer {
                key: kit::vault_key(i),
                plot: PlotFile::open(&file)?,
                attacker: i >= options.farmers - options.attackers,
            })
        })
        .collect()
}

/// The chain the runs share.
pub fn spec(options: &ChainOptions) -> ChainSpec {
    let mut spec = ChainSpec::new("bench-chain", 1_000_000, 1000);
    spec.set_sizes(
        ProofKind::Plain,
        options.k,
        spacevault::MAX_K.max(options.k),
    );
    let records = (options.farmers as f64) * ProofKind::Plain.records(options.k) as f64;
    spec.initial_records = ((records * options.initial_records_factor) as u64).max(1);
    spec.block_interval_slots = options.block_interval_slots;
    spec.era_blocks = options.era_blocks;
    // One era of the proof of time for the whole run: every view's slots
    // are on the chain's first line, whatever branch it follows (what is
    // measured is eligibility and fork choice, not the lines of slots).
    spec.pot_era_slots = options.slots.max(1);
    spec
}

/// The output every view's line holds for `slot` (the challenges need
/// only differ; the engine checks a block's stamp against its line).
pub fn stamp(slot: u64) -> Stamp {
    let mut output = [0; FORM_BYTES];
    output[..32].copy_from_slice(blake3::hash(&slot.to_le_bytes()).as_bytes());
    Stamp { slot, output }
}

/// Late enough that no block of a run is in the future.
const NOW: u64 = u64::MAX / 4;

/// A view of the chain: an engine whose line holds every slot of the run.
pub struct View {
    pub engine: Engine,
    /// Heads replaced, and the most blocks one replacement took off.
    pub reorgs: u64,
    pub deepest_reorg: u64,
}

impl View {
    pub fn open(dir: &Path, name: &str, spec: &ChainSpec, slots: u64) -> Result<View, BenchError> {
        let unable = |e: &dyn std::fmt::Display| BenchError::Invalid(format!("{name}: {e}"));
        let _ = std::fs::remove_file(dir.join(name));
        let engine = Engine::open(&dir.join(name), spec.clone()).map_err(|e| unable(&e))?;
        let line = spacevault_chain::time::first_line(&spec.chain_id());
        for slot in 1..=slots {
            let out = SlotOutput {
                slot,
                line,
                output: stamp(slot).output,
                proof: [0; FORM_BYTES],
            };
            engine.store().put_slot(&out).map_err(|e| unable(&e))?;
        }
        Ok(View {
            engine,
            reorgs: 0,
            deepest_reorg: 0,
        })
    }

    /// The blocks `farmers` make in `slot` on this view's head: one for
    /// each whose proof the head's child target admits.
    pub fn produce<'a>(
        &self,
        farmers: impl Iterator<Item = &'a Farmer>,
        slot: u64,
    ) -> Result<Vec<Block>, BenchError> {
        let head = self.engine.head();
        let chain = self.engine.chain_id();
        let mut blocks = Vec::new();
        for f in farmers {
            let (proof, rank) = f.prove(&chain, slot)?;
            if head.child_target.admits(&rank) {
                blocks.push(Block::produce(
                    &f.key,
                    chain,
                    head.height + 1,
                    head.hash,
                    stamp(slot),
                    proof,
                    vec![],
                ));
            }
        }
        Ok(blocks)
    }

    /// Imports `block` (and any that waited for it) as a sync would,
    /// counting reorgs; a refusal is returned.
    pub fn import(&mut self, block: &Block) -> Result<(), String> {
        for (_, outcome) in self.engine.import_with_orphans(block.clone(), NOW, false) {
            match outcome {
                Ok(Imported::NewHead { left }) if left > 0 => {
                    self.reorgs += 1;
                    self.deepest_reorg = self.deepest_reorg.max(left as u64);
                }
                Ok(_) => {}
                Err(why) => return Err(why.to_string()),
            }
        }
        Ok(())
    }

    /// The canonical chain's blocks, and how many are the attacker's.
    pub fn tally(&self, farmers: &[Farmer]) -> Result<(u64, u64), BenchError> {
        let attacker: Vec<[u8; 32]> = farmers
            .iter()
            .filter(|f| f.attacker)
            .map(|f| f.key.public())
            .collect();
        let height = self.engine.head().height;
        let mut ours = 0;
        for h in 1..=height {
            let block = self
                .engine
                .block_at(h)
                .map_err(|e| BenchError::Invalid(e.to_string()))?
                .ok_or_else(|| BenchError::Invalid(format!("no block at height {h}")))?;
            ours += u64::from(attacker.contains(block.header.proof.farmer_key()));
        }
        Ok((height, ours))
    }
}

fn imported(view: &mut View, block: &Block) -> Result<(), BenchError> {
    view.import(block)
        .map_err(|why| BenchError::Invalid(format!("a block was refused: {why}")))
}

/// A run's chain at its end.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub slots: u64,
    /// Canonical blocks.
    pub blocks: u64,
    pub blocks_per_slot: f64,
    /// Blocks signed, canonical or not.
    pub produced: u64,
    /// Heads replaced (as the honest view saw it), and the deepest.
    pub reorgs: u64,
    pub deepest_reorg: u64,
    pub attacker_blocks: u64,
    pub attacker_share: f64,
    /// Releases of withheld blocks, and those that took the head.
    pub races: u64,
    pub races_won: u64,
}

impl Run {
    fn of(
        view: &View,
        farmers: &[Farmer],
        slots: u64,
        produced: u64,
        races: (u64, u64),
    ) -> Result<Run, BenchError> {
        let (blocks, ours) = view.tally(farmers)?;
        Ok(Run {
            slots,
            blocks,
            blocks_per_slot: blocks as f64 / slots as f64,
            produced,
            reorgs: view.reorgs,
            deepest_reorg: view.deepest_reorg,
            attacker_blocks: ours,
            attacker_share: ours as f64 / blocks.max(1) as f64,
            races: races.0,
            races_won: races.1,
        })
    }
}

/// Everyone produces on the head as soon as eligible.
pub fn honest(options: &ChainOptions, farmers: &[Farmer]) -> Result<Run, BenchError> {
    let spec = spec(options);
    let mut view = View::open(&options.dir, "honest.redb", &spec, options.slots)?;
    let mut produced = 0;
    for slot in 1..=options.slots {
        for block in view.produce(farmers.iter(), slot)? {
            produced += 1;
            imported(&mut view, &block)?;
        }
    }
    Run::of(&view, farmers, options.slots, produced, (0, 0))
}

/// The attacker builds on its own view, keeps its blocks back, and
/// releases them all when an honest block brings the honest chain within
/// one block of its branch (a tie, which it hopes to win, or one behind,
/// which it wins).
pub fn selfish(options: &ChainOptions, farmers: &[Farmer]) -> Result<Run, BenchError> {
    let spec = spec(options);
    let mut public = View::open(&options.dir, "public.redb", &spec, options.slots)?;
    let mut private = View::open(&options.dir, "private.redb", &spec, options.slots)?;
    let mut withheld: Vec<Block> = Vec::new();
    let (mut produced, mut races, mut races_won) = (0, 0, 0);
    for slot in 1..=options.slots {
        let theirs = public.produce(farmers.iter().filter(|f| !f.attacker), slot)?;
        let mine = private.produce(farmers.iter().filter(|f| f.attacker), slot)?;
        produced += theirs.len() as u64;
        for block in &theirs {
            imported(&mut public, block)?;
            imported(&mut private, block)?;
        }
        // One block a slot, made on its head as the slot began.
        if let Some(block) = mine.into_iter().next() {
            produced += 1;
            imported(&mut private, &block)?;
            withheld.push(block);
        }
        // Its view follows the honest chain when that is heavier: what it
        // held back on a lighter branch is lost.
        let canonical = |view: &View, b: &Block| {
            view.engine
                .block_at(b.header.height)
                .ok()
                .flatten()
                .as_ref()
                == Some(b)
        };
        withheld.retain(|b| canonical(&private, b));
        if withheld.is_empty() {
            continue;
        }
        let lead = private
            .engine
            .head()
            .weight
            .saturating_sub(public.engine.head().weight);
        let one_block = private.engine.head().child_target.weight();
        if !theirs.is_empty() && lead <= one_block {
            races += 1;
            let before = public.engine.head().hash;
            for block in withheld.drain(..) {
                imported(&mut public, &block)?;
            }
            races_won += u64::from(public.engine.head().hash != before);
        }
    }
    Run::of(
        &public,
        farmers,
        options.slots,
        produced,
        (races, races_won),
    )
}

/// The attacker's private chain from the genesis against the honest one.
#[derive(Clone, Debug, Serialize)]
pub struct Private {
    pub honest_blocks: u64,
    pub private_blocks: u64,
    /// The private chain's weight over the honest chain's at the end.
    pub weight_ratio: f64,
    /// (slot, honest blocks) after each slot at whose end the private
    /// chain weighed more than an honest chain of at least one block:
    /// released then, it would have replaced that many.
    pub heavier_after: Vec<(u64, u64)>,
}

pub fn private(options: &ChainOptions, farmers: &[Farmer]) -> Result<Private, BenchError> {
    let spec = spec(options);
    let mut public = View::open(&options.dir, "public.redb", &spec, options.slots)?;
    let mut private = View::open(&options.dir, "private.redb", &spec, options.slots)?;
    let mut heavier_after = Vec::new();
    for slot in 1..=options.slots {
        let theirs = public.produce(farmers.iter().filter(|f| !f.attacker), slot)?;
        let mine = private.produce(farmers.iter().filter(|f| f.attacker), slot)?;
        for block in &theirs {
            imported(&mut public, block)?;
        }
        for block in &mine {
            imported(&mut private, block)?;
        }
        let (p, h) = (private.engine.head(), public.engine.head());
        if p.weight > h.weight && h.height > 0 {
            heavier_after.push((slot, h.height));
        }
    }
    let head = public.engine.head();
    let weight_ratio = private.engine.head().weight as f64 / head.weight.max(1) as f64;
    Ok(Private {
        honest_blocks: head.height,
        private_blocks: private.engine.head().height,
        weight_ratio,
        heavier_after,
    })
}

/// The proof of time on this machine, and what a slot costs a vault.
#[derive(Clone, Debug, Serialize)]
pub struct SlotCosts {
    pub discriminant_bits: u32,
    pub squarings_per_second: f64,
    /// A slot's check (as every vault does each slot), median of 20.
    pub check_ms: f64,
    /// A plot's lookup for a slot's challenge and its proof's check, the
    /// mean over the run's first 500 slots at most.
    pub lookup_ms: f64,
}

pub fn slot_costs(options: &ChainOptions, farmers: &[Farmer]) -> Result<SlotCosts, BenchError> {
    let bits = options.discriminant_bits;
    let squarings_per_second = spacevault_chain::time::squarings_per_second(bits, 1000);
    let mut params = spec(options).time();
    params.discriminant_bits = bits;
    params.iterations = 1000;
    let line =
        Timeline::new([7; 32], params, &[7; 32]).map_err(|e| BenchError::Invalid(e.to_string()))?;
    let out = line.prove_next();
    let mut checks = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let checked = line.verify_next(&out, None);
        checks.push(started.elapsed().as_secs_f64() * 1e3);
        if let Err(e) = checked {
            return Err(BenchError::Invalid(format!("a slot's own output: {e}")));
        }
    }
    let chain = spec(options).chain_id();
    let lookups = options.slots.min(500);
    let started = Instant::now();
    for slot in 1..=lookups {
        farmers[0].prove(&chain, slot)?;
    }
    Ok(SlotCosts {
        discriminant_bits: bits,
        squarings_per_second,
        check_ms: Summary::of(&checks).median,
        lookup_ms: started.elapsed().as_secs_f64() * 1e3 / lookups as f64,
    })
}

/// Everything `bench chain` measured.
#[derive(Clone, Debug, Serialize)]
pub struct ChainReport {
    pub machine: Machine,
    pub options: ChainOptions,
    /// Blocks a slot the spec wants: 1 / `block_interval_slots`.
    pub wanted_blocks_per_slot: f64,
    /// The attacker's share of the farmers' records.
    pub attacker_space: f64,
    pub honest: Run,
    pub selfish: Run,
    pub private: Private,
    pub slot_costs: SlotCosts,
}

/// Runs the three runs and the measurements.
pub fn run(options: &ChainOptions) -> Result<ChainReport, BenchError> {
    if options.farmers == 0 || options.attackers >= options.farmers || options.slots == 0 {
        return Err(BenchError::Invalid(
            "a chain benchmark needs farmers, fewer attackers than farmers, and slots".into(),
        ));
    }
    if options.block_interval_slots == 0 || options.era_blocks == 0 {
        return Err(BenchError::Invalid(
            "the block interval and the era are 1 or more".into(),
        ));
    }
    std::fs::create_dir_all(&options.dir)
        .map_err(|e| BenchError::io(options.dir.display().to_string(), e))?;
    let farmers = farmers(options)?;
    Ok(ChainReport {
        machine: Machine::this(),
        wanted_blocks_per_slot: 1.0 / options.block_interval_slots as f64,
        attacker_space: options.attackers as f64 / options.farmers as f64,
        honest: honest(options, &farmers)?,
        selfish: selfish(options, &farmers)?,
        private: private(options, &farmers)?,
        slot_costs: slot_costs(options, &farmers)?,
        options: options.clone(),
    })
}
