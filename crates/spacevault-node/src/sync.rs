//! Catching up with other vaults: a vault that meets a peer ahead, an
//! orphan, a proof for a later height, or a head that has stood still for
//! four block intervals asks a peer for its canonical blocks after where
//! their chains meet (found by a block locator) and imports them. A
//! peer that said it was ahead and brought nothing cools down before it is
//! asked again ([`crate::sync_peers`]).

use crate::blocks::{import, origin_of};
use crate::engine::{Imported, Origin};
use crate::shared::{Internal, Shared};
use spacevault_chain::{Block, Rejection};
use spacevault_network::{self as net, Request, Response};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What a sync from one peer came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Synced {
    /// Something new was imported.
    Progress,
    /// The peer said it was ahead (or did not answer), and nothing new came.
    Nothing,
    /// The peer was not ahead: nothing to judge.
    NotAhead,
}

/// How long a sync goes on without a new block before it ends: a peer
/// that answers each request just before its timeout, with nothing new,
/// holds the vault's one sync no longer.
pub(crate) const SYNC_STALL: Duration = Duration::from_secs(30);

/// Block intervals a head stands still before the vault asks its peers
/// ([`stall_after`]).
pub(crate) const STALL_INTERVALS: u64 = 4;

/// Peers a sync for a head that stood still asks at most, drawn at
/// random: a block this vault missed has reached most of its peers, and
/// the next stall draws others.
pub(crate) const STALL_SYNC_PEERS: usize = 3;

/// How long a head may stand still before the vault asks its peers for
/// what it missed: [`STALL_INTERVALS`] of the spec's block intervals.
/// Blocks come at random, one every `block_interval_slots` slots on
/// average, so a vault that missed nothing sees its head stand still that
/// long in about one stretch of that length in 55 to 256 ((1 − 1/i)^(4i)
/// for intervals of i = 2 slots and up), and never longer than
/// [`SYNC_STALL`] (unless three slots are: the spec allows 1,000-slot
/// intervals, and a vault off the gossip mesh catches up only this way).
/// The three slots this was before passed without a block one time in
/// eight at a block every two slots, and every vault then asked every one
/// of its peers for its status: in a network of 64 under load, up to
/// hundreds of requests a second, and 22% fewer PUTs than before blocks
/// came by threshold (BENCHMARKS.md).
pub(crate) fn stall_after(spec: &spacevault_chain::ChainSpec) -> Duration {
    let slots = STALL_INTERVALS * spec.block_interval_slots;
    let wait = Duration::from_millis(spec.slot_ms.saturating_mul(slots));
    let longest = SYNC_STALL.max(Duration::from_millis(spec.slot_ms.saturating_mul(3)));
    wait.min(longest)
}

/// Up to `n` of `peers`, from a random place on: no peer is always first
/// (the clock stands in should the system's randomness fail).
fn some_of(mut peers: Vec<net::Peer>, n: usize) -> Vec<net::Peer> {
    if peers.len() > n {
        let mut r = crate::now_ms().to_le_bytes();
        let _ = getrandom::fill(&mut r);
        let at = (u64::from_le_bytes(r) % peers.len() as u64) as usize;
        peers.rotate_left(at);
        peers.truncate(n);
    }
    peers
}

/// Catches up from `peer` (or from a few peers at random), one sync at a
/// time.
pub(crate) fn spawn_sync(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    peer: Option<net::Peer>,
) {
    let may_sync = |shared: &Shared, p: &net::Peer| {
        let peers = shared.sync_peers.lock().unwrap();
        peers.may_sync(p, Instant::now())
    };
    if peer.is_some_and(|p| !may_sync(shared, &p)) {
        return;
    }
    if shared.syncing.swap(true, Ordering::AcqRel) {
        return;
    }
    let task = shared.clone();
    let internal = internal.clone();
    shared.spawn(async move {
        let shared = task;
        // Each peer was found free to sync from before the sync began, and
        // only this sync (the vault's one) makes a peer cool down.
        let peers = match peer {
            Some(p) => vec![p],
            None => {
                let mut ready = shared.net.peers().await;
                ready.retain(|p| may_sync(&shared, p));
                some_of(ready, STALL_SYNC_PEERS)
            }
        };
        for peer in peers {
            match sync_from(&shared, peer).await {
                Synced::Progress => {
                    shared.sync_peers.lock().unwrap().productive(&peer);
                    let _ = internal.send(Internal::Synced);
                    break;
                }
                Synced::Nothing => {
                    let wait = shared
                        .sync_peers
                        .lock()
                        .unwrap()
                        .unproductive(&peer, Instant::now());
                    shared.metrics.rejected("sync", "no_progress");
                    tracing::debug!(%peer, ?wait, "a sync brought nothing: the peer cools down");
                }
                Synced::NotAhead => {}
            }
        }
        shared.syncing.store(false, Ordering::Release);
    });
}

/// Fetches `peer`'s canonical blocks this vault lacks and imports them:
/// first those after where the two chains meet (a [`Request::Locate`] with
/// this vault's locator), then on from the end of each batch. Returns
/// whether any block was new.
///
/// A sync ends whatever the peer answers: blocks at other heights than
/// asked, nothing, or branches that do not attach. An answer to a locate
/// attaches unless the peer ignored the locator: one that does not, with
/// nothing new, ends the sync. A later batch that does not attach means
/// the peer's chain moved meanwhile: the sync locates again, up to
/// [`MAX_LOCATES`] times without a new block. [`MAX_SYNC_REQUESTS`] and
/// [`SYNC_STALL`] bound the rest.
async fn sync_from(shared: &Arc<Shared>, peer: net::Peer) -> Synced {
    // A request that fails (a timeout, a busy peer, this vault's own full
    // queue) says nothing sure of the peer: no judgement.
    let Ok(Response::Status { height, head }) = shared.net.request(peer, Request::Status).await
    else {
        return Synced::NotAhead;
    };
    let own = shared.chain.head();
    // A peer as high as this vault on another branch is synced too: two
    // branches that grow a block a slot each would otherwise never meet,
    // and fork choice must see both.
    if height < own.height || (height == own.height && head == own.hash) {
        return Synced::NotAhead;
    }
    shared.behind.begin(height, crate::now_ms());
    let caught_up = catch_up(shared, peer, height).await;
    shared.behind.end();
    match caught_up {
        Some(true) => Synced::Progress,
        // A request failed: no judgement either.
        None => Synced::NotAhead,
        // A peer as high on another branch may hold only blocks this
        // vault has: no fault of its. Nor is it when the blocks came by
        // gossip meanwhile, and the answer held only what was here.
        Some(false) if height == own.height => Synced::NotAhead,
        Some(false) if shared.chain.height() >= height => Synced::NotAhead,
        Some(false) => Synced::Nothing,
    }
}

/// Locates a sync makes in a row without a new block.
pub(crate) const MAX_LOCATES: u32 = 4;

/// The blocks of a peer whose chain is at `height`; returns whether any
/// block was new, or none when a request failed before any was.
async fn catch_up(shared: &Arc<Shared>, peer: net::Peer, height: u64) -> Option<bool> {
    let mut progressed = false;
    let mut last_new = Instant::now();
    // The height to ask from next; none: locate.
    let mut from: Option<u64> = None;
    let mut locates = 0u32;
    let origin = origin_of(&peer);
    let max = net::wire::MAX_BLOCKS_PER_REQUEST;
    shared.metrics.syncs.inc();
    for _ in 0..MAX_SYNC_REQUESTS {
        let request = match from {
            Some(from) => Request::Blocks { from, max },
            None => {
                locates += 1;
                let store = shared.store.clone();
                let locator = shared.spawn_blocking(move || store.locator()).await;
                let Ok(Ok(locator)) = locator else {
                    return progressed.then_some(true);
                };
                Request::Locate { locator, max }
            }
        };
        shared.metrics.sync_requests.inc();
        let Ok(Response::Blocks(blocks)) = shared.net.request(peer, request).await else {
            return progressed.then_some(true);
        };
        if blocks.is_empty() {
            return Some(progressed);
        }
        let batch = import_fetching_lines(shared, peer, blocks, from, origin).await;
        let Some(Batch {
            new,
            orphaned,
            next,
            refused,
            ..
        }) = batch
        else {
            return progressed.then_some(true);
        };
        progressed |= new;
        if let Some(Err(Rejection::UnknownSlot(_))) = refused {
            shared.metrics.rejected("sync", "line_not_had");
            return Some(progressed);
        }
        if let Some(reason) = refused {
            match reason {
                Ok(reason) => shared.metrics.rejected("sync", reason),
                Err(r) => {
                    if let Rejection::BelowFinality { ancestor, .. } = r {
                        // Its chain is longer; whether it is heavier, only
                        // the branch would tell, and finality refuses to
                        // walk it. Either side may be the wrong one.
                        tracing::warn!(
                            %peer,
                            peer_height = height,
                            branches_from = ancestor,
                            "a peer's longer chain branches from below this vault's final \
                             blocks and is refused; if this vault was away longer than the \
                             finality depth, its own chain may be the wrong one: restart it \
                             with --checkpoint HEIGHT:HASH from a source you trust"
                        );
                    }
                    shared.metrics.refused("sync", &r)
                }
            }
            return Some(progressed);
        }
        if new {
            locates = 0;
            last_new = Instant::now();
        } else if last_new.elapsed() > SYNC_STALL {
            shared.metrics.rejected("sync", "stalled");
            return Some(progressed);
        }
        if orphaned && !new {
            if from.is_none() || locates >= MAX_LOCATES {
                shared.metrics.rejected("sync", "does_not_attach");
                return Some(progressed);
            }
            from = None;
        } else if shared.chain.height() >= height {
            return Some(progressed);
        } else {
            // On from the end of this batch: what it held is here now,
            // new or not.
            from = Some(next);
        }
    }
    shared.metrics.rejected("sync", "too_many_requests");
    Some(progressed)
}

/// Requests one sync makes at most: a chain a million blocks ahead, a
/// batch at a time, with room to locate again.
pub(crate) const MAX_SYNC_REQUESTS: usize = 4096 + 64;

/// What importing one batch of a sync answer came to.
struct Batch {
    /// A block was new here.
    new: bool,
    /// A block did not attach.
    orphaned: bool,
    /// The height after the batch's last block.
    next: u64,
    /// Why the batch ended the sync: a block that does not decode or sits
    /// at another height than asked (a reason), or one the chain refused.
    refused: Option<Result<&'static str, Rejection>>,
    /// The refused block and those after it, when it waits for its line's
    /// slots.
    rest: Vec<Vec<u8>>,
}

/// Fetches of lines one batch may make: each keeps slots, so a batch
/// whose blocks cross a few eras of another branch's lines needs a few.
const MAX_LINE_FETCHES_PER_BATCH: usize = 64;

/// Imports a batch of `peer`'s blocks ([`import_batch`]); a block on a
/// line of slots this vault lacks (its branch's, or the line it follows
/// past where its slots reach) makes it fetch that line from `peer`, the
/// peer that sent the block, and go on with the rest of the batch from
/// that block, without asking for the blocks again.
async fn import_fetching_lines(
    shared: &Arc<Shared>,
    peer: net::Peer,
    blocks: Vec<Vec<u8>>,
    from: Option<u64>,
    origin: Origin,
) -> Option<Batch> {
    let mut batch = shared
        .blocking(move |s| import_batch(s, blocks, from, origin))
        .await?;
    for _ in 0..MAX_LINE_FETCHES_PER_BATCH {
        if batch.new {
            shared.behind.progressed(crate::now_ms());
        }
        let Some(Err(Rejection::UnknownSlot(missing))) = batch.refused else {
            return Some(batch);
        };
        if !crate::slots::fetch_line(shared, peer, missing).await {
            return Some(batch);
        }
        let (rest, at) = (std::mem::take(&mut batch.rest), batch.next - 1);
        let again = shared
            .blocking(move |s| import_batch(s, rest, Some(at), origin))
            .await?;
        batch = Batch {
            new: batch.new || again.new,
            orphaned: batch.orphaned || again.orphaned,
            ..again
        };
    }
    Some(batch)
}

/// Decodes and imports one batch of `peer`'s answer, on a blocking thread
/// (metered by [`Shared::blocking`]): each block's signature and proof are
/// checked, and the store written. The blocks must be at consecutive
/// heights, from `from` when the request named it.
fn import_batch(
    shared: &Arc<Shared>,
    blocks: Vec<Vec<u8>>,
    from: Option<u64>,
    origin: Origin,
) -> Batch {
    let limits = spacevault_chain::types::Limits::of(shared.chain.spec());
    let mut batch = Batch {
        new: false,
        orphaned: false,
        next: from.unwrap_or(0),
        refused: None,
        rest: Vec::new(),
    };
    let mut blocks = blocks.into_iter().enumerate();
    while let Some((i, bytes)) = blocks.next() {
        let Ok(block) = Block::decode(&bytes, &limits) else {
            batch.refused = Some(Ok("malformed"));
            return batch;
        };
        if i == 0 && from.is_none() {
            batch.next = block.header.height;
        }
        if block.header.height != batch.next || batch.next == 0 {
            batch.refused = Some(Ok("wrong_height"));
            return batch;
        }
        batch.next += 1;
        match import(shared, block, false, origin) {
            Ok(Imported::NewHead { .. }) | Ok(Imported::Kept) => batch.new = true,
            Ok(Imported::Orphan) => batch.orphaned = true,
            Ok(Imported::Duplicate) => {}
            Err(r @ Rejection::UnknownSlot(_)) => {
                batch.rest = std::iter::once(bytes)
                    .chain(blocks.map(|(_, b)| b))
                    .collect();
                batch.refused = Some(Err(r));
                return batch;
            }
            Err(r) => {
                batch.refused = Some(Err(r));
                return batch;
            }
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_stands_still_four_block_intervals_before_peers_are_asked() {
        let mut spec = spacevault_chain::ChainSpec::new("t", 0, 1000);
        spec.block_interval_slots = 2;
        assert_eq!(stall_after(&spec), Duration::from_secs(8));
        spec.block_interval_slots = 1;
        spec.slot_ms = 250;
        assert_eq!(stall_after(&spec), Duration::from_secs(1));
        // Long intervals: never past SYNC_STALL, unless three slots are.
        spec.block_interval_slots = 1000;
        assert_eq!(stall_after(&spec), SYNC_STALL);
        spec.slot_ms = 60_000;
        assert_eq!(stall_after(&spec), Duration::from_secs(180));
    }

    #[test]
    fn a_stalled_sync_asks_a_few_distinct_peers_and_not_always_the_same() {
        let peers: Vec<net::Peer> = (0..20).map(|_| net::Peer::random()).collect();
        let mut firsts = std::collections::HashSet::new();
        for _ in 0..64 {
            let some = some_of(peers.clone(), STALL_SYNC_PEERS);
            assert_eq!(some.len(), STALL_SYNC_PEERS);
            let distinct: std::collections::HashSet<_> = some.iter().collect();
            assert_eq!(distinct.len(), STALL_SYNC_PEERS);
            assert!(some.iter().all(|p| peers.contains(p)));
            firsts.insert(some[0]);
        }
        // 64 draws among 20 places: one place every time would be a bug.
        assert!(firsts.len() > 1);
        // Fewer peers than asked: all of them.
        assert_eq!(some_of(peers[..2].to_vec(), STALL_SYNC_PEERS), peers[..2]);
    }
}
