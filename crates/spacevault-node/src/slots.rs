//! The proof of time on the network: slot outputs gossiped and checked,
//! asked of a peer when this vault has fallen behind, answered from the
//! store, and computed by a vault started as a timekeeper.

use crate::shared::Shared;
use crate::time::{OfferError, Offered};
use spacevault_chain::time::SlotOutput;
use spacevault_network::{self as net, Request, Response, Topic, Verdict};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A gossiped slot output: relayed once checked here; one for a slot past
/// the next makes this vault ask its sender for the slots between.
pub(crate) fn on_slot(shared: &Arc<Shared>, source: net::Peer, data: &[u8]) -> Verdict {
    let Ok(out) = SlotOutput::decode(data) else {
        shared.metrics.rejected(Topic::Time.name(), "malformed");
        return Verdict::Reject;
    };
    match offer(shared, &out) {
        Ok(Offered::Advanced) => Verdict::Accept,
        Ok(Offered::Ahead) => {
            spawn_catch_up(shared, source);
            Verdict::Ignore
        }
        Ok(Offered::Known | Offered::Early) => Verdict::Ignore,
        Err(OfferError::Wrong(_)) => Verdict::Reject,
        Err(OfferError::Store(_)) => Verdict::Ignore,
    }
}

/// Offers `out` to the line, counting what came of it.
fn offer(shared: &Shared, out: &SlotOutput) -> Result<Offered, OfferError> {
    let started = std::time::Instant::now();
    let offered = shared.time.offer(out, crate::now_ms());
    let topic = Topic::Time.name();
    match &offered {
        Ok(Offered::Advanced) => {
            shared
                .metrics
                .slot_check_seconds
                .observe(started.elapsed().as_secs_f64());
            shared.metrics.slot.set(out.slot as i64);
        }
        Ok(Offered::Early) => shared.metrics.rejected(topic, "early"),
        Ok(_) => {}
        Err(OfferError::Wrong(_)) => shared.metrics.rejected(topic, "not_proved"),
        Err(OfferError::Store(e)) => {
            tracing::error!(%e, "a checked slot could not be kept");
            shared.metrics.rejected(topic, "unable");
        }
    }
    offered
}

/// The slots a peer asks for, from the store.
pub(crate) fn slots_answer(shared: &Shared, from: u64, max: u32) -> Response {
    let max = max.min(net::wire::MAX_SLOTS_PER_REQUEST);
    match shared.store.slots_from(from, max) {
        Ok(slots) => Response::Slots(slots),
        Err(e) => Response::Refused(format!("unable: {e}")),
    }
}

/// Asks `peer` for the slots after this vault's last, a batch at a time,
/// checking each, until it has no more: one catch-up at a time.
pub(crate) fn spawn_catch_up(shared: &Arc<Shared>, peer: net::Peer) {
    if shared.catching_up_slots.swap(true, Ordering::AcqRel) {
        return;
    }
    let task = shared.clone();
    shared.spawn(async move {
        let shared = task;
        catch_up(&shared, peer).await;
        shared.catching_up_slots.store(false, Ordering::Release);
    });
}

async fn catch_up(shared: &Arc<Shared>, peer: net::Peer) {
    loop {
        let request = Request::Slots {
            from: shared.time.slot() + 1,
            max: net::wire::MAX_SLOTS_PER_REQUEST,
        };
        let Ok(Response::Slots(slots)) = shared.net.request(peer, request).await else {
            return;
        };
        if slots.is_empty() {
            return;
        }
        let checked = shared
            .blocking(move |s| {
                for bytes in slots {
                    let Ok(out) = SlotOutput::decode(&bytes) else {
                        s.metrics.rejected("sync_time", "malformed");
                        return false;
                    };
                    match offer(s, &out) {
                        Ok(Offered::Advanced | Offered::Known) => {}
                        // Out of order, early or wrong: no more from it.
                        Ok(_) | Err(_) => return false,
                    }
                }
                true
            })
            .await;
        if checked != Some(true) {
            return;
        }
    }
}

/// A timekeeper's loop: computes the next slot from the line as it stands
/// (on a blocking thread: the slot's squarings, then its proof), waits
/// for the slot's due time, takes its own output and gossips it. Another
/// timekeeper's output for the same slot may come first: the outputs of a
/// slot are the same whoever computes them, and the line has moved on.
pub(crate) async fn keep_time(shared: Arc<Shared>) {
    tracing::info!(
        slot = shared.time.slot(),
        iterations = shared.chain.spec().pot_iterations,
        "keeping time"
    );
    loop {
        let line = shared.time.next_line();
        let Some(out) = shared.blocking(move |_| line.prove_next()).await else {
            return;
        };
        let wait = shared.time.due_ms(out.slot).saturating_sub(crate::now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let offered = {
            let out = out.clone();
            shared.blocking(move |s| offer(s, &out)).await
        };
        match offered {
            Some(Ok(Offered::Advanced)) => {
                shared.metrics.slots_kept.inc();
                shared.net.publish(Topic::Time, out.encode());
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::error!(%e, slot = out.slot, "this timekeeper's own slot was refused");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            None => return,
        }
    }
}
