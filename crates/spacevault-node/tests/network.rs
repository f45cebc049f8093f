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
        .map(|b| b.header.proof.farmer_key)
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
            .filter(|b| b.header.proof.farmer_key != own)
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
