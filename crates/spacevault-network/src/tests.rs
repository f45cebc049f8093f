use super::*;
use std::time::Instant;

pub(crate) fn node(i: u8, bootstrap: Vec<Multiaddr>) -> (Handle, mpsc::Receiver<Event>) {
    let mut config = Config::new([i; 32], TransportKind::Memory, [7; 32]);
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = bootstrap;
    config.heartbeat = Duration::from_millis(100);
    let (handle, events, _task) = start(config).unwrap();
    (handle, events)
}

/// The next event that `pick` takes, answering requests and validating
/// gossip with `verdict` meanwhile; none within the deadline.
pub(crate) async fn next<T>(
    events: &mut mpsc::Receiver<Event>,
    handle: &Handle,
    limit: Duration,
    mut pick: impl FnMut(&Event) -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, events.recv()).await.ok()??;
        let picked = pick(&event);
        match event {
            Event::Request { reply, .. } => handle.respond(reply, Response::NotFound),
            Event::Gossip { id, source, .. } => handle.validate(id, source, Verdict::Accept),
            _ => {}
        }
        if picked.is_some() {
            return picked;
        }
    }
}

/// Takes a node's events for the rest of the test: gossip accepted (and
/// the returned flag raised), requests answered `NotFound`.
pub(crate) fn hear_gossip(
    handle: &Handle,
    mut events: mpsc::Receiver<Event>,
) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (h, f) = (handle.clone(), flag.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                Event::Gossip { id, source, .. } => {
                    f.store(true, std::sync::atomic::Ordering::Relaxed);
                    h.validate(id, source, Verdict::Accept);
                }
                Event::Request { reply, .. } => h.respond(reply, Response::NotFound),
                _ => {}
            }
        }
    });
    flag
}

pub(crate) async fn first_address(
    events: &mut mpsc::Receiver<Event>,
    handle: &Handle,
) -> Multiaddr {
    next(events, handle, Duration::from_secs(5), |e| match e {
        Event::Listening(a) => Some(a.clone()),
        _ => None,
    })
    .await
    .expect("a listening address")
}

#[test]
fn peer_ids_and_farmer_keys_are_one() {
    let key = spacevault_chain::Keypair::from_secret(&[3; 32]).public();
    let peer = peer_of(&key).unwrap();
    assert_eq!(farmer_key_of(&peer), Some(key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gossip_is_relayed_only_when_accepted_and_requests_are_answered() {
    // a - b - c in a line: c hears a's messages only through b.
    let (a, mut a_events) = node(1, vec![]);
    let a_addr = first_address(&mut a_events, &a).await;
    let (b, mut b_events) = node(2, vec![a_addr]);
    let b_addr = first_address(&mut b_events, &b).await;
    let (c, mut c_events) = node(3, vec![b_addr]);
    let _ = first_address(&mut c_events, &c).await;
    // Discovery would connect a and c directly: blocked, they cannot.
    a.block(c.local_peer());
    c.block(a.local_peer());
    // Both links up and the meshes formed: b sees two peers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.peers().await.len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(b.peers().await.len(), 2);

    // a request from c to b.
    let b_peer = b.local_peer();
    let ask = tokio::spawn({
        let c = c.clone();
        async move { c.request(b_peer, Request::Fetch { address: [1; 32] }).await }
    });
    let got = next(&mut b_events, &b, Duration::from_secs(10), |e| match e {
        Event::Request { request, .. } => Some(request.clone()),
        _ => None,
    });
    // b answers NotFound for every request in `next`.
    assert_eq!(got.await, Some(Request::Fetch { address: [1; 32] }));
    assert!(matches!(ask.await.unwrap(), Ok(Response::NotFound)));

    // Gossip from a, until the meshes have formed: b accepts one message
    // and rejects another; c hears only the first.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut heard_good = false;
    let mut round = 0u32;
    while !heard_good && Instant::now() < deadline {
        round += 1;
        a.publish(Topic::Blocks, format!("good {round}").into_bytes());
        a.publish(Topic::Blocks, format!("bad {round}").into_bytes());
        let b_seen = async {
            let limit = Instant::now() + Duration::from_millis(500);
            while let Ok(Some(event)) = tokio::time::timeout(
                limit.saturating_duration_since(Instant::now()),
                b_events.recv(),
            )
            .await
            {
                match event {
                    Event::Gossip {
                        id, source, data, ..
                    } => {
                        let verdict = if data.starts_with(b"good") {
                            Verdict::Accept
                        } else {
                            Verdict::Reject
                        };
                        b.validate(id, source, verdict);
                    }
                    Event::Request { reply, .. } => b.respond(reply, Response::NotFound),
                    _ => {}
                }
            }
        };
        let c_seen = async {
            let mut seen = Vec::new();
            let limit = Instant::now() + Duration::from_millis(500);
            while let Ok(Some(event)) = tokio::time::timeout(
                limit.saturating_duration_since(Instant::now()),
                c_events.recv(),
            )
            .await
            {
                if let Event::Gossip {
                    id, source, data, ..
                } = event
                {
                    c.validate(id, source, Verdict::Accept);
                    seen.push(data);
                }
            }
            seen
        };
        let ((), seen) = tokio::join!(b_seen, c_seen);
        assert!(
            seen.iter().all(|d| d.starts_with(b"good")),
            "a rejected message was relayed"
        );
        heard_good = !seen.is_empty();
    }
    assert!(heard_good, "c never heard an accepted message");

    assert!(!c.peers().await.contains(&a.local_peer()));
    // Blocking b cuts a off.
    a.block(b.local_peer());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !a.peers().await.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a.peers().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_peers_on_one_address_all_hear_gossip() {
    // Twenty nodes on loopback TCP share one IP address, as vaults on one
    // host or behind one router do: none may be scored down for it (more
    // than ten peers on one IP graylist each other under gossipsub's
    // default scoring, once scores are refreshed).
    const NODES: usize = 20;
    let mut handles = Vec::new();
    let mut heard = Vec::new();
    let mut boot = Vec::new();
    for i in 0..NODES {
        let mut config = Config::new([i as u8 + 1; 32], TransportKind::Tcp, [8; 32]);
        config.listen = vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()];
        config.bootstrap = boot.clone();
        config.heartbeat = Duration::from_millis(100);
        let (handle, mut events, _task) = start(config).unwrap();
        if i == 0 {
            boot = vec![first_address(&mut events, &handle).await];
        }
        heard.push(hear_gossip(&handle, events));
        handles.push(handle);
    }
    // Connected and scored: every node has a peer, and a few score
    // refreshes (one a second) have passed.
    let deadline = Instant::now() + Duration::from_secs(20);
    for (i, h) in handles.iter().enumerate() {
        while h.peers().await.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!h.peers().await.is_empty(), "node {i} found no peer");
    }
    // Not a wait for an event: the refreshes come on gossipsub's clock
    // and show nowhere, so what is waited for is their time to pass. A
    // late refresh cannot fail the test, only make it weaker.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for f in &heard {
        f.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut round = 0u32;
    let all_heard = || {
        heard[1..]
            .iter()
            .all(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    };
    while !all_heard() && Instant::now() < deadline {
        round += 1;
        handles[0].publish(Topic::Vaults, format!("hello {round}").into_bytes());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deaf: Vec<usize> = (1..NODES)
        .filter(|&i| !heard[i].load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    assert!(
        deaf.is_empty(),
        "nodes {deaf:?} heard nothing in {round} rounds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_to_one_peer_at_once_wait_their_turn_and_all_succeed() {
    let (a, mut a_events) = node(11, vec![]);
    let a_addr = first_address(&mut a_events, &a).await;
    let (b, mut b_events) = node(12, vec![a_addr]);
    let _ = first_address(&mut b_events, &b).await;
    // a answers every request, slowly enough that they pile up.
    let answering = tokio::spawn({
        let a = a.clone();
        async move {
            while let Some(event) = a_events.recv().await {
                match event {
                    Event::Request { reply, .. } => {
                        let a = a.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            a.respond(reply, Response::NotFound);
                        });
                    }
                    Event::Gossip { id, source, .. } => a.validate(id, source, Verdict::Accept),
                    _ => {}
                }
            }
        }
    });
    let drain = tokio::spawn(async move { while b_events.recv().await.is_some() {} });
    let a_peer = a.local_peer();
    // The queue is what is under test, not the dial: start once b is linked.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !b.peers().await.contains(&a_peer) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(b.peers().await.contains(&a_peer), "b never linked to a");
    // Three times what one connection carries at once.
    let asks: Vec<_> = (0..300u32)
        .map(|i| {
            let b = b.clone();
            let mut address = [0u8; 32];
            address[..4].copy_from_slice(&i.to_le_bytes());
            tokio::spawn(async move { b.request(a_peer, Request::Fetch { address }).await })
        })
        .collect();
    let mut failed = Vec::new();
    for ask in asks {
        if let Err(e) = ask.await.unwrap() {
            failed.push(e.why);
        }
    }
    assert!(
        failed.is_empty(),
        "{} failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
    // A request abandoned while it waits for its answer leaves nothing
    // behind either.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(1),
        b.request(a_peer, Request::Fetch { address: [9; 32] }),
    )
    .await;
    assert!(abandoned.is_err(), "answered within a millisecond");
    assert_eq!(b.peers_with_turns(), 0, "turns outlived their requests");

    // Requests to many peers (each unknown: they fail at the dial) keep
    // no entry for any of them (secrets no node of these tests uses).
    let asks: Vec<_> = (56..=255u8)
        .map(|i| {
            let b = b.clone();
            let peer = peer_of(&spacevault_chain::Keypair::from_secret(&[i; 32]).public()).unwrap();
            tokio::spawn(async move { b.request(peer, Request::Fetch { address: [0; 32] }).await })
        })
        .collect();
    for ask in asks {
        assert!(ask.await.unwrap().is_err());
    }
    assert_eq!(b.peers_with_turns(), 0, "turns outlived their requests");
    answering.abort();
    drain.abort();
}

#[tokio::test]
async fn commands_past_a_full_queue_are_dropped_and_counted() {
    let (tx, _held) = mpsc::channel(COMMAND_QUEUE);
    let local = peer_of(&spacevault_chain::Keypair::from_secret(&[1; 32]).public()).unwrap();
    let handle = Handle::new(tx, local);
    for _ in 0..COMMAND_QUEUE + 10 {
        handle.publish(Topic::Txs, vec![0; 8]);
    }
    assert_eq!(handle.commands_dropped(), 10);
    let asked = tokio::time::timeout(
        Duration::from_secs(10),
        handle.request(local, Request::Fetch { address: [0; 32] }),
    )
    .await
    .expect("a full queue answers at once");
    assert!(asked.unwrap_err().why.contains("overloaded"));
    assert_eq!(handle.commands_dropped(), 11);
    assert_eq!(handle.peers().await, Vec::<PeerId>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_profile_holds_peers_at_its_distance_and_pings_measure_it() {
    // 40 ms one way each way: 80 ms a round trip.
    let (ka, kb) = ([21u8; 32], [22u8; 32]);
    let peer_of_secret = |s: [u8; 32]| {
        let key = spacevault_chain::Keypair::from_secret(&s).public();
        peer_of(&key).unwrap()
    };
    let profile = Arc::new(links::LinkProfile {
        regions: vec!["here".into(), "there".into()],
        one_way: vec![
            vec![Duration::ZERO, Duration::from_millis(40)],
            vec![Duration::from_millis(40), Duration::ZERO],
        ],
        jitter: 0.05,
        bytes_per_second: None,
        placement: [(peer_of_secret(ka), 0), (peer_of_secret(kb), 1)]
            .into_iter()
            .collect(),
    });
    let start_node = |secret: [u8; 32], bootstrap: Vec<Multiaddr>| {
        let mut config = Config::new(secret, TransportKind::Memory, [9; 32]);
        config.listen = vec!["/memory/0".parse().unwrap()];
        config.bootstrap = bootstrap;
        config.links = Some(profile.clone());
        let (handle, events, _task) = start(config).unwrap();
        (handle, events)
    };
    let (a, mut a_events) = start_node(ka, vec![]);
    let a_addr = first_address(&mut a_events, &a).await;
    let (b, mut b_events) = start_node(kb, vec![a_addr]);
    let a_peer = a.local_peer();
    // b's first ping of a, its round trip.
    let rtt = next(&mut b_events, &b, Duration::from_secs(10), |e| match e {
        Event::RoundTrip { peer, rtt } if *peer == a_peer => Some(*rtt),
        _ => None,
    })
    .await
    .expect("a ping");
    let answering = tokio::spawn({
        let a = a.clone();
        async move {
            while let Some(event) = a_events.recv().await {
                if let Event::Request { reply, .. } = event {
                    a.respond(reply, Response::NotFound);
                }
            }
        }
    });
    let drain = tokio::spawn(async move { while b_events.recv().await.is_some() {} });
    let mut requests = Vec::new();
    for _ in 0..5 {
        let asked = Instant::now();
        b.request(a_peer, Request::Fetch { address: [3; 32] })
            .await
            .unwrap();
        requests.push(asked.elapsed());
    }
    requests.sort();
    let median = requests[2];
    // Lower bounds only: they show the delay is applied, each way, with
    // its jitter (5%) and timers aimed half a millisecond early; how much
    // longer a busy machine takes says nothing of the links. The delay
    // itself is checked exactly in links.rs.
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    assert!(ms(rtt) >= 72.0, "ping round trip {} ms, set 80", ms(rtt));
    // A request opens a stream of its own: agreeing on its protocol costs
    // a round trip before the request's, as it would over real distance.
    assert!(
        ms(median) >= 144.0,
        "request took {} ms, two round trips of 80 set",
        ms(median)
    );
    answering.abort();
    drain.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_bootstrap_is_reported_with_its_reason_and_tried_again_until_it_answers() {
    // A port no test uses: memory ports are shared by the whole process.
    let port = 0x5EED_0000_0000_0000u64 + u64::from(std::process::id());
    let address: Multiaddr = format!("/memory/{port}").parse().unwrap();
    let (a, mut a_events) = node(1, vec![address.clone()]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let status = a.bootstrap().await;
        if status[0].error.is_some() {
            break status;
        }
        assert!(Instant::now() < deadline, "no failure reported: {status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status[0].address, address);
    assert!(!status[0].reached);
    assert!(status[0]
        .retry_in
        .is_some_and(|w| w <= bootstrap::FIRST_BACKOFF));
    let why = status[0].error.clone().unwrap();
    assert!(!why.trim().is_empty() && !why.ends_with(": "), "{why}");

    // The bootstrap vault comes up: a dials it again and connects.
    let mut config = Config::new([2; 32], TransportKind::Memory, [7; 32]);
    config.listen = vec![address.clone()];
    config.heartbeat = Duration::from_millis(100);
    let (b, _b_events, _task) = start(config).unwrap();
    let b_peer = b.local_peer();
    let connected = next(&mut a_events, &a, Duration::from_secs(60), |e| match e {
        Event::PeerUp(p) if *p == b_peer => Some(()),
        _ => None,
    })
    .await;
    assert!(connected.is_some(), "a never reached its bootstrap");
    let status = a.bootstrap().await;
    assert!(status[0].reached, "{status:?}");
    assert_eq!(status[0].error, None);
}

#[test]
fn addresses_a_vault_cannot_use_are_refused_at_start_saying_which_it_takes() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _in = rt.enter();
    let mut config = Config::new([1; 32], TransportKind::Tcp, [7; 32]);
    config.listen = vec!["/dns4/example.org/tcp/1".parse().unwrap()];
    let e = start(config.clone()).err().expect("refused").to_string();
    assert!(
        e.contains("cannot listen on /dns4/example.org/tcp/1"),
        "{e}"
    );
    assert!(e.contains("/ip4/ADDRESS/tcp/PORT"), "{e}");
    config.listen = vec![];
    config.bootstrap = vec!["/ip4/127.0.0.1/udp/1/quic-v1".parse().unwrap()];
    let e = start(config).err().expect("refused").to_string();
    assert!(
        e.contains("cannot dial --bootstrap /ip4/127.0.0.1/udp/1/quic-v1"),
        "{e}"
    );
    assert!(e.contains("/ip4/ADDRESS/tcp/PORT"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_of_another_chain_is_disconnected_at_the_handshake_and_said_so() {
    let (a, mut a_events) = node(41, vec![]);
    let a_addr = first_address(&mut a_events, &a).await;
    let mut config = Config::new([42; 32], TransportKind::Memory, [8; 32]);
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = vec![a_addr];
    config.heartbeat = Duration::from_millis(100);
    let (b, mut b_events, _task) = start(config).unwrap();
    let b_peer = b.local_peer();
    let said = next(&mut a_events, &a, Duration::from_secs(20), |e| match e {
        Event::OtherChain { peer, version } if *peer == b_peer => Some(version.clone()),
        _ => None,
    })
    .await;
    assert_eq!(said, Some(identify_version(&[8; 32])));
    let heard = next(&mut b_events, &b, Duration::from_secs(20), |e| match e {
        Event::OtherChain { version, .. } => Some(version.clone()),
        _ => None,
    })
    .await;
    assert_eq!(heard, Some(identify_version(&[7; 32])));
    // Neither keeps the other, and b says why its bootstrap failed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while a.peers().await.contains(&b_peer) {
        assert!(Instant::now() < deadline, "a kept a peer of another chain");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = b.bootstrap().await;
    let why = status[0].error.clone().unwrap_or_default();
    assert!(why.contains("another chain"), "{status:?}");
    assert!(!status[0].reached);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_from_one_address_past_the_limit_are_refused() {
    let tcp = |i: u8, limits: ConnectionLimits, bootstrap: Vec<Multiaddr>| {
        let mut config = Config::new([i; 32], TransportKind::Tcp, [7; 32]);
        config.listen = vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()];
        config.bootstrap = bootstrap;
        config.limits = limits;
        let (handle, events, _task) = start(config).unwrap();
        (handle, events)
    };
    let strict = ConnectionLimits {
        inbound: 100,
        per_ip: 1,
        limit_loopback: true,
        max_peers: None,
    };
    let (a, mut a_events) = tcp(61, strict, vec![]);
    let a_addr = first_address(&mut a_events, &a).await;
    let (b, _b_events) = tcp(62, ConnectionLimits::default(), vec![a_addr.clone()]);
    let b_peer = b.local_peer();
    let linked = next(&mut a_events, &a, Duration::from_secs(20), |e| match e {
        Event::PeerUp(p) if *p == b_peer => Some(()),
        _ => None,
    })
    .await;
    assert!(linked.is_some(), "the first peer was refused");
    // A second peer from the same address is refused, and says why.
    let (c, _c_events) = tcp(63, ConnectionLimits::default(), vec![a_addr]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let status = c.bootstrap().await;
        if status[0].error.is_some() {
            break status;
        }
        assert!(Instant::now() < deadline, "never refused: {status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!status[0].reached, "{status:?}");
    assert!(!a.peers().await.contains(&c.local_peer()));
    assert!(a.peers().await.contains(&b_peer));
}
