//! The receipts other holders signed for the copies this vault sent them,
//! kept to challenge them on the chain with ([`crate::disputes`]), and
//! the holders it challenged lately: bounded, whatever the holders.

use spacevault_chain::Receipt;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Receipts kept a holder: the newest.
const RECEIPTS_PER_HOLDER: usize = 8;

/// Holders whose receipts are kept at most (a few KiB each): a vault
/// meets as many holders as the chain registers.
const MAX_HOLDERS: usize = 4096;

/// The receipts this vault holds from other holders, and the holders it
/// challenged lately.
#[derive(Default)]
pub struct Book {
    receipts: HashMap<[u8; 32], VecDeque<Receipt>>,
    challenged: HashMap<[u8; 32], Instant>,
}

impl Book {
    /// Keeps a receipt whose signature was checked.
    pub(crate) fn keep(&mut self, receipt: Receipt) {
        if !self.receipts.contains_key(&receipt.holder) && self.receipts.len() >= MAX_HOLDERS {
            // Any other holder's go: the book stays bounded, and a holder
            // audited often sends receipts again with every repair.
            let Some(&evicted) = self.receipts.keys().next() else {
                return;
            };
            self.receipts.remove(&evicted);
        }
        let kept = self.receipts.entry(receipt.holder).or_default();
        kept.retain(|r| r.address != receipt.address);
        if kept.len() >= RECEIPTS_PER_HOLDER {
            kept.pop_front();
        }
        kept.push_back(receipt);
    }

    /// The receipt to challenge `holder` with: its receipt for `address`
    /// if kept, else its newest, of era `min_era` or later.
    pub(crate) fn pick(
        &self,
        holder: &[u8; 32],
        address: &[u8; 32],
        min_era: u64,
    ) -> Option<Receipt> {
        let kept = self.receipts.get(holder)?;
        kept.iter()
            .rev()
            .filter(|r| r.era >= min_era)
            .find(|r| r.address == *address)
            .or_else(|| kept.iter().rev().find(|r| r.era >= min_era))
            .cloned()
    }

    /// Whether `holder` was challenged within `cooldown`.
    pub(crate) fn challenged_lately(&self, holder: &[u8; 32], cooldown: Duration) -> bool {
        self.challenged
            .get(holder)
            .is_some_and(|at| at.elapsed() < cooldown)
    }
}

impl Book {
    /// Keeps `receipt` if `asked` signed it on chain `chain_id` (its
    /// check counted in the meter of the caller's scope).
    pub(crate) fn keep_if_signed(
        &mut self,
        asked: &[u8; 32],
        receipt: &Receipt,
        chain_id: &[u8; 32],
    ) {
        if receipt.holder == *asked && receipt.verify(chain_id) {
            self.keep(receipt.clone());
        }
    }

    /// Notes a challenge to `holder` now, forgetting those older than
    /// `cooldown` when the note grows past the holders kept.
    pub(crate) fn challenging(&mut self, holder: [u8; 32], cooldown: Duration) {
        self.challenged.insert(holder, Instant::now());
        if self.challenged.len() > MAX_HOLDERS {
            self.challenged.retain(|_, at| at.elapsed() < cooldown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::Keypair;

    fn receipt(holder: &Keypair, era: u64, address: u8) -> Receipt {
        Receipt::sign(holder, &[1; 32], era, &[address; 32])
    }

    #[test]
    fn the_book_keeps_the_newest_receipts_of_each_holder_and_picks_the_blob_s_first() {
        let (x, y) = (
            Keypair::from_secret(&[1; 32]),
            Keypair::from_secret(&[2; 32]),
        );
        let mut book = Book::default();
        for a in 0..10u8 {
            book.keep(receipt(&x, 3, a));
        }
        assert_eq!(book.receipts[&x.public()].len(), RECEIPTS_PER_HOLDER);
        // The blob's own receipt first; else the newest of the eras asked.
        assert_eq!(
            book.pick(&x.public(), &[5; 32], 2).unwrap().address,
            [5; 32]
        );
        assert_eq!(
            book.pick(&x.public(), &[0; 32], 2).unwrap().address,
            [9; 32],
            "0 was dropped"
        );
        assert_eq!(book.pick(&x.public(), &[5; 32], 4), None, "too old");
        assert_eq!(book.pick(&y.public(), &[5; 32], 0), None);
        // A newer receipt for the same blob replaces the older.
        book.keep(receipt(&x, 4, 5));
        assert_eq!(book.pick(&x.public(), &[5; 32], 0).unwrap().era, 4);
        assert_eq!(book.receipts[&x.public()].len(), RECEIPTS_PER_HOLDER);
    }

    #[test]
    fn the_book_is_bounded_in_holders() {
        let mut book = Book::default();
        for i in 0..MAX_HOLDERS as u32 + 10 {
            let mut secret = [0; 32];
            secret[..4].copy_from_slice(&i.to_le_bytes());
            book.keep(receipt(&Keypair::from_secret(&secret), 1, 1));
        }
        assert_eq!(book.receipts.len(), MAX_HOLDERS);
    }
}
