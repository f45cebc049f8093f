//! The engine on its own, without a network: eligibility and production,
//! fork choice by weight, targets from the chain's history and finality
//! here; what comes in from peers and clients in [`intake`].

use super::*;
use crate::farmer::{Farmer, Found};
use spacevault::plot::NoProgress;
use spacevault::PlotOptions;
use spacevault_chain::time::{SlotOutput, FORM_BYTES};
use spacevault_chain::Target;
use spacevault_meter::Op;

/// A spec whose first target admits every proof of a k = 16 plot (the best
/// of 65,536 records lies far below 2^60): production is tested for what
/// it does with an eligible proof, eligibility on its own.
fn spec() -> ChainSpec {
    let mut spec = ChainSpec::new("engine-test", 1_000_000, 1000);
    spec.set_sizes(spacevault_chain::ProofKind::Plain, 16, spacevault::MAX_K);
    spec.initial_records = 16;
    spec.block_interval_slots = 1;
    spec
}

/// Slots every test vault's line holds.
const SLOTS: u64 = 64;

/// The output tests give slot `slot` (the engine compares outputs with
/// those its store holds; the proof of time's checks are `Time`'s).
fn output(slot: u64) -> [u8; FORM_BYTES] {
    let mut out = [0u8; FORM_BYTES];
    out[..8].copy_from_slice(&slot.to_le_bytes());
    out
}

fn stamp(slot: u64) -> Stamp {
    Stamp {
        slot,
        output: output(slot),
    }
}

/// When slot `slot` is due: the time a vault imports its blocks at.
fn at(slot: u64) -> u64 {
    spec().slot_due_ms(slot)
}

/// Gives `engine`'s store the slots 1..=SLOTS, as its line would.
fn reach_slots(engine: &Engine) {
    for slot in 1..=SLOTS {
        keep_slot(engine, slot);
    }
}

/// Keeps `slot`'s test output on the line of eras 0 and 1 (one for every
/// branch).
fn keep_slot(engine: &Engine, slot: u64) {
    let out = SlotOutput {
        slot,
        line: early_line(engine, slot),
        output: output(slot),
        proof: [0; FORM_BYTES],
    };
    engine.store().put_slot(&out).unwrap();
}

/// The line of slot `slot` of era 0 or 1, which every branch shares.
fn early_line(engine: &Engine, slot: u64) -> [u8; 32] {
    let params = engine.spec().time();
    assert!(params.era_of(slot) <= 1);
    spacevault_chain::time::Branch::genesis(&engine.chain_id())
        .line_of_era(&engine.chain_id(), &params, params.era_of(slot), |l, s| {
            engine.store().output_on(l, s)
        })
        .unwrap()
        .expect("era 0's closing slot is kept")
}

/// A vault's key, a plot of it, and its engine.
struct Vault {
    key: Keypair,
    farmer: Farmer,
    engine: Engine,
    _dir: tempfile::TempDir,
}

fn vault(i: u8) -> Vault {
    vault_of(i, spec())
}

fn vault_of(i: u8, spec: ChainSpec) -> Vault {
    let vault = vault_without_slots(i, spec);
    reach_slots(&vault.engine);
    vault
}

/// A vault whose store holds no slot yet.
fn vault_without_slots(i: u8, spec: ChainSpec) -> Vault {
    let dir = tempfile::tempdir().unwrap();
    let key = Keypair::from_secret(&[i; 32]);
    let plots = dir.path().join("plots");
    std::fs::create_dir_all(&plots).unwrap();
    spacevault::plot(
        &PlotOptions::new(16, key.public(), [i; 32]),
        &plots,
        &NoProgress,
    )
    .unwrap();
    let engine = Engine::open(&dir.path().join("store.redb"), spec.clone()).unwrap();
    Vault {
        farmer: Farmer::open(&[plots], &key.public(), &spec),
        engine,
        key,
        _dir: dir,
    }
}

impl Vault {
    /// This vault's best proof for `slot`'s challenge.
    async fn found(&self, slot: u64) -> Found {
        let challenge = stamp(slot).challenge(&self.engine.chain_id());
        self.farmer.best(challenge).await.unwrap()
    }

    /// This vault's block on its head in `slot`, if its proof may make one.
    async fn produce(&mut self, slot: u64) -> Option<Block> {
        let found = self.found(slot).await;
        let key = self.key.clone();
        self.engine
            .produce(&key, stamp(slot), found.proof, &found.rank)
    }
}

/// A block on `parent` (and its chain) in `slot` by the farmer of `key`,
/// with its best proof for the slot's challenge and no transactions.
async fn child_of(parent: &Block, key: &Keypair, farmer: &Farmer, slot: u64) -> Block {
    let chain_id = parent.header.chain_id;
    let found = farmer.best(stamp(slot).challenge(&chain_id)).await.unwrap();
    Block::produce(
        key,
        chain_id,
        parent.header.height + 1,
        parent.hash(),
        stamp(slot),
        found.proof,
        vec![],
    )
}

/// Vaults 1 and 2's blocks on the genesis in slot 1, and whether vault
/// 1's proof is the better.
async fn rivals() -> (Vault, Vault, Block, Block, bool) {
    let mut a = vault(1);
    let mut b = vault(2);
    let block_a = a.produce(1).await.unwrap();
    let block_b = b.produce(1).await.unwrap();
    let a_better = a.found(1).await.rank.beats(&b.found(1).await.rank);
    (a, b, block_a, block_b, a_better)
}

#[tokio::test]
async fn every_eligible_vault_produces_and_all_settle_on_the_best_proof_of_each_slot() {
    let mut vaults: Vec<Vault> = (1..=4).map(vault).collect();
    for slot in 1..=5 {
        let mut blocks = Vec::new();
        for v in vaults.iter_mut() {
            blocks.push(v.produce(slot).await.expect("every proof is eligible here"));
        }
        for v in vaults.iter_mut() {
            for b in &blocks {
                let _ = v.engine.import(b.clone(), at(slot)).unwrap();
            }
        }
        let mut ranks = Vec::new();
        for v in &vaults {
            ranks.push((v.found(slot).await.rank, v.key.public()));
        }
        let best = ranks
            .iter()
            .copied()
            .reduce(|a, b| if b.0.beats(&a.0) { b } else { a })
            .unwrap();
        let heads: Vec<_> = vaults.iter().map(|v| v.engine.head()).collect();
        assert!(heads.iter().all(|h| h.hash == heads[0].hash), "one head");
        let head = vaults[0].engine.block_at(slot).unwrap().unwrap();
        assert_eq!(*head.header.proof.farmer_key(), best.1, "the best proof's");
        assert_eq!((heads[0].height, heads[0].slot), (slot, slot));
    }
    let e = &vaults[0].engine;
    assert_eq!(e.head().weight, 5 * spec().initial_target().weight());
    let heights = |n| e.recent(n).iter().map(|b| b.height).collect::<Vec<_>>();
    assert_eq!(heights(3), vec![5, 4, 3]);
    assert_eq!(heights(10), vec![5, 4, 3, 2, 1], "no more than the chain");
    assert_eq!(e.recent(1)[0].hash, hex::encode(e.head().hash));
    assert_eq!(e.recent(1)[0].timestamp_ms, at(5));
}

#[tokio::test]
async fn a_vault_signs_one_block_a_slot_and_only_with_its_own_key_after_the_heads_slot() {
    let mut a = vault(1);
    let block = a.produce(2).await.unwrap();
    assert_eq!(block.header.stamp, stamp(2));
    assert_eq!(a.engine.produced_slot(), 2);
    // Not again in that slot, even on another head, nor in an earlier one.
    assert_eq!(a.produce(2).await, None);
    assert_eq!(a.produce(1).await, None);
    a.engine.import(block.clone(), at(2)).unwrap();
    // Not in a slot the head has passed, whatever this vault produced.
    let mut b = vault(2);
    b.engine.import(block.clone(), at(2)).unwrap();
    let later = b.produce(4).await.unwrap();
    a.engine.import(later, at(4)).unwrap();
    assert_eq!(a.engine.head().slot, 4);
    assert!(!a.engine.may_produce(3, &a.found(3).await.rank));
    assert_eq!(a.produce(3).await, None);
    // Another farmer's proof is not this vault's to sign.
    let theirs = b.found(5).await;
    let key = a.key.clone();
    assert_eq!(
        a.engine.produce(&key, stamp(5), theirs.proof, &theirs.rank),
        None
    );
    assert!(a.produce(5).await.is_some());
}

#[tokio::test]
async fn a_better_proof_of_the_slot_the_head_was_made_in_still_makes_a_block_on_its_parent() {
    // Vaults 1..=3 ranked by their proofs for slot 1, best first.
    let mut ranked = Vec::new();
    for i in 1..=3u8 {
        let v = vault(i);
        let rank = v.found(1).await.rank;
        ranked.push((rank, i));
    }
    ranked.sort_by(|a, b| {
        if a.0.beats(&b.0) {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    });
    let [best, mid, worst] = [ranked[0].1, ranked[1].1, ranked[2].1];
    let mut worst_vault = vault(worst);
    let first = worst_vault.produce(1).await.unwrap();
    // The middle proof's vault hears the worst's block first, with a write
    // pending that applies on it: its own block goes on the genesis, in the
    // same slot, without the write, and wins.
    let mut mid_vault = vault(mid);
    mid_vault.engine.import(first.clone(), at(1)).unwrap();
    let owner = Keypair::from_secret(&[9; 32]);
    let tx = RegisterTx::signed(&owner, &spec().chain_id(), b"r", 1, b"v");
    assert!(mid_vault.engine.add_tx(tx).unwrap());
    let rival = mid_vault.produce(1).await.unwrap();
    assert_eq!(rival.header.parent, first.header.parent);
    assert!(rival.txs.is_empty());
    assert!(matches!(
        mid_vault.engine.import(rival.clone(), at(1)).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    // A vault whose proof loses to the head of the slot makes nothing.
    let mut late = vault(worst);
    late.engine.import(rival.clone(), at(1)).unwrap();
    assert!(!late.engine.may_produce(1, &late.found(1).await.rank));
    assert_eq!(late.produce(1).await, None);
    // The best beats it again.
    let mut best_vault = vault(best);
    best_vault.engine.import(rival, at(1)).unwrap();
    assert!(best_vault.produce(1).await.is_some());
}

#[tokio::test]
async fn a_proof_that_misses_the_target_makes_no_block_and_a_block_made_with_it_is_refused() {
    // A target no k = 16 plot's proof meets in most slots.
    let mut hard = spec();
    hard.initial_records = 1 << 40;
    let mut a = vault_of(1, hard.clone());
    let mut b = vault_of(2, hard);
    let mut slot = 1;
    while a.engine.may_produce(slot, &a.found(slot).await.rank) {
        slot += 1;
        assert!(slot <= SLOTS, "a slot where vault 1 is not eligible");
    }
    assert_eq!(a.produce(slot).await, None);
    let found = a.found(slot).await;
    let made = Block::produce(
        &a.key,
        b.engine.chain_id(),
        1,
        b.engine.head().hash,
        stamp(slot),
        found.proof,
        vec![],
    );
    assert_eq!(b.engine.import(made, at(slot)), Err(Rejection::NotEligible));
    assert_eq!(b.engine.head().height, 0);
}

#[tokio::test]
async fn a_block_is_refused_for_a_slot_not_reached_another_output_or_no_later_slot() {
    let mut a = vault(1);
    let mut b = vault(2);
    // Beyond the slots b's line holds (a's holds it).
    keep_slot(&a.engine, SLOTS + 1);
    let ahead = a.produce(SLOTS + 1).await;
    let ahead = ahead.unwrap();
    let missing = spacevault_chain::time::MissingSlot {
        line: early_line(&b.engine, SLOTS + 1),
        slot: SLOTS + 1,
    };
    assert_eq!(
        b.engine.import(ahead, at(SLOTS + 1)),
        Err(Rejection::UnknownSlot(missing))
    );
    // A slot b holds, with another output.
    let found = a.found(3).await;
    let mut wrong = stamp(3);
    wrong.output[50] ^= 1;
    let made = Block::produce(
        &a.key,
        spec().chain_id(),
        1,
        b.engine.head().hash,
        wrong,
        found.proof,
        vec![],
    );
    assert_eq!(
        b.engine.import(made, at(3)),
        Err(Rejection::WrongSlotOutput(3))
    );
    // A child in its parent's slot.
    let first = b.produce(5).await.unwrap();
    b.engine.import(first.clone(), at(5)).unwrap();
    let same = child_of(&first, &a.key, &a.farmer, 5).await;
    assert_eq!(
        b.engine.import(same, at(5)),
        Err(Rejection::SlotNotAfterParent {
            slot: 5,
            parent_slot: 5
        })
    );
}

#[tokio::test]
async fn a_write_both_branches_hold_does_not_go_back_to_the_pool() {
    let mut a = vault(1);
    let mut b = vault(2);
    let owner = Keypair::from_secret(&[9; 32]);
    let tx = RegisterTx::signed(&owner, &spec().chain_id(), b"r", 1, b"v");
    assert!(a.engine.add_tx(tx.clone()).unwrap());
    assert!(b.engine.add_tx(tx.clone()).unwrap());
    let block_a = a.produce(1).await.unwrap();
    let block_b = b.produce(1).await.unwrap();
    assert_eq!((&block_a.txs, &block_b.txs), (&vec![tx.clone()], &vec![tx]));
    let a_better = a.found(1).await.rank.beats(&b.found(1).await.rank);
    let (better, worse, worse_vault) = if a_better {
        (block_a, block_b, &mut b)
    } else {
        (block_b, block_a, &mut a)
    };
    let mut c = vault(3);
    c.engine.import(better, at(1)).unwrap();
    c.engine.import(worse.clone(), at(1)).unwrap();
    worse_vault.engine.import(worse.clone(), at(1)).unwrap();
    let child = child_of(&worse, &worse_vault.key.clone(), &worse_vault.farmer, 2).await;
    assert!(matches!(
        c.engine.import(child, at(2)).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    assert_eq!(c.engine.mempool_len(), 0, "the new branch holds the write");
}

#[tokio::test]
async fn two_blocks_for_one_height_settle_on_the_better_proof_in_any_order() {
    let (a, b, block_a, block_b, a_better) = rivals().await;
    let better = if a_better {
        block_a.hash()
    } else {
        block_b.hash()
    };
    let mut c = vault(3);
    let mut d = vault(4);
    for blk in [&block_a, &block_b] {
        c.engine.import(blk.clone(), at(1)).unwrap();
    }
    for blk in [&block_b, &block_a] {
        d.engine.import(blk.clone(), at(1)).unwrap();
    }
    assert_eq!(c.engine.head().hash, better);
    assert_eq!(d.engine.head().hash, better);
    // A heavier chain on the worse block wins over both.
    let (worse, worse_key, worse_farmer) = if better == block_a.hash() {
        (&block_b, b.key.clone(), &b.farmer)
    } else {
        (&block_a, a.key.clone(), &a.farmer)
    };
    let child = child_of(worse, &worse_key, worse_farmer, 2).await;
    assert!(matches!(
        c.engine.import(child.clone(), at(2)).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    assert_eq!(c.engine.head().hash, child.hash());
}

#[tokio::test]
async fn a_gossiped_block_beaten_by_the_canonical_sibling_is_refused_and_a_synced_one_kept() {
    let (_a, _b, block_a, block_b, a_better) = rivals().await;
    let (better, worse) = if a_better {
        (block_a, block_b)
    } else {
        (block_b, block_a)
    };
    let t = at(1);
    let mut c = vault(3);
    c.engine
        .import_gossiped(better.clone(), t, Origin::LOCAL)
        .unwrap();
    assert_eq!(
        c.engine.import_gossiped(worse.clone(), t, Origin::LOCAL),
        Err(Rejection::NotBetter),
        "the loser is refused"
    );
    assert!(matches!(
        c.engine.import_gossiped(better.clone(), t, Origin::LOCAL),
        Ok(Imported::Duplicate)
    ));
    // From a sync, the loser is kept (a branch may grow on it).
    assert!(matches!(
        c.engine.import(worse.clone(), t),
        Ok(Imported::Kept)
    ));
    // The other way round, the better block replaces the worse.
    let mut d = vault(4);
    d.engine.import_gossiped(worse, t, Origin::LOCAL).unwrap();
    d.engine
        .import_gossiped(better.clone(), t, Origin::LOCAL)
        .unwrap();
    assert_eq!(d.engine.head().hash, better.hash());
}

/// `v`'s chain of blocks in `slots`, each on the last, imported by `v`.
async fn chain_in(v: &mut Vault, slots: &[u64]) -> Vec<Block> {
    let mut blocks = Vec::new();
    for &slot in slots {
        let block = v.produce(slot).await.expect("eligible");
        v.engine.import(block.clone(), at(slot)).unwrap();
        blocks.push(block);
    }
    blocks
}

#[tokio::test]
async fn the_target_follows_the_eras_slots_and_the_heavier_chain_wins_not_the_longer() {
    // Eras of two blocks, one block a slot wanted.
    let mut quick = spec();
    quick.era_blocks = 2;
    let first = quick.initial_target();
    let mut a = vault_of(1, quick.clone());
    let mut b = vault_of(2, quick.clone());
    // a's first era on time: its target stays. b's took eight slots: four
    // times too slow, so its target is made four times easier (lighter).
    let a_blocks = chain_in(&mut a, &[1, 2, 3]).await;
    assert_eq!(a.engine.head().child_target, first);
    let b_blocks = chain_in(&mut b, &[1, 8, 9, 10]).await;
    let easier = Target(first.0 * 4);
    assert_eq!(b.engine.head().child_target, easier);
    assert_eq!(
        b.engine.head().weight,
        2 * first.weight() + 2 * easier.weight()
    );
    // b's four blocks weigh less than a's three: a vault that holds both
    // follows a's, in whichever order they come.
    let mut c = vault_of(3, quick.clone());
    for block in b_blocks.iter().chain(&a_blocks) {
        c.engine.import(block.clone(), at(10)).unwrap();
    }
    assert_eq!(c.engine.head().hash, a_blocks[2].hash());
    let mut d = vault_of(4, quick);
    for block in a_blocks.iter().chain(&b_blocks) {
        d.engine.import(block.clone(), at(10)).unwrap();
    }
    assert_eq!(d.engine.head().hash, a_blocks[2].hash());
    assert_eq!(d.engine.head().height, 3);
}

#[tokio::test]
async fn a_branch_from_below_the_finality_depth_is_refused_whatever_it_weighs() {
    let mut deep = spec();
    deep.finality_depth = 2;
    let mut a = vault_of(1, deep.clone());
    let mut b = vault_of(2, deep);
    let canonical = chain_in(&mut a, &[1, 2, 3, 4]).await;
    // b's branch from the genesis, heavier than a's chain: a refuses its
    // first block, for it leaves four blocks, two past the depth.
    let branch = chain_in(&mut b, &[5, 6, 7, 8, 9, 10]).await;
    assert_eq!(
        a.engine.import(branch[0].clone(), at(10)),
        Err(Rejection::BelowFinality {
            ancestor: 0,
            head: 4,
            depth: 2
        })
    );
    // A branch that leaves two blocks is taken, and wins when heavier.
    let fork = child_of(&canonical[1], &b.key, &b.farmer, 11).await;
    assert_eq!(a.engine.import(fork.clone(), at(11)), Ok(Imported::Kept));
    let mut tip = fork;
    for slot in 12..=13 {
        tip = child_of(&tip, &b.key, &b.farmer, slot).await;
        a.engine.import(tip.clone(), at(slot)).unwrap();
    }
    assert_eq!(a.engine.head().hash, tip.hash());
}

#[tokio::test]
async fn a_checkpoint_holds_a_vault_to_its_chain_whatever_weighs_more_or_was_final() {
    let mut deep = spec();
    deep.finality_depth = 2;
    let mut a = vault_of(1, deep.clone());
    let mut b = vault_of(2, deep.clone());
    // a's chain of six blocks outweighs b's of three, from the genesis.
    let heavy = chain_in(&mut a, &[1, 2, 3, 4, 5, 6]).await;
    let light = chain_in(&mut b, &[7, 8, 9]).await;
    let checkpoint = spacevault_chain::fork::Checkpoint {
        height: 2,
        hash: light[1].hash(),
    };
    // Given the checkpoint first: a's block at its height is refused, the
    // blocks above it wait for a parent that never comes, and b's chain
    // is followed once it reaches the checkpoint.
    let mut c = vault_of(3, deep.clone());
    c.engine.set_checkpoint(checkpoint);
    assert_eq!(
        c.engine.import(heavy[0].clone(), at(9)),
        Ok(Imported::NewHead { left: 0 })
    );
    assert_eq!(
        c.engine.import(heavy[1].clone(), at(9)),
        Err(Rejection::OffCheckpoint { height: 2 })
    );
    assert_eq!(
        c.engine.import(heavy[2].clone(), at(9)),
        Ok(Imported::Orphan)
    );
    assert_eq!(c.engine.import(light[0].clone(), at(9)), Ok(Imported::Kept));
    assert_eq!(
        c.engine.import(light[1].clone(), at(9)),
        Ok(Imported::NewHead { left: 1 })
    );
    c.engine.import(light[2].clone(), at(9)).unwrap();
    assert_eq!(c.engine.head().hash, light[2].hash());
    assert!(c.engine.holds_checkpoint().unwrap());
    // A vault that followed a's chain past the finality depth, restarted
    // with the checkpoint: finality no longer holds it there, and b's
    // lighter chain through the checkpoint replaces a's.
    let mut d = vault_of(4, deep);
    for block in &heavy {
        d.engine.import(block.clone(), at(9)).unwrap();
    }
    assert_eq!(
        d.engine.import(light[0].clone(), at(9)),
        Err(Rejection::BelowFinality {
            ancestor: 0,
            head: 6,
            depth: 2
        })
    );
    d.engine.set_checkpoint(checkpoint);
    assert!(!d.engine.holds_checkpoint().unwrap());
    assert_eq!(d.engine.import(light[0].clone(), at(9)), Ok(Imported::Kept));
    assert_eq!(
        d.engine.import(light[1].clone(), at(9)),
        Ok(Imported::NewHead { left: 6 })
    );
    // Once it holds the checkpoint, the heavier chain without it never
    // comes back, however it grows.
    let tip = child_of(&heavy[5], &a.key, &a.farmer, 10).await;
    assert_eq!(d.engine.import(tip, at(10)), Ok(Imported::Kept));
    assert_eq!(d.engine.head().hash, light[1].hash());
    // And finality holds again: b's chain grown by three blocks makes a
    // branch from the checkpoint leave three, past the depth.
    let mut grown = light[1].clone();
    for slot in 11..=13 {
        grown = child_of(&grown, &b.key, &b.farmer, slot).await;
        d.engine.import(grown.clone(), at(slot)).unwrap();
    }
    let fork = child_of(&light[1], &a.key, &a.farmer, 14).await;
    assert_eq!(
        d.engine.import(fork, at(14)),
        Err(Rejection::BelowFinality {
            ancestor: 2,
            head: 5,
            depth: 2
        })
    );
}

#[tokio::test]
async fn a_reopened_vault_never_produces_in_a_slot_its_line_had_reached() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let engine = Engine::open(&path, spec()).unwrap();
        reach_slots(&engine);
        engine.store().flush().unwrap();
    }
    let engine = Engine::open(&path, spec()).unwrap();
    let lost = UNFLUSHED_MS.div_ceil(spec().slot_ms) + 1;
    assert_eq!(engine.produced_slot(), SLOTS + lost);
}

/// An engine with no plots, for the caps.
mod intake;
mod lines;
