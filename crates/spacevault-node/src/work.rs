//! What the vault does with what its peers send: gossip checked and
//! imported, requests answered, on the blocking workers of a
//! [`Processor`] whose queues bound what waits.

use crate::blocks::{hold_for_slot, hold_window_ms, import, origin_of};
use crate::budget::BLOCKS_MIN_ANSWER;
use crate::data;
use crate::engine::Imported;
use crate::processor::{Processor, Queue, Shed};
use crate::shared::{verdict, Gossiped, Internal, Shared};
use crate::sync::spawn_sync;
use spacevault_chain::validate::check_tx;
use spacevault_chain::{Block, Equivocation, RegisterTx, Rejection};
use spacevault_meter as meter;
use spacevault_network::{self as net, Request, Response, Topic, Verdict};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// What waits for a worker.
pub(crate) enum Work {
    Gossip {
        id: net::MessageId,
        source: net::Peer,
        topic: Topic,
        data: Vec<u8>,
    },
    Request {
        peer: net::Peer,
        request: Request,
        reply: net::Reply,
    },
}

/// The queues, in the order workers take them, and what each holds at
/// most (docs/PROTOCOL.md lists them): blocks first, as they move the
/// chain; the proof of time's slot outputs, one at a time and in order
/// (each is checked from the one before); then answers to peers that sync
/// from this vault (their status, blocks and slots); proofs, which the
/// election waits for; copies of blobs other vaults fetch, which a
/// client's GET waits for; transactions, announcements and evidence of
/// equivocation last. Blocks are worked one at a time, in order: a
/// block's parent comes first. Transactions need no order (the pool takes
/// versions up to 64 ahead), and their signatures are checked outside the
/// engine's lock, so two workers check them side by side.
pub const QUEUES: [Queue; 7] = [
    Queue {
        name: "blocks",
        capacity: 64,
        serial: true,
    },
    Queue {
        name: "time",
        capacity: 64,
        serial: true,
    },
    Queue {
        name: "chain_requests",
        capacity: 32,
        serial: false,
    },
    Queue {
        name: "fetches",
        capacity: 256,
        serial: false,
    },
    Queue {
        name: "txs",
        capacity: 4096,
        serial: false,
    },
    Queue {
        name: "announcements",
        capacity: 1024,
        serial: false,
    },
    Queue {
        name: "evidence",
        capacity: 64,
        serial: false,
    },
];

/// Workers a vault runs at most: most work takes the engine's lock, so
/// more would wait on each other; two let a blob's read or a request's
/// answer go on beside a block's import.
pub const MAX_WORKERS: usize = 2;

/// The queue `work` waits in; `None` for a Store request, which has its
/// own budget per peer and writes on a blocking thread of its own.
fn queue_of(work: &Work) -> Option<usize> {
    let name = match work {
        Work::Gossip { topic, .. } => match topic {
            Topic::Blocks => "blocks",
            Topic::Txs => "txs",
            Topic::Vaults => "announcements",
            Topic::Time => "time",
            Topic::Evidence => "evidence",
        },
        Work::Request { request, .. } => match request {
            Request::Status
            | Request::Blocks { .. }
            | Request::Locate { .. }
            | Request::Slots { .. } => "chain_requests",
            // An audit reads a blob as a fetch does.
            Request::Fetch { .. } | Request::Audit { .. } => "fetches",
            Request::Store { .. } => return None,
        },
    };
    QUEUES.iter().position(|q| q.name == name)
}

/// The vault's processor: its workers check and import gossip and answer
/// requests; what a full queue sheds is ignored (gossip) or refused as
/// busy (requests), and counted.
pub(crate) fn processor(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
) -> Processor<Work> {
    let worker_shared = shared.clone();
    let internal = internal.clone();
    let shed_shared = shared.clone();
    Processor::new(
        QUEUES.to_vec(),
        MAX_WORKERS,
        shared.tasks.clone(),
        move |_, work| {
            let shared = &worker_shared;
            meter::with(&shared.meter, || match work {
                Work::Gossip {
                    id,
                    source,
                    topic,
                    data,
                } => {
                    let gossip = Gossiped { id, source };
                    if let Some(v) = on_gossip(shared, &internal, &gossip, topic, &data) {
                        shared.net.validate(gossip.id, source, v);
                    }
                    // A block may move the head; transactions and
                    // announcements do not, and under load would wake its
                    // waiters hundreds of times a second.
                    if topic == Topic::Blocks {
                        shared.chain.note_changed();
                    }
                }
                Work::Request {
                    peer,
                    request,
                    reply,
                } => on_request(shared, peer, request, reply),
            })
        },
        move |queue, work, why| {
            let shared = &shed_shared;
            let why = match why {
                Shed::Full => "full",
                Shed::Closed => "closed",
            };
            shared.metrics.work_shed(QUEUES[queue].name, why);
            match work {
                // This vault's own trouble: no judgement of the message.
                Work::Gossip { id, source, .. } => shared.net.validate(id, source, Verdict::Ignore),
                Work::Request { peer, reply, .. } => {
                    let busy = match why {
                        "full" => format!("busy: the {} queue is full", QUEUES[queue].name),
                        _ => "busy: the vault is stopping".to_string(),
                    };
                    answer(shared, peer, reply, Response::Refused(busy))
                }
            }
        },
    )
}

/// Queues what a peer sent, or does it at once when it is small.
pub(crate) fn submit(shared: &Arc<Shared>, processor: &Processor<Work>, work: Work) {
    match queue_of(&work) {
        Some(queue) => processor.submit(queue, work),
        None => {
            if let Work::Request {
                peer,
                request,
                reply,
            } = work
            {
                on_request(shared, peer, request, reply)
            }
        }
    }
}

/// Checks a gossiped message; its verdict, or none when it is reported
/// later (a block held for its slot).
pub(crate) fn on_gossip(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    gossip: &Gossiped,
    topic: Topic,
    data: &[u8],
) -> Option<Verdict> {
    let source = gossip.source;
    let outcome = match topic {
        Topic::Blocks => on_block(shared, internal, gossip, data),
        Topic::Txs => on_tx(shared, data).map(Some),
        Topic::Evidence => on_evidence(shared, data).map(Some),
        Topic::Time => return Some(crate::slots::on_slot(shared, source, data)),
        Topic::Vaults => match data::on_announce(shared, data) {
            Ok(()) => Ok(Some(Verdict::Accept)),
            // A clock ahead of this one's, the announcer's or a relayer's,
            // is no fault of the peer that relayed it: counted, ignored.
            Err(r @ Rejection::Future { .. }) => {
                shared.metrics.refused(topic.name(), &r);
                return Some(Verdict::Ignore);
            }
            Err(r) => Err(r),
        },
    };
    outcome.unwrap_or_else(|r| {
        shared.metrics.refused(topic.name(), &r);
        Some(verdict(&r))
    })
}

/// A gossiped block: imported, relayed only if it makes the head.
fn on_block(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    gossip: &Gossiped,
    data: &[u8],
) -> Result<Option<Verdict>, Rejection> {
    let source = gossip.source;
    let limits = spacevault_chain::types::Limits::of(shared.chain.spec());
    let block = Block::decode(data, &limits).map_err(|e| Rejection::Malformed(e.to_string()))?;
    match import(shared, block, true, origin_of(&source)) {
        Ok(Imported::NewHead { .. }) => Ok(Some(Verdict::Accept)),
        // Kept but not followed: it loses here to a chain this vault has,
        // and relaying it would only spread a block that loses wherever
        // that chain has reached (Bitcoin Core relays only blocks that
        // become its tip, for the same reason). Where it wins, its new
        // head relays it. Under load, every vault whose block came late
        // made one, and every vault relayed every one of them to every
        // other.
        Ok(Imported::Kept) | Ok(Imported::Duplicate) => Ok(Some(Verdict::Ignore)),
        Ok(Imported::Orphan) => {
            spawn_sync(shared, internal, Some(source));
            Ok(Some(Verdict::Ignore))
        }
        // Made in a slot this vault's line has not reached: the slot's
        // output is on its way (or its producer's clock runs a little
        // ahead of this one), which is no fault of the relayer's.
        Err(Rejection::UnknownSlot(_)) => hold(shared, data, gossip),
        Err(Rejection::Future { due_ms, now_ms })
            if due_ms <= now_ms + hold_window_ms(shared.chain.spec()) =>
        {
            hold(shared, data, gossip)
        }
        Err(r) => Err(r),
    }
}

/// Holds a gossiped block until its slot comes ([`hold_for_slot`]), its
/// verdict reported then (none now), unless what can be checked of it
/// already fails or it cannot be held.
fn hold(
    shared: &Arc<Shared>,
    data: &[u8],
    gossip: &Gossiped,
) -> Result<Option<Verdict>, Rejection> {
    let limits = spacevault_chain::types::Limits::of(shared.chain.spec());
    let block = Block::decode(data, &limits).map_err(|e| Rejection::Malformed(e.to_string()))?;
    let held = hold_for_slot(
        shared,
        block,
        origin_of(&gossip.source),
        Some(gossip.clone()),
    )?;
    Ok((!held).then_some(Verdict::Ignore))
}

/// A gossiped transaction: its signature checked before the engine's lock
/// (the pool's own checks are quick), then pooled.
fn on_tx(shared: &Arc<Shared>, data: &[u8]) -> Result<Verdict, Rejection> {
    let limits = spacevault_chain::types::Limits::of(shared.chain.spec());
    let tx = RegisterTx::decode(data, &limits).map_err(|e| Rejection::Malformed(e.to_string()))?;
    let chain = &shared.chain;
    check_tx(chain.spec(), &chain.chain_id(), &tx, chain.sig_cache())?;
    let added = chain.add_checked_tx(tx)?;
    Ok(if added {
        Verdict::Accept
    } else {
        Verdict::Ignore
    })
}

/// Gossiped evidence of equivocation: checked, kept for a block, and
/// relayed when it is news here.
fn on_evidence(shared: &Arc<Shared>, data: &[u8]) -> Result<Verdict, Rejection> {
    let e = Equivocation::decode(data).map_err(|e| Rejection::Malformed(e.to_string()))?;
    spacevault_chain::validate::check_equivocation(
        &shared.chain.chain_id(),
        &e,
        shared.chain.sig_cache(),
    )?;
    if shared.chain.add_checked_evidence(e)? {
        shared.metrics.evidence_kept.inc();
        return Ok(Verdict::Accept);
    }
    Ok(Verdict::Ignore)
}

pub(crate) fn on_request(
    shared: &Arc<Shared>,
    peer: net::Peer,
    request: Request,
    reply: net::Reply,
) {
    let response = match request {
        Request::Status => {
            // The head the store last committed: a peer asks for what it
            // can then be sent.
            let head = shared.chain.stored_head();
            Response::Status {
                height: head.height,
                head: head.hash,
            }
        }
        // From the store, without the engine's lock: an import under way
        // does not hold up a peer's sync.
        Request::Blocks { from, max } => blocks_answer(shared, peer, |max_bytes| {
            let max = max.min(net::wire::MAX_BLOCKS_PER_REQUEST);
            shared.store.canonical_blocks(from, max, max_bytes)
        }),
        Request::Locate { locator, max } => blocks_answer(shared, peer, |max_bytes| {
            let max = max.min(net::wire::MAX_BLOCKS_PER_REQUEST);
            shared.store.canonical_after(&locator, max, max_bytes)
        }),
        Request::Store { blob } => {
            let task = shared.clone();
            shared.spawn(async move {
                let shared = task;
                let response = data::store_request(&shared, peer, blob).await;
                answer(&shared, peer, reply, response);
            });
            return;
        }
        Request::Fetch { address } => data::fetch_request(shared, &address),
        Request::Audit { address, chunk } => data::audit_request(shared, peer, &address, chunk),
        // Charged to the same allowance as blocks: a peer that asks for
        // slots again and again gets no more than one that asks for blocks.
        Request::Slots { line, from, max } => budgeted_answer(
            shared,
            peer,
            |max_bytes| crate::slots::slots_for(shared, &line, from, max, max_bytes),
            Response::Slots,
        ),
    };
    answer(shared, peer, reply, response);
}

/// An answer of blocks to `peer`, of at most what its allowance holds
/// ([`crate::budget`]): `read` gets the most bytes the answer may hold
/// (leaving room in the message for its kind and count); what it did not
/// use goes back to the allowance. A peer with less than
/// [`BLOCKS_MIN_ANSWER`] left is refused as `over_budget`.
fn blocks_answer(
    shared: &Shared,
    peer: net::Peer,
    read: impl FnOnce(usize) -> Result<Vec<Vec<u8>>, spacevault_store::StoreError>,
) -> Response {
    budgeted_answer(shared, peer, read, Response::Blocks)
}

/// [`blocks_answer`] for any answer of encoded items (blocks, slots),
/// wrapped by `wrap`.
fn budgeted_answer(
    shared: &Shared,
    peer: net::Peer,
    read: impl FnOnce(usize) -> Result<Vec<Vec<u8>>, spacevault_store::StoreError>,
    wrap: fn(Vec<Vec<u8>>) -> Response,
) -> Response {
    let most = (net::wire::MAX_MESSAGE_BYTES - 64) as u64;
    let granted = {
        let mut budgets = shared.blocks_budgets.lock().unwrap();
        budgets.take_up_to(&peer, most, Instant::now())
    };
    let refund = |unused: u64| {
        let mut budgets = shared.blocks_budgets.lock().unwrap();
        budgets.refund(&peer, unused, Instant::now());
    };
    if granted < BLOCKS_MIN_ANSWER {
        refund(granted);
        return Response::Refused("over_budget".into());
    }
    let blocks = read(granted as usize).unwrap_or_default();
    let used: u64 = blocks.iter().map(|b| b.len() as u64 + 4).sum();
    if used > granted {
        // An answer holds one block at least, whatever its size.
        let mut budgets = shared.blocks_budgets.lock().unwrap();
        budgets.take_up_to(&peer, used - granted, Instant::now());
    } else {
        refund(granted - used);
    }
    wrap(blocks)
}

fn answer(shared: &Shared, peer: net::Peer, reply: net::Reply, response: Response) {
    if let Response::Refused(why) = &response {
        shared.metrics.rejected("requests", why);
        tracing::debug!(%peer, %why, "refused a request");
    }
    shared.net.respond(reply, response);
}
