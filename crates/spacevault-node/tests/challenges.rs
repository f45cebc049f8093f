//! Challenges on the chain: a registered holder that vanished is
//! challenged by the holders that audit it, cannot answer, and leaves the
//! chain's holders at the next era; a holder challenged for a blob it
//! keeps answers on the chain and stays.

mod common;

use common::*;
use spacevault_chain::challenge::{challenge_name, dispute_of, Challenge, Dispute, ANSWER_BLOCKS};
use spacevault_chain::holders::era_at;
use spacevault_chain::{ChainSpec, RegisterTx};
use spacevault_node::Node;
use std::time::Duration;

fn challenge_spec() -> ChainSpec {
    let mut spec = spec(150, 3);
    spec.era_blocks = 8;
    spec
}

/// Four vaults with plots, auditing every 200 ms, once every one of them
/// is a holder the chain names.
async fn registered_network(spec: &ChainSpec, dir: &std::path::Path) -> Vec<Node> {
    logs();
    let files: Vec<_> = (0..4).map(|i| vault_files(dir, i)).collect();
    let audits = |c: &mut spacevault_node::NodeConfig| {
        c.audits = spacevault_node::audits::AuditConfig {
            interval: Duration::from_millis(200),
            blobs: 4,
        }
    };
    let first = start_with(spec, &files[0], vec![], false, |c| {
        c.timekeeper = true;
        audits(c);
    })
    .await;
    let boot = first.listen_addrs(Duration::from_secs(5)).await;
    let mut nodes = vec![first];
    for f in &files[1..] {
        nodes.push(start_with(spec, f, boot.clone(), false, audits).await);
    }
    let keys: Vec<[u8; 32]> = nodes.iter().map(Node::farmer_key).collect();
    let named = wait_for(Duration::from_secs(60), || {
        nodes.iter().all(|n| {
            let v = n.vaults();
            v.era() >= 2 && keys.iter().all(|k| v.is_holder(k))
        })
    })
    .await;
    assert!(named, "the vaults were never all named holders");
    nodes
}

fn challenges(node: &Node, outcome: &str) -> f64 {
    node.metrics_text()
        .lines()
        .filter(|l| l.starts_with("spacevault_challenges_total") && l.contains(outcome))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_vanished_is_challenged_on_the_chain_and_leaves_the_holders() {
    let dir = tempfile::tempdir().unwrap();
    let spec = challenge_spec();
    let mut nodes = registered_network(&spec, dir.path()).await;
    // Blobs put through the first vault: it keeps every holder's receipt.
    for i in 0..8u32 {
        let blob: Vec<u8> = (0..20_000u32).map(|j| ((i * 7 + j) % 251) as u8).collect();
        let put = nodes[0].put(blob).await.unwrap();
        assert_eq!(put.receipts.len(), 3);
    }
    let gone = nodes.pop().unwrap();
    let key = gone.farmer_key();
    gone.stop().await;
    let left = wait_for(Duration::from_secs(90), || {
        nodes.iter().all(|n| !n.vaults().is_holder(&key))
    })
    .await;
    let eras: Vec<u64> = nodes.iter().map(|n| n.vaults().era()).collect();
    assert!(left, "the vanished holder is still named (eras {eras:?})");
    let made: f64 = nodes.iter().map(|n| challenges(n, "made")).sum();
    assert!(made >= 1.0, "no challenge counted");
    // Its challenge is on the chain; the holders that stayed are all
    // still named.
    let disputes = nodes[0]
        .engine()
        .store()
        .disputes_of(&key, 0..u64::MAX)
        .unwrap();
    assert!(disputes
        .iter()
        .any(|w| dispute_of(&w.tx) == Some(Dispute::Challenge { accused: key })));
    for n in &nodes {
        let v = n.vaults();
        assert!(nodes.iter().all(|m| v.is_holder(&m.farmer_key())));
    }
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_challenged_for_a_blob_it_keeps_answers_and_stays() {
    let dir = tempfile::tempdir().unwrap();
    let spec = challenge_spec();
    let nodes = registered_network(&spec, dir.path()).await;
    let blob: Vec<u8> = (0..50_000u32).map(|j| (j % 239) as u8).collect();
    let put = nodes[0].put(blob).await.unwrap();
    // The first vault accuses a holder of the blob that kept it: a false
    // accusation, with the holder's own receipt.
    let receipt = put
        .receipts
        .iter()
        .find(|r| r.holder != nodes[0].farmer_key())
        .unwrap()
        .clone();
    let accused = nodes
        .iter()
        .find(|n| n.farmer_key() == receipt.holder)
        .unwrap();
    let accuser = spacevault_node::kit::vault_key(0);
    assert_eq!(accuser.public(), nodes[0].farmer_key());
    let tx = RegisterTx::signed(
        &accuser,
        &spec.chain_id(),
        &challenge_name(&receipt.holder),
        1,
        &Challenge { receipt }.encode(),
    );
    assert!(nodes[0].chain().add_tx(tx.clone()).unwrap());
    nodes[0]
        .network()
        .publish(spacevault_network::Topic::Txs, tx.encode());
    let answered = wait_for(Duration::from_secs(30), || {
        challenges(accused, "answered") >= 1.0
    })
    .await;
    assert!(answered, "the holder did not answer");
    // Both are on the chain, and after the window closed and an era
    // began, the holder is still named.
    let disputes_of = |k: &[u8; 32]| {
        nodes[0]
            .engine()
            .store()
            .disputes_of(k, 0..u64::MAX)
            .unwrap()
    };
    let on_chain = wait_for(Duration::from_secs(30), || {
        disputes_of(&accused.farmer_key())
            .iter()
            .any(|w| matches!(dispute_of(&w.tx), Some(Dispute::Answer { .. })))
    })
    .await;
    assert!(on_chain, "the answer never reached the chain");
    let challenged_at = disputes_of(&accused.farmer_key())
        .iter()
        .find(|w| matches!(dispute_of(&w.tx), Some(Dispute::Challenge { .. })))
        .unwrap()
        .height;
    let after = era_at(challenged_at + ANSWER_BLOCKS, spec.era_blocks) + 1;
    let passed = wait_for(Duration::from_secs(60), || {
        nodes.iter().all(|n| n.vaults().era() > after)
    })
    .await;
    assert!(passed, "the chain never passed the window's era");
    for n in &nodes {
        assert!(n.vaults().is_holder(&accused.farmer_key()));
    }
    assert_eq!(challenges(accused, "unanswerable"), 0.0);
    for node in nodes {
        node.stop().await;
    }
}
