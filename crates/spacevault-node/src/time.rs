//! The proof of time as one vault follows it: the line of slots
//! ([`spacevault_chain::time::Timeline`]) behind its lock, each slot's
//! output checked before it is kept in the store and the line moves on,
//! and the slot reached as a watch. A timekeeper computes the next slot
//! from a copy of the line, outside the lock, and offers it as any peer's
//! output is offered.
//!
//! Every era's entropy is the chain's genesis hash: each era's group
//! still differs (its seed holds the era before's last output), but no
//! block's hash is mixed in yet (docs/DESIGN.md says what that leaves
//! open).

use spacevault_chain::time::{SlotOutput, TimeError, Timeline};
use spacevault_chain::{genesis_hash, ChainSpec};
use spacevault_store::{Store, StoreError};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// How far ahead of this vault's clock a slot's output may come (a
/// timekeeper whose clock runs ahead, or this one's behind): past it, the
/// output is early and ignored, not its sender's fault. The allowance
/// blocks have too.
pub const SLOT_SKEW_MS: u64 = spacevault_chain::validate::CLOCK_ALLOWANCE_MS;

/// What became of a slot's output offered to the line.
#[derive(Debug, PartialEq, Eq)]
pub enum Offered {
    /// Checked, kept, and the line moved on to it.
    Advanced,
    /// A slot the line has passed already, the same output: nothing to do.
    Known,
    /// A slot the line has passed, with another output than the one kept:
    /// a slot has one output, so this one is wrong.
    Contradicts,
    /// A slot beyond the next: the slots between are missing here.
    Ahead,
    /// Due later than this vault's clock allows.
    Early,
}

/// Why an offered output was not taken.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// The sender's fault: the output or its proof is wrong.
    #[error(transparent)]
    Wrong(#[from] TimeError),
    /// This vault's own: its store failed.
    #[error("the store: {0}")]
    Store(#[from] StoreError),
}

/// The line of slots one vault follows.
pub struct Time {
    line: Mutex<Timeline>,
    store: Arc<Store>,
    spec: ChainSpec,
    entropy: [u8; 32],
    slot: watch::Sender<u64>,
}

impl Time {
    /// The line as the store left it: from its last slot, or the genesis.
    pub fn open(store: Arc<Store>, spec: &ChainSpec) -> Result<Time, OpenError> {
        let chain_id = spec.chain_id();
        let entropy = genesis_hash(&chain_id);
        spec.time().check()?;
        let line = match store.last_slot()? {
            None => Timeline::new(chain_id, spec.time(), &entropy)?,
            Some(last) => {
                let opening = match spec.time().era_opening_slot(last.slot) {
                    0 => [0; spacevault_chain::time::FORM_BYTES],
                    s => {
                        store
                            .slot(s)?
                            .ok_or(StoreError::Corrupt("the slot that opens an era"))?
                            .output
                    }
                };
                Timeline::resume(chain_id, spec.time(), &last, &opening, &entropy)?
            }
        };
        let (slot, _) = watch::channel(line.slot());
        Ok(Time {
            line: Mutex::new(line),
            store,
            spec: spec.clone(),
            entropy,
            slot,
        })
    }

    /// The line, locked. The line moves only at the end of a check that
    /// passed, so a panic elsewhere under the lock leaves it whole: a
    /// poisoned lock is taken as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Timeline> {
        self.line
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The last slot checked here (0 before the first).
    pub fn slot(&self) -> u64 {
        *self.slot.borrow()
    }

    /// The slot reached, as it changes.
    pub fn slots(&self) -> watch::Receiver<u64> {
        self.slot.subscribe()
    }

    /// The slot the clock is in at `now_ms` (Unix ms): the last one due.
    pub fn clock_slot(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.spec.genesis_unix_ms) / self.spec.slot_ms
    }

    /// When slot `slot` is due (Unix ms): one slot length after the slot
    /// before, from the genesis.
    pub fn due_ms(&self, slot: u64) -> u64 {
        self.spec
            .genesis_unix_ms
            .saturating_add(slot.saturating_mul(self.spec.slot_ms))
    }

    /// The line as it stands, with the next slot's era begun: what a
    /// timekeeper computes the next slot from, outside the lock.
    pub fn next_line(&self) -> Timeline {
        let mut line = self.lock();
        if line.needs_era() {
            line.begin_era(&self.entropy);
        }
        line.clone()
    }

    /// Checks `out` (a few milliseconds, under the line's lock: call it
    /// from a blocking thread), keeps it and moves the line on.
    pub fn offer(&self, out: &SlotOutput, now_ms: u64) -> Result<Offered, OfferError> {
        if self.due_ms(out.slot) > now_ms + SLOT_SKEW_MS {
            return Ok(Offered::Early);
        }
        let mut line = self.lock();
        if out.slot <= line.slot() {
            return Ok(match self.store.slot(out.slot)? {
                Some(kept) if kept != *out => Offered::Contradicts,
                _ => Offered::Known,
            });
        }
        if out.slot > line.slot() + 1 {
            return Ok(Offered::Ahead);
        }
        if line.needs_era() {
            line.begin_era(&self.entropy);
        }
        // Checked once: the store keeps only what was checked, and the line
        // moves only once it is kept.
        let checked = line.verify_next(out)?;
        self.store.put_slot(out)?;
        line.advance_checked(checked);
        self.slot.send_replace(out.slot);
        Ok(Offered::Advanced)
    }
}

/// Why the line could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("the proof of time: {0}")]
    Time(#[from] TimeError),
    #[error("the store's slots: {0}")]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATER: u64 = u64::MAX / 2;

    fn spec(genesis_unix_ms: u64) -> ChainSpec {
        let mut spec = ChainSpec::new("time", genesis_unix_ms, 100);
        spec.pot_iterations = 100;
        spec.pot_era_slots = 2;
        spec.pot_discriminant_bits = 512;
        spec
    }

    fn time_at(path: &std::path::Path, spec: &ChainSpec) -> Time {
        Time::open(Arc::new(Store::open(path, spec).unwrap()), spec).unwrap()
    }

    #[test]
    fn a_reopened_line_goes_on_from_the_slots_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(0);
        let path = dir.path().join("db");
        let outs: Vec<SlotOutput> = {
            let time = time_at(&path, &spec);
            let outs: Vec<SlotOutput> = (0..3)
                .map(|_| {
                    let out = time.next_line().prove_next();
                    assert_eq!(time.offer(&out, LATER).unwrap(), Offered::Advanced);
                    out
                })
                .collect();
            assert_eq!(time.offer(&outs[1], LATER).unwrap(), Offered::Known);
            time.store.flush().unwrap();
            outs
        };
        let reopened = time_at(&path, &spec);
        assert_eq!(reopened.slot(), 3);
        // Slot 4 opens era 1 (eras of two slots: 1-2, 3-4... era 1 is
        // slots 3 and 4): made by a line that never stopped, it checks on
        // the reopened one.
        let unstopped = time_at(&dir.path().join("other"), &spec);
        for out in &outs {
            unstopped.offer(out, LATER).unwrap();
        }
        let next = unstopped.next_line().prove_next();
        assert_eq!(reopened.offer(&next, LATER).unwrap(), Offered::Advanced);
        assert_eq!(reopened.slot(), 4);
    }

    #[test]
    fn early_ahead_and_wrong_outputs_leave_the_line_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // Slot 1 is due at 10.1 s.
        let spec = spec(10_000);
        let time = time_at(&dir.path().join("db"), &spec);
        let out = time.next_line().prove_next();
        assert_eq!(time.offer(&out, 9_000).unwrap(), Offered::Early);
        let mut ahead = out.clone();
        ahead.slot = 3;
        assert_eq!(time.offer(&ahead, LATER).unwrap(), Offered::Ahead);
        let mut wrong = out.clone();
        wrong.output = out.proof;
        assert!(matches!(
            time.offer(&wrong, LATER),
            Err(OfferError::Wrong(_))
        ));
        assert_eq!(time.slot(), 0);
        // Within the allowed skew of its due time, it is taken.
        assert_eq!(
            time.offer(&out, 10_100 - SLOT_SKEW_MS).unwrap(),
            Offered::Advanced
        );
        assert_eq!(time.slot(), 1);
    }
}
