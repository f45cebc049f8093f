//! Which line of slots a block is checked on: its branch's, derived from
//! its parent ([`spacevault_chain::time::Branch`]), and whether this vault
//! has the slot it needs. Reads of the store only, so that a vault can ask
//! without its engine's lock (a block held for its slot asks again and
//! again).

use super::parent_of;
use spacevault_chain::time::{MissingSlot, FORM_BYTES};
use spacevault_chain::validate::Parent;
use spacevault_chain::{Block, ChainSpec};
use spacevault_store::{Pruned, Store, StoreError};

/// The line of slots a child of `parent` made in `slot` is checked on:
/// its branch's line of the slot's era, or the closing slot of an era
/// between that this vault lacks.
pub(crate) fn line_of_child(
    store: &Store,
    spec: &ChainSpec,
    parent: &Parent,
    slot: u64,
) -> Result<Result<[u8; 32], MissingSlot>, StoreError> {
    let params = spec.time();
    parent
        .branch()
        .line_of_era(&spec.chain_id(), &params, params.era_of(slot), |line, s| {
            store.output_on(line, s)
        })
}

/// A slot's line and its output there.
pub(crate) type OnLine = ([u8; 32], [u8; FORM_BYTES]);

/// What a child of `parent` made in `slot` is checked on: its line
/// ([`line_of_child`]) and the slot's output there, or the slot this vault
/// lacks.
pub(crate) fn child_slot(
    store: &Store,
    spec: &ChainSpec,
    parent: &Parent,
    slot: u64,
) -> Result<Result<OnLine, MissingSlot>, StoreError> {
    let line = match line_of_child(store, spec, parent, slot)? {
        Ok(line) => line,
        Err(missing) => return Ok(Err(missing)),
    };
    Ok(match store.output_on(&line, slot)? {
        Some(output) => Ok((line, output)),
        None => Err(MissingSlot { line, slot }),
    })
}

/// For a block whose parent is kept: whether the slot its branch's line
/// needs is missing here (None when the parent is not kept).
pub fn missing_slot(
    store: &Store,
    spec: &ChainSpec,
    block: &Block,
) -> Result<Option<Result<(), MissingSlot>>, StoreError> {
    let Some(parent) = parent_of(store, spec, &block.header.parent)? else {
        return Ok(None);
    };
    let slot = block.header.stamp.slot;
    Ok(Some(child_slot(store, spec, &parent, slot)?.map(|_| ())))
}

/// Eras [`settle_lines`] settles at most in one call: a store that has
/// many to settle (one upgraded from version 5, or a vault whose
/// checkpoint was not held for long) settles them a few at a time, with
/// each new head, rather than holding the engine for all at once.
const ERAS_A_PASS: u64 = 8;

/// Forgets the lines the canonical chain can no longer take, through the
/// era of `last_final` (the canonical block no branch may leave), from the
/// first era not yet settled ([`ERAS_A_PASS`] at most): any line of such
/// an era but the canonical chain's.
///
/// Era e's line follows from the branch's blocks at or before slot
/// (e − 1) × era_slots and the closing outputs of the lines before it; for
/// an era no later than the final block's, those blocks are the final
/// block's ancestors, which every branch the vault may still take shares,
/// so every such branch has the canonical chain's line there. A branch
/// from below those blocks that the vault takes after all (its head went
/// back to a heavier, shorter branch) has its line fetched from its
/// sender again, as any line this vault lacks is.
pub(crate) fn settle_lines(
    store: &Store,
    spec: &ChainSpec,
    last_final: &Parent,
) -> Result<Pruned, StoreError> {
    let params = spec.time();
    let from = store.lines_pruned_to()?;
    let to = last_final
        .branch()
        .era(&params)
        .min(from.saturating_add(ERAS_A_PASS - 1));
    if from > to {
        return Ok(Pruned::default());
    }
    let chain_id = spec.chain_id();
    let mut pruned = Pruned::default();
    for era in from..=to {
        // The canonical chain's latest block of the era or before: its
        // branch's line of the era is the chain's (later blocks are made
        // after the era's entropy slot).
        let block = latest_of_era(store, spec, last_final, era)?;
        let line = block
            .branch()
            .line_of_era(&chain_id, &params, era, |line, slot| {
                store.output_on(line, slot)
            })?;
        let keep = match &line {
            Ok(line) => Some(line),
            Err(missing) => {
                tracing::warn!(
                    era,
                    slot = missing.slot,
                    "the canonical chain's line of an era lacks a closing slot here: the era's lines are all kept"
                );
                None
            }
        };
        let era_pruned = store.prune_era(era, keep)?;
        if era_pruned.lines > 0 {
            tracing::debug!(
                era,
                lines = era_pruned.lines,
                slots = era_pruned.slots,
                "forgot lines of a settled era"
            );
        }
        pruned.lines += era_pruned.lines;
        pruned.slots += era_pruned.slots;
    }
    Ok(pruned)
}

/// The canonical chain's latest block at or below `last_final` made in
/// era `era` or before (the genesis if none): found by halving the
/// heights, for a block's slot grows with its height.
fn latest_of_era(
    store: &Store,
    spec: &ChainSpec,
    last_final: &Parent,
    era: u64,
) -> Result<Parent, StoreError> {
    let params = spec.time();
    if last_final.branch().era(&params) <= era {
        return Ok(*last_final);
    }
    // The genesis (height 0, era 0) is at or before any era; the final
    // block is after this one.
    let (mut at_or_before, mut after) = (0, last_final.height);
    while after - at_or_before > 1 {
        let mid = at_or_before + (after - at_or_before) / 2;
        match canonical_at(store, spec, mid)?.branch().era(&params) <= era {
            true => at_or_before = mid,
            false => after = mid,
        }
    }
    canonical_at(store, spec, at_or_before)
}

/// The canonical block at `height` as a parent (the genesis at 0).
pub(super) fn canonical_at(
    store: &Store,
    spec: &ChainSpec,
    height: u64,
) -> Result<Parent, StoreError> {
    if height == 0 {
        return Ok(Parent::genesis(spec));
    }
    let hash = store
        .canonical(height)?
        .ok_or(StoreError::Corrupt("a height"))?;
    parent_of(store, spec, &hash)?.ok_or(StoreError::Corrupt("a canonical block"))
}
