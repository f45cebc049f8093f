//! The proof of time on the network: slot outputs gossiped and checked,
//! asked of a peer when this vault has fallen behind or needs another
//! branch's line to check its blocks, answered from the store, and
//! computed by a vault started as a timekeeper.

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
    let offered = offer(shared, &out);
    if matches!(offered, Ok(Offered::Advanced)) {
        // Heard as it was gossiped, new and checked: what its arrival says
        // of this vault's clock. An early output is not checked, so anyone
        // could send one: it says nothing.
        clock_heard(shared, out.slot);
    }
    match offered {
        Ok(Offered::Advanced) => Verdict::Accept,
        Ok(Offered::Ahead) => {
            spawn_catch_up(shared, source);
            Verdict::Ignore
        }
        // Another branch's line, or this branch's in an era this vault's
        // slots have not reached: when the slot is past the next one here,
        // its sender may have what this vault lacks.
        Ok(Offered::OtherLine) => {
            if out.slot > shared.time.slot() + 1 {
                spawn_catch_up(shared, source);
            }
            Verdict::Ignore
        }
        Ok(Offered::Known | Offered::Early) => Verdict::Ignore,
        Ok(Offered::Contradicts) | Err(OfferError::Wrong(_)) => Verdict::Reject,
        Err(OfferError::Store(_)) => Verdict::Ignore,
    }
}

/// Notes when slot `slot`'s output arrived, and tells the log when what
/// the arrivals say of this vault's clock changes.
fn clock_heard(shared: &Shared, slot: u64) {
    let slot_ms = shared.chain.spec().slot_ms;
    let changed = shared
        .clock
        .observe(shared.time.due_ms(slot), crate::now_ms(), slot_ms);
    let offset_ms = shared.clock.offset_ms();
    if let Some(offset) = offset_ms {
        shared.metrics.clock_offset_ms.set(offset);
    }
    match changed.map(|v| (v, v.warning(slot_ms))) {
        Some((_, Some(warning))) => tracing::warn!(offset_ms, "{warning}"),
        Some((crate::clock::Verdict::Agrees, None)) => {
            tracing::info!(offset_ms, "this vault's clock agrees with the slots")
        }
        _ => {}
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
        Ok(Offered::OtherLine) => shared.metrics.rejected(topic, "other_line"),
        Ok(Offered::Contradicts) => shared.metrics.rejected(topic, "contradicts"),
        Ok(_) => {}
        Err(OfferError::Wrong(_)) => shared.metrics.rejected(topic, "not_proved"),
        Err(OfferError::Store(e)) => {
            tracing::error!(%e, "a checked slot could not be kept");
            shared.metrics.rejected(topic, "unable");
        }
    }
    offered
}

/// The slots of line `line` a peer asks for, from the store: at most
/// `max` and [`MAX_SLOTS_PER_REQUEST`](net::wire::MAX_SLOTS_PER_REQUEST),
/// and as many as `max_bytes` holds (one at least).
pub(crate) fn slots_for(
    shared: &Shared,
    line: &[u8; 32],
    from: u64,
    max: u32,
    max_bytes: usize,
) -> Result<Vec<Vec<u8>>, spacevault_store::StoreError> {
    // Each is a SlotOutput and its 4-byte length in the answer.
    let fit = (max_bytes / (SLOT_OUTPUT_BYTES + 4)).max(1);
    let max = max
        .min(net::wire::MAX_SLOTS_PER_REQUEST)
        .min(u32::try_from(fit).unwrap_or(u32::MAX));
    shared.store.slots_on(line, from, max)
}

/// Bytes of an encoded SlotOutput: version, slot, line, output and proof.
const SLOT_OUTPUT_BYTES: usize = 2 + 8 + 32 + 2 * spacevault_chain::time::FORM_BYTES;

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

/// How long a peer may take to answer one request of a catch-up: a peer
/// that answers slowly ends the catch-up, and the next (a new peer, an
/// output ahead) may ask another.
const CATCH_UP_ANSWER: Duration = Duration::from_secs(5);

/// Asks for the slots after this vault's last on the line it follows
/// until an answer is empty or slow, or holds anything but the next slots
/// in order, each checked and new here: every answer that goes on advances
/// the line by all it holds (into the next era's line when it closes an
/// era), and the line cannot pass the clock, so a catch-up ends.
async fn catch_up(shared: &Arc<Shared>, peer: net::Peer) {
    loop {
        let Some(Ok((line, from))) = shared.blocking(|s| s.time.wanted()).await else {
            return;
        };
        let request = Request::Slots {
            line,
            from,
            max: net::wire::MAX_SLOTS_PER_REQUEST,
        };
        let answer = tokio::time::timeout(CATCH_UP_ANSWER, shared.net.request(peer, request));
        let Ok(Ok(Response::Slots(slots))) = answer.await else {
            return;
        };
        if slots.is_empty() {
            return;
        }
        let checked = shared
            .blocking(move |s| {
                let (outs, whole) = in_order(s, &line, from, slots);
                // Anything but the next slot, checked: no more from it.
                let advanced = outs
                    .iter()
                    .all(|out| matches!(offer(s, out), Ok(Offered::Advanced)));
                advanced && whole
            })
            .await;
        if checked != Some(true) {
            return;
        }
    }
}

/// The slots of an answer to a `Slots` request for line `line` from slot
/// `from`, decoded, up to the first that does not decode or is not the
/// next slot of that line (counted), and whether none was cut off.
fn in_order(
    shared: &Shared,
    line: &[u8; 32],
    from: u64,
    slots: Vec<Vec<u8>>,
) -> (Vec<SlotOutput>, bool) {
    let mut outs = Vec::with_capacity(slots.len());
    for (expected, bytes) in (from..).zip(slots) {
        let Ok(out) = SlotOutput::decode(&bytes) else {
            shared.metrics.rejected("sync_time", "malformed");
            return (outs, false);
        };
        if out.slot != expected || out.line != *line {
            shared.metrics.rejected("sync_time", "out_of_order");
            return (outs, false);
        }
        outs.push(out);
    }
    (outs, true)
}

/// A timekeeper's loop, on a thread of its own for the vault's life:
/// computes the next slot from the line as it stands (the slot's
/// squarings, then its proof), waits for the slot's due time, takes its
/// own output and gossips it. Another timekeeper's output for the same
/// slot may come first: the outputs of a slot are the same whoever
/// computes them, and the line has moved on.
///
/// Not a task of the runtime's with its steps on blocking threads: under
/// load, each return from a blocking thread waited its turn behind every
/// ready task of the runtime, 100 to 260 ms a step with 64 vaults and 40
/// clients in one process, and three steps a slot left a timekeeper of
/// 500 ms slots further behind every slot (77 s behind after 220 s). A
/// timekeeper is one core's sequential work: it gets a thread. The stop
/// waits for it: it looks for the stop every 50 ms while it waits for a
/// slot, and between slots (a slot's squarings are not interrupted).
///
/// A panic in it (a bug) would end the timekeeping, not the vault: it is
/// logged as an error, for the vault's other work goes on without it.
pub(crate) fn keep_time(shared: &Arc<Shared>) {
    let task = shared.clone();
    shared.spawn_blocking(move || {
        let kept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            spacevault_meter::with(&task.meter, || keep_time_on_this_thread(&task))
        }));
        if kept.is_err() {
            tracing::error!("the timekeeper stopped on a panic: this vault no longer keeps time");
        }
    });
}

/// How often a timekeeper waiting for a slot's due time looks whether its
/// vault is stopping.
const STOP_CHECK: Duration = Duration::from_millis(50);

fn keep_time_on_this_thread(shared: &Arc<Shared>) {
    tracing::info!(
        slot = shared.time.slot(),
        iterations = shared.chain.spec().pot_iterations,
        "keeping time"
    );
    let stopping = || shared.shutdown.is_cancelled();
    let pause = |d: Duration| {
        let until = std::time::Instant::now() + d;
        while !stopping() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(STOP_CHECK));
        }
    };
    while !stopping() {
        let line = match shared.time.next_line() {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(%e, "the store cannot say where the line of slots stands");
                pause(Duration::from_secs(1));
                continue;
            }
        };
        let out = line.prove_next();
        pause(Duration::from_millis(
            shared.time.due_ms(out.slot).saturating_sub(crate::now_ms()),
        ));
        if stopping() {
            return;
        }
        match offer(shared, &out) {
            Ok(Offered::Advanced) => {
                shared.metrics.slots_kept.inc();
                shared.net.publish(Topic::Time, out.encode());
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(%e, slot = out.slot, "this timekeeper's own slot was refused");
                pause(Duration::from_secs(1));
            }
        }
    }
}

/// Asks `peer` for the slots of a line this vault lacks up to
/// `missing.slot`, from the last it has of that line, checking each:
/// the line a block of a branch this vault does not follow (or has not
/// reached) is checked on. `missing.line` is a seed this vault derived from
/// the branch's blocks; what the peer sends must be that line's. Returns
/// whether the slot is kept now.
pub(crate) async fn fetch_line(
    shared: &Arc<Shared>,
    peer: net::Peer,
    missing: spacevault_chain::time::MissingSlot,
) -> bool {
    let era = shared.chain.spec().time().era_of(missing.slot);
    let deadline = tokio::time::Instant::now() + FETCH_LINE_LIMIT;
    let reached = |shared: &Arc<Shared>| {
        let shared = shared.clone();
        async move {
            let next = shared
                .blocking(move |s| s.time.next_on(&missing.line, era))
                .await;
            next.and_then(Result::ok)
        }
    };
    loop {
        let Some(from) = reached(shared).await else {
            return false;
        };
        if from > missing.slot {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        let request = Request::Slots {
            line: missing.line,
            from,
            max: net::wire::MAX_SLOTS_PER_REQUEST,
        };
        let answer = tokio::time::timeout(CATCH_UP_ANSWER, shared.net.request(peer, request));
        let Ok(Ok(Response::Slots(slots))) = answer.await else {
            return false;
        };
        let kept = shared
            .blocking(move |s| {
                let (outs, _) = in_order(s, &missing.line, from, slots);
                match s.time.keep_side(&missing.line, era, &outs, crate::now_ms()) {
                    Ok(kept) => kept,
                    Err(OfferError::Wrong(_)) => {
                        s.metrics.rejected("sync_time", "not_proved");
                        0
                    }
                    Err(OfferError::Store(e)) => {
                        tracing::error!(%e, "a checked slot could not be kept");
                        0
                    }
                }
            })
            .await;
        match kept.unwrap_or(0) {
            // Nothing new from this answer: another fetch of the same
            // line may have kept the slot meanwhile.
            0 => {
                return reached(shared)
                    .await
                    .is_some_and(|next| next > missing.slot)
            }
            n => shared.metrics.line_slots_fetched.inc_by(n as u64),
        };
    }
}

/// How long one fetch of a line may take in all: a peer that answers a
/// slot at a time, each just within [`CATCH_UP_ANSWER`], holds a block or a
/// sync no longer.
const FETCH_LINE_LIMIT: Duration = Duration::from_secs(30);
