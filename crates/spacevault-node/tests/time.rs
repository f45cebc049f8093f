//! The proof of time across vaults: one timekeeper's slots reach every
//! vault, each checked before it is kept; a vault that joins late asks a
//! peer for the slots it missed; a wrong output is refused and its sender
//! penalised, and a catch-up answered with old slots ends; without a
//! timekeeper no slot comes and the chain waits, and it goes on once one
//! starts; a vault whose clock is behind the timekeeper's is told so; a
//! split of several eras gives each half a line of its own, and heals onto
//! one; a vault whose store was lost signs no slot its key signed before.

mod common;

use common::*;
use spacevault_chain::time::{SlotOutput, Timeline};
use spacevault_chain::ChainSpec;
use spacevault_network::Topic;
use spacevault_node::Node;
use std::time::Duration;

/// Short slots of a few hundred squarings in small groups: a timekeeper
/// costs the test little.
fn time_spec(slot_ms: u64) -> ChainSpec {
    let mut spec = spec(slot_ms, 2);
    spec.pot_iterations = 300;
    spec.pot_era_slots = 4;
    spec.pot_discriminant_bits = 512;
    spec
}

/// Slot `slot`'s output on the line of `node`'s chain.
fn output_at(node: &Node, slot: u64) -> Option<SlotOutput> {
    canonical_output(node, slot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timekeepers_slots_reach_every_vault_and_a_late_one_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let spec = time_spec(200);
    let files: Vec<VaultFiles> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    let keeper = start_with(&spec, &files[0], vec![], false, |c| c.timekeeper = true).await;
    let boot = keeper.listen_addrs(Duration::from_secs(5)).await;
    let mut nodes = vec![keeper];
    for f in &files[1..3] {
        nodes.push(start(&spec, f, boot.clone(), false).await);
    }
    // Eras of four slots: slot 9 is in the third era.
    let reached = wait_for(Duration::from_secs(30), || {
        nodes.iter().all(|n| n.slot() >= 9)
    })
    .await;
    let slots: Vec<u64> = nodes.iter().map(Node::slot).collect();
    assert!(reached, "the slots never reached every vault: {slots:?}");
    for s in 1..=9 {
        let first = output_at(&nodes[0], s);
        assert!(first.is_some(), "the timekeeper kept no slot {s}");
        for n in &nodes[1..] {
            assert_eq!(output_at(n, s), first, "slot {s} differs");
        }
    }
    // A vault that starts now has missed them: it asks for them, and
    // checks each, from slot 1.
    nodes.push(start(&spec, &files[3], boot, false).await);
    let caught_up = wait_for(Duration::from_secs(30), || nodes[3].slot() >= 12).await;
    assert!(caught_up, "the late vault is at slot {}", nodes[3].slot());
    assert_eq!(output_at(&nodes[3], 1), output_at(&nodes[0], 1));
    assert!(metric(&nodes[0], "spacevault_slots_kept_total") >= 12.0);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_slot_output_is_refused_and_without_a_timekeeper_the_chain_waits() {
    let dir = tempfile::tempdir().unwrap();
    let spec = time_spec(100);
    let files: Vec<VaultFiles> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    // No timekeeper among them.
    let first = start(&spec, &files[0], vec![], false).await;
    let boot = first.listen_addrs(Duration::from_secs(5)).await;
    let mut nodes = vec![first, start(&spec, &files[1], boot.clone(), false).await];
    let (rogue, mut events) =
        joined_rogue(99, spec.chain_id(), boot.clone(), nodes[0].peer_id()).await;
    // Slot 1 as a timekeeper would make it, its output then swapped for
    // another form of the group: the proof no longer holds.
    let line = Timeline::first(spec.chain_id(), spec.time()).unwrap();
    let good = line.prove_next();
    let mut wrong = good.clone();
    wrong.output = good.proof;
    // It answers the vault's catch-up (asked when it connected) with old
    // slots: the catch-up ends at once rather than ask again forever.
    let mut junk = good.clone();
    junk.slot = 0;
    // An output for a slot past the next makes the vault ask its sender
    // (the catch-up it began when the rogue connected may have gone to
    // the other vault, and one may be under way when an output comes:
    // each round sends another, a new message to gossip).
    let mut ahead = good.clone();
    ahead.slot = 3;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let (mut refused, mut ended) = (false, false);
    while !(refused && ended) && std::time::Instant::now() < deadline {
        rogue.publish(Topic::Time, wrong.encode());
        rogue.publish(Topic::Time, ahead.encode());
        ahead.slot += 1;
        while let Ok(Some(ev)) =
            tokio::time::timeout(Duration::from_millis(20), events.recv()).await
        {
            match ev {
                spacevault_network::Event::Request { reply, .. } => rogue.respond(
                    reply,
                    spacevault_network::Response::Slots(vec![junk.encode(); 256]),
                ),
                spacevault_network::Event::Gossip { id, source, .. } => {
                    rogue.validate(id, source, spacevault_network::Verdict::Ignore)
                }
                _ => {}
            }
        }
        refused = rejected(&nodes[0], "time", "not_proved") >= 1.0;
        ended = rejected(&nodes[0], "sync_time", "out_of_order") >= 1.0;
    }
    drain(&rogue, &mut events).await;
    assert!(refused, "the wrong output was never refused");
    assert!(ended, "the catch-up never refused the old slots");
    // No timekeeper runs: no slot has come, and no block.
    assert!(nodes.iter().all(|n| n.slot() == 0 && n.height() == 0));
    // A timekeeper starts: slots come, and blocks with them.
    nodes.push(start_with(&spec, &files[2], boot, false, |c| c.timekeeper = true).await);
    let went_on = wait_for(Duration::from_secs(20), || {
        nodes.iter().all(|n| n.height() >= 3)
    })
    .await;
    let heights: Vec<u64> = nodes.iter().map(|n| n.height()).collect();
    assert!(went_on, "the chain never went on: {heights:?}");
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_whose_clock_is_behind_the_timekeepers_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let spec = time_spec(150);
    let files = vault_files(dir.path(), 0);
    // No timekeeper among the vaults: the rogue keeps time, with a clock
    // 350 ms ahead of theirs, so that to them each output comes 350 ms
    // early (within the 500 ms allowance, so taken).
    let node = start(&spec, &files, vec![], true).await;
    let boot = node.listen_addrs(Duration::from_secs(5)).await;
    let (rogue, mut events) = joined_rogue(98, spec.chain_id(), boot, node.peer_id()).await;
    let client = client_of(&node);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut warning = None;
    while warning.is_none() && std::time::Instant::now() < deadline {
        // The line the vault follows, its next slot (the vault's own
        // blocks make the entropy of its eras from the third on).
        let out = slots_ahead(&node, 1).remove(0);
        let due = spec.slot_due_ms(out.slot);
        let send_at = due.saturating_sub(350);
        let wait = send_at.saturating_sub(spacevault_node::now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
        rogue.publish(Topic::Time, out.encode());
        drain(&rogue, &mut events).await;
        warning = client.status().await.unwrap().clock_warning;
    }
    let status = client.status().await.unwrap();
    let warning = warning.expect("the vault was never told its clock is behind");
    assert!(warning.contains("behind"), "{warning}");
    let offset = status.clock_offset_ms.expect("an offset");
    assert!((-360..=-250).contains(&offset), "offset {offset} ms");
    assert!(metric(&node, "spacevault_clock_offset_ms") <= -250.0);
    assert!(node.slot() >= 8, "the early outputs were taken");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_of_several_eras_gives_each_half_a_line_of_its_own_and_heals_onto_one() {
    let dir = tempfile::tempdir().unwrap();
    // Eras of four slots of 200 ms: era e takes as entropy the latest
    // block of the branch at or before slot 4(e - 1). Final blocks 40
    // below the head: deeper than either half's branch grows apart.
    let mut spec = time_spec(200);
    spec.finality_depth = 40;
    let files: Vec<VaultFiles> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    // A timekeeper on each side of the split to come.
    let nodes = network_keeping_time_at(&spec, &files, false, 2, &[0, 2]).await;
    let (left, right): (Vec<&Node>, Vec<&Node>) =
        (nodes[..2].iter().collect(), nodes[2..].iter().collect());
    split(&left, &right).await;
    let split_slot = nodes.iter().map(Node::slot).max().unwrap();
    let line = |n: &Node| n.time().wanted().unwrap().0;
    // Each half's branch makes the entropy of its eras two on: the
    // halves' lines part, and each half's outputs are nothing to the
    // other's.
    let apart = wait_for(Duration::from_secs(30), || {
        nodes.iter().all(|n| n.slot() > split_slot + 12) && line(&nodes[0]) != line(&nodes[2])
    })
    .await;
    assert!(
        apart,
        "slots {:?} from {split_slot}",
        nodes.iter().map(Node::slot).collect::<Vec<_>>()
    );
    assert_eq!(line(&nodes[0]), line(&nodes[1]));
    assert_eq!(line(&nodes[2]), line(&nodes[3]));
    // One slot, kept on each side: on two lines.
    let slot = nodes.iter().map(Node::slot).min().unwrap();
    let kept_line = |n: &Node| canonical_output(n, slot).map(|o| o.line);
    assert!(kept_line(&nodes[0]).is_some() && kept_line(&nodes[2]).is_some());
    assert_ne!(kept_line(&nodes[0]), kept_line(&nodes[2]));
    heal(&left, &right);
    reconnect(&right, left[0]).await;
    // One chain and one line again: the half whose branch loses takes the
    // winner's line, era by era, to check its blocks, and follows it.
    let healed = wait_for(Duration::from_secs(40), || {
        let h = nodes.iter().map(Node::height).min().unwrap();
        agree_up_to(&nodes.iter().collect::<Vec<_>>(), h.saturating_sub(2))
            && nodes.iter().all(|n| line(n) == line(&nodes[0]))
            && nodes.iter().all(|n| n.slot() > split_slot + 20)
    })
    .await;
    assert!(
        healed,
        "heights {:?}, slots {:?}",
        nodes.iter().map(Node::height).collect::<Vec<_>>(),
        nodes.iter().map(Node::slot).collect::<Vec<_>>()
    );
    assert!(nodes
        .iter()
        .any(|n| metric(n, "spacevault_reorgs_total") > 0.0));
    // Some vault took another branch's line from a peer for its blocks.
    assert!(nodes
        .iter()
        .any(|n| metric(n, "spacevault_line_slots_fetched_total") > 0.0));
    // Once the chain's final blocks are past the split, the losing half's
    // own line of those eras is forgotten.
    let forgotten = wait_for(Duration::from_secs(40), || {
        nodes
            .iter()
            .any(|n| metric(n, "spacevault_line_slots_pruned_total") > 0.0)
    })
    .await;
    assert!(
        forgotten,
        "heights {:?}",
        nodes.iter().map(Node::height).collect::<Vec<_>>()
    );
    // The canonical chain's line of the split's eras stays whole.
    let canonical = canonical_output(&nodes[0], slot);
    assert!(canonical.is_some());
    assert!(nodes.iter().all(|n| canonical_output(n, slot) == canonical));
    for n in nodes {
        n.stop().await;
    }
}

/// The slots of the blocks of `node`'s canonical chain.
fn block_slots(node: &Node) -> Vec<u64> {
    let height = node.height();
    let engine = node.engine();
    let store = engine.store();
    (1..=height)
        .filter_map(|h| store.canonical(h).unwrap())
        .map(|hash| store.block(&hash).unwrap().unwrap().header.stamp.slot)
        .collect()
}

/// A vault that keeps time alone and loses its store, its key's record
/// of signed slots kept: it computes the slots it missed as fast as it
/// can and farms each in turn, and without the record would sign blocks
/// again in slots its key signed before, each pair evidence that bans the
/// key for good. It signs none of them, and goes on past them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_whose_store_was_lost_signs_no_slot_its_key_signed_before() {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(100, 1);
    let files = vault_files(dir.path(), 0);
    let record = dir.path().join("signed-slots");
    let keeper = |c: &mut spacevault_node::NodeConfig| {
        c.timekeeper = true;
        c.signed_slots = Some(record.clone());
    };
    let node = start_with(&spec, &files, vec![], false, keeper).await;
    let produced = wait_for(Duration::from_secs(20), || node.height() >= 8).await;
    assert!(produced, "the vault produced {} blocks", node.height());
    let signed = block_slots(&node);
    node.stop().await;
    let last = *signed.iter().max().unwrap();
    std::fs::remove_dir_all(&files.data).unwrap();

    let node = start_with(&spec, &files, vec![], false, keeper).await;
    let passed = wait_for(Duration::from_secs(30), || {
        block_slots(&node).iter().any(|&s| s > last)
    })
    .await;
    let again = block_slots(&node);
    assert!(passed, "no block past slot {last}: {again:?}");
    let twice: Vec<u64> = again
        .iter()
        .filter(|&s| signed.contains(s))
        .copied()
        .collect();
    assert!(twice.is_empty(), "slots signed twice: {twice:?}");
    assert!(
        again.iter().all(|&s| s > last),
        "{again:?} after {signed:?}"
    );
    node.stop().await;
}
