//! The proof of time's slots this vault has checked, by number: what it
//! resumes its line of slots from after a restart, and what it sends a
//! peer that is catching up. Written as chain data is (atomic, durable
//! with the next flush): a vault killed before then checks the last few
//! slots again. With each era's first slot the store keeps the entropy
//! the era began with, so that a vault resumes its line with the entropy
//! it checked, whatever its chain has become since.

use crate::{Store, StoreError};
use redb::{ReadableDatabase as _, ReadableTable, TableDefinition};
use spacevault_chain::time::SlotOutput;

pub(crate) const SLOTS: TableDefinition<u64, &[u8]> = TableDefinition::new("slots");
/// Era number to the 32-byte entropy its first slot was checked with.
pub(crate) const ERAS: TableDefinition<u64, &[u8]> = TableDefinition::new("era_entropy");

impl Store {
    /// Keeps a checked slot's output.
    pub fn put_slot(&self, out: &SlotOutput) -> Result<(), StoreError> {
        let tx = self.begin_chain_write()?;
        tx.open_table(SLOTS)?
            .insert(out.slot, out.encode().as_slice())?;
        tx.commit()?;
        Ok(())
    }

    /// Keeps the checked output of era `era`'s first slot and the entropy
    /// the era began with, at once.
    pub fn put_era_opening(
        &self,
        out: &SlotOutput,
        era: u64,
        entropy: &[u8; 32],
    ) -> Result<(), StoreError> {
        let tx = self.begin_chain_write()?;
        tx.open_table(SLOTS)?
            .insert(out.slot, out.encode().as_slice())?;
        tx.open_table(ERAS)?.insert(era, entropy.as_slice())?;
        tx.commit()?;
        Ok(())
    }

    /// The entropy era `era` began with here, if the store kept it.
    pub fn era_entropy(&self, era: u64) -> Result<Option<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(ERAS)?;
        let found = t.get(era)?;
        found
            .map(|v| {
                v.value()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("an era's entropy"))
            })
            .transpose()
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

    #[test]
    fn an_eras_entropy_is_kept_with_its_first_slot() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.era_entropy(1).unwrap(), None);
        store.put_era_opening(&out(65), 1, &[7; 32]).unwrap();
        assert_eq!(store.era_entropy(1).unwrap(), Some([7; 32]));
        assert_eq!(store.era_entropy(2).unwrap(), None);
        assert_eq!(store.last_slot().unwrap(), Some(out(65)));
    }
}
