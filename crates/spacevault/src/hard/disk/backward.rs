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
use super::ordered::map_in_order;
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
/// bytes each) the spill file spans. The files are worked on by the
/// plan's threads: `prepare` gets a file's triples (the entry or, for the
/// top level, its output, and the two positions) on a thread, `take` what
/// it made, in order.
fn children_positions<P: Send>(
    back: TempFile,
    record: usize,
    kept: Option<&[u64]>,
    below: (TempFile, u64),
    work: &Work,
    prepare: impl Fn(&[(u64, u64, u64)]) -> Result<P, PlotError> + Sync,
    mut take: impl FnMut(P) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let (positions, below_count) = below;
    let mut spill = Spill::create(
        &work.temps,
        "hard-children",
        work.plan.log2,
        bits_below(below_count),
    )?;
    let template = spill.gatherer();
    // Pointers read a piece at a time (within BYTES_PER_PIECE with what
    // the piece gathers).
    const PIECE: u64 = 1 << 18;
    let pieces = back.size().div_ceil(PIECE * record as u64);
    map_in_order(
        0..pieces,
        work.plan.parallel,
        |piece| {
            let bytes = back.read(piece * PIECE * record as u64, PIECE * record as u64)?;
            let mut gathered = template.clone();
            for (e, r) in (piece * PIECE..).zip(bytes.chunks_exact(record)) {
                let (l, r, y) = pointers(r);
                if kept.is_none_or(|map| bit(map, e)) {
                    let out = gathered.part(l);
                    put(out, u128::from(l), POS);
                    put(out, u128::from(r - l), 2);
                    put(out, u128::from(if record == TOP_BACK { y } else { e }), POS);
                }
            }
            Ok(gathered)
        },
        |gathered| spill.absorb(gathered),
    )?;
    drop(back);
    map_in_order(
        spill.finish()?,
        work.plan.parallel,
        |(file, (lo, _))| {
            let bytes = file.take()?;
            let Some(last) = bytes
                .chunks_exact(2 * POS + 2)
                .map(|r| get64(&r[..POS]) + get64(&r[POS..POS + 2]))
                .max()
            else {
                return Ok((lo, None));
            };
            let slice = positions.read(lo * POS as u64, (last + 1 - lo) * POS as u64)?;
            let at = |i: u64| -> Result<u64, PlotError> {
                let offset = ((i - lo) as usize) * POS;
                slice
                    .get(offset..offset + POS)
                    .map(position)
                    .ok_or_else(|| PlotError::Inconsistent(format!("a child {i} past its level")))
            };
            let triples = bytes
                .chunks_exact(2 * POS + 2)
                .map(|r| {
                    let l = get64(&r[..POS]);
                    let right = l + get64(&r[POS..POS + 2]);
                    Ok((get64(&r[POS + 2..]), at(l)?, at(right)?))
                })
                .collect::<Result<Vec<_>, PlotError>>()?;
            Ok((lo, Some(prepare(&triples)?)))
        },
        |(lo, prepared)| {
            // Files taken later read their children at their `lo` or
            // past it, which is past this one's.
            positions.release_before(lo * POS as u64);
            prepared.map_or(Ok(()), &mut take)
        },
    )
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
    let template = by_value.gatherer();
    let SortedLevel { back, count, .. } = level;
    children_positions(
        back,
        BACK,
        Some(kept),
        below,
        work,
        |triples| {
            let mut gathered = template.clone();
            for &(e, pl, pr) in triples {
                let value = stored_value(pl, pr);
                let out = gathered.part((value >> shift) as u64);
                put(out, value, VALUE);
                put(out, u128::from(e), POS);
            }
            Ok(gathered)
        },
        |gathered| by_value.absorb(gathered),
    )?;

    let mut values = TempFile::create(&work.temps, "hard-sorted")?;
    let mut by_entry = Spill::create(&work.temps, "hard-ranks", work.plan.log2, bits_below(count))?;
    let template = by_entry.gatherer();
    // Each file's first rank, from the entries the files before it hold.
    let files = by_value.finish()?;
    let firsts: Vec<u64> = files
        .iter()
        .scan(0u64, |rank, (file, _)| {
            let first = *rank;
            *rank += file.size() / (VALUE + POS) as u64;
            Some(first)
        })
        .collect();
    let mut parks: Vec<ParkSummary> = Vec::new();
    let mut rank = 0u64;
    let sort_threads = work.plan.sort_threads();
    map_in_order(
        files.into_iter().zip(firsts),
        work.plan.parallel,
        |((file, (lo, hi)), first)| {
            let items: Vec<(u128, u64)> =
                file.take_records(VALUE + POS, |r| (get(&r[..VALUE]), get64(&r[VALUE..])))?;
            let (vlo, vhi) = (u128::from(lo) << shift, u128::from(hi) << shift);
            let items = sort_by(items, vhi - vlo, |v| v.0 - vlo, |v| *v, sort_threads);
            let mut sorted = Vec::with_capacity(items.len() * VALUE);
            let mut gathered = template.clone();
            for (rank, &(value, e)) in (first..).zip(&items) {
                put(&mut sorted, value, VALUE);
                let out = gathered.part(e);
                put(out, u128::from(e), POS);
                put(out, u128::from(rank), POS);
            }
            let values: Vec<u128> = items.iter().map(|v| v.0).collect();
            Ok((sorted, values, gathered))
        },
        |(sorted, sorted_values, gathered)| {
            add_to_parks(&mut parks, rank, &sorted_values);
            rank += sorted_values.len() as u64;
            values.append(&sorted)?;
            by_entry.absorb(gathered)
        },
    )?;
    values.flush()?;

    // The ranks scattered to the entries: unkept entries are never read.
    let mut positions = TempFile::create(&work.temps, "hard-positions")?;
    positions.extend_to(count * POS as u64)?;
    map_in_order(
        by_entry.finish()?,
        work.plan.parallel,
        |(file, (lo, hi))| {
            let bytes = file.take()?;
            let hi = hi.min(count);
            if lo >= hi {
                return Ok(());
            }
            let mut dense = vec![0xFFu8; ((hi - lo) as usize) * POS];
            for r in bytes.chunks_exact(2 * POS) {
                let offset = (get64(&r[..POS]) - lo) as usize * POS;
                dense[offset..offset + POS].copy_from_slice(&r[POS..]);
            }
            positions.write_at(&dense, lo * POS as u64)
        },
        |()| Ok(()),
    )?;
    Ok(Renumbered {
        values,
        parks,
        positions,
        count: rank,
    })
}

/// Adds sorted `values`, the entries of ranks `first..`, to the parks'
/// summaries: a park holds the ranks `[p, p + 1) · PARK_ENTRIES`, and the
/// last may be continued by the next call.
fn add_to_parks(parks: &mut Vec<ParkSummary>, first: u64, values: &[u128]) {
    let mut rank = first;
    let mut rest = values;
    while !rest.is_empty() {
        let room = (PARK_ENTRIES - rank % PARK_ENTRIES) as usize;
        let (part, after) = rest.split_at(room.min(rest.len()));
        let summary = ParkSummary::of(part).expect("a part is never empty");
        match parks.last_mut() {
            Some(open) if !rank.is_multiple_of(PARK_ENTRIES) => {
                open.last = summary.last;
                open.n += summary.n;
            }
            _ => parks.push(summary),
        }
        rank += part.len() as u64;
        rest = after;
    }
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
    let template = by_prefix.gatherer();
    children_positions(
        level.back,
        TOP_BACK,
        None,
        below,
        work,
        |triples| {
            let mut gathered = template.clone();
            for &(y, pl, pr) in triples {
                let prefix = top_prefix(y);
                let out = gathered.part(prefix);
                put(out, u128::from(prefix), POS);
                put(out, stored_value(pl, pr), VALUE);
            }
            Ok(gathered)
        },
        |gathered| by_prefix.absorb(gathered),
    )?;
    let sort_threads = work.plan.sort_threads();
    map_in_order(
        by_prefix.finish()?,
        work.plan.parallel,
        |(file, (lo, hi))| {
            let items: Vec<(u64, u128)> =
                file.take_records(POS + VALUE, |r| (get64(&r[..POS]), get(&r[POS..])))?;
            Ok(sort_by(
                items,
                u128::from(hi - lo),
                |t| u128::from(t.0 - lo),
                |t| *t,
                sort_threads,
            ))
        },
        |items| take(&items),
    )
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

    #[test]
    fn parks_added_a_file_at_a_time_are_the_parks_of_the_whole() {
        let values: Vec<u128> = (0..5000u128).map(|i| i * i + 3).collect();
        let whole: Vec<ParkSummary> = values
            .chunks(PARK_ENTRIES as usize)
            .filter_map(ParkSummary::of)
            .collect();
        for cuts in [
            vec![5000],
            vec![1, 1023, 1024, 2952],
            vec![700, 700, 700, 2900],
        ] {
            let mut parks = Vec::new();
            let mut first = 0usize;
            for cut in cuts {
                let end = (first + cut).min(values.len());
                add_to_parks(&mut parks, first as u64, &values[first..end]);
                first = end;
            }
            assert_eq!(first, values.len());
            assert_eq!(parks, whole);
        }
    }
}
