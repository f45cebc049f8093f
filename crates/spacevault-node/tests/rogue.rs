//! A peer that sends what no honest vault sends: every message is refused
//! with a reason, counted, and never relayed or stored.

mod common;

use common::*;
use spacevault_chain::{Announce, Block, ChainProof, Keypair, RegisterTx, Stamp};
use spacevault_network::{self as net, Event, Request, Response, Topic, TransportKind, Verdict};
use spacevault_node::engine::MAX_ORPHANS_PER_ORIGIN;
use std::time::Duration;

/// A network of vaults past height 2, and a rogue peer joined to the
/// first of them.
struct Rogued {
    nodes: Vec<spacevault_node::Node>,
    rogue: net::Handle,
    events: tokio::sync::mpsc::Receiver<Event>,
    /// The rogue's key (its secret is `secret` repeated).
    key: Keypair,
    chain: [u8; 32],
}

/// `vaults` vaults with plots in `dir`, two copies of each blob, past
/// height 2, and a rogue of secret `secret` connected to the first.
async fn rogue_beside(dir: &std::path::Path, vaults: usize, secret: u8) -> Rogued {
    let files: Vec<_> = (0..vaults).map(|i| vault_files(dir, i)).collect();
    let spec = spec(300, 2);
    let chain = spec.chain_id();
    let nodes = network_at(&spec, &files, false, 2).await;
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    let (rogue, events) = joined_rogue(secret, chain, boot, nodes[0].peer_id()).await;
    Rogued {
        nodes,
        rogue,
        events,
        key: Keypair::from_secret(&[secret; 32]),
        chain,
    }
}

/// Publishes a stale announcement, new each time (refused, counted, and
/// no fault: a fault would graylist the rogue, and its later messages go
/// unread), and returns the vault's count of them before it: once the
/// count passes that, every message the rogue sent before was handled.
fn marker(rogue: &net::Handle, vault: &spacevault_node::Node, n: &mut u64) -> f64 {
    *n += 1;
    let before = rejected(vault, "vaults", "stale");
    let chain = vault.engine().chain_id();
    let announcer = Keypair::from_secret(&[6; 32]);
    let stale = spacevault_node::now_ms() - 600_000 - *n;
    rogue.publish(
        Topic::Vaults,
        Announce::signed(&announcer, &chain, stale, vec![]).encode(),
    );
    before
}

/// Sends markers until the rogue's gossip reaches `vault` at all (its
/// mesh forms first); `n` counts the markers sent.
async fn until_heard(
    rogue: &net::Handle,
    events: &mut tokio::sync::mpsc::Receiver<Event>,
    vault: &spacevault_node::Node,
    n: &mut u64,
) {
    let before = marker(rogue, vault, n);
    while rejected(vault, "vaults", "stale") <= before {
        assert!(*n < 400, "the rogue's gossip never reached the vault");
        drain(rogue, events).await;
        marker(rogue, vault, n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_flood_keeps_no_more_than_its_senders_share_and_the_chain_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let Rogued {
        nodes,
        rogue,
        mut events,
        key,
        chain,
    } = rogue_beside(dir.path(), 2, 99).await;
    let mut n = 0;
    until_heard(&rogue, &mut events, &nodes[0], &mut n).await;
    let height_before = nodes[0].height();
    let mut most = 0;
    for i in 0..3 * MAX_ORPHANS_PER_ORIGIN as u64 {
        let head = nodes[0].engine().head();
        let proof = ChainProof::plain(key.public(), [9; 32], 16, i);
        let parent = *blake3::hash(&i.to_le_bytes()).as_bytes();
        // In a slot the vault has reached (an orphan's slot is checked
        // for the clock alone).
        let stamp = stamp_at(&nodes[0], 1).unwrap();
        let orphan = Block::produce(&key, chain, head.height + 5, parent, stamp, proof, vec![]);
        rogue.publish(Topic::Blocks, orphan.encode());
        if i % 16 == 15 {
            drain(&rogue, &mut events).await;
        }
        most = most.max(nodes[0].engine().orphan_count());
    }
    let before = marker(&rogue, &nodes[0], &mut n);
    let handled = wait_for(Duration::from_secs(30), || {
        most = most.max(nodes[0].engine().orphan_count());
        rejected(&nodes[0], "vaults", "stale") > before
    })
    .await;
    assert!(handled, "the flood was never handled");
    assert_eq!(
        nodes[0].engine().orphan_count(),
        MAX_ORPHANS_PER_ORIGIN,
        "the rogue's share"
    );
    assert!(most <= MAX_ORPHANS_PER_ORIGIN, "{most} orphans at once");
    // The vaults kept following their chain meanwhile.
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.height() >= height_before + 3))
        .await
    );
    for n in nodes {
        n.stop().await;
    }
}

/// The parent of `head` on `node`: its hash and height.
fn base_of(node: &spacevault_node::Node, head: &spacevault_chain::Parent) -> ([u8; 32], u64) {
    let info = node.engine().store().info(&head.hash).unwrap().unwrap();
    (info.parent, head.height - 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_message_is_refused_counted_and_not_relayed() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    let chain = spec.chain_id();
    let nodes = network_at(&spec, &files, false, 2).await;
    // Rogues join through vault 0 only; vault 1 must hear nothing of them.
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    let start_rogue = |secret: u8| {
        let (boot, v0, v1) = (boot.clone(), nodes[0].peer_id(), &nodes[1]);
        async move {
            // Blocked by vault 1 before it can meet it.
            let key = Keypair::from_secret(&[secret; 32]).public();
            v1.network().block(net::peer_of(&key).unwrap());
            joined_rogue(secret, chain, boot, v0).await
        }
    };
    let (rogue, _rogue_events) = start_rogue(99).await;
    let rogue_key = Keypair::from_secret(&[99; 32]);
    let proof = ChainProof::plain(rogue_key.public(), [9; 32], 16, 1);
    let owner = Keypair::from_secret(&[5; 32]);
    // Vaults that exist only in announcements; the second is heard at
    // `newest_replayed` just before its case is sent.
    let announcer = Keypair::from_secret(&[6; 32]);
    let replayed = Keypair::from_secret(&[7; 32]);
    let newest_replayed = std::cell::Cell::new(spacevault_node::now_ms());
    // The messages of one round, on the head as it is then: each round's
    // differ, since gossip drops repeats.
    let messages = |head: &spacevault_chain::Parent,
                    round: u8|
     -> Vec<(Topic, Vec<u8>, &'static str)> {
        // The head's parent, whose children the vault's last slot is always
        // after (the head itself is often of that slot), the vault's last
        // slot, and the head's own.
        let base = base_of(&nodes[0], head);
        let vault = &nodes[0];
        let stamp = stamp_at(vault, vault.slot()).unwrap();
        let head_stamp = stamp_at(vault, head.slot.max(1)).unwrap();
        let mut wrong = stamp;
        wrong.output[40] ^= 1;
        let far = Stamp {
            slot: stamp.slot + 3_600_000 / spec.slot_ms,
            output: stamp.output,
        };
        let now = spacevault_node::now_ms();
        let mut stolen = proof.clone();
        stolen.plain_mut().unwrap().farmer_key = files[0].key.public();
        stolen.plain_mut().unwrap().nonce = round as u64;
        let mut future = proof.clone();
        future.plain_mut().unwrap().nonce = round as u64;
        let mut bad_tx = RegisterTx::signed(&owner, &chain, b"n", 1, &[round]);
        bad_tx.value = b"changed".to_vec();
        vec![
            (Topic::Blocks, vec![1, 2, round], "malformed"),
            // A block on the head, signed by the rogue with a stolen proof.
            (
                Topic::Blocks,
                Block::produce(&rogue_key, chain, base.1 + 1, base.0, stamp, stolen, vec![])
                    .encode(),
                "bad_signature",
            ),
            (
                Topic::Blocks,
                Block::produce(
                    &rogue_key,
                    chain,
                    base.1 + 1,
                    base.0,
                    far,
                    future.clone(),
                    vec![],
                )
                .encode(),
                "future",
            ),
            // A slot with an output the slot does not have.
            (
                Topic::Blocks,
                Block::produce(
                    &rogue_key,
                    chain,
                    base.1 + 1,
                    base.0,
                    wrong,
                    future.clone(),
                    vec![],
                )
                .encode(),
                "wrong_slot_output",
            ),
            // A child in its parent's slot.
            (
                Topic::Blocks,
                Block::produce(
                    &rogue_key,
                    chain,
                    head.height + 1,
                    head.hash,
                    head_stamp,
                    future.clone(),
                    vec![],
                )
                .encode(),
                "slot_not_after_parent",
            ),
            // A block of another chain.
            (
                Topic::Blocks,
                Block::produce(
                    &rogue_key,
                    [7; 32],
                    base.1 + 1,
                    base.0,
                    stamp,
                    future,
                    vec![],
                )
                .encode(),
                "wrong_chain",
            ),
            // An orphan, signed, whose proof names no record of its plot.
            (
                Topic::Blocks,
                Block::produce(
                    &rogue_key,
                    chain,
                    head.height + 3,
                    [round; 32],
                    stamp,
                    ChainProof::plain(
                        *proof.farmer_key(),
                        *proof.seed(),
                        proof.k(),
                        1 << proof.k(),
                    ),
                    vec![],
                )
                .encode(),
                "bad_proof",
            ),
            (Topic::Txs, bad_tx.encode(), "bad_tx_signature"),
            // A replay: version 0 was never to be written.
            (
                Topic::Txs,
                RegisterTx::signed(&owner, &chain, b"n", 0, &[round]).encode(),
                "bad_tx_version",
            ),
            (Topic::Vaults, vec![0xff; 10 + round as usize], "malformed"),
            // Signed by the rogue, in another vault's name.
            (
                Topic::Vaults,
                {
                    let mut a = Announce::signed(&rogue_key, &chain, now + round as u64, vec![]);
                    a.vault = files[0].key.public();
                    a.encode()
                },
                "bad_signature",
            ),
            (
                Topic::Vaults,
                Announce::signed(
                    &announcer,
                    &chain,
                    now + round as u64,
                    vec![vec![0xff, round]],
                )
                .encode(),
                "malformed",
            ),
            // Older than a vault would be remembered for.
            (
                Topic::Vaults,
                Announce::signed(&announcer, &chain, now - 600_000 - round as u64, vec![]).encode(),
                "stale",
            ),
            (
                Topic::Vaults,
                Announce::signed(&announcer, &chain, now + 3_600_000 + round as u64, vec![])
                    .encode(),
                "future",
            ),
            // Not after the newest heard from that vault: a replay.
            (
                Topic::Vaults,
                Announce::signed(
                    &replayed,
                    &chain,
                    newest_replayed.get() - 1 - round as u64,
                    vec![],
                )
                .encode(),
                "replayed",
            ),
        ]
    };
    let head = nodes[0].engine().head();
    let cases: Vec<(Topic, &str)> = messages(&head, 0).iter().map(|m| (m.0, m.2)).collect();
    // A rogue for each kind of message: one faulty message costs its
    // sender more gossip score than the graylist allows, and a graylisted
    // peer's later messages are dropped unread, uncounted.
    // Each case must raise its own count: several share a reason, and a
    // reason counted already proves nothing of the next case.
    let mut missing = Vec::new();
    for (kind, &(topic, reason)) in cases.iter().enumerate() {
        let before = rejected(&nodes[0], topic.name(), reason);
        let (sender, mut events) = start_rogue(100 + kind as u8).await;
        if kind == cases.len() - 1 {
            // The replay: the vault is heard anew first, so that what
            // follows is refused for being no newer, not for its age.
            let heard = wait_for(Duration::from_secs(10), || {
                let t = spacevault_node::now_ms();
                newest_replayed.set(t);
                let a = Announce::signed(&replayed, &chain, t, vec![]);
                sender.publish(Topic::Vaults, a.encode());
                let vaults = nodes[0].vaults();
                vaults.newest_heard(&replayed.public()).is_some()
            })
            .await;
            assert!(heard, "the replayed vault was never heard");
            let vaults = nodes[0].vaults();
            newest_replayed.set(vaults.newest_heard(&replayed.public()).unwrap());
        }
        let mut round = 0u8;
        while rejected(&nodes[0], topic.name(), reason) <= before && round < 40 {
            round += 1;
            // The messages are built on the head as it is now, in the
            // last slot the vault has reached.
            let head = nodes[0].engine().head();
            let (topic, data, _) = messages(&head, round).swap_remove(kind);
            sender.publish(topic, data);
            while let Ok(Some(ev)) =
                tokio::time::timeout(Duration::from_millis(50), events.recv()).await
            {
                match ev {
                    Event::Gossip { id, source, .. } => {
                        sender.validate(id, source, Verdict::Ignore)
                    }
                    Event::Request { reply, .. } => sender.respond(reply, Response::NotFound),
                    _ => {}
                }
            }
        }
        if rejected(&nodes[0], topic.name(), reason) <= before {
            missing.push(format!("case {kind}: {} {reason}", topic.name()));
        }
    }
    let text = nodes[0].metrics_text();
    assert!(missing.is_empty(), "not counted: {missing:?}\n{text}");
    // Nothing of it reached vault 1, and vault 0 stored nothing of it.
    for &(topic, reason) in &cases {
        assert_eq!(
            rejected(&nodes[1], topic.name(), reason),
            0.0,
            "{}",
            nodes[1].metrics_text()
        );
    }
    assert!(nodes[0]
        .engine()
        .store()
        .register(&owner.public(), b"n")
        .unwrap()
        .is_none());
    // Requests: a blob whose hash is not what is asked, oversized data.
    let v0 = nodes[0].peer_id();
    let big = vec![0u8; spec.max_blob_bytes as usize + 1];
    match rogue.request(v0, Request::Store { blob: big }).await {
        Ok(Response::Refused(why)) => assert_eq!(why, "blob_too_large"),
        other => panic!("{other:?}"),
    }
    assert_eq!(nodes[0].engine().store().blob_stats().unwrap().0, 0);
    match rogue.request(v0, Request::Fetch { address: [3; 32] }).await {
        Ok(Response::NotFound) => {}
        other => panic!("{other:?}"),
    }
    // The vaults went on agreeing meanwhile.
    let h = nodes.iter().map(|n| n.height()).min().unwrap();
    assert!(agree_up_to(
        &nodes.iter().collect::<Vec<_>>(),
        h.saturating_sub(2)
    ));
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_that_cannot_take_a_message_blames_no_peer() {
    // A full pool: a valid transaction relayed by an honest peer is this
    // vault's trouble, counted apart, and the peer is not scored for it
    // (it was counted as malformed, a fault, before).
    let dir = tempfile::tempdir().unwrap();
    // A vault without plots: it makes no block that would drain its pool.
    let made = vault_files(dir.path(), 0);
    std::fs::create_dir_all(dir.path().join("no-plots")).unwrap();
    let files = vec![VaultFiles {
        key: made.key,
        plots: dir.path().join("no-plots"),
        data: made.data,
    }];
    let spec = spec(300, 1);
    let chain = spec.chain_id();
    let nodes = network(&spec, &files, false).await;
    let v0 = &nodes[0];
    let owner = Keypair::from_secret(&[5; 32]);
    {
        let mut engine = v0.engine();
        for i in 0..spacevault_node::engine::MAX_MEMPOOL {
            let name = format!("n{i}");
            let tx = RegisterTx::signed(&owner, &chain, name.as_bytes(), 1, b"x");
            engine.add_tx(tx).unwrap();
        }
    }
    let boot = v0.listen_addrs(Duration::from_secs(5)).await;
    let mut config = net::Config::new([77; 32], TransportKind::Memory, chain);
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = boot;
    config.heartbeat = Duration::from_millis(100);
    let (peer, _events, _task) = net::start(config).unwrap();
    let mut round = 0u32;
    let unable = || {
        v0.metrics_text()
            .lines()
            .any(|l| l.starts_with("spacevault_messages_unable_total") && l.contains("pool_full"))
    };
    let counted = wait_for(Duration::from_secs(20), || {
        round += 1;
        let name = format!("late {round}");
        let tx = RegisterTx::signed(&owner, &chain, name.as_bytes(), 1, b"x");
        peer.publish(Topic::Txs, tx.encode());
        unable()
    })
    .await;
    assert!(counted, "{}", v0.metrics_text());
    assert_eq!(rejected(v0, "txs", "malformed"), 0.0);
    assert_eq!(rejected(v0, "txs", "pool_full"), 0.0);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_in_a_slot_not_reached_yet_waits_for_it_and_costs_its_sender_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..1).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 1);
    let chain = spec.chain_id();
    let nodes = network(&spec, &files, false).await;
    assert!(wait_for(Duration::from_secs(20), || nodes[0].height() >= 2).await);
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    let (rogue, mut events) = joined_rogue(97, chain, boot, nodes[0].peer_id()).await;
    let key = Keypair::from_secret(&[97; 32]);
    let held = || metric(&nodes[0], "spacevault_blocks_held_early_total");
    let mut sent = Vec::new();
    let mut round = 0u64;
    // Sent until the vault has one (gossip needs a mesh first).
    while held() < 1.0 {
        round += 1;
        assert!(round < 200, "no early block was ever held");
        let head = nodes[0].engine().head();
        // The rogue runs the proof of time ahead of the vault's
        // timekeeper: the slot after the vault's last, due within a slot.
        let next = &slots_ahead(&nodes[0], 1)[0];
        let block = rogue_block(&key, chain, (head.hash, head.height), next, round);
        sent.push(block.hash());
        rogue.publish(Topic::Blocks, block.encode());
        drain(&rogue, &mut events).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(rejected(&nodes[0], "blocks", "future"), 0.0);
    assert_eq!(rejected(&nodes[0], "blocks", "unknown_slot"), 0.0);
    // Once the slot has come it is imported (kept, or refused as beaten
    // by the block the vault has at that height: either way, looked at).
    let looked_at = wait_for(Duration::from_secs(10), || {
        let kept = sent
            .iter()
            .any(|h| nodes[0].engine().store().info(h).unwrap().is_some());
        kept || rejected(&nodes[0], "blocks", "not_better") >= 1.0
    })
    .await;
    assert!(looked_at, "the held block was never imported");
    // Past the window, still a fault (whatever output it carries: its
    // time is checked first).
    let head = nodes[0].engine().head();
    let far = Block::produce(
        &key,
        chain,
        head.height + 1,
        head.hash,
        Stamp {
            slot: spec.clock_slot(spacevault_node::now_ms()) + 200,
            output: [3; spacevault_chain::time::FORM_BYTES],
        },
        ChainProof::plain(key.public(), [9; 32], 16, 9999),
        vec![],
    );
    rogue.publish(Topic::Blocks, far.encode());
    assert!(
        wait_for(Duration::from_secs(10), || rejected(
            &nodes[0], "blocks", "future"
        ) >= 1.0)
        .await
    );
    for n in nodes {
        n.stop().await;
    }
}

/// Polls `done` until it holds or `limit` passes, answering what comes to
/// the rogue meanwhile (a rogue whose events wait unread stops sending).
async fn until(
    rogue: &net::Handle,
    events: &mut tokio::sync::mpsc::Receiver<Event>,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        drain(rogue, events).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_signs_two_blocks_for_one_slot_is_caught_gossiped_and_banned_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let Rogued {
        nodes,
        rogue,
        mut events,
        key,
        chain,
    } = rogue_beside(dir.path(), 3, 98).await;
    until_heard(&rogue, &mut events, &nodes[0], &mut 0).await;
    // Two blocks of the rogue's key for one slot, on vault 0's head, in a
    // slot vault 0 has reached, later than its head's. The rogue's gossip
    // goes to the vaults its mesh holds: vault 0, or others it found
    // through vault 0, so each check below asks every vault.
    let mut sent = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while sent.is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "no slot after the head came"
        );
        let head = nodes[0].engine().head();
        let slot = nodes[0].slot();
        if slot > head.slot {
            if let Some(out) = nodes[0].time().output(slot).unwrap() {
                let two = [1, 2]
                    .map(|nonce| rogue_block(&key, chain, (head.hash, head.height), &out, nonce));
                for b in &two {
                    rogue.publish(Topic::Blocks, b.encode());
                }
                sent = Some(slot);
            }
        }
        drain(&rogue, &mut events).await;
    }
    // The chain every vault follows comes to ban the key.
    let banned =
        |n: &spacevault_node::Node| n.engine().store().ban_of(&key.public()).unwrap().is_some();
    let everywhere = until(&rogue, &mut events, Duration::from_secs(30), || {
        nodes.iter().all(banned)
    })
    .await;
    assert!(
        everywhere,
        "banned {:?}, caught {:?}, kept {:?}",
        nodes.iter().map(banned).collect::<Vec<_>>(),
        nodes
            .iter()
            .map(|n| metric(n, "spacevault_equivocations_caught_total"))
            .collect::<Vec<_>>(),
        nodes
            .iter()
            .map(|n| metric(n, "spacevault_evidence_kept_total"))
            .collect::<Vec<_>>()
    );
    // A vault the blocks reached caught it. The others take the gossiped
    // evidence only if they checked a block of the key's (a vault relays
    // the rogue's block only if it made its head), else the block carrying
    // it brings it.
    let total = |name: &str| nodes.iter().map(|n| metric(n, name)).sum::<f64>();
    assert!(total("spacevault_equivocations_caught_total") >= 1.0);
    assert!(total("spacevault_evidence_kept_total") >= 1.0);
    // The key's next block, on the head that bans it, is refused. A block
    // the vaults did not get (the rogue's mesh changing) or that a reorg
    // left on a head below the ban is followed by another, on the head
    // then, each one new.
    let refused_as_banned = || {
        nodes
            .iter()
            .map(|n| rejected(n, "blocks", "banned"))
            .collect::<Vec<_>>()
    };
    let before = refused_as_banned();
    let mut sent = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut refused = false;
    while !refused && std::time::Instant::now() < deadline {
        let head = nodes[0].engine().head();
        let later = wait_for(Duration::from_secs(10), || nodes[0].slot() > head.slot).await;
        assert!(later, "no slot after the head came");
        let out = nodes[0].time().output(nodes[0].slot()).unwrap().unwrap();
        let nonce = 3 + sent.len() as u64;
        let next = rogue_block(&key, chain, (head.hash, head.height), &out, nonce);
        rogue.publish(Topic::Blocks, next.encode());
        sent.push(next);
        refused = until(&rogue, &mut events, Duration::from_secs(3), || {
            refused_as_banned()
                .iter()
                .zip(&before)
                .any(|(now, was)| now > was)
        })
        .await;
    }
    let blocks_refused: Vec<_> = nodes[0]
        .metrics_text()
        .lines()
        .filter(|l| l.starts_with("spacevault_messages_rejected_total") && l.contains("blocks"))
        .map(str::to_owned)
        .collect();
    assert!(
        refused,
        "none of {} blocks of the banned key was refused as banned: {before:?} before, {:?} after; vault 0 refused {blocks_refused:?}",
        sent.len(),
        refused_as_banned()
    );
    for next in &sent {
        assert!(nodes
            .iter()
            .all(|n| hash_at(n, next.header.height) != Some(next.hash())));
    }
    for n in nodes {
        n.stop().await;
    }
}
