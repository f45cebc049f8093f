//! Producing a block: in a slot after its parent's, with a proof for the
//! slot's challenge that beats the target the parent sets for its child.
//! Nothing waits on other vaults' proofs: a vault whose proof is eligible
//! produces at once, and when several are, the fork choice settles between
//! their blocks. A vault signs at most one block a slot.

use super::*;

impl Engine {
    /// The block a proof of rank `rank` for `slot`'s challenge would make a
    /// child of, if it may make one: the head, when the head's slot is
    /// earlier; the head's parent, when the head was made in this very
    /// slot and this proof beats the head's (the head is a rival in the
    /// slot, whose block reached this vault first: a better proof must not
    /// lose for arriving second). None when this vault produced in this
    /// slot or a later one already, or the proof misses the parent's
    /// target.
    fn parent_for(&self, slot: u64, rank: &Ranked) -> Option<Parent> {
        if slot <= self.produced_slot {
            return None;
        }
        let parent = if self.head.slot < slot {
            self.head
        } else if self.head.slot == slot {
            let head = self.store.info(&self.head.hash).ok()??;
            if !rank.beats(&head.rank) {
                return None;
            }
            self.parent(&head.parent).ok()??
        } else {
            return None;
        };
        parent.child_target.admits(rank).then_some(parent)
    }

    /// Whether a proof of rank `rank` for `slot`'s challenge would make a
    /// block now (see [`parent_for`](Self::parent_for)).
    pub fn may_produce(&self, slot: u64, rank: &Ranked) -> bool {
        self.parent_for(slot, rank).is_some()
    }

    /// Produces a block in `stamp`'s slot from `proof` (of rank `rank`, for
    /// the slot's challenge), if [`may_produce`](Self::may_produce) allows
    /// it, the proof is `key`'s and the chain does not ban the key: on the
    /// head, with the pending transactions that apply and the evidence
    /// whose keys the chain does not ban yet; or, against a worse rival of
    /// the same slot, on the head's parent with neither (those pending
    /// apply on the head). The slot is then spent: no second block is
    /// signed in it.
    pub fn produce(
        &mut self,
        key: &Keypair,
        stamp: Stamp,
        proof: ChainProof,
        rank: &Ranked,
    ) -> Option<Block> {
        if proof.farmer_key != key.public() {
            return None;
        }
        // A banned key's block would be refused by every vault.
        if !matches!(self.store.ban_of(&proof.farmer_key), Ok(None)) {
            return None;
        }
        let parent = self.parent_for(stamp.slot, rank)?;
        // The stamp must be the slot's on the parent's branch: a head that
        // moved to another line of slots since the farmer looked its
        // output up would refuse the block, its slot spent for nothing.
        let on_branch = super::lines::child_slot(&self.store, &self.spec, &parent, stamp.slot);
        if !matches!(on_branch, Ok(Ok((_, output))) if output == stamp.output) {
            return None;
        }
        self.produced_slot = stamp.slot;
        let (txs, evidence) = if parent.hash == self.head.hash {
            (self.pending_txs(), self.pending_evidence())
        } else {
            (Vec::new(), Vec::new())
        };
        let header = spacevault_chain::BlockHeader {
            chain_id: self.chain_id,
            height: parent.height + 1,
            parent: parent.hash,
            stamp,
            proof,
            body_root: [0; 32],
        };
        Some(Block::sign(key, header, txs, evidence))
    }

    /// The last slot this vault produced a block in (or had reached when it
    /// opened).
    pub fn produced_slot(&self) -> u64 {
        self.produced_slot
    }
}
