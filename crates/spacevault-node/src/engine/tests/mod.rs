//! The engine on its own, without a network: election, production,
//! contests and fork choice here; what comes in from peers and clients in
//! [`intake`].

use super::*;
use crate::farmer::Farmer;
use spacevault::plot::NoProgress;
use spacevault::PlotOptions;
use spacevault_meter::Op;

fn spec() -> ChainSpec {
    let mut spec = ChainSpec::new("engine-test", 1_000_000, 1000);
    spec.min_k = 16;
    spec
}

/// A vault's key, a plot of it, and its engine.
struct Vault {
    key: Keypair,
    farmer: Farmer,
    engine: Engine,
    _dir: tempfile::TempDir,
}

fn vault(i: u8) -> Vault {
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
    Vault {
        farmer: Farmer::open(&[plots], &key.public(), &spec()),
        engine: Engine::open(&dir.path().join("store.redb"), spec()).unwrap(),
        key,
        _dir: dir,
    }
}

/// A block on `parent` by the farmer of `key`, with its best proof for
/// the parent's child challenge and no transactions.
async fn child_of(parent: &Block, key: &Keypair, farmer: &Farmer, at: u64) -> Block {
    let height = parent.header.height + 1;
    let challenge =
        spacevault_chain::challenge(&spec().chain_id(), height, &parent.header.proof.hash());
    let found = farmer.best(challenge).await.unwrap();
    Block::produce(
        key,
        spec().chain_id(),
        height,
        parent.hash(),
        at,
        found.proof,
        vec![],
    )
}

/// Every vault looks up its proof and hears everyone else's; the best one
/// produces, and every vault imports its block.
/// Vaults 1 and 2, each holding its own best proof for block 1, and
/// whether vault 1's is the better.
async fn rivals() -> (Vault, Vault, bool) {
    let mut a = vault(1);
    let mut b = vault(2);
    let (height, parent, challenge) = a.engine.election();
    let fa = a.farmer.best(challenge).await.unwrap();
    let fb = b.farmer.best(challenge).await.unwrap();
    a.engine.offer_own(height, parent, fa.proof, fa.rank, 0.0);
    b.engine.offer_own(height, parent, fb.proof, fb.rank, 0.0);
    (a, b, fa.rank.beats(&fb.rank))
}

/// Returns the block and the farmer key of the best proof any vault held.
async fn round(vaults: &mut [Vault]) -> (Block, [u8; 32]) {
    let (height, parent, challenge) = vaults[0].engine.election();
    let mut msgs = Vec::new();
    let mut best: Option<(Ranked, [u8; 32])> = None;
    for v in vaults.iter_mut() {
        let found = v.farmer.best(challenge).await.unwrap();
        if best.is_none_or(|(b, _)| found.rank.beats(&b)) {
            best = Some((found.rank, v.key.public()));
        }
        if let Some(msg) = v
            .engine
            .offer_own(height, parent, found.proof, found.rank, 0.0)
        {
            msgs.push(msg);
        }
    }
    for v in vaults.iter_mut() {
        for m in &msgs {
            let _ = v.engine.offer_proof(m);
        }
    }
    // The holder of the best proof is due first.
    let soonest = vaults
        .iter()
        .filter_map(|v| v.engine.production_due())
        .min();
    let first = vaults
        .iter()
        .position(|v| v.engine.production_due() == soonest)
        .unwrap();
    let due = vaults[first].engine.production_due().unwrap();
    let block = vaults[first]
        .engine
        .produce(&vaults[first].key.clone(), due, false)
        .unwrap();
    for v in vaults.iter_mut() {
        let got = v.engine.import(block.clone(), due).unwrap();
        assert!(matches!(
            got,
            Imported::NewHead { .. } | Imported::Duplicate
        ));
    }
    (block, best.unwrap().1)
}

#[tokio::test]
async fn vaults_elect_the_best_proof_and_agree() {
    let mut vaults: Vec<Vault> = (1..=4).map(vault).collect();
    let mut producers = std::collections::HashSet::new();
    for _ in 0..5 {
        let (block, best) = round(&mut vaults).await;
        assert_eq!(
            block.header.proof.farmer_key, best,
            "the best proof's holder produced"
        );
        producers.insert(best);
        let heads: Vec<_> = vaults.iter().map(|v| v.engine.head().hash).collect();
        assert!(heads.iter().all(|h| *h == heads[0]));
        assert_eq!(heads[0], block.hash());
        // The next election is for the next height, on the new head.
        let (height, parent, _) = vaults[0].engine.election();
        assert_eq!((height, parent), (block.header.height + 1, block.hash()));
    }
    let e = &vaults[0].engine;
    assert_eq!(e.head().height, 5);
    assert_eq!(e.chain_id(), spec().chain_id());
    let heights = |n| e.recent(n).iter().map(|b| b.height).collect::<Vec<_>>();
    assert_eq!(heights(3), vec![5, 4, 3]);
    assert_eq!(heights(10), vec![5, 4, 3, 2, 1], "no more than the chain");
    assert_eq!(e.recent(1)[0].hash, hex::encode(e.head().hash));
}

#[tokio::test]
async fn own_proofs_count_only_for_their_election_and_stay_best_until_beaten() {
    let (mut a, mut b, a_better) = rivals().await;
    let (height, parent, _) = a.engine.election();
    assert!(a.engine.own_is_best(height, &parent));
    assert!(!a.engine.own_is_best(height + 1, &parent));
    assert!(!a.engine.own_is_best(height, &[9; 32]));
    // An offer for another height or parent changes nothing.
    let (winner, loser) = if a_better {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let (_, _, challenge) = loser.engine.election();
    let found = winner.farmer.best(challenge).await.unwrap();
    let msg = ProofMsg {
        chain_id: spec().chain_id(),
        height,
        parent,
        proof: found.proof.clone(),
    };
    let due = loser.engine.production_due();
    assert_eq!(
        loser
            .engine
            .offer_own(height + 1, parent, found.proof.clone(), found.rank, 0.0),
        None
    );
    assert_eq!(
        loser
            .engine
            .offer_own(height, [9; 32], found.proof.clone(), found.rank, 0.0),
        None
    );
    assert_eq!(loser.engine.production_due(), due);
    // The better proof heard, the loser's own is no longer the best, and
    // it may not produce with another vault's key.
    assert!(loser.engine.own_is_best(height, &parent));
    loser.engine.offer_proof(&msg).unwrap();
    assert!(!loser.engine.own_is_best(height, &parent));
    let t = spec().genesis_unix_ms + 1000;
    assert_eq!(loser.engine.produce(&winner.key.clone(), t, false), None);
}

#[tokio::test]
async fn a_head_with_a_better_proof_than_ones_own_is_not_contested() {
    let (mut a, mut b, a_better) = rivals().await;
    if !a_better {
        std::mem::swap(&mut a, &mut b);
    }
    // a's proof is the better: b, hearing a's block, has nothing to contest.
    let t = spec().genesis_unix_ms + 1000;
    let better = a.engine.produce(&a.key.clone(), t, false).unwrap();
    b.engine.import(better, t).unwrap();
    assert!(!b.engine.should_contest(t + 10));
}

#[tokio::test]
async fn a_contest_is_due_until_a_slot_after_the_head_and_not_after() {
    let (mut a, mut b, a_better) = rivals().await;
    if !a_better {
        std::mem::swap(&mut a, &mut b);
    }
    let t = spec().genesis_unix_ms + 1000;
    let worse = b.engine.produce(&b.key.clone(), t, false).unwrap();
    a.engine.import(worse, t).unwrap();
    let slot = spec().slot_ms;
    assert!(a.engine.should_contest(t + slot), "a slot after: still");
    assert!(!a.engine.should_contest(t + slot + 1), "past it: no more");
}

#[tokio::test]
async fn the_block_delay_is_smoothed_over_the_samples() {
    let (mut a, _b, _) = rivals().await;
    let mut c = vault(3);
    let made = spec().genesis_unix_ms + spec().slot_ms;
    let first = a.engine.produce(&a.key.clone(), made, false).unwrap();
    c.engine
        .import_gossiped(first.clone(), made + 400, Origin::LOCAL)
        .unwrap();
    assert_eq!(c.engine.block_delay_ms(), 100.0);
    a.engine.import(first, made).unwrap();
    let second = child_of_head(&mut a, made + spec().slot_ms).await;
    c.engine
        .import_gossiped(second, made + spec().slot_ms + 800, Origin::LOCAL)
        .unwrap();
    assert_eq!(c.engine.block_delay_ms(), 100.0 + (800.0 - 100.0) / 4.0);
}

/// `v`'s block on its own head with its best proof, at `at`.
async fn child_of_head(v: &mut Vault, at: u64) -> Block {
    let (height, parent, challenge) = v.engine.election();
    let found = v.farmer.best(challenge).await.unwrap();
    v.engine
        .offer_own(height, parent, found.proof, found.rank, 0.0);
    v.engine.produce(&v.key.clone(), at, false).unwrap()
}

#[tokio::test]
async fn a_write_both_branches_hold_does_not_go_back_to_the_pool() {
    let (mut a, mut b, a_better) = rivals().await;
    let owner = Keypair::from_secret(&[9; 32]);
    let tx = RegisterTx::signed(&owner, &spec().chain_id(), b"r", 1, b"v");
    assert!(a.engine.add_tx(tx.clone()).unwrap());
    assert!(b.engine.add_tx(tx.clone()).unwrap());
    let t = spec().genesis_unix_ms + 1000;
    let block_a = a.engine.produce(&a.key.clone(), t, false).unwrap();
    let block_b = b.engine.produce(&b.key.clone(), t, false).unwrap();
    assert_eq!((&block_a.txs, &block_b.txs), (&vec![tx.clone()], &vec![tx]));
    let (better, worse, worse_vault) = if a_better {
        (block_a, block_b, &mut b)
    } else {
        (block_b, block_a, &mut a)
    };
    let mut c = vault(3);
    c.engine.import(better, t).unwrap();
    c.engine.import(worse.clone(), t).unwrap();
    worse_vault.engine.import(worse.clone(), t).unwrap();
    let child = child_of(
        &worse,
        &worse_vault.key.clone(),
        &worse_vault.farmer,
        t + 1000,
    )
    .await;
    assert!(matches!(
        c.engine.import(child, t + 1000).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    assert_eq!(c.engine.mempool_len(), 0, "the new branch holds the write");
}

#[tokio::test]
async fn two_blocks_for_one_height_settle_on_the_better_proof_in_any_order() {
    let (mut a, mut b, a_better) = rivals().await;
    let t = spec().genesis_unix_ms + 1000;
    let block_a = a.engine.produce(&a.key.clone(), t, false).unwrap();
    let block_b = b.engine.produce(&b.key.clone(), t, false).unwrap();
    let better = if a_better {
        block_a.hash()
    } else {
        block_b.hash()
    };
    let mut c = vault(3);
    let mut d = vault(4);
    for blk in [&block_a, &block_b] {
        c.engine.import(blk.clone(), t).unwrap();
    }
    for blk in [&block_b, &block_a] {
        d.engine.import(blk.clone(), t).unwrap();
    }
    assert_eq!(c.engine.head().hash, better);
    assert_eq!(d.engine.head().hash, better);
    // A longer chain on the worse block wins over both.
    let (worse, worse_key, worse_farmer) = if better == block_a.hash() {
        (&block_b, b.key.clone(), &b.farmer)
    } else {
        (&block_a, a.key.clone(), &a.farmer)
    };
    let child = child_of(worse, &worse_key, worse_farmer, t + 1000).await;
    assert!(matches!(
        c.engine.import(child.clone(), t + 1000).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    assert_eq!(c.engine.head().hash, child.hash());
}

#[tokio::test]
async fn a_worse_head_is_contested_in_its_slot_and_not_after() {
    // a's proof beats b's, but b's block arrives before a's turn: a
    // contests it at once, unless the block is old news (met while
    // catching up), when a branch of a's would only be waste.
    let (mut a, mut b) = (vault(1), vault(2));
    let (height, parent, challenge) = a.engine.election();
    let fa = a.farmer.best(challenge).await.unwrap();
    let fb = b.farmer.best(challenge).await.unwrap();
    if !fa.rank.beats(&fb.rank) {
        std::mem::swap(&mut a, &mut b);
    }
    let (fa, fb) = if fa.rank.beats(&fb.rank) {
        (fa, fb)
    } else {
        (fb, fa)
    };
    a.engine.offer_own(height, parent, fa.proof, fa.rank, 0.0);
    b.engine.offer_own(height, parent, fb.proof, fb.rank, 0.0);
    let t = spec().genesis_unix_ms + 1000;
    let worse = b.engine.produce(&b.key.clone(), t, false).unwrap();
    a.engine.import(worse, t).unwrap();
    assert!(a.engine.should_contest(t + 10));
    assert!(!a.engine.should_contest(t + 5 * spec().slot_ms));
    let contest = a.engine.produce(&a.key.clone(), t + 10, true).unwrap();
    assert_eq!(contest.header.height, 1);
    assert!(!a.engine.should_contest(t + 10), "one contest a height");
}

#[tokio::test]
async fn a_gossiped_block_beaten_by_the_canonical_sibling_is_refused_and_a_synced_one_kept() {
    let (mut a, mut b, a_better) = rivals().await;
    let t = spec().genesis_unix_ms + 1000;
    let block_a = a.engine.produce(&a.key.clone(), t, false).unwrap();
    let block_b = b.engine.produce(&b.key.clone(), t, false).unwrap();
    let (better, worse) = if a_better {
        (block_a, block_b)
    } else {
        (block_b, block_a)
    };
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

#[tokio::test]
async fn a_parent_that_arrives_late_gives_proofs_a_window_before_anyone_produces() {
    let mut a = vault(1);
    let mut b = vault(2);
    let (height, parent, challenge) = b.engine.election();
    let fb = b.farmer.best(challenge).await.unwrap();
    b.engine.offer_own(height, parent, fb.proof, fb.rank, 0.0);
    let made = spec().genesis_unix_ms + spec().slot_ms;
    let block = b.engine.produce(&b.key.clone(), made, false).unwrap();
    // a hears of it three slots late: the next block's time has passed.
    let late = made + 3 * spec().slot_ms;
    a.engine.import(block.clone(), late).unwrap();
    let (height, parent, challenge) = a.engine.election();
    let fa = a.farmer.best(challenge).await.unwrap();
    a.engine.offer_own(height, parent, fa.proof, fa.rank, 0.0);
    assert_eq!(
        a.engine.production_due(),
        Some(late + spec().proof_window_ms),
        "not at once, before any other vault's proof could come"
    );
    // On time, the slot rules.
    let mut c = vault(3);
    c.engine.import(block, made + 10).unwrap();
    let (height, parent, challenge) = c.engine.election();
    let fc = c.farmer.best(challenge).await.unwrap();
    c.engine.offer_own(height, parent, fc.proof, fc.rank, 0.0);
    assert_eq!(c.engine.production_due(), Some(made + spec().slot_ms));
}

#[tokio::test]
async fn a_vault_waits_a_place_for_each_expected_place_beyond_the_first_and_places_grow_with_the_block_delay(
) {
    let mut a = vault(1);
    let (height, parent, challenge) = a.engine.election();
    let found = a.farmer.best(challenge).await.unwrap();
    let opens = spec().genesis_unix_ms + spec().slot_ms;
    let timeout = spec().producer_timeout_ms as f64;
    // The records that put this proof at expected place 3.5: it waits 2.5
    // places, unheard of proofs or not.
    let records = 3.5 / found.rank.expected_place(1.0);
    a.engine
        .offer_own(height, parent, found.proof.clone(), found.rank, records);
    assert_eq!(
        a.engine.production_due(),
        Some(opens + (2.5 * timeout).round() as u64)
    );
    // With no estimate (or a likely winner's), no wait beyond the turn.
    a.engine
        .offer_own(height, parent, found.proof.clone(), found.rank, 0.0);
    assert_eq!(a.engine.production_due(), Some(opens));
    // However far back, at most 8 places.
    a.engine
        .offer_own(height, parent, found.proof, found.rank, records * 1000.0);
    assert_eq!(
        a.engine.production_due(),
        Some(opens + (8.0 * timeout).round() as u64)
    );

    // Blocks that came late make a place longer: twice the smoothed
    // delay once that passes the producer timeout.
    let mut b = vault(2);
    let made = spec().genesis_unix_ms + spec().slot_ms;
    let block = a.engine.produce(&a.key.clone(), made, false).unwrap();
    let late = made + 2 * spec().slot_ms;
    b.engine
        .import_gossiped(block, late, Origin::LOCAL)
        .unwrap();
    let delay = b.engine.block_delay_ms();
    assert_eq!(delay, (2 * spec().slot_ms) as f64 / 4.0);
    let (height, parent, challenge) = b.engine.election();
    let found = b.farmer.best(challenge).await.unwrap();
    let records = 2.0 / found.rank.expected_place(1.0);
    b.engine
        .offer_own(height, parent, found.proof, found.rank, records);
    let opens = late + spec().proof_window_ms;
    let place = timeout.max(2.0 * delay);
    assert!(place > timeout);
    assert_eq!(
        b.engine.production_due(),
        Some(opens + place.round() as u64)
    );
}

/// An engine with no plots, for the caps.
mod intake;
