//! A vault's stop: its waiting tasks end at once, a request under way is
//! answered, idle connections close, and once it returns nothing holds the
//! store.

mod common;

use common::*;
use spacevault_chain::Keypair;
use spacevault_network::Topic;
use spacevault_node::engine::Engine;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long a stop may take here: far less than any task's own wait in
/// these tests (5 s and more).
const PROMPT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_tasks_that_wait_at_once_and_frees_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![vault_files(dir.path(), 0)];
    // Long slots: a block in a slot the vault has not reached waits for it,
    // up to two slots.
    let spec = spec(4000, 1);
    let chain = spec.chain_id();
    let vault = network(&spec, &files, false).await.remove(0);
    let boot = vault.listen_addrs(Duration::from_secs(1)).await;
    let (rogue, mut events) = joined_rogue(97, chain, boot, vault.peer_id()).await;
    let key = Keypair::from_secret(&[97; 32]);
    // The rogue runs the proof of time ahead of the vault's timekeeper.
    let held = || metric(&vault, "spacevault_blocks_held_early_total");
    let mut round = 0u64;
    // Sent until the vault holds one (gossip needs a mesh first): a task
    // then waits for the block's slot, some 4 to 8 s away.
    while held() < 1.0 {
        round += 1;
        assert!(round < 200, "no early block was ever held");
        let head = vault.engine().head();
        let out = &slots_ahead(&vault, 2)[1];
        let block = rogue_block(&key, chain, (head.hash, head.height), out, round);
        rogue.publish(Topic::Blocks, block.encode());
        drain(&rogue, &mut events).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    vault.stop().await;
    let took = started.elapsed();
    assert!(
        took < PROMPT,
        "the stop took {took:?}: it waited for a held block's slot"
    );
    Engine::open(&files[0].data.join("vault.redb"), spec.clone())
        .expect("the store opens once the stop has returned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_under_way_at_the_stop_is_answered_and_idle_connections_close() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![vault_files(dir.path(), 0)];
    let spec = spec(300, 1);
    let vault = network(&spec, &files, true).await.remove(0);
    let api = vault.api_addr().expect("the API listens");
    // An idle connection, kept alive after one answer.
    let mut idle = TcpStream::connect(api).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let first = read_answer_head(&mut idle);
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    // A PUT under way when the stop begins: the server has taken its head
    // and waits for its body (it asked for it: 100 Continue).
    let blob = b"kept through the stop".to_vec();
    let mut put = put_under_way(api, &blob);
    let started = Instant::now();
    let stopping = tokio::spawn(vault.stop());
    // New connections are refused once the stop has begun.
    let refused = wait_for(Duration::from_secs(10), || TcpStream::connect(api).is_err()).await;
    assert!(
        refused,
        "the API still took connections after the stop began"
    );
    put.write_all(&blob).unwrap();
    // Blocking reads off the runtime's two threads, which the vault needs.
    let answer = tokio::task::spawn_blocking(move || read_answer_head(&mut put))
        .await
        .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 201"),
        "the PUT under way at the stop was not answered: {answer:?}"
    );
    // The idle connection is closed by the server, not left to time out.
    let closed = tokio::task::spawn_blocking(move || idle.read_to_end(&mut Vec::new()))
        .await
        .unwrap();
    assert!(
        closed.is_ok(),
        "the idle connection was not closed: {closed:?}"
    );
    tokio::time::timeout(Duration::from_secs(30), stopping)
        .await
        .expect("the stop ended")
        .unwrap();
    let took = started.elapsed();
    assert!(took < PROMPT, "the stop took {took:?}");
    Engine::open(&files[0].data.join("vault.redb"), spec.clone())
        .expect("the store opens once the stop has returned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vault_dropped_without_a_stop_still_ends_and_lets_go_of_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![vault_files(dir.path(), 0)];
    let spec = spec(300, 1);
    let vault = network(&spec, &files, true).await.remove(0);
    assert!(wait_for(Duration::from_secs(20), || vault.height() >= 1).await);
    drop(vault);
    let path = files[0].data.join("vault.redb");
    let freed = wait_for(Duration::from_secs(10), || {
        Engine::open(&path, spec.clone()).is_ok()
    })
    .await;
    assert!(freed, "the store of a dropped vault stayed open");
}
