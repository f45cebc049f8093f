use super::*;
use crate::keys::Keypair;
use crate::types::Block;
use std::collections::HashMap;

struct Map(HashMap<([u8; 32], Vec<u8>), u64>);
impl Versions for Map {
    fn version(&self, owner: &[u8; 32], name: &[u8]) -> u64 {
        self.0.get(&(*owner, name.to_vec())).copied().unwrap_or(0)
    }
}

#[test]
fn versions_must_follow_one_another() {
    let chain = [1; 32];
    let owner = Keypair::from_secret(&[2; 32]);
    let tx = |v| RegisterTx::signed(&owner, &chain, b"n", v, b"x");
    let empty = Map(HashMap::new());
    assert!(check_versions(&empty, &[tx(1), tx(2)]).is_ok());
    assert_eq!(
        check_versions(&empty, &[tx(2)]),
        Err(Rejection::BadTxVersion { got: 2, current: 0 })
    );
    assert!(check_versions(&empty, &[tx(1), tx(1)]).is_err());
    let at_one = Map([((owner.public(), b"n".to_vec()), 1)].into());
    assert!(check_versions(&at_one, &[tx(2)]).is_ok());
    assert!(check_versions(&at_one, &[tx(1)]).is_err());
}

#[test]
fn a_block_is_checked_field_by_field() {
    let spec = ChainSpec::new("t", 1_000_000, 1000);
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let producer = Keypair::from_secret(&[7; 32]);
    // Any plot's record for the challenge is a valid proof; its rank
    // does not matter here.
    let proof = ChainProof {
        farmer_key: producer.public(),
        seed: [1; 32],
        k: 16,
        nonce: 5,
    };
    let at = parent.timestamp_ms + spec.slot_ms;
    let make =
        |ts, proof: ChainProof| Block::produce(&producer, chain, 1, parent.hash, ts, proof, vec![]);
    let good = make(at, proof.clone());
    assert!(check_block(&spec, &chain, &parent, &good, at, None).is_ok());
    assert_eq!(
        check_block(
            &spec,
            &chain,
            &parent,
            &make(at - 1, proof.clone()),
            at,
            None
        ),
        Err(Rejection::TooEarly {
            got: at - 1,
            earliest: at
        })
    );
    assert!(matches!(
        check_block(&spec, &chain, &parent, &good, at - 10_000, None),
        Err(Rejection::Future { .. })
    ));
    let mut stolen = proof.clone();
    stolen.farmer_key = Keypair::from_secret(&[8; 32]).public();
    let r = check_block(&spec, &chain, &parent, &make(at, stolen), at, None);
    assert_eq!(r, Err(Rejection::BadSignature));
    let mut big = proof.clone();
    big.nonce = 1 << 20;
    assert!(matches!(
        check_block(&spec, &chain, &parent, &make(at, big), at, None),
        Err(Rejection::BadProof(_))
    ));
    let mut small = proof;
    small.k = 12;
    assert_eq!(
        check_block(&spec, &chain, &parent, &make(at, small), at, None),
        Err(Rejection::BadK(12))
    );
    let mut forged = good.clone();
    forged.header.height = 2;
    assert!(matches!(
        check_block(&spec, &chain, &parent, &forged, at, None),
        Err(Rejection::BadHeight { .. })
    ));
    assert_eq!(
        check_block(&spec, &[0; 32], &parent, &good, at, None),
        Err(Rejection::WrongChain)
    );
}

#[test]
fn signatures_checked_ahead_are_cache_hits_in_the_full_check() {
    let spec = ChainSpec::new("t", 1_000_000, 1000);
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let producer = Keypair::from_secret(&[7; 32]);
    let owner = Keypair::from_secret(&[9; 32]);
    let txs = (1..=3)
        .map(|v| RegisterTx::signed(&owner, &chain, b"r", v, b"x"))
        .collect();
    let block = block_with(&spec, &producer, txs);
    let cache = SigCache::with_capacity(64);
    assert_eq!(check_signatures(&spec, &chain, &block, &cache), Ok(()));
    assert_eq!(cache.len(), 4, "the block's signature and three of txs");
    let now = block.header.timestamp_ms;
    assert!(check_block(&spec, &chain, &parent, &block, now, Some(&cache)).is_ok());
    assert_eq!(cache.hits(Op::VerifyBlock), 1);
    assert_eq!(cache.hits(Op::VerifyTx), 3);
    // What fails ahead fails for its own reason, and only valid
    // signatures are kept.
    let cache = SigCache::with_capacity(64);
    let mut forged = block.clone();
    forged.signature[0] ^= 1;
    assert_eq!(
        check_signatures(&spec, &chain, &forged, &cache),
        Err(Rejection::BadSignature)
    );
    let mut bad_tx = block.clone();
    bad_tx.txs[2].signature[0] ^= 1;
    assert_eq!(
        check_signatures(&spec, &chain, &bad_tx, &cache),
        Err(Rejection::BadTxSignature)
    );
    assert_eq!(
        check_signatures(&spec, &[0; 32], &block, &cache),
        Err(Rejection::WrongChain)
    );
    assert_eq!(cache.len(), 3, "the block's and the first two txs'");
}

/// A block on the genesis of `spec` by `producer`, with `txs`.
fn block_with(spec: &ChainSpec, producer: &Keypair, txs: Vec<RegisterTx>) -> Block {
    let chain = spec.chain_id();
    let parent = Parent::genesis(spec);
    let proof = ChainProof {
        farmer_key: producer.public(),
        seed: [1; 32],
        k: 16,
        nonce: 5,
    };
    Block::produce(
        producer,
        chain,
        1,
        parent.hash,
        parent.timestamp_ms + spec.slot_ms,
        proof,
        txs,
    )
}

#[test]
fn a_blocks_transactions_are_checked_for_count_root_size_name_and_signature() {
    let mut spec = ChainSpec::new("t", 1_000_000, 1000);
    spec.max_block_txs = 2;
    spec.max_register_name_bytes = 4;
    spec.max_register_value_bytes = 8;
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let now = parent.timestamp_ms + spec.slot_ms;
    let producer = Keypair::from_secret(&[7; 32]);
    let owner = Keypair::from_secret(&[8; 32]);
    let tx = |name: &[u8], value: &[u8]| RegisterTx::signed(&owner, &chain, name, 1, value);
    let check = |b: &Block| check_block(&spec, &chain, &parent, b, now, None);

    assert!(check(&block_with(
        &spec,
        &producer,
        vec![tx(b"a", b"v"), tx(b"b", b"v")]
    ))
    .is_ok());
    let three = block_with(
        &spec,
        &producer,
        vec![tx(b"a", b""), tx(b"b", b""), tx(b"c", b"")],
    );
    assert_eq!(check(&three), Err(Rejection::TooManyTxs { got: 3, max: 2 }));
    assert_eq!(
        check_orphan(&spec, &chain, &three, now, None),
        Err(Rejection::TooManyTxs { got: 3, max: 2 })
    );

    // Transactions that are not the ones the header's root names.
    let mut swapped = block_with(&spec, &producer, vec![tx(b"a", b"v")]);
    swapped.txs[0] = tx(b"b", b"v");
    assert_eq!(check(&swapped), Err(Rejection::BadTxRoot));
    assert_eq!(
        check_orphan(&spec, &chain, &swapped, now, None),
        Err(Rejection::BadTxRoot)
    );
    let mut dropped = block_with(&spec, &producer, vec![tx(b"a", b"v")]);
    dropped.txs.clear();
    assert_eq!(check(&dropped), Err(Rejection::BadTxRoot));

    for (txs, why) in [
        (vec![tx(b"long!", b"v")], Rejection::TxTooLarge),
        (vec![tx(b"a", b"123456789")], Rejection::TxTooLarge),
        (vec![tx(b"", b"v")], Rejection::EmptyName),
    ] {
        assert_eq!(
            check(&block_with(&spec, &producer, txs.clone())),
            Err(why.clone())
        );
        assert_eq!(check_tx(&spec, &chain, &txs[0], None), Err(why));
    }
    // At the limits exactly: accepted.
    assert!(check_tx(&spec, &chain, &tx(b"four", b"12345678"), None).is_ok());

    let mut forged = tx(b"a", b"v");
    forged.value = b"w".to_vec();
    assert_eq!(
        check_tx(&spec, &chain, &forged, None),
        Err(Rejection::BadTxSignature)
    );
    // With a cache: the valid one is remembered, the forged one
    // refused however often it comes.
    let cache = SigCache::default();
    let valid = tx(b"a", b"v");
    for _ in 0..2 {
        assert!(check_tx(&spec, &chain, &valid, Some(&cache)).is_ok());
        assert_eq!(
            check_tx(&spec, &chain, &forged, Some(&cache)),
            Err(Rejection::BadTxSignature)
        );
    }
    assert_eq!((cache.len(), cache.hits(Op::VerifyTx)), (1, 1));
    assert_eq!(
        check(&block_with(&spec, &producer, vec![forged])),
        Err(Rejection::BadTxSignature)
    );
}

#[test]
fn an_orphan_is_checked_for_what_needs_no_parent() {
    let spec = ChainSpec::new("t", 1_000_000, 1000);
    let chain = spec.chain_id();
    let producer = Keypair::from_secret(&[7; 32]);
    let good = block_with(&spec, &producer, vec![]);
    let now = good.header.timestamp_ms;
    assert_eq!(check_orphan(&spec, &chain, &good, now, None), Ok(()));
    assert_eq!(
        check_orphan(&spec, &[0; 32], &good, now, None),
        Err(Rejection::WrongChain)
    );
    let mut unsigned = good.clone();
    unsigned.signature[10] ^= 1;
    assert_eq!(
        check_orphan(&spec, &chain, &unsigned, now, None),
        Err(Rejection::BadSignature)
    );
    let mut small = good.clone();
    small.header.proof.k = spec.min_k - 1;
    assert_eq!(
        check_orphan(&spec, &chain, &small, now, None),
        Err(Rejection::BadK(spec.min_k - 1))
    );
    let mut large = good.clone();
    large.header.proof.k = spec.max_k + 1;
    assert_eq!(
        check_orphan(&spec, &chain, &large, now, None),
        Err(Rejection::BadK(spec.max_k + 1))
    );
    // Signed, but naming no record of its plot.
    let k = good.header.proof.k;
    let mut proof = good.header.proof.clone();
    proof.nonce = 1 << k;
    let beyond = Block::produce(
        &producer,
        chain,
        good.header.height,
        good.header.parent,
        good.header.timestamp_ms,
        proof,
        vec![],
    );
    assert!(matches!(
        check_orphan(&spec, &chain, &beyond, now, None),
        Err(Rejection::BadProof(why)) if why.contains("out of range")
    ));
    // Made later than any clock allows.
    let drift = max_drift_ms(&spec);
    assert_eq!(
        check_orphan(&spec, &chain, &good, now - drift, None),
        Ok(())
    );
    assert_eq!(
        check_orphan(&spec, &chain, &good, now - drift - 1, None),
        Err(Rejection::Future {
            got: now,
            now: now - drift - 1
        })
    );
}

#[test]
fn every_reason_has_its_own_name_and_only_the_sender_s_faults_are_faults() {
    let all = [
        (Rejection::Malformed("x".into()), "malformed", true),
        (Rejection::WrongChain, "wrong_chain", true),
        (Rejection::UnknownParent, "unknown_parent", false),
        (
            Rejection::BadHeight { got: 1, parent: 1 },
            "bad_height",
            true,
        ),
        (
            Rejection::TooEarly {
                got: 1,
                earliest: 2,
            },
            "too_early",
            true,
        ),
        (Rejection::Future { got: 2, now: 1 }, "future", true),
        (
            Rejection::TooManyTxs { got: 2, max: 1 },
            "too_many_txs",
            true,
        ),
        (Rejection::BadTxRoot, "bad_tx_root", true),
        (Rejection::BadProof("x".into()), "bad_proof", true),
        (Rejection::BadK(1), "bad_k", true),
        (Rejection::BadSignature, "bad_signature", true),
        (Rejection::BadTxSignature, "bad_tx_signature", true),
        (Rejection::TxTooLarge, "tx_too_large", true),
        (Rejection::EmptyName, "empty_name", true),
        (
            Rejection::BadTxVersion { got: 1, current: 1 },
            "bad_tx_version",
            false,
        ),
        (Rejection::StaleHeight(1), "stale_height", false),
        (Rejection::FutureHeight(1), "future_height", false),
        (Rejection::NotBetter, "not_better", false),
        (Rejection::Stale { got: 1, oldest: 2 }, "stale", false),
        (Rejection::Replayed { got: 1, newest: 2 }, "replayed", false),
        (
            Rejection::Unable {
                what: "store",
                why: "x".into(),
            },
            "store",
            false,
        ),
    ];
    let mut names = std::collections::HashSet::new();
    for (r, name, fault) in all {
        assert_eq!(r.name(), name);
        assert_eq!(r.is_fault(), fault, "{name}");
        assert!(names.insert(name));
        assert!(!r.to_string().is_empty());
    }
}

#[test]
fn the_drift_allowed_is_half_a_slot_and_at_least_50_ms() {
    let spec = |slot| ChainSpec::new("t", 0, slot);
    assert_eq!(max_drift_ms(&spec(1000)), 500);
    assert_eq!(max_drift_ms(&spec(60)), 50);
    assert_eq!(max_drift_ms(&spec(101)), 50);
    assert_eq!(max_drift_ms(&spec(102)), 51);
}

#[test]
fn a_parents_child_challenge_is_the_challenge_of_the_next_height_on_its_proof() {
    let spec = ChainSpec::new("t", 1_000_000, 1000);
    let chain = spec.chain_id();
    let genesis = Parent::genesis(&spec);
    assert_eq!(
        genesis.child_challenge(&chain),
        challenge(&chain, 1, &genesis.proof_hash)
    );
    let later = Parent {
        hash: [1; 32],
        height: 7,
        timestamp_ms: 0,
        proof_hash: [2; 32],
    };
    assert_eq!(
        later.child_challenge(&chain),
        challenge(&chain, 8, &[2; 32])
    );
}

#[test]
fn a_timestamp_may_be_ahead_by_the_drift_and_no_more() {
    let spec = ChainSpec::new("t", 1_000_000, 1000);
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let block = block_with(&spec, &Keypair::from_secret(&[7; 32]), vec![]);
    let ts = block.header.timestamp_ms;
    let drift = max_drift_ms(&spec);
    assert!(check_block(&spec, &chain, &parent, &block, ts - drift, None).is_ok());
    assert_eq!(
        check_block(&spec, &chain, &parent, &block, ts - drift - 1, None),
        Err(Rejection::Future {
            got: ts,
            now: ts - drift - 1
        })
    );
}
