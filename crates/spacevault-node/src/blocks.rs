//! Blocks in and out: farming each slot and producing this vault's own
//! block when its proof is eligible, importing one (and the orphans that
//! waited for it), and holding one whose slot this vault has not reached.

use crate::chain::Step;
use crate::engine::{on_head, Adoption, Imported, OnHead, Origin};
use crate::farmer::Found;
use crate::shared::{verdict, Gossiped, Shared};
use spacevault_chain::time::MissingSlot;
use spacevault_chain::{validate, Block, ChainSpec, Rejection, Stamp};
use spacevault_meter::Op;
use spacevault_network::{self as net, Topic};
use spacevault_store::StoreError;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Slots a starting vault lets pass before it builds on a head this many
/// slots old: a head that old has likely missed blocks its peers have, and
/// a branch on it would only lose to theirs.
const STALE_HEAD_SLOTS: u64 = 3;

/// Looks up the best proof of this vault's plots for `slot`'s challenge,
/// and produces a block if it is eligible on the head. Only the line's
/// newest slot is farmed, and none while the line catches up from a peer
/// or the chain syncs from a peer well ahead ([`crate::behind`]): a block
/// in a slot the network has passed, or on a head it passed, would come
/// late to every vault. A line behind the clock is not that: when the
/// timekeepers run slower than the slots' length (a loaded machine,
/// squarings set too many), every vault's line lags alike, and the chain
/// goes on at their pace.
pub(crate) fn farm(shared: &Arc<Shared>, slot: u64, started_slot: u64) {
    let catching_up = shared.catching_up_slots.load(Ordering::Acquire);
    if shared.farmer.plots().is_empty() || catching_up || shared.time.slot() != slot {
        return;
    }
    // Signed in an earlier run, whose store this one may not have: no
    // lookup for a block the record would keep back.
    if slot <= shared.signed.last() {
        return;
    }
    if slot < started_slot + STALE_HEAD_SLOTS && shared.chain.head().slot + STALE_HEAD_SLOTS < slot
    {
        return;
    }
    // Syncing from a peer well ahead: a block on this head would come
    // late to every vault, and lose.
    let slot_ms = shared.chain.spec().slot_ms;
    if shared
        .behind
        .far_behind(shared.chain.height(), crate::now_ms(), slot_ms)
    {
        return;
    }
    let task = shared.clone();
    shared.spawn(async move {
        let shared = task;
        let kept = shared.blocking(move |s| s.time.output(slot)).await;
        let Some(Ok(Some(out))) = kept else {
            return;
        };
        let stamp = Stamp {
            slot,
            output: out.output,
        };
        let challenge = stamp.challenge(&shared.chain.chain_id());
        let Some(looked) = shared.farmer.lookup(challenge).await else {
            return;
        };
        shared
            .metrics
            .lookup_seconds
            .observe(looked.took.as_secs_f64());
        // A hash a plot's answer, made inside its lookup on blocking
        // threads: counted here, timed in the lookup. The winner's
        // verification, when there is one, is counted after eligibility.
        shared.meter.add(Op::HashLookup, looked.answers() as u64);
        // The whole proof (fourteen more reads of a table-chain plot) is
        // read only when the best score could make a block.
        if on_head(&shared.chain.head(), slot, looked.best()) == OnHead::No {
            return;
        }
        let (found, verified) = shared.farmer.proof(looked).await;
        shared.meter.add(Op::HashProof, verified as u64);
        let Some(found) = found else {
            return;
        };
        shared.blocking(move |s| produce(s, stamp, found)).await;
    });
}

/// Produces a block in `stamp`'s slot from `found` if it is eligible on the
/// head (asked under the lock the block is made under), imports it and
/// gossips it.
pub(crate) fn produce(shared: &Arc<Shared>, stamp: Stamp, found: Found) {
    let Found { proof, rank, .. } = found;
    let Some(block) = shared.chain.produce(&shared.key, stamp, proof, &rank) else {
        return;
    };
    // Recorded, durably, before the block can leave: a second block of
    // this key for this slot would ban the key for good.
    match shared.signed.claim(stamp.slot) {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::error!(%e, slot = stamp.slot, "the signed slot could not be recorded: block withheld");
            return;
        }
    }
    shared.metrics.blocks_produced.inc();
    tracing::info!(
        height = block.header.height,
        slot = stamp.slot,
        txs = block.txs.len(),
        "produced a block"
    );
    let bytes = block.encode();
    // A vault's own block passes its own checks; one that does not (a
    // clock far off) is logged and not sent.
    match import(shared, block, false, Origin::LOCAL) {
        Ok(_) => shared.net.publish(Topic::Blocks, bytes),
        Err(why) => tracing::error!(%why, "this vault's own block was refused"),
    }
}

/// Imports a block and the orphans that waited for it; returns the first
/// block's outcome. `gossiped`: the first came by gossip, and is refused
/// if a better sibling is canonical ([`Engine::import_gossiped`]).
///
/// [`Engine::import_gossiped`]: crate::engine::Engine::import_gossiped
pub(crate) fn import(
    shared: &Arc<Shared>,
    block: Block,
    gossiped: bool,
    origin: Origin,
) -> Result<Imported, Rejection> {
    check_signatures_ahead(shared, &block, origin)?;
    let (slot, block_height, txs) = (
        block.header.stamp.slot,
        block.header.height,
        block.txs.len(),
    );
    let mut adoption = Adoption::new(block, gossiped, origin);
    let mut first = None;
    while let Some(Step {
        outcome,
        height,
        caught,
        ..
    }) = shared.chain.import_step(&mut adoption, crate::now_ms())
    {
        for e in caught {
            shared.metrics.equivocations_caught.inc();
            shared.metrics.evidence_kept.inc();
            shared.net.publish(Topic::Evidence, e.encode());
        }
        match &outcome {
            Ok(Imported::NewHead { left }) => {
                shared.metrics.blocks_accepted.inc();
                if *left > 0 {
                    shared.metrics.reorgs.inc();
                    shared.metrics.reorg_depth.observe(*left as f64);
                }
                shared.metrics.height.set(height as i64);
            }
            Ok(Imported::Kept) => {
                shared.metrics.blocks_accepted.inc();
            }
            _ => {}
        }
        if first.is_none() {
            // How long after its slot's due time a block got here: the
            // propagation a network's load adds, read from the logs (and
            // computed only when they are on).
            tracing::debug!(
                height = block_height,
                head = height,
                slot,
                txs,
                late_ms = crate::now_ms() as i64 - shared.chain.spec().slot_due_ms(slot) as i64,
                outcome = ?outcome,
                "imported a block"
            );
        }
        first.get_or_insert(outcome);
    }
    for orphan in std::mem::take(&mut adoption.waiting_for_slot) {
        // Held as a gossiped block would be; its sender is not known here.
        let _ = hold_for_slot(shared, orphan, Origin::LOCAL, None);
    }
    first.expect("one block at least")
}

/// A peer's new block has its signatures verified before the engine's
/// lock is taken, into the signature cache, where the checks under the
/// lock find them: verifying a thousand transactions holds up no other
/// import, API write or production. Without a cache (a vault that counts
/// every verification it makes), they are verified once, under the lock.
fn check_signatures_ahead(shared: &Shared, block: &Block, origin: Origin) -> Result<(), Rejection> {
    let chain = &shared.chain;
    let Some(cache) = chain.sig_cache() else {
        return Ok(());
    };
    if origin == Origin::LOCAL || chain.store().info(&block.hash()).is_ok_and(|i| i.is_some()) {
        return Ok(());
    }
    validate::check_signatures(chain.spec(), &chain.chain_id(), block, cache)
}

/// How long a block may wait for its slot past the slot's due time: the
/// slot's output comes by gossip, or by a catch-up from a peer, within a
/// slot or two; later than that, the block is dropped and a sync brings it
/// back if its chain wins.
pub fn hold_window_ms(spec: &ChainSpec) -> u64 {
    2 * spec.slot_ms + validate::CLOCK_ALLOWANCE_MS
}

/// Imports `block` once this vault's line of slots reaches its slot (within
/// [`hold_window_ms`] of the slot's due time). A block made in a slot whose
/// output this vault has not checked yet is no fault of its sender: the
/// slot's output and the block travel the network by different paths.
/// What can be checked without the slot is checked first (the orphan's
/// checks: its size, transaction root, proof's range and signature), so
/// that what waits is a block its producer signed; a fault found then is
/// the sender's.
///
/// A gossiped block's verdict is reported once it is imported: accepted
/// (gossip relays it) if it then makes the head, as a block that came in
/// its slot would be; gossip keeps the message meanwhile, and a block
/// published again would be a duplicate to it. Returns whether the block
/// is held (a full hold is not).
pub(crate) fn hold_for_slot(
    shared: &Arc<Shared>,
    block: Block,
    origin: Origin,
    gossip: Option<Gossiped>,
) -> Result<bool, Rejection> {
    let chain = &shared.chain;
    let now = crate::now_ms();
    let hold_until = now + hold_window_ms(chain.spec());
    validate::check_orphan(
        chain.spec(),
        &chain.chain_id(),
        &block,
        hold_until,
        chain.sig_cache(),
    )?;
    let hash = block.hash();
    if let Err(why) = shared.held.lock().unwrap().take(hash, origin) {
        let full = Rejection::Unable {
            what: "early_full",
            why: format!("not held: {why}"),
        };
        shared.metrics.refused(Topic::Blocks.name(), &full);
        return Ok(false);
    }
    shared.metrics.blocks_held_early.inc();
    // A gossiped block is refused if a better sibling is canonical, as one
    // that came in its slot would be; an orphan handed back was asked for.
    let gossiped = gossip.is_some();
    let task = shared.clone();
    let source = gossip.as_ref().map(|g| g.source);
    shared.spawn(async move {
        let shared = task;
        let slot = block.header.stamp.slot;
        let spec = shared.chain.spec();
        let until = spec.slot_due_ms(slot) + hold_window_ms(spec);
        let wait = Duration::from_millis(until.saturating_sub(crate::now_ms()));
        let held = block.clone();
        let reached = tokio::time::timeout(wait, slot_reached(&shared, held, source))
            .await
            .unwrap_or(None);
        let verdict = if reached == Some(Ok(())) {
            let imported = shared
                .blocking(move |s| import(s, block, gossiped, origin))
                .await;
            match imported {
                Some(Ok(Imported::NewHead { .. })) => net::Verdict::Accept,
                Some(Ok(_)) | None => net::Verdict::Ignore,
                Some(Err(r)) => {
                    shared.metrics.refused(Topic::Blocks.name(), &r);
                    verdict(&r)
                }
            }
        } else {
            // Its slot did not come in time, or its branch's line could
            // not be had: not its sender's fault (a sync brings the block
            // again with its line).
            shared
                .metrics
                .rejected(Topic::Blocks.name(), "unknown_slot");
            net::Verdict::Ignore
        };
        if let Some(g) = gossip {
            shared.net.validate(g.id, g.source, verdict);
        }
        shared.held.lock().unwrap().give_back(&hash, origin);
    });
    Ok(true)
}

/// Waits until the slot `block` is checked on is kept here: the line
/// followed reaches it, or (a block of a branch this vault does not
/// follow) the branch's line is fetched from `source`. Ok when it is kept
/// (or the block's parent is not, which import tells), the missing slot
/// when it cannot come, None when this vault could not tell.
async fn slot_reached(
    shared: &Arc<Shared>,
    block: Block,
    source: Option<net::Peer>,
) -> Option<Result<(), MissingSlot>> {
    let mut slots = shared.time.slots();
    let block = Arc::new(block);
    loop {
        let asked = block.clone();
        let found = shared
            .blocking(move |s| {
                let missing = crate::engine::missing_slot(&s.store, s.chain.spec(), &asked)?;
                Ok::<_, StoreError>((missing, s.time.wanted()?.0))
            })
            .await?;
        let (missing, followed) = found.ok()?;
        let missing = match missing {
            None | Some(Ok(())) => return Some(Ok(())),
            Some(Err(missing)) => missing,
        };
        match source {
            Some(peer) if missing.line != followed => {
                if !crate::slots::fetch_line(shared, peer, missing).await {
                    return Some(Err(missing));
                }
            }
            _ => {
                if slots.changed().await.is_err() {
                    return None;
                }
            }
        }
    }
}

/// The sender of a block, as the orphan pool counts senders.
pub(crate) fn origin_of(peer: &net::Peer) -> Origin {
    Origin(*blake3::hash(&peer.to_bytes()).as_bytes())
}
