//! Copies made again when the set of vaults changes: each blob this vault
//! keeps goes to those of its holders in the new set that were not its
//! holders when the last complete pass began. One pass runs at a time; a
//! change while it runs starts the next once it is done (passes used to
//! overlap, one for every change). A pass some copy of which was refused
//! (a holder over its budget, or away) is run again after [`PASS_RETRY`],
//! measured against the same base.
//!
//! A blob stored here since the last complete pass began goes to every
//! holder: a blob PUT elsewhere reached the holders the putting vault saw,
//! which need not be the ones this vault saw, so "holders then" says
//! nothing of who has it (sending only the difference for those lost
//! copies in the churn test). Such blobs are remembered by address, up to
//! [`MAX_RECENT`]; past it, and for a vault's first pass, a pass sends
//! every blob to every holder.

use spacevault_chain::holders::{nearest, Place};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The wait before a pass that could not send every copy runs again.
pub const PASS_RETRY: Duration = Duration::from_secs(30);

/// The holders (with their places; this vault's included, when it is one)
/// seen by a pass.
pub type View = Vec<Place>;

/// Blobs stored since a pass began that are remembered at most (32 bytes
/// each); past it, the next pass sends everything to every holder.
pub const MAX_RECENT: usize = 1 << 16;

/// What the vault table keeps of its passes.
#[derive(Default)]
pub struct Passes {
    /// The generation of the vault set the last pass started for.
    started_for: u64,
    running: bool,
    /// When the last pass, incomplete, is due again.
    retry_at: Option<Instant>,
    /// The view of the last complete pass: every blob stored here before
    /// it began went to its holders in that view.
    base: Option<View>,
    /// The blobs stored since the running (or last) pass began.
    recent: Recent,
}

/// Blobs stored since a point, or more of them than were remembered.
#[derive(Clone, Debug, PartialEq)]
enum Recent {
    These(HashSet<[u8; 32]>),
    TooMany,
}

impl Default for Recent {
    fn default() -> Self {
        Recent::These(HashSet::new())
    }
}

impl Recent {
    fn note(&mut self, address: [u8; 32]) {
        if let Recent::These(set) = self {
            set.insert(address);
            if set.len() > MAX_RECENT {
                *self = Recent::TooMany;
            }
        }
    }

    fn merge(&mut self, other: Recent) {
        match other {
            Recent::These(set) => set.into_iter().for_each(|a| self.note(a)),
            Recent::TooMany => *self = Recent::TooMany,
        }
    }
}

/// A pass under way.
#[derive(Clone, Debug, PartialEq)]
pub struct Pass {
    /// The vaults it sends to the holders among.
    pub now: View,
    /// The view of the last complete pass, if any.
    base: Option<View>,
    /// The blobs stored since the last pass began.
    recent: Recent,
}

impl Pass {
    /// The holders (farmer keys, this vault's included) this pass sends the
    /// blob at `address` to, out of `r` holders: its holders now, less
    /// those it had in the base view, unless it was stored since.
    pub fn targets(&self, address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
        let mut now = nearest(&self.now, address, r);
        let Some(base) = &self.base else { return now };
        let stored_since = match &self.recent {
            Recent::These(set) => set.contains(address),
            Recent::TooMany => true,
        };
        if !stored_since {
            let then = nearest(base, address, r);
            now.retain(|k| !then.contains(k));
        }
        now
    }
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
            now: view(),
            base: self.base.clone(),
            recent: std::mem::take(&mut self.recent),
        })
    }

    /// A blob was stored here (a new one, or a damaged copy replaced).
    pub fn stored(&mut self, address: [u8; 32]) {
        self.recent.note(address);
    }

    /// The pass ended; `complete` when every copy it meant to send was
    /// taken: its view is then the base of the next. An incomplete one runs
    /// again after [`PASS_RETRY`], against the same base and with the blobs
    /// stored since it began.
    pub fn finish(&mut self, pass: Pass, complete: bool, now: Instant) {
        self.running = false;
        if complete {
            self.base = Some(pass.now);
        } else {
            self.recent.merge(pass.recent);
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

    /// Vaults placed at their keys, as in the bootstrap era.
    fn view(keys: &[u8]) -> View {
        keys.iter().map(|&i| Place::at_key(key(i))).collect()
    }

    fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        std::array::from_fn(|i| a[i] ^ b[i])
    }

    #[test]
    fn the_nearest_are_those_a_full_sort_gives() {
        // Places apart from keys: the order is by place alone.
        let view: View = (0..64u8)
            .map(|i| Place {
                key: *blake3::hash(&[i]).as_bytes(),
                place: *blake3::hash(&[i, 2]).as_bytes(),
            })
            .collect();
        for a in 0..32u8 {
            let address = *blake3::hash(&[a, 1]).as_bytes();
            let mut sorted = view.clone();
            sorted.sort_by_key(|p| xor(&p.place, &address));
            for r in [0, 1, 4, 63, 64, 100] {
                let want: Vec<_> = sorted.iter().take(r).map(|p| p.key).collect();
                assert_eq!(nearest(&view, &address, r), want, "r = {r}");
            }
        }
    }

    #[test]
    fn holders_are_the_nearest_by_xor() {
        let view = view(&[0x00, 0x10, 0x11, 0x20, 0x30]);
        assert_eq!(nearest(&view, &key(0x12), 2), vec![key(0x10), key(0x11)]);
        assert_eq!(nearest(&view, &key(0x13), 2), vec![key(0x11), key(0x10)]);
        assert_eq!(nearest(&view, &key(0x01), 1), vec![key(0x00)]);
        assert_eq!(nearest(&view, &key(0xff), 10).len(), 5);
    }

    #[test]
    fn one_pass_at_a_time_and_a_change_meanwhile_is_not_lost() {
        let t = Instant::now();
        let mut p = Passes::default();
        let pass = p.start(1, t, || view(&[1])).expect("a first pass");
        // The set changes twice while it runs: no second pass.
        assert_eq!(p.start(2, t, || view(&[1, 2])), None);
        assert_eq!(p.start(3, t, || view(&[1, 2, 3])), None);
        p.finish(pass, true, t);
        // The next pass covers the changes.
        let next = p.start(3, t, || view(&[1, 2, 3])).expect("the next pass");
        assert_eq!(next.now.len(), 3);
        assert_eq!(next.base, Some(view(&[1])), "the first pass's view");
        assert_eq!(p.start(3, t, || unreachable!()), None);
        // An incomplete pass runs again once its retry is due, with no
        // change of the set.
        p.finish(next, false, t);
        assert_eq!(p.start(3, t + PASS_RETRY / 2, || unreachable!()), None);
        let again = p.start(3, t + PASS_RETRY, || view(&[4])).expect("a retry");
        p.finish(again, true, t + PASS_RETRY);
        let later = t + 10 * PASS_RETRY;
        assert_eq!(
            p.start(3, later, || unreachable!()),
            None,
            "nothing changed since"
        );
    }

    /// Addresses whose two nearest among keys 0x00..=0x30 differ when key
    /// 0x31 joins: those near 0x31.
    #[test]
    fn a_pass_sends_a_blob_only_to_holders_it_did_not_have() {
        let t = Instant::now();
        let old = view(&[0x00, 0x10, 0x20, 0x30]);
        let mut new = old.clone();
        new.push(Place::at_key(key(0x31)));
        let mut p = Passes::default();
        // The first pass knows no base: every holder.
        let first = p.start(1, t, || old.clone()).unwrap();
        assert_eq!(first.targets(&key(0x01), 2), vec![key(0x00), key(0x10)]);
        p.finish(first, true, t);
        let stored_since = key(0x02);
        p.stored(stored_since);
        let pass = p.start(2, t, || new.clone()).unwrap();
        // Holders unchanged: nothing to send.
        assert_eq!(pass.targets(&key(0x01), 2), Vec::<[u8; 32]>::new());
        // 0x31 joined the nearest of 0x33 (with 0x30): only it.
        assert_eq!(pass.targets(&key(0x33), 2), vec![key(0x31)]);
        // A blob stored since the last pass began: every holder.
        assert_eq!(pass.targets(&stored_since, 2), vec![key(0x00), key(0x10)]);
        // An incomplete pass keeps its base and its stored blobs.
        p.finish(pass, false, t);
        let again = p.start(2, t + PASS_RETRY, || new.clone()).unwrap();
        assert_eq!(again.targets(&key(0x33), 2), vec![key(0x31)]);
        assert_eq!(again.targets(&stored_since, 2).len(), 2);
        p.finish(again, true, t + PASS_RETRY);
        // Now the base is the new view, and nothing was stored since.
        let mut newer = new.clone();
        newer.push(Place::at_key(key(0x03)));
        let next = p.start(3, t + PASS_RETRY, || newer.clone()).unwrap();
        assert_eq!(next.targets(&key(0x33), 2), Vec::<[u8; 32]>::new());
        assert_eq!(next.targets(&stored_since, 2), vec![key(0x03)]);
    }

    #[test]
    fn too_many_blobs_stored_since_sends_everything() {
        let t = Instant::now();
        let view = view(&[0x00, 0x10]);
        let mut p = Passes::default();
        let first = p.start(1, t, || view.clone()).unwrap();
        p.finish(first, true, t);
        for i in 0..=MAX_RECENT as u32 {
            let mut a = [0xffu8; 32];
            a[..4].copy_from_slice(&i.to_le_bytes());
            p.stored(a);
        }
        let pass = p.start(2, t, || view.clone()).unwrap();
        assert_eq!(pass.recent, Recent::TooMany);
        assert_eq!(pass.targets(&key(0x01), 2).len(), 2);
    }
}
