//! Each branch's line of slots: a block is checked on the line its own
//! branch gives its era, and an output of another branch's line is not
//! its slot's.

use super::*;
use spacevault_chain::time::MissingSlot;
use spacevault_store::Pruned;

/// Eras of four slots: era 2 (slots 9 to 12) takes as entropy the
/// latest block of the branch at or before slot 4.
fn spec_of_short_eras() -> ChainSpec {
    let mut spec = spec();
    spec.pot_era_slots = 4;
    spec
}

/// A test output of `slot` on `line`, which differs from line to line.
fn output_on(line: &[u8; 32], slot: u64) -> [u8; FORM_BYTES] {
    let mut out = [0; FORM_BYTES];
    out[..32].copy_from_slice(line);
    out[32..40].copy_from_slice(&slot.to_le_bytes());
    out
}

/// Keeps `slot`'s test output on `line`, and returns its stamp.
fn keep_on(engine: &Engine, line: [u8; 32], slot: u64) -> Stamp {
    let output = output_on(&line, slot);
    let out = SlotOutput {
        slot,
        line,
        output,
        proof: [0; FORM_BYTES],
    };
    engine.store().put_slot(&out).unwrap();
    Stamp { slot, output }
}

/// The line a child of the kept block `parent` made in `slot` is checked
/// on (the closing slots of the eras between kept).
fn line_for(engine: &Engine, parent: &[u8; 32], slot: u64) -> [u8; 32] {
    let parent = parent_of(engine.store(), engine.spec(), parent)
        .unwrap()
        .unwrap();
    super::super::lines::line_of_child(engine.store(), engine.spec(), &parent, slot)
        .unwrap()
        .unwrap()
}

/// Keeps slots 1 to 8 (eras 0 and 1 of four slots, one line for every
/// branch).
fn keep_eras_0_and_1(engine: &Engine) {
    let genesis = engine.head().hash;
    for slot in 1..=8 {
        let line = line_for(engine, &genesis, slot);
        keep_on(engine, line, slot);
    }
}

/// `slot`'s stamp for a child of the genesis: its output on the line the
/// genesis's branch gives the slot's era.
fn stamp_on_genesis_branch(engine: &Engine, slot: u64) -> Stamp {
    let line = line_for(engine, &Parent::genesis(engine.spec()).hash, slot);
    Stamp {
        slot,
        output: output_on(&line, slot),
    }
}

/// `vault`'s block on `parent` (hash, height) with `stamp`.
async fn block_on(vault: &Vault, parent: ([u8; 32], u64), stamp: Stamp) -> Block {
    let chain = vault.engine.chain_id();
    let found = vault.farmer.best(stamp.challenge(&chain)).await.unwrap();
    Block::produce(
        &vault.key,
        chain,
        parent.1 + 1,
        parent.0,
        stamp,
        found.proof,
        vec![],
    )
}

#[tokio::test]
async fn branches_that_differ_before_an_eras_entropy_slot_check_its_blocks_on_their_own_lines() {
    let mut a = vault_without_slots(1, spec_of_short_eras());
    let b = vault_without_slots(2, spec_of_short_eras());
    let genesis = a.engine.head().hash;
    // Eras 0 and 1 are one line for every branch.
    keep_eras_0_and_1(&a.engine);
    assert_eq!(
        line_for(&a.engine, &genesis, 5),
        line_for(&a.engine, &genesis, 8)
    );
    // Two branches from the genesis: A's first block in slot 2, B's in
    // slot 3, both at or before era 2's entropy slot (4).
    let stamp = stamp_on_genesis_branch;
    let a1 = block_on(&a, (genesis, 0), stamp(&a.engine, 2)).await;
    let b1 = block_on(&b, (genesis, 0), stamp(&a.engine, 3)).await;
    for block in [&a1, &b1] {
        a.engine.import(block.clone(), at(9)).unwrap();
    }
    let line_a = line_for(&a.engine, &a1.hash(), 9);
    let line_b = line_for(&a.engine, &b1.hash(), 9);
    assert_ne!(
        line_a, line_b,
        "branches apart by slot 4 must not share era 2's line"
    );
    // The entropy slot itself counts, the slot after it does not: a block
    // in slot 4 on A moves era 2's line, one in slot 5 does not.
    let a_on = block_on(&a, (a1.hash(), 1), stamp(&a.engine, 4)).await;
    let a_after = block_on(&a, (a1.hash(), 1), stamp(&a.engine, 5)).await;
    for block in [&a_on, &a_after] {
        a.engine.import(block.clone(), at(9)).unwrap();
    }
    assert_ne!(line_for(&a.engine, &a_on.hash(), 9), line_a);
    assert_eq!(line_for(&a.engine, &a_after.hash(), 9), line_a);
    // A block after the entropy slot does not move the era's line.
    let a_later = block_on(&a, (a1.hash(), 1), stamp(&a.engine, 6)).await;
    a.engine.import(a_later.clone(), at(9)).unwrap();
    assert_eq!(line_for(&a.engine, &a_later.hash(), 9), line_a);
    // Slot 9 of A's line only: A's block takes it.
    let on_a = keep_on(&a.engine, line_a, 9);
    let a2 = block_on(&a, (a1.hash(), 1), on_a).await;
    assert!(a.engine.import(a2, at(9)).is_ok());
    // B's block carrying A's output: B's line has not reached slot 9 here.
    let b2 = block_on(&b, (b1.hash(), 1), on_a).await;
    assert_eq!(
        a.engine.import(b2.clone(), at(9)),
        Err(Rejection::UnknownSlot(MissingSlot {
            line: line_b,
            slot: 9
        }))
    );
    // Once it has, A's output is not B's slot's; B's own is.
    let on_b = keep_on(&a.engine, line_b, 9);
    assert_eq!(
        a.engine.import(b2, at(9)),
        Err(Rejection::WrongSlotOutput(9))
    );
    let b2 = block_on(&b, (b1.hash(), 1), on_b).await;
    assert!(a.engine.import(b2.clone(), at(9)).is_ok());
    // What a block keeps of its lines: its era's, and the block before
    // its era, the next era's entropy.
    let info = a.engine.store().info(&b2.hash()).unwrap().unwrap();
    assert_eq!((info.line, info.opening), (line_b, b1.hash()));
}

#[tokio::test]
async fn a_missing_closing_slot_of_an_era_between_is_what_a_block_waits_for() {
    let mut a = vault_without_slots(1, spec_of_short_eras());
    let genesis = a.engine.head().hash;
    for slot in 1..=4 {
        let line = line_for(&a.engine, &genesis, slot);
        keep_on(&a.engine, line, slot);
    }
    let era_1 = line_for(&a.engine, &genesis, 5);
    // A block of era 2 on the genesis needs era 1's closing slot (8).
    let block = block_on(
        &a,
        (genesis, 0),
        Stamp {
            slot: 9,
            output: [1; FORM_BYTES],
        },
    )
    .await;
    assert_eq!(
        a.engine.import(block, at(9)),
        Err(Rejection::UnknownSlot(MissingSlot {
            line: era_1,
            slot: 8
        }))
    );
}

#[tokio::test]
async fn no_block_is_signed_with_an_output_that_is_not_its_slots_on_the_heads_branch() {
    // The farmer looked up an output, then the head moved to a branch
    // whose line gives the slot another: signing would spend the slot on a
    // block every vault refuses.
    let mut a = vault(1);
    let other = Stamp {
        slot: 3,
        output: [9; FORM_BYTES],
    };
    let chain = a.engine.chain_id();
    let found = a.farmer.best(other.challenge(&chain)).await.unwrap();
    let key = a.key.clone();
    assert_eq!(
        a.engine.produce(&key, other, found.proof, &found.rank),
        None
    );
    assert!(a.engine.produced_slot() < 3, "the slot was not spent");
    assert!(a.produce(3).await.is_some());
}

#[tokio::test]
async fn once_an_eras_line_is_final_the_other_lines_of_the_era_are_forgotten() {
    let mut spec = spec_of_short_eras();
    spec.finality_depth = 2;
    let mut a = vault_without_slots(1, spec.clone());
    let b = vault_without_slots(2, spec);
    let genesis = a.engine.head().hash;
    keep_eras_0_and_1(&a.engine);
    let stamp = stamp_on_genesis_branch;
    // Two branches apart before era 2's entropy slot (4): two lines of
    // era 2 (slots 9 to 12), both kept here.
    let a1 = block_on(&a, (genesis, 0), stamp(&a.engine, 2)).await;
    let b1 = block_on(&b, (genesis, 0), stamp(&a.engine, 3)).await;
    for block in [&a1, &b1] {
        a.engine.import(block.clone(), at(12)).unwrap();
    }
    let (line_a, line_b) = (
        line_for(&a.engine, &a1.hash(), 9),
        line_for(&a.engine, &b1.hash(), 9),
    );
    let mut on_a = Vec::new();
    for slot in 9..=12 {
        on_a.push(keep_on(&a.engine, line_a, slot));
        keep_on(&a.engine, line_b, slot);
    }
    let lines_of_era_2 = |engine: &Engine| {
        let mut lines = engine.store().lines_of_era(2).unwrap();
        lines.sort();
        lines
    };
    let mut both = vec![line_a, line_b];
    both.sort();
    // A's chain grows in era 2; while its first block of the era is not
    // final (two blocks above it), B's line stays.
    let mut tip = (a1.hash(), 1);
    for stamp in &on_a[..2] {
        let block = block_on(&a, tip, *stamp).await;
        a.engine.import(block.clone(), at(12)).unwrap();
        tip = (block.hash(), tip.1 + 1);
    }
    assert_eq!(a.engine.head().hash, tip.0);
    assert_eq!(lines_of_era_2(&a.engine), both);
    assert_eq!(a.engine.take_pruned(), Pruned::default());
    // The block of slot 9 final: era 2 is A's line, and B's is forgotten
    // with its slots; eras 0 and 1 had one line each.
    let block = block_on(&a, tip, on_a[2]).await;
    a.engine.import(block.clone(), at(12)).unwrap();
    tip = (block.hash(), tip.1 + 1);
    assert_eq!(lines_of_era_2(&a.engine), [line_a]);
    assert_eq!(a.engine.take_pruned(), Pruned { lines: 1, slots: 4 });
    assert_eq!(a.engine.store().last_slot_on(&line_b).unwrap(), None);
    assert_eq!(a.engine.store().slots_on(&line_a, 9, 10).unwrap().len(), 4);
    assert_eq!(a.engine.store().lines_pruned_to().unwrap(), 3);
    // A slot of B's line kept again (a fetch that was under way) is
    // forgotten again with the next head.
    keep_on(&a.engine, line_b, 10);
    assert_eq!(a.engine.store().lines_pruned_to().unwrap(), 2);
    let block = block_on(&a, tip, on_a[3]).await;
    a.engine.import(block, at(12)).unwrap();
    assert_eq!(a.engine.take_pruned(), Pruned { lines: 1, slots: 1 });
    assert_eq!(lines_of_era_2(&a.engine), [line_a]);
    assert_eq!(a.engine.store().lines_pruned_to().unwrap(), 3);
    // B's branch, its line gone, is below the final blocks.
    let b2 = block_on(
        &b,
        (b1.hash(), 1),
        Stamp {
            slot: 10,
            output: output_on(&line_b, 10),
        },
    )
    .await;
    assert!(matches!(
        a.engine.import(b2, at(12)),
        Err(Rejection::BelowFinality { .. })
    ));
}
