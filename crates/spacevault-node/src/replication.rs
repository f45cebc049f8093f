//! Copies made again when the set of vaults changes: each blob this vault
//! keeps goes to the vaults that became its holders since the last pass
//! that finished, and to no other. One pass runs at a time; a change while
//! it runs starts the next once it is done. A new vault in a network of N
//! is sent about R/N of the blobs, not every blob by every vault. A pass
//! some copy of which was refused (a holder over its budget, or away) is
//! run again after [`PASS_RETRY`].

use std::time::{Duration, Instant};

/// The wait before a pass that could not send every copy runs again.
pub const PASS_RETRY: Duration = Duration::from_secs(30);

/// The vaults (farmer keys, this one's included) seen by a pass.
pub type View = Vec<[u8; 32]>;

/// The `r` keys of `view` nearest `address` by XOR.
pub fn nearest(view: &[[u8; 32]], address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
    let mut all = view.to_vec();
    all.sort_by_key(|k| xor(k, address));
    all.truncate(r);
    all
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

/// Where a pass sends `address`: its holders in `now` that were not its
/// holders in `before` (every holder when there was no pass before), this
/// vault (`own`) aside.
pub fn moved_to(
    address: &[u8; 32],
    r: usize,
    before: Option<&[[u8; 32]]>,
    now: &[[u8; 32]],
    own: &[u8; 32],
) -> Vec<[u8; 32]> {
    let then = before.map(|b| nearest(b, address, r)).unwrap_or_default();
    nearest(now, address, r)
        .into_iter()
        .filter(|k| k != own && !then.contains(k))
        .collect()
}

/// What the vault table keeps of its passes.
#[derive(Default)]
pub struct Passes {
    /// The generation of the vault set the last pass started for.
    started_for: u64,
    running: bool,
    /// The view of the last pass that finished with every copy sent.
    done_view: Option<View>,
    /// When the last pass, incomplete, is due again.
    retry_at: Option<Instant>,
}

/// A pass under way: the views it compares.
#[derive(Debug, PartialEq)]
pub struct Pass {
    pub before: Option<View>,
    pub now: View,
}

impl Passes {
    /// A pass to run at `now`, when none runs and the vault set (at
    /// `generation`, seen as `view`) changed since the last one started,
    /// or the last was incomplete and its retry is due.
    pub fn start(
        &mut self,
        generation: u64,
        now: Instant,
        view: impl FnOnce() -> View,
    ) -> Option<Pass> {
        let retry = self.retry_at.is_some_and(|t| now >= t);
        if self.running || (generation == self.started_for && !retry) {
            return None;
        }
        self.running = true;
        self.started_for = generation;
        self.retry_at = None;
        Some(Pass {
            before: self.done_view.clone(),
            now: view(),
        })
    }

    /// The pass ended; `complete` when every copy it meant to send was
    /// taken. An incomplete pass leaves the last complete view in place,
    /// so that the next pass sends again what this one could not.
    pub fn finish(&mut self, pass: Pass, complete: bool, now: Instant) {
        self.running = false;
        if complete {
            self.done_view = Some(pass.now);
        } else {
            self.retry_at = Some(now + PASS_RETRY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> [u8; 32] {
        let mut k = [0u8; 32];
        k[0] = i;
        k
    }

    #[test]
    fn a_pass_sends_each_blob_only_to_the_holders_it_gained() {
        let own = key(0x00);
        let before: View = [0x00, 0x10, 0x20, 0x30].map(key).to_vec();
        // 0x11 joins, next to 0x10: only blobs near it move.
        let mut now = before.clone();
        now.push(key(0x11));
        let near = key(0x12);
        assert_eq!(nearest(&now, &near, 2), vec![key(0x10), key(0x11)]);
        assert_eq!(
            moved_to(&near, 2, Some(&before), &now, &own),
            vec![key(0x11)]
        );
        let far = key(0x31);
        assert!(moved_to(&far, 2, Some(&before), &now, &own).is_empty());
        // With no pass before, every holder but this vault.
        assert_eq!(moved_to(&key(0x01), 2, None, &now, &own), vec![key(0x11)]);
        // 0x10 leaves: its blobs gain the next nearest (here 0x00, seen
        // from a vault that is not 0x00).
        let gone: View = now.iter().copied().filter(|k| *k != key(0x10)).collect();
        assert_eq!(nearest(&now, &key(0x13), 2), vec![key(0x11), key(0x10)]);
        assert_eq!(
            moved_to(&key(0x13), 2, Some(&now), &gone, &key(0x30)),
            vec![key(0x00)]
        );
    }

    #[test]
    fn moved_matches_a_plain_difference_of_holder_sets() {
        // Every key set change on eight vaults, every address byte: the
        // filter above against sets written out.
        let all: Vec<[u8; 32]> = (0..8u8).map(|i| key(i * 32 + 3)).collect();
        for mask_before in [0b1111_1111u8, 0b0111_1111, 0b1010_1010, 0b0000_0001] {
            for mask_now in [0b1111_1111u8, 0b1101_1111, 0b0101_0101, 0b1000_0001] {
                let pick = |m: u8| -> View {
                    all.iter()
                        .enumerate()
                        .filter(|(i, _)| m >> i & 1 == 1)
                        .map(|(_, k)| *k)
                        .collect()
                };
                let (b, n) = (pick(mask_before), pick(mask_now));
                for a in 0..=255u8 {
                    let address = key(a);
                    let got: std::collections::BTreeSet<_> =
                        moved_to(&address, 3, Some(&b), &n, &all[0])
                            .into_iter()
                            .collect();
                    let mut by_distance_now = n.clone();
                    by_distance_now.sort_by_key(|k| k[0] ^ a);
                    let mut by_distance_then = b.clone();
                    by_distance_then.sort_by_key(|k| k[0] ^ a);
                    let want: std::collections::BTreeSet<_> = by_distance_now
                        .iter()
                        .take(3)
                        .filter(|k| !by_distance_then.iter().take(3).any(|t| t == *k))
                        .filter(|k| **k != all[0])
                        .copied()
                        .collect();
                    assert_eq!(got, want, "address {a} {mask_before:b} -> {mask_now:b}");
                }
            }
        }
    }

    #[test]
    fn one_pass_at_a_time_and_a_change_meanwhile_is_not_lost() {
        let t = Instant::now();
        let mut p = Passes::default();
        let pass = p.start(1, t, || vec![key(1)]).expect("a first pass");
        assert_eq!(pass.before, None);
        // The set changes twice while it runs: no second pass.
        assert_eq!(p.start(2, t, || vec![key(1), key(2)]), None);
        assert_eq!(p.start(3, t, || vec![key(1), key(2), key(3)]), None);
        p.finish(pass, true, t);
        // The next pass covers the changes, from the view that finished.
        let next = p
            .start(3, t, || vec![key(1), key(2), key(3)])
            .expect("the next pass");
        assert_eq!(next.before, Some(vec![key(1)]));
        assert_eq!(p.start(3, t, || unreachable!()), None);
        // An incomplete pass leaves the last complete view in place, and
        // runs again once its retry is due, with no change of the set.
        p.finish(next, false, t);
        assert_eq!(p.start(3, t + PASS_RETRY / 2, || unreachable!()), None);
        let again = p
            .start(3, t + PASS_RETRY, || vec![key(4)])
            .expect("a retry");
        assert_eq!(again.before, Some(vec![key(1)]));
        p.finish(again, true, t + PASS_RETRY);
        let later = t + 10 * PASS_RETRY;
        assert_eq!(
            p.start(3, later, || unreachable!()),
            None,
            "nothing changed since"
        );
    }
}
