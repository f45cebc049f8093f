//! Shanks' NUCOMP and NUDUPL (as in Jacobson and van der Poorten,
//! "Computational aspects of NUCOMP", 2002, and chiavdf's port of
//! Antic's code): composition and squaring that keep the intermediate
//! numbers near √|D| by stopping a partial extended gcd at |D|^(1/4), so
//! that the result needs little reduction. The fast path of the group's
//! arithmetic; [`Form::compose`] and [`Form::square`] (Cohen's algorithms)
//! are its slow twins, and tests compare them.

use crate::form::Form;
use rug::ops::{DivRounding, NegAssign, RemRounding};
use rug::{Assign, Integer};

/// A discriminant and its fourth root, the bound of the partial gcds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ctx {
    pub d: Integer,
    l: Integer,
}

impl Ctx {
    pub fn new(d: &Integer) -> Ctx {
        Ctx {
            d: d.clone(),
            l: Integer::from(d.abs_ref()).root(4),
        }
    }
}

/// Euclid's algorithm on r2, r1 ≥ 0, stopped once r1 ≤ l (or 0), with
/// the cofactors: (co2, co1, r2, r1) as chiavdf's `mpz_xgcd_partial`
/// leaves them. Lehmer's way, as there: the quotients are found on the
/// numbers' top 63 bits while they are sure (Jebelean's condition), and
/// applied to the whole numbers a batch at a time; [`xgcd_partial_slow`]
/// takes them one by one.
pub fn xgcd_partial(
    mut r2: Integer,
    mut r1: Integer,
    l: &Integer,
) -> (Integer, Integer, Integer, Integer) {
    let mut co2 = Integer::new();
    let mut co1 = Integer::from(-1);
    let mut scratch = Integer::new();
    while r1 != 0 && r1 > *l {
        let top = r2.significant_bits().max(r1.significant_bits()).max(1);
        let shift = top.saturating_sub(63);
        let word = |n: &Integer| -> i64 {
            let shifted = Integer::from(n >> shift);
            shifted.to_u64_wrapping() as i64
        };
        let (mut rr2, mut rr1, bb) = (word(&r2), word(&r1), word(l));
        let (mut aa2, mut aa1, mut bb2, mut bb1) = (0i64, 1i64, 1i64, 0i64);
        let mut i = 0u32;
        // A step is taken only while r1 > L surely: rr1 is r1's leading
        // word with an error below |aa1| + |bb1| + 1 (each leading word
        // cut short by under one, times its cofactor), so a remainder
        // within that of L's word is left to the exact steps below, which
        // stop where Euclid's one quotient at a time does.
        while rr1 != 0
            && i128::from(rr1) - (i128::from(aa1).abs() + i128::from(bb1).abs() + 1)
                > i128::from(bb)
        {
            let qq = rr2 / rr1;
            let t1 = rr2.wrapping_sub(qq.wrapping_mul(rr1));
            let t2 = aa2.wrapping_sub(qq.wrapping_mul(aa1));
            let t3 = bb2.wrapping_sub(qq.wrapping_mul(bb1));
            let unsure = if i & 1 == 1 {
                t1 < t3.wrapping_neg() || rr1.wrapping_sub(t1) < t2.wrapping_sub(aa1)
            } else {
                t1 < t2.wrapping_neg() || rr1.wrapping_sub(t1) < t3.wrapping_sub(bb1)
            };
            if unsure {
                break;
            }
            (rr2, rr1) = (rr1, t1);
            (aa2, aa1) = (aa1, t2);
            (bb2, bb1) = (bb1, t3);
            i += 1;
        }
        if i == 0 {
            let (q, r): (Integer, Integer) = r2.div_rem_ref(&r1).into();
            r2 = std::mem::replace(&mut r1, r);
            let next = co2 - Integer::from(&q * &co1);
            co2 = std::mem::replace(&mut co1, next);
        } else {
            // (r2, r1) ← (r2·bb2 + r1·aa2, r1·aa1 + r2·bb1), and the
            // cofactors alike.
            scratch.assign(&r2 * bb2);
            scratch += Integer::from(&r1 * aa2);
            r1 *= aa1;
            r1 += Integer::from(&r2 * bb1);
            std::mem::swap(&mut r2, &mut scratch);
            scratch.assign(&co2 * bb2);
            scratch += Integer::from(&co1 * aa2);
            co1 *= aa1;
            co1 += Integer::from(&co2 * bb1);
            std::mem::swap(&mut co2, &mut scratch);
            if r1 < 0 {
                co1.neg_assign();
                r1.neg_assign();
            }
            if r2 < 0 {
                co2.neg_assign();
                r2.neg_assign();
            }
        }
    }
    if r2 < 0 {
        co2.neg_assign();
        co1.neg_assign();
        r2.neg_assign();
    }
    (co2, co1, r2, r1)
}

/// The slow twin of [`xgcd_partial`]: one quotient at a time.
pub fn xgcd_partial_slow(
    mut r2: Integer,
    mut r1: Integer,
    l: &Integer,
) -> (Integer, Integer, Integer, Integer) {
    let mut co2 = Integer::new();
    let mut co1 = Integer::from(-1);
    while r1 != 0 && r1 > *l {
        let (q, r): (Integer, Integer) = r2.div_rem_ref(&r1).into();
        r2 = std::mem::replace(&mut r1, r);
        let next = co2 - Integer::from(&q * &co1);
        co2 = std::mem::replace(&mut co1, next);
    }
    if r2 < 0 {
        co2.neg_assign();
        co1.neg_assign();
        r2.neg_assign();
    }
    (co2, co1, r2, r1)
}

/// f², reduced.
pub fn nudupl(f: &Form, ctx: &Ctx) -> Form {
    let mut a1 = f.a.clone();
    let mut c1 = f.c.clone();
    let (s, mut v2, _) = Integer::from(f.b.abs_ref()).extended_gcd(a1.clone(), Integer::new());
    if f.b < 0 {
        v2.neg_assign();
    }
    let mut k = -(v2 * &c1);
    if s != 1 {
        a1 = a1.div_exact(&s);
        c1 *= &s;
    }
    k = k.rem_euc(&a1);
    if a1 < ctx.l {
        let t = Integer::from(&a1 * &k);
        return reduced(Form {
            a: Integer::from(a1.square_ref()),
            b: Integer::from(&t << 1) + &f.b,
            c: ((Integer::from(&f.b + &t) * &k) + &c1).div_floor(&a1),
        });
    }
    let (co2, co1, _r2, r1) = xgcd_partial(a1.clone(), k, &ctx.l);
    let m2 = (Integer::from(&f.b * &r1) - Integer::from(&c1 * &co1)).div_exact(&a1);
    let mut a = Integer::from(r1.square_ref()) - Integer::from(&co1 * &m2);
    if co1 >= 0 {
        a.neg_assign();
    }
    finish(a, Integer::from(&a1 * &r1), &co2, &co1, &f.b, ctx)
}

fn reduced(mut f: Form) -> Form {
    f.reduce();
    f
}

/// The end of NUCOMP and NUDUPL past the partial gcd, from the new a
/// (signed) and t: b = (2(t − a·co2)/co1 − b_in) mod 2a, c from the
/// discriminant, the form made positive definite and reduced.
fn finish(
    mut a: Integer,
    t: Integer,
    co2: &Integer,
    co1: &Integer,
    b_in: &Integer,
    ctx: &Ctx,
) -> Form {
    let mut cb = t - Integer::from(&a * co2);
    cb <<= 1;
    cb = cb.div_exact(co1) - b_in;
    let two_a = Integer::from(&a << 1);
    let b = cb.rem_floor(&two_a);
    let mut c: Integer = (Integer::from(b.square_ref()) - &ctx.d).div_exact(&a) >> 2;
    if a < 0 {
        a.neg_assign();
        c.neg_assign();
    }
    reduced(Form { a, b, c })
}

/// f·g, reduced.
pub fn nucomp(f: &Form, g: &Form, ctx: &Ctx) -> Form {
    if f.a > g.a {
        return nucomp(g, f, ctx);
    }
    let mut a1 = f.a.clone();
    let mut a2 = g.a.clone();
    let mut c2 = g.c.clone();
    let ss: Integer = Integer::from(&f.b + &g.b) >> 1;
    let m: Integer = Integer::from(&f.b - &g.b) >> 1;
    let t = a2.clone().rem_floor(&a1);
    let (sp, v1) = if t == 0 {
        (a1.clone(), Integer::new())
    } else {
        let (sp, v1, _) = t.extended_gcd(a1.clone(), Integer::new());
        (sp, v1)
    };
    let mut k = Integer::from(&m * &v1).rem_floor(&a1);
    if sp != 1 {
        let (s, v2, u2) = ss.clone().extended_gcd(sp, Integer::new());
        k = k * &u2 - Integer::from(&v2 * &c2);
        if s != 1 {
            a1 = a1.div_exact(&s);
            a2 = a2.div_exact(&s);
            c2 *= &s;
        }
        k = k.rem_floor(&a1);
    }
    if a1 < ctx.l {
        let t = Integer::from(&a2 * &k);
        return reduced(Form {
            a: Integer::from(&a2 * &a1),
            b: Integer::from(&t << 1) + &g.b,
            c: ((Integer::from(&g.b + &t) * &k) + &c2).div_exact(&a1),
        });
    }
    let (co2, co1, _r2, r1) = xgcd_partial(a1.clone(), k, &ctx.l);
    let t = Integer::from(&a2 * &r1);
    let m1 = (Integer::from(&m * &co1) + &t).div_exact(&a1);
    let m2 = (Integer::from(&ss * &r1) - Integer::from(&c2 * &co1)).div_exact(&a1);
    let a = if co1 < 0 {
        Integer::from(&r1 * &m1) - Integer::from(&co1 * &m2)
    } else {
        Integer::from(&co1 * &m2) - Integer::from(&r1 * &m1)
    };
    finish(a, t, &co2, &co1, &g.b, ctx)
}

/// f raised to `e` ≥ 0 by squaring from the top bit, with NUDUPL and
/// NUCOMP.
pub fn pow(f: &Form, e: &Integer, ctx: &Ctx) -> Form {
    let mut out = Form::identity(&ctx.d);
    for i in (0..e.significant_bits()).rev() {
        out = nudupl(&out, ctx);
        if e.get_bit(i) {
            out = nucomp(&out, f, ctx);
        }
    }
    out
}

/// f1^e1 · f2^e2 (e1, e2 ≥ 0; f1 and f2 reduced, as deserialized forms
/// are), what a Wesolowski check computes: the
/// squarings shared between the two (Shamir's trick), each exponent in
/// signed digits of width [`WINDOW`] (wNAF), so that about one bit in
/// `WINDOW + 1` costs a composition instead of three in four. A form's
/// inverse is (a, −b, c), so negative digits cost nothing more.
/// [`pow2_binary`] is its slow twin.
pub fn pow2(f1: &Form, e1: &Integer, f2: &Form, e2: &Integer, ctx: &Ctx) -> Form {
    let terms = [
        (wnaf(e1, WINDOW), odd_powers(f1, WINDOW, ctx)),
        (wnaf(e2, WINDOW), odd_powers(f2, WINDOW, ctx)),
    ];
    let len = terms
        .iter()
        .map(|(digits, _)| digits.len())
        .max()
        .unwrap_or(0);
    // Nothing is squared before the first digit that is not zero.
    let mut out: Option<Form> = None;
    for i in (0..len).rev() {
        if let Some(f) = out.as_mut() {
            *f = nudupl(f, ctx);
        }
        for (digits, powers) in &terms {
            let digit = digits.get(i).copied().unwrap_or(0);
            if digit == 0 {
                continue;
            }
            let (plus, minus) = &powers[usize::from(digit.unsigned_abs() / 2)];
            let factor = if digit > 0 { plus } else { minus };
            out = Some(match out {
                None => factor.clone(),
                Some(f) => nucomp(&f, factor, ctx),
            });
        }
    }
    out.unwrap_or_else(|| Form::identity(&ctx.d))
}

/// The width of [`pow2`]'s signed digits: for exponents of about 264
/// bits, 5 takes the fewest compositions (7 to make each base's odd
/// powers up to 15, then about 44 a base).
const WINDOW: u32 = 5;

/// `e` ≥ 0 in signed digits, lowest first: each digit 0 or odd with
/// |digit| < 2^(w−1), at least w − 1 zeros after each digit that is not.
fn wnaf(e: &Integer, w: u32) -> Vec<i8> {
    let mut e = e.clone();
    let modulus = 1i64 << w;
    let mut digits = Vec::with_capacity(e.significant_bits() as usize + 1);
    while e > 0 {
        let digit = if e.is_odd() {
            let low = i64::from(e.mod_u(1 << w));
            let d = if low >= modulus / 2 {
                low - modulus
            } else {
                low
            };
            e -= d;
            d
        } else {
            0
        };
        digits.push(i8::try_from(digit).expect("|digit| < 2^(w-1) <= 64"));
        e >>= 1;
    }
    digits
}

/// f^1, f^3, …, f^(2^(w−1) − 1), each with its inverse.
fn odd_powers(f: &Form, w: u32, ctx: &Ctx) -> Vec<(Form, Form)> {
    let square = nudupl(f, ctx);
    let mut powers: Vec<Form> = vec![f.clone()];
    for _ in 1..(1usize << (w - 2)) {
        let next = nucomp(powers.last().expect("one at least"), &square, ctx);
        powers.push(next);
    }
    powers
        .into_iter()
        .map(|p| {
            let inverse = reduced(Form {
                a: p.a.clone(),
                b: Integer::from(-&p.b),
                c: p.c.clone(),
            });
            (p, inverse)
        })
        .collect()
}

/// The slow twin of [`pow2`]: Shamir's trick one bit at a time.
pub fn pow2_binary(f1: &Form, e1: &Integer, f2: &Form, e2: &Integer, ctx: &Ctx) -> Form {
    let both = nucomp(f1, f2, ctx);
    let mut out = Form::identity(&ctx.d);
    let bits = e1.significant_bits().max(e2.significant_bits());
    for i in (0..bits).rev() {
        out = nudupl(&out, ctx);
        match (e1.get_bit(i), e2.get_bit(i)) {
            (true, true) => out = nucomp(&out, &both, ctx),
            (true, false) => out = nucomp(&out, f1, ctx),
            (false, true) => out = nucomp(&out, f2, ctx),
            (false, false) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rug::integer::Order;

    proptest! {
        #[test]
        fn lehmer_takes_euclids_steps(
            a in proptest::collection::vec(any::<u8>(), 1..80),
            b in proptest::collection::vec(any::<u8>(), 1..80),
            l in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let (a, b) = (Integer::from_digits(&a, Order::Msf), Integer::from_digits(&b, Order::Msf));
            let l = Integer::from_digits(&l, Order::Msf);
            let (r2, r1) = if a >= b { (a, b) } else { (b, a) };
            let fast = xgcd_partial(r2.clone(), r1.clone(), &l);
            let slow = xgcd_partial_slow(r2, r1, &l);
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn signed_digits_sum_to_the_exponent(e in proptest::collection::vec(any::<u8>(), 0..40)) {
            let e = Integer::from_digits(&e, Order::Msf);
            let digits = wnaf(&e, WINDOW);
            let mut sum = Integer::new();
            for &d in digits.iter().rev() {
                sum <<= 1;
                sum += d;
            }
            prop_assert_eq!(sum, e);
            for (i, &d) in digits.iter().enumerate() {
                prop_assert!(d == 0 || (d % 2 != 0 && d.unsigned_abs() < 1 << (WINDOW - 1)));
                if d != 0 {
                    let next = &digits[i + 1..digits.len().min(i + WINDOW as usize)];
                    prop_assert!(next.iter().all(|&n| n == 0));
                }
            }
        }

        #[test]
        fn windowed_pow2_is_shamirs_and_cohens(
            s1 in proptest::collection::vec(any::<u8>(), 1..8),
            s2 in proptest::collection::vec(any::<u8>(), 1..8),
            e1 in proptest::collection::vec(any::<u8>(), 0..34),
            e2 in proptest::collection::vec(any::<u8>(), 0..34),
        ) {
            let d = crate::prime::discriminant(b"pow2", 256);
            let ctx = Ctx::new(&d);
            let g = Form::generator(&d);
            let f1 = pow(&g, &Integer::from_digits(&s1, Order::Msf), &ctx);
            let f2 = pow(&g, &Integer::from_digits(&s2, Order::Msf), &ctx);
            let (e1, e2) = (Integer::from_digits(&e1, Order::Msf), Integer::from_digits(&e2, Order::Msf));
            let fast = pow2(&f1, &e1, &f2, &e2, &ctx);
            prop_assert_eq!(&fast, &pow2_binary(&f1, &e1, &f2, &e2, &ctx));
            prop_assert_eq!(&fast, &f1.pow_slow(&e1, &d).compose(&f2.pow_slow(&e2, &d)));
        }
    }
}
