//! The API's bound on requests under way: past it, a request is answered
//! 503 at once with its reason, and once requests end, others are taken.

mod common;

use common::*;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A PUT whose head the vault has taken, waiting for its body (the vault
/// asked for it: 100 Continue).
fn put_under_way(api: SocketAddr, blob: &[u8]) -> TcpStream {
    let mut put = TcpStream::connect(api).unwrap();
    put.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "PUT /v1/blobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        blob.len()
    );
    put.write_all(head.as_bytes()).unwrap();
    let proceed = read_answer_head(&mut put);
    assert!(proceed.starts_with("HTTP/1.1 100"), "{proceed:?}");
    put
}

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
