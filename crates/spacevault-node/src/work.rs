//! What the vault does with what its peers send: gossip checked and
//! imported, requests answered.

use crate::blocks::{hold_early, hold_window_ms, import, origin_of};
use crate::data;
use crate::engine::Imported;
use crate::shared::{Internal, Shared};
use crate::sync::spawn_sync;
use spacevault_chain::{Block, ProofMsg, RegisterTx, Rejection};
use spacevault_network::{self as net, Request, Response, Topic, Verdict};
use std::sync::Arc;
use tokio::sync::mpsc;

fn verdict(r: &Rejection) -> Verdict {
    if r.is_fault() {
        Verdict::Reject
    } else {
        Verdict::Ignore
    }
}

pub(crate) fn on_gossip(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    source: net::Peer,
    topic: Topic,
    data: &[u8],
) -> Verdict {
    let limits = shared.engine().limits();
    let refuse = |r: Rejection| {
        shared.metrics.refused(topic.name(), &r);
        verdict(&r)
    };
    match topic {
        Topic::Blocks => {
            let block = match Block::decode(data, &limits) {
                Ok(b) => b,
                Err(e) => return refuse(Rejection::Malformed(e.to_string())),
            };
            match import(shared, block, true, origin_of(&source)) {
                Ok(Imported::NewHead { .. }) => Verdict::Accept,
                // Kept but not followed: it loses here to a chain this
                // vault has, and relaying it would only spread a block
                // that loses wherever that chain has reached (Bitcoin Core
                // relays only blocks that become its tip, for the same
                // reason). Where it wins, its new head relays it. Under
                // load, every vault whose block came late made one, and
                // every vault relayed every one of them to every other.
                Ok(Imported::Kept) => Verdict::Ignore,
                Ok(Imported::Duplicate) => Verdict::Ignore,
                Ok(Imported::Orphan) => {
                    spawn_sync(shared, internal, Some(source));
                    Verdict::Ignore
                }
                Err(Rejection::Future { got, now })
                    if got <= now + hold_window_ms(&shared.spec) =>
                {
                    // A little early: its producer's clock runs ahead of
                    // this one, which is no fault of the relayer's.
                    let Ok(block) = Block::decode(data, &limits) else {
                        return Verdict::Ignore;
                    };
                    let due =
                        got.saturating_sub(spacevault_chain::validate::max_drift_ms(&shared.spec));
                    hold_early(shared, block, origin_of(&source), due);
                    Verdict::Ignore
                }
                Err(r) => refuse(r),
            }
        }
        Topic::Proofs => {
            let msg = match ProofMsg::decode(data) {
                Ok(m) => m,
                Err(e) => return refuse(Rejection::Malformed(e.to_string())),
            };
            let offered = shared.engine().offer_proof(&msg);
            match offered {
                Ok(()) => Verdict::Accept,
                Err(r @ Rejection::FutureHeight(_)) => {
                    spawn_sync(shared, internal, Some(source));
                    refuse(r)
                }
                Err(r) => refuse(r),
            }
        }
        Topic::Txs => {
            let tx = match RegisterTx::decode(data, &limits) {
                Ok(t) => t,
                Err(e) => return refuse(Rejection::Malformed(e.to_string())),
            };
            let added = shared.engine().add_tx(tx);
            match added {
                Ok(true) => Verdict::Accept,
                Ok(false) => Verdict::Ignore,
                Err(r) => refuse(r),
            }
        }
        Topic::Vaults => match data::on_announce(shared, data) {
            Ok(()) => Verdict::Accept,
            // A clock ahead of this one's, the announcer's or a relayer's,
            // is no fault of the peer that relayed it: counted, ignored.
            Err(r @ Rejection::Future { .. }) => {
                refuse(r);
                Verdict::Ignore
            }
            Err(r) => refuse(r),
        },
    }
}

pub(crate) fn on_request(
    shared: &Arc<Shared>,
    peer: net::Peer,
    request: Request,
    reply: net::Reply,
) {
    let response = match request {
        Request::Status => {
            let head = shared.engine().head();
            Response::Status {
                height: head.height,
                head: head.hash,
            }
        }
        Request::Blocks { from, max } => {
            let max = max.min(net::wire::MAX_BLOCKS_PER_REQUEST);
            // Room in the message for its kind and count.
            let max_bytes = net::wire::MAX_MESSAGE_BYTES - 64;
            Response::Blocks(shared.engine().blocks_from(from, max, max_bytes))
        }
        Request::Store { blob } => {
            let shared = shared.clone();
            tokio::spawn(async move {
                let response = data::store_request(&shared, peer, blob).await;
                answer(&shared, peer, reply, response);
            });
            return;
        }
        Request::Fetch { address } => data::fetch_request(shared, &address),
    };
    answer(shared, peer, reply, response);
}

fn answer(shared: &Shared, peer: net::Peer, reply: net::Reply, response: Response) {
    if let Response::Refused(why) = &response {
        shared.metrics.rejected("requests", why);
        tracing::debug!(%peer, %why, "refused a request");
    }
    shared.net.respond(reply, response);
}
