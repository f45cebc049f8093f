//! The HTTP API under bad input and load: every refusal with its status
//! and a JSON reason, its bound on requests under way (past it, 503 at
//! once; once requests end, others are taken), and a write that no block
//! takes answered once its wait is over.

mod common;

use common::*;
use spacevault_chain::{Keypair, RegisterTx};
use spacevault_node::client::Client;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn get_health(api: SocketAddr) -> (String, Vec<u8>) {
    let mut get = TcpStream::connect(api).unwrap();
    get.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    get.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    read_answer(&mut get)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_bound_of_requests_under_way_the_api_answers_503_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let files = [vault_files(dir.path(), 0)];
    let spec = spec(300, 1);
    let vault = start_with(&spec, &files[0], vec![], true, |c| c.api_max_requests = 2).await;
    let api = vault.api_addr().expect("the API listens");
    let blobs = [b"first under way".to_vec(), b"second under way".to_vec()];
    let checks = tokio::task::spawn_blocking(move || {
        let mut puts: Vec<TcpStream> = blobs.iter().map(|b| put_under_way(api, b)).collect();
        let (busy, reason) = get_health(api);
        // Both under way are answered once their bodies come.
        let mut answers = Vec::new();
        for (put, blob) in puts.iter_mut().zip(&blobs) {
            put.write_all(blob).unwrap();
            answers.push(read_answer_head(put));
        }
        let (free, _) = get_health(api);
        (busy, reason, answers, free)
    });
    let (busy, reason, answers, free) = checks.await.unwrap();
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:?}");
    let reason: serde_json::Value = serde_json::from_slice(&reason).expect("a JSON reason");
    let why = reason["error"].as_str().unwrap_or_default();
    assert!(why.contains("working on 2 requests"), "{reason}");
    for answer in answers {
        assert!(answer.starts_with("HTTP/1.1 201"), "{answer:?}");
    }
    assert!(free.starts_with("HTTP/1.1 200"), "{free:?}");
    vault.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_api_answers_bad_input_with_a_4xx_and_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    let mut spec = spec(300, 2);
    spec.max_blob_bytes = 1000;
    logs();
    // Vault 0 waits long on the chain, for the writes that must succeed;
    // vault 1 waits a second, for the ones that must time out; vault 2
    // answers any request within 300 ms, before its ten seconds on the
    // chain are over. Each gives a connection 500 ms to send its headers.
    let times = |request_ms, wait_ms| {
        move |c: &mut spacevault_node::NodeConfig| {
            c.api_times = Some(spacevault_node::api::ApiTimes {
                request: Duration::from_millis(request_ms),
                chain_wait: Duration::from_millis(wait_ms),
                headers: Duration::from_millis(500),
                body_progress: Duration::from_millis(500),
            })
        }
    };
    let first = start_with(&spec, &files[0], vec![], true, |c| {
        times(60_000, 30_000)(c);
        c.timekeeper = true;
    })
    .await;
    let boot = first.listen_addrs(Duration::from_secs(5)).await;
    let second = start_with(&spec, &files[1], boot.clone(), true, times(60_000, 1_000)).await;
    let third = start_with(&spec, &files[2], boot, true, times(300, 10_000)).await;
    let nodes = vec![first, second, third];
    let api = |i: usize| client_of(&nodes[i]);
    let (c, quick, impatient) = (api(0), api(1), api(2));
    // A refusal's status and reason.
    let reason = |(status, body): (u16, Vec<u8>)| -> (u16, String) {
        let v: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| panic!("{status}: not JSON: {body:?}"));
        (
            status,
            v["error"].as_str().expect("an error field").to_string(),
        )
    };
    let cases: Vec<(&str, &str)> = vec![
        ("/v1/blocks/abc", "not a whole number"),
        ("/v1/blocks/999999", "no block at height"),
        ("/v1/blobs/xyz", "not an address"),
        ("/v1/registers/00/name", "not an address"),
        ("/v1/crypto/trace?from_ns=x&to_ns=1", "the query"),
        ("/v1/crypto/trace?from_ns=5&to_ns=1", "before from_ns"),
        ("/v1/crypto/trace?from_ns=0&to_ns=1", "--trace-crypto"),
        ("/nope", "no such path"),
    ];
    for (path, says) in cases {
        let (status, body) = c.get_path(path).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!((400..500).contains(&status), "{path}: {status}");
        assert!(v["error"].as_str().unwrap().contains(says), "{path}: {v}");
    }
    match c.put(vec![0; 1500]).await {
        Err(spacevault_node::client::ClientError::Refused {
            status: 413,
            reason,
        }) => {
            assert!(reason.contains("1000"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // A register write with a bad signature or version.
    let owner = Keypair::from_secret(&[77; 32]);
    let chain = spec.chain_id();
    let good = c.set(&owner, &chain, "n", b"v1").await.unwrap();
    assert_eq!(good.version, 1);
    let forged = c
        .set(&Keypair::from_secret(&[78; 32]), &[0; 32], "n", b"x")
        .await;
    assert!(matches!(
        forged,
        Err(spacevault_node::client::ClientError::Refused { status: 400, .. })
    ));
    let owner_hex = hex::encode(owner.public());
    // A replayed version: 409.
    let replay = RegisterTx::signed(&owner, &chain, b"n", 1, b"again");
    let body = |tx: &RegisterTx| {
        serde_json::to_vec(&serde_json::json!({
            "version": tx.version,
            "value_hex": hex::encode(&tx.value),
            "signature": hex::encode(tx.signature),
        }))
        .unwrap()
    };
    let path = format!("/v1/registers/{owner_hex}/n");
    let (status, why) = reason(c.put_path(&path, body(&replay)).await.unwrap());
    assert_eq!(status, 409, "{why}");
    assert!(why.contains("version 1"), "{why}");
    // A version that skips one nothing will write: 409 at once.
    let gap = RegisterTx::signed(&owner, &chain, b"n", 5, b"later");
    let (status, why) = reason(quick.put_path(&path, body(&gap)).await.unwrap());
    assert_eq!(status, 409, "{why}");
    assert!(why.contains("skips version 4"), "{why}");
    // A height the chain does not reach in time: 504 from the handler...
    let far = format!("{path}?min_height=1000000");
    let (status, why) = reason(quick.get_path(&far).await.unwrap());
    assert_eq!(status, 504, "{why}");
    assert!(why.contains("below min_height"), "{why}");
    let (status, why) = reason(
        quick
            .get_path(&format!("{path}?min_version=99"))
            .await
            .unwrap(),
    );
    assert_eq!(status, 404, "{why}");
    assert!(why.contains("not min_version 99"), "{why}");
    // ... and from a vault whose request time runs out first.
    let (status, why) = reason(impatient.get_path(&far).await.unwrap());
    assert_eq!(status, 504, "{why}");
    assert!(why.contains("longer than the 300 ms"), "{why}");
    // Bodies beyond the limit (a blob's size and 64 KiB): 413, unread.
    for path in ["/v1/blobs", path.as_str()] {
        let big = vec![b'x'; 1000 + (64 << 10) + 1];
        let (status, why) = reason(c.put_path(path, big).await.unwrap());
        assert_eq!(status, 413, "{path}: {why}");
        assert!(why.contains("body"), "{path}: {why}");
    }
    let (status, why) = reason(c.put_path(&path, b"{".to_vec()).await.unwrap());
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("must be JSON"), "{why}");
    // Not JSON: 415, whatever the body.
    let (status, why) = reason(
        c.put_path_as(&path, body(&gap), "text/plain")
            .await
            .unwrap(),
    );
    assert_eq!(status, 415, "{why}");
    assert!(why.contains("application/json"), "{why}");
    // A method the path does not take: 405, in JSON.
    let (status, why) = reason(c.put_path("/v1/head", vec![]).await.unwrap());
    assert_eq!(status, 405, "{why}");
    // A target, or headers, too long to read: 414 and 431, in JSON.
    let long = format!("/v1/head?{}", "x".repeat(9 << 10));
    let (status, why) = reason(c.get_path(&long).await.unwrap());
    assert_eq!(status, 414, "{why}");
    let api_addr = nodes[0].api_addr().unwrap();
    let crowded = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: {}\r\nConnection: close\r\n\r\n",
        "y".repeat(17 << 10)
    );
    let (status, why) = reason(raw_http(api_addr, &crowded));
    assert_eq!(status, 431, "{why}");
    // A Host that is not this vault's: 403 (a page under a name pointed at
    // the vault's address cannot drive it); an address or localhost: 200.
    for (host, want) in [
        ("evil.example.com", 403),
        ("localhost:8733", 200),
        ("127.0.0.1", 200),
    ] {
        let request = format!("GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let (status, body) = raw_http(api_addr, &request);
        assert_eq!(status, want, "{host}: {}", String::from_utf8_lossy(&body));
        if want == 403 {
            let (_, why) = reason((status, body));
            assert!(why.contains("--api-host"), "{why}");
        }
    }
    // A connection that never finishes its headers is closed.
    let rest = stalled_answer(api_addr, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    let text = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    // An upload that stops sending is answered 408 once its body has made
    // no progress for the vault's allowance (500 ms here), not held open.
    let answer = stalled_answer(
        api_addr,
        b"PUT /v1/blobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 900\r\n\r\nten bytes.",
    );
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("no byte of the body"), "{text}");
    let (status, _) = c.get_path("/health").await.unwrap();
    assert_eq!(status, 200);
    let (_, metrics) = c.get_path("/metrics").await.unwrap();
    let metrics = String::from_utf8(metrics).unwrap();
    for name in [
        "spacevault_chain_height",
        "spacevault_peers",
        "spacevault_lookup_seconds",
        "spacevault_blob_reverify_failures_total",
        "spacevault_process_cpu_seconds",
        "spacevault_process_resident_bytes",
    ] {
        assert!(metrics.contains(name), "{name} missing");
    }
    // The spec a program driving vaults it did not start reads: the one
    // whose id the vault reports.
    let served = c.spec().await.unwrap();
    assert_eq!(served, spec);
    assert_eq!(
        hex::encode(served.chain_id()),
        c.status().await.unwrap().chain_id
    );
    for n in nodes {
        n.stop().await;
    }
}

/// Sends `request`, which stops short, and reads what comes back until the
/// vault closes the connection; asserts that it closes it, and within 20 s.
fn stalled_answer(addr: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let started = std::time::Instant::now();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    assert!(read.is_ok(), "closed, not timed out here: {read:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_no_block_takes_is_answered_504_once_the_wait_is_over() {
    // A vault with no plots, alone: it makes no block, so a valid write
    // stays pending until its wait on the chain (half a second) is over.
    let dir = tempfile::tempdir().unwrap();
    let made = vault_files(dir.path(), 0);
    std::fs::create_dir_all(dir.path().join("no-plots")).unwrap();
    let idle = VaultFiles {
        key: made.key,
        plots: dir.path().join("no-plots"),
        data: made.data,
    };
    let spec = spec(300, 1);
    let node = start_with(&spec, &idle, vec![], true, |c| {
        c.api_times = Some(spacevault_node::api::ApiTimes {
            request: Duration::from_secs(60),
            chain_wait: Duration::from_millis(500),
            headers: Duration::from_secs(10),
            body_progress: Duration::from_secs(10),
        })
    })
    .await;
    let c = Client::new(&format!("http://{}", node.api_addr().unwrap())).unwrap();
    let owner = Keypair::from_secret(&[77; 32]);
    match c.set(&owner, &spec.chain_id(), "n", b"v").await {
        Err(spacevault_node::client::ClientError::Refused {
            status: 504,
            reason,
        }) => assert!(reason.contains("pending"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // The next version, with the first pending: waits too, not a 409.
    let next = RegisterTx::signed(&owner, &spec.chain_id(), b"n", 2, b"w");
    let body = serde_json::json!({
        "version": 2,
        "value_hex": hex::encode(&next.value),
        "signature": hex::encode(next.signature),
    });
    let path = format!("/v1/registers/{}/n", hex::encode(owner.public()));
    let (status, _) = c
        .put_path(&path, serde_json::to_vec(&body).unwrap())
        .await
        .unwrap();
    assert_eq!(status, 504);
    node.stop().await;
}
