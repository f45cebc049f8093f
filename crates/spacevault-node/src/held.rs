//! The blocks a vault holds until its line of slots reaches theirs: each
//! once, so many in all and so many a sender, so that one sender cannot
//! take the room of the others.

use crate::engine::Origin;

/// Blocks held until this vault's line reaches their slot, at most, and
/// from one sender: past them, such a block is ignored (a sync brings it
/// later), and one sender cannot take the room of the others.
pub const MAX_EARLY_BLOCKS: usize = 64;
pub const MAX_EARLY_BLOCKS_PER_ORIGIN: usize = 8;

/// The blocks held for their slots: each once, and a share a sender.
#[derive(Default)]
pub struct Held {
    hashes: std::collections::HashSet<[u8; 32]>,
    per_origin: std::collections::HashMap<Origin, usize>,
}

impl Held {
    /// Takes a place for block `hash` from `origin`, or says why not.
    pub(crate) fn take(&mut self, hash: [u8; 32], origin: Origin) -> Result<(), &'static str> {
        if self.hashes.contains(&hash) {
            return Err("held already");
        }
        if self.hashes.len() >= MAX_EARLY_BLOCKS {
            return Err("early_full");
        }
        let share = self.per_origin.entry(origin).or_default();
        if *share >= MAX_EARLY_BLOCKS_PER_ORIGIN {
            return Err("early_full");
        }
        *share += 1;
        self.hashes.insert(hash);
        Ok(())
    }

    pub(crate) fn give_back(&mut self, hash: &[u8; 32], origin: Origin) {
        self.hashes.remove(hash);
        if let Some(share) = self.per_origin.get_mut(&origin) {
            *share -= 1;
            if *share == 0 {
                self.per_origin.remove(&origin);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: usize) -> [u8; 32] {
        let mut h = [0; 32];
        h[..8].copy_from_slice(&(n as u64).to_le_bytes());
        h
    }

    #[test]
    fn each_block_once_a_share_a_sender_and_so_many_in_all() {
        let mut held = Held::default();
        let flooder = Origin([1; 32]);
        for n in 0..MAX_EARLY_BLOCKS_PER_ORIGIN {
            held.take(hash(n), flooder).unwrap();
        }
        assert_eq!(held.take(hash(99), flooder), Err("early_full"));
        // Another sender still has room; the same block is held once.
        let other = Origin([2; 32]);
        assert_eq!(held.take(hash(0), other), Err("held already"));
        held.take(hash(100), other).unwrap();
        // A place given back is free again.
        held.give_back(&hash(0), flooder);
        held.take(hash(0), flooder).unwrap();
        // In all, so many, whoever sends.
        let mut n = 1000;
        let mut senders = 3u8;
        while held.hashes.len() < MAX_EARLY_BLOCKS {
            let sender = Origin([senders; 32]);
            if held.take(hash(n), sender).is_err() {
                senders += 1;
            }
            n += 1;
        }
        assert_eq!(held.take(hash(n), Origin([250; 32])), Err("early_full"));
    }
}
