//! Catching up with other vaults: a vault that meets a peer ahead, an
//! orphan, a proof for a later height, or a head that has not moved for
//! three slots asks a peer for its canonical blocks and imports them. A
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

/// Catches up from `peer` (or from any peer), one sync at a time.
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
        let peers = match peer {
            Some(p) => vec![p],
            None => shared.net.peers().await,
        };
        for peer in peers {
            if !may_sync(&shared, &peer) {
                continue;
            }
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

/// Fetches `peer`'s canonical blocks above this vault's head and imports
/// them. A peer on another branch is followed back until the branches
/// meet. Returns whether any block was new.
///
/// A sync ends whatever the peer answers: blocks at other heights than
/// asked, nothing, or branches that do not attach. Going back is the only
/// way a request repeats heights, and it must reach lower each time unless
/// a new block came in between: a batch that does not attach at or above
/// the lowest that did not, with nothing new since, ends the sync (a peer
/// could otherwise answer our own blocks below a height and an orphan at
/// it, forever). [`MAX_SYNC_REQUESTS`] bounds the rest.
async fn sync_from(shared: &Arc<Shared>, peer: net::Peer) -> Synced {
    // A request that fails (a timeout, a busy peer, this vault's own full
    // queue) says nothing sure of the peer: no judgement.
    let Ok(Response::Status { height, head }) = shared.net.request(peer, Request::Status).await
    else {
        return Synced::NotAhead;
    };
    let Some(own) = shared.with_engine(|e| e.head()).await else {
        return Synced::NotAhead;
    };
    if height < own.height || (height == own.height && head == own.hash) {
        return Synced::NotAhead;
    }
    match catch_up(shared, peer, height, head, own).await {
        Some(true) => Synced::Progress,
        // A request failed: no judgement either.
        None => Synced::NotAhead,
        // A peer as high on another branch may hold only blocks this
        // vault has: no fault of its. Nor is it when the blocks came by
        // gossip meanwhile, and the answer held only what was here.
        Some(false) if height == own.height => Synced::NotAhead,
        Some(false) => match shared.with_engine(|e| e.head().height).await {
            Some(now) if now >= height => Synced::NotAhead,
            _ => Synced::Nothing,
        },
    }
}

/// The blocks of a peer at `height` with head `head`, from this vault's
/// head `own` on; returns whether any block was new, or none when a
/// request failed before any was.
async fn catch_up(
    shared: &Arc<Shared>,
    peer: net::Peer,
    height: u64,
    head: [u8; 32],
    own: spacevault_chain::validate::Parent,
) -> Option<bool> {
    let mut progressed = false;
    let mut last_new = Instant::now();
    // A peer as high as this vault on another branch is synced too, from
    // this vault's height back: two branches that grow a block a slot
    // each would otherwise never meet, and fork choice must see both.
    let mut from = match height.cmp(&own.height) {
        std::cmp::Ordering::Less => return Some(false),
        std::cmp::Ordering::Equal if head == own.hash => return Some(false),
        std::cmp::Ordering::Equal => own.height.max(1),
        std::cmp::Ordering::Greater => own.height + 1,
    };
    // How far below `from` the next request goes when a batch does not
    // attach.
    let mut back = 0u64;
    // The lowest height a batch that did not attach began at, since the
    // last new block.
    let mut lowest_unattached = u64::MAX;
    let origin = origin_of(&peer);
    for _ in 0..MAX_SYNC_REQUESTS {
        let request = Request::Blocks {
            from,
            max: net::wire::MAX_BLOCKS_PER_REQUEST,
        };
        let Ok(Response::Blocks(blocks)) = shared.net.request(peer, request).await else {
            return progressed.then_some(true);
        };
        if blocks.is_empty() {
            return Some(progressed);
        }
        let batch = shared
            .blocking(move |s| import_batch(s, blocks, from, origin))
            .await;
        let Some(Batch {
            new,
            orphaned,
            next,
            refused,
        }) = batch
        else {
            return progressed.then_some(true);
        };
        if let Some(reason) = refused {
            progressed |= new;
            match reason {
                Ok(reason) => shared.metrics.rejected("sync", reason),
                Err(r) => shared.metrics.refused("sync", &r),
            }
            return Some(progressed);
        }
        progressed |= new;
        if new {
            lowest_unattached = u64::MAX;
            last_new = Instant::now();
        } else if last_new.elapsed() > SYNC_STALL {
            shared.metrics.rejected("sync", "stalled");
            return Some(progressed);
        }
        if orphaned && !new {
            // The peer's branch left ours further down: go back, twice as
            // far each time, to height 1 at the most.
            if from == 1 || from >= lowest_unattached {
                shared.metrics.rejected("sync", "does_not_attach");
                return Some(progressed);
            }
            lowest_unattached = from;
            back = back.saturating_mul(2).max(16);
            from = from.saturating_sub(back).max(1);
        } else if shared.with_engine(|e| e.head().height).await >= Some(height) {
            return Some(progressed);
        } else {
            // On from the end of this batch: what it held is here now,
            // new or not.
            from = next;
        }
    }
    shared.metrics.rejected("sync", "too_many_requests");
    Some(progressed)
}

/// Requests one sync makes at most: a chain a million blocks ahead, a
/// batch at a time, with room to go back.
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
}

/// Decodes and imports one batch of `peer`'s answer, on a blocking thread
/// (metered by [`Shared::blocking`]): each block's signature and proof are
/// checked, and the store written.
fn import_batch(shared: &Arc<Shared>, blocks: Vec<Vec<u8>>, from: u64, origin: Origin) -> Batch {
    let limits = spacevault_chain::types::Limits::of(&shared.spec);
    let mut batch = Batch {
        new: false,
        orphaned: false,
        next: from,
        refused: None,
    };
    for bytes in blocks {
        let Ok(block) = Block::decode(&bytes, &limits) else {
            batch.refused = Some(Ok("malformed"));
            return batch;
        };
        if block.header.height != batch.next {
            batch.refused = Some(Ok("wrong_height"));
            return batch;
        }
        batch.next += 1;
        match import(shared, block, false, origin) {
            Ok(Imported::NewHead { .. }) | Ok(Imported::Kept) => batch.new = true,
            Ok(Imported::Orphan) => batch.orphaned = true,
            Ok(Imported::Duplicate) => {}
            Err(r) => {
                batch.refused = Some(Err(r));
                return batch;
            }
        }
    }
    batch
}
