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
        .filter_map(|h| nodes[0].shared.engine().block_at(h).unwrap())
        .map(|b| b.header.proof.farmer_key)
        .collect();
    assert!(producers.len() > 1, "one producer made every block");
    for n in nodes {
        n.stop().await;
    }
}
