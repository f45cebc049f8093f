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
