//! Blocks in and out: importing one (and the orphans that waited for it),
//! holding one that came a little early, and producing this vault's own.

use crate::engine::{Adoption, Imported, Origin};
use crate::shared::Shared;
use spacevault_chain::{validate, Block, ChainSpec, Rejection};
use spacevault_network::{self as net, Topic};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Produces the next block (or contests the last), imports it and gossips
/// it.
pub(crate) fn produce(shared: &Arc<Shared>, contest: bool) {
    produce_if(shared, contest, |_| true)
}

/// [`produce`], if `due` holds of the engine: asked under the same lock
/// the block is made under, so that nothing a worker takes in between goes
/// unseen.
pub(crate) fn produce_if(
    shared: &Arc<Shared>,
    contest: bool,
    due: impl FnOnce(&crate::engine::Engine) -> bool,
) {
    let (block, block_delay_ms) = {
        let mut engine = shared.engine();
        if !due(&engine) {
            return;
        }
        let block = engine.produce(&shared.key, crate::now_ms(), contest);
        (block, engine.block_delay_ms())
    };
    let Some(block) = block else { return };
    shared.metrics.proofs_won.inc();
    tracing::info!(
        height = block.header.height,
        txs = block.txs.len(),
        contest,
        block_delay_ms = block_delay_ms.round(),
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
/// if a better sibling is canonical ([`Engine::import_gossiped`]). The
/// engine is held for one block at a time: a long line of orphans does
/// not keep the API and the other tasks waiting.
pub(crate) fn import(
    shared: &Arc<Shared>,
    block: Block,
    gossiped: bool,
    origin: Origin,
) -> Result<Imported, Rejection> {
    check_signatures_ahead(shared, &block, origin)?;
    let mut adoption = Adoption::new(block, gossiped, origin);
    let mut first = None;
    loop {
        let now = crate::now_ms();
        let (step, height) = {
            let mut engine = shared.engine();
            let step = engine.import_next(&mut adoption, now);
            let height = engine.head().height;
            // Under the lock: imports run on several threads, and the
            // watch must never go back to an older head.
            if matches!(step, Some((_, Ok(Imported::NewHead { .. })))) {
                shared.head.send_replace(height);
            }
            (step, height)
        };
        let Some((hash, outcome)) = step else { break };
        match &outcome {
            Ok(Imported::NewHead { left }) => {
                shared.metrics.blocks_accepted.inc();
                if *left > 0 {
                    shared.metrics.reorgs.inc();
                    shared.metrics.reorg_depth.observe(*left as f64);
                    shared
                        .deepest_reorg
                        .fetch_max(*left as u64, Ordering::Relaxed);
                }
                shared.metrics.height.set(height as i64);
            }
            Ok(Imported::Kept) => {
                shared.metrics.blocks_accepted.inc();
            }
            _ => {}
        }
        if matches!(outcome, Ok(Imported::NewHead { .. }) | Ok(Imported::Kept)) {
            shared.arrivals.lock().unwrap().note(hash, now);
        }
        first.get_or_insert(outcome);
    }
    if shared.engine().should_contest(crate::now_ms()) {
        produce(shared, true);
    }
    first.expect("one block at least")
}

/// A peer's new block has its signatures verified before the engine's
/// lock is taken, into the signature cache, where the checks under the
/// lock find them: verifying a thousand transactions holds up no other
/// import, API write or production. Without a cache (a vault that counts
/// every verification it makes), they are verified once, under the lock.
fn check_signatures_ahead(shared: &Shared, block: &Block, origin: Origin) -> Result<(), Rejection> {
    let Some(cache) = shared.sig_cache.as_deref() else {
        return Ok(());
    };
    if origin == Origin::LOCAL || shared.store.info(&block.hash()).is_ok_and(|i| i.is_some()) {
        return Ok(());
    }
    validate::check_signatures(&shared.spec, &shared.chain_id, block, cache)
}

/// Blocks held until their time, at most: past it, an early block is
/// ignored (its producer sends it again, or a sync brings it).
pub const MAX_EARLY_BLOCKS: usize = 64;

/// How far past the clock's allowance a block may be dated and still wait
/// for its time (two slots); later than that, it is refused as `future`.
pub fn hold_window_ms(spec: &ChainSpec) -> u64 {
    2 * spec.slot_ms
}

/// Imports `block` at `due_ms` (Unix ms), when it is no longer early, and
/// relays it if it then makes the head.
pub(crate) fn hold_early(shared: &Arc<Shared>, block: Block, origin: Origin, due_ms: u64) {
    if shared.early_blocks.fetch_add(1, Ordering::Relaxed) >= MAX_EARLY_BLOCKS {
        shared.early_blocks.fetch_sub(1, Ordering::Relaxed);
        let full = Rejection::Unable {
            what: "early_full",
            why: format!("{MAX_EARLY_BLOCKS} early blocks wait already"),
        };
        shared.metrics.refused(Topic::Blocks.name(), &full);
        return;
    }
    shared.metrics.blocks_held_early.inc();
    let task = shared.clone();
    shared.spawn(async move {
        let shared = task;
        let wait = due_ms.saturating_sub(crate::now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let bytes = block.encode();
        let imported = shared
            .blocking(move |s| import(s, block, true, origin))
            .await;
        match imported {
            Some(Ok(Imported::NewHead { .. })) => shared.net.publish(Topic::Blocks, bytes),
            Some(Ok(_)) | None => {}
            Some(Err(r)) => shared.metrics.refused(Topic::Blocks.name(), &r),
        }
        shared.early_blocks.fetch_sub(1, Ordering::Relaxed);
    });
}

/// The sender of a block, as the orphan pool counts senders.
pub(crate) fn origin_of(peer: &net::Peer) -> Origin {
    Origin(*blake3::hash(&peer.to_bytes()).as_bytes())
}
