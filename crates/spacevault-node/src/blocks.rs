//! Blocks in and out: importing one (and the orphans that waited for it),
//! holding one that came a little early, and producing this vault's own.

use crate::chain::{Due, Step};
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

/// [`produce`], if `due` holds of the chain: asked under the same lock
/// the block is made under ([`Chain::produce_if`]).
pub(crate) fn produce_if(shared: &Arc<Shared>, contest: bool, due: impl FnOnce(&Due) -> bool) {
    let produced = shared
        .chain
        .produce_if(&shared.key, crate::now_ms(), contest, due);
    let Some((block, block_delay_ms)) = produced else {
        return;
    };
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
    let mut adoption = Adoption::new(block, gossiped, origin);
    let mut first = None;
    while let Some(Step {
        outcome, height, ..
    }) = shared.chain.import_step(&mut adoption, crate::now_ms())
    {
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
        first.get_or_insert(outcome);
    }
    if shared.chain.should_contest(crate::now_ms()) {
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
    let chain = &shared.chain;
    let Some(cache) = chain.sig_cache() else {
        return Ok(());
    };
    if origin == Origin::LOCAL || chain.store().info(&block.hash()).is_ok_and(|i| i.is_some()) {
        return Ok(());
    }
    validate::check_signatures(chain.spec(), &chain.chain_id(), block, cache)
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
