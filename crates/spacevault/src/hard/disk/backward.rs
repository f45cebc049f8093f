//! Pruning and renumbering through disk. Which entries some top entry
//! reaches is a bit a level, kept in memory (an eighth of a byte an
//! entry). Renumbering level i needs, for each kept entry, the new
//! positions of its two children, which lie next to each other in the
//! level below: the entries are spilled by left child, and each spill
//! file reads the slice of the level below's positions it spans. The
//! values are then spilled by their high bits (they are near uniform),
//! sorted, ranked, and the ranks scattered back to the entries by a spill
//! on the entry; the top level's values are spilled by prefix instead and
//! go straight to the encoder.

use super::forward::{pointers, position, SortedLevel, BACK, POS, TOP_BACK};
use super::temp::{get, get64, put, Spill, TempFile};
use super::Work;
use crate::hard::construction::top_prefix;
use crate::hard::park::{ParkSummary, PARK_ENTRIES};
use crate::hard::plot::stored_value;
use crate::hard::sort::sort_by;
use crate::plot::PlotError;

/// Bytes of a stored value: `2 · line point + 1` of positions below 2^34.
pub(super) const VALUE: usize = 9;

/// Bits needed for numbers below `n`.
fn bits_below(n: u64) -> u32 {
    64 - n.saturating_sub(1).leading_zeros()
}

/// Bit `i` of a level's bitmap.
fn bit(map: &[u64], i: u64) -> bool {
    map[(i / 64) as usize] >> (i % 64) & 1 == 1
}

fn set(map: &mut [u64], i: u64) {
    map[(i / 64) as usize] |= 1 << (i % 64);
}

/// The records of a pointers file, `piece` bytes at a time.
fn for_each_pointer(
    back: &TempFile,
    record: usize,
    mut f: impl FnMut(u64, (u64, u64, u64)) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let mut e = 0u64;
    for piece in back.pieces((1 << 20) * record as u64) {
        for r in piece?.chunks_exact(record) {
            f(e, pointers(r))?;
            e += 1;
        }
    }
    Ok(())
}

/// For levels 2 to the one below the top, which entries a top entry
/// reaches, as bitmaps (level 1's, index 0, is left empty: its entries
/// are not stored, so nothing asks).
pub(super) fn reached(levels: &[SortedLevel]) -> Result<Vec<Vec<u64>>, PlotError> {
    let top = levels.len() - 1;
    let mut maps: Vec<Vec<u64>> = levels[..top]
        .iter()
        .enumerate()
        .map(|(i, l)| {
            vec![
                0u64;
                if i == 0 {
                    0
                } else {
                    l.count.div_ceil(64) as usize
                }
            ]
        })
        .collect();
    for i in (2..=top).rev() {
        let record = if i == top { TOP_BACK } else { BACK };
        let (lower, upper) = maps.split_at_mut(i);
        let below = &mut lower[i - 1];
        let above = upper.first();
        for_each_pointer(&levels[i].back, record, |e, (l, r, _)| {
            if above.is_none_or(|map| bit(map, e)) {
                set(below, l);
                set(below, r);
            }
            Ok(())
        })?;
    }
    Ok(maps)
}

/// What renumbering a middle level gives: its values in order, as a file,
/// with its parks' summaries, and the new position of each of its
/// entries (kept or not) in a file of positions.
pub(super) struct Renumbered {
    pub values: TempFile,
    pub parks: Vec<ParkSummary>,
    pub positions: TempFile,
    pub count: u64,
}

/// Each kept entry's children as their new positions, by a spill on the
/// left child and a read of the slice of `below` (positions, [`POS`]
/// bytes each) the spill file spans; `emit` gets the entry (or, for the
/// top level, its output) and the two positions.
fn children_positions(
    back: TempFile,
    record: usize,
    kept: Option<&[u64]>,
    below: (TempFile, u64),
    work: &Work,
    mut emit: impl FnMut(u64, u64, u64) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let (positions, below_count) = below;
    let mut spill = Spill::create(
        &work.temps,
        "hard-children",
        work.plan.log2,
        bits_below(below_count),
    )?;
    let mut out = Vec::with_capacity(POS + 2 + POS);
    for_each_pointer(&back, record, |e, (l, r, y)| {
        if kept.is_none_or(|map| bit(map, e)) {
            out.clear();
            put(&mut out, u128::from(l), POS);
            put(&mut out, u128::from(r - l), 2);
            put(
                &mut out,
                u128::from(if record == TOP_BACK { y } else { e }),
                POS,
            );
            spill.push(l, &out)?;
        }
        Ok(())
    })?;
    drop(back);
    for (file, (lo, _)) in spill.finish()? {
        let bytes = file.take()?;
        let Some(last) = bytes
            .chunks_exact(2 * POS + 2)
            .map(|r| get64(&r[..POS]) + get64(&r[POS..POS + 2]))
            .max()
        else {
            continue;
        };
        // Later files' children lie at `lo` or past it.
        positions.release_before(lo * POS as u64);
        let slice = positions.read(lo * POS as u64, (last + 1 - lo) * POS as u64)?;
        let at = |i: u64| -> Result<u64, PlotError> {
            let offset = ((i - lo) as usize) * POS;
            slice
                .get(offset..offset + POS)
                .map(position)
                .ok_or_else(|| PlotError::Inconsistent(format!("a child {i} past its level")))
        };
        for r in bytes.chunks_exact(2 * POS + 2) {
            let l = get64(&r[..POS]);
            let right = l + get64(&r[POS..POS + 2]);
            emit(get64(&r[POS + 2..]), at(l)?, at(right)?)?;
        }
    }
    Ok(())
}

/// Renumbers a middle level: its kept entries sorted by value.
///
/// `below` is the level below's positions file and its entries; its new
/// positions are below `ranks`.
pub(super) fn renumber_middle(
    level: SortedLevel,
    kept: &[u64],
    below: (TempFile, u64),
    ranks: u64,
    work: &Work,
) -> Result<Renumbered, PlotError> {
    // Values spilled by their high bits: a value is twice the line point
    // of two positions below `ranks` (and a bit), and line points are
    // near uniform below ranks^2 / 2.
    let value_bits = 128 - (u128::from(ranks) * u128::from(ranks)).leading_zeros();
    let shift = value_bits.saturating_sub(63);
    let mut by_value = Spill::create(
        &work.temps,
        "hard-values",
        work.plan.log2,
        value_bits - shift,
    )?;
    let mut out = Vec::with_capacity(VALUE + POS);
    let SortedLevel { back, count, .. } = level;
    children_positions(back, BACK, Some(kept), below, work, |e, pl, pr| {
        let value = stored_value(pl, pr);
        out.clear();
        put(&mut out, value, VALUE);
        put(&mut out, u128::from(e), POS);
        by_value.push((value >> shift) as u64, &out)
    })?;

    let mut values = TempFile::create(&work.temps, "hard-sorted")?;
    let mut by_entry = Spill::create(&work.temps, "hard-ranks", work.plan.log2, bits_below(count))?;
    let mut parks = Vec::new();
    let mut park: Vec<u128> = Vec::with_capacity(PARK_ENTRIES as usize);
    let mut rank = 0u64;
    for (file, (lo, hi)) in by_value.finish()? {
        let items: Vec<(u128, u64)> =
            file.take_records(VALUE + POS, |r| (get(&r[..VALUE]), get64(&r[VALUE..])))?;
        let (vlo, vhi) = (u128::from(lo) << shift, u128::from(hi) << shift);
        let items = sort_by(items, vhi - vlo, |v| v.0 - vlo, |v| *v, work.plan.threads);
        let mut sorted = Vec::with_capacity(items.len() * VALUE);
        for &(value, e) in &items {
            put(&mut sorted, value, VALUE);
            park.push(value);
            if park.len() == PARK_ENTRIES as usize {
                parks.extend(ParkSummary::of(&park));
                park.clear();
            }
            out.clear();
            put(&mut out, u128::from(e), POS);
            put(&mut out, u128::from(rank), POS);
            by_entry.push(e, &out)?;
            rank += 1;
        }
        values.append(&sorted)?;
    }
    parks.extend(ParkSummary::of(&park));
    values.flush()?;

    // The ranks scattered to the entries: unkept entries are never read.
    let mut positions = TempFile::create(&work.temps, "hard-positions")?;
    positions.extend_to(count * POS as u64)?;
    for (file, (lo, hi)) in by_entry.finish()? {
        let bytes = file.take()?;
        let hi = hi.min(count);
        if lo >= hi {
            continue;
        }
        let mut dense = vec![0xFFu8; ((hi - lo) as usize) * POS];
        for r in bytes.chunks_exact(2 * POS) {
            let offset = (get64(&r[..POS]) - lo) as usize * POS;
            dense[offset..offset + POS].copy_from_slice(&r[POS..]);
        }
        positions.write_at(&dense, lo * POS as u64)?;
    }
    Ok(Renumbered {
        values,
        parks,
        positions,
        count: rank,
    })
}

/// The top level's entries as `(prefix, value)`, handed to `take` in
/// order a spill file at a time.
pub(super) fn renumber_top(
    k: u8,
    level: SortedLevel,
    below: (TempFile, u64),
    work: &Work,
    mut take: impl FnMut(&[(u64, u128)]) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let mut by_prefix = Spill::create(&work.temps, "hard-top", work.plan.log2, u32::from(k))?;
    let mut out = Vec::with_capacity(POS + VALUE);
    children_positions(level.back, TOP_BACK, None, below, work, |y, pl, pr| {
        let prefix = top_prefix(y);
        out.clear();
        put(&mut out, u128::from(prefix), POS);
        put(&mut out, stored_value(pl, pr), VALUE);
        by_prefix.push(prefix, &out)
    })?;
    for (file, (lo, hi)) in by_prefix.finish()? {
        let items: Vec<(u64, u128)> =
            file.take_records(POS + VALUE, |r| (get64(&r[..POS]), get(&r[POS..])))?;
        let items = sort_by(
            items,
            u128::from(hi - lo),
            |t| u128::from(t.0 - lo),
            |t| *t,
            work.plan.threads,
        );
        take(&items)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_below_counts_what_numbers_below_n_need() {
        assert_eq!(bits_below(1), 0);
        assert_eq!(bits_below(2), 1);
        assert_eq!(bits_below(1 << 20), 20);
        assert_eq!(bits_below((1 << 20) + 1), 21);
    }
}
