//! The chain's challenges to holders and their answers
//! (`spacevault_chain::challenge`), by accused holder and height: a
//! history, since whether a challenge went unanswered in its window is
//! read at each era's first block. Written and rolled back with the
//! canonical chain in `make_canonical`'s transaction, as the holder
//! registrations are.

use crate::{Store, StoreError};
use redb::{ReadableDatabase, TableDefinition};
use spacevault_chain::challenge::{dispute_of, Dispute, Written};
use spacevault_chain::{Block, RegisterTx};

/// Accused (32 bytes), height (u64, big-endian), 0 for a challenge or 1
/// for an answer, then the other party's key (32 bytes) to the
/// transaction (its encoding); of two writes of one register in a block,
/// the later stands.
pub(crate) const DISPUTES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("disputes");

fn key(accused: &[u8; 32], height: u64, kind: u8, other: &[u8; 32]) -> [u8; 73] {
    let mut k = [0; 73];
    k[..32].copy_from_slice(accused);
    k[32..40].copy_from_slice(&height.to_be_bytes());
    k[40] = kind;
    k[41..].copy_from_slice(other);
    k
}

fn key_of(tx: &RegisterTx, height: u64) -> Option<[u8; 73]> {
    match dispute_of(tx)? {
        Dispute::Challenge { accused } => Some(key(&accused, height, 0, &tx.owner)),
        Dispute::Answer { accuser } => Some(key(&tx.owner, height, 1, &accuser)),
    }
}

/// Records the challenges and answers of a block joining the canonical
/// chain.
pub(crate) fn record(
    table: &mut redb::Table<&[u8], &[u8]>,
    block: &Block,
) -> Result<(), StoreError> {
    for tx in &block.txs {
        if let Some(k) = key_of(tx, block.header.height) {
            table.insert(k.as_slice(), tx.encode().as_slice())?;
        }
    }
    Ok(())
}

/// Forgets those of a block leaving the canonical chain.
pub(crate) fn unrecord(
    table: &mut redb::Table<&[u8], &[u8]>,
    block: &Block,
) -> Result<(), StoreError> {
    for tx in &block.txs {
        if let Some(k) = key_of(tx, block.header.height) {
            table.remove(k.as_slice())?;
        }
    }
    Ok(())
}

impl Store {
    /// Every challenge to `accused` and answer by it on the canonical
    /// chain in blocks `heights`, by height.
    pub fn disputes_of(
        &self,
        accused: &[u8; 32],
        heights: std::ops::Range<u64>,
    ) -> Result<Vec<Written>, StoreError> {
        if heights.is_empty() {
            return Ok(Vec::new());
        }
        let tx = self.db.begin_read()?;
        let table = tx.open_table(DISPUTES)?;
        let first = key(accused, heights.start, 0, &[0; 32]);
        let last = key(accused, heights.end - 1, u8::MAX, &[0xff; 32]);
        table
            .range(first.as_slice()..=last.as_slice())?
            .map(|entry| {
                let (k, v) = entry?;
                self.written(k.value(), v.value(), "a dispute")
            })
            .collect()
    }
}
