//! Audits of the other holders of this vault's blobs. Every round, a
//! vault picks a few of the blobs it keeps, by a seed from its chain's
//! head, its own key and the round (a holder cannot know beforehand which
//! blob or chunk it will be asked for), and asks each other holder it
//! knows of for a random chunk of each ([`spacevault_chain::audit`]). A
//! holder whose answer does not prove the chunk failed: it is counted,
//! logged, and sent the blob again, so that a copy a holder dropped (or
//! never kept, having signed a receipt for it) is back within a round.
//! An audit that gets no answer is counted apart and costs the holder
//! nothing: the fault may be this vault's own.
//!
//! Holders here are this vault's view of the announcements; a holder that
//! fails again and again stays a holder until holders follow from the
//! chain.

pub use crate::config::AuditConfig;
use crate::shared::Shared;
use spacevault_chain::audit;
use spacevault_network::{Request, Response};
use std::sync::Arc;
use std::time::Duration;

/// How long a holder has to answer an audit.
pub const AUDIT_DUE: Duration = Duration::from_secs(5);

/// Audits until the vault stops.
pub async fn run(shared: Arc<Shared>, config: AuditConfig) {
    if config.blobs == 0 || config.interval.is_zero() {
        return;
    }
    let mut round = 0u64;
    loop {
        tokio::time::sleep(config.interval).await;
        round += 1;
        audit_round(&shared, config.blobs, round).await;
    }
}

/// What an audit came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed(&'static str),
    Unanswered,
}

async fn audit_round(shared: &Arc<Shared>, blobs: usize, round: u64) {
    let own = shared.key.public();
    let seed = {
        let mut input = shared.chain.stored_head().hash.to_vec();
        input.extend_from_slice(&own);
        input.extend_from_slice(&round.to_le_bytes());
        *blake3::Hasher::new_derive_key("spacevault audit round")
            .update(&input)
            .finalize()
            .as_bytes()
    };
    let pick = |what: &[u8], n: u64| -> u64 {
        let h = blake3::keyed_hash(&seed, what);
        u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes")) % n.max(1)
    };
    let store = shared.store.clone();
    let Ok(Ok(addresses)) = shared.spawn_blocking(move || store.blob_addresses()).await else {
        return;
    };
    if addresses.is_empty() {
        return;
    }
    let r = shared.chain.spec().replication as usize;
    for i in 0..blobs.min(addresses.len()) {
        let address = addresses[pick(&(i as u64).to_le_bytes(), addresses.len() as u64) as usize];
        let reader = shared.clone();
        let local = shared
            .blob_reads
            .run(move || crate::data::read_local(&reader, &address))
            .await;
        let Some(Ok(Some(blob))) = local else {
            continue;
        };
        let holders: Vec<([u8; 32], spacevault_network::Peer)> = {
            let v = shared.vaults.lock().unwrap();
            v.holders(&address, r)
                .into_iter()
                .filter(|k| *k != own)
                .filter_map(|k| Some((k, v.peer(&k)?)))
                .collect()
        };
        for (holder, peer) in holders {
            let chunk = pick(
                &[&address[..], &holder[..]].concat(),
                audit::chunks(blob.len() as u64),
            );
            let outcome = audit_one(shared, peer, &address, blob.len() as u64, chunk).await;
            let label = match outcome {
                Outcome::Passed => "passed",
                Outcome::Failed(why) => why,
                Outcome::Unanswered => "unanswered",
            };
            shared.metrics.audit(label);
            if let Outcome::Failed(why) = outcome {
                tracing::warn!(
                    holder = %hex::encode(holder),
                    address = %hex::encode(address),
                    why,
                    "a holder failed an audit: sending it the blob again"
                );
                let request = Request::Store { blob: blob.clone() };
                if let Ok(Response::Stored(_)) = shared.net.request(peer, request).await {
                    shared.metrics.audit_repairs.inc();
                }
            }
        }
    }
}

async fn audit_one(
    shared: &Shared,
    peer: spacevault_network::Peer,
    address: &[u8; 32],
    len: u64,
    chunk: u64,
) -> Outcome {
    let request = Request::Audit {
        address: *address,
        chunk,
    };
    match tokio::time::timeout(AUDIT_DUE, shared.net.request(peer, request)).await {
        Ok(Ok(Response::Slice(slice))) => match audit::verify(address, len, chunk, &slice) {
            Ok(_) => Outcome::Passed,
            Err(_) => Outcome::Failed("bad_slice"),
        },
        Ok(Ok(Response::NotFound)) => Outcome::Failed("not_found"),
        // A busy holder shed the request: its load, not its copy.
        Ok(Ok(Response::Refused(why))) if why.starts_with("busy") => Outcome::Unanswered,
        Ok(Ok(_)) => Outcome::Failed("wrong_answer"),
        Ok(Err(_)) | Err(_) => Outcome::Unanswered,
    }
}
