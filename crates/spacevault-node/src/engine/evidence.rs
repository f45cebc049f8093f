//! Catching equivocation: the headers of the blocks this vault checked,
//! one a farmer key and recent slot, so that a second header of the same
//! key and slot makes evidence; and the evidence waiting to go into a
//! block of this vault's (what it caught, and what peers gossiped). Both
//! are bounded: peers fill them.

use spacevault_chain::{Equivocation, SignedHeader};
use std::collections::BTreeMap;

/// Slots behind the newest a header is remembered for: two blocks of one
/// slot reach every vault within a few slots of each other, or as an
/// orphan that waits at most [`super::ORPHAN_SLOTS`].
pub const SEEN_SLOTS: u64 = super::ORPHAN_SLOTS;
/// Headers remembered, at most: each came with an eligible proof, so even
/// a flood of them costs its senders their space.
pub const MAX_SEEN: usize = 4096;
/// Pieces of evidence waiting for a block, at most (one a farmer key).
pub const MAX_PENDING_EVIDENCE: usize = 64;

#[derive(Default)]
pub struct Watch {
    /// The first header checked for each (slot, farmer key).
    seen: BTreeMap<(u64, [u8; 32]), SignedHeader>,
    /// Evidence for a block, by farmer key.
    pending: BTreeMap<[u8; 32], Equivocation>,
    /// Evidence this vault caught that it has not yet gossiped.
    caught: Vec<Equivocation>,
}

impl Watch {
    /// Notes a header whose block passed its checks; the evidence, when the
    /// same key signed another header for the same slot and no evidence
    /// against the key waits already (a key that signs a slot's header
    /// over and over with other bodies makes one piece, not one each).
    /// The evidence is kept for a block and for gossip.
    pub fn note(&mut self, header: SignedHeader) -> Option<Equivocation> {
        let key = (header.header.stamp.slot, *header.header.proof.farmer_key());
        if let Some(first) = self.seen.get(&key) {
            if self.pending.contains_key(&key.1) {
                return None;
            }
            let e = Equivocation::of(first.clone(), header)?;
            if !self.keep(e.clone()) {
                return None;
            }
            self.caught.push(e.clone());
            return Some(e);
        }
        self.seen.insert(key, header);
        let newest = self.seen.last_key_value().map_or(0, |((s, _), _)| *s);
        let oldest_kept = newest.saturating_sub(SEEN_SLOTS);
        while let Some((&(slot, _), _)) = self.seen.first_key_value() {
            if slot >= oldest_kept && self.seen.len() <= MAX_SEEN {
                break;
            }
            self.seen.pop_first();
        }
        None
    }

    /// Keeps `e` for a block; false when evidence against its key waits
    /// already, or the pool is full.
    pub fn keep(&mut self, e: Equivocation) -> bool {
        let key = e.farmer_key();
        if self.pending.contains_key(&key) || self.pending.len() >= MAX_PENDING_EVIDENCE {
            return false;
        }
        self.pending.insert(key, e);
        true
    }

    /// Whether `key` signed a header this vault checked in the slots it
    /// remembers: gossiped evidence is taken only against such keys, so
    /// that evidence against keys that never made a block (made up by
    /// the thousand, for nothing) cannot fill the pool.
    pub fn knows(&self, key: &[u8; 32]) -> bool {
        self.seen.keys().any(|(_, k)| k == key)
    }

    /// Whether evidence against `key` waits for a block.
    pub fn is_pending(&self, key: &[u8; 32]) -> bool {
        self.pending.contains_key(key)
    }

    /// The evidence waiting, in the order of its keys.
    pub fn pending(&self) -> impl Iterator<Item = &Equivocation> {
        self.pending.values()
    }

    /// Drops the evidence `keep` says is no longer wanted (its key banned).
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8; 32]) -> bool) {
        self.pending.retain(|key, _| keep(key));
    }

    /// The evidence caught since the last call, for gossip.
    pub fn take_caught(&mut self) -> Vec<Equivocation> {
        std::mem::take(&mut self.caught)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::{BlockHeader, ChainProof, Keypair, Stamp};

    fn header(key: &Keypair, slot: u64, parent: u8) -> SignedHeader {
        let header = BlockHeader {
            chain_id: [1; 32],
            height: 1,
            parent: [parent; 32],
            stamp: Stamp {
                slot,
                output: [0; spacevault_chain::time::FORM_BYTES],
            },
            proof: ChainProof::plain(key.public(), [2; 32], 16, 1),
            body_root: [0; 32],
        };
        spacevault_chain::Block::sign(key, header, vec![], vec![]).signed_header()
    }

    #[test]
    fn a_second_header_of_one_key_and_slot_is_caught_once_and_others_are_not() {
        let (a, b) = (
            Keypair::from_secret(&[1; 32]),
            Keypair::from_secret(&[2; 32]),
        );
        let mut watch = Watch::default();
        assert!(watch.note(header(&a, 5, 0)).is_none());
        // The same header again, another key in the slot, the key in
        // another slot: none of them equivocation.
        assert!(watch.note(header(&a, 5, 0)).is_none());
        assert!(watch.note(header(&b, 5, 1)).is_none());
        assert!(watch.note(header(&a, 6, 1)).is_none());
        let e = watch.note(header(&a, 5, 1)).expect("caught");
        assert_eq!((e.farmer_key(), e.slot()), (a.public(), 5));
        assert!(spacevault_chain::validate::check_equivocation(&[1; 32], &e, None).is_ok());
        assert_eq!(watch.take_caught(), vec![e.clone()]);
        assert!(watch.take_caught().is_empty());
        // Kept already; a third header of the key's for the slot makes
        // no second piece.
        assert!(watch.is_pending(&a.public()) && !watch.keep(e));
        assert!(watch.note(header(&a, 5, 2)).is_none());
        assert!(watch.take_caught().is_empty());
        assert!(watch.knows(&a.public()) && watch.knows(&b.public()));
        assert!(!watch.knows(&Keypair::from_secret(&[3; 32]).public()));
    }

    #[test]
    fn what_it_remembers_is_bounded_by_slots_and_count() {
        let key = Keypair::from_secret(&[1; 32]);
        let mut watch = Watch::default();
        watch.note(header(&key, 1, 0));
        watch.note(header(&key, 1 + SEEN_SLOTS + 1, 0));
        // Slot 1 is forgotten: a second header for it is no longer caught.
        assert!(watch.note(header(&key, 1, 1)).is_none());
        assert_eq!(watch.seen.len(), 1);
        let mut many = Watch::default();
        for i in 0..(MAX_SEEN as u64 + 10) {
            let k = Keypair::from_secret(&[(i % 200) as u8 + 1; 32]);
            many.note(header(&k, 10_000 + i / 200, 0));
        }
        assert!(many.seen.len() <= MAX_SEEN);
        let mut pool = Watch::default();
        for i in 0..(MAX_PENDING_EVIDENCE + 5) {
            let mut secret = [0u8; 32];
            secret[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
            let k = Keypair::from_secret(&secret);
            let e = Equivocation::of(header(&k, 3, 0), header(&k, 3, 1)).unwrap();
            pool.keep(e);
        }
        assert_eq!(pool.pending().count(), MAX_PENDING_EVIDENCE);
    }
}
