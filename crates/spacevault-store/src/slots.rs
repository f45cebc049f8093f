//! The proof of time's slots this vault has checked, by line and number:
//! what it resumes its lines of slots from after a restart, what it checks
//! a block's slot output against, and what it sends a peer that is
//! catching up. Written as chain data is (atomic, durable with the next
//! flush): a vault killed before then checks the last few slots again.
//!
//! A slot's key is its line (the era's seed, 32 bytes) then the slot
//! (8 bytes, big-endian), so that a line's slots are one range in order.

use crate::{Store, StoreError, META};
use redb::{ReadableDatabase as _, ReadableTable, TableDefinition};
use spacevault_chain::time::{SlotOutput, FORM_BYTES};

pub(crate) const SLOTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("slots");

/// The highest slot kept on any line, in the meta table.
const HIGHEST: &str = "highest_slot";

fn key(line: &[u8; 32], slot: u64) -> [u8; 40] {
    let mut k = [0; 40];
    k[..32].copy_from_slice(line);
    k[32..].copy_from_slice(&slot.to_be_bytes());
    k
}

impl Store {
    /// Keeps a checked slot's output.
    pub fn put_slot(&self, out: &SlotOutput) -> Result<(), StoreError> {
        let tx = self.begin_chain_write()?;
        tx.open_table(SLOTS)?
            .insert(key(&out.line, out.slot).as_slice(), out.encode().as_slice())?;
        {
            let mut meta = tx.open_table(META)?;
            let highest = read_highest(meta.get(HIGHEST)?.map(|v| v.value().to_vec()))?;
            if out.slot > highest {
                meta.insert(HIGHEST, out.slot.to_le_bytes().as_slice())?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The output of slot `slot` on line `line`, if this store has it.
    pub fn slot_on(&self, line: &[u8; 32], slot: u64) -> Result<Option<SlotOutput>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let found = t.get(key(line, slot).as_slice())?;
        found.map(|v| decode(v.value(), line)).transpose()
    }

    /// The output of slot `slot` on line `line` alone, if kept: what a
    /// line's derivation reads of an era's closing slot
    /// ([`spacevault_chain::time::Branch::line_of_era`]).
    pub fn output_on(
        &self,
        line: &[u8; 32],
        slot: u64,
    ) -> Result<Option<[u8; FORM_BYTES]>, StoreError> {
        Ok(self.slot_on(line, slot)?.map(|o| o.output))
    }

    /// The highest slot this store has on line `line`.
    pub fn last_slot_on(&self, line: &[u8; 32]) -> Result<Option<SlotOutput>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let last = t
            .range(key(line, 0).as_slice()..=key(line, u64::MAX).as_slice())?
            .next_back()
            .transpose()?;
        last.map(|(_, v)| decode(v.value(), line)).transpose()
    }

    /// The highest slot this store has on any line (0 for none).
    pub fn highest_slot(&self) -> Result<u64, StoreError> {
        let tx = self.db.begin_read()?;
        let meta = tx.open_table(META)?;
        let value = meta.get(HIGHEST)?.map(|v| v.value().to_vec());
        read_highest(value)
    }

    /// The encoded outputs of line `line`'s slots `from` onwards, at most
    /// `max`, in order, stopping at the first this store lacks.
    pub fn slots_on(
        &self,
        line: &[u8; 32],
        from: u64,
        max: u32,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(SLOTS)?;
        let mut out = Vec::new();
        let range = t.range(key(line, from).as_slice()..=key(line, u64::MAX).as_slice())?;
        for (want, entry) in (from..).zip(range.take(max as usize)) {
            let (k, bytes) = entry?;
            if k.value() != key(line, want).as_slice() {
                break;
            }
            out.push(bytes.value().to_vec());
        }
        Ok(out)
    }
}

fn read_highest(value: Option<Vec<u8>>) -> Result<u64, StoreError> {
    value.map_or(Ok(0), |v| {
        v.try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| StoreError::Corrupt("the highest slot"))
    })
}

/// A kept slot's output, which must name the line it is kept under.
fn decode(bytes: &[u8], line: &[u8; 32]) -> Result<SlotOutput, StoreError> {
    match SlotOutput::decode(bytes) {
        Ok(out) if out.line == *line => Ok(out),
        _ => Err(StoreError::Corrupt("a slot's output")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::ChainSpec;

    fn out(line: u8, slot: u64) -> SlotOutput {
        SlotOutput {
            slot,
            line: [line; 32],
            output: [slot as u8; 100],
            proof: [!slot as u8; 100],
        }
    }

    #[test]
    fn slots_are_kept_found_and_listed_by_line_until_the_first_gap() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.last_slot_on(&[1; 32]).unwrap(), None);
        assert_eq!(store.highest_slot().unwrap(), 0);
        for s in [1, 2, 3, 5] {
            store.put_slot(&out(1, s)).unwrap();
        }
        // Another line's slots, before and after in key order.
        for s in [2, 9] {
            store.put_slot(&out(0, s)).unwrap();
            store.put_slot(&out(2, s)).unwrap();
        }
        assert_eq!(store.slot_on(&[1; 32], 2).unwrap(), Some(out(1, 2)));
        assert_eq!(store.slot_on(&[1; 32], 4).unwrap(), None);
        assert_eq!(store.slot_on(&[2; 32], 9).unwrap(), Some(out(2, 9)));
        assert_eq!(store.last_slot_on(&[1; 32]).unwrap(), Some(out(1, 5)));
        assert_eq!(store.last_slot_on(&[3; 32]).unwrap(), None);
        assert_eq!(store.highest_slot().unwrap(), 9);
        let listed = store.slots_on(&[1; 32], 1, 10).unwrap();
        assert_eq!(listed, [1, 2, 3].map(|s| out(1, s).encode()));
        assert_eq!(
            store.slots_on(&[1; 32], 2, 1).unwrap(),
            [out(1, 2).encode()]
        );
        assert_eq!(
            store.slots_on(&[1; 32], 4, 10).unwrap(),
            Vec::<Vec<u8>>::new()
        );
        assert_eq!(
            store.slots_on(&[2; 32], 2, 10).unwrap(),
            [out(2, 2).encode()]
        );
        // Kept across a reopen, once flushed.
        store.flush().unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.last_slot_on(&[1; 32]).unwrap(), Some(out(1, 5)));
        assert_eq!(store.highest_slot().unwrap(), 9);
    }

    #[test]
    fn a_slot_kept_under_another_line_than_its_own_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        let tx = store.begin_chain_write().unwrap();
        tx.open_table(SLOTS)
            .unwrap()
            .insert(key(&[1; 32], 4).as_slice(), out(2, 4).encode().as_slice())
            .unwrap();
        tx.commit().unwrap();
        assert!(matches!(
            store.slot_on(&[1; 32], 4),
            Err(StoreError::Corrupt(_))
        ));
    }
}
