//! Catching up with other vaults: a vault that meets a peer ahead, an
//! orphan, a proof for a later height, or a head that has not moved for
//! three slots asks a peer for its canonical blocks and imports them.

use crate::engine::Imported;
use crate::node::{import, Internal, Shared};
use spacevault_chain::meter;
use spacevault_chain::Block;
use spacevault_network::{self as net, Request, Response};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Catches up from `peer` (or from any peer), one sync at a time.
pub(crate) fn spawn_sync(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    peer: Option<net::Peer>,
) {
    if shared.syncing.swap(true, Ordering::AcqRel) {
        return;
    }
    let shared = shared.clone();
    let internal = internal.clone();
    tokio::spawn(async move {
        let peers = match peer {
            Some(p) => vec![p],
            None => shared.net.peers().await,
        };
        for peer in peers {
            if sync_from(&shared, peer).await {
                let _ = internal.send(Internal::Synced);
                break;
            }
        }
        shared.syncing.store(false, Ordering::Release);
    });
}

/// Fetches `peer`'s canonical blocks above this vault's head and imports
/// them. A peer on another branch is followed back until the branches
/// meet. Returns whether any block was new.
async fn sync_from(shared: &Arc<Shared>, peer: net::Peer) -> bool {
    let Ok(Response::Status { height, head }) = shared.net.request(peer, Request::Status).await
    else {
        return false;
    };
    let mut progressed = false;
    let own = shared.engine().head();
    // A peer as high as this vault on another branch is synced too, from
    // this vault's height back: two branches that grow a block a slot
    // each would otherwise never meet, and fork choice must see both.
    let mut back = match height.cmp(&own.height) {
        std::cmp::Ordering::Less => return false,
        std::cmp::Ordering::Equal if head == own.hash => return false,
        std::cmp::Ordering::Equal => 1,
        std::cmp::Ordering::Greater => 0,
    };
    loop {
        let ours = shared.engine().head().height;
        if height <= ours && back == 0 {
            return progressed;
        }
        let from = (ours + 1).saturating_sub(back).max(1);
        let request = Request::Blocks {
            from,
            max: net::wire::MAX_BLOCKS_PER_REQUEST,
        };
        let Ok(Response::Blocks(blocks)) = shared.net.request(peer, request).await else {
            return progressed;
        };
        if blocks.is_empty() {
            return progressed;
        }
        let limits = shared.engine().limits();
        let mut orphaned = false;
        for bytes in blocks {
            let Ok(block) = Block::decode(&bytes, &limits) else {
                shared.metrics.rejected("sync", "malformed");
                return progressed;
            };
            match meter::with(&shared.meter, || import(shared, block, false)) {
                Ok(Imported::NewHead { .. }) | Ok(Imported::Kept) => progressed = true,
                Ok(Imported::Orphan) => orphaned = true,
                Ok(Imported::Duplicate) => {}
                Err(r) => {
                    shared.metrics.rejected("sync", r.name());
                    return progressed;
                }
            }
        }
        // The peer's branch left ours below our head: go further back.
        back = if orphaned {
            (back * 2).max(16)
        } else if shared.engine().head().height >= height {
            return progressed;
        } else {
            0
        };
        if back > ours {
            back = ours;
            if from == 1 {
                return progressed;
            }
        }
    }
}
