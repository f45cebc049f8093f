//! Producing a block: in a slot after its parent's, with a proof for the
//! slot's challenge that beats the target the parent sets for its child.
//! Nothing waits on other vaults' proofs: a vault whose proof is eligible
//! produces at once, and when several are, the fork choice settles between
//! their blocks. A vault signs at most one block a slot.

use super::*;

/// What the head alone says of a proof of rank `rank` for `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnHead {
    /// It makes no block: the head is of a later slot, or of an earlier
    /// one and its target refuses the proof.
    No,
    /// It may make the head's child: production checks the rest (no block
    /// of this vault in the slot yet, the key not banned, the slot's output
    /// the one on the head's branch).
    Yes,
    /// The head is of this very slot: the proof may make a rival on the
    /// head's parent, which only the store can tell.
    AgainstRival,
}

/// The part of [`Engine::may_produce`] that needs only the head: what a
/// farmer asks, from the head's watch and without the engine's lock, before
/// it hands a proof to production (most proofs of most slots miss the
/// target; their production would cost a blocking thread and the lock for
/// nothing). Production asks it again under the lock. The head may move
/// between the two: a proof refused here that the new head would take
/// needs a head whose target differs, one that closes an era or is on
/// another branch, and the slot's chance is then lost to this vault.
pub fn on_head(head: &Parent, slot: u64, rank: &Ranked) -> OnHead {
    use std::cmp::Ordering::*;
    match head.slot.cmp(&slot) {
        Less if head.child_target.admits(rank) => OnHead::Yes,
        Less | Greater => OnHead::No,
        Equal => OnHead::AgainstRival,
    }
}

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
        match on_head(&self.head, slot, rank) {
            OnHead::No => None,
            // on_head has checked the head's target.
            OnHead::Yes => Some(self.head),
            OnHead::AgainstRival => {
                let head = self.store.info(&self.head.hash).ok()??;
                if !rank.beats(&head.rank) {
                    return None;
                }
                let parent = self.parent(&head.parent).ok()??;
                parent.child_target.admits(rank).then_some(parent)
            }
        }
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
        if *proof.farmer_key() != key.public() {
            return None;
        }
        // A banned key's block would be refused by every vault.
        if !matches!(self.store.ban_of(proof.farmer_key()), Ok(None)) {
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

#[cfg(test)]
mod on_head_tests {
    use super::*;
    use spacevault_chain::eligibility::Target;

    fn head(slot: u64, target: u64) -> Parent {
        Parent {
            hash: [1; 32],
            height: 5,
            slot,
            weight: 0,
            child_target: Target(target),
            line: [0; 32],
            opening: [0; 32],
        }
    }

    #[test]
    fn the_head_alone_tells_a_proof_that_misses_its_target_or_comes_after_it() {
        // A proof whose distance's top 64 bits are 100.
        let mut proof = Ranked {
            distance: [0; 32],
            tiebreak: 0,
            plot_id: [0; 32],
            quality: 0,
        };
        proof.distance[7] = 100;
        // An earlier head: its target decides.
        assert_eq!(on_head(&head(4, 101), 5, &proof), OnHead::Yes);
        assert_eq!(on_head(&head(4, 100), 5, &proof), OnHead::No);
        // A later head: no block in an earlier slot, whatever the target.
        assert_eq!(on_head(&head(6, u64::MAX), 5, &proof), OnHead::No);
        // A head of the same slot: the proof may still make a rival on its
        // parent, whose target the head does not carry.
        assert_eq!(on_head(&head(5, 1), 5, &proof), OnHead::AgainstRival);
        assert_eq!(on_head(&head(5, u64::MAX), 5, &proof), OnHead::AgainstRival);
    }
}
