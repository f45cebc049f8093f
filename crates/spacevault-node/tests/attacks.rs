//! Attacks on the chain, in an in-process network: an attacker with no
//! plot who stamps a block in every slot with made-up proofs never
//! displaces the honest chain, however much longer its chain grows.

mod common;

use common::*;
use spacevault_chain::{Block, ChainProof, Keypair, Stamp, Target};
use spacevault_network::Topic;
use std::time::Duration;

/// The best of `tries` made-up records for `stamp`'s challenge: records
/// of plots nobody stored, one hash each, as an attacker without disks
/// computes them in a slot.
fn made_up(key: &Keypair, chain: &[u8; 32], stamp: &Stamp, tries: u64) -> (ChainProof, u64) {
    let challenge = stamp.challenge(chain);
    (0..tries)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&i.to_le_bytes());
            seed[8..16].copy_from_slice(&stamp.slot.to_le_bytes());
            let proof = ChainProof::plain(key.public(), seed, 16, i % (1 << 16));
            let rank = proof.verify(&challenge).expect("any record verifies");
            let top = spacevault_chain::eligibility::distance_top(&rank.distance);
            (proof, top)
        })
        .min_by_key(|(_, top)| *top)
        .expect("one try at least")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attacker_without_a_plot_stamping_every_slot_never_displaces_the_honest_chain() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    // The target of the network's space: three plots of k = 16, a block
    // every two slots.
    let mut spec = spec(300, 1);
    spec.initial_records = 3 << 16;
    spec.block_interval_slots = 2;
    let chain = spec.chain_id();
    let nodes = network(&spec, &files, false).await;
    let boot = nodes[0].listen_addrs(Duration::from_secs(5)).await;
    let (rogue, mut events) = joined_rogue(66, chain, boot, nodes[0].peer_id()).await;
    let attacker = Keypair::from_secret(&[66; 32]);
    // Its own chain from the genesis, a block in every slot the network
    // reaches, each with the best of 1,000 made-up records: a chain that
    // grows twice as fast as the honest one, which longest-chain fork
    // choice would follow.
    let mut parent = spacevault_chain::genesis_hash(&chain);
    let mut made = Vec::new();
    let mut eligible = 0;
    let mut slot = 0;
    while made.len() < 40 {
        let now = nodes[0].slot();
        if now == slot {
            drain(&rogue, &mut events).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        slot = now;
        let stamp = stamp_at(&nodes[0], slot).unwrap();
        let (proof, top) = made_up(&attacker, &chain, &stamp, 1000);
        if Target(top + 1) <= spec.initial_target() {
            eligible += 1;
        }
        let block = Block::produce(
            &attacker,
            chain,
            made.len() as u64 + 1,
            parent,
            stamp,
            proof,
            vec![],
        );
        parent = block.hash();
        rogue.publish(Topic::Blocks, block.encode());
        made.push(block.hash());
    }
    drain(&rogue, &mut events).await;
    let honest = nodes.iter().map(|n| n.height()).max().unwrap();
    assert!(
        (made.len() as u64) > honest,
        "the attacker's chain ({}) is longer than the honest one ({honest})",
        made.len()
    );
    // A thousand records a slot, where the target wants the network's
    // 196,608 records two slots long for one eligible proof: a made-up
    // proof is eligible about one slot in four hundred.
    assert!(eligible <= 3, "{eligible} made-up proofs were eligible");
    // Every vault refused the attacker's blocks and follows one honest
    // chain, none of whose blocks is the attacker's.
    let h = nodes.iter().map(|n| n.height()).min().unwrap();
    assert!(agree_up_to(
        &nodes.iter().collect::<Vec<_>>(),
        h.saturating_sub(2)
    ));
    for n in &nodes {
        for height in 1..=n.height() {
            let block = n.engine().block_at(height).unwrap().unwrap();
            assert_ne!(*block.header.proof.farmer_key(), attacker.public());
        }
    }
    assert!(
        rejected(&nodes[0], "blocks", "not_eligible") >= 1.0,
        "{}",
        nodes[0].metrics_text()
    );
    for n in nodes {
        n.stop().await;
    }
}
