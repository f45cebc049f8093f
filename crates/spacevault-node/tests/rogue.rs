//! A peer that sends what no honest vault sends: every message is refused
//! with a reason, counted, and never relayed or stored.

mod common;

use common::*;
use spacevault_chain::{Block, ChainProof, Keypair, ProofMsg, RegisterTx};
use spacevault_network::{self as net, Event, Request, Response, Topic, TransportKind, Verdict};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_message_is_refused_counted_and_not_relayed() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    let chain = spec.chain_id();
    let nodes = network(&spec, &files, false).await;
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.height() >= 2))
        .await
    );
    // Rogues join through vault 0 only; vault 1 must hear nothing of them.
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    let start_rogue = |secret: u8| {
        let mut config = net::Config::new([secret; 32], TransportKind::Memory, chain);
        config.listen = vec!["/memory/0".parse().unwrap()];
        config.bootstrap = boot.clone();
        config.heartbeat = Duration::from_millis(100);
        let (rogue, events, _task) = net::start(config).unwrap();
        nodes[1].shared.net.block(rogue.local_peer());
        (rogue, events)
    };
    let linked = |rogue: net::Handle| {
        let v0 = nodes[0].peer_id();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !rogue.peers().await.contains(&v0) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "a rogue never connected"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    let (rogue, _rogue_events) = start_rogue(99);
    linked(rogue.clone()).await;
    let rogue_key = Keypair::from_secret(&[99; 32]);
    let proof = ChainProof {
        farmer_key: rogue_key.public(),
        seed: [9; 32],
        k: 16,
        nonce: 1,
    };
    let owner = Keypair::from_secret(&[5; 32]);
    // The messages of one round, on the head as it is then: each round's
    // differ, since gossip drops repeats.
    let messages =
        |head: &spacevault_chain::Parent, round: u8| -> Vec<(Topic, Vec<u8>, &'static str)> {
            // A time the head's child may have.
            let ts = head.timestamp_ms + spec.slot_ms;
            let mut stolen = proof.clone();
            stolen.farmer_key = files[0].key.public();
            stolen.nonce = round as u64;
            let mut future = proof.clone();
            future.nonce = round as u64;
            let mut bad_tx = RegisterTx::signed(&owner, &chain, b"n", 1, &[round]);
            bad_tx.value = b"changed".to_vec();
            vec![
                (Topic::Blocks, vec![1, 2, round], "malformed"),
                // A block on the head, signed by the rogue with a stolen proof.
                (
                    Topic::Blocks,
                    Block::produce(
                        &rogue_key,
                        chain,
                        head.height + 1,
                        head.hash,
                        ts,
                        stolen,
                        vec![],
                    )
                    .encode(),
                    "bad_signature",
                ),
                (
                    Topic::Blocks,
                    Block::produce(
                        &rogue_key,
                        chain,
                        head.height + 1,
                        head.hash,
                        ts + 3_600_000,
                        future,
                        vec![],
                    )
                    .encode(),
                    "future",
                ),
                (
                    Topic::Proofs,
                    ProofMsg {
                        chain_id: chain,
                        height: 1,
                        parent: [round; 32],
                        proof: proof.clone(),
                    }
                    .encode(),
                    "stale_height",
                ),
                (
                    Topic::Proofs,
                    ProofMsg {
                        chain_id: [7; 32],
                        height: 1,
                        parent: [round; 32],
                        proof: proof.clone(),
                    }
                    .encode(),
                    "wrong_chain",
                ),
                (Topic::Txs, bad_tx.encode(), "bad_tx_signature"),
                // A replay: version 0 was never to be written.
                (
                    Topic::Txs,
                    RegisterTx::signed(&owner, &chain, b"n", 0, &[round]).encode(),
                    "bad_tx_version",
                ),
                (Topic::Vaults, vec![0xff; 10 + round as usize], "malformed"),
            ]
        };
    let counted = |reason: &str| {
        nodes[0].shared.metrics.encode().lines().any(|l| {
            l.starts_with("spacevault_messages_rejected_total")
                && l.contains(&format!("reason=\"{reason}\""))
        })
    };
    let reasons: Vec<&str> = messages(&nodes[0].shared.engine().head(), 0)
        .iter()
        .map(|m| m.2)
        .collect();
    // A rogue for each kind of message: one faulty message costs its
    // sender more gossip score than the graylist allows, and a graylisted
    // peer's later messages are dropped unread, uncounted.
    let mut all_counted = true;
    for (kind, reason) in reasons.iter().enumerate() {
        let (sender, mut events) = start_rogue(100 + kind as u8);
        linked(sender.clone()).await;
        let mut round = 0u8;
        while !counted(reason) && round < 40 {
            round += 1;
            // The messages are built on the head as it is now; the blocks
            // among them carry the time its child is due. Wait for that
            // time, so that they are neither early nor in the future,
            // whatever the head has become meanwhile.
            let head = nodes[0].shared.engine().head();
            let due = head.timestamp_ms + spec.slot_ms;
            let (topic, data, _) = messages(&head, round).swap_remove(kind);
            while spacevault_node::now_ms() < due {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
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
        all_counted &= counted(reason);
    }
    let text = nodes[0].shared.metrics.encode();
    assert!(all_counted, "{text}");
    // Nothing of it reached vault 1 (which may refuse an honest proof that
    // came too late), and vault 0 stored nothing of it.
    let heard_by_1 = nodes[1].shared.metrics.encode();
    for reason in &reasons {
        assert!(
            !heard_by_1
                .lines()
                .any(|l| l.starts_with("spacevault_messages_rejected_total")
                    && l.contains(&format!("reason=\"{reason}\""))),
            "{heard_by_1}"
        );
    }
    assert!(nodes[0]
        .shared
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
    assert_eq!(nodes[0].shared.engine().store().blob_stats().unwrap().0, 0);
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
