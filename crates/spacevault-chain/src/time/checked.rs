//! Slot outputs already checked by one of the vaults that share this set.
//!
//! Vaults on machines of their own each check every slot's output, once
//! (a few milliseconds a slot). Many vaults run in one process only in
//! tests and benchmarks, where each check would be repeated once a vault
//! on the same cores: a network of 64 vaults on two cores would spend a
//! quarter of them on 64 copies of one check at half-second slots, a cost
//! no deployed vault has. Vaults given one set share their checks: the
//! first checks an output, the others find it here. Only outputs whose
//! proof passed enter, keyed by everything the check reads (the squarings
//! and the discriminant's size, line, slot, input, output and proof), so
//! an output that was never checked, or another proof of the same output,
//! is checked in full.

use super::{SlotOutput, TimeParams, FORM_BYTES};
use crate::bounded_set::BoundedSet;
use std::sync::Mutex;

/// Outputs the set keeps at most (about 1.4 MB): far more than the slots
/// vaults check in the time one output takes to reach them all.
pub const CHECKED_SLOTS: usize = 4096;

type Key = Box<[u8]>;

/// A bounded set of checked slot outputs; the oldest leaves first.
pub struct CheckedSlots {
    seen: Mutex<BoundedSet<Key>>,
}

impl std::fmt::Debug for CheckedSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedSlots")
            .field("held", &self.len())
            .field("capacity", &self.lock().capacity())
            .finish()
    }
}

impl Default for CheckedSlots {
    fn default() -> CheckedSlots {
        CheckedSlots::with_capacity(CHECKED_SLOTS)
    }
}

impl CheckedSlots {
    pub fn with_capacity(capacity: usize) -> CheckedSlots {
        CheckedSlots {
            seen: Mutex::new(BoundedSet::new(capacity.max(1))),
        }
    }

    /// Whether `out`, from `input`, passed a check of a vault sharing the
    /// set.
    pub(super) fn holds(
        &self,
        params: &TimeParams,
        input: &[u8; FORM_BYTES],
        out: &SlotOutput,
    ) -> bool {
        let key = key(params, input, out);
        self.lock().contains(&key)
    }

    /// Remembers that `out`, from `input`, passed its check.
    pub(super) fn remember(&self, params: &TimeParams, input: &[u8; FORM_BYTES], out: &SlotOutput) {
        self.lock().insert(key(params, input, out));
    }

    /// Outputs held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BoundedSet<Key>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Everything a check of `out` from `input` reads.
fn key(params: &TimeParams, input: &[u8; FORM_BYTES], out: &SlotOutput) -> Key {
    let mut k = Vec::with_capacity(12 + 32 + 8 + 3 * FORM_BYTES);
    k.extend_from_slice(&params.iterations.to_le_bytes());
    k.extend_from_slice(&params.discriminant_bits.to_le_bytes());
    k.extend_from_slice(&out.line);
    k.extend_from_slice(&out.slot.to_le_bytes());
    k.extend_from_slice(input);
    k.extend_from_slice(&out.output);
    k.extend_from_slice(&out.proof);
    k.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::tests::{keep, PARAMS};
    use crate::time::Timeline;
    use spacevault_meter::{Meter, Op};
    use std::sync::Arc;

    fn line() -> Timeline {
        Timeline::new([7; 32], PARAMS, &[1; 32]).unwrap()
    }

    #[test]
    fn vaults_sharing_the_set_check_an_output_once_and_anything_else_in_full() {
        let outs = keep(&mut line(), 2, [1; 32]);
        let shared = CheckedSlots::default();
        let meter = Arc::new(Meter::default());
        let checks = || meter.count(Op::VerifySlot);
        let (a, b) = (line(), line());
        spacevault_meter::with(&meter, || {
            let first = a.verify_next(&outs[0], Some(&shared)).unwrap();
            assert!(!first.remembered());
            assert_eq!(checks(), 1);
            let second = b.verify_next(&outs[0], Some(&shared)).unwrap();
            assert!(second.remembered());
            assert_eq!(checks(), 1);
            // Another proof of the same output (a form of the group, not
            // the proof) is checked, and refused.
            let forged = SlotOutput {
                proof: outs[1].output,
                ..outs[0]
            };
            assert!(b.verify_next(&forged, Some(&shared)).is_err());
            assert_eq!(checks(), 2);
            // Another output under the same proof, likewise.
            let other = SlotOutput {
                output: outs[1].output,
                ..outs[0]
            };
            assert!(b.verify_next(&other, Some(&shared)).is_err());
            assert_eq!(checks(), 3);
            // Without the set, every check is made.
            assert!(!b.verify_next(&outs[0], None).unwrap().remembered());
            assert_eq!(checks(), 4);
        });
        assert_eq!(shared.len(), 1);
    }

    #[test]
    fn the_oldest_output_leaves_a_full_set() {
        let outs = keep(&mut line(), 2, [1; 32]);
        let shared = CheckedSlots::with_capacity(1);
        let mut a = line();
        let checked = a.verify_next(&outs[0], Some(&shared)).unwrap();
        a.advance_checked(checked);
        let checked = a.verify_next(&outs[1], Some(&shared)).unwrap();
        a.advance_checked(checked);
        assert_eq!(shared.len(), 1);
        let b = line();
        assert!(!b.verify_next(&outs[0], Some(&shared)).unwrap().remembered());
    }
}
