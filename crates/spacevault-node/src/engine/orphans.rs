//! Blocks whose parent is not known yet, kept until it comes. Peers fill
//! this pool, so everything about it is bounded: the whole pool, each
//! sender's share, and how long a block waits. A full pool makes room by
//! dropping the oldest block of whoever holds the most, so that one
//! flooding peer (or a few) cannot push out the orphans honest peers send.
//! At most [`MAX_ORPHANS`] blocks: a plain list, scanned.

use spacevault_chain::Block;

/// Orphans kept, at most.
pub const MAX_ORPHANS: usize = 512;
/// Orphans kept from one sender, at most: past it, the sender's oldest
/// makes room for its newest.
pub const MAX_ORPHANS_PER_ORIGIN: usize = 64;
/// Slots an orphan waits for its parent, at most: longer than any sync
/// takes to bring a parent, and short enough that a pool filled with
/// blocks whose parents never come empties itself.
pub const ORPHAN_SLOTS: u64 = 64;

/// Who sent a block: a peer (a digest of its id), or this vault itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(pub [u8; 32]);

impl Origin {
    /// Blocks of this vault's own, or read from its disk.
    pub const LOCAL: Origin = Origin([0; 32]);
}

struct Waiting {
    block: Block,
    hash: [u8; 32],
    origin: Origin,
    received_ms: u64,
}

/// The pool, oldest first.
pub struct Orphans {
    waiting: Vec<Waiting>,
    max_age_ms: u64,
}

impl Orphans {
    pub fn new(slot_ms: u64) -> Orphans {
        Orphans {
            waiting: Vec::new(),
            max_age_ms: slot_ms.saturating_mul(ORPHAN_SLOTS),
        }
    }

    /// Keeps `block` (of hash `hash`) until its parent comes, making room
    /// as the limits say.
    pub fn keep(&mut self, block: Block, hash: [u8; 32], origin: Origin, now_ms: u64) {
        self.expire(now_ms);
        if self.waiting.iter().any(|w| w.hash == hash) {
            return;
        }
        if self.from(origin) >= MAX_ORPHANS_PER_ORIGIN {
            self.drop_oldest_of(origin);
        } else if self.waiting.len() >= MAX_ORPHANS {
            let fullest = self.fullest().expect("a full pool has senders");
            self.drop_oldest_of(fullest);
        }
        self.waiting.push(Waiting {
            block,
            hash,
            origin,
            received_ms: now_ms,
        });
    }

    /// The blocks that waited for `parent`, oldest first, out of the pool.
    pub fn take(&mut self, parent: &[u8; 32]) -> Vec<Block> {
        let (taken, kept) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| w.block.header.parent == *parent);
        self.waiting = kept;
        taken.into_iter().map(|w: Waiting| w.block).collect()
    }

    /// Drops the blocks that have waited longer than [`ORPHAN_SLOTS`]
    /// slots (or that came "after" `now_ms`, for a clock set back).
    pub fn expire(&mut self, now_ms: u64) {
        let max_age = self.max_age_ms;
        self.waiting
            .retain(|w| now_ms >= w.received_ms && now_ms - w.received_ms <= max_age);
    }

    /// Orphans kept.
    pub fn count(&self) -> usize {
        self.waiting.len()
    }

    /// Orphans kept from `origin`.
    pub fn from(&self, origin: Origin) -> usize {
        self.waiting.iter().filter(|w| w.origin == origin).count()
    }

    /// The sender holding the most orphans (the first of those tied, in
    /// the order of their ids, so that the choice is deterministic).
    fn fullest(&self) -> Option<Origin> {
        let mut counts: std::collections::BTreeMap<Origin, usize> = Default::default();
        for w in &self.waiting {
            *counts.entry(w.origin).or_default() += 1;
        }
        let most = *counts.values().max()?;
        counts.into_iter().find(|&(_, n)| n == most).map(|(o, _)| o)
    }

    fn drop_oldest_of(&mut self, origin: Origin) {
        if let Some(i) = self.waiting.iter().position(|w| w.origin == origin) {
            self.waiting.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::{ChainProof, Keypair};

    const SLOT_MS: u64 = 1000;

    fn orphan(parent_n: u32) -> (Block, [u8; 32]) {
        let producer = Keypair::from_secret(&[5; 32]);
        let mut parent = [0xee; 32];
        parent[..4].copy_from_slice(&parent_n.to_le_bytes());
        let proof = ChainProof::plain(producer.public(), [1; 32], 16, 1);
        let stamp = spacevault_chain::Stamp {
            slot: 5,
            output: [5; spacevault_chain::time::FORM_BYTES],
        };
        let block = Block::produce(&producer, [3; 32], 2, parent, stamp, proof, vec![]);
        let hash = block.hash();
        (block, hash)
    }

    fn origin(n: u8) -> Origin {
        Origin([n; 32])
    }

    #[test]
    fn one_sender_keeps_at_most_its_share_its_newest_replacing_its_oldest() {
        let mut pool = Orphans::new(SLOT_MS);
        for i in 0..MAX_ORPHANS_PER_ORIGIN as u32 + 10 {
            let (b, h) = orphan(i);
            pool.keep(b, h, origin(1), 100);
        }
        assert_eq!(pool.count(), MAX_ORPHANS_PER_ORIGIN);
        assert!(
            pool.take(&orphan(9).0.header.parent).is_empty(),
            "the oldest went"
        );
        let newest = orphan(MAX_ORPHANS_PER_ORIGIN as u32 + 9).0;
        assert_eq!(pool.take(&newest.header.parent), vec![newest]);
    }

    #[test]
    fn a_full_pool_drops_from_the_sender_holding_most_and_keeps_the_others() {
        let mut pool = Orphans::new(SLOT_MS);
        let mut n = 0u32;
        let mut next = || {
            n += 1;
            orphan(n)
        };
        // Eight flooding senders fill the pool to the brim.
        for s in 0..(MAX_ORPHANS / MAX_ORPHANS_PER_ORIGIN) as u8 {
            for _ in 0..MAX_ORPHANS_PER_ORIGIN {
                let (b, h) = next();
                pool.keep(b, h, origin(100 + s), 100);
            }
        }
        assert_eq!(pool.count(), MAX_ORPHANS);
        // An honest peer's orphans are kept, each at a flooder's cost.
        let mut honest = Vec::new();
        for _ in 0..5 {
            let (b, h) = next();
            honest.push(b.clone());
            pool.keep(b, h, origin(1), 200);
        }
        assert_eq!(pool.count(), MAX_ORPHANS);
        assert_eq!(pool.from(origin(1)), 5);
        for b in honest {
            assert_eq!(pool.take(&b.header.parent), vec![b]);
        }
    }

    #[test]
    fn orphans_expire_and_duplicates_are_kept_once() {
        let mut pool = Orphans::new(SLOT_MS);
        let (a, ha) = orphan(1);
        pool.keep(a.clone(), ha, origin(1), 1_000);
        pool.keep(a.clone(), ha, origin(2), 1_001);
        assert_eq!(pool.count(), 1);
        pool.expire(1_000 + ORPHAN_SLOTS * SLOT_MS);
        assert_eq!(pool.count(), 1, "not yet too old");
        pool.expire(1_001 + ORPHAN_SLOTS * SLOT_MS);
        assert_eq!(pool.count(), 0, "too old");
        // Kept at a time later than now (the clock went back): dropped.
        pool.keep(a.clone(), ha, origin(1), 5_000);
        pool.expire(4_999);
        assert_eq!(pool.count(), 0);
    }
}
