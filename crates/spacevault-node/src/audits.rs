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
//! A holder that fails [`FAILURES_TO_CHALLENGE`] audits in a row, or
//! leaves [`UNANSWERED_TO_CHALLENGE`] unanswered in a row (a registered
//! holder that vanished is one: it is counted unanswered without being
//! asked), is challenged on the chain with a receipt it signed
//! ([`crate::disputes`]): it answers there, where every vault checks the
//! answer, or leaves the holders at the next era. So a failure here is
//! never this vault's word alone.
//!
//! What an audit cannot catch: a holder that relays the audit to another
//! holder and returns its answer passes without a copy of its own (a
//! proof of replication, as Filecoin's sealing gives, would be needed).

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

/// Audits of a holder failed in a row (a copy sent again between them)
/// after which it is challenged on the chain.
pub const FAILURES_TO_CHALLENGE: u32 = 2;

/// Audits of a holder left unanswered in a row after which it is
/// challenged on the chain.
pub const UNANSWERED_TO_CHALLENGE: u32 = 6;

/// How long the auditor waits for a holder to take a blob sent again.
const RESEND_DUE: Duration = Duration::from_secs(20);

/// Audits until the vault stops.
pub async fn run(shared: Arc<Shared>, config: AuditConfig) {
    if config.blobs == 0 || config.interval.is_zero() {
        return;
    }
    let mut streaks = HashMap::new();
    loop {
        tokio::time::sleep(config.interval).await;
        audit_round(&shared, config.blobs, &mut streaks).await;
    }
}

/// A holder's audits in a row that came to nothing.
#[derive(Clone, Copy, Debug, Default)]
struct Streak {
    failed: u32,
    unanswered: u32,
}

/// What an audit came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed(&'static str),
    Unanswered,
}

async fn audit_round(shared: &Arc<Shared>, blobs: usize, streaks: &mut HashMap<[u8; 32], Streak>) {
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
        // The holders alive, and those the chain names that are not: the
        // latter answer nothing.
        let (holders, vanished) = {
            let v = shared.vaults.lock().unwrap();
            let alive: Vec<([u8; 32], Option<spacevault_network::Peer>)> = v
                .holders(&address, r)
                .into_iter()
                .filter(|k| *k != own)
                .filter_map(|k| Some((k, Some(v.peer(&k)?))))
                .collect();
            let vanished: Vec<([u8; 32], Option<spacevault_network::Peer>)> = v
                .chain_holders(&address, r)
                .into_iter()
                .filter(|k| *k != own && v.peer(k).is_none())
                .map(|k| (k, None))
                .collect();
            (alive, vanished)
        };
        for (holder, peer) in holders.into_iter().chain(vanished) {
            let outcome = match peer {
                Some(peer) => {
                    let chunk = pick(
                        &[&address[..], &holder[..]].concat(),
                        audit::chunks(blob.len() as u64),
                    );
                    audit_one(shared, peer, &address, blob.len() as u64, chunk).await
                }
                None => Outcome::Unanswered,
            };
            let label = match outcome {
                Outcome::Passed => "passed",
                Outcome::Failed(why) => why,
                Outcome::Unanswered => "unanswered",
            };
            shared.metrics.audit(label);
            let streak = streaks.entry(holder).or_default();
            *streak = match outcome {
                Outcome::Passed => Streak::default(),
                Outcome::Failed(_) => Streak {
                    failed: streak.failed + 1,
                    unanswered: 0,
                },
                Outcome::Unanswered => Streak {
                    failed: streak.failed,
                    unanswered: streak.unanswered + 1,
                },
            };
            let due = streak.failed >= FAILURES_TO_CHALLENGE
                || streak.unanswered >= UNANSWERED_TO_CHALLENGE;
            if due && crate::disputes::challenge(shared, holder, &address).await {
                *streak = Streak::default();
            }
            // A holder under challenge is sent nothing more: it answers
            // on the chain from what it kept.
            let Some(peer) = peer else {
                continue;
            };
            let challenged = shared
                .disputes
                .lock()
                .unwrap()
                .challenged_lately(&holder, crate::disputes::cooldown(shared));
            if challenged {
                continue;
            }
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
                Outcome::Unanswered if streak.unanswered.is_multiple_of(UNANSWERED_TO_RESEND) => {
                    true
                }
                _ => false,
            };
            if resend {
                let resent = crate::data::store_patiently(shared, peer, blob.clone());
                let sent = tokio::time::timeout(RESEND_DUE, resent);
                if let Ok(Ok(Response::Stored(receipt))) = sent.await {
                    crate::data::keep_receipt(shared, &holder, &receipt);
                    shared.metrics.audit_repairs.inc();
                }
            }
        }
    }
    // Holders no longer met are forgotten: the map stays the size of the
    // vaults known.
    let known = shared.vaults.lock().unwrap().count();
    if streaks.len() > 2 * known {
        streaks.retain(|_, s| s.failed > 0 || s.unanswered > 0);
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
