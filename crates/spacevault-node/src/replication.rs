//! Copies made again when the set of vaults changes: each blob this vault
//! keeps goes to its holders in the new set. One pass runs at a time; a
//! change while it runs starts the next once it is done (passes used to
//! overlap, one for every change). A pass some copy of which was refused
//! (a holder over its budget, or away) is run again after [`PASS_RETRY`].
//!
//! Every holder, not only those the change made: a blob PUT after the
//! last pass reached the holders the putting vault saw, which need not be
//! the ones this vault saw then, so "holders then" says nothing of who has
//! it (sending only the difference lost copies in the churn test).

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

/// What the vault table keeps of its passes.
#[derive(Default)]
pub struct Passes {
    /// The generation of the vault set the last pass started for.
    started_for: u64,
    running: bool,
    /// When the last pass, incomplete, is due again.
    retry_at: Option<Instant>,
}

/// A pass under way: the vaults it sends to the holders among.
#[derive(Debug, PartialEq)]
pub struct Pass {
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
        Some(Pass { now: view() })
    }

    /// The pass ended; `complete` when every copy it meant to send was
    /// taken. An incomplete one runs again after [`PASS_RETRY`].
    pub fn finish(&mut self, _pass: Pass, complete: bool, now: Instant) {
        self.running = false;
        if !complete {
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
    fn holders_are_the_nearest_by_xor() {
        let view: View = [0x00, 0x10, 0x11, 0x20, 0x30].map(key).to_vec();
        assert_eq!(nearest(&view, &key(0x12), 2), vec![key(0x10), key(0x11)]);
        assert_eq!(nearest(&view, &key(0x13), 2), vec![key(0x11), key(0x10)]);
        assert_eq!(nearest(&view, &key(0x01), 1), vec![key(0x00)]);
        assert_eq!(nearest(&view, &key(0xff), 10).len(), 5);
    }

    #[test]
    fn one_pass_at_a_time_and_a_change_meanwhile_is_not_lost() {
        let t = Instant::now();
        let mut p = Passes::default();
        let pass = p.start(1, t, || vec![key(1)]).expect("a first pass");
        // The set changes twice while it runs: no second pass.
        assert_eq!(p.start(2, t, || vec![key(1), key(2)]), None);
        assert_eq!(p.start(3, t, || vec![key(1), key(2), key(3)]), None);
        p.finish(pass, true, t);
        // The next pass covers the changes.
        let next = p
            .start(3, t, || vec![key(1), key(2), key(3)])
            .expect("the next pass");
        assert_eq!(next.now.len(), 3);
        assert_eq!(p.start(3, t, || unreachable!()), None);
        // An incomplete pass runs again once its retry is due, with no
        // change of the set.
        p.finish(next, false, t);
        assert_eq!(p.start(3, t + PASS_RETRY / 2, || unreachable!()), None);
        let again = p
            .start(3, t + PASS_RETRY, || vec![key(4)])
            .expect("a retry");
        p.finish(again, true, t + PASS_RETRY);
        let later = t + 10 * PASS_RETRY;
        assert_eq!(
            p.start(3, later, || unreachable!()),
            None,
            "nothing changed since"
        );
    }
}
