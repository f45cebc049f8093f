//! Wesolowski's proof that y = x^(2^T) in a class group ("Efficient
//! verifiable delay functions", 2019), with Chia's parameters: the prime
//! B is drawn from the serialized x and y (264 bits, top bit set), and
//! the proof is π = x^⌊2^T/B⌋, checked as π^B · x^(2^T mod B) = y.

use crate::bqfc;
use crate::form::Form;
use crate::nucomp::{nucomp, nudupl, pow2, Ctx};
use crate::prime::hash_prime;
use rug::Integer;

/// Bits of the challenge prime B.
pub const B_BITS: u32 = 264;

/// The challenge prime of the claim y = x^(2^T), drawn from their bytes.
pub fn challenge_prime(x: &Form, y: &Form, d: &Integer) -> Option<Integer> {
    let mut seed = Vec::with_capacity(2 * bqfc::FORM_BYTES);
    seed.extend_from_slice(&bqfc::serialize(x, d)?);
    seed.extend_from_slice(&bqfc::serialize(y, d)?);
    Some(hash_prime(&seed, B_BITS, &[B_BITS - 1]))
}

/// y = x^(2^t): t squarings one after the other, the delay itself.
pub fn evaluate(x: &Form, t: u64, ctx: &Ctx) -> Form {
    let mut y = x.clone();
    for _ in 0..t {
        y = nudupl(&y, ctx);
    }
    y
}

/// π = x^⌊2^t/B⌋ for the claim's prime B, by long division of 2^t by B
/// one bit at a time: t squarings more (and a composition with x for each
/// bit of the quotient that is set).
pub fn prove(x: &Form, y: &Form, t: u64, ctx: &Ctx) -> Option<Form> {
    let b = challenge_prime(x, y, &ctx.d)?;
    let mut proof = Form::identity(&ctx.d);
    let mut r = Integer::from(1);
    for _ in 0..t {
        r <<= 1;
        proof = nudupl(&proof, ctx);
        if r >= b {
            r -= &b;
            proof = nucomp(&proof, x, ctx);
        }
    }
    Some(proof)
}

/// The most checkpoints [`evaluate_keeping`] keeps (a form is a few
/// hundred bytes: 2^18 of them, some 80 MiB at 1024 bits). Past it a
/// proof is made by long division ([`prove`]).
pub const MAX_CHECKPOINTS: u64 = 1 << 18;

/// The widest spacing: [`prove_from_checkpoints`] keeps a slot for each of
/// the 2^κ digit values (2^20 of them, some 60 MiB).
pub const MAX_SPACING: u32 = 20;

/// The spacing κ of checkpoints that makes the cheapest proof of `t`
/// iterations from them: one composition a checkpoint (t/κ) and two for
/// each of the 2^κ digit values, the least of t/κ + 2^(κ+1). None when
/// no spacing up to [`MAX_SPACING`] keeps at most [`MAX_CHECKPOINTS`], or
/// the proof would cost more than half the long division's t squarings
/// (a composition costs about a squaring): checkpoints do not pay.
pub fn checkpoint_spacing(t: u64) -> Option<u32> {
    let cost = |k: u32| t.div_ceil(u64::from(k)) + (2u64 << k);
    let k = (1..=MAX_SPACING)
        .filter(|&k| t.div_ceil(u64::from(k)) <= MAX_CHECKPOINTS)
        .min_by_key(|&k| cost(k))?;
    (cost(k).saturating_mul(2) <= t).then_some(k)
}

/// y = x^(2^t), keeping x^(2^(κ·i)) for every i with κ·i < t: what
/// [`prove_from_checkpoints`] makes the proof from in a fraction of the
/// squarings.
pub fn evaluate_keeping(x: &Form, t: u64, spacing: u32, ctx: &Ctx) -> (Form, Vec<Form>) {
    let spacing = u64::from(spacing.max(1));
    let mut kept = Vec::with_capacity(usize::try_from(t.div_ceil(spacing)).unwrap_or(0));
    let mut y = x.clone();
    for i in 0..t {
        if i % spacing == 0 {
            kept.push(y.clone());
        }
        y = nudupl(&y, ctx);
    }
    (y, kept)
}

/// π = x^⌊2^t/B⌋ from the checkpoints C_i = x^(2^(κ·i)) that
/// [`evaluate_keeping`] kept, as Wesolowski's paper (section 4.1) and
/// chiavdf make it: with ⌊2^t/B⌋ = Σ b_i·2^(κ·i) in digits of κ bits, π =
/// Π C_i^(b_i). Checkpoints of one digit value v are composed into Y_v
/// (one composition a checkpoint), and Π Y_v^v is summed from the top
/// value down (two compositions a value). The digit b_i is
/// ⌊2^κ·(2^(t−κ(i+1)) mod B) / B⌋, so the quotient itself is never
/// written out. Equal to [`prove`]'s proof, which the tests check.
pub fn prove_from_checkpoints(
    x: &Form,
    y: &Form,
    t: u64,
    spacing: u32,
    checkpoints: &[Form],
    ctx: &Ctx,
) -> Option<Form> {
    if !(1..=MAX_SPACING).contains(&spacing) {
        return None;
    }
    let b = challenge_prime(x, y, &ctx.d)?;
    let k = u64::from(spacing);
    if checkpoints.len() as u64 != t.div_ceil(k) {
        return None;
    }
    let identity = Form::identity(&ctx.d);
    let mut by_digit: Vec<Option<Form>> = vec![None; 1usize << spacing];
    // Digits with κ(i+1) > t are those of 2^(t−κi) < 2^κ ≤ B: zero.
    let whole = t / k;
    let mut r = Integer::from(2)
        .pow_mod(&Integer::from(t - k * whole), &b)
        .ok()?;
    for i in (0..whole).rev() {
        // r = 2^(t−κ(i+1)) mod B.
        let shifted = Integer::from(&r << spacing);
        let (digit, rest) = shifted.div_rem_floor(b.clone());
        r = rest;
        let digit = digit.to_usize()?;
        if digit == 0 {
            continue;
        }
        let c = &checkpoints[usize::try_from(i).ok()?];
        by_digit[digit] = Some(match by_digit[digit].take() {
            None => c.clone(),
            Some(acc) => nucomp(&acc, c, ctx),
        });
    }
    let mut running = identity.clone();
    let mut proof = identity;
    for y_v in by_digit.into_iter().skip(1).rev() {
        if let Some(y_v) = y_v {
            running = nucomp(&running, &y_v, ctx);
        }
        proof = nucomp(&proof, &running, ctx);
    }
    Some(proof)
}

/// Whether π proves y = x^(2^t).
pub fn verify(x: &Form, y: &Form, proof: &Form, t: u64, ctx: &Ctx) -> bool {
    let Some(b) = challenge_prime(x, y, &ctx.d) else {
        return false;
    };
    let r = match Integer::from(2).pow_mod(&Integer::from(t), &b) {
        Ok(r) => r,
        Err(_) => return false,
    };
    pow2(proof, &b, x, &r, ctx) == *y
}

/// The slow twin of [`evaluate`] and [`prove`]: y by Cohen's squaring, the
/// quotient ⌊2^t/B⌋ computed outright and the proof as one exponentiation
/// by Cohen's algorithms.
pub fn prove_slow(x: &Form, t: u64, d: &Integer) -> Option<(Form, Form)> {
    let mut y = x.clone();
    for _ in 0..t {
        y = y.square();
    }
    let b = challenge_prime(x, &y, d)?;
    let q = (Integer::from(1) << u32::try_from(t).ok()?) / &b;
    let proof = x.pow_slow(&q, d);
    Some((y, proof))
}

/// The slow twin of [`verify`]: two exponentiations apart, by Cohen's
/// algorithms.
pub fn verify_slow(x: &Form, y: &Form, proof: &Form, t: u64, d: &Integer) -> bool {
    let Some(b) = challenge_prime(x, y, d) else {
        return false;
    };
    let r = Integer::from(2)
        .pow_mod(&Integer::from(t), &b)
        .expect("b is prime");
    proof.pow_slow(&b, d).compose(&x.pow_slow(&r, d)) == *y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Group;

    #[test]
    fn the_proof_from_checkpoints_is_the_long_divisions() {
        let group = Group::from_seed(b"checkpoints", 512);
        let ctx = group.ctx();
        let x = nudupl(&group.generator(), ctx);
        for t in [1, 2, 3, 7, 8, 9, 63, 64, 65, 300, 1000, 4099] {
            let y = evaluate(&x, t, ctx);
            let long = prove(&x, &y, t, ctx).unwrap();
            let mut spacings = vec![1, 2, 3, 5, 8];
            spacings.extend(checkpoint_spacing(t));
            for k in spacings {
                let (y_kept, kept) = evaluate_keeping(&x, t, k, ctx);
                assert_eq!(y_kept, y, "t = {t}, spacing {k}");
                let from = prove_from_checkpoints(&x, &y, t, k, &kept, ctx).unwrap();
                assert_eq!(from, long, "t = {t}, spacing {k}");
                assert!(verify(&x, &y, &from, t, ctx));
                // Checkpoints missing, or a spacing of none, make no proof.
                let short = &kept[..kept.len() - 1];
                assert!(prove_from_checkpoints(&x, &y, t, k, short, ctx).is_none());
                assert!(prove_from_checkpoints(&x, &y, t, 0, &kept, ctx).is_none());
            }
        }
    }

    #[test]
    fn checkpoints_are_kept_only_where_they_pay_and_fit() {
        assert_eq!(checkpoint_spacing(1), None);
        assert_eq!(checkpoint_spacing(10), None);
        // A proof from checkpoints costs a small share of the squarings,
        // a larger one where the cap on them forces a wide spacing.
        for (t, share) in [(1_000, 3), (100_000, 3), (1_000_000, 3), (5_000_000, 2)] {
            let k = checkpoint_spacing(t).unwrap();
            let cost = t.div_ceil(u64::from(k)) + (2 << k);
            assert!(cost * share < t, "t = {t}: spacing {k} costs {cost}");
            assert!(t.div_ceil(u64::from(k)) <= MAX_CHECKPOINTS);
        }
        // Beyond the memory the checkpoints may take: long division.
        assert_eq!(checkpoint_spacing(MAX_CHECKPOINTS * 30), None);
        assert_eq!(checkpoint_spacing(MAX_CHECKPOINTS * 21), None);
        // Where the proof would cost more than half the evaluation.
        assert_eq!(checkpoint_spacing(40), None);
    }
}
