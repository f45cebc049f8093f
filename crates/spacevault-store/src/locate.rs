//! The store's side of block locators ([`spacevault_chain::locator`]):
//! the locator of its canonical chain, and the canonical blocks after a
//! peer's.

use crate::{head_in, BlockInfo, Store, StoreError, CANONICAL, INFO};
use redb::ReadableDatabase as _;
use spacevault_chain::locator::{locator_heights, MAX_LOCATOR};

/// What the canonical chain holds at a slot, as an era's entropy reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtSlot {
    /// The last canonical block at or before the slot; none when only the
    /// genesis is.
    pub block: Option<[u8; 32]>,
    /// The slot of the canonical head (0 at the genesis): past the slot
    /// asked, the chain has moved on from it and its block is settled.
    pub head_slot: u64,
}

impl Store {
    /// The last canonical block at or before `slot`, and the head's slot,
    /// read at once. Slots rise along the chain, so heights are searched
    /// by halves.
    pub fn canonical_at_slot(&self, slot: u64) -> Result<AtSlot, StoreError> {
        let tx = self.db.begin_read()?;
        let Some((head, height)) = head_in(&tx)? else {
            return Ok(AtSlot {
                block: None,
                head_slot: 0,
            });
        };
        let canonical = tx.open_table(CANONICAL)?;
        let info = tx.open_table(INFO)?;
        let at = |h: u64| -> Result<([u8; 32], u64), StoreError> {
            let hash: [u8; 32] = canonical
                .get(h)?
                .ok_or(StoreError::Corrupt("a canonical height"))?
                .value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("a canonical hash"))?;
            let found = info
                .get(hash.as_slice())?
                .ok_or(StoreError::Corrupt("a canonical block's info"))?;
            Ok((hash, BlockInfo::decode(found.value())?.slot))
        };
        let head_slot = match info.get(head.as_slice())? {
            Some(v) => BlockInfo::decode(v.value())?.slot,
            None => return Err(StoreError::Corrupt("the head's block")),
        };
        // The greatest height in 1..=height whose slot is at most `slot`:
        // `low` always qualifies (0 standing for the genesis), `high + 1`
        // never does.
        let (mut low, mut high) = (0u64, height);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if at(mid)?.1 <= slot {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let block = match low {
            0 => None,
            h => Some(at(h)?.0),
        };
        Ok(AtSlot { block, head_slot })
    }

    /// The locator of this store's canonical chain, as of its head.
    pub fn locator(&self) -> Result<Vec<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let Some((_, head)) = head_in(&tx)? else {
            return Ok(Vec::new());
        };
        let canonical = tx.open_table(CANONICAL)?;
        let mut hashes = Vec::new();
        for height in locator_heights(head) {
            if let Some(hash) = canonical.get(height)? {
                let hash = hash.value().try_into();
                hashes.push(hash.map_err(|_| StoreError::Corrupt("a canonical hash"))?);
            }
        }
        Ok(hashes)
    }

    /// The canonical blocks after the first hash of `locator` that is
    /// canonical here (from height 1 when none is), as
    /// [`Store::canonical_blocks`] gives them. At most [`MAX_LOCATOR`]
    /// hashes are looked at.
    pub fn canonical_after(
        &self,
        locator: &[[u8; 32]],
        max: u32,
        max_bytes: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let tx = self.db.begin_read()?;
        let from = {
            let info = tx.open_table(INFO)?;
            let canonical = tx.open_table(CANONICAL)?;
            let mut from = 1;
            for hash in locator.iter().take(MAX_LOCATOR) {
                let Some(known) = info.get(hash.as_slice())? else {
                    continue;
                };
                let height = BlockInfo::decode(known.value())?.height;
                if canonical
                    .get(height)?
                    .is_some_and(|c| c.value() == hash.as_slice())
                {
                    from = height + 1;
                    break;
                }
            }
            from
        };
        self.canonical_blocks_in(&tx, from, max, max_bytes)
    }
}
