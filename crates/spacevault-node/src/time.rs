//! The proof of time as one vault follows it: the line of slots
//! ([`spacevault_chain::time::Timeline`]) behind its lock, each slot's
//! output checked before it is kept in the store and the line moves on,
//! and the slot reached as a watch. A timekeeper computes the next slot
//! from a copy of the line, outside the lock, and offers it as any peer's
//! output is offered.
//!
//! Each era begins with an entropy read from the chain this vault follows:
//! the hash of the last canonical block at or before the spec's
//! [`entropy_slot`](ChainSpec::entropy_slot), the genesis hash for the
//! first eras. That block lies twice the finality depth back, so vaults
//! that follow one chain agree on it; once the head has passed that slot
//! the chain has settled it, and an era's first output that fails under it
//! is wrong. Before then (the chain has stalled there, or this vault is
//! still syncing) the head stands in for it, and an output that fails is
//! only *unsettled*: not its sender's fault. The entropy an era began with
//! is kept with its first slot, so a vault resumes with what it checked.

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
    /// The first slot of an era that does not check under the entropy this
    /// vault's chain gives it, which the chain has not settled yet.
    Unsettled,
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
    line: Mutex<Line>,
    store: Arc<Store>,
    spec: ChainSpec,
    genesis: [u8; 32],
    slot: watch::Sender<u64>,
}

/// The line and the entropy its current era was begun with.
struct Line {
    timeline: Timeline,
    began_with: [u8; 32],
}

/// The entropy an era begins with, as this vault's chain stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entropy {
    bytes: [u8; 32],
    /// Whether the chain has moved past the slot it is read at.
    settled: bool,
}

impl Time {
    /// The line as the store left it: from its last slot, or the genesis.
    pub fn open(store: Arc<Store>, spec: &ChainSpec) -> Result<Time, OpenError> {
        let chain_id = spec.chain_id();
        let genesis = genesis_hash(&chain_id);
        spec.time().check()?;
        let (timeline, began_with) = match store.last_slot()? {
            None => (Timeline::new(chain_id, spec.time(), &genesis)?, genesis),
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
                let era = spec.time().era_of(last.slot);
                // Kept with the era's first slot; a store written before
                // entropies were kept reads it from the chain.
                let entropy = match store.era_entropy(era)? {
                    Some(kept) => kept,
                    None => entropy_of(&store, spec, &genesis, era)?.bytes,
                };
                let timeline = Timeline::resume(chain_id, spec.time(), &last, &opening, &entropy)?;
                (timeline, entropy)
            }
        };
        let (slot, _) = watch::channel(timeline.slot());
        Ok(Time {
            line: Mutex::new(Line {
                timeline,
                began_with,
            }),
            store,
            spec: spec.clone(),
            genesis,
            slot,
        })
    }

    /// The line, locked. The line moves only at the end of a check that
    /// passed, so a panic elsewhere under the lock leaves it whole: a
    /// poisoned lock is taken as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
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

    /// If the line's next slot opens an era: that era and its entropy as
    /// the chain stands, the era begun with it (drawing its group, some
    /// 20 ms, only when the entropy differs from the one it was begun with).
    fn begin_next_era(&self, line: &mut Line) -> Result<Option<(u64, Entropy)>, StoreError> {
        let next = line.timeline.slot() + 1;
        let params = line.timeline.params();
        if params.era_opening_slot(next) != line.timeline.slot() {
            return Ok(None);
        }
        let era = params.era_of(next);
        let entropy = entropy_of(&self.store, &self.spec, &self.genesis, era)?;
        if line.timeline.needs_era() || line.began_with != entropy.bytes {
            line.timeline.begin_era(&entropy.bytes);
            line.began_with = entropy.bytes;
        }
        Ok(Some((era, entropy)))
    }

    /// The line as it stands, with the next slot's era begun: what a
    /// timekeeper computes the next slot from, outside the lock.
    pub fn next_line(&self) -> Result<Timeline, StoreError> {
        let mut line = self.lock();
        self.begin_next_era(&mut line)?;
        Ok(line.timeline.clone())
    }

    /// Checks `out` (a few milliseconds, under the line's lock: call it
    /// from a blocking thread), keeps it and moves the line on.
    pub fn offer(&self, out: &SlotOutput, now_ms: u64) -> Result<Offered, OfferError> {
        if self.due_ms(out.slot) > now_ms + SLOT_SKEW_MS {
            return Ok(Offered::Early);
        }
        let mut line = self.lock();
        if out.slot <= line.timeline.slot() {
            return Ok(match self.store.slot(out.slot)? {
                Some(kept) if kept != *out => Offered::Contradicts,
                _ => Offered::Known,
            });
        }
        if out.slot > line.timeline.slot() + 1 {
            return Ok(Offered::Ahead);
        }
        let opens = self.begin_next_era(&mut line)?;
        // Checked once: the store keeps only what was checked, and the line
        // moves only once it is kept.
        let checked = match line.timeline.verify_next(out) {
            Ok(checked) => checked,
            Err(_) if opens.is_some_and(|(_, entropy)| !entropy.settled) => {
                return Ok(Offered::Unsettled)
            }
            Err(wrong) => return Err(wrong.into()),
        };
        match opens {
            Some((era, entropy)) => self.store.put_era_opening(out, era, &entropy.bytes)?,
            None => self.store.put_slot(out)?,
        }
        line.timeline.advance_checked(checked);
        self.slot.send_replace(out.slot);
        Ok(Offered::Advanced)
    }
}

/// Era `era`'s entropy as `store`'s chain stands: the hash of the last
/// canonical block at or before the spec's entropy slot (the genesis's
/// when none is, and for the first eras), settled once the head is past
/// that slot.
fn entropy_of(
    store: &Store,
    spec: &ChainSpec,
    genesis: &[u8; 32],
    era: u64,
) -> Result<Entropy, StoreError> {
    let Some(slot) = spec.entropy_slot(era) else {
        return Ok(Entropy {
            bytes: *genesis,
            settled: true,
        });
    };
    let at = store.canonical_at_slot(slot)?;
    Ok(Entropy {
        bytes: at.block.unwrap_or(*genesis),
        settled: at.head_slot > slot,
    })
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
                    let out = time.next_line().unwrap().prove_next();
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
        let next = unstopped.next_line().unwrap().prove_next();
        assert_eq!(reopened.offer(&next, LATER).unwrap(), Offered::Advanced);
        assert_eq!(reopened.slot(), 4);
    }

    /// Keeps a chain of blocks in these slots in `time`'s store, canonical:
    /// the store checks nothing of them, which is all an era's entropy
    /// reads.
    fn keep_chain(time: &Time, slots: &[u64]) -> Vec<[u8; 32]> {
        use spacevault_chain::{Block, ChainProof, Keypair, Ranked, Stamp, Target};
        let key = Keypair::from_secret(&[9; 32]);
        let mut parent = time.genesis;
        let mut hashes = Vec::new();
        for (height, &slot) in (1..).zip(slots) {
            let proof = ChainProof {
                farmer_key: key.public(),
                seed: [1; 32],
                k: 16,
                nonce: height,
            };
            let stamp = Stamp {
                slot,
                output: [0; spacevault_chain::time::FORM_BYTES],
            };
            let block = Block::produce(
                &key,
                time.spec.chain_id(),
                height,
                parent,
                stamp,
                proof,
                vec![],
            );
            let rank = Ranked {
                distance: [0; 32],
                nonce: height,
                plot_id: [0; 32],
                quality: 0,
            };
            time.store.insert_block(&block, rank, 1, Target(1)).unwrap();
            parent = block.hash();
            hashes.push(parent);
        }
        time.store.make_canonical(&hashes).unwrap().unwrap();
        hashes
    }

    #[test]
    fn an_era_begins_with_a_settled_blocks_hash_and_an_unsettled_one_costs_no_fault() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = spec(0);
        // The entropy lag is one era (two slots): era 2 (slots 5 and 6)
        // reads the chain at slot 2.
        spec.finality_depth = 1;
        spec.block_interval_slots = 1;
        assert_eq!(spec.entropy_slot(2), Some(2));
        // A timekeeper whose chain has a block in slot 1 and its head in
        // slot 3: its era 2 begins with the block of slot 1.
        let keeper = time_at(&dir.path().join("keeper"), &spec);
        let chain = keep_chain(&keeper, &[1, 3]);
        let outs: Vec<SlotOutput> = (0..6)
            .map(|_| {
                let out = keeper.next_line().unwrap().prove_next();
                assert_eq!(keeper.offer(&out, LATER).unwrap(), Offered::Advanced);
                out
            })
            .collect();
        assert_eq!(keeper.store.era_entropy(2).unwrap(), Some(chain[0]));
        assert_eq!(keeper.store.era_entropy(1).unwrap(), Some(keeper.genesis));
        // Another entropy makes another era: what a line that mixed no
        // block in makes of slot 5 is not the keeper's.
        let plain = time_at(&dir.path().join("plain"), &spec);
        for out in &outs[..4] {
            assert_eq!(plain.offer(out, LATER).unwrap(), Offered::Advanced);
        }
        let unmixed = plain.next_line().unwrap().prove_next();
        assert_ne!(unmixed, outs[4]);
        // A vault that has not synced the chain: the keeper's slot 5 does
        // not check, but the chain has not settled its entropy, so it is
        // no one's fault; once the blocks are in, it checks.
        let follower = time_at(&dir.path().join("follower"), &spec);
        for out in &outs[..4] {
            assert_eq!(follower.offer(out, LATER).unwrap(), Offered::Advanced);
        }
        assert_eq!(follower.offer(&outs[4], LATER).unwrap(), Offered::Unsettled);
        assert_eq!(follower.slot(), 4);
        keep_chain(&follower, &[1, 3]);
        assert_eq!(follower.offer(&outs[4], LATER).unwrap(), Offered::Advanced);
        // With the chain settled, an output made without the block's
        // entropy is wrong.
        let settled = time_at(&dir.path().join("settled"), &spec);
        keep_chain(&settled, &[1, 3]);
        for out in &outs[..4] {
            settled.offer(out, LATER).unwrap();
        }
        assert!(matches!(
            settled.offer(&unmixed, LATER),
            Err(OfferError::Wrong(_))
        ));
        // Reopened, the follower resumes era 2 with the entropy it kept,
        // and checks slot 6.
        follower.store.flush().unwrap();
        let path = dir.path().join("follower");
        drop(follower);
        let reopened = time_at(&path, &spec);
        assert_eq!(reopened.offer(&outs[5], LATER).unwrap(), Offered::Advanced);
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
}
