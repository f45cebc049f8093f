//! The proof of time's slots this vault has checked, by line and number:
//! what it resumes its lines of slots from after a restart, what it checks
//! a block's slot output against, and what it sends a peer that is
//! catching up. Written as chain data is (atomic, durable with the next
//! flush): a vault killed before then checks the last few slots again.
//!
//! A slot's key is its line (the era's seed, 32 bytes) then the slot
//! (8 bytes, big-endian), so that a line's slots are one range in order.
//! Each line is also listed under its era (`lines`: the era, 8 bytes
//! big-endian, then the line), so that once the chain has settled an
//! era's line the others can be found and forgotten
//! ([`Store::prune_era`]).

use crate::{meta_u64, Store, StoreError, META};
use redb::{ReadableDatabase as _, ReadableTable, TableDefinition, WriteTransaction};
use spacevault_chain::time::{SlotOutput, FORM_BYTES};

pub(crate) const SLOTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("slots");

/// The lines kept, by era.
pub(crate) const LINES: TableDefinition<&[u8], ()> = TableDefinition::new("lines");

/// The highest slot kept on any line, in the meta table.
const HIGHEST: &str = "highest_slot";

/// The first era whose lines [`Store::prune_era`] has not yet been asked
/// to settle, in the meta table.
const PRUNED_TO: &str = "lines_pruned_to";

/// What forgetting an era's other lines took away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub lines: u64,
    pub slots: u64,
}

fn line_key(era: u64, line: &[u8; 32]) -> [u8; 40] {
    let mut k = [0; 40];
    k[..8].copy_from_slice(&era.to_be_bytes());
    k[8..].copy_from_slice(line);
    k
}

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
        let era = self.time.era_of(out.slot);
        tx.open_table(LINES)?
            .insert(line_key(era, &out.line).as_slice(), ())?;
        {
            let mut meta = tx.open_table(META)?;
            let highest = meta_u64(&meta, HIGHEST, "the highest slot")?;
            if out.slot > highest {
                meta.insert(HIGHEST, out.slot.to_le_bytes().as_slice())?;
            }
            // A line kept for an era settled already (fetched again for a
            // branch the vault may take after all, or by a fetch under way
            // while the era was settled) unsettles the era, so that it is
            // forgotten again once no branch can take it.
            let pruned_to = meta_u64(&meta, PRUNED_TO, "the eras pruned")?;
            if era < pruned_to {
                meta.insert(PRUNED_TO, era.to_le_bytes().as_slice())?;
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
        meta_u64(&meta, HIGHEST, "the highest slot")
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

impl Store {
    /// The lines of era `era` this store keeps slots of.
    pub fn lines_of_era(&self, era: u64) -> Result<Vec<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(LINES)?;
        lines_in(&t, era)
    }

    /// The first era [`Store::prune_era`] has not settled (0 for none).
    pub fn lines_pruned_to(&self) -> Result<u64, StoreError> {
        let tx = self.db.begin_read()?;
        let meta = tx.open_table(META)?;
        meta_u64(&meta, PRUNED_TO, "the eras pruned")
    }

    /// Settles era `era`: forgets every line of it but `keep`, with their
    /// slots (with `None`, forgets none: the era's line is not known here),
    /// and records the eras up to it as settled (until a slot of one of
    /// them is kept again). A line the chain can no
    /// longer take (its era's entropy lies below the final blocks) is
    /// never needed again, and lines a peer fed this vault for its
    /// branches would otherwise stay forever.
    pub fn prune_era(&self, era: u64, keep: Option<&[u8; 32]>) -> Result<Pruned, StoreError> {
        let tx = self.begin_chain_write()?;
        let pruned = match keep {
            Some(keep) => forget_lines(&tx, era, keep)?,
            None => Pruned::default(),
        };
        {
            let mut meta = tx.open_table(META)?;
            let before = meta_u64(&meta, PRUNED_TO, "the eras pruned")?;
            let after = before.max(era.saturating_add(1));
            meta.insert(PRUNED_TO, after.to_le_bytes().as_slice())?;
        }
        tx.commit()?;
        Ok(pruned)
    }
}

fn lines_in(
    t: &impl ReadableTable<&'static [u8], ()>,
    era: u64,
) -> Result<Vec<[u8; 32]>, StoreError> {
    let range =
        t.range(line_key(era, &[0; 32]).as_slice()..=line_key(era, &[0xff; 32]).as_slice())?;
    let mut lines = Vec::new();
    for entry in range {
        let (k, _) = entry?;
        let line = k.value()[8..]
            .try_into()
            .map_err(|_| StoreError::Corrupt("a line's key"))?;
        lines.push(line);
    }
    Ok(lines)
}

/// Removes era `era`'s lines but `keep`, and their slots, in `tx`.
fn forget_lines(tx: &WriteTransaction, era: u64, keep: &[u8; 32]) -> Result<Pruned, StoreError> {
    let mut lines = tx.open_table(LINES)?;
    let mut slots = tx.open_table(SLOTS)?;
    let mut pruned = Pruned::default();
    for line in lines_in(&lines, era)? {
        if line == *keep {
            continue;
        }
        let doomed: Vec<Vec<u8>> = slots
            .range(key(&line, 0).as_slice()..=key(&line, u64::MAX).as_slice())?
            .map(|entry| entry.map(|(k, _)| k.value().to_vec()))
            .collect::<Result<_, _>>()?;
        for k in &doomed {
            slots.remove(k.as_slice())?;
        }
        lines.remove(line_key(era, &line).as_slice())?;
        pruned.lines += 1;
        pruned.slots += doomed.len() as u64;
    }
    Ok(pruned)
}

/// Lists every kept slot's line under its era: a store of version 5 kept
/// slots by line without the list.
pub(crate) fn index_lines(
    tx: &WriteTransaction,
    time: &spacevault_chain::time::TimeParams,
) -> Result<(), StoreError> {
    let slots = tx.open_table(SLOTS)?;
    let mut lines = tx.open_table(LINES)?;
    for entry in slots.iter()? {
        let (k, _) = entry?;
        let (line, slot) = split_key(k.value()).ok_or(StoreError::Corrupt("a slot's key"))?;
        lines.insert(line_key(time.era_of(slot), &line).as_slice(), ())?;
    }
    Ok(())
}

/// A slot's key's line and slot.
fn split_key(k: &[u8]) -> Option<([u8; 32], u64)> {
    let line = k.get(..32)?.try_into().ok()?;
    let slot = k.get(32..)?.try_into().ok()?;
    Some((line, u64::from_be_bytes(slot)))
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
    fn settling_an_era_forgets_its_other_lines_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        let s = spec.time().era_slots;
        // Era 1 (slots s + 1 to 2s) on lines 1, 2 and 3; era 2 on line 2.
        for line in [1, 2, 3] {
            for slot in [s + 1, s + 2, 2 * s] {
                store.put_slot(&out(line, slot)).unwrap();
            }
        }
        store.put_slot(&out(2, 2 * s + 1)).unwrap();
        assert_eq!(store.lines_of_era(1).unwrap(), [[1; 32], [2; 32], [3; 32]]);
        assert_eq!(store.lines_of_era(2).unwrap(), [[2; 32]]);
        assert_eq!(store.lines_pruned_to().unwrap(), 0);

        // An era whose line is not known is settled with nothing forgotten.
        assert_eq!(store.prune_era(0, None).unwrap(), Pruned::default());
        assert_eq!(store.lines_pruned_to().unwrap(), 1);

        let pruned = store.prune_era(1, Some(&[2; 32])).unwrap();
        assert_eq!(pruned, Pruned { lines: 2, slots: 6 });
        assert_eq!(store.lines_of_era(1).unwrap(), [[2; 32]]);
        for line in [1, 3] {
            assert_eq!(store.last_slot_on(&[line; 32]).unwrap(), None);
        }
        assert_eq!(store.slots_on(&[2; 32], s + 1, 10).unwrap().len(), 2);
        assert_eq!(store.slot_on(&[2; 32], 2 * s).unwrap(), Some(out(2, 2 * s)));
        assert_eq!(
            store.slot_on(&[2; 32], 2 * s + 1).unwrap(),
            Some(out(2, 2 * s + 1))
        );
        assert_eq!(store.lines_of_era(2).unwrap(), [[2; 32]]);
        assert_eq!(store.lines_pruned_to().unwrap(), 2);
        // Settling an earlier era again never moves the mark back.
        store.prune_era(0, None).unwrap();
        assert_eq!(store.lines_pruned_to().unwrap(), 2);
        // A slot kept again for a settled era unsettles it, and a later
        // era's slot does not.
        store.put_slot(&out(3, 2 * s + 2)).unwrap();
        assert_eq!(store.lines_pruned_to().unwrap(), 2);
        store.put_slot(&out(1, s + 1)).unwrap();
        assert_eq!(store.lines_pruned_to().unwrap(), 1);
        assert_eq!(
            store.prune_era(1, Some(&[2; 32])).unwrap(),
            Pruned { lines: 1, slots: 1 }
        );
        assert_eq!(store.lines_pruned_to().unwrap(), 2);

        store.flush().unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.lines_pruned_to().unwrap(), 2);
        assert_eq!(store.lines_of_era(1).unwrap(), [[2; 32]]);
    }

    #[test]
    fn a_store_of_version_5_lists_its_lines_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ChainSpec::new("slots", 0, 1000);
        let s = spec.time().era_slots;
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        for (line, slot) in [(1, 1), (1, s), (4, s + 1), (5, 3 * s)] {
            store.put_slot(&out(line, slot)).unwrap();
        }
        // As version 5 left it: slots by line, no list of lines.
        let tx = store.db.begin_write().unwrap();
        tx.delete_table(LINES).unwrap();
        tx.open_table(META)
            .unwrap()
            .insert("store_version", 5u32.to_le_bytes().as_slice())
            .unwrap();
        tx.commit().unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("db"), &spec).unwrap();
        assert_eq!(store.lines_of_era(0).unwrap(), [[1; 32]]);
        assert_eq!(store.lines_of_era(1).unwrap(), [[4; 32]]);
        assert_eq!(store.lines_of_era(2).unwrap(), [[5; 32]]);
        assert_eq!(
            store.prune_era(1, Some(&[9; 32])).unwrap(),
            Pruned { lines: 1, slots: 1 }
        );
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
