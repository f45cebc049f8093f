//! A rogue vault: a peer that announces itself as a vault, so that vaults
//! ask it for blobs, copies and blocks, and answers what no honest vault
//! answers. Every answer is checked, counted and never trusted, and a
//! sync that brings nothing keeps the vault from asking that peer again
//! for a while.

mod common;

use common::*;
use spacevault_chain::{Announce, Block, ChainProof, Keypair, Receipt, Stamp};
use spacevault_network::{self as net, Event, Request, Response, Topic, TransportKind, Verdict};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Publishes a block by `key` at `height` on a parent nobody has, far
/// ahead of the vaults: a vault that gets it keeps it as an orphan and
/// syncs from its sender (a new `nonce` makes a new message each time).
fn ask_to_sync(rogue: &net::Handle, key: &Keypair, chain: [u8; 32], height: u64, nonce: u64) {
    rogue.publish(
        Topic::Blocks,
        orphan_block(key, chain, height, nonce).encode(),
    );
}

/// How a rogue vault answers the requests it is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answers {
    /// A blob that is not the one asked for.
    WrongBlob,
    /// A receipt signed for another address.
    ReceiptForAnotherBlob,
    /// A receipt signed by a vault that is not a holder.
    ReceiptOfAnother,
    /// Another holder's genuine receipt for the blob (a client saw it in
    /// an earlier PUT's answer): one holder's copy counted twice.
    ReceiptOfAnotherHolder,
    /// A receipt whose signature does not verify.
    ForgedReceipt,
    /// A head far ahead, and blocks whose parents nobody has.
    BlocksThatNeverAttach,
    /// A head far ahead, and blocks of other heights than asked.
    BlocksOfOtherHeights,
    /// A head far ahead; the asking vault's own blocks where it has them,
    /// and above them an orphan: a sync that went back and forward over
    /// them would never end.
    OwnBlocksThenAnOrphan,
    /// A head far ahead, and no blocks at all.
    NothingAhead,
}

/// A rogue that announces itself as a vault (so that vaults ask it for
/// blobs, copies and blocks) and answers every request as `answers` says.
/// `ours`: the asking vault's first blocks, encoded.
async fn rogue_vault(
    secret: u8,
    answers: Answers,
    chain: [u8; 32],
    boot: Vec<spacevault_network::Address>,
    ours: Vec<Vec<u8>>,
) -> net::Handle {
    rogue_vault_counted(secret, answers, chain, boot, ours)
        .await
        .0
}

/// [`rogue_vault`], and the count of status requests it was sent.
async fn rogue_vault_counted(
    secret: u8,
    answers: Answers,
    chain: [u8; 32],
    boot: Vec<spacevault_network::Address>,
    ours: Vec<Vec<u8>>,
) -> (net::Handle, Arc<AtomicUsize>) {
    let statuses = Arc::new(AtomicUsize::new(0));
    let counted = statuses.clone();
    let mut config = net::Config::new([secret; 32], TransportKind::Memory, chain);
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = boot;
    config.heartbeat = Duration::from_millis(100);
    let (handle, mut events, _task) = net::start(config).unwrap();
    let key = Keypair::from_secret(&[secret; 32]);
    let outsider = Keypair::from_secret(&[secret.wrapping_add(100); 32]);
    let h = handle.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let (request, reply) = match event {
                Event::Request { request, reply, .. } => (request, reply),
                Event::Gossip { id, source, .. } => {
                    h.validate(id, source, Verdict::Ignore);
                    continue;
                }
                _ => continue,
            };
            let block_at = |height: u64| {
                let proof = ChainProof::plain(key.public(), [secret; 32], 16, height);
                let parent = *blake3::hash(&height.to_le_bytes()).as_bytes();
                let stamp = Stamp {
                    slot: 1,
                    output: [1; spacevault_chain::time::FORM_BYTES],
                };
                Block::produce(&key, chain, height, parent, stamp, proof, vec![]).encode()
            };
            let response = match (request, answers) {
                (Request::Fetch { .. }, Answers::WrongBlob) => Response::Blob(b"not it".to_vec()),
                (Request::Store { blob }, a) => {
                    let address = spacevault_chain::blob_address(&blob);
                    match a {
                        Answers::ReceiptForAnotherBlob => {
                            Response::Stored(Receipt::sign(&key, &chain, 0, &[0xab; 32]))
                        }
                        Answers::ReceiptOfAnother => {
                            Response::Stored(Receipt::sign(&outsider, &chain, 0, &address))
                        }
                        Answers::ReceiptOfAnotherHolder => Response::Stored(Receipt::sign(
                            &spacevault_node::kit::vault_key(1),
                            &chain,
                            0,
                            &address,
                        )),
                        Answers::ForgedReceipt => {
                            let mut r = Receipt::sign(&key, &chain, 0, &address);
                            r.signature[3] ^= 1;
                            Response::Stored(r)
                        }
                        _ => Response::Refused("no".into()),
                    }
                }
                (Request::Status, _) => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Response::Status {
                        height: 1 << 20,
                        head: [0xcd; 32],
                    }
                }
                (Request::Blocks { .. } | Request::Locate { .. }, Answers::NothingAhead) => {
                    Response::Blocks(vec![])
                }
                // A locate is answered as a request from height 1 would be
                // (as if no hash of the locator were known).
                (Request::Locate { .. }, Answers::BlocksThatNeverAttach) => {
                    Response::Blocks((1..5).map(block_at).collect())
                }
                (Request::Locate { .. }, Answers::BlocksOfOtherHeights) => {
                    Response::Blocks(vec![block_at(5), block_at(9)])
                }
                (Request::Locate { .. }, Answers::OwnBlocksThenAnOrphan) => {
                    let mut blocks = ours.clone();
                    blocks.push(block_at(ours.len() as u64 + 1));
                    Response::Blocks(blocks)
                }
                (Request::Blocks { from, .. }, Answers::BlocksThatNeverAttach) => {
                    Response::Blocks((from..from + 4).map(block_at).collect())
                }
                (Request::Blocks { from, .. }, Answers::BlocksOfOtherHeights) => {
                    Response::Blocks(vec![block_at(from + 5)])
                }
                (Request::Blocks { from, .. }, Answers::OwnBlocksThenAnOrphan) => {
                    Response::Blocks(match ours.get(from as usize - 1..) {
                        Some(own) if !own.is_empty() => own.to_vec(),
                        _ => vec![block_at(from)],
                    })
                }
                _ => Response::NotFound,
            };
            h.respond(reply, response);
        }
    });
    (handle, statuses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rogue_vaults_answers_are_checked_counted_and_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    // Every vault known holds every blob: the rogue is always asked.
    let spec = spec(300, 8);
    let chain = spec.chain_id();
    let nodes = network_at(&spec, &files, true, 2).await;
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    let v0 = &nodes[0];
    let api = client_of(v0);
    let cases = [
        (Answers::WrongBlob, "fetch", "wrong_blob"),
        (Answers::ReceiptForAnotherBlob, "store", "bad_receipt"),
        (Answers::ReceiptOfAnother, "store", "bad_receipt"),
        (Answers::ReceiptOfAnotherHolder, "store", "bad_receipt"),
        (Answers::ForgedReceipt, "store", "bad_receipt"),
        (Answers::BlocksThatNeverAttach, "sync", "does_not_attach"),
        (Answers::BlocksOfOtherHeights, "sync", "wrong_height"),
        (Answers::OwnBlocksThenAnOrphan, "sync", "does_not_attach"),
    ];
    for (i, (answers, topic, reason)) in cases.into_iter().enumerate() {
        let secret = 90 + i as u8;
        let before = rejected(v0, topic, reason);
        let ours = v0.engine().blocks_from(1, 3, usize::MAX);
        let rogue = rogue_vault(secret, answers, chain, boot.clone(), ours).await;
        nodes[1].network().block(rogue.local_peer());
        let key = Keypair::from_secret(&[secret; 32]);
        // Known as a vault: announced, with where it listens.
        let known = wait_for(Duration::from_secs(20), || {
            let addrs: Vec<Vec<u8>> = Vec::new();
            let a = Announce::signed(&key, &chain, spacevault_node::now_ms(), addrs);
            rogue.publish(Topic::Vaults, a.encode());
            v0.vaults().count() >= 3
        })
        .await;
        assert!(known, "{answers:?}: the rogue was never known as a vault");
        let counted = match answers {
            Answers::WrongBlob => {
                let got = v0.read(&[0x42; 32]).await;
                assert_eq!(got, None, "a blob that does not hash to its address");
                rejected(v0, topic, reason) > before
            }
            Answers::BlocksThatNeverAttach
            | Answers::BlocksOfOtherHeights
            | Answers::OwnBlocksThenAnOrphan => {
                // A proof for a height far ahead makes the vault sync from
                // its sender.
                let head = v0.engine().head();
                wait_for(Duration::from_secs(20), || {
                    let nonce = spacevault_node::now_ms();
                    ask_to_sync(&rogue, &key, chain, head.height + 50, nonce);
                    rejected(v0, topic, reason) > before
                })
                .await
            }
            Answers::ForgedReceipt => {
                // Through the API: 503, with the copies that were made.
                let blob = b"a blob through the API".to_vec();
                let (status, body) = api.put_path("/v1/blobs", blob).await.unwrap();
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(status, 503, "{v}");
                assert_eq!(
                    (v["copies"].as_u64(), v["wanted"].as_u64()),
                    (Some(2), Some(3))
                );
                assert_eq!(v["receipts"].as_array().map(Vec::len), Some(2), "{v}");
                assert!(v["error"].as_str().unwrap().contains("only 2 of 3"), "{v}");
                rejected(v0, topic, reason) > before
            }
            _ => {
                let blob = format!("a blob for {answers:?}").into_bytes();
                match v0.put(blob).await {
                    Err(spacevault_node::data::PutError::TooFewCopies { got, wanted, .. }) => {
                        assert_eq!((got, wanted), (2, 3), "{answers:?}")
                    }
                    other => panic!("{answers:?}: {other:?}"),
                }
                rejected(v0, topic, reason) > before
            }
        };
        assert!(
            counted,
            "{answers:?}: {topic} {reason} not counted\n{}",
            v0.metrics_text()
        );
        // Nothing of the rogue's is kept, and the vault is not stuck: its
        // syncs end, and its chain goes on with the other vault.
        let height = v0.height();
        assert!(
            wait_for(Duration::from_secs(20), || v0.height() >= height + 2
                && !v0.engine().store().has_blob(&[0x42; 32]).unwrap())
            .await,
            "{answers:?}: the vaults stopped"
        );
        assert!(wait_for(Duration::from_secs(10), || !v0.is_syncing()).await);
        // The rogue leaves: the next case's is the only one.
        v0.network().block(rogue.local_peer());
        assert!(
            wait_for(Duration::from_secs(20), || {
                let mut v = v0.vaults();
                v.unreachable(&rogue.local_peer());
                v.count() == 2
            })
            .await
        );
    }
    let h = nodes.iter().map(|n| n.height()).min().unwrap();
    assert!(agree_up_to(
        &nodes.iter().collect::<Vec<_>>(),
        h.saturating_sub(2)
    ));
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_whose_sync_brings_nothing_is_not_synced_from_again_for_a_while() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    let chain = spec.chain_id();
    let nodes = network_at(&spec, &files, false, 2).await;
    let v0 = &nodes[0];
    let boot = v0.listen_addrs(Duration::from_secs(1)).await;
    let secret = 80;
    let (rogue, statuses) =
        rogue_vault_counted(secret, Answers::NothingAhead, chain, boot, vec![]).await;
    nodes[1].network().block(rogue.local_peer());
    let key = Keypair::from_secret(&[secret; 32]);
    // It says it is far ahead (its status) and answers no block; then
    // proofs for heights far ahead ask the vault to sync from it again,
    // ten times a second for three seconds.
    let head = v0.engine().head();
    let mut nonce = 0u64;
    let mut ask_again = || {
        nonce += 1;
        ask_to_sync(&rogue, &key, chain, head.height + 50, nonce);
    };
    let first = wait_for(Duration::from_secs(20), || {
        ask_again();
        rejected(v0, "sync", "no_progress") >= 1.0
    })
    .await;
    assert!(first, "the rogue's empty sync was never counted");
    let asked = statuses.load(Ordering::SeqCst);
    for _ in 0..30 {
        ask_again();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        statuses.load(Ordering::SeqCst),
        asked,
        "a peer whose sync brought nothing was asked again within its cooldown"
    );
    assert_eq!(rejected(v0, "sync", "no_progress"), 1.0);
    // And the chain goes on with the honest vault.
    let height = v0.height();
    assert!(wait_for(Duration::from_secs(20), || v0.height() >= height + 2).await);
    for n in nodes {
        n.stop().await;
    }
}
