//! The proof of time as one vault follows it: the line of slots of the
//! head's branch ([`spacevault_chain::time::Branch`]) behind its lock,
//! each slot's output checked before it is kept in the store and the line
//! moves on, and the slot reached as a watch. A timekeeper computes the
//! next slot from a copy of the line, outside the lock, and offers it as
//! any peer's output is offered.
//!
//! The line followed is the head's: each era's seed takes a block of the
//! head's branch as entropy, so when the head moves to a branch whose
//! blocks differ there, the line moves with it, to where this vault's
//! slots of the new line reach. Slots of other lines (a branch this vault
//! does not follow, whose blocks it checks) are checked and kept on
//! demand ([`Time::keep_side`]).

use spacevault_chain::time::{Branch, CheckedSlots, SlotOutput, TimeError, Timeline};
use spacevault_chain::validate::Parent;
use spacevault_chain::ChainSpec;
use spacevault_store::{Store, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// How far ahead of this vault's clock a slot's output may come (a
/// timekeeper whose clock runs ahead, or this one's behind): past it, the
/// output is early and ignored, not its sender's fault. The allowance
/// blocks have too.
pub const SLOT_SKEW_MS: u64 = spacevault_chain::validate::CLOCK_ALLOWANCE_MS;

/// Lines of branches this vault does not follow, kept ready (each holds
/// an era's class group, some 20 ms to draw).
const SIDE_LINES: usize = 4;

/// What became of a slot's output offered to the line.
#[derive(Debug, PartialEq, Eq)]
pub enum Offered {
    /// Checked, kept, and the line moved on to it.
    Advanced,
    /// A slot kept already, the same output: nothing to do.
    Known,
    /// A slot kept already, with another output: a slot of a line has one
    /// output, so this one is wrong.
    Contradicts,
    /// A slot beyond the next: the slots between are missing here.
    Ahead,
    /// Due later than this vault's clock allows.
    Early,
    /// On a line this vault does not follow (another branch's, or one
    /// this vault's branch has not reached): nothing to say of it.
    OtherLine,
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

/// The line of slots one vault follows, and the branch it follows it for.
struct Followed {
    line: Timeline,
    tip: Branch,
    /// The tip moved (or an era closed) and the line could not be moved
    /// with it yet (the store failed): the next use tries again.
    stale: bool,
    /// The chain's head as it changes, once the chain is running.
    heads: Option<watch::Receiver<Parent>>,
}

/// The line of slots one vault follows.
pub struct Time {
    followed: Mutex<Followed>,
    /// Lines of other branches, most recently used last.
    sides: Mutex<Vec<Timeline>>,
    store: Arc<Store>,
    spec: ChainSpec,
    chain_id: [u8; 32],
    slot: watch::Sender<u64>,
    /// Outputs checked by vaults sharing the set, if this one shares it.
    shared: Option<Arc<CheckedSlots>>,
    /// Outputs taken as checked from the shared set.
    remembered: AtomicU64,
}

impl Time {
    /// The line of `head`'s branch, as far as the store's slots reach.
    pub fn open(store: Arc<Store>, spec: &ChainSpec, head: &Parent) -> Result<Time, OpenError> {
        spec.time().check()?;
        let tip = head.branch();
        let line = Self::line_of(&store, spec, &tip)?;
        Ok(Time {
            slot: watch::channel(line.slot()).0,
            followed: Mutex::new(Followed {
                line,
                tip,
                stale: false,
                heads: None,
            }),
            sides: Mutex::new(Vec::new()),
            store,
            spec: spec.clone(),
            chain_id: spec.chain_id(),
            shared: None,
            remembered: AtomicU64::new(0),
        })
    }

    /// Takes outputs that vaults sharing `set` checked as checked, and
    /// adds those this one checks.
    pub fn share_checks(&mut self, set: Arc<CheckedSlots>) {
        self.shared = Some(set);
    }

    /// Outputs taken as checked from the shared set: checks this vault did
    /// not make, as a cache's hits.
    pub fn checks_remembered(&self) -> u64 {
        self.remembered.load(Ordering::Relaxed)
    }

    /// `out` checked as `line`'s next slot, from the shared set if it
    /// holds it.
    fn verify_next(
        &self,
        line: &Timeline,
        out: &SlotOutput,
    ) -> Result<spacevault_chain::time::Checked, TimeError> {
        let checked = line.verify_next(out, self.shared.as_deref())?;
        if checked.remembered() {
            self.remembered.fetch_add(1, Ordering::Relaxed);
        }
        Ok(checked)
    }

    /// Follows the chain's head from now on: the line moves with it.
    pub fn follow_heads(&self, heads: watch::Receiver<Parent>) {
        self.lock().heads = Some(heads);
    }

    /// The line of `tip`'s branch, as far as the store's slots reach: the
    /// era whose closing slot is not kept yet, from its last kept slot.
    fn line_of(store: &Store, spec: &ChainSpec, tip: &Branch) -> Result<Timeline, OpenError> {
        let (era, seed) = tip.latest_line(&spec.chain_id(), &spec.time(), |line, slot| {
            store.output_on(line, slot)
        })?;
        Self::line_at(store, spec, era, seed)
    }

    /// Line `seed` of era `era`, from its last slot the store kept.
    fn line_at(
        store: &Store,
        spec: &ChainSpec,
        era: u64,
        seed: [u8; 32],
    ) -> Result<Timeline, OpenError> {
        let last = store.last_slot_on(&seed)?;
        let (chain_id, params) = (spec.chain_id(), spec.time());
        Ok(Timeline::on_line(
            chain_id,
            params,
            seed,
            era,
            last.as_ref(),
        )?)
    }

    /// The line followed, locked, as it stands. The line moves only at the
    /// end of a check that passed, so a panic elsewhere under the lock
    /// leaves it whole: a poisoned lock is taken as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Followed> {
        self.followed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Time::lock`], with the line moved to the head's branch if the
    /// head moved since, and on to the slots of it the store kept
    /// meanwhile (a line fetched for another branch's block, before the
    /// head moved to that branch).
    fn current(&self) -> Result<std::sync::MutexGuard<'_, Followed>, StoreError> {
        let mut followed = self.lock();
        let moved = followed
            .heads
            .as_mut()
            .filter(|h| h.has_changed().unwrap_or(false))
            .map(|h| h.borrow_and_update().branch());
        if let Some(tip) = moved {
            followed.tip = tip;
            followed.stale = true;
        }
        if followed.stale || followed.line.needs_era() {
            self.refollow(&mut followed)?;
            followed.stale = false;
        }
        let seed = followed.line.seed();
        if let Some(last) = self.store.last_slot_on(&seed)? {
            if last.slot > followed.line.slot() {
                followed
                    .line
                    .resume_at(&last)
                    .map_err(|_| StoreError::Corrupt("a kept slot's line"))?;
                self.slot.send_replace(last.slot);
                if followed.line.needs_era() {
                    self.refollow(&mut followed)?;
                }
            }
        }
        Ok(followed)
    }

    /// Moves the line to where the tip's branch stands, if it is not
    /// there: a new era's line, or another branch's.
    fn refollow(&self, followed: &mut Followed) -> Result<(), StoreError> {
        let params = self.spec.time();
        let (era, seed) = followed
            .tip
            .latest_line(&self.chain_id, &params, |line, slot| {
                self.store.output_on(line, slot)
            })?;
        if (era, seed) == (followed.line.era(), followed.line.seed()) {
            return Ok(());
        }
        let begun = era == followed.line.era() + 1 && followed.line.needs_era();
        followed.line = match Self::line_at(&self.store, &self.spec, era, seed) {
            Ok(line) => line,
            Err(OpenError::Store(e)) => return Err(e),
            Err(OpenError::Time(_)) => return Err(StoreError::Corrupt("a kept slot's line")),
        };
        if !begun {
            tracing::info!(
                era,
                slot = followed.line.slot(),
                head_slot = followed.tip.slot,
                "the line of slots follows the head's branch to another line"
            );
        }
        self.slot.send_replace(followed.line.slot());
        Ok(())
    }

    /// The last slot checked here on the line followed (0 before the
    /// first).
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

    /// The line followed (its seed) and the next slot it wants.
    pub fn wanted(&self) -> Result<([u8; 32], u64), StoreError> {
        let followed = self.current()?;
        Ok((followed.line.seed(), followed.line.slot() + 1))
    }

    /// The output of slot `slot` on the head's branch, if kept and not
    /// before the head's era: what a farmer looks up proofs for. (Right
    /// after an era's closing slot, the line followed is already the next
    /// era's.)
    pub fn output(&self, slot: u64) -> Result<Option<SlotOutput>, StoreError> {
        let params = self.spec.time();
        let era = params.era_of(slot);
        let (followed, tip) = {
            let f = self.current()?;
            ((f.line.era(), f.line.seed()), f.tip)
        };
        let line = if era == followed.0 {
            followed.1
        } else if era >= tip.era(&params) {
            let line = tip.line_of_era(&self.chain_id, &params, era, |line, s| {
                self.store.output_on(line, s)
            })?;
            match line {
                Ok(line) => line,
                Err(_) => return Ok(None),
            }
        } else {
            return Ok(None);
        };
        self.store.slot_on(&line, slot)
    }

    /// The line as it stands: what a timekeeper computes the next slot
    /// from, outside the lock.
    pub fn next_line(&self) -> Result<Timeline, StoreError> {
        Ok(self.current()?.line.clone())
    }

    /// Checks `out` (a few milliseconds, under the line's lock: call it
    /// from a blocking thread), keeps it and moves the line on.
    pub fn offer(&self, out: &SlotOutput, now_ms: u64) -> Result<Offered, OfferError> {
        if self.due_ms(out.slot) > now_ms + SLOT_SKEW_MS {
            return Ok(Offered::Early);
        }
        let mut followed = self.current()?;
        if let Some(kept) = self.store.slot_on(&out.line, out.slot)? {
            return Ok(match kept == *out {
                true => Offered::Known,
                false => Offered::Contradicts,
            });
        }
        let line = &mut followed.line;
        if out.line != line.seed() {
            return Ok(Offered::OtherLine);
        }
        if out.slot <= line.slot() {
            // Its line's slots before this one are its era's: a slot
            // before the era under the era's seed is no output at all.
            return Err(TimeError::OtherEra {
                slot: out.slot,
                era: line.era(),
            }
            .into());
        }
        if out.slot > line.slot() + 1 {
            return Ok(Offered::Ahead);
        }
        // Checked once: the store keeps only what was checked, and the line
        // moves only once it is kept.
        let checked = self.verify_next(line, out)?;
        self.store.put_slot(out)?;
        line.advance_checked(checked);
        self.slot.send_replace(out.slot);
        if line.needs_era() {
            // The slot is kept and the line moved: a next era that cannot
            // be begun now is begun on the next use.
            if let Err(e) = self.refollow(&mut followed) {
                tracing::warn!(%e, "the next era's line could not be begun yet");
                followed.stale = true;
            }
        }
        Ok(Offered::Advanced)
    }

    /// Checks and keeps `outs`, consecutive slots of one line of era
    /// `era` from the slot after the last this store has of it: a line of
    /// a branch this vault does not follow, whose seed the caller derived
    /// from that branch's blocks ([`Branch::line_of_era`]), or the line
    /// followed. Returns how many were new and checked; passes over those
    /// kept already and stops at the first that is neither.
    pub fn keep_side(
        &self,
        seed: &[u8; 32],
        era: u64,
        outs: &[SlotOutput],
        now_ms: u64,
    ) -> Result<usize, OfferError> {
        if *seed == self.current()?.line.seed() {
            // Slots kept meanwhile (another fetch of the same line) are
            // passed over, not counted against the sender.
            let mut kept = 0;
            for out in outs {
                match self.offer(out, now_ms)? {
                    Offered::Advanced => kept += 1,
                    Offered::Known => {}
                    _ => break,
                }
            }
            return Ok(kept);
        }
        let mut sides = self
            .sides
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A line kept ready is taken only where the store's slots of it
        // end (it may have been followed meanwhile), else begun again from
        // them: a slot the store has is never asked for as the next.
        let last = self.store.last_slot_on(seed)?;
        let reached = last
            .as_ref()
            .map_or(era.saturating_mul(self.spec.pot_era_slots), |o| o.slot);
        let ready = sides.iter().position(|l| l.seed() == *seed);
        let mut line = match ready.map(|i| sides.remove(i)) {
            Some(line) if line.era() == era && line.slot() == reached => line,
            _ => Timeline::on_line(self.chain_id, self.spec.time(), *seed, era, last.as_ref())?,
        };
        let mut kept = 0;
        // Slots another fetch of the same line kept meanwhile are passed
        // over, not checked again nor counted against the sender.
        for out in outs.iter().filter(|o| o.slot > reached) {
            if self.due_ms(out.slot) > now_ms + SLOT_SKEW_MS || line.needs_era() {
                break;
            }
            let checked = self.verify_next(&line, out)?;
            self.store.put_slot(out)?;
            line.advance_checked(checked);
            kept += 1;
        }
        if sides.len() >= SIDE_LINES {
            sides.remove(0);
        }
        sides.push(line);
        Ok(kept)
    }

    /// The slot after the last this store has of line `seed` of era `era`:
    /// where fetching that line goes on from.
    pub fn next_on(&self, seed: &[u8; 32], era: u64) -> Result<u64, StoreError> {
        let start = era.saturating_mul(self.spec.pot_era_slots);
        Ok(self.store.last_slot_on(seed)?.map_or(start, |o| o.slot) + 1)
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
        let store = Arc::new(Store::open(path, spec).unwrap());
        Time::open(store, spec, &Parent::genesis(spec)).unwrap()
    }

    /// Proves the next slot of the line `time` follows and offers it.
    fn step(time: &Time) -> SlotOutput {
        let out = time.next_line().unwrap().prove_next();
        assert_eq!(time.offer(&out, LATER).unwrap(), Offered::Advanced);
        out
    }

    #[test]
    fn a_reopened_line_goes_on_from_the_slots_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(0);
        let path = dir.path().join("db");
        let outs: Vec<SlotOutput> = {
            let time = time_at(&path, &spec);
            let outs: Vec<SlotOutput> = (0..3).map(|_| step(&time)).collect();
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
        let next = unstopped.next_line().unwrap().prove_next();
        assert_eq!(reopened.offer(&next, LATER).unwrap(), Offered::Advanced);
        assert_eq!(reopened.slot(), 4);
    }

    #[test]
    fn early_ahead_and_wrong_outputs_leave_the_line_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // Slot 1 is due at 10.1 s.
        let spec = spec(10_000);
        let time = time_at(&dir.path().join("db"), &spec);
        let out = time.next_line().unwrap().prove_next();
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

    #[test]
    fn the_line_moves_with_the_heads_branch_from_the_era_its_blocks_differ() {
        // Eras of two slots: era 2 (slots 5 and 6) takes as entropy the
        // latest block at or before slot 2.
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(0);
        let a = time_at(&dir.path().join("a"), &spec);
        let b = time_at(&dir.path().join("b"), &spec);
        let genesis = Parent::genesis(&spec);
        let block = Parent {
            hash: [9; 32],
            height: 1,
            slot: 2,
            weight: 1,
            child_target: genesis.child_target,
            line: genesis.line,
            opening: genesis.hash,
        };
        let (heads, a_heads) = watch::channel(genesis);
        a.follow_heads(a_heads);
        b.follow_heads(heads.subscribe());
        // Eras 0 and 1 are one line for every branch.
        for _ in 0..4 {
            let out = step(&a);
            assert_eq!(b.offer(&out, LATER).unwrap(), Offered::Advanced);
        }
        // A's head is now a block of slot 2, B's the genesis: era 2 is
        // another line on each, and each one's outputs are nothing to the
        // other.
        let (a_heads_tx, a_heads) = watch::channel(genesis);
        a.follow_heads(a_heads);
        a_heads_tx.send_replace(block);
        let from_a = step(&a);
        let from_b = step(&b);
        assert_eq!(from_a.slot, 5);
        assert_ne!(from_a.line, from_b.line);
        assert_eq!(b.offer(&from_a, LATER).unwrap(), Offered::OtherLine);
        assert_eq!(a.offer(&from_b, LATER).unwrap(), Offered::OtherLine);
        // B's head moves to the block: its line is A's, from era 2's start.
        heads.send_replace(block);
        assert_eq!(b.wanted().unwrap(), (from_a.line, 5));
        assert_eq!(b.slot(), 4);
        assert_eq!(b.offer(&from_a, LATER).unwrap(), Offered::Advanced);
        // And back: the genesis's line of era 2 was kept, slot 5 and all.
        heads.send_replace(genesis);
        assert_eq!(b.wanted().unwrap(), (from_b.line, 6));
        // A line kept for a branch not followed: checked slot by slot.
        let c = time_at(&dir.path().join("c"), &spec);
        let first_four: Vec<SlotOutput> = (1..=4)
            .map(|s| a.store.slot_on(&a_line(&a, s), s).unwrap().unwrap())
            .collect();
        for out in &first_four {
            assert_eq!(c.offer(out, LATER).unwrap(), Offered::Advanced);
        }
        assert_eq!(
            c.keep_side(&from_a.line, 2, std::slice::from_ref(&from_a), LATER)
                .unwrap(),
            1
        );
        assert_eq!(c.next_on(&from_a.line, 2).unwrap(), 6);
        let mut wrong = from_b.clone();
        wrong.slot = 6;
        wrong.line = from_a.line;
        assert!(matches!(
            c.keep_side(&from_a.line, 2, &[wrong], LATER),
            Err(OfferError::Wrong(_))
        ));
    }

    /// The line slot `slot` of eras 0 and 1 is on, as `time` kept it.
    fn a_line(time: &Time, slot: u64) -> [u8; 32] {
        let spec = &time.spec;
        let genesis = Branch::genesis(&spec.chain_id());
        genesis
            .line_of_era(
                &spec.chain_id(),
                &spec.time(),
                spec.time().era_of(slot),
                |l, s| time.store.output_on(l, s),
            )
            .unwrap()
            .unwrap()
    }
}
