//! Audits of the other holders of this vault's blobs. Every round, a
//! vault picks a few of the blobs it keeps at random (its own randomness:
//! only it checks the answers, and a holder cannot know beforehand which
//! blob or chunk it will be asked for), and asks each other holder it
//! knows of for a random chunk of each ([`spacevault_chain::audit`]). A
//! holder whose answer does not prove the chunk failed: it is counted,
//! logged, and sent the blob again, so that a copy a holder dropped (or
//! never kept, having signed a receipt for it) is back within a round.
//! An audit that gets no answer (or a busy or over-budget refusal) is
//! counted apart and costs the holder nothing, the fault may be this
//! vault's own; after [`UNANSWERED_TO_RESEND`] in a row the blob is sent
//! again all the same, which costs a holder that has it one hash, so that
//! a holder cannot keep a dropped copy hidden by never answering.
//!
//! What an audit cannot catch: a holder that relays the audit to another
//! holder and returns its answer passes without a copy of its own (a
//! proof of replication, as Filecoin's sealing gives, would be needed).
//! Holders here are this vault's view of the announcements; a holder that
//! fails again and again stays a holder until holders follow from the
//! chain.

pub use crate::config::AuditConfig;
use crate::shared::Shared;
use spacevault_chain::audit;
use spacevault_network::{Request, Response};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// How long a holder has to answer an audit.
pub const AUDIT_DUE: Duration = Duration::from_secs(5);

/// Audits of a holder left unanswered in a row after which its blob is
/// sent again anyway.
pub const UNANSWERED_TO_RESEND: u32 = 3;

/// How long the auditor waits for a holder to take a blob sent again.
const RESEND_DUE: Duration = Duration::from_secs(20);

/// Audits until the vault stops.
pub async fn run(shared: Arc<Shared>, config: AuditConfig) {
    if config.blobs == 0 || config.interval.is_zero() {
        return;
    }
    let mut unanswered = HashMap::new();
    loop {
        tokio::time::sleep(config.interval).await;
        audit_round(&shared, config.blobs, &mut unanswered).await;
    }
}

/// What an audit came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed(&'static str),
    Unanswered,
}

async fn audit_round(shared: &Arc<Shared>, blobs: usize, unanswered: &mut HashMap<[u8; 32], u32>) {
    let own = shared.key.public();
    let mut seed = [0u8; 32];
    if getrandom::fill(&mut seed).is_err() {
        return;
    }
    let pick = |what: &[u8], n: u64| -> u64 {
        let h = blake3::keyed_hash(&seed, what);
        u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes")) % n.max(1)
    };
    let store = shared.store.clone();
    let Ok(Ok(addresses)) = shared.spawn_blocking(move || store.blob_addresses()).await else {
        return;
    };
    // Distinct blobs: a blob picked twice would be asked for twice.
    let mut picked = BTreeSet::new();
    let mut draw = 0u64;
    while picked.len() < blobs.min(addresses.len()) {
        picked.insert(pick(&draw.to_le_bytes(), addresses.len() as u64) as usize);
        draw += 1;
    }
    let r = shared.chain.spec().replication as usize;
    for address in picked.into_iter().map(|i| addresses[i]) {
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
            let streak = unanswered.entry(holder).or_insert(0);
            *streak = match outcome {
                Outcome::Unanswered => *streak + 1,
                _ => 0,
            };
            let resend = match outcome {
                Outcome::Failed(why) => {
                    tracing::warn!(
                        holder = %hex::encode(holder),
                        address = %hex::encode(address),
                        why,
                        "a holder failed an audit: sending it the blob again"
                    );
                    true
                }
                Outcome::Unanswered if *streak >= UNANSWERED_TO_RESEND => {
                    *streak = 0;
                    true
                }
                _ => false,
            };
            if resend {
                let resent = crate::data::store_patiently(shared, peer, blob.clone());
                let sent = tokio::time::timeout(RESEND_DUE, resent);
                if let Ok(Ok(Response::Stored(_))) = sent.await {
                    shared.metrics.audit_repairs.inc();
                }
            }
        }
    }
    // Holders no longer met are forgotten: the map stays the size of the
    // vaults known.
    let known = shared.vaults.lock().unwrap().count();
    if unanswered.len() > 2 * known {
        unanswered.retain(|_, streak| *streak > 0);
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
        Ok(Ok(Response::Slice(slice))) => match checked(shared, address, len, chunk, &slice) {
            Ok(_) => Outcome::Passed,
            Err(_) => Outcome::Failed("bad_slice"),
        },
        Ok(Ok(Response::NotFound)) => Outcome::Failed("not_found"),
        // A busy holder shed the request, or this vault asked more than
        // its allowance: load, not a missing copy.
        Ok(Ok(Response::Refused(why))) if why.starts_with("busy") || why == "over_budget" => {
            Outcome::Unanswered
        }
        Ok(Ok(_)) => Outcome::Failed("wrong_answer"),
        Ok(Err(_)) | Err(_) => Outcome::Unanswered,
    }
}

/// An answer's slice checked against the blob's address, its hashing
/// counted by the meter.
fn checked(
    shared: &Shared,
    address: &[u8; 32],
    len: u64,
    chunk: u64,
    slice: &[u8],
) -> Result<Vec<u8>, audit::AuditError> {
    let input = crate::data::audit_input(address, chunk);
    spacevault_meter::with(&shared.meter, || {
        spacevault_meter::timed_on(spacevault_meter::Op::HashAuditCheck, input, || {
            audit::verify(address, len, chunk, slice)
        })
    })
}
