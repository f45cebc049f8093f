//! Each peer's allowances: what it may have this vault keep, and how many
//! bytes of blocks it may ask of it, each peer on its own.

mod common;

use common::*;
use spacevault_chain::{Announce, Keypair};
use spacevault_network::{self as net, Request, Response, Topic, TransportKind};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_keeps_only_blobs_it_is_a_holder_of_and_within_each_peers_budget() {
    // One copy of each blob, among a vault and three vaults it has heard
    // announce themselves: it takes a blob to keep only when it is among
    // the 1 + HOLDER_SLACK nearest, whoever asks, and as far as the asking
    // peer's allowance goes: here four Stores of a few bytes, none
    // refilled within the test.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..1).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 1);
    let chain = spec.chain_id();
    let burst = 4 * spacevault_node::budget::store_cost(16);
    let v0 = start_with(&spec, &files[0], vec![], false, |c| {
        c.store_budget = (1, burst)
    })
    .await;
    let boot = v0.listen_addrs(Duration::from_secs(5)).await;
    let peer = |secret: u8| {
        let mut config = net::Config::new([secret; 32], TransportKind::Memory, chain);
        config.listen = vec!["/memory/0".parse().unwrap()];
        config.bootstrap = boot.clone();
        config.heartbeat = Duration::from_millis(100);
        net::start(config).unwrap()
    };
    let (rogue, _events, _task) = peer(88);
    let others: Vec<Keypair> = (60..63).map(|i| Keypair::from_secret(&[i; 32])).collect();
    let heard = wait_for(Duration::from_secs(20), || {
        for k in &others {
            let a = Announce::signed(k, &chain, spacevault_node::now_ms(), vec![]);
            rogue.publish(Topic::Vaults, a.encode());
        }
        v0.vaults().count() >= 4
    })
    .await;
    assert!(heard, "the other vaults were never heard");
    let places = spec.replication as usize + spacevault_node::data::HOLDER_SLACK;
    let holds = |blob: &[u8]| {
        let address = spacevault_chain::blob_address(blob);
        let v = v0.vaults();
        v.holders(&address, places).contains(&v0.farmer_key())
    };
    let find = |want: bool, n: usize| -> Vec<Vec<u8>> {
        (0u32..)
            .map(|i| format!("blob {i}").into_bytes())
            .filter(|b| holds(b) == want)
            .take(n)
            .collect()
    };
    let (mine, not_mine) = (find(true, 4), find(false, 1).remove(0));
    let v0_peer = v0.peer_id();
    match rogue
        .request(
            v0_peer,
            Request::Store {
                blob: not_mine.clone(),
            },
        )
        .await
    {
        Ok(Response::Refused(why)) => assert_eq!(why, "not_holder"),
        other => panic!("{other:?}"),
    }
    let address = spacevault_chain::blob_address(&not_mine);
    assert!(!v0.engine().store().has_blob(&address).unwrap());
    assert!(rejected(&v0, "requests", "not_holder") >= 1.0);
    for blob in &mine[..3] {
        match rogue
            .request(v0_peer, Request::Store { blob: blob.clone() })
            .await
        {
            Ok(Response::Stored(receipt)) => {
                assert_eq!(receipt.address, spacevault_chain::blob_address(blob))
            }
            other => panic!("{other:?}"),
        }
    }
    // The rogue's allowance is spent (the refused Store cost too).
    let last = Request::Store {
        blob: mine[3].clone(),
    };
    match rogue.request(v0_peer, last.clone()).await {
        Ok(Response::Refused(why)) => assert_eq!(why, "over_budget"),
        other => panic!("{other:?}"),
    }
    assert_eq!(rejected(&v0, "requests", "over_budget"), 1.0);
    let address = spacevault_chain::blob_address(&mine[3]);
    assert!(!v0.engine().store().has_blob(&address).unwrap());
    // Another peer's is its own.
    let (other, _other_events) = joined_rogue(89, chain, boot.clone(), v0_peer).await;
    match other.request(v0_peer, last).await {
        Ok(Response::Stored(_)) => {}
        other => panic!("{other:?}"),
    }
    v0.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_waits_for_a_holders_allowance_rather_than_keep_fewer_copies() {
    // Vault 1 takes one Store of a kilobyte from a peer at once, and one
    // more every half second: vault 0's second PUT finds its allowance
    // spent, waits, and gets both copies.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    let cost = spacevault_node::budget::store_cost(1000);
    let v0 = start(&spec, &files[0], vec![], false).await;
    let boot = v0.listen_addrs(Duration::from_secs(5)).await;
    let v1 = start_with(&spec, &files[1], boot, false, |c| {
        c.store_budget = (2 * cost, cost)
    })
    .await;
    let nodes = [v0, v1];
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.vaults().count() == 2))
        .await,
        "the vaults did not find each other"
    );
    for i in 0..3u8 {
        let put = nodes[0].put(vec![i; 1000]).await;
        assert!(
            matches!(&put, Ok(p) if p.receipts.len() == 2),
            "blob {i}: {put:?}"
        );
    }
    assert!(metric(&nodes[0], "spacevault_store_waits") >= 1.0);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_asking_for_blocks_again_and_again_gets_no_more_than_its_allowance() {
    // An allowance of 200 KiB that does not refill within the test; each
    // answer holds the vault's first blocks, up to what is left of it.
    let dir = tempfile::tempdir().unwrap();
    let files = [vault_files(dir.path(), 0)];
    let spec = spec(200, 1);
    let chain = spec.chain_id();
    let burst = 200 << 10;
    let v0 = start_with(&spec, &files[0], vec![], true, |c| {
        c.blocks_budget = (1, burst);
        c.timekeeper = true;
    })
    .await;
    assert!(wait_for(Duration::from_secs(20), || v0.height() >= 3).await);
    let boot = v0.listen_addrs(Duration::from_secs(5)).await;
    let v0_peer = v0.peer_id();
    let (rogue, _events) = joined_rogue(86, chain, boot.clone(), v0_peer).await;
    let ask = Request::Blocks { from: 1, max: 256 };
    let mut answered = 0u64;
    let refused = loop {
        match rogue.request(v0_peer, ask.clone()).await {
            Ok(Response::Blocks(blocks)) => {
                assert!(!blocks.is_empty());
                answered += blocks.iter().map(|b| b.len() as u64 + 4).sum::<u64>();
                assert!(answered <= burst, "{answered} bytes answered");
            }
            Ok(Response::Refused(why)) => break why,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(refused, "over_budget");
    assert!(
        answered > burst - (64 << 10),
        "{answered} of {burst} answered"
    );
    assert!(rejected(&v0, "requests", "over_budget") >= 1.0);
    // A locate costs the same allowance.
    let locate = Request::Locate {
        locator: vec![],
        max: 256,
    };
    match rogue.request(v0_peer, locate.clone()).await {
        Ok(Response::Refused(why)) => assert_eq!(why, "over_budget"),
        other => panic!("{other:?}"),
    }
    // Another peer's allowance is its own.
    let (other, _other_events) = joined_rogue(87, chain, boot, v0_peer).await;
    match other.request(v0_peer, locate).await {
        Ok(Response::Blocks(blocks)) => assert!(!blocks.is_empty()),
        other => panic!("{other:?}"),
    }
    v0.stop().await;
}
