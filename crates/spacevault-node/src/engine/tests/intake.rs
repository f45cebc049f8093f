//! What comes in: blocks refused with their reasons, transactions and
//! their pool, writes whose block loses its place, orphans, sync answers,
//! and the signature cache.

use super::*;

#[tokio::test]
async fn bad_blocks_are_refused_with_their_reason() {
    let mut a = vault(1);
    let found = a.found(1).await;
    let good = a.produce(1).await.unwrap();
    let mut b = vault(2);
    let parent = b.engine.head().hash;
    // Signed by another key than the proof's.
    let forged = Block::produce(
        &b.key.clone(),
        spec().chain_id(),
        1,
        parent,
        stamp(1),
        found.proof.clone(),
        vec![],
    );
    assert_eq!(b.engine.import(forged, at(1)), Err(Rejection::BadSignature));
    // In a slot due later than the clock allows, and from another chain.
    assert!(matches!(
        b.engine.import(good.clone(), at(1) - 10_000),
        Err(Rejection::Future { .. })
    ));
    let mut other = good.clone();
    other.header.chain_id = [0; 32];
    assert!(b.engine.import(other, at(1)).is_err());
    // A block whose parent is missing waits, then joins.
    let child = child_of(&good, &a.key, &a.farmer, 2).await;
    assert_eq!(b.engine.import(child.clone(), at(2)), Ok(Imported::Orphan));
    assert_eq!(
        b.engine.import(good.clone(), at(1)),
        Ok(Imported::NewHead { left: 0 })
    );
    let waiting = b.engine.take_orphans(&good.hash());
    assert_eq!(waiting, vec![child.clone()]);
    assert_eq!(
        b.engine.import(child, at(2)),
        Ok(Imported::NewHead { left: 0 })
    );
    assert_eq!(b.engine.import(good, at(1)), Ok(Imported::Duplicate));
}

/// Each vault produces in `slot` and imports every vault's block.
async fn round(vaults: &mut [Vault], slot: u64) {
    let mut blocks = Vec::new();
    for v in vaults.iter_mut() {
        blocks.extend(v.produce(slot).await);
    }
    for v in vaults.iter_mut() {
        for b in &blocks {
            v.engine.import(b.clone(), at(slot)).unwrap();
        }
    }
}

#[tokio::test]
async fn transactions_go_into_blocks_once_and_in_order() {
    let mut vaults: Vec<Vault> = (1..=2).map(vault).collect();
    let owner = Keypair::from_secret(&[42; 32]);
    let chain = spec().chain_id();
    let tx =
        |v: u64| RegisterTx::signed(&owner, &chain, b"name", v, format!("value {v}").as_bytes());
    for v in vaults.iter_mut() {
        assert_eq!(v.engine.add_tx(tx(2)), Ok(true));
        assert_eq!(v.engine.add_tx(tx(1)), Ok(true));
        assert_eq!(v.engine.add_tx(tx(1)), Ok(false));
    }
    round(&mut vaults, 1).await;
    for v in &vaults {
        let r = v
            .engine
            .store()
            .register(&owner.public(), b"name")
            .unwrap()
            .unwrap();
        assert_eq!((r.version, r.value.as_slice()), (2, &b"value 2"[..]));
        assert_eq!(v.engine.mempool_len(), 0);
    }
    // A replay of an included transaction is refused.
    assert!(matches!(
        vaults[0].engine.add_tx(tx(1)),
        Err(Rejection::BadTxVersion { got: 1, current: 2 })
    ));
}

#[tokio::test]
async fn a_write_in_a_block_that_loses_its_place_goes_back_to_the_pool() {
    let mut a = vault(1);
    let mut b = vault(2);
    let a_better = a.found(1).await.rank.beats(&b.found(1).await.rank);
    // The write goes into the better block, which a third vault takes first.
    let owner = Keypair::from_secret(&[9; 32]);
    let tx = RegisterTx::signed(&owner, &spec().chain_id(), b"r", 1, b"v");
    let holder = if a_better { &mut a } else { &mut b };
    assert!(holder.engine.add_tx(tx.clone()).unwrap());
    let t = at(1);
    let block_a = a.produce(1).await.unwrap();
    let block_b = b.produce(1).await.unwrap();
    let (better, worse) = if a_better {
        (&block_a, &block_b)
    } else {
        (&block_b, &block_a)
    };
    assert_eq!(better.txs, vec![tx.clone()]);
    let mut c = vault(3);
    c.engine.import(better.clone(), t).unwrap();
    c.engine.import(worse.clone(), t).unwrap();
    assert_eq!(c.engine.head().hash, better.hash());
    assert_eq!(c.engine.mempool_len(), 0, "the write is in the chain");
    // A longer branch on the other block wins: the write must not vanish.
    let (worse_key, worse_farmer) = if a_better {
        (b.key.clone(), &b.farmer)
    } else {
        (a.key.clone(), &a.farmer)
    };
    let child = child_of(worse, &worse_key, worse_farmer, 2).await;
    assert!(matches!(
        c.engine.import(child, at(2)).unwrap(),
        Imported::NewHead { left: 1 }
    ));
    assert_eq!(c.engine.mempool_len(), 1, "the write is pending again");
    assert_eq!(
        c.engine
            .store()
            .register_version(&owner.public(), b"r")
            .unwrap(),
        0
    );
}

fn bare() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(&dir.path().join("store.redb"), spec()).unwrap();
    (engine, dir)
}

#[test]
fn orphans_are_bounded_in_all_per_sender_and_in_time() {
    let (mut engine, _dir) = bare();
    let producer = Keypair::from_secret(&[5; 32]);
    let orphan = |i: u32| {
        let mut parent = [0xee; 32];
        parent[..4].copy_from_slice(&i.to_le_bytes());
        let proof = ChainProof::plain(producer.public(), [1; 32], 16, 1);
        Block::produce(
            &producer,
            spec().chain_id(),
            2,
            parent,
            stamp(4),
            proof,
            vec![],
        )
    };
    let now = 5_000_000;
    let flooders = (MAX_ORPHANS / MAX_ORPHANS_PER_ORIGIN) as u32;
    let flooder = |f: u32| Origin([f as u8 + 100; 32]);
    let mut n = 0;
    for f in 0..flooders {
        for _ in 0..MAX_ORPHANS_PER_ORIGIN {
            let outcome = engine.import_from(orphan(n), now, flooder(f));
            assert_eq!(outcome, Ok(Imported::Orphan));
            n += 1;
        }
    }
    assert_eq!(engine.orphan_count(), MAX_ORPHANS);
    // The same orphan again is not kept twice.
    engine.import_from(orphan(0), now, flooder(3)).unwrap();
    assert_eq!(engine.orphan_count(), MAX_ORPHANS);
    assert_eq!(engine.orphans_from(flooder(3)), MAX_ORPHANS_PER_ORIGIN);
    // A flooder's next orphan replaces its own oldest.
    engine.import_from(orphan(n), now, flooder(0)).unwrap();
    assert!(engine.take_orphans(&orphan(0).header.parent).is_empty());
    assert_eq!(
        engine.take_orphans(&orphan(n).header.parent),
        vec![orphan(n)]
    );
    n += 1;
    engine.import_from(orphan(n), now, flooder(0)).unwrap();
    assert_eq!(engine.orphan_count(), MAX_ORPHANS);
    // Another sender's orphan is kept in a full pool, at a flooder's cost.
    let honest = Origin([1; 32]);
    let mine = orphan(n + 1);
    engine.import_from(mine.clone(), now, honest).unwrap();
    assert_eq!(engine.orphan_count(), MAX_ORPHANS);
    assert_eq!(engine.orphans_from(honest), 1);
    // Orphans whose parent never comes expire.
    let slot = spec().slot_ms;
    engine.expire_orphans(now + ORPHAN_SLOTS * slot);
    assert_eq!(engine.orphan_count(), MAX_ORPHANS);
    engine.expire_orphans(now + ORPHAN_SLOTS * slot + 1);
    assert_eq!(engine.orphan_count(), 0);
    assert!(engine.take_orphans(&mine.header.parent).is_empty());
}

#[test]
fn the_pool_takes_versions_up_to_64_ahead_and_no_more_than_its_cap() {
    let (mut engine, _dir) = bare();
    let owner = Keypair::from_secret(&[42; 32]);
    let chain = spec().chain_id();
    let tx = |name: &[u8], v: u64| RegisterTx::signed(&owner, &chain, name, v, b"x");
    assert_eq!(
        engine.add_tx(tx(b"r", 0)),
        Err(Rejection::BadTxVersion { got: 0, current: 0 })
    );
    assert_eq!(engine.add_tx(tx(b"r", MAX_VERSIONS_AHEAD)), Ok(true));
    assert_eq!(
        engine.add_tx(tx(b"r", MAX_VERSIONS_AHEAD + 1)),
        Err(Rejection::BadTxVersion {
            got: MAX_VERSIONS_AHEAD + 1,
            current: 0
        })
    );
    let mut forged = tx(b"r", 1);
    forged.value = b"y".to_vec();
    assert_eq!(engine.add_tx(forged), Err(Rejection::BadTxSignature));
    assert_eq!(engine.add_tx(tx(b"", 1)), Err(Rejection::EmptyName));
    assert_eq!(engine.mempool_len(), 1);
    for i in 1..MAX_MEMPOOL {
        assert_eq!(engine.add_tx(tx(format!("n{i}").as_bytes(), 1)), Ok(true));
    }
    assert_eq!(engine.mempool_len(), MAX_MEMPOOL);
    // A full pool is this vault's trouble, not the sender's fault.
    let full = engine.add_tx(tx(b"one more", 1)).unwrap_err();
    assert!(
        matches!(
            full,
            Rejection::Unable {
                what: "pool_full",
                ..
            }
        ),
        "{full}"
    );
    assert!(!full.is_fault());
    assert_eq!(engine.mempool_len(), MAX_MEMPOOL);
    // A transaction already pending is no news, full pool or not.
    assert_eq!(engine.add_tx(tx(b"n1", 1)), Ok(false));
}

#[tokio::test]
async fn a_sync_answer_holds_the_blocks_that_fit_and_at_least_one() {
    let mut vaults: Vec<Vault> = (1..=2).map(vault).collect();
    let owner = Keypair::from_secret(&[42; 32]);
    let chain = spec().chain_id();
    for r in 0..4u64 {
        for v in vaults.iter_mut() {
            let name = format!("r{r}");
            let tx = RegisterTx::signed(&owner, &chain, name.as_bytes(), 1, &[7; 600]);
            v.engine.add_tx(tx).unwrap();
        }
        round(&mut vaults, r + 1).await;
    }
    let e = &vaults[0].engine;
    let all = e.blocks_from(1, 10, usize::MAX);
    assert_eq!(all.len(), 4);
    let sizes: Vec<usize> = all.iter().map(|b| b.len() + 4).collect();
    // Exactly the first two fit; one byte less, only the first.
    let two = sizes[0] + sizes[1];
    assert_eq!(e.blocks_from(1, 10, two), all[..2].to_vec());
    assert_eq!(e.blocks_from(1, 10, two - 1), all[..1].to_vec());
    // A block larger than the room still goes, alone.
    assert_eq!(e.blocks_from(2, 10, 1), all[1..2].to_vec());
    assert_eq!(e.blocks_from(3, 1, usize::MAX), all[2..3].to_vec());
    assert!(e.blocks_from(5, 10, usize::MAX).is_empty());
    assert_eq!(
        e.blocks_from(0, 10, usize::MAX),
        all,
        "height 0 is the genesis"
    );
}

#[tokio::test]
async fn a_block_s_transactions_seen_before_are_answered_from_the_cache_it_was_given() {
    let mut producer = vault(1);
    let mut cached = vault(2);
    let mut plain = vault(3);
    let cache = std::sync::Arc::new(SigCache::default());
    cached.engine.use_sig_cache(cache.clone());
    let owner = Keypair::from_secret(&[9; 32]);
    let tx = RegisterTx::signed(&owner, &spec().chain_id(), b"r", 1, b"v");
    assert!(producer.engine.add_tx(tx.clone()).unwrap());
    assert!(cached.engine.add_tx(tx.clone()).unwrap());
    assert!(plain.engine.add_tx(tx.clone()).unwrap());
    assert_eq!((cache.len(), cache.hits(Op::VerifyTx)), (1, 0));
    let block = producer.produce(1).await.unwrap();
    assert_eq!(block.txs, vec![tx]);
    for v in [&mut cached, &mut plain] {
        assert!(matches!(
            v.engine.import(block.clone(), at(1)).unwrap(),
            Imported::NewHead { .. }
        ));
    }
    assert_eq!(cache.hits(Op::VerifyTx), 1, "verified once, on arrival");
}

#[tokio::test]
async fn an_orphan_whose_parent_comes_before_its_slot_is_given_back_to_be_held() {
    let mut a = vault(1);
    let mut b = vault(2);
    let parent = a.produce(5).await.unwrap();
    // Its child in slot 70, past the slots b's line holds.
    let child = child_of(&parent, &a.key, &a.farmer, 70).await;
    assert_eq!(b.engine.import(child.clone(), at(70)), Ok(Imported::Orphan));
    let mut adoption = Adoption::new(parent.clone(), false, Origin::LOCAL);
    let mut outcomes = Vec::new();
    while let Some(step) = b.engine.import_next(&mut adoption, at(70)) {
        outcomes.push(step);
    }
    assert_eq!(
        outcomes,
        [
            (parent.hash(), Ok(Imported::NewHead { left: 0 })),
            (
                child.hash(),
                Err(Rejection::UnknownSlot(
                    spacevault_chain::time::MissingSlot {
                        line: early_line(&b.engine, 70),
                        slot: 70
                    }
                ))
            )
        ]
    );
    assert_eq!(adoption.waiting_for_slot, std::slice::from_ref(&child));
    // Once the slot is reached, it is taken.
    keep_slot(&b.engine, 70);
    assert_eq!(
        b.engine.import(child.clone(), at(70)),
        Ok(Imported::NewHead { left: 0 })
    );
}

#[tokio::test]
async fn a_key_that_signs_two_blocks_for_one_slot_is_caught_and_banned_by_the_next_block() {
    let mut honest = vault(1);
    let mut other = vault(2);
    let mut cheat = vault(3);
    let mut stranger = vault(4);
    let chain = spec().chain_id();
    let genesis = honest.engine.head().hash;
    // The cheat signs two blocks for slot 1: one empty, one with a write.
    let found = cheat.found(1).await;
    let owner = Keypair::from_secret(&[9; 32]);
    let two = [
        vec![],
        vec![RegisterTx::signed(&owner, &chain, b"r", 1, b"v")],
    ]
    .map(|txs| {
        Block::produce(
            &cheat.key,
            chain,
            1,
            genesis,
            stamp(1),
            found.proof.clone(),
            txs,
        )
    });
    assert_ne!(two[0].hash(), two[1].hash());
    // Both are valid blocks: the honest vault takes both, and catches it.
    for b in &two {
        assert!(honest.engine.import(b.clone(), at(1)).is_ok());
    }
    let caught = honest.engine.take_caught();
    assert_eq!(caught.len(), 1);
    assert_eq!(caught[0].farmer_key(), cheat.key.public());
    assert!(honest.engine.take_caught().is_empty());
    // A vault that never saw the key make a block ignores the evidence
    // (or anyone could fill its pool with evidence against keys made up
    // for it); one that saw one of the two blocks takes it, once.
    assert_eq!(stranger.engine.add_evidence(caught[0].clone()), Ok(false));
    assert!(!stranger.engine.evidence_pending(&cheat.key.public()));
    other.engine.import(two[0].clone(), at(1)).unwrap();
    assert_eq!(other.engine.add_evidence(caught[0].clone()), Ok(true));
    assert_eq!(other.engine.add_evidence(caught[0].clone()), Ok(false));
    let mut forged = caught[0].clone();
    forged.second.signature = honest.key.sign(&forged.second.hash());
    assert!(matches!(
        other.engine.add_evidence(forged),
        Err(Rejection::BadEvidence(_))
    ));
    // The honest vault's next block carries the evidence and bans the key.
    let next = honest.produce(2).await.expect("eligible");
    assert_eq!(next.evidence, caught);
    assert_eq!(
        honest.engine.import(next.clone(), at(2)),
        Ok(Imported::NewHead { left: 0 })
    );
    assert!(honest
        .engine
        .store()
        .ban_of(&cheat.key.public())
        .unwrap()
        .is_some());
    assert!(!honest.engine.evidence_pending(&cheat.key.public()));
    // From then on the cheat's blocks on that chain are refused, and the
    // evidence is no news.
    let after = child_of(&next, &cheat.key, &cheat.farmer, 3).await;
    assert_eq!(honest.engine.import(after, at(3)), Err(Rejection::Banned));
    assert_eq!(honest.engine.add_evidence(caught[0].clone()), Ok(false));
    // A vault that takes the chain bans the key too, and drops what it
    // held against it.
    for b in [&two[0], &two[1], &next] {
        let _ = other.engine.import(b.clone(), at(2));
    }
    assert_eq!(other.engine.head().hash, next.hash());
    assert!(!other.engine.evidence_pending(&cheat.key.public()));
    // And the next block does not carry it a second time.
    let third = other.produce(3).await.expect("eligible");
    assert!(third.evidence.is_empty());
    // The cheat itself, on that chain, produces nothing.
    for b in [&two[0], &two[1], &next] {
        let _ = cheat.engine.import(b.clone(), at(2));
    }
    assert_eq!(cheat.engine.head().hash, next.hash());
    assert!(cheat.produce(3).await.is_none());
}
