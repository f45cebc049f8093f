//! A holder answers an audit with a chunk of the blob and the tree nodes
//! that tie it to the address; a vault without the blob, or asked for a
//! chunk past its end, proves nothing.

mod common;

use common::*;
use spacevault_chain::audit;
use spacevault_network::{self as net, Request, Response, TransportKind};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_proves_a_chunk_of_a_blob_it_keeps_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let files = [vault_files(dir.path(), 0)];
    let spec = spec(300, 1);
    let v0 = start(&spec, &files[0], vec![], false).await;
    let blob: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let put = v0.put(blob.clone()).await.unwrap();
    let boot = v0.listen_addrs(Duration::from_secs(5)).await;
    let mut config = net::Config::new([77; 32], TransportKind::Memory, spec.chain_id());
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = boot;
    let (auditor, _events, _task) = net::start(config).unwrap();
    let ask = |address: [u8; 32], chunk: u64| {
        let auditor = auditor.clone();
        let peer = v0.peer_id();
        async move {
            auditor
                .request(peer, Request::Audit { address, chunk })
                .await
        }
    };
    // Asked again until the auditor's connection to the vault is up.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while ask(put.address, 0).await.is_err() {
        assert!(std::time::Instant::now() < deadline, "never connected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for chunk in [0, 17, 48] {
        match ask(put.address, chunk).await {
            Ok(Response::Slice(slice)) => {
                let got = audit::verify(&put.address, blob.len() as u64, chunk, &slice).unwrap();
                let start = chunk as usize * 1024;
                assert_eq!(got, &blob[start..blob.len().min(start + 1024)]);
            }
            other => panic!("chunk {chunk}: {other:?}"),
        }
    }
    assert_eq!(
        ask(put.address, 49).await.ok(),
        Some(Response::Refused("no_such_chunk".into()))
    );
    assert_eq!(ask([9; 32], 0).await.ok(), Some(Response::NotFound));
    v0.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_drops_a_blob_fails_its_audit_and_gets_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    let audits = |c: &mut spacevault_node::NodeConfig| {
        c.audits = spacevault_node::audits::AuditConfig {
            interval: Duration::from_millis(200),
            blobs: 4,
        }
    };
    let first = start_with(&spec, &files[0], vec![], false, |c| {
        c.timekeeper = true;
        audits(c);
    })
    .await;
    let boot = first.listen_addrs(Duration::from_secs(5)).await;
    let mut nodes = vec![first];
    for f in &files[1..] {
        nodes.push(start_with(&spec, f, boot.clone(), false, audits).await);
    }
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.vaults().count() == 3))
        .await,
        "the vaults did not find each other"
    );
    let blob: Vec<u8> = (0..20_000u32).map(|i| (i % 241) as u8).collect();
    let put = nodes[0].put(blob.clone()).await.unwrap();
    assert_eq!(put.receipts.len(), 3);
    let count = |n: &spacevault_node::Node, outcome: &str| {
        n.metrics_text()
            .lines()
            .filter(|l| l.starts_with("spacevault_audits_total") && l.contains(outcome))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    // Audits pass while every holder keeps it (and the replication pass
    // that follows a PUT is over: from here on only an audit sends it).
    assert!(
        wait_for(Duration::from_secs(20), || count(&nodes[0], "passed")
            >= 4.0)
        .await,
        "no audit passed"
    );
    // Both sides' hashing is in the crypto meter, and the answers' bytes
    // in the holders' metrics.
    use spacevault_meter::Op;
    let checked: u64 = nodes[0].meter().count(Op::HashAuditCheck);
    let proved: u64 = nodes
        .iter()
        .map(|n| n.meter().count(Op::HashAuditProof))
        .sum();
    assert!(checked >= 4, "the auditor's checks: {checked}");
    assert!(proved >= checked, "the holders' proofs: {proved}");
    let answered: f64 = nodes
        .iter()
        .map(|n| metric(n, "spacevault_audit_answer_bytes"))
        .sum();
    assert!(
        answered > 1000.0 * checked as f64,
        "answer bytes: {answered}"
    );
    // The holder drops it, having signed its receipt.
    let dropper = &nodes[2];
    dropper.engine().store().delete_blob(&put.address).unwrap();
    assert!(
        wait_for(Duration::from_secs(30), || dropper
            .engine()
            .store()
            .has_blob(&put.address)
            .unwrap())
        .await,
        "the dropped blob never came back"
    );
    // Counted once the auditor has its answers (the copy lands before the
    // holder's answer does).
    let caught = wait_for(Duration::from_secs(20), || {
        let failed = count(&nodes[0], "not_found") + count(&nodes[1], "not_found");
        let repaired = metric(&nodes[0], "spacevault_audit_repairs")
            + metric(&nodes[1], "spacevault_audit_repairs");
        failed >= 1.0 && repaired >= 1.0
    })
    .await;
    assert!(caught, "no failed audit and repair counted");
    for node in nodes {
        node.stop().await;
    }
}
