//! The chain's data holders, as a vault follows them: each time its head
//! enters a holder era (or a reorg replaces the era's first block), the
//! era's registered holders and their places are read from the store and
//! handed to the vault table, which moves blobs to their new holders; and
//! a vault with plots registers itself as a holder with a proof from one
//! of them ([`spacevault_chain::holders`]).

use crate::shared::Shared;
use spacevault_chain::challenge;
use spacevault_chain::holders::{
    self, era_at, era_salt, era_start, place, registration_challenge, registration_target, Place,
    Registration, HOLDER_REGISTER, MAX_REGISTRATION_NONCES,
};
use spacevault_chain::{ChainSpec, RegisterTx};
use spacevault_store::{Store, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A holder of an era: its registration, the height that wrote it, and
/// its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub tx: RegisterTx,
    pub height: u64,
    /// The era its registration took effect in: its place is drawn with
    /// that era's salt.
    pub since_era: u64,
    pub place: [u8; 32],
}

/// An era's holders as the canonical chain names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EraHolders {
    pub era: u64,
    /// The hash of the era's first block: another one, another set.
    pub first_block: [u8; 32],
    pub members: Vec<Member>,
}

impl EraHolders {
    pub fn places(&self) -> Vec<Place> {
        self.members
            .iter()
            .map(|m| Place {
                key: m.tx.owner,
                place: m.place,
            })
            .collect()
    }
}

/// Era `era`'s holders on the canonical chain: None for the bootstrap
/// era 0 and for an era whose first block the chain has not reached. A
/// farmer key banned for equivocation by a block below the era's first
/// holds nothing in it (a ban made later counts from the next era, so
/// that an era's holders stay what they were when it began), nor does a
/// holder that left a challenge since its registration unanswered in a
/// window closed below it, or did so before registering again within
/// the eviction's eras ([`challenge::failed`]).
pub fn era_holders(
    store: &Store,
    spec: &ChainSpec,
    era: u64,
) -> Result<Option<EraHolders>, StoreError> {
    let first_height = era_start(era, spec.era_blocks);
    if era == 0 {
        return Ok(None);
    }
    let Some(first_block) = store.canonical(first_height)? else {
        return Ok(None);
    };
    let chain_id = spec.chain_id();
    let mut salts: HashMap<u64, [u8; 32]> = HashMap::new();
    let mut members = Vec::new();
    for r in store.registered_below(first_height)? {
        if failed(store, spec, &r.owner, first_height, false)?.is_some() {
            continue;
        }
        if let Some(ban) = store.ban_of(&r.owner)? {
            let banned_at = store.info(&ban)?.map_or(0, |i| i.height);
            if banned_at < first_height {
                continue;
            }
        }
        let since_era = holders::effective_era(r.height, spec.era_blocks);
        let salt = match salts.get(&since_era) {
            Some(salt) => *salt,
            None => {
                let height = era_start(since_era, spec.era_blocks);
                let hash = store
                    .canonical(height)?
                    .ok_or_else(|| StoreError::MissingBlock(format!("canonical {height}")))?;
                let block = store
                    .block(&hash)?
                    .ok_or_else(|| StoreError::MissingBlock(hex::encode(hash)))?;
                let salt = era_salt(&chain_id, since_era, &block.header.stamp.output);
                salts.insert(since_era, salt);
                salt
            }
        };
        members.push(Member {
            place: place(&r.owner, &salt),
            tx: r.tx,
            height: r.height,
            since_era,
        });
    }
    Ok(Some(EraHolders {
        era,
        first_block,
        members,
    }))
}

/// The challenge `owner` left unanswered as the chain stands at
/// `first_height`, if any ([`challenge::failed`]): read from its holder
/// register writes and the challenges of the heights that can still
/// fail it (those since its registration in force, and the eviction's
/// eras before). With `current_only`, a failure of the registration in
/// force alone (an earlier one's eviction left out).
pub(crate) fn failed(
    store: &Store,
    spec: &ChainSpec,
    owner: &[u8; 32],
    first_height: u64,
    current_only: bool,
) -> Result<Option<challenge::Failure>, StoreError> {
    let mut writes = store.holder_writes(owner)?;
    let Some(current) = writes
        .iter()
        .rev()
        .find(|w| w.height < first_height)
        .cloned()
    else {
        return Ok(None);
    };
    if current_only {
        writes.retain(|w| w.height >= current.height);
    }
    let eviction =
        (challenge::EVICTION_ERAS + 1) * spec.era_blocks.max(1) + challenge::ANSWER_BLOCKS;
    let since = current.height.min(first_height.saturating_sub(eviction));
    let disputes = store.disputes_of(owner, since..first_height)?;
    // The accusers registered when they wrote their challenges, read
    // first: a store that fails is an error to try again, never a
    // holder set of this vault's own.
    let mut registered = std::collections::HashSet::new();
    for w in &disputes {
        if let Some(challenge::Dispute::Challenge { .. }) = challenge::dispute_of(&w.tx) {
            if store.registered_at(&w.tx.owner, w.height)? {
                registered.insert((w.tx.owner, w.height));
            }
        }
    }
    Ok(challenge::failed(
        owner,
        first_height,
        spec.era_blocks,
        &writes,
        &disputes,
        |key, height| registered.contains(&(*key, height)),
    ))
}

/// How often a vault not yet registered tries again, in slots: its
/// registration may have been lost with a branch, or its pool dropped it.
const REGISTER_RETRY_SLOTS: u64 = 16;

/// Follows the chain's holder eras until the vault stops, and registers
/// the vault (a task of its own, one at a time) while it is not a holder
/// and has plots.
pub async fn follow(shared: Arc<Shared>) {
    let mut heads = shared.chain.heads();
    let mut followed: Option<(u64, Option<[u8; 32]>)> = None;
    let retry = Duration::from_millis(
        (shared.chain.spec().slot_ms * REGISTER_RETRY_SLOTS).clamp(1000, 60_000),
    );
    let mut last_try: Option<Instant> = None;
    let registering = Arc::new(AtomicBool::new(false));
    loop {
        let height = heads.borrow_and_update().height;
        let spec = shared.chain.spec().clone();
        let era = era_at(height, spec.era_blocks);
        // One read a head; the holders are read again only when the era
        // or its first block changed.
        let first = match era {
            0 => None,
            _ => shared
                .store
                .canonical(era_start(era, spec.era_blocks))
                .ok()
                .flatten(),
        };
        if followed != Some((era, first)) && (era == 0 || first.is_some()) {
            let store = shared.store.clone();
            let read = shared
                .spawn_blocking(move || era_holders(&store, &spec, era))
                .await;
            match read {
                Ok(Ok(holders)) if holders.as_ref().map(|h| h.first_block) == first => {
                    let count = holders.as_ref().map(|h| h.members.len());
                    let places = holders.as_ref().map(EraHolders::places);
                    if shared.vaults.lock().unwrap().set_era(era, places) {
                        tracing::info!(era, holders = ?count, "holder era");
                    }
                    shared.metrics.holder_era.set(era as i64);
                    shared.metrics.holders.set(count.unwrap_or(0) as i64);
                    followed = Some((era, first));
                }
                // A reorg moved the era's first block meanwhile: the next
                // head reads again.
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!(%e, era, "the era's holders could not be read"),
                Err(e) => tracing::warn!(%e, "reading the era's holders failed"),
            }
        }
        let due = last_try.is_none_or(|t| t.elapsed() >= retry);
        if due && !registering.load(Ordering::Acquire) {
            last_try = Some(Instant::now());
            registering.store(true, Ordering::Release);
            let (task, flag) = (shared.clone(), registering.clone());
            shared.spawn(async move {
                let check = task.clone();
                let done = task
                    .spawn_blocking(move || registered(&check))
                    .await
                    .unwrap_or(true);
                if !done {
                    register(&task).await;
                }
                flag.store(false, Ordering::Release);
            });
        }
        tokio::select! {
            changed = heads.changed() => if changed.is_err() { return },
            _ = shared.shutdown.cancelled() => return,
        }
    }
}

/// Whether the canonical chain holds this vault's registration, not
/// since voided by a challenge it left unanswered (or a vault without
/// plots, which cannot register, counts as done).
fn registered(shared: &Shared) -> bool {
    if shared.farmer.plots().is_empty() {
        return true;
    }
    let own = shared.key.public();
    match shared.store.register(&own, HOLDER_REGISTER) {
        Ok(Some(entry)) if !entry.value.is_empty() => {}
        Ok(_) => return false,
        // Tried again with the next head.
        Err(_) => return true,
    }
    let head = shared.chain.height();
    match failed(&shared.store, shared.chain.spec(), &own, head + 1, true) {
        Ok(Some(failure)) => {
            tracing::warn!(
                accuser = %hex::encode(failure.accuser),
                "a challenge to this vault went unanswered: it left the holders, and registers again"
            );
            false
        }
        // Not failed since registering (an earlier registration's
        // eviction lapses on its own), or unreadable until the next head.
        Ok(None) | Err(_) => true,
    }
}

/// Writes this vault's registration with the first nonce whose challenge
/// its plots answer under the threshold, and gossips it.
async fn register(shared: &Arc<Shared>) {
    let own = shared.key.public();
    let spec = shared.chain.spec();
    let chain_id = shared.chain.chain_id();
    let store = shared.store.clone();
    let version = shared
        .spawn_blocking(move || store.register_version(&own, HOLDER_REGISTER))
        .await;
    let Ok(Ok(version)) = version else {
        return;
    };
    let version = version + 1;
    let target = registration_target(spec);
    for nonce in 0..MAX_REGISTRATION_NONCES {
        let challenge = registration_challenge(&chain_id, &own, version, nonce);
        let Some(found) = shared.farmer.best(challenge).await else {
            return;
        };
        if !target.admits(&found.rank) {
            continue;
        }
        let value = Registration {
            nonce,
            proof: found.proof,
        }
        .encode();
        let tx = RegisterTx::signed(&shared.key, &chain_id, HOLDER_REGISTER, version, &value);
        match shared.pool_and_gossip(tx).await {
            Ok(_) => tracing::info!(version, nonce, "registered as a data holder"),
            Err(why) => tracing::debug!(%why, "the holder registration was not pooled"),
        }
        return;
    }
    tracing::warn!(
        tries = MAX_REGISTRATION_NONCES,
        "no plot answered a holder registration's challenge under the threshold"
    );
}
