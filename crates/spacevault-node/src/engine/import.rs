//! Importing blocks: checks, storage, orphans kept until their parents
//! come, and fork choice by weight between the canonical chain and a new
//! branch, none from below the final blocks.

use super::lines;
use super::*;
use spacevault_chain::eligibility::{next_target, Target};

/// What became of an imported block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// It is the new head; `left`: blocks of the old chain that are no
    /// longer canonical (0 when it extends the head).
    NewHead { left: usize },
    /// Valid and kept, on a chain that is not (yet) the best.
    Kept,
    /// Already known.
    Duplicate,
    /// Its parent is not known yet: kept aside until it is.
    Orphan,
}

/// A block to import and the orphans that wait for it, as they are
/// found ([`Engine::import_next`]).
pub struct Adoption {
    queue: Vec<Block>,
    /// Whether the next block is the first, and came by gossip
    /// ([`Engine::import_gossiped`]); the orphans were asked for.
    gossiped: bool,
    /// Who sent the first block (the orphans waited for a known one).
    origin: Origin,
    /// Whether the next block is the first.
    first: bool,
    /// Orphans whose parent came but whose slot this vault's line has not
    /// reached: refused as `UnknownSlot`, and kept here for the caller to
    /// hold until it does.
    pub waiting_for_slot: Vec<Block>,
}

impl Adoption {
    pub fn new(block: Block, gossiped: bool, origin: Origin) -> Adoption {
        Adoption {
            queue: vec![block],
            gossiped,
            origin,
            first: true,
            waiting_for_slot: Vec::new(),
        }
    }
}

impl Engine {
    /// Checks and keeps a block, and follows it if it makes the better
    /// chain. Errors are the block's fault, or this vault's own trouble
    /// (`Unable`: its store failed).
    pub fn import(&mut self, block: Block, now_ms: u64) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, false, Origin::LOCAL)
    }

    /// [`import`](Self::import) for a block `origin` sent: an orphan
    /// counts against that sender's share of the pool.
    pub fn import_from(
        &mut self,
        block: Block,
        now_ms: u64,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, false, origin)
    }

    /// [`import`](Self::import) for a block gossiped to this vault: one
    /// whose proof loses to the canonical block of the same parent is
    /// refused as `NotBetter` once its header is checked, before its
    /// transactions are. It could only be kept as a loser, and under load
    /// every vault whose winner came late made one. Blocks asked for in a
    /// sync are imported whatever they are: a branch that grew on such a
    /// block comes that way.
    pub fn import_gossiped(
        &mut self,
        block: Block,
        now_ms: u64,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, true, origin)
    }

    fn import_checked(
        &mut self,
        block: Block,
        now_ms: u64,
        refuse_beaten: bool,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        let hash = block.hash();
        let store_err = unable_to_store;
        if self.store.info(&hash).map_err(store_err)?.is_some() {
            return Ok(Imported::Duplicate);
        }
        if let Some(cp) = self.checkpoint {
            if block.header.height == cp.height && hash != cp.hash {
                return Err(Rejection::OffCheckpoint { height: cp.height });
            }
        }
        let parent_hash = block.header.parent;
        let Some(parent) = self.parent(&parent_hash).map_err(store_err)? else {
            // What can be checked without the parent is checked before the
            // block is kept: a copy under a real block's hash with another
            // signature or other transactions (the hash covers neither)
            // would otherwise wait in its place and be refused when the
            // parent comes, and the real block, a duplicate of it, dropped.
            let cache = self.sig_cache();
            validate::check_orphan(&self.spec, &self.chain_id, &block, now_ms, cache)?;
            self.orphans.keep(block, hash, origin, now_ms);
            return Ok(Imported::Orphan);
        };
        // A branch from below the final blocks is refused before anything
        // costly is done for it, whatever it weighs; so is one that grows
        // on an invalid block. A parent below the final blocks is refused
        // before its branch is walked: the walk is as long as the branch.
        // A chain that does not hold the checkpoint has no final blocks.
        let depth = match self.holds_checkpoint().map_err(store_err)? {
            true => self.spec.finality_depth,
            false => u64::MAX,
        };
        let below_finality = |ancestor| Rejection::BelowFinality {
            ancestor,
            head: self.head.height,
            depth,
        };
        if !fork::within_finality(parent.height, self.head.height, depth) {
            return Err(below_finality(parent.height));
        }
        let Some((ancestor_height, mut branch)) = self.branch_to(&parent).map_err(store_err)?
        else {
            return Err(Rejection::UnknownParent);
        };
        if !fork::within_finality(ancestor_height, self.head.height, depth) {
            return Err(below_finality(ancestor_height));
        }
        if self
            .banned_below(&block, ancestor_height)
            .map_err(store_err)?
        {
            return Err(Rejection::Banned);
        }
        let slot = block.header.stamp.slot;
        let checked_on =
            lines::child_slot(&self.store, &self.spec, &parent, slot).map_err(store_err)?;
        let slot_output = checked_on.map(|(_, output)| output);
        let rank = validate::check_header(
            &self.spec,
            &self.chain_id,
            &parent,
            slot_output.as_ref().map_err(|m| *m),
            &block,
            now_ms,
            self.sig_cache(),
        )?;
        // Checked, signature and all: a second header of its key for its
        // slot is evidence of equivocation, refused or not.
        if let Some(e) = self.watch.note(block.signed_header()) {
            tracing::warn!(
                farmer = %hex::encode(&e.farmer_key()[..8]),
                slot = e.slot(),
                "a farmer key signed two blocks for one slot: evidence kept for a block"
            );
        }
        if refuse_beaten && self.beaten(&block, &rank).map_err(store_err)? {
            return Err(Rejection::NotBetter);
        }
        validate::check_txs(&self.spec, &self.chain_id, &block, self.sig_cache())?;
        let own_weight = parent.child_target.weight();
        let child_target = self.child_target(&parent, &block).map_err(store_err)?;
        let lines = parent.branch().child(
            &self.spec.time(),
            hash,
            block.header.stamp.slot,
            checked_on
                .expect("a block whose slot output checked has a line")
                .0,
        );
        self.store
            .insert_block(
                &block,
                rank,
                parent.weight + own_weight,
                child_target,
                &lines,
            )
            .map_err(store_err)?;
        branch.push(Fork {
            hash,
            slot: block.header.stamp.slot,
            rank,
            weight: own_weight,
        });
        let outcome = self
            .choose(ancestor_height, branch, &hash)
            .map_err(store_err)??;
        Ok(outcome)
    }

    /// Whether the canonical chain bans `block`'s key by a block at or
    /// below `ancestor_height`, where the block's branch leaves it: then
    /// its branch bans the key too, and the block is refused before its
    /// proof is checked or it is kept. (A ban the block's own branch makes
    /// above that is found when the branch becomes canonical.)
    fn banned_below(&self, block: &Block, ancestor_height: u64) -> Result<bool, StoreError> {
        let Some(by) = self.store.ban_of(block.header.proof.farmer_key())? else {
            return Ok(false);
        };
        let info = self.store.info(&by)?.ok_or(StoreError::Corrupt("a ban"))?;
        Ok(info.height <= ancestor_height)
    }

    /// The target the child of `block` (on `parent`) must meet: the
    /// parent's, adjusted after the last block of an era by the slots the
    /// era took (from the slot of the block `era_blocks` below it, on its
    /// own branch).
    fn child_target(&self, parent: &Parent, block: &Block) -> Result<Target, StoreError> {
        let height = block.header.height;
        let slot = block.header.stamp.slot;
        let mut era_slots = None;
        if height > 0 && height.is_multiple_of(self.spec.era_blocks) {
            let start = self.slot_on_branch(parent, height - self.spec.era_blocks)?;
            era_slots = Some(slot.saturating_sub(start));
        }
        Ok(next_target(
            self.spec.eras(),
            height,
            parent.child_target,
            || era_slots.expect("asked only at an era's end"),
        ))
    }

    /// The slot of the block at `height` on the branch through `from` (0
    /// for the genesis).
    fn slot_on_branch(&self, from: &Parent, height: u64) -> Result<u64, StoreError> {
        let mut at = *from;
        while at.height > height {
            let info = self
                .store
                .info(&at.hash)?
                .ok_or(StoreError::Corrupt("a block's info"))?;
            at = self
                .parent(&info.parent)?
                .ok_or(StoreError::Corrupt("a block's parent"))?;
        }
        Ok(at.slot)
    }

    /// The blocks from the canonical chain to `parent`, oldest first, as
    /// fork choice weighs them, and the height of the canonical block they
    /// grow from; None when a block on the way is invalid.
    fn branch_to(&self, parent: &Parent) -> Result<Option<(u64, Vec<Fork>)>, StoreError> {
        let genesis = Parent::genesis(&self.spec).hash;
        let mut branch = Vec::new();
        let mut at = parent.hash;
        let ancestor_height = loop {
            if at == genesis {
                break 0;
            }
            let info = self
                .store
                .info(&at)?
                .ok_or(StoreError::Corrupt("a block's parent"))?;
            if info.status == Status::Invalid {
                return Ok(None);
            }
            if self.store.canonical(info.height)? == Some(at) {
                break info.height;
            }
            let below = self
                .parent(&info.parent)?
                .ok_or(StoreError::Corrupt("a block's parent"))?;
            branch.push(Fork {
                hash: at,
                slot: info.slot,
                rank: info.rank,
                weight: info.weight - below.weight,
            });
            at = info.parent;
        };
        branch.reverse();
        Ok(Some((ancestor_height, branch)))
    }

    /// Whether a block of rank `rank` loses to the canonical block of the
    /// same parent at its height.
    fn beaten(&self, block: &Block, rank: &Ranked) -> Result<bool, StoreError> {
        let h = &block.header;
        let Some(canonical) = self.store.canonical(h.height)? else {
            return Ok(false);
        };
        let Some(info) = self.store.info(&canonical)? else {
            return Ok(false);
        };
        let ours = Fork {
            hash: canonical,
            slot: info.slot,
            rank: info.rank,
            weight: 0,
        };
        let theirs = Fork {
            hash: block.hash(),
            slot: h.stamp.slot,
            rank: *rank,
            weight: 0,
        };
        Ok(info.parent == h.parent && !fork::rival_wins(&ours, &theirs))
    }

    /// Blocks that waited for `parent`, now that it is known.
    pub fn take_orphans(&mut self, parent: &[u8; 32]) -> Vec<Block> {
        self.orphans.take(parent)
    }

    /// Blocks kept while their parent is missing.
    pub fn orphan_count(&self) -> usize {
        self.orphans.count()
    }

    /// Orphans kept from `origin`.
    pub fn orphans_from(&self, origin: Origin) -> usize {
        self.orphans.from(origin)
    }

    /// Drops orphans that waited too long ([`ORPHAN_SLOTS`]): what keeps
    /// the pool from holding blocks whose parents never come once their
    /// senders fall silent.
    pub fn expire_orphans(&mut self, now_ms: u64) {
        self.orphans.expire(now_ms);
    }

    /// Imports the next block of `adoption`: the block it began with, then
    /// each block that waited for an imported one as an orphan. None when
    /// none is left. One block a call, so that a caller can let go of the
    /// engine between blocks.
    pub fn import_next(
        &mut self,
        adoption: &mut Adoption,
        now_ms: u64,
    ) -> Option<([u8; 32], Result<Imported, Rejection>)> {
        let block = adoption.queue.pop()?;
        let hash = block.hash();
        let first = std::mem::take(&mut adoption.first);
        if !first {
            if let Ok(Some(Err(missing))) = lines::missing_slot(&self.store, &self.spec, &block) {
                // An orphan made in a slot not reached here: its parent
                // came before its slot did.
                adoption.waiting_for_slot.push(block);
                return Some((hash, Err(Rejection::UnknownSlot(missing))));
            }
        }
        let origin = std::mem::replace(&mut adoption.origin, Origin::LOCAL);
        let outcome = if std::mem::take(&mut adoption.gossiped) {
            self.import_gossiped(block, now_ms, origin)
        } else {
            self.import_from(block, now_ms, origin)
        };
        if matches!(outcome, Ok(Imported::NewHead { .. }) | Ok(Imported::Kept)) {
            adoption.queue.extend(self.take_orphans(&hash));
        }
        Some((hash, outcome))
    }

    /// Imports a block and every block that waited for it, at once
    /// ([`import_next`](Self::import_next) until none is left): each
    /// block's hash and outcome, the first block's first.
    pub fn import_with_orphans(
        &mut self,
        block: Block,
        now_ms: u64,
        gossiped: bool,
    ) -> Vec<([u8; 32], Result<Imported, Rejection>)> {
        let mut adoption = Adoption::new(block, gossiped, Origin::LOCAL);
        std::iter::from_fn(|| self.import_next(&mut adoption, now_ms)).collect()
    }

    /// Fork choice between the canonical chain above `ancestor_height`
    /// and `branch`, which grows from the canonical block there and ends
    /// at `tip`.
    fn choose(
        &mut self,
        ancestor_height: u64,
        branch: Vec<Fork>,
        tip: &[u8; 32],
    ) -> Result<Result<Imported, Rejection>, StoreError> {
        let mut current = Vec::new();
        let mut below = self.canonical_weight(ancestor_height)?;
        for height in ancestor_height + 1..=self.head.height {
            let hash = self
                .store
                .canonical(height)?
                .ok_or(StoreError::Corrupt("a height"))?;
            let info = self
                .store
                .info(&hash)?
                .ok_or(StoreError::Corrupt("a block"))?;
            current.push(Fork {
                hash,
                slot: info.slot,
                rank: info.rank,
                weight: info.weight - below,
            });
            below = info.weight;
        }
        if !self.prefer(ancestor_height, &current, &branch)? {
            return Ok(Ok(Imported::Kept));
        }
        let hashes: Vec<[u8; 32]> = branch.iter().map(|f| f.hash).collect();
        if let Err(refused) = self.store.make_canonical(&hashes)? {
            self.store.mark_invalid(&refused.block)?;
            if refused.block == *tip {
                return Ok(Err(refused.why));
            }
            return Ok(Ok(Imported::Kept));
        }
        let left = current.len();
        self.set_head(tip)?;
        self.put_back_txs(&current);
        Ok(Ok(Imported::NewHead { left }))
    }

    /// Fork choice between the canonical chain above `ancestor_height`
    /// and a branch from there: a chain through the checkpoint wins over
    /// one that is not, whatever they weigh; else [`fork::prefer`].
    fn prefer(
        &self,
        ancestor_height: u64,
        current: &[Fork],
        branch: &[Fork],
    ) -> Result<bool, StoreError> {
        if let Some(cp) = self.checkpoint {
            let holds = self.holds_checkpoint()?;
            let branch_holds = match cp.height.checked_sub(ancestor_height + 1) {
                None => holds,
                Some(i) => branch.get(i as usize).is_some_and(|f| f.hash == cp.hash),
            };
            if holds != branch_holds {
                return Ok(branch_holds);
            }
        }
        Ok(fork::prefer(current, branch))
    }

    /// The chain's weight through the canonical block at `height`.
    fn canonical_weight(&self, height: u64) -> Result<u128, StoreError> {
        if height == 0 {
            return Ok(0);
        }
        let hash = self
            .store
            .canonical(height)?
            .ok_or(StoreError::Corrupt("a height"))?;
        Ok(self
            .store
            .info(&hash)?
            .ok_or(StoreError::Corrupt("a block"))?
            .weight)
    }

    /// The transactions of the blocks that left the canonical chain go
    /// back to the pool, unless the new chain holds them: a write that a
    /// client was told had succeeded must not vanish with its block. So
    /// does their evidence, unless the new chain bans its key too. The
    /// head has moved by then: a store that fails a read here costs the
    /// pool that transaction (logged), not the import its outcome.
    fn put_back_txs(&mut self, left: &[Fork]) {
        for block in left {
            let old = match self.store.block(&block.hash) {
                Ok(Some(old)) => old,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(%e, "a block that left the chain could not be read: its transactions stay out of the pool");
                    continue;
                }
            };
            for e in old.evidence {
                if matches!(self.store.ban_of(&e.farmer_key()), Ok(None)) {
                    self.watch.keep(e);
                }
            }
            for tx in old.txs {
                match self.store.register_version(&tx.owner, &tx.name) {
                    Ok(applied) if tx.version > applied => {
                        self.mempool.put_back(tx.id(&self.chain_id), tx)
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::error!(%e, "a register's version could not be read: a transaction stays out of the pool")
                    }
                }
            }
        }
    }

    fn set_head(&mut self, hash: &[u8; 32]) -> Result<(), StoreError> {
        self.head = self
            .parent(hash)?
            .ok_or(StoreError::Corrupt("the new head"))?;
        // Transactions the new chain holds, or made stale, leave the pool.
        let store = &self.store;
        self.mempool
            .retain_ahead(|owner, name| store.register_version(owner, name).ok());
        // Evidence the chain now carries leaves the pool.
        self.watch
            .retain(|key| matches!(store.ban_of(key), Ok(None)));
        self.settle_lines();
        Ok(())
    }

    /// Forgets the lines of slots of the eras the final blocks settled,
    /// when the final block's era has passed the first era not settled
    /// (a few reads of the store otherwise). The head has moved by then: a
    /// store that fails here costs the pruning (logged), not the import
    /// its outcome.
    fn settle_lines(&mut self) {
        let depth = match self.holds_checkpoint() {
            Ok(true) => self.spec.finality_depth,
            _ => return,
        };
        let Some(final_height) = self.head.height.checked_sub(depth) else {
            return;
        };
        let settled = lines::canonical_at(&self.store, &self.spec, final_height)
            .and_then(|last_final| lines::settle_lines(&self.store, &self.spec, &last_final));
        match settled {
            Ok(pruned) => {
                self.pruned.lines += pruned.lines;
                self.pruned.slots += pruned.slots;
            }
            Err(e) => tracing::error!(%e, "lines of settled eras could not be forgotten"),
        }
    }
}

/// This vault's store failed: its own trouble, not the sender's.
pub(super) fn unable_to_store(e: StoreError) -> Rejection {
    Rejection::Unable {
        what: "store",
        why: e.to_string(),
    }
}
