//! A vault whose engine is held (a block of a thousand transactions to
//! check, a slow disk) keeps its network and its API going: the work peers
//! send waits in bounded queues, a flood of one kind sheds that kind's
//! oldest, and the vault catches up once the engine is free.

mod common;

use common::*;
use spacevault_chain::Keypair;
use spacevault_network::Topic;
use spacevault_node::work::QUEUES;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The status code of `GET /` on `api`, if it answers within two seconds.
fn page_status(api: SocketAddr) -> Option<u16> {
    let limit = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&api, limit).ok()?;
    stream.set_read_timeout(Some(limit)).ok()?;
    let request = format!("GET / HTTP/1.1\r\nHost: {api}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// One runtime thread for every vault and the test: a vault that waited
/// for its engine there would stall them all, which is what this test
/// would see.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_engine_stalls_neither_the_network_nor_the_api_and_a_flood_sheds_its_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(250, 2);
    let chain = spec.chain_id();
    let nodes = network(&spec, &files, true).await;
    assert!(
        wait_for(Duration::from_secs(30), || nodes
            .iter()
            .all(|n| n.height() >= 2))
        .await,
        "the network never started"
    );
    let vault = &nodes[0];
    let boot = vault.listen_addrs(Duration::from_secs(1)).await;
    let (rogue, mut events) = joined_rogue(99, chain, boot, vault.peer_id()).await;
    let blocks = QUEUES.iter().position(|q| q.name == "blocks").unwrap();
    let flood = QUEUES[blocks].capacity + 512;

    // The engine held on a thread of its own, as a long import holds it,
    // until the flood has been shed from; the page asked for meanwhile.
    let shared = vault.shared().clone();
    let held = vault.chain().clone();
    let api = vault.api_addr().unwrap();
    let flooded = Arc::new(AtomicBool::new(false));
    let holder = {
        let flooded = flooded.clone();
        std::thread::spawn(move || {
            let engine = held.engine_for_tests();
            let deadline = Instant::now() + Duration::from_secs(20);
            let shed = || {
                shared
                    .metrics_text()
                    .lines()
                    .filter(|l| l.starts_with("spacevault_work_shed_total"))
                    .filter(|l| l.contains("queue=\"blocks\"") && l.contains("why=\"full\""))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum::<f64>()
            };
            while !(flooded.load(Ordering::Acquire) && shed() > 0.0) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let page = page_status(api);
            let shed = shed();
            drop(engine);
            (page, shed)
        })
    };
    // Signed blocks on parents nobody knows, each a new message: the
    // engine judges them, so they wait unread while it is held.
    let farmer = Keypair::from_secret(&[7; 32]);
    for i in 0..flood as u64 {
        let block = orphan_block(&farmer, chain, 50, i);
        rogue.publish(Topic::Blocks, block.encode());
        if i % 64 == 0 {
            drain(&rogue, &mut events).await;
        }
    }
    flooded.store(true, Ordering::Release);
    let (page, shed) = tokio::task::spawn_blocking(move || holder.join().unwrap())
        .await
        .unwrap();
    assert_eq!(
        page,
        Some(200),
        "the vault's API did not answer while its engine was held"
    );
    assert!(
        shed > 0.0,
        "a flood of {flood} blocks past a queue of {} shed nothing while the engine was held",
        QUEUES[blocks].capacity
    );
    // Free again, the vault follows the chain its peer went on with.
    let target = nodes[1].height() + 2;
    assert!(
        wait_for(Duration::from_secs(30), || vault.height() >= target).await,
        "the vault did not catch up once its engine was free: at {} of {target}",
        vault.height()
    );
    for node in nodes {
        node.stop().await;
    }
}
