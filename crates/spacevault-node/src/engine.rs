//! The chain as one vault follows it: importing blocks (checks, storage,
//! fork choice by weight, finality), the pool of pending transactions, and
//! producing a block in a slot where this vault's proof is eligible. No I/O
//! but the store's and no clock of its own: the node passes the time in,
//! so that the rules are the same for every caller and tests can drive
//! them.
//!
//! One module a concern: `import` (checks, orphans, fork choice),
//! `production` (eligibility, the block), `mempool` (pending
//! transactions), `orphans` (blocks waiting for their parents) and
//! `evidence` (equivocation caught, and evidence waiting for a block);
//! this file holds the engine's state and what reads it.

use spacevault_chain::fork::{self, Fork};
use spacevault_chain::validate::{self, check_tx, Parent};
use spacevault_chain::SigCache;
use spacevault_chain::{
    Block, ChainProof, ChainSpec, Equivocation, Keypair, Limits, Ranked, RegisterTx, Rejection,
    Stamp,
};
use spacevault_store::{Status, Store, StoreError};
use std::path::Path;

mod evidence;
mod import;
mod lines;
mod mempool;
mod orphans;
mod production;
pub use evidence::{MAX_PENDING_EVIDENCE, MAX_SEEN, SEEN_SLOTS};
use import::unable_to_store;
pub use import::{Adoption, Imported};
pub use lines::missing_slot;
use mempool::Mempool;
pub use mempool::{MAX_MEMPOOL, MAX_VERSIONS_AHEAD};
pub use orphans::{Origin, MAX_ORPHANS, MAX_ORPHANS_PER_ORIGIN, ORPHAN_SLOTS};
pub use production::{on_head, OnHead};

/// How long a vault's chain writes (slots among them) may wait to be made
/// durable, with room to spare: the node flushes its store every 2 s.
pub const UNFLUSHED_MS: u64 = 4_000;

/// A canonical block, as the page and API list them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockSummary {
    pub height: u64,
    pub hash: String,
    pub producer: String,
    pub quality: u32,
    /// The slot it was made in, and when that slot was due (Unix ms).
    pub slot: u64,
    pub timestamp_ms: u64,
    pub txs: usize,
}

/// One vault's view of the chain.
pub struct Engine {
    spec: ChainSpec,
    chain_id: [u8; 32],
    limits: Limits,
    store: std::sync::Arc<Store>,
    head: Parent,
    /// The last slot this vault produced a block in (or had reached when
    /// it opened): it never signs two blocks for one slot, which would be
    /// equivocation.
    produced_slot: u64,
    mempool: Mempool,
    orphans: orphans::Orphans,
    watch: evidence::Watch,
    /// Signatures verified before, if the vault keeps them: a block's
    /// transactions were mostly verified as they arrived.
    sig_cache: Option<std::sync::Arc<SigCache>>,
    /// The block the operator trusts to be on the network's chain.
    checkpoint: Option<spacevault_chain::fork::Checkpoint>,
    /// Slots of lines forgotten since the handle last asked.
    pruned: spacevault_store::Pruned,
}

impl Engine {
    /// Opens the vault's store at `path` for `spec`'s chain.
    pub fn open(path: &Path, spec: ChainSpec) -> Result<Engine, StoreError> {
        let store = Store::open(path, &spec)?;
        let chain_id = spec.chain_id();
        let head = stored_head(&store, &spec)?;
        // A vault that stopped in the middle of a slot may have produced
        // in it, and one that was killed may have lost the last slots it
        // reached (chain writes are made durable every few seconds): it
        // produces again only in slots past those its line had reached and
        // those it may have lost.
        let lost = UNFLUSHED_MS.div_ceil(spec.slot_ms) + 1;
        let produced_slot = match store.highest_slot()? {
            0 => 0,
            slot => slot + lost,
        };
        Ok(Engine {
            pruned: Default::default(),
            orphans: orphans::Orphans::new(spec.slot_ms),
            limits: Limits::of(&spec),
            produced_slot,
            chain_id,
            spec,
            store: std::sync::Arc::new(store),
            head,
            mempool: Mempool::default(),
            watch: evidence::Watch::default(),
            sig_cache: None,
            checkpoint: None,
        })
    }

    /// Follows only chains through `checkpoint` from now on; until the
    /// canonical chain holds it, no branch is refused for its depth, and a
    /// branch through it replaces one that is not, whatever they weigh.
    pub fn set_checkpoint(&mut self, checkpoint: spacevault_chain::fork::Checkpoint) {
        self.checkpoint = Some(checkpoint);
    }

    /// Whether the canonical chain holds the checkpoint (it does when there
    /// is none).
    pub fn holds_checkpoint(&self) -> Result<bool, StoreError> {
        match self.checkpoint {
            None => Ok(true),
            Some(cp) => Ok(self.store.canonical(cp.height)? == Some(cp.hash)),
        }
    }

    /// Checks transactions' signatures against `cache` first from now on.
    pub fn use_sig_cache(&mut self, cache: std::sync::Arc<SigCache>) {
        self.sig_cache = Some(cache);
    }

    fn sig_cache(&self) -> Option<&SigCache> {
        self.sig_cache.as_deref()
    }

    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    pub fn chain_id(&self) -> [u8; 32] {
        self.chain_id
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for work done without holding the engine (a flush).
    pub fn shared_store(&self) -> std::sync::Arc<Store> {
        self.store.clone()
    }

    /// The canonical head (the genesis before block 1).
    pub fn head(&self) -> Parent {
        self.head
    }

    fn parent(&self, hash: &[u8; 32]) -> Result<Option<Parent>, StoreError> {
        parent_of(&self.store, &self.spec, hash)
    }

    /// Pending transactions that apply on the head, in order, within the
    /// block's limit.
    fn pending_txs(&self) -> Vec<RegisterTx> {
        let store = &self.store;
        self.mempool
            .applicable(self.spec.max_block_txs as usize, |owner, name| {
                store.register_version(owner, name).ok()
            })
    }

    /// A transaction for the pool: checked on its own and against the
    /// register's version; Ok(false) when already pending.
    pub fn add_tx(&mut self, tx: RegisterTx) -> Result<bool, Rejection> {
        check_tx(&self.spec, &self.chain_id, &tx, self.sig_cache())?;
        self.add_checked_tx(tx)
    }

    /// [`Engine::add_tx`] for a transaction `check_tx` passed already: the
    /// signature is checked before the engine's lock is taken, so that
    /// workers check transactions side by side.
    pub fn add_checked_tx(&mut self, tx: RegisterTx) -> Result<bool, Rejection> {
        let current = self
            .store
            .register_version(&tx.owner, &tx.name)
            .map_err(unable_to_store)?;
        let id = tx.id(&self.chain_id);
        self.mempool.add(id, tx, current)
    }

    /// Evidence of equivocation for a block of this vault's: checked, and
    /// kept (see [`add_checked_evidence`](Self::add_checked_evidence)).
    pub fn add_evidence(&mut self, e: Equivocation) -> Result<bool, Rejection> {
        validate::check_equivocation(&self.chain_id, &e, self.sig_cache())?;
        self.add_checked_evidence(e)
    }

    /// Evidence `check_equivocation` passed (before the engine's lock was
    /// taken), kept for a block unless the canonical chain bans its key
    /// already, evidence against the key waits, the pool is full, or the
    /// key signed no header this vault checked lately (Ok(false) for
    /// each: none is the sender's fault).
    pub fn add_checked_evidence(&mut self, e: Equivocation) -> Result<bool, Rejection> {
        let key = e.farmer_key();
        if !self.watch.knows(&key) || self.watch.is_pending(&key) {
            return Ok(false);
        }
        if self.store.ban_of(&key).map_err(unable_to_store)?.is_some() {
            return Ok(false);
        }
        Ok(self.watch.keep(e))
    }

    /// Whether evidence against `key` waits for a block here.
    pub fn evidence_pending(&self, key: &[u8; 32]) -> bool {
        self.watch.is_pending(key)
    }

    /// Equivocation caught in the blocks imported since the last call,
    /// for the vault to gossip (each is also waiting for a block).
    pub fn take_caught(&mut self) -> Vec<Equivocation> {
        self.watch.take_caught()
    }

    /// Pending evidence whose key the canonical chain does not ban yet,
    /// within the block's limit.
    fn pending_evidence(&self) -> Vec<Equivocation> {
        self.watch
            .pending()
            .filter(|e| matches!(self.store.ban_of(&e.farmer_key()), Ok(None)))
            .take(self.spec.max_block_evidence as usize)
            .cloned()
            .collect()
    }

    /// Whether a write of `version` to the register is pending here.
    pub fn is_pending(&self, owner: &[u8; 32], name: &[u8], version: u64) -> bool {
        self.mempool.is_pending(owner, name, version)
    }

    /// Lines and slots forgotten since the last call (see
    /// [`lines::settle_lines`]).
    pub fn take_pruned(&mut self) -> spacevault_store::Pruned {
        std::mem::take(&mut self.pruned)
    }

    #[cfg(test)]
    pub fn mempool_len(&self) -> usize {
        self.mempool.len()
    }

    /// Canonical blocks from `from`, at most `max` of them and `max_bytes`
    /// encoded (but at least one block, if there is one): a sync answer
    /// must fit in one message.
    pub fn blocks_from(&self, from: u64, max: u32, max_bytes: usize) -> Vec<Vec<u8>> {
        self.store
            .canonical_blocks(from, max, max_bytes)
            .unwrap_or_default()
    }

    /// The canonical block at `height`.
    pub fn block_at(&self, height: u64) -> Result<Option<Block>, StoreError> {
        match self.store.canonical(height)? {
            Some(hash) => self.store.block(&hash),
            None => Ok(None),
        }
    }

    /// The last `n` canonical blocks, newest first.
    pub fn recent(&self, n: usize) -> Vec<BlockSummary> {
        let mut out = Vec::new();
        let mut height = self.head.height;
        while height > 0 && out.len() < n {
            if let (Ok(Some(block)), Ok(Some(hash))) =
                (self.block_at(height), self.store.canonical(height))
            {
                let quality = self
                    .store
                    .info(&hash)
                    .ok()
                    .flatten()
                    .map_or(0, |i| i.rank.quality);
                out.push(BlockSummary {
                    height,
                    hash: hex::encode(hash),
                    producer: hex::encode(block.header.proof.farmer_key()),
                    quality,
                    slot: block.header.stamp.slot,
                    timestamp_ms: self.spec.slot_due_ms(block.header.stamp.slot),
                    txs: block.txs.len(),
                });
            }
            height -= 1;
        }
        out
    }
}

/// The head `store` last committed, as a parent; the genesis when it has
/// none. What a vault reads without its engine's lock.
pub fn stored_head(store: &Store, spec: &ChainSpec) -> Result<Parent, StoreError> {
    let genesis = Parent::genesis(spec);
    Ok(match store.head()? {
        Some((hash, _)) => parent_of(store, spec, &hash)?.unwrap_or(genesis),
        None => genesis,
    })
}

/// A stored block as the parent of its child (the genesis for its hash).
fn parent_of(
    store: &Store,
    spec: &ChainSpec,
    hash: &[u8; 32],
) -> Result<Option<Parent>, StoreError> {
    let genesis = Parent::genesis(spec);
    if *hash == genesis.hash {
        return Ok(Some(genesis));
    }
    Ok(store.info(hash)?.map(|info| Parent {
        hash: *hash,
        height: info.height,
        slot: info.slot,
        weight: info.weight,
        child_target: info.child_target,
        line: info.line,
        opening: info.opening,
    }))
}

#[cfg(test)]
mod tests;
