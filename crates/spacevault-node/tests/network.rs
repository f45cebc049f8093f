//! Vaults in one process over the in-memory transport: they elect
//! producers, agree on the chain, keep data, and survive faults.

mod common;

use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vaults_agree_on_every_settled_block() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    let nodes = network(&spec, &files, false).await;
    let grown = wait_for(Duration::from_secs(30), || {
        nodes.iter().all(|n| n.height() >= 6)
    })
    .await;
    let heights: Vec<u64> = nodes.iter().map(|n| n.height()).collect();
    assert!(grown, "heights {heights:?}");
    for h in 1..=4 {
        let hashes: Vec<_> = nodes.iter().map(|n| hash_at(n, h)).collect();
        assert!(
            hashes.iter().all(|x| x.is_some() && *x == hashes[0]),
            "height {h}: {hashes:?}"
        );
    }
    // Blocks came from more than one vault.
    let producers: std::collections::HashSet<_> = (1..=6)
        .filter_map(|h| nodes[0].engine().block_at(h).unwrap())
        .map(|b| *b.header.proof.farmer_key())
        .collect();
    assert!(producers.len() > 1, "one producer made every block");
    // Every vault counted its own cryptographic work: the blocks it
    // checked, its lookups, the gossip ids it hashed, the slot outputs it
    // checked (the timekeeper its own too); and a blob put and
    // read back is hashed as it arrives and again off the disk.
    use spacevault_meter::Op;
    for n in &nodes {
        let m = n.meter();
        for op in [
            Op::VerifyBlock,
            Op::HashBlock,
            Op::HashLookup,
            Op::HashMessageId,
            Op::HashProof,
            Op::VerifySlot,
        ] {
            assert!(m.count(op) > 0, "{op:?} not counted: {m:?}");
        }
        assert!(m.nanos(Op::VerifyBlock) > 0);
        assert!(m.nanos(Op::VerifySlot) > 0);
    }
    // Each block of another vault had its signature verified before the
    // engine's lock was taken: the check under the lock was a cache hit.
    for n in &nodes {
        let own = n.farmer_key();
        let others = (1..=4)
            .filter_map(|h| n.engine().block_at(h).unwrap())
            .filter(|b| *b.header.proof.farmer_key() != own)
            .count() as u64;
        let hits = n.sig_cache().map(|c| c.hits(Op::VerifyBlock));
        assert!(
            hits >= Some(others),
            "{hits:?} cache hits for {others} blocks of others"
        );
    }
    let signed: u64 = nodes.iter().map(|n| n.meter().count(Op::SignBlock)).sum();
    assert!(signed >= 6, "{signed} blocks signed for 6 heights");
    let blob = b"counted".to_vec();
    let put = nodes[0].put(blob.clone()).await.unwrap();
    let reads_before: u64 = nodes.iter().map(|n| n.meter().count(Op::HashReread)).sum();
    let got = nodes[0].read(&put.address).await;
    assert_eq!(got.as_deref(), Some(&blob[..]));
    let reads_after: u64 = nodes.iter().map(|n| n.meter().count(Op::HashReread)).sum();
    assert!(
        reads_after > reads_before,
        "a read from disk is hashed again"
    );
    assert!(nodes[0].meter().count(Op::HashData) >= 1);
    let receipts: u64 = nodes.iter().map(|n| n.meter().count(Op::SignReceipt)).sum();
    assert!(
        receipts >= 3,
        "each of 3 holders signs a receipt: {receipts}"
    );
    for n in nodes {
        n.stop().await;
    }
}

/// A chain that takes both schemes: vaults farming table-chain plots and
/// one farming a plain plot agree on one chain, blocks of the hard
/// scheme (kind 2) among them, every vault having checked each by its
/// scheme; a vault of a chain that takes only the plain scheme skips its
/// table-chain plot and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vaults_farm_plots_of_either_scheme() {
    use spacevault_chain::ProofKind;
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    for (i, f) in files.iter_mut().enumerate().skip(1) {
        f.plots = spacevault_node::kit::vault_hard_plot(dir.path(), i, 16).unwrap();
    }
    let mut spec = spec(300, 3);
    spec.set_sizes(ProofKind::Hard, 16, 32);
    let nodes = network(&spec, &files, false).await;
    for (i, n) in nodes.iter().enumerate() {
        let plots = n.plots();
        assert_eq!(plots.len(), 1, "vault {i}: {plots:?}");
        assert_eq!(plots[0].scheme, if i == 0 { "plain" } else { "hard" });
    }
    let grown = wait_for(Duration::from_secs(40), || {
        nodes.iter().all(|n| n.height() >= 10)
    })
    .await;
    let heights: Vec<u64> = nodes.iter().map(|n| n.height()).collect();
    assert!(grown, "heights {heights:?}");
    for h in 1..=8 {
        let hashes: Vec<_> = nodes.iter().map(|n| hash_at(n, h)).collect();
        assert!(
            hashes.iter().all(|x| x.is_some() && *x == hashes[0]),
            "height {h}: {hashes:?}"
        );
    }
    // Three of four vaults farm the hard scheme, on the scale both share:
    // eight blocks of the plain one alone would come once in 65,536 runs.
    let kinds: Vec<ProofKind> = (1..=8)
        .filter_map(|h| nodes[0].engine().block_at(h).unwrap())
        .map(|b| b.header.proof.kind())
        .collect();
    assert!(kinds.contains(&ProofKind::Hard), "kinds {kinds:?}");
    for n in nodes {
        n.stop().await;
    }

    let plain_only = self::spec(300, 3);
    let elsewhere = VaultFiles {
        data: dir.path().join("plain-only"),
        ..files.swap_remove(1)
    };
    let node = start(&plain_only, &elsewhere, vec![], false).await;
    assert!(node.plots().is_empty());
    let skipped = node.skipped_plots();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(
        skipped[0].why,
        "the chain takes no proofs of the hard scheme"
    );
    node.stop().await;
}
