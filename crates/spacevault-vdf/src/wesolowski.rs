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
