//! The store's side of block locators ([`spacevault_chain::locator`]):
//! the locator of its canonical chain, and the canonical blocks after a
//! peer's.

use crate::{head_in, BlockInfo, Store, StoreError, CANONICAL, INFO};
use redb::ReadableDatabase as _;
use spacevault_chain::locator::{locator_heights, MAX_LOCATOR};

impl Store {
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
