//! The chain as the vault's parts reach it: one handle over the engine,
//! with a typed method for each thing a part asks of it.
//!
//! The engine ([`crate::engine`]) is the chain's rules over the store,
//! with no lock and no clock of its own. The handle adds what a vault
//! shared by many tasks needs: the engine's lock, taken by one method at a
//! time and never by a caller (so no caller holds it across work of its
//! own), the head as a watch that is read without the lock, a
//! notification when workers change what the vault's task waits on, and
//! the figures kept of imports (first arrivals, the deepest reorg).
//!
//! Like Lighthouse's beacon chain, the handle is shared and its methods
//! run on blocking threads (the processor's workers, the API's request
//! threads, the vault task's `Shared::blocking`), side by side where the
//! work allows (signatures are checked before the lock, reads of the store
//! go without it); the methods that take the lock must never be called
//! from a runtime thread.

use crate::engine::{Adoption, BlockSummary, Engine, Imported};
use spacevault_chain::validate::Parent;
use spacevault_chain::{Block, ChainSpec, Ranked, RegisterTx, Rejection, SigCache};
use spacevault_chain::{ChainProof, Keypair, Stamp};
use spacevault_store::{Store, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{watch, Notify};

/// The chain one vault follows, shared by its parts.
pub struct Chain {
    engine: Mutex<Engine>,
    store: Arc<Store>,
    spec: ChainSpec,
    chain_id: [u8; 32],
    sig_cache: Option<Arc<SigCache>>,
    /// The canonical head: sent under the engine's lock, so that it never
    /// goes back to an older head when imports run on several threads.
    head: watch::Sender<Parent>,
    /// Woken when workers take a block ([`Chain::changed`]).
    changed: Notify,
    /// When each recent block was first imported here (Unix ms): what the
    /// network benchmark measures propagation with.
    arrivals: Mutex<Arrivals>,
    /// The most blocks one change of branch took off the canonical chain.
    deepest_reorg: AtomicU64,
    /// Slots of lines the canonical chain can no longer take, forgotten.
    slots_pruned: AtomicU64,
}

/// One block imported: its hash, what became of it, and the head's height
/// after it.
pub struct Step {
    pub hash: [u8; 32],
    pub outcome: Result<Imported, Rejection>,
    pub height: u64,
    /// Equivocation the block showed (its key's second block for its
    /// slot), for the vault to gossip.
    pub caught: Vec<spacevault_chain::Equivocation>,
}

/// The chain as the status shows it.
pub struct View {
    pub head: Parent,
    pub recent: Vec<BlockSummary>,
}

impl Chain {
    /// The handle over `engine`, which checks transactions' signatures
    /// against `sig_cache` first, if there is one.
    pub fn new(mut engine: Engine, sig_cache: Option<Arc<SigCache>>) -> Chain {
        if let Some(cache) = &sig_cache {
            engine.use_sig_cache(cache.clone());
        }
        let (head, _) = watch::channel(engine.head());
        Chain {
            store: engine.shared_store(),
            spec: engine.spec().clone(),
            chain_id: engine.chain_id(),
            engine: Mutex::new(engine),
            sig_cache,
            head,
            changed: Notify::new(),
            arrivals: Mutex::new(Arrivals::default()),
            deepest_reorg: AtomicU64::new(0),
            slots_pruned: AtomicU64::new(0),
        }
    }

    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    pub fn chain_id(&self) -> [u8; 32] {
        self.chain_id
    }

    /// The store the chain is kept in, for reads that need no lock.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Signatures verified before, if the vault keeps them.
    pub fn sig_cache(&self) -> Option<&SigCache> {
        self.sig_cache.as_deref()
    }

    /// The canonical head, without the engine's lock.
    pub fn head(&self) -> Parent {
        *self.head.borrow()
    }

    pub fn height(&self) -> u64 {
        self.head.borrow().height
    }

    /// The head as it changes, for waiters.
    pub fn heads(&self) -> watch::Receiver<Parent> {
        self.head.subscribe()
    }

    /// Completes once workers have taken a block since the last wait.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// Wakes whoever waits on [`Chain::changed`]: the head may have moved.
    pub fn note_changed(&self) {
        self.changed.notify_one();
    }

    /// When the block with `hash` was first imported here (Unix ms), if
    /// it is among the last blocks imported.
    pub fn arrival(&self, hash: &[u8; 32]) -> Option<u64> {
        self.arrivals.lock().unwrap().get(hash)
    }

    /// The most blocks one change of branch took off the canonical chain.
    pub fn deepest_reorg(&self) -> u64 {
        self.deepest_reorg.load(Ordering::Relaxed)
    }

    /// Slots of lines forgotten once the final blocks settled their eras.
    pub fn slots_pruned(&self) -> u64 {
        self.slots_pruned.load(Ordering::Relaxed)
    }

    /// The head the store last committed, without the engine's lock; the
    /// engine's own if the store cannot say.
    pub fn stored_head(&self) -> Parent {
        crate::engine::stored_head(&self.store, &self.spec).unwrap_or_else(|_| self.head())
    }

    fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap()
    }

    /// The engine, locked: for tests that look inside a vault or drive
    /// it. The head it ends with is sent to the watch when the guard is
    /// dropped, as an import through the handle would.
    #[cfg(any(test, feature = "testing"))]
    pub fn engine_for_tests(&self) -> EngineForTests<'_> {
        EngineForTests {
            engine: self.engine(),
            head: &self.head,
        }
    }

    /// Sends the engine's head to the watch if it moved. Under the lock:
    /// imports run on several threads, and the watch must never go back to
    /// an older head.
    fn send_head(head: &watch::Sender<Parent>, engine: &Engine) {
        let now = engine.head();
        head.send_if_modified(|sent| {
            let moved = *sent != now;
            *sent = now;
            moved
        });
    }

    // What follows takes the engine's lock: call it from a blocking thread.

    /// A transaction for the pool, checked on its own (signature included)
    /// and against its register's version; Ok(false) when already pending.
    pub fn add_tx(&self, tx: RegisterTx) -> Result<bool, Rejection> {
        spacevault_chain::validate::check_tx(&self.spec, &self.chain_id, &tx, self.sig_cache())?;
        self.add_checked_tx(tx)
    }

    /// [`Chain::add_tx`] for a transaction whose own checks passed before
    /// the lock.
    pub fn add_checked_tx(&self, tx: RegisterTx) -> Result<bool, Rejection> {
        self.engine().add_checked_tx(tx)
    }

    /// Takes evidence of equivocation whose signatures were checked before
    /// the lock (see [`Engine::add_checked_evidence`]).
    pub fn add_checked_evidence(
        &self,
        e: spacevault_chain::Equivocation,
    ) -> Result<bool, Rejection> {
        self.engine().add_checked_evidence(e)
    }

    /// Lets go of orphans kept past their time.
    pub fn expire_orphans(&self, now_ms: u64) {
        self.engine().expire_orphans(now_ms)
    }

    /// Imports the next block of `adoption` (see [`Engine::import_next`]):
    /// the lock is held for one block, so that a long line of orphans does
    /// not keep the API and the other tasks waiting.
    pub fn import_step(&self, adoption: &mut Adoption, now_ms: u64) -> Option<Step> {
        let mut engine = self.engine();
        let (hash, outcome) = engine.import_next(adoption, now_ms)?;
        let height = engine.head().height;
        let caught = engine.take_caught();
        let pruned = engine.take_pruned();
        Self::send_head(&self.head, &engine);
        drop(engine);
        self.slots_pruned.fetch_add(pruned.slots, Ordering::Relaxed);
        if let Ok(Imported::NewHead { left }) = &outcome {
            self.deepest_reorg
                .fetch_max(*left as u64, Ordering::Relaxed);
        }
        if matches!(outcome, Ok(Imported::NewHead { .. }) | Ok(Imported::Kept)) {
            self.arrivals.lock().unwrap().note(hash, now_ms);
        }
        Some(Step {
            hash,
            outcome,
            height,
            caught,
        })
    }

    /// Whether a proof of rank `rank` for `slot`'s challenge would make a
    /// block on the head now (see [`Engine::may_produce`]).
    pub fn may_produce(&self, slot: u64, rank: &Ranked) -> bool {
        self.engine().may_produce(slot, rank)
    }

    /// Produces a block on the head in `stamp`'s slot with `key` and its
    /// proof, if it is eligible there (see [`Engine::produce`]).
    pub fn produce(
        &self,
        key: &Keypair,
        stamp: Stamp,
        proof: ChainProof,
        rank: &Ranked,
    ) -> Option<Block> {
        self.engine().produce(key, stamp, proof, rank)
    }

    /// The canonical block at `height`, with its proof's quality.
    pub fn block_at(&self, height: u64) -> Result<Option<(Block, Option<u32>)>, StoreError> {
        let Some(block) = self.engine().block_at(height)? else {
            return Ok(None);
        };
        let quality = self.store.info(&block.hash())?.map(|i| i.rank.quality);
        Ok(Some((block, quality)))
    }

    /// A register's version in the canonical chain, and whether a write of
    /// `version` to it is pending here.
    pub fn register_state(
        &self,
        owner: &[u8; 32],
        name: &[u8],
        version: u64,
    ) -> Result<(u64, bool), StoreError> {
        let engine = self.engine();
        let current = engine.store().register_version(owner, name)?;
        Ok((current, engine.is_pending(owner, name, version)))
    }

    /// The head and the last `recent` canonical blocks.
    pub fn view(&self, recent: usize) -> View {
        let engine = self.engine();
        View {
            head: engine.head(),
            recent: engine.recent(recent),
        }
    }
}

/// The engine locked for a test; its head goes to the watch on drop.
#[cfg(any(test, feature = "testing"))]
pub struct EngineForTests<'a> {
    engine: MutexGuard<'a, Engine>,
    head: &'a watch::Sender<Parent>,
}

#[cfg(any(test, feature = "testing"))]
impl std::ops::Deref for EngineForTests<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

#[cfg(any(test, feature = "testing"))]
impl std::ops::DerefMut for EngineForTests<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}

#[cfg(any(test, feature = "testing"))]
impl Drop for EngineForTests<'_> {
    fn drop(&mut self) {
        Chain::send_head(self.head, &self.engine);
    }
}

/// First-import times of the last blocks, bounded.
#[derive(Default)]
struct Arrivals {
    times: std::collections::HashMap<[u8; 32], u64>,
    order: std::collections::VecDeque<[u8; 32]>,
}

/// Blocks whose arrival time is kept.
const ARRIVALS_KEPT: usize = 4096;

impl Arrivals {
    fn note(&mut self, hash: [u8; 32], at_ms: u64) {
        if self.times.insert(hash, at_ms).is_none() {
            self.order.push_back(hash);
            if self.order.len() > ARRIVALS_KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.times.remove(&old);
                }
            }
        }
    }

    fn get(&self, hash: &[u8; 32]) -> Option<u64> {
        self.times.get(hash).copied()
    }
}
