//! Whether this vault's clock agrees with the network's, as the slots
//! tell it: a timekeeper gossips each slot's output at the slot's due
//! time, so an output that reaches this vault *before* its due time by
//! this vault's clock says the clock is behind (by that much, less the
//! delay on the way). Past the allowance ([`SLOT_SKEW_MS`]) outputs are
//! refused as early, unchecked (anyone could send one, so they count for
//! nothing here), and the vault falls out of the line of slots; the
//! operator is told before then, from the outputs it checked. Outputs that arrive long after their due
//! time say this clock is ahead, or the timekeeper slow: both are told,
//! as what they are.
//!
//! The estimate is the median of the last [`SAMPLES`] outputs' offsets
//! (arrival less due time), so a few delayed messages move nothing.

use crate::time::SLOT_SKEW_MS;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Offsets the estimate keeps.
pub const SAMPLES: usize = 32;
/// Offsets needed before anything is told.
pub const MIN_SAMPLES: usize = 8;

/// What the slots say of this vault's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Too few slots heard yet.
    Unknown,
    /// Outputs arrive within the allowance of their due time.
    Agrees,
    /// Outputs arrive this many ms before their due time: the clock is
    /// behind, by at least this much.
    Behind(u64),
    /// Outputs arrive this many ms after their due time, a slot or more:
    /// the clock is ahead, or the timekeeper slow.
    Late(u64),
}

impl Verdict {
    /// A line for the log and the page; none while the clock agrees or
    /// nothing is known.
    pub fn warning(&self, slot_ms: u64) -> Option<String> {
        match *self {
            Verdict::Behind(ms) => Some(format!(
                "this vault's clock is behind the network's by at least {ms} ms: slot outputs \
                 arrive before their due time, and past {SLOT_SKEW_MS} ms they are refused; \
                 set the clock (NTP)"
            )),
            Verdict::Late(ms) => Some(format!(
                "slot outputs arrive {ms} ms after their due time (slots of {slot_ms} ms): this \
                 vault's clock is ahead, or the timekeeper slow"
            )),
            Verdict::Unknown | Verdict::Agrees => None,
        }
    }
}

/// The offsets of the slot outputs heard last, and the verdict told last.
#[derive(Default)]
pub struct ClockCheck {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    offsets: VecDeque<i64>,
    told: Option<Verdict>,
}

impl ClockCheck {
    /// Notes that slot `slot`'s output, due at `due_ms`, arrived at
    /// `now_ms`; returns the verdict when it changed from the last told.
    pub fn observe(&self, due_ms: u64, now_ms: u64, slot_ms: u64) -> Option<Verdict> {
        let offset = now_ms as i64 - due_ms as i64;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.offsets.len() == SAMPLES {
            state.offsets.pop_front();
        }
        state.offsets.push_back(offset);
        let verdict = verdict(&state.offsets, slot_ms);
        (state.told != Some(verdict)).then(|| {
            state.told = Some(verdict);
            verdict
        })
    }

    /// The median offset (ms; positive: outputs arrive after their due
    /// time), once there are enough.
    pub fn offset_ms(&self) -> Option<i64> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        median(&state.offsets)
    }

    /// What the offsets heard say now.
    pub fn verdict(&self, slot_ms: u64) -> Verdict {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        verdict(&state.offsets, slot_ms)
    }
}

fn median(offsets: &VecDeque<i64>) -> Option<i64> {
    if offsets.len() < MIN_SAMPLES {
        return None;
    }
    let mut sorted: Vec<i64> = offsets.iter().copied().collect();
    sorted.sort_unstable();
    Some(sorted[sorted.len() / 2])
}

/// Behind when the median output comes more than half the allowance early
/// (before the allowance is spent and outputs are refused); late when it
/// comes more than a slot, and the allowance, after its due time.
fn verdict(offsets: &VecDeque<i64>, slot_ms: u64) -> Verdict {
    let Some(median) = median(offsets) else {
        return Verdict::Unknown;
    };
    let early = -median;
    if early > (SLOT_SKEW_MS / 2) as i64 {
        Verdict::Behind(early as u64)
    } else if median > (slot_ms + SLOT_SKEW_MS) as i64 {
        Verdict::Late(median as u64)
    } else {
        Verdict::Agrees
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: u64 = 1000;

    fn heard(check: &ClockCheck, offsets: &[i64]) -> Vec<Verdict> {
        offsets
            .iter()
            .filter_map(|&o| check.observe(10_000, (10_000 + o) as u64, SLOT))
            .collect()
    }

    #[test]
    fn nothing_is_told_before_enough_outputs_and_a_few_delays_move_nothing() {
        let check = ClockCheck::default();
        assert_eq!(heard(&check, &[40; MIN_SAMPLES - 1]), [Verdict::Unknown]);
        assert_eq!(check.offset_ms(), None);
        assert_eq!(heard(&check, &[40]), [Verdict::Agrees]);
        // Three outputs held up for seconds: the median stays.
        assert_eq!(heard(&check, &[5000, 6000, 7000]), []);
        assert_eq!(check.offset_ms(), Some(40));
        assert_eq!(check.verdict(SLOT).warning(SLOT), None);
    }

    #[test]
    fn outputs_before_their_time_say_the_clock_is_behind_and_it_is_told_once() {
        let check = ClockCheck::default();
        heard(&check, &[30; SAMPLES]);
        // The clock falls 400 ms behind: once most outputs say so, it is
        // told, once.
        let told = heard(&check, &[-370; SAMPLES]);
        assert_eq!(told, [Verdict::Behind(370)]);
        assert!(check
            .verdict(SLOT)
            .warning(SLOT)
            .unwrap()
            .contains("behind"));
        // Set right again.
        assert_eq!(heard(&check, &[20; SAMPLES]), [Verdict::Agrees]);
    }

    #[test]
    fn outputs_a_slot_late_say_the_clock_is_ahead_or_the_timekeeper_slow() {
        let check = ClockCheck::default();
        assert_eq!(
            heard(&check, &[1600; SAMPLES]),
            [Verdict::Unknown, Verdict::Late(1600)]
        );
        assert!(check.verdict(SLOT).warning(SLOT).unwrap().contains("ahead"));
        // Within a slot and the allowance: it agrees.
        let check = ClockCheck::default();
        heard(&check, &[1400; SAMPLES]);
        assert_eq!(check.verdict(SLOT), Verdict::Agrees);
        // Early, but by less than half the allowance: it agrees.
        let check = ClockCheck::default();
        heard(&check, &[-200; SAMPLES]);
        assert_eq!(check.verdict(SLOT), Verdict::Agrees);
    }
}
