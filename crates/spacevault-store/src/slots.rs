//! The proof of time's slots this vault has checked, by number: what it
//! resumes its line of slots from after a restart, and what it sends a
//! peer that is catching up. Written as chain data is (atomic, durable
//! with the next flush): a vault killed before then checks the last few
//! slots again.

use crate::{Store, StoreError};
use redb::{ReadableDatabase as _, ReadableTable, TableDefinition};
use spacevault_chain::time::SlotOutput;

pub(crate) const SLOTS: TableDefinition<u64, &[u8]> = TableDefinition::new("slots");

impl Store {
    /// Keeps a checked slot's output.
    pub fn put_slot(&self, out: &SlotOutput) -> Result<(), StoreError> {
        let tx = self.begin_chain_write()?;
        tx.open_table(SLOTS)?
            .insert(out.slot, out.encode().as_slice())?;
        tx.commit()?;
        Ok(())
    }

    /// The output of slot `slot`, if this store has it.
    pub fn slot(&self, slot: u64) -> Result<Option<SlotOutput>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let found = t.get(slot)?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// The highest slot this store has.
    pub fn last_slot(&self) -> Result<Option<SlotOutput>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let last = t.last()?;
        last.map(|(_, v)| decode(v.value())).transpose()
    }

    /// The encoded outputs of slots `from` onwards, at most `max`, in
    /// order, stopping at the first this store lacks.
    pub fn slots_from(&self, from: u64, max: u32) -> Result<Vec<Vec<u8>>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let mut out = Vec::new();
        for (want, entry) in (from..).zip(t.range(from..)?.take(max as usize)) {
            let (slot, bytes) = entry?;
            if slot.value() != want {
                break;
            }
            out.push(bytes.value().to_vec());
        }
        Ok(out)
    }
}

fn decode(bytes: &[u8]) -> Result<SlotOutput, StoreError> {
    SlotOutput::decode(bytes).map_err(|_| StoreError::Corrupt("a slot's output"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::ChainSpec;

    fn out(slot: u64) -> SlotOutput {
        SlotOutput {
            slot,
            output: [slot as u8; 100],
            proof: [!slot as u8; 100],
        }
    }

    #[test]
    fn slots_are_kept_found_and_listed_until_the_first_gap() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.last_slot().unwrap(), None);
        for s in [1, 2, 3, 5] {
            store.put_slot(&out(s)).unwrap();
        }
        assert_eq!(store.slot(2).unwrap(), Some(out(2)));
        assert_eq!(store.slot(4).unwrap(), None);
        assert_eq!(store.last_slot().unwrap(), Some(out(5)));
        let listed = store.slots_from(1, 10).unwrap();
        assert_eq!(listed, [1, 2, 3].map(|s| out(s).encode()));
        assert_eq!(store.slots_from(2, 1).unwrap(), [out(2).encode()]);
        assert_eq!(store.slots_from(4, 10).unwrap(), Vec::<Vec<u8>>::new());
        // Kept across a reopen, once flushed.
        store.flush().unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.last_slot().unwrap(), Some(out(5)));
    }
}
