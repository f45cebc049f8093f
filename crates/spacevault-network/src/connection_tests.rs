//! Tests of the connections a node keeps: closing those beyond the
//! peers it wants, and requests caught by a closing connection.

use crate::tests::{first_address, hear_gossip, next, node};
use crate::*;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_peers_wanted_close_and_gossip_still_reaches_everyone() {
    // Twelve nodes each dialling every earlier one: all connected to all,
    // as a small network is once its walks have met everyone, and
    // gossipsub's streams would keep it so.
    const NODES: usize = 12;
    const TARGET: usize = 4;
    const MAX: usize = 6;
    let mut handles = Vec::new();
    let mut heard = Vec::new();
    let mut addresses = Vec::new();
    for i in 0..NODES {
        let mut config = Config::new([i as u8 + 1; 32], TransportKind::Memory, [9; 32]);
        config.listen = vec!["/memory/0".parse().unwrap()];
        config.bootstrap = addresses.clone();
        config.heartbeat = Duration::from_millis(100);
        config.target_peers = TARGET;
        config.limits.max_peers = Some(MAX);
        config.idle_connection = Duration::from_millis(500);
        let (handle, mut events, _task) = start(config).unwrap();
        addresses.push(first_address(&mut events, &handle).await);
        heard.push(hear_gossip(&handle, events));
        handles.push(handle);
    }
    let counts = || async {
        let mut counts = Vec::new();
        for h in &handles {
            counts.push(h.peers().await.len());
        }
        counts
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut most = counts().await;
    while most.iter().any(|&n| n < NODES - 1) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        most = counts().await;
    }
    assert!(most.iter().any(|&n| n > MAX), "{most:?}");
    // Unused past their grace, the excess closes (a quarter of it every
    // 2 s on each side: seconds, more on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut now = counts().await;
    while now.iter().any(|&n| n > MAX) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = counts().await;
    }
    assert!(
        now.iter().all(|&n| n <= MAX),
        "peers a node {now:?}, at most {} wanted",
        MAX
    );
    // The meshes mend over the connections kept: a message still reaches
    // every node.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut round = 0u32;
    let all_heard = || {
        heard[1..]
            .iter()
            .all(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    };
    while !all_heard() && Instant::now() < deadline {
        round += 1;
        for f in &heard {
            f.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        handles[0].publish(Topic::Vaults, format!("after {round}").into_bytes());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let deaf: Vec<usize> = (1..NODES)
        .filter(|&i| !heard[i].load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    assert!(
        deaf.is_empty(),
        "nodes {deaf:?} heard nothing in {round} rounds, peers {now:?}"
    );
}

/// a asks b one thing while b closes their connection under the first
/// `closes` asks it receives and answers any later one: a's answer, and
/// how many times b was asked.
async fn ask_while_closed_under(closes: usize) -> (Result<Response, RequestError>, usize) {
    // a dials b, so that a knows where b listens whatever identify has
    // told it by then: the request is asked again over a dial.
    let (b, mut b_events) = node(2, vec![]);
    let b_addr = first_address(&mut b_events, &b).await;
    let (a, mut a_events) = node(1, vec![b_addr]);
    let _ = first_address(&mut a_events, &a).await;
    tokio::spawn({
        let a = a.clone();
        async move {
            while next(&mut a_events, &a, Duration::from_secs(3600), |_| None::<()>)
                .await
                .is_some()
            {}
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !a.peers().await.contains(&b.local_peer()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let b_peer = b.local_peer();
    let ask = tokio::spawn({
        let a = a.clone();
        async move { a.request(b_peer, Request::Fetch { address: [2; 32] }).await }
    });
    let mut held = Vec::new();
    let mut asked = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && !ask.is_finished() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(event)) =
            tokio::time::timeout(left.min(Duration::from_millis(100)), b_events.recv()).await
        else {
            continue;
        };
        match event {
            Event::Request { reply, .. } => {
                asked += 1;
                if held.len() < closes {
                    // Held unanswered while the connection closes.
                    held.push(reply);
                    b.disconnect(a.local_peer());
                } else {
                    b.respond(reply, Response::NotFound);
                }
            }
            Event::Gossip { id, source, .. } => b.validate(id, source, Verdict::Accept),
            _ => {}
        }
    }
    (ask.await.unwrap(), asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_connection_closes_under_it_is_asked_again_once() {
    // As a node closing connections beyond the peers it wants may: a asks
    // again over a new connection and gets its answer.
    let (answer, asked) = ask_while_closed_under(1).await;
    assert!(matches!(answer, Ok(Response::NotFound)), "{answer:?}");
    assert_eq!(asked, 2, "asked once, and once again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_closed_under_twice_fails_to_its_caller() {
    let (answer, asked) = ask_while_closed_under(2).await;
    let err = answer.expect_err("closed under it twice");
    assert!(err.why.contains("closed"), "{err}");
    assert_eq!(asked, 2, "asked again only once");
}
