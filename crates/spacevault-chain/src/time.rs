//! The proof of time: a line of slots, each slot's output the VDF
//! ([`spacevault_vdf`]) of the output before, so that a slot's challenge
//! cannot be known before the slots ahead of it have been computed, one
//! squaring after another, by someone.
//!
//! The line is cut into eras of [`TimeParams::era_slots`] slots. An era
//! has a class group of its own, drawn from its seed; its first slot
//! starts from the group's generator, each later slot from the output of
//! the slot before. An era's seed hashes the chain id, the era's number,
//! the last output of the era before and an entropy: the hash of a block
//! of the branch the line serves, one whole era older than the era
//! ([`Branch`]). The far future cannot be computed ahead of the chain
//! that reaches it, and drawing a group (some 20 ms) is paid once an era,
//! not once a slot.
//!
//! Each branch thus has its line: branches that share their blocks up to
//! an era's entropy block share the era's line, and a branch that differs
//! there has a line of its own from that era on. A slot's output names its
//! line (the era's seed), and a block's slot output is checked on its own
//! branch's line.
//!
//! Slots are numbered from 1; slot 0 is the genesis, with no output.

mod branch;
mod checked;

use crate::codec::{DecodeError, Reader, Writer};
pub use branch::{Branch, MissingSlot};
pub use checked::{CheckedSlots, CHECKED_SLOTS};
use spacevault_vdf::Group;
pub use spacevault_vdf::FORM_BYTES;

/// The encoding version of a slot's output: 2 names the line it is on.
pub const TIME_VERSION: u16 = 2;

/// Context strings of BLAKE3's `derive_key` for the proof of time.
pub mod context {
    pub const ERA: &str = "spacevault 2026-11 time era v1";
    pub const SLOT_CHALLENGE: &str = "spacevault 2026-11 time slot challenge v1";
}

/// What a chain fixes of its proof of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeParams {
    /// Squarings a slot.
    pub iterations: u64,
    /// Slots an era (one group, one entropy).
    pub era_slots: u64,
    /// Bits of each era's discriminant (a multiple of 8, 512 to 1024).
    pub discriminant_bits: u32,
}

impl TimeParams {
    /// The era slot `slot` (≥ 1) belongs to.
    pub fn era_of(&self, slot: u64) -> u64 {
        slot.saturating_sub(1) / self.era_slots
    }

    /// The last slot of era `era`: its output goes into the next era's
    /// seed.
    pub fn era_closing_slot(&self, era: u64) -> u64 {
        era.saturating_add(1).saturating_mul(self.era_slots)
    }

    /// Why these parameters make no line of slots, if they do not.
    pub fn check(&self) -> Result<(), TimeError> {
        if self.iterations == 0 {
            return Err(TimeError::Params("a slot needs at least one iteration"));
        }
        if self.era_slots == 0 {
            return Err(TimeError::Params("an era needs at least one slot"));
        }
        if !(512..=1024).contains(&self.discriminant_bits)
            || !self.discriminant_bits.is_multiple_of(8)
        {
            return Err(TimeError::Params(
                "discriminants are 512 to 1024 bits, whole bytes",
            ));
        }
        Ok(())
    }
}

/// Why a slot's output is refused, or a line cannot begin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("the proof of time's parameters: {0}")]
    Params(&'static str),
    #[error("slot {got} is not the slot that follows ({expected})")]
    WrongSlot { expected: u64, got: u64 },
    #[error("the output of slot {slot} is on another line")]
    OtherLine { slot: u64 },
    #[error("slot {slot} is not in era {era}")]
    OtherEra { slot: u64, era: u64 },
    #[error("the output of slot {slot} is not proved: {why}")]
    NotProved {
        slot: u64,
        why: spacevault_vdf::VdfError,
    },
}

/// One slot's output and its proof, as timekeepers gossip them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotOutput {
    pub slot: u64,
    /// The line it is on: its era's seed.
    pub line: [u8; 32],
    /// The VDF's output, a class group element in Chia's compressed form.
    pub output: [u8; FORM_BYTES],
    /// Wesolowski's proof that the output follows the slot's input.
    pub proof: [u8; FORM_BYTES],
}

impl SlotOutput {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(TIME_VERSION)
            .u64(self.slot)
            .fixed(&self.line)
            .fixed(&self.output)
            .fixed(&self.proof);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<SlotOutput, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u16("slot output version")?;
        if version != TIME_VERSION {
            return Err(DecodeError::UnknownVersion {
                what: "slot output",
                version,
            });
        }
        let out = SlotOutput {
            slot: r.u64("slot")?,
            line: r.array("slot line")?,
            output: r.array("slot output")?,
            proof: r.array("slot proof")?,
        };
        r.finish()?;
        Ok(out)
    }

    /// The challenge this slot gives proofs of space.
    pub fn challenge(&self, chain_id: &[u8; 32]) -> [u8; 32] {
        slot_challenge(chain_id, self.slot, &self.output)
    }
}

/// The challenge slot `slot` gives proofs of space: BLAKE3's
/// `derive_key` over the chain id, the slot (little-endian) and its
/// output.
pub fn slot_challenge(chain_id: &[u8; 32], slot: u64, output: &[u8; FORM_BYTES]) -> [u8; 32] {
    let mut bytes = Vec::with_capacity(32 + 8 + FORM_BYTES);
    bytes.extend_from_slice(chain_id);
    bytes.extend_from_slice(&slot.to_le_bytes());
    bytes.extend_from_slice(output);
    blake3::derive_key(context::SLOT_CHALLENGE, &bytes)
}

/// The seed of era `era`: the chain id, the era's number, the last output
/// of the era before (zeros for era 0) and the entropy mixed in.
pub fn era_seed(
    chain_id: &[u8; 32],
    era: u64,
    last_output: &[u8; FORM_BYTES],
    entropy: &[u8; 32],
) -> [u8; 32] {
    let mut bytes = Vec::with_capacity(32 + 8 + FORM_BYTES + 32);
    bytes.extend_from_slice(chain_id);
    bytes.extend_from_slice(&era.to_le_bytes());
    bytes.extend_from_slice(last_output);
    bytes.extend_from_slice(entropy);
    blake3::derive_key(context::ERA, &bytes)
}

/// The seed of era 0 on every branch: no block is old enough yet, so
/// its entropy is the genesis hash.
pub fn first_line(chain_id: &[u8; 32]) -> [u8; 32] {
    era_seed(
        chain_id,
        0,
        &[0; FORM_BYTES],
        &crate::genesis::genesis_hash(chain_id),
    )
}

/// This machine's squarings a second at `discriminant_bits`, measured for
/// about `for_ms` milliseconds on the calling thread.
pub fn squarings_per_second(discriminant_bits: u32, for_ms: u64) -> f64 {
    let group = Group::from_seed(b"spacevault squarings a second", discriminant_bits);
    let mut x = group.generator();
    let started = std::time::Instant::now();
    let mut done = 0u64;
    while started.elapsed().as_millis() < u128::from(for_ms.max(1)) {
        x = spacevault_vdf::wesolowski::evaluate(&x, 1000, group.ctx());
        done += 1000;
    }
    done as f64 / started.elapsed().as_secs_f64()
}

/// What a timekeeper's proof of a slot of `iterations` squarings costs,
/// in squarings: from checkpoints, a composition for each checkpoint and
/// two for each digit value, each taken as 1.25 squarings (about 1.05
/// measured at 1024 bits); by long division, as many as the evaluation.
pub fn proof_squarings(iterations: u64) -> u64 {
    match spacevault_vdf::wesolowski::checkpoint_spacing(iterations) {
        Some(k) => (iterations.div_ceil(u64::from(k)) + (2u64 << k)) * 5 / 4,
        None => iterations,
    }
}

/// The squarings a slot of `slot_ms` that a timekeeper doing
/// `squarings_per_second` evaluates and proves in 80% of the slot: what
/// `chain init` proposes.
pub fn proposed_iterations(squarings_per_second: f64, slot_ms: u64) -> u64 {
    let slot_s = slot_ms as f64 / 1000.0;
    let budget = (squarings_per_second * slot_s * 0.8) as u64;
    let fits = |t: u64| t.saturating_add(proof_squarings(t)) <= budget;
    // The most that fits: the proof's share only shrinks as t grows,
    // so what fits is a range from 1.
    let (mut lo, mut hi) = (1u64, budget.max(1));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Where a line of slots stands: the last slot proved, its output, and
/// the era's seed and group. What a timekeeper extends and every vault
/// follows.
#[derive(Clone, Debug)]
pub struct Timeline {
    chain_id: [u8; 32],
    params: TimeParams,
    /// The era's seed: the line's name.
    seed: [u8; 32],
    slot: u64,
    /// The last slot's output: the next slot's input within its era.
    last: [u8; FORM_BYTES],
    /// The group of the era of the next slot, once begun.
    group: Group,
    era: u64,
}

impl Timeline {
    /// A line whose era 0 is begun with `entropy` (a chain's line begins
    /// with the genesis hash: [`Timeline::first`]).
    pub fn new(
        chain_id: [u8; 32],
        params: TimeParams,
        entropy: &[u8; 32],
    ) -> Result<Timeline, TimeError> {
        let seed = era_seed(&chain_id, 0, &[0; FORM_BYTES], entropy);
        Timeline::on_line(chain_id, params, seed, 0, None)
    }

    /// A chain's line at the genesis: era 0, which every branch shares.
    pub fn first(chain_id: [u8; 32], params: TimeParams) -> Result<Timeline, TimeError> {
        Timeline::on_line(chain_id, params, first_line(&chain_id), 0, None)
    }

    /// The line of era `era` named `seed`: at the era's start, or, for a
    /// vault that kept its slots, after `at` (a slot of that line and era).
    /// If the slot after `at` opens the next era, [`Timeline::begin_era`]
    /// comes next, as on a line that never stopped.
    pub fn on_line(
        chain_id: [u8; 32],
        params: TimeParams,
        seed: [u8; 32],
        era: u64,
        at: Option<&SlotOutput>,
    ) -> Result<Timeline, TimeError> {
        params.check()?;
        let (slot, last) = match at {
            None => (era.saturating_mul(params.era_slots), [0; FORM_BYTES]),
            Some(at) if at.line != seed => return Err(TimeError::OtherLine { slot: at.slot }),
            Some(at) if at.slot == 0 || params.era_of(at.slot) != era => {
                return Err(TimeError::OtherEra { slot: at.slot, era })
            }
            Some(at) => (at.slot, at.output),
        };
        Ok(Timeline {
            chain_id,
            params,
            seed,
            slot,
            last,
            group: Group::from_seed(&seed, params.discriminant_bits),
            era,
        })
    }

    pub fn params(&self) -> &TimeParams {
        &self.params
    }

    /// The last slot with an output (0 at the genesis; an era's opening
    /// slot on a line begun without its slots).
    pub fn slot(&self) -> u64 {
        self.slot
    }

    /// The line's name: the seed of its era.
    pub fn seed(&self) -> [u8; 32] {
        self.seed
    }

    /// The era of the next slot, once begun.
    pub fn era(&self) -> u64 {
        self.era
    }

    /// The last slot's output (zeros before an era's first).
    pub fn last_output(&self) -> [u8; FORM_BYTES] {
        self.last
    }

    /// The era slot `slot` (≥ 1) belongs to.
    pub fn era_of(&self, slot: u64) -> u64 {
        self.params.era_of(slot)
    }

    /// Whether the next slot opens a new era, which [`Timeline::begin_era`]
    /// must begin with its entropy first.
    pub fn needs_era(&self) -> bool {
        self.era_of(self.slot + 1) != self.era
    }

    /// Begins the era of the next slot with `entropy`.
    pub fn begin_era(&mut self, entropy: &[u8; 32]) {
        let era = self.era_of(self.slot + 1);
        let seed = era_seed(&self.chain_id, era, &self.last, entropy);
        self.group = Group::from_seed(&seed, self.params.discriminant_bits);
        self.seed = seed;
        self.era = era;
    }

    /// The next slot's input: the generator at an era's first slot, else
    /// the last output.
    fn next_input(&self) -> [u8; FORM_BYTES] {
        let next = self.slot + 1;
        if (next - 1).is_multiple_of(self.params.era_slots) {
            self.group.serialize(&self.group.generator())
        } else {
            self.last
        }
    }

    /// Computes the next slot's output and proof: what a timekeeper does,
    /// `iterations` squarings one after another, then the proof from the
    /// checkpoints kept on the way ([`proof_squarings`]).
    pub fn prove_next(&self) -> SlotOutput {
        assert!(!self.needs_era(), "begin the next era first");
        let input = self
            .group
            .deserialize(&self.next_input())
            .expect("its own form");
        let proved = self.group.prove(&input, self.params.iterations);
        SlotOutput {
            slot: self.slot + 1,
            line: self.seed,
            output: proved.y,
            proof: proved.proof,
        }
    }

    /// Checks `out` as the next slot's output (a few milliseconds, or
    /// none where `shared` holds it, checked by a vault sharing the set):
    /// what [`Timeline::advance_checked`] then moves the line to without
    /// checking it again.
    pub fn verify_next(
        &self,
        out: &SlotOutput,
        shared: Option<&CheckedSlots>,
    ) -> Result<Checked, TimeError> {
        assert!(!self.needs_era(), "begin the next era first");
        if out.slot != self.slot + 1 {
            return Err(TimeError::WrongSlot {
                expected: self.slot + 1,
                got: out.slot,
            });
        }
        if out.line != self.seed {
            return Err(TimeError::OtherLine { slot: out.slot });
        }
        let input = self.next_input();
        let checked = Checked {
            slot: out.slot,
            output: out.output,
            remembered: true,
        };
        if shared.is_some_and(|s| s.holds(&self.params, &input, out)) {
            return Ok(checked);
        }
        // Fingerprinted by its slot: a slot has one output, and a vault
        // that checks a slot twice did the same work twice.
        spacevault_meter::timed_on(spacevault_meter::Op::VerifySlot, out.slot.max(1), || {
            self.group
                .verify(&input, &out.output, &out.proof, self.params.iterations)
        })
        .map_err(|why| TimeError::NotProved {
            slot: out.slot,
            why,
        })?;
        if let Some(shared) = shared {
            shared.remember(&self.params, &input, out);
        }
        Ok(Checked {
            remembered: false,
            ..checked
        })
    }

    /// Moves the line to `at`, a later slot of its own line and era that
    /// was checked before (a vault's store kept it), without checking it
    /// again: where a line begun earlier catches up with what was kept
    /// meanwhile.
    pub fn resume_at(&mut self, at: &SlotOutput) -> Result<(), TimeError> {
        if at.line != self.seed {
            return Err(TimeError::OtherLine { slot: at.slot });
        }
        if at.slot <= self.slot || self.params.era_of(at.slot) != self.era {
            return Err(TimeError::OtherEra {
                slot: at.slot,
                era: self.era,
            });
        }
        self.slot = at.slot;
        self.last = at.output;
        Ok(())
    }

    /// Checks `out` and moves the line on to it.
    pub fn advance(&mut self, out: &SlotOutput) -> Result<(), TimeError> {
        let checked = self.verify_next(out, None)?;
        self.advance_checked(checked);
        Ok(())
    }

    /// Moves the line on to a slot [`Timeline::verify_next`] checked: a
    /// caller that keeps the slot between the check and the move (a
    /// vault stores it first) checks it once, not twice.
    pub fn advance_checked(&mut self, checked: Checked) {
        debug_assert_eq!(checked.slot, self.slot + 1);
        self.slot = checked.slot;
        self.last = checked.output;
    }
}

/// A slot's output that [`Timeline::verify_next`] checked, and only it
/// makes.
#[derive(Debug)]
#[must_use = "a checked slot moves the line with `advance_checked`"]
pub struct Checked {
    slot: u64,
    output: [u8; FORM_BYTES],
    remembered: bool,
}

impl Checked {
    /// Whether a vault sharing the set of checked outputs had checked it
    /// (none was made here).
    pub fn remembered(&self) -> bool {
        self.remembered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const PARAMS: TimeParams = TimeParams {
        iterations: 200,
        era_slots: 3,
        discriminant_bits: 512,
    };

    fn line() -> Timeline {
        Timeline::new([7; 32], PARAMS, &[1; 32]).unwrap()
    }

    #[test]
    fn parameters_that_make_no_line_are_refused() {
        for params in [
            TimeParams {
                iterations: 0,
                ..PARAMS
            },
            TimeParams {
                era_slots: 0,
                ..PARAMS
            },
            TimeParams {
                discriminant_bits: 504,
                ..PARAMS
            },
            TimeParams {
                discriminant_bits: 1032,
                ..PARAMS
            },
            TimeParams {
                discriminant_bits: 516,
                ..PARAMS
            },
        ] {
            assert!(matches!(
                Timeline::new([7; 32], params, &[1; 32]),
                Err(TimeError::Params(_))
            ));
        }
    }

    /// Runs a timekeeper for `slots` slots; entropy `e` begins each era.
    pub(super) fn keep(line: &mut Timeline, slots: u64, e: [u8; 32]) -> Vec<SlotOutput> {
        (0..slots)
            .map(|_| {
                if line.needs_era() {
                    line.begin_era(&e);
                }
                let out = line.prove_next();
                line.advance(&out).unwrap();
                out
            })
            .collect()
    }

    #[test]
    fn a_follower_checks_every_slot_a_timekeeper_proves_across_eras() {
        let mut keeper = line();
        let outs = keep(&mut keeper, 7, [2; 32]);
        let mut follower = line();
        for out in &outs {
            if follower.needs_era() {
                follower.begin_era(&[2; 32]);
            }
            follower.advance(out).unwrap();
        }
        assert_eq!(follower.slot(), 7);
        // Slots 1, 4 and 7 open eras 0, 1 and 2.
        assert_eq!([1, 3, 4, 7].map(|s| follower.era_of(s)), [0, 0, 1, 2]);
    }

    #[test]
    fn a_line_resumed_from_kept_slots_goes_on_as_the_line_that_never_stopped() {
        let mut keeper = line();
        let outs = keep(&mut keeper, 8, [1; 32]);
        for at in [2usize, 3, 5, 6] {
            let last = &outs[at - 1];
            let era = PARAMS.era_of(last.slot);
            let mut resumed =
                Timeline::on_line([7; 32], PARAMS, last.line, era, Some(last)).unwrap();
            for out in &outs[at..] {
                if resumed.needs_era() {
                    resumed.begin_era(&[1; 32]);
                }
                resumed.advance(out).unwrap();
            }
            assert_eq!(resumed.slot(), 8);
        }
    }

    #[test]
    fn a_wrong_output_proof_or_slot_is_refused_and_the_line_does_not_move() {
        let mut keeper = line();
        let good = keep(&mut keeper.clone(), 1, [2; 32]).remove(0);
        let mut bad = good.clone();
        bad.output = good.proof;
        assert!(matches!(
            keeper.advance(&bad),
            Err(TimeError::NotProved { .. })
        ));
        let mut bad = good.clone();
        bad.proof[5] ^= 1;
        assert!(matches!(
            keeper.advance(&bad),
            Err(TimeError::NotProved { .. })
        ));
        let mut bad = good.clone();
        bad.slot = 2;
        assert_eq!(
            keeper.advance(&bad),
            Err(TimeError::WrongSlot {
                expected: 1,
                got: 2
            })
        );
        assert_eq!(keeper.slot(), 0);
        keeper.advance(&good).unwrap();
    }

    #[test]
    fn another_entropy_makes_another_era_whose_outputs_are_refused() {
        let mut a = line();
        let mut b = line();
        let from_a = keep(&mut a, 4, [2; 32]);
        let from_b = keep(&mut b, 4, [3; 32]);
        // Era 0 began alike; era 1 (slot 4) did not.
        assert_eq!(from_a[..3], from_b[..3]);
        assert_ne!(from_a[3].output, from_b[3].output);
        let mut follower = line();
        for out in &from_a[..3] {
            follower.advance(out).unwrap();
        }
        follower.begin_era(&[2; 32]);
        assert!(follower.verify_next(&from_b[3], None).is_err());
        assert!(follower.verify_next(&from_a[3], None).is_ok());
    }

    #[test]
    fn a_line_begun_at_an_era_or_after_a_slot_takes_only_that_lines_slots() {
        let mut keeper = line();
        let outs = keep(&mut keeper, 6, [2; 32]);
        // Era 1 (slots 4 to 6) begun from its seed alone checks its slots.
        let mut era_1 = Timeline::on_line([7; 32], PARAMS, outs[3].line, 1, None).unwrap();
        assert_eq!(era_1.slot(), 3);
        assert!(!era_1.needs_era());
        for out in &outs[3..] {
            era_1.advance(out).unwrap();
        }
        // Another line's output, or a slot of another era, is refused.
        let mut other = outs[4].clone();
        other.line[0] ^= 1;
        assert_eq!(
            Timeline::on_line([7; 32], PARAMS, outs[4].line, 1, Some(&other)).unwrap_err(),
            TimeError::OtherLine { slot: 5 }
        );
        assert_eq!(
            Timeline::on_line([7; 32], PARAMS, outs[4].line, 0, Some(&outs[4])).unwrap_err(),
            TimeError::OtherEra { slot: 5, era: 0 }
        );
        // A line begun before its later slots were kept moves to them.
        let mut behind = Timeline::on_line([7; 32], PARAMS, outs[3].line, 1, None).unwrap();
        behind.resume_at(&outs[4]).unwrap();
        assert_eq!(behind.slot(), 5);
        assert!(behind.resume_at(&outs[4]).is_err(), "not back");
        assert!(behind.resume_at(&outs[0]).is_err(), "not another line");
        behind.advance(&outs[5]).unwrap();
        let mut era_1 = Timeline::on_line([7; 32], PARAMS, outs[3].line, 1, None).unwrap();
        let mut wrong = outs[3].clone();
        wrong.line = outs[0].line;
        assert_eq!(era_1.advance(&wrong), Err(TimeError::OtherLine { slot: 4 }));
    }

    #[test]
    fn a_slots_challenge_depends_on_its_chain_slot_and_output() {
        let out = keep(&mut line(), 1, [2; 32]).remove(0);
        let c = out.challenge(&[7; 32]);
        assert_ne!(c, out.challenge(&[8; 32]));
        let mut other = out.clone();
        other.slot += 1;
        assert_ne!(c, other.challenge(&[7; 32]));
    }

    #[test]
    fn the_proposal_leaves_a_fifth_of_the_slot_spare() {
        // 100,000 squarings/s and 1 s slots: evaluated and proved in 0.8
        // s, the proof from checkpoints a small share.
        let t = proposed_iterations(100_000.0, 1000);
        assert!(t + proof_squarings(t) <= 80_000);
        assert!(t + 1 + proof_squarings(t + 1) > 80_000);
        assert!(t > 64_000, "{t}: the proof takes more than a fifth");
        assert_eq!(t, 69_120);
        // A checkpoint every 10 squarings: 10,000 compositions and 2 × 2^10,
        // each 1.25 squarings.
        assert_eq!(proof_squarings(100_000), 15_060);
        // By long division the proof would cost the evaluation again.
        assert_eq!(proof_squarings(10), 10);
        assert_eq!(proposed_iterations(0.0, 1000), 1);
        // Any machine does more than a thousand squarings a second at 512
        // bits (this one, about 245,000).
        assert!(squarings_per_second(512, 20) > 1000.0);
    }

    #[test]
    fn a_slot_output_decodes_only_from_its_own_encoding() {
        let out = keep(&mut line(), 1, [2; 32]).remove(0);
        let bytes = out.encode();
        assert_eq!(bytes.len(), 2 + 8 + 32 + 2 * FORM_BYTES);
        assert_eq!(SlotOutput::decode(&bytes), Ok(out));
        assert!(SlotOutput::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(SlotOutput::decode(&longer).is_err());
        let mut other_version = bytes;
        other_version[0] = 1;
        assert!(matches!(
            SlotOutput::decode(&other_version),
            Err(DecodeError::UnknownVersion { .. })
        ));
    }
}
