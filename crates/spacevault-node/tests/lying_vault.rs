//! A client against a vault that lies: bytes that are not the blob asked
//! for, another chain than the spec given, registers their owners did not
//! sign, receipts forged, replayed, for another blob or from keys that are
//! no holders of their era near the blob, holders listed with forged
//! registrations, and files whose parts or manifests were swapped. The
//! client takes none of it.

use spacevault_chain::manifest::Manifest;
use spacevault_chain::{blob_address, Keypair, Receipt, RegisterTx};
use spacevault_node::api::types::{PutAnswer, ReceiptJson, RegisterAnswer, Status};
use spacevault_node::client::{Client, ClientError, FileOptions};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the lying vault answers: a status and body for each method and
/// path, 404 for anything else; the last PUT's body kept.
#[derive(Default)]
struct Script {
    answers: BTreeMap<(String, String), (u16, Vec<u8>)>,
    last_put: Option<Vec<u8>>,
}

/// An HTTP server on loopback answering from `script`, one request a
/// connection.
async fn lying_vault(script: Arc<Mutex<Script>>) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let head_end = loop {
                    let mut chunk = [0u8; 4096];
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut words = head.split_whitespace();
                let (method, path) = (
                    words.next().unwrap_or("").to_string(),
                    words.next().unwrap_or("").to_string(),
                );
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    let mut chunk = [0u8; 65536];
                    let Ok(n) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let (status, body) = {
                    let mut s = script.lock().unwrap();
                    if method == "PUT" {
                        s.last_put = Some(buf[head_end..head_end + length].to_vec());
                    }
                    let path = path.split('?').next().unwrap_or("").to_string();
                    s.answers
                        .get(&(method, path))
                        .cloned()
                        .unwrap_or((404, br#"{"error":"no such thing"}"#.to_vec()))
                };
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&body).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Client::new(&url).unwrap()
}

const CHAIN: [u8; 32] = [7; 32];

fn script_on(chain: [u8; 32]) -> Arc<Mutex<Script>> {
    let mut script = Script::default();
    let status = Status {
        chain_id: hex::encode(chain),
        max_blob_bytes: 4096,
        ..Status::default()
    };
    script.answers.insert(
        ("GET".into(), "/v1/status".into()),
        (200, serde_json::to_vec(&status).unwrap()),
    );
    Arc::new(Mutex::new(script))
}

fn answer(script: &Arc<Mutex<Script>>, method: &str, path: &str, status: u16, body: Vec<u8>) {
    script
        .lock()
        .unwrap()
        .answers
        .insert((method.into(), path.into()), (status, body));
}

fn holder(i: u8) -> Keypair {
    Keypair::from_secret(&[i; 32])
}

fn receipt_json(r: &Receipt) -> ReceiptJson {
    ReceiptJson {
        holder: hex::encode(r.holder),
        era: r.era,
        signature: hex::encode(r.signature),
    }
}

#[tokio::test]
async fn bytes_that_are_not_the_blob_asked_for_are_refused() {
    let script = script_on(CHAIN);
    let asked = blob_address(b"the blob that was stored");
    let path = format!("/v1/blobs/{}", hex::encode(asked));
    answer(&script, "GET", &path, 200, b"something else".to_vec());
    let client = lying_vault(script).await;
    match client.get(&hex::encode(asked)).await {
        Err(ClientError::WrongBytes { address }) => assert_eq!(address, hex::encode(asked)),
        other => panic!("wrong bytes taken: {other:?}"),
    }
    let mut out = Vec::new();
    let file = client
        .get_file(&asked, &mut out, &FileOptions::default())
        .await;
    assert!(
        matches!(file, Err(ClientError::WrongBytes { .. })),
        "{file:?}"
    );
    assert!(out.is_empty(), "nothing unchecked is written");
}

#[tokio::test]
async fn a_vault_on_another_chain_than_the_spec_given_is_refused() {
    let client = lying_vault(script_on([9; 32])).await;
    assert_eq!(
        client.chain_id().await.unwrap(),
        [9; 32],
        "without a spec, its word"
    );
    let client = client.expecting_chain(CHAIN);
    match client.chain_id().await {
        Err(ClientError::WrongChain { vault, expected }) => {
            assert_eq!(
                (vault, expected),
                (hex::encode([9; 32]), hex::encode(CHAIN))
            );
        }
        other => panic!("another chain taken: {other:?}"),
    }
    // Nothing is stored through it either.
    assert!(matches!(
        client.put(b"a blob".to_vec()).await,
        Err(ClientError::WrongChain { .. })
    ));
}

#[tokio::test]
async fn a_register_its_owner_did_not_sign_is_refused() {
    let script = script_on(CHAIN);
    let owner = holder(1);
    let tx = RegisterTx::signed(&owner, &CHAIN, b"name", 3, b"the owner's value");
    let as_sent = |value: &[u8], signature: [u8; 64], version: u64| RegisterAnswer {
        owner: hex::encode(owner.public()),
        name: "name".into(),
        version,
        value_hex: hex::encode(value),
        value: Some(String::from_utf8_lossy(value).into_owned()),
        signature: hex::encode(signature),
        height: 5,
    };
    let path = format!("/v1/registers/{}/name", hex::encode(owner.public()));
    let client = lying_vault(script.clone()).await;
    answer(
        &script,
        "GET",
        &path,
        200,
        serde_json::to_vec(&as_sent(&tx.value, tx.signature, 3)).unwrap(),
    );
    let read = client.read(&owner.public(), "name").await.unwrap();
    assert_eq!(read.value.as_deref(), Some("the owner's value"));
    let lies = [
        as_sent(b"the vault's value", tx.signature, 3),
        as_sent(&tx.value, tx.signature, 4),
        as_sent(
            &tx.value,
            RegisterTx::signed(&holder(2), &CHAIN, b"name", 3, &tx.value).signature,
            3,
        ),
        as_sent(
            &tx.value,
            RegisterTx::signed(&owner, &[8; 32], b"name", 3, &tx.value).signature,
            3,
        ),
    ];
    for lie in lies {
        answer(
            &script,
            "GET",
            &path,
            200,
            serde_json::to_vec(&lie).unwrap(),
        );
        match client.read(&owner.public(), "name").await {
            Err(ClientError::ForgedRegister { .. }) => {}
            other => panic!("a forged register taken: {other:?}"),
        }
    }
    // The text shown is the signed value's, whatever the vault says it is.
    let mut dressed = as_sent(&tx.value, tx.signature, 3);
    dressed.value = Some("not what was signed".into());
    answer(
        &script,
        "GET",
        &path,
        200,
        serde_json::to_vec(&dressed).unwrap(),
    );
    let read = client.read(&owner.public(), "name").await.unwrap();
    assert_eq!(read.value.as_deref(), Some("the owner's value"));
}

#[tokio::test]
async fn only_receipts_signed_for_the_blob_by_distinct_holders_count_as_copies() {
    let script = script_on(CHAIN);
    let blob = b"a blob to keep".to_vec();
    let address = blob_address(&blob);
    let good: Vec<Receipt> = (1..=2)
        .map(|i| Receipt::sign(&holder(i), &CHAIN, 0, &address))
        .collect();
    let mut forged = Receipt::sign(&holder(3), &CHAIN, 0, &address);
    forged.signature[0] ^= 1;
    let other_blob = Receipt::sign(&holder(4), &CHAIN, 0, &blob_address(b"another blob"));
    let other_chain = Receipt::sign(&holder(5), &[8; 32], 0, &address);
    let receipts = [
        &good[0],
        &good[1],
        &good[1],
        &forged,
        &other_blob,
        &other_chain,
    ];
    let said = PutAnswer {
        error: None,
        address: hex::encode(address),
        copies: 4,
        wanted: 4,
        receipts: receipts.iter().map(|r| receipt_json(r)).collect(),
    };
    answer(
        &script,
        "PUT",
        "/v1/blobs",
        201,
        serde_json::to_vec(&said).unwrap(),
    );
    let client = lying_vault(script.clone()).await;
    match client.put(blob.clone()).await {
        Err(ClientError::TooFewCopies(put)) => {
            assert_eq!((put.copies, put.wanted), (2, 4));
            assert_eq!(
                put.receipts,
                vec![receipt_json(&good[0]), receipt_json(&good[1])]
            );
        }
        other => panic!("claimed copies taken: {other:?}"),
    }
    assert_eq!(script.lock().unwrap().last_put.as_deref(), Some(&blob[..]));
    // An answer for another blob than the one sent is no answer.
    let elsewhere = PutAnswer {
        address: hex::encode(blob_address(b"another blob")),
        ..said
    };
    answer(
        &script,
        "PUT",
        "/v1/blobs",
        201,
        serde_json::to_vec(&elsewhere).unwrap(),
    );
    assert!(matches!(
        client.put(blob).await,
        Err(ClientError::BadAnswer(_))
    ));
}

#[tokio::test]
async fn a_file_whose_manifest_lists_a_part_of_the_wrong_size_is_refused() {
    let script = script_on(CHAIN);
    let parts = [vec![1u8; 100], vec![2u8; 60]];
    let mut whole = parts[0].clone();
    whole.extend_from_slice(&parts[1]);
    // Parts of 100 bytes: the second, 60 bytes, is not the 100 a file of
    // 200 bytes would have there.
    let lie = Manifest {
        bytes: 200,
        hash: *blake3::hash(&whole).as_bytes(),
        part_bytes: 100,
        depth: 0,
        entries: parts.iter().map(|p| blob_address(p)).collect(),
    };
    let root = lie.encode();
    for blob in parts.iter().chain([&root]) {
        let path = format!("/v1/blobs/{}", hex::encode(blob_address(blob)));
        answer(&script, "GET", &path, 200, blob.clone());
    }
    let client = lying_vault(script).await;
    let mut out = Vec::new();
    let got = client
        .get_file(&blob_address(&root), &mut out, &FileOptions::default())
        .await;
    match got {
        Err(ClientError::BadFile { why, .. }) => assert!(why.contains("size"), "{why}"),
        other => panic!("a file that does not fit taken: {other:?}"),
    }
    assert_eq!(out, parts[0], "only checked parts are written");
}

#[tokio::test]
async fn a_vault_that_wants_no_copies_or_claims_huge_blobs_is_not_believed() {
    let script = script_on(CHAIN);
    let blob = b"kept by nobody".to_vec();
    let said = PutAnswer {
        error: None,
        address: hex::encode(blob_address(&blob)),
        copies: 0,
        wanted: 0,
        receipts: vec![],
    };
    answer(
        &script,
        "PUT",
        "/v1/blobs",
        201,
        serde_json::to_vec(&said).unwrap(),
    );
    let client = lying_vault(script.clone()).await;
    match client.put(blob).await {
        Err(ClientError::TooFewCopies(put)) => assert_eq!(put.copies, 0),
        other => panic!("a PUT nobody kept taken: {other:?}"),
    }
    // Blobs of 4 GiB would make every part of a file a 4 GiB buffer.
    let status = Status {
        chain_id: hex::encode(CHAIN),
        max_blob_bytes: u32::MAX,
        ..Status::default()
    };
    answer(
        &script,
        "GET",
        "/v1/status",
        200,
        serde_json::to_vec(&status).unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("file");
    std::fs::write(&path, vec![1u8; 10_000]).unwrap();
    let put = client.put_file(&path, &FileOptions::default()).await;
    assert!(matches!(put, Err(ClientError::BadAnswer(_))), "{put:?}");
}

/// Holder `i`'s registration on `spec`'s chain: a plain proof of its
/// k = 16 plot under the threshold, found record by record.
fn registration(spec: &spacevault_chain::ChainSpec, i: u8) -> RegisterTx {
    use spacevault_chain::holders::*;
    let key = holder(i);
    let challenge = registration_challenge(&spec.chain_id(), &key.public(), 1, 0);
    let proof = (0..1u64 << 16)
        .map(|n| spacevault_chain::ChainProof::plain(key.public(), [i; 32], 16, n))
        .find(|p| registration_target(spec).admits(&p.verify(&challenge).unwrap()))
        .unwrap();
    let value = Registration { nonce: 0, proof }.encode();
    RegisterTx::signed(&key, &spec.chain_id(), HOLDER_REGISTER, 1, &value)
}

fn holder_json(tx: &RegisterTx, place: [u8; 32]) -> spacevault_node::api::types::HolderJson {
    spacevault_node::api::types::HolderJson {
        key: hex::encode(tx.owner),
        place: hex::encode(place),
        height: 5,
        since_era: 1,
        version: tx.version,
        value_hex: hex::encode(&tx.value),
        signature: hex::encode(tx.signature),
    }
}

#[tokio::test]
async fn receipts_count_only_from_registered_holders_of_their_era_near_the_blob() {
    let mut spec = spacevault_chain::ChainSpec::new("lying", 1_000_000, 1000);
    spec.set_sizes(spacevault_chain::ProofKind::Plain, 16, 32);
    spec.replication = 1;
    let chain = spec.chain_id();
    let blob = b"a blob for the era's holders".to_vec();
    let address = blob_address(&blob);
    // Holders 1 to 5, placed in that order from the address: with one
    // copy wanted, the client looks at the nearest 2 × 1 + 2 = 4.
    let place = |i: u8| {
        let mut p = address;
        p[0] ^= i;
        p
    };
    let registered: Vec<RegisterTx> = (1..=5).map(|i| registration(&spec, i)).collect();
    let listed = |holders: Vec<spacevault_node::api::types::HolderJson>| {
        serde_json::to_vec(&spacevault_node::api::types::HoldersAnswer {
            era: 3,
            bootstrap: false,
            first_block: hex::encode([1; 32]),
            holders,
        })
        .unwrap()
    };
    let receipt = |i: u8| Receipt::sign(&holder(i), &chain, 3, &address);
    let said = PutAnswer {
        error: None,
        address: hex::encode(address),
        copies: 3,
        wanted: 1,
        // The nearest holder; the fifth, registered but far from the
        // blob; and a key that never registered.
        receipts: [receipt(1), receipt(5), receipt(6)]
            .iter()
            .map(receipt_json)
            .collect(),
    };
    let script = script_on(chain);
    answer(
        &script,
        "PUT",
        "/v1/blobs",
        201,
        serde_json::to_vec(&said).unwrap(),
    );
    let honest_list: Vec<_> = registered
        .iter()
        .zip(1..)
        .map(|(tx, i)| holder_json(tx, place(i)))
        .collect();
    answer(
        &script,
        "GET",
        "/v1/holders",
        200,
        listed(honest_list.clone()),
    );
    let client = lying_vault(script.clone()).await.with_spec(&spec);
    let put = client.put(blob.clone()).await.unwrap();
    assert_eq!(put.copies, 1);
    assert_eq!(put.receipts, vec![receipt_json(&receipt(1))]);

    // A list that passes off a key as a holder with another's proof (or
    // with no valid proof at all) is a lie the client names.
    let mut stolen = registered[0].clone();
    let thief = holder(6);
    stolen = RegisterTx::signed(&thief, &chain, &stolen.name, 1, &stolen.value);
    let mut forged_list = honest_list;
    forged_list.push(holder_json(&stolen, place(6)));
    answer(&script, "GET", "/v1/holders", 200, listed(forged_list));
    let client = lying_vault(script.clone()).await.with_spec(&spec);
    match client.put(blob.clone()).await {
        Err(ClientError::BadAnswer(why)) => {
            assert!(why.contains(&hex::encode(thief.public())), "{why}")
        }
        other => panic!("took a forged holder: {other:?}"),
    }
    // An answer for another era than asked is refused too.
    let mut other_era: spacevault_node::api::types::HoldersAnswer =
        serde_json::from_slice(&listed(vec![])).unwrap();
    other_era.era = 4;
    answer(
        &script,
        "GET",
        "/v1/holders",
        200,
        serde_json::to_vec(&other_era).unwrap(),
    );
    let client = lying_vault(script).await.with_spec(&spec);
    assert!(matches!(
        client.put(blob).await,
        Err(ClientError::BadAnswer(_))
    ));
}
