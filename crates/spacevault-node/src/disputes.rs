//! Challenges on the chain, as a vault takes part in them
//! ([`spacevault_chain::challenge`]): with the receipts other holders
//! signed for the copies it sent them ([`crate::receipts::Book`]), it challenges a holder its
//! audits could not get a proof from with one of them, and answers the
//! challenges made to itself from the blobs it keeps (fetching one it
//! lost from the other holders first, as any read does).

use crate::shared::Shared;
use spacevault_chain::challenge::{
    answer_name, answers, challenge_name, challenged_chunk, dispute_of, Answer, Challenge, Dispute,
    Written, ANSWER_BLOCKS,
};
use spacevault_chain::holders::effective_era;
use spacevault_chain::RegisterTx;
use spacevault_meter::Op;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Pending writes of one register a vault writes past.
const PENDING_AHEAD: u64 = 8;

/// How long a vault waits before challenging a holder again: past the
/// first challenge's answer window (its blocks, at the chain's interval
/// between blocks, twice over for slots no block takes).
pub(crate) fn cooldown(shared: &Shared) -> Duration {
    let spec = shared.chain.spec();
    let window_slots = (ANSWER_BLOCKS + 2) * spec.block_interval_slots.max(1) * 2;
    Duration::from_millis(spec.slot_ms * window_slots).max(Duration::from_secs(5))
}

/// Challenges `holder` on the chain with its receipt for `address` (or
/// its newest) of its registration in force, unless this vault did lately
/// or holds none. Returns whether a challenge was written.
pub(crate) async fn challenge(shared: &Arc<Shared>, holder: [u8; 32], address: &[u8; 32]) -> bool {
    if shared
        .disputes
        .lock()
        .unwrap()
        .challenged_lately(&holder, cooldown(shared))
    {
        return false;
    }
    // The chain takes a receipt from the era the holder's registration in
    // force took effect in on.
    let (store, era_blocks) = (shared.store.clone(), shared.chain.spec().era_blocks);
    let since = shared
        .spawn_blocking(move || {
            let writes = store.holder_writes(&holder)?;
            Ok::<_, spacevault_store::StoreError>(
                writes
                    .last()
                    .filter(|w| !w.tx.value.is_empty())
                    .map(|w| effective_era(w.height, era_blocks)),
            )
        })
        .await;
    let Ok(Ok(Some(since))) = since else {
        return false;
    };
    let receipt = {
        let mut book = shared.disputes.lock().unwrap();
        let Some(receipt) = book.pick(&holder, address, since) else {
            return false;
        };
        book.challenging(holder, cooldown(shared));
        receipt
    };
    let name = challenge_name(&holder);
    let value = Challenge {
        receipt: receipt.clone(),
    }
    .encode();
    let written = write(shared, name, value).await;
    if written {
        shared.metrics.challenge("made");
        tracing::warn!(
            holder = %hex::encode(holder),
            address = %hex::encode(receipt.address),
            era = receipt.era,
            "challenged a holder on the chain: it must answer within {ANSWER_BLOCKS} blocks"
        );
    }
    written
}

/// Writes register `name` of this vault, one version past the chain's and
/// its own pending writes, and gossips it. Returns whether the pool took
/// it.
async fn write(shared: &Arc<Shared>, name: Vec<u8>, value: Vec<u8>) -> bool {
    let own = shared.key.public();
    let task = shared.clone();
    let asked = name.clone();
    // Past the canonical version and any write of this vault pending in
    // the pool: two answers to one accuser in a row both apply.
    let version = shared
        .spawn_blocking(move || {
            let (current, _) = task.chain.register_state(&own, &asked, 0)?;
            let mut version = current + 1;
            while version < current + PENDING_AHEAD
                && task.chain.register_state(&own, &asked, version)?.1
            {
                version += 1;
            }
            Ok::<_, spacevault_store::StoreError>(version)
        })
        .await;
    let Ok(Ok(version)) = version else {
        return false;
    };
    let tx = RegisterTx::signed(
        &shared.key,
        &shared.chain.chain_id(),
        &name,
        version,
        &value,
    );
    match shared.pool_and_gossip(tx).await {
        Ok(_) => true,
        Err(why) => {
            tracing::debug!(%why, "a dispute's transaction was not pooled");
            false
        }
    }
}

/// Answers the challenges to this vault whose windows are open on the
/// canonical chain, until the vault stops: at each head, those the chain
/// holds no answer to (a challenge a reorg brought, or an answer a pool
/// dropped, is answered again).
pub async fn follow(shared: Arc<Shared>) {
    let mut heads = shared.chain.heads();
    // When each challenge (accuser, version) was last answered.
    let mut tried: HashMap<([u8; 32], u64), Instant> = HashMap::new();
    let again = Duration::from_millis(shared.chain.spec().slot_ms * 4).max(Duration::from_secs(2));
    loop {
        let height = heads.borrow_and_update().height;
        let own = shared.key.public();
        let store = shared.store.clone();
        let open = shared
            .spawn_blocking(move || open_challenges(&store, &own, height))
            .await;
        if let Ok(Ok(open)) = open {
            tried.retain(|k, _| open.iter().any(|c| (c.owner, c.version) == *k));
            for challenge in open {
                let key = (challenge.owner, challenge.version);
                if tried.get(&key).is_some_and(|at| at.elapsed() < again) {
                    continue;
                }
                tried.insert(key, Instant::now());
                answer(&shared, challenge).await;
            }
        }
        tokio::select! {
            changed = heads.changed() => if changed.is_err() { return },
            _ = shared.shutdown.cancelled() => return,
        }
    }
}

/// The challenges to `own` whose windows are open at `head`, each
/// accuser's latest, by accusers registered when they wrote them (no
/// other counts), that the canonical chain holds no answer to.
fn open_challenges(
    store: &spacevault_store::Store,
    own: &[u8; 32],
    head: u64,
) -> Result<Vec<RegisterTx>, spacevault_store::StoreError> {
    // A challenge at `head - ANSWER_BLOCKS` or below: its window closed
    // with the head, no answer can land in it any more.
    let disputes = store.disputes_of(own, head.saturating_sub(ANSWER_BLOCKS) + 1..head + 1)?;
    let mut latest: HashMap<[u8; 32], &Written> = HashMap::new();
    for w in &disputes {
        if dispute_of(&w.tx) == Some(Dispute::Challenge { accused: *own }) {
            let newer = latest
                .get(&w.tx.owner)
                .is_none_or(|l| l.tx.version < w.tx.version);
            if newer {
                latest.insert(w.tx.owner, w);
            }
        }
    }
    let mut open = Vec::new();
    for (accuser, c) in latest {
        if c.tx.value.is_empty() || !store.registered_at(&accuser, c.height)? {
            continue;
        }
        if !disputes.iter().any(|w| answers(w, c)) {
            open.push(c.tx.clone());
        }
    }
    Ok(open)
}

/// Answers one challenge with a slice of the blob its receipt names.
async fn answer(shared: &Arc<Shared>, challenge: RegisterTx) {
    let Ok(Challenge { receipt }) = Challenge::decode(&challenge.value) else {
        return;
    };
    let accuser = challenge.owner;
    let Some(blob) = crate::data::read_verified(shared, &receipt.address).await else {
        shared.metrics.challenge("unanswerable");
        tracing::error!(
            accuser = %hex::encode(accuser),
            address = %hex::encode(receipt.address),
            "challenged for a blob this vault signed for and no holder has: it cannot answer, and leaves the holders"
        );
        return;
    };
    let len = blob.len() as u64;
    let own = shared.key.public();
    let chunk = challenged_chunk(
        &shared.chain.chain_id(),
        &accuser,
        &own,
        (challenge.version, &challenge.signature),
        &receipt.address,
        len,
    );
    let input = crate::data::audit_input(&receipt.address, chunk);
    let slice = spacevault_meter::with(&shared.meter, || {
        spacevault_meter::timed_on(Op::HashAuditProof, input, || {
            spacevault_chain::audit::prove_with_last(&blob, chunk)
        })
    });
    let Ok(slice) = slice else {
        return;
    };
    let value = Answer {
        challenge_version: challenge.version,
        challenge_signature: challenge.signature,
        address: receipt.address,
        len,
        slice,
    }
    .encode();
    if write(shared, answer_name(&accuser), value).await {
        shared.metrics.challenge("answered");
        tracing::info!(
            accuser = %hex::encode(accuser),
            address = %hex::encode(receipt.address),
            "answered a challenge on the chain"
        );
    }
}
