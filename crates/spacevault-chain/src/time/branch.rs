//! Which line of slots each branch of blocks has: an era's entropy is a
//! block of the branch one whole era older than the era, so each block
//! fixes the lines of its branch's later eras (docs/PROTOCOL.md, "A line
//! per branch").

use super::{era_seed, first_line, TimeParams, FORM_BYTES};

/// What a block (or the genesis) fixes of the lines of slots on the branch
/// through it.
///
/// Era e's entropy on a branch is the hash of the branch's latest block
/// made in a slot at or before (e − 1) × era_slots: a block one whole era
/// older than the era, so that it has reached every vault before the era
/// begins (the genesis, in slot 0, for eras 0 and 1). Era e's seed is
/// [`era_seed`] of e, the output of slot e × era_slots on the branch's
/// line of era e − 1, and that entropy. A block's line is its branch's
/// seed for the block's era; the branch's lines of later eras follow from
/// the block alone, with the closing outputs of the eras between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// The block's hash.
    pub hash: [u8; 32],
    /// Its slot (0 for the genesis).
    pub slot: u64,
    /// The seed of its era's line on its branch.
    pub line: [u8; 32],
    /// The hash of the branch's latest block made at or before the last
    /// slot of the era before the block's (the genesis hash at the start):
    /// the entropy of the era after the block's.
    pub opening: [u8; 32],
}

/// A line of slots whose output at `slot` is not kept, and what needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingSlot {
    /// The line's seed.
    pub line: [u8; 32],
    pub slot: u64,
}

impl Branch {
    /// The genesis: slot 0, era 0's line.
    pub fn genesis(chain_id: &[u8; 32]) -> Branch {
        let hash = crate::genesis::genesis_hash(chain_id);
        Branch {
            hash,
            slot: 0,
            line: first_line(chain_id),
            opening: hash,
        }
    }

    /// The era of the block.
    pub fn era(&self, params: &TimeParams) -> u64 {
        params.era_of(self.slot)
    }

    /// The entropy of era `era`, a later era than the block's, on the
    /// branch through the block: the block itself once the era is two or
    /// more after its own, else the block before its era.
    pub fn entropy(&self, params: &TimeParams, era: u64) -> [u8; 32] {
        debug_assert!(era > self.era(params));
        if era == self.era(params) + 1 {
            self.opening
        } else {
            self.hash
        }
    }

    /// What a child made in `slot`, on line `line`, fixes.
    pub fn child(&self, params: &TimeParams, hash: [u8; 32], slot: u64, line: [u8; 32]) -> Branch {
        let opening = if params.era_of(slot) == self.era(params) {
            self.opening
        } else {
            self.hash
        };
        Branch {
            hash,
            slot,
            line,
            opening,
        }
    }

    /// The seed of era `era` (not before the block's) on the branch through
    /// the block, with no later block: derived era by era from the block's
    /// line, each era's closing output read with `closing(line, slot)`.
    /// The first closing output not kept is what is missing.
    pub fn line_of_era<E>(
        &self,
        chain_id: &[u8; 32],
        params: &TimeParams,
        era: u64,
        mut closing: impl FnMut(&[u8; 32], u64) -> Result<Option<[u8; FORM_BYTES]>, E>,
    ) -> Result<Result<[u8; 32], MissingSlot>, E> {
        let mut line = self.line;
        for e in self.era(params) + 1..=era {
            let slot = params.era_closing_slot(e - 1);
            let Some(output) = closing(&line, slot)? else {
                return Ok(Err(MissingSlot { line, slot }));
            };
            line = era_seed(chain_id, e, &output, &self.entropy(params, e));
        }
        Ok(Ok(line))
    }

    /// The furthest era the branch through the block (with no later
    /// block) has a line for, given the closing outputs `closing` finds,
    /// and that line: where a vault that follows the branch stands.
    pub fn latest_line<E>(
        &self,
        chain_id: &[u8; 32],
        params: &TimeParams,
        mut closing: impl FnMut(&[u8; 32], u64) -> Result<Option<[u8; FORM_BYTES]>, E>,
    ) -> Result<(u64, [u8; 32]), E> {
        let (mut era, mut line) = (self.era(params), self.line);
        while let Some(output) = closing(&line, params.era_closing_slot(era))? {
            era += 1;
            line = era_seed(chain_id, era, &output, &self.entropy(params, era));
        }
        Ok((era, line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::tests::{keep, PARAMS};
    use crate::time::Timeline;

    /// A branch of blocks (slot, tag of its hash) from the genesis, each
    /// block's line derived from its parent with `closing`.
    fn branch(
        blocks: &[(u64, u8)],
        closing: &mut impl FnMut(&[u8; 32], u64) -> Option<[u8; FORM_BYTES]>,
    ) -> Vec<Branch> {
        let mut at = Branch::genesis(&[7; 32]);
        let mut out = vec![at];
        for &(slot, tag) in blocks {
            let line = at
                .line_of_era(&[7; 32], &PARAMS, PARAMS.era_of(slot), |l, s| {
                    Ok::<_, ()>(closing(l, s))
                })
                .unwrap()
                .unwrap();
            let mut hash = [tag; 32];
            hash[..8].copy_from_slice(&slot.to_le_bytes());
            at = at.child(&PARAMS, hash, slot, line);
            out.push(at);
        }
        out
    }

    #[test]
    fn an_eras_line_follows_the_branchs_block_one_era_before_it() {
        // Eras of 3 slots. Era e's entropy: the latest block at or before
        // slot 3(e - 1). Any closing output will do for the rule.
        fn closing(line: &[u8; 32], slot: u64) -> Option<[u8; FORM_BYTES]> {
            let mut out = [0; FORM_BYTES];
            out[..32].copy_from_slice(line);
            out[32..40].copy_from_slice(&slot.to_le_bytes());
            Some(out)
        }
        let g = Branch::genesis(&[7; 32]);
        let seed = |b: &Branch, era: u64| {
            b.line_of_era(&[7; 32], &PARAMS, era, |l, s| Ok::<_, ()>(closing(l, s)))
                .unwrap()
                .unwrap()
        };
        // Branches that differ in slots 1 to 3 share eras 0 and 1 (the
        // genesis's entropy) and part at era 2 (entropy at slot 3).
        let a = branch(&[(2, 1), (5, 1)], &mut closing.clone());
        let b = branch(&[(3, 2), (5, 2)], &mut closing.clone());
        assert_eq!(a[1].line, b[1].line);
        assert_eq!(a[1].line, g.line);
        assert_eq!(a[2].line, b[2].line);
        assert_eq!(seed(&a[2], 1), a[2].line);
        assert_ne!(seed(&a[2], 2), seed(&b[2], 2));
        // Branches that differ only after slot 3 share era 2, and part
        // at era 3 (entropy at slot 6).
        let c = branch(&[(2, 9), (4, 3)], &mut closing.clone());
        let d = branch(&[(2, 9), (6, 4)], &mut closing.clone());
        assert_eq!(seed(&c[2], 2), seed(&d[2], 2));
        assert_ne!(seed(&c[2], 3), seed(&d[2], 3));
        // The entropy slot itself counts; the slot after it does not.
        let on = branch(&[(2, 9), (3, 6)], &mut closing.clone());
        let after = branch(&[(2, 9), (4, 7)], &mut closing.clone());
        let later = branch(&[(2, 9), (5, 8)], &mut closing.clone());
        assert_ne!(seed(&on[2], 2), seed(&after[2], 2));
        assert_eq!(seed(&after[2], 2), seed(&later[2], 2));
        assert_eq!(seed(&after[2], 2), seed(&on[1], 2));
        // A block's own line is what its parent's branch says of its era,
        // whichever era the parent was in.
        let e = branch(&[(2, 5), (8, 5)], &mut closing.clone());
        assert_eq!(e[2].line, seed(&e[1], 2));
        assert_eq!(e[2].opening, e[1].hash);
        // Era 3's entropy is the block before era 2 whether or not a block
        // of era 2 follows it; era 4's is the block of era 2.
        assert_eq!(seed(&e[2], 3), seed(&e[1], 3));
        assert_ne!(seed(&e[2], 4), seed(&e[1], 4));
        // The genesis's eras 0 and 1: the genesis hash as entropy.
        assert_eq!(g.line, first_line(&[7; 32]));
        let mut keeper = Timeline::first([7; 32], PARAMS).unwrap();
        let outs = keep(&mut keeper, 4, crate::genesis::genesis_hash(&[7; 32]));
        let era_1 = g
            .line_of_era(&[7; 32], &PARAMS, 1, |l, s| {
                Ok::<_, ()>((*l == outs[0].line && s == 3).then_some(outs[2].output))
            })
            .unwrap();
        assert_eq!(era_1, Ok(outs[3].line));
    }

    #[test]
    fn the_latest_line_goes_as_far_as_closing_outputs_are_kept() {
        let g = Branch::genesis(&[7; 32]);
        let kept = |_: &[u8; 32], s: u64| Ok::<_, ()>((s <= 6).then_some([s as u8; FORM_BYTES]));
        let (era, line) = g.latest_line(&[7; 32], &PARAMS, kept).unwrap();
        assert_eq!(era, 2);
        assert_eq!(
            line,
            g.line_of_era(&[7; 32], &PARAMS, 2, kept).unwrap().unwrap()
        );
        let none = |_: &[u8; 32], _: u64| Ok::<_, ()>(None);
        assert_eq!(g.latest_line(&[7; 32], &PARAMS, none), Ok((0, g.line)));
    }

    #[test]
    fn a_missing_closing_output_is_named() {
        let g = Branch::genesis(&[7; 32]);
        let missing = g
            .line_of_era(&[7; 32], &PARAMS, 2, |_, s| {
                Ok::<_, ()>((s == 3).then_some([1; FORM_BYTES]))
            })
            .unwrap();
        let era_1 = era_seed(&[7; 32], 1, &[1; FORM_BYTES], &g.hash);
        assert_eq!(
            missing,
            Err(MissingSlot {
                line: era_1,
                slot: 6
            })
        );
        assert_eq!(
            g.line_of_era(&[7; 32], &PARAMS, 0, |_, _| Err(())),
            Ok(Ok(g.line))
        );
        assert_eq!(g.line_of_era(&[7; 32], &PARAMS, 1, |_, _| Err(())), Err(()));
    }
}
