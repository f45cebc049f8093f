//! The chain's holder registrations, by owner and height: a history, not
//! only the latest write, since an era's holders are those registered
//! below the era's first height, whatever was written since
//! (`spacevault_chain::holders`). Written and rolled back with the
//! canonical chain in `make_canonical`'s transaction.

use crate::{Store, StoreError};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use spacevault_chain::challenge::Written;
use spacevault_chain::holders::is_registration;
use spacevault_chain::{Block, RegisterTx};

/// Owner (32 bytes) then height (u64, big-endian, so that an owner's
/// writes sort by height) to the transaction that wrote the register at
/// that height (its encoding): a registration, or an empty value when the
/// owner left.
pub(crate) const HOLDERS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("holders");

fn key(owner: &[u8; 32], height: u64) -> [u8; 40] {
    let mut k = [0; 40];
    k[..32].copy_from_slice(owner);
    k[32..].copy_from_slice(&height.to_be_bytes());
    k
}

/// Records the holder register writes of a block joining the canonical
/// chain; of two writes by one owner in a block, the later stands. A
/// leave by an owner with no row (one that never registered: an empty
/// write needs only a signature) is not kept, so that rows cost a proof.
pub(crate) fn record(
    table: &mut redb::Table<&[u8], &[u8]>,
    block: &Block,
) -> Result<(), StoreError> {
    for tx in block.txs.iter().filter(|t| is_registration(t)) {
        let first = key(&tx.owner, 0);
        let last = key(&tx.owner, u64::MAX);
        if tx.value.is_empty()
            && table
                .range(first.as_slice()..=last.as_slice())?
                .next()
                .is_none()
        {
            continue;
        }
        table.insert(
            key(&tx.owner, block.header.height).as_slice(),
            tx.encode().as_slice(),
        )?;
    }
    Ok(())
}

/// Forgets the writes of a block leaving the canonical chain.
pub(crate) fn unrecord(
    table: &mut redb::Table<&[u8], &[u8]>,
    block: &Block,
) -> Result<(), StoreError> {
    for tx in block.txs.iter().filter(|t| is_registration(t)) {
        table.remove(key(&tx.owner, block.header.height).as_slice())?;
    }
    Ok(())
}

/// A holder as the canonical chain registers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    pub owner: [u8; 32],
    /// The height of the block that wrote its registration.
    pub height: u64,
    /// The transaction that registered it: its value is a
    /// `spacevault_chain::holders::Registration`.
    pub tx: RegisterTx,
}

impl Store {
    /// `owner`'s holder register writes on the canonical chain (its
    /// registrations, and its leaves with an empty value), by height.
    pub fn holder_writes(&self, owner: &[u8; 32]) -> Result<Vec<Written>, StoreError> {
        let tx = self.db.begin_read()?;
        let table = tx.open_table(HOLDERS)?;
        let (first, last) = (key(owner, 0), key(owner, u64::MAX));
        table
            .range(first.as_slice()..=last.as_slice())?
            .map(|entry| {
                let (k, v) = entry?;
                self.written(k.value(), v.value(), "a holder registration")
            })
            .collect()
    }

    /// A row of the holders or the disputes table (a key with the height
    /// at bytes 32 to 40, big-endian, and a transaction's encoding) as
    /// what it records.
    pub(crate) fn written(
        &self,
        key: &[u8],
        value: &[u8],
        what: &'static str,
    ) -> Result<Written, StoreError> {
        let height = key
            .get(32..40)
            .and_then(|h| <[u8; 8]>::try_from(h).ok())
            .map(u64::from_be_bytes)
            .ok_or(StoreError::Corrupt(what))?;
        let tx = RegisterTx::decode(value, &self.limits).map_err(|_| StoreError::Corrupt(what))?;
        Ok(Written { height, tx })
    }

    /// Whether `owner`'s latest holder register write below `height` on
    /// the canonical chain is a registration.
    pub fn registered_at(&self, owner: &[u8; 32], height: u64) -> Result<bool, StoreError> {
        let tx = self.db.begin_read()?;
        let table = tx.open_table(HOLDERS)?;
        let (first, below) = (key(owner, 0), key(owner, height));
        let latest = table.range(first.as_slice()..below.as_slice())?.next_back();
        match latest {
            None => Ok(false),
            Some(entry) => {
                let (_, v) = entry?;
                let tx = RegisterTx::decode(v.value(), &self.limits)
                    .map_err(|_| StoreError::Corrupt("a holder registration"))?;
                Ok(!tx.value.is_empty())
            }
        }
    }

    /// The holders registered on the canonical chain in blocks below
    /// `height`: each owner whose latest holder register write there is a
    /// registration, by owner.
    pub fn registered_below(&self, height: u64) -> Result<Vec<Registered>, StoreError> {
        let tx = self.db.begin_read()?;
        let table = tx.open_table(HOLDERS)?;
        let mut out: Vec<Registered> = Vec::new();
        let mut latest: Option<Registered> = None;
        for entry in table.iter()? {
            let (k, v) = entry?;
            let k = k.value();
            let (owner, at) = match (<[u8; 32]>::try_from(&k[..k.len().min(32)]), k.get(32..)) {
                (Ok(owner), Some(at)) if at.len() == 8 => {
                    (owner, u64::from_be_bytes(at.try_into().expect("8 bytes")))
                }
                _ => return Err(StoreError::Corrupt("a holder registration")),
            };
            if latest.as_ref().is_some_and(|l| l.owner != owner) {
                out.extend(latest.take().filter(|l| !l.tx.value.is_empty()));
            }
            if at < height {
                let tx = RegisterTx::decode(v.value(), &self.limits)
                    .map_err(|_| StoreError::Corrupt("a holder registration"))?;
                latest = Some(Registered {
                    owner,
                    height: at,
                    tx,
                });
            }
        }
        out.extend(latest.filter(|l| !l.tx.value.is_empty()));
        Ok(out)
    }
}
