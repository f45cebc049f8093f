use super::*;
use crate::block::Block;
use crate::keys::Keypair;
use spacevault_meter::Op;
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

/// The output tests take slot 1 (and any slot) to have.
const OUTPUT: [u8; FORM_BYTES] = [0x21; FORM_BYTES];

/// A spec whose first target admits every proof but the farthest: the
/// checks of eligibility are tested on their own.
fn open_spec() -> ChainSpec {
    let mut spec = ChainSpec::new("t", 1_000_000, 1000);
    spec.initial_records = 1;
    spec.block_interval_slots = 1;
    spec
}

fn stamp(slot: u64) -> Stamp {
    Stamp {
        slot,
        output: OUTPUT,
    }
}

/// The header's and the transactions' checks, as a vault runs them on a
/// block whose slot it holds with [`OUTPUT`].
fn check_block(
    spec: &ChainSpec,
    chain: &[u8; 32],
    parent: &Parent,
    block: &Block,
    now: u64,
    cache: Option<&SigCache>,
) -> Result<Ranked, Rejection> {
    let rank = check_header(spec, chain, parent, Ok(&OUTPUT), block, now, cache)?;
    check_txs(spec, chain, block, cache)?;
    Ok(rank)
}

#[test]
fn a_block_is_checked_field_by_field() {
    let spec = open_spec();
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let producer = Keypair::from_secret(&[7; 32]);
    // Any plot's record is a proof; under this target, an eligible one.
    let proof = ChainProof::plain(producer.public(), [1; 32], 16, 5);
    let at = spec.slot_due_ms(1);
    let make = |slot, proof: ChainProof| {
        Block::produce(&producer, chain, 1, parent.hash, stamp(slot), proof, vec![])
    };
    let good = make(1, proof.clone());
    assert!(check_block(&spec, &chain, &parent, &good, at, None).is_ok());
    assert_eq!(
        check_block(&spec, &chain, &parent, &make(0, proof.clone()), at, None),
        Err(Rejection::SlotNotAfterParent {
            slot: 0,
            parent_slot: 0
        })
    );
    assert!(matches!(
        check_block(&spec, &chain, &parent, &good, at - 10_000, None),
        Err(Rejection::Future { .. })
    ));
    // A slot this vault has not reached, or whose output it holds as
    // another.
    let missing = MissingSlot {
        line: parent.line,
        slot: 1,
    };
    assert_eq!(
        check_header(&spec, &chain, &parent, Err(missing), &good, at, None),
        Err(Rejection::UnknownSlot(missing))
    );
    assert_eq!(
        check_header(
            &spec,
            &chain,
            &parent,
            Ok(&[0; FORM_BYTES]),
            &good,
            at,
            None
        ),
        Err(Rejection::WrongSlotOutput(1))
    );
    let mut stolen = proof.clone();
    stolen.plain_mut().unwrap().farmer_key = Keypair::from_secret(&[8; 32]).public();
    let r = check_block(&spec, &chain, &parent, &make(1, stolen), at, None);
    assert_eq!(r, Err(Rejection::BadSignature));
    let mut big = proof.clone();
    big.plain_mut().unwrap().nonce = 1 << 20;
    assert!(matches!(
        check_block(&spec, &chain, &parent, &make(1, big), at, None),
        Err(Rejection::BadProof(_))
    ));
    let mut small = proof;
    small.plain_mut().unwrap().k = 12;
    assert_eq!(
        check_block(&spec, &chain, &parent, &make(1, small), at, None),
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
fn a_proof_makes_a_block_only_below_its_parents_target() {
    let spec = open_spec();
    let chain = spec.chain_id();
    let producer = Keypair::from_secret(&[7; 32]);
    let block = block_with(&spec, &producer, vec![]);
    let at = spec.slot_due_ms(1);
    let rank = check_block(&spec, &chain, &Parent::genesis(&spec), &block, at, None).unwrap();
    let top = crate::eligibility::distance_top(&rank.distance);
    // The proof's distance is the line: a target just above admits it,
    // the target at it does not.
    let mut parent = Parent::genesis(&spec);
    parent.child_target = Target(top + 1);
    assert!(check_block(&spec, &chain, &parent, &block, at, None).is_ok());
    parent.child_target = Target(top);
    assert_eq!(
        check_block(&spec, &chain, &parent, &block, at, None),
        Err(Rejection::NotEligible)
    );
}

#[test]
fn signatures_checked_ahead_are_cache_hits_in_the_full_check() {
    let spec = open_spec();
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
    let now = spec.slot_due_ms(1);
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
    let proof = ChainProof::plain(producer.public(), [1; 32], 16, 5);
    Block::produce(producer, chain, 1, parent.hash, stamp(1), proof, txs)
}

#[test]
fn a_blocks_transactions_are_checked_for_count_root_size_name_and_signature() {
    let mut spec = open_spec();
    spec.max_block_txs = 2;
    spec.max_register_name_bytes = 4;
    spec.max_register_value_bytes = 8;
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let now = spec.slot_due_ms(1);
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
    assert_eq!(check(&swapped), Err(Rejection::BadBodyRoot));
    assert_eq!(
        check_orphan(&spec, &chain, &swapped, now, None),
        Err(Rejection::BadBodyRoot)
    );
    let mut dropped = block_with(&spec, &producer, vec![tx(b"a", b"v")]);
    dropped.txs.clear();
    assert_eq!(check(&dropped), Err(Rejection::BadBodyRoot));

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
    let spec = open_spec();
    let chain = spec.chain_id();
    let producer = Keypair::from_secret(&[7; 32]);
    let good = block_with(&spec, &producer, vec![]);
    let now = spec.slot_due_ms(good.header.stamp.slot);
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
    let sizes = spec.sizes(crate::ProofKind::Plain).unwrap();
    let mut small = good.clone();
    small.header.proof.plain_mut().unwrap().k = sizes.start() - 1;
    assert_eq!(
        check_orphan(&spec, &chain, &small, now, None),
        Err(Rejection::BadK(sizes.start() - 1))
    );
    let mut large = good.clone();
    large.header.proof.plain_mut().unwrap().k = sizes.end() + 1;
    assert_eq!(
        check_orphan(&spec, &chain, &large, now, None),
        Err(Rejection::BadK(sizes.end() + 1))
    );
    // A scheme the spec does not name.
    let mut other = spec.clone();
    other.proofs.clear();
    other.set_sizes(crate::ProofKind::Hard, 16, 32);
    assert!(other.validate().is_ok());
    assert_eq!(
        check_orphan(&other, &chain, &good, now, None),
        Err(Rejection::KindRefused(1))
    );
    // Signed, but naming no record of its plot.
    let k = good.header.proof.k();
    let mut proof = good.header.proof.clone();
    proof.plain_mut().unwrap().nonce = 1 << k;
    let beyond = Block::produce(
        &producer,
        chain,
        good.header.height,
        good.header.parent,
        good.header.stamp,
        proof,
        vec![],
    );
    assert!(matches!(
        check_orphan(&spec, &chain, &beyond, now, None),
        Err(Rejection::BadProof(why)) if why.contains("is not below 2^")
    ));
    // Made in a slot later than any clock allows.
    let allowed = CLOCK_ALLOWANCE_MS;
    assert_eq!(
        check_orphan(&spec, &chain, &good, now - allowed, None),
        Ok(())
    );
    assert_eq!(
        check_orphan(&spec, &chain, &good, now - allowed - 1, None),
        Err(Rejection::Future {
            due_ms: now,
            now_ms: now - allowed - 1
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
            Rejection::SlotNotAfterParent {
                slot: 1,
                parent_slot: 2,
            },
            "slot_not_after_parent",
            true,
        ),
        (
            Rejection::Future {
                due_ms: 2,
                now_ms: 1,
            },
            "future",
            true,
        ),
        (
            Rejection::UnknownSlot(MissingSlot {
                line: [0; 32],
                slot: 1,
            }),
            "unknown_slot",
            false,
        ),
        (Rejection::WrongSlotOutput(1), "wrong_slot_output", true),
        (Rejection::NotEligible, "not_eligible", true),
        (
            Rejection::BelowFinality {
                ancestor: 1,
                head: 9,
                depth: 2,
            },
            "below_finality",
            false,
        ),
        (
            Rejection::TooManyTxs { got: 2, max: 1 },
            "too_many_txs",
            true,
        ),
        (Rejection::BadBodyRoot, "bad_body_root", true),
        (
            Rejection::TooMuchEvidence { got: 2, max: 1 },
            "too_much_evidence",
            true,
        ),
        (Rejection::BadEvidence("x"), "bad_evidence", true),
        (Rejection::EvidenceKnown, "evidence_known", true),
        (Rejection::Banned, "banned", true),
        (Rejection::BadProof("x".into()), "bad_proof", true),
        (Rejection::BadK(1), "bad_k", true),
        (Rejection::KindRefused(2), "kind_refused", true),
        (Rejection::BadSignature, "bad_signature", true),
        (Rejection::BadTxSignature, "bad_tx_signature", true),
        (Rejection::TxTooLarge, "tx_too_large", true),
        (Rejection::EmptyName, "empty_name", true),
        (
            Rejection::BadTxVersion { got: 1, current: 1 },
            "bad_tx_version",
            false,
        ),
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
fn a_slot_may_be_due_ahead_of_the_clock_by_the_allowance_and_no_more() {
    let spec = open_spec();
    let chain = spec.chain_id();
    let parent = Parent::genesis(&spec);
    let block = block_with(&spec, &Keypair::from_secret(&[7; 32]), vec![]);
    let due = spec.slot_due_ms(1);
    let allowed = CLOCK_ALLOWANCE_MS;
    assert!(check_block(&spec, &chain, &parent, &block, due - allowed, None).is_ok());
    assert_eq!(
        check_block(&spec, &chain, &parent, &block, due - allowed - 1, None),
        Err(Rejection::Future {
            due_ms: due,
            now_ms: due - allowed - 1
        })
    );
}

/// A header of `key`'s for `slot` on `parent`, signed.
fn signed_header(
    key: &Keypair,
    chain: [u8; 32],
    slot: u64,
    parent: u8,
) -> crate::block::SignedHeader {
    let proof = ChainProof::plain(key.public(), [1; 32], 16, 5);
    Block::produce(key, chain, 1, [parent; 32], stamp(slot), proof, vec![]).signed_header()
}

#[test]
fn evidence_shows_one_key_signing_two_headers_for_one_slot_or_is_refused() {
    use crate::block::Equivocation;
    let chain = [3; 32];
    let (a, b) = (
        Keypair::from_secret(&[1; 32]),
        Keypair::from_secret(&[2; 32]),
    );
    let good = Equivocation::of(
        signed_header(&a, chain, 4, 0),
        signed_header(&a, chain, 4, 1),
    )
    .expect("an equivocation");
    assert_eq!(check_equivocation(&chain, &good, None), Ok(()));
    assert_eq!(
        check_equivocation(&[9; 32], &good, None),
        Err(Rejection::WrongChain)
    );
    // One header of another chain, signed and in order: still refused.
    for (x, y) in [
        (
            signed_header(&a, chain, 4, 0),
            signed_header(&a, [9; 32], 4, 0),
        ),
        (
            signed_header(&a, [9; 32], 4, 0),
            signed_header(&a, chain, 4, 0),
        ),
    ] {
        let half = Equivocation::of(x, y).expect("two headers of one key and slot");
        assert_eq!(
            check_equivocation(&chain, &half, None),
            Err(Rejection::WrongChain)
        );
    }
    // `of` refuses what is no equivocation; built by hand, the check does.
    let h = |key, slot, parent| signed_header(key, chain, slot, parent);
    assert!(Equivocation::of(h(&a, 4, 0), h(&a, 4, 0)).is_none());
    assert!(Equivocation::of(h(&a, 4, 0), h(&b, 4, 1)).is_none());
    assert!(Equivocation::of(h(&a, 4, 0), h(&a, 5, 1)).is_none());
    let pair = |first, second| Equivocation { first, second };
    let bad = |e: &Equivocation| match check_equivocation(&chain, e, None) {
        Err(Rejection::BadEvidence(_)) => true,
        other => panic!("{other:?}"),
    };
    assert!(bad(&pair(h(&a, 4, 0), h(&b, 4, 1))));
    assert!(bad(&pair(h(&a, 4, 0), h(&a, 5, 1))));
    assert!(bad(&pair(h(&a, 4, 0), h(&a, 4, 0))));
    assert!(bad(&pair(good.second.clone(), good.first.clone())));
    // A header the key did not sign: another key's signature on it.
    let mut forged = good.clone();
    forged.second.signature = b.sign(&forged.second.hash());
    assert!(bad(&forged));
    let mut forged = good.clone();
    forged.first.signature[0] ^= 1;
    assert!(bad(&forged));
}

#[test]
fn a_blocks_evidence_is_counted_rooted_and_checked() {
    use crate::block::{BlockHeader, Equivocation};
    let mut spec = open_spec();
    spec.max_block_evidence = 1;
    let chain = spec.chain_id();
    let now = spec.slot_due_ms(1);
    let producer = Keypair::from_secret(&[7; 32]);
    let (a, b) = (
        Keypair::from_secret(&[1; 32]),
        Keypair::from_secret(&[2; 32]),
    );
    let caught = |key: &Keypair| {
        Equivocation::of(
            signed_header(key, chain, 4, 0),
            signed_header(key, chain, 4, 1),
        )
        .unwrap()
    };
    let block = |evidence: Vec<Equivocation>| {
        let header = BlockHeader {
            chain_id: chain,
            height: 1,
            parent: Parent::genesis(&spec).hash,
            stamp: stamp(1),
            proof: ChainProof::plain(producer.public(), [1; 32], 16, 5),
            body_root: [0; 32],
        };
        Block::sign(&producer, header, vec![], evidence)
    };
    let check = |b: &Block| check_orphan(&spec, &chain, b, now, None);
    assert_eq!(check(&block(vec![caught(&a)])), Ok(()));
    assert_eq!(
        check(&block(vec![caught(&a), caught(&b)])),
        Err(Rejection::TooMuchEvidence { got: 2, max: 1 })
    );
    // Evidence swapped after signing: the body root no longer matches.
    let mut swapped = block(vec![caught(&a)]);
    swapped.evidence[0] = caught(&b);
    assert_eq!(
        check_orphan(&open_spec_with(1), &chain, &swapped, now, None),
        Err(Rejection::BadBodyRoot)
    );
    // Evidence that shows nothing, committed to by the root all the same.
    let mut wrong = caught(&a);
    wrong.second = signed_header(&b, chain, 4, 1);
    assert!(matches!(
        check_orphan(&open_spec_with(1), &chain, &block(vec![wrong]), now, None),
        Err(Rejection::BadEvidence(_))
    ));
    // Two pieces against one key.
    let mut other = caught(&a);
    other.second = signed_header(&a, chain, 4, 2);
    if other.first.hash() > other.second.hash() {
        std::mem::swap(&mut other.first, &mut other.second);
    }
    assert_eq!(
        check_orphan(
            &open_spec_with(2),
            &chain,
            &block(vec![caught(&a), other]),
            now,
            None
        ),
        Err(Rejection::BadEvidence("two pieces against one key"))
    );
}

fn open_spec_with(max_block_evidence: u32) -> ChainSpec {
    let mut spec = open_spec();
    spec.max_block_evidence = max_block_evidence;
    spec
}

#[test]
fn a_header_whose_block_was_checked_is_not_verified_again_in_evidence() {
    use crate::block::Equivocation;
    let chain = [3; 32];
    let key = Keypair::from_secret(&[1; 32]);
    let (a, b) = (
        signed_header(&key, chain, 4, 0),
        signed_header(&key, chain, 4, 1),
    );
    let e = Equivocation::of(a.clone(), b).unwrap();
    let cache = SigCache::default();
    assert!(a.signed(Some(&cache)));
    assert_eq!(cache.hits(Op::VerifyBlock), 0);
    assert_eq!(check_equivocation(&chain, &e, Some(&cache)), Ok(()));
    // The header checked before was found; the other was verified, and is
    // found the next time.
    assert_eq!(cache.hits(Op::VerifyBlock), 1);
    assert_eq!(check_equivocation(&chain, &e, Some(&cache)), Ok(()));
    assert_eq!(cache.hits(Op::VerifyBlock), 3);
    // A forged signature is not taken from the cache of the real one.
    let mut forged = e.clone();
    forged.second.signature[0] ^= 1;
    assert!(check_equivocation(&chain, &forged, Some(&cache)).is_err());
}

/// A proof of the hard scheme, from a real plot's best answer to a
/// slot's challenge: taken where the spec names the kind, refused where
/// it does not, and refused with any one bit of its encoding changed.
#[test]
fn a_hard_proof_is_checked_by_its_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = spacevault::hard::HardPlotOptions::new(16, [7; 32], [1; 32]);
    options.threads = 2;
    let plotted = spacevault::hard::plot(&options, dir.path()).unwrap();
    let plot = spacevault::AnyPlot::open(&plotted.path).unwrap();
    let mut spec = open_spec();
    spec.set_sizes(crate::ProofKind::Hard, 16, 32);
    let chain = spec.chain_id();
    let every = Target::for_records(1, 1);
    let challenge = stamp(1).challenge(&chain);
    let lookup = plot.lookup(&challenge).unwrap().unwrap();
    let proof = ChainProof::from_any(plot.proof(&lookup).unwrap()).unwrap();
    assert_eq!(proof.kind(), crate::ProofKind::Hard);
    let rank = check_proof(&spec, &chain, &stamp(1), every, &proof).unwrap();
    assert_eq!(rank.distance, lookup.distance);
    assert_eq!(rank.tiebreak, lookup.tiebreak());
    assert_eq!(&rank.plot_id, plot.plot_id());
    // The proof is valid for another slot's challenge too, with another
    // score: the score is the challenge's.
    assert_ne!(
        check_proof(&spec, &chain, &stamp(2), every, &proof).map(|r| r.distance),
        Ok(rank.distance)
    );
    let mut plain_only = spec.clone();
    plain_only
        .proofs
        .retain(|r| r.kind == crate::ProofKind::Plain.number());
    assert_eq!(
        check_proof(&plain_only, &chain, &stamp(1), every, &proof),
        Err(Rejection::KindRefused(2))
    );
    let mut w = crate::codec::Writer::new();
    proof.encode_into(&mut w);
    let bytes = w.finish();
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let Ok(edited) = ChainProof::decode_from(&mut crate::codec::Reader::new(&flipped)) else {
            continue;
        };
        assert!(
            check_proof(&spec, &chain, &stamp(1), every, &edited).is_err(),
            "bit {bit} changed, the proof still passes"
        );
    }
}
