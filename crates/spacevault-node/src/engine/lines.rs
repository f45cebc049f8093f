//! Which line of slots a block is checked on: its branch's, derived from
//! its parent ([`spacevault_chain::time::Branch`]), and whether this vault
//! has the slot it needs. Reads of the store only, so that a vault can ask
//! without its engine's lock (a block held for its slot asks again and
//! again).

use super::parent_of;
use spacevault_chain::time::{MissingSlot, FORM_BYTES};
use spacevault_chain::validate::Parent;
use spacevault_chain::{Block, ChainSpec};
use spacevault_store::{Store, StoreError};

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
