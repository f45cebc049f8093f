//! Binary quadratic forms (a, b, c) of a negative discriminant D = b² − 4ac,
//! reduced: the class group's elements, each with exactly one reduced form
//! (|b| ≤ a ≤ c, and b ≥ 0 when |b| = a or a = c). Composition follows
//! Cohen, "A Course in Computational Algebraic Number Theory", algorithm
//! 5.4.7, then reduction (algorithm 5.4.2); any correct composition gives
//! the same reduced form, which is all the VDF's outputs depend on.

use rug::ops::{DivRounding, NegAssign, RemRounding};
use rug::Integer;

/// A reduced form of discriminant `d`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Form {
    pub a: Integer,
    pub b: Integer,
    pub c: Integer,
}

impl Form {
    /// The form (a, b, c) with c from the discriminant, reduced; None when
    /// (a, b) is no form of `d` (a ≤ 0, or b² − d not divisible by 4a).
    pub fn from_ab(a: Integer, b: Integer, d: &Integer) -> Option<Form> {
        let mut f = Form::with_c(a, b, d)?;
        f.reduce();
        Some(f)
    }

    /// (a, b, c) with c = (b² − d)/4a, unreduced; None when that is no
    /// form (a ≤ 0, or 4a does not divide b² − d).
    fn with_c(a: Integer, b: Integer, d: &Integer) -> Option<Form> {
        if a <= 0 {
            return None;
        }
        let num = Integer::from(&b * &b) - d;
        let four_a = Integer::from(&a << 2);
        if !num.is_divisible(&four_a) {
            return None;
        }
        Some(Form {
            c: num.div_exact(&four_a),
            a,
            b,
        })
    }

    /// The form (a, b, c) with c from the discriminant, if it is a form of
    /// `d` and reduced as it stands.
    pub fn reduced(a: Integer, b: Integer, d: &Integer) -> Option<Form> {
        Form::with_c(a, b, d).filter(Form::is_reduced)
    }

    /// The identity (1, 1, (1 − d)/4).
    pub fn identity(d: &Integer) -> Form {
        Form::from_ab(Integer::from(1), Integer::from(1), d).expect("d ≡ 1 mod 4")
    }

    /// The generator Chia's VDF starts from: (2, 1, (1 − d)/8), a form for
    /// every discriminant ≡ 1 mod 8.
    pub fn generator(d: &Integer) -> Form {
        Form::from_ab(Integer::from(2), Integer::from(1), d).expect("d ≡ 1 mod 8")
    }

    /// The discriminant b² − 4ac.
    pub fn discriminant(&self) -> Integer {
        Integer::from(&self.b * &self.b) - Integer::from(&self.a * &self.c) * 4u32
    }

    /// Whether the form is reduced: |b| ≤ a ≤ c, b ≥ 0 if |b| = a or a = c.
    pub fn is_reduced(&self) -> bool {
        let abs_b = Integer::from(self.b.abs_ref());
        abs_b <= self.a
            && self.a <= self.c
            && !((abs_b == self.a || self.a == self.c) && self.b < 0)
    }

    /// b brought into (−a, a], c following.
    fn normalize(&mut self) {
        let two_a = Integer::from(&self.a << 1);
        // r ≡ b mod 2a in (−a, a]: q = ceil((b − a) / 2a).
        let q = Integer::from(&self.b - &self.a).div_ceil(&two_a);
        if q == 0 {
            return;
        }
        // b' = b − 2aq; c' = c − q(b − aq) = c − bq + aq².
        let aq = Integer::from(&self.a * &q);
        let shift = Integer::from(&self.b - &aq) * &q;
        self.c -= shift;
        self.b -= aq << 1;
    }

    /// The reduced form of the class.
    pub fn reduce(&mut self) {
        self.normalize();
        while self.a > self.c {
            std::mem::swap(&mut self.a, &mut self.c);
            self.b.neg_assign();
            self.normalize();
        }
        if self.a == self.c && self.b < 0 {
            self.b.neg_assign();
        }
    }

    /// The composition of two forms of one discriminant, reduced.
    pub fn compose(&self, other: &Form) -> Form {
        let (f1, f2) = if self.a > other.a {
            (other, self)
        } else {
            (self, other)
        };
        // s = (b1 + b2)/2, n = b2 − s.
        let s: Integer = Integer::from(&f1.b + &f2.b) >> 1;
        let n = Integer::from(&f2.b - &s);
        // u·a2 + v·a1 = d; y1 = u.
        let (d, y1) = if f2.a.is_divisible(&f1.a) {
            (f1.a.clone(), Integer::new())
        } else {
            let (d, u, _v) = f2.a.clone().extended_gcd(f1.a.clone(), Integer::new());
            (d, u)
        };
        // x2·s + y·d = d1; y2 = −y.
        let (d1, x2, y2) = if s.is_divisible(&d) {
            (d, Integer::new(), Integer::from(-1))
        } else {
            let (d1, x2, y) = s.extended_gcd(d, Integer::new());
            (d1, x2, -y)
        };
        let v1 = Integer::from(f1.a.div_exact_ref(&d1));
        let v2 = Integer::from(f2.a.div_exact_ref(&d1));
        let mut r = Integer::from(&y1 * &y2) * &n - Integer::from(&x2 * &f2.c);
        r = r.rem_euc(&v1);
        let b3 = Integer::from(&v2 * &r) * 2u32 + &f2.b;
        let a3 = Integer::from(&v1 * &v2);
        let c3 =
            (Integer::from(&f2.c * &d1) + (&r * (Integer::from(&v2 * &r) + &f2.b))).div_exact(&v1);
        let mut f = Form {
            a: a3,
            b: b3,
            c: c3,
        };
        f.reduce();
        f
    }

    /// The form composed with itself, reduced: [`Form::compose`] with
    /// both forms the same, where s = b, n = 0 and a divides a.
    pub fn square(&self) -> Form {
        // u·b + v·a = d1.
        let (d1, u, _v) = self.b.clone().extended_gcd(self.a.clone(), Integer::new());
        let v1 = Integer::from(self.a.div_exact_ref(&d1));
        // r = −u·c mod v1.
        let mut r = Integer::from(&u * &self.c);
        r.neg_assign();
        let r = r.rem_euc(&v1);
        let v1r = Integer::from(&v1 * &r);
        let c3 =
            (Integer::from(&self.c * &d1) + (&r * (Integer::from(&v1r + &self.b)))).div_exact(&v1);
        let mut f = Form {
            a: Integer::from(v1.square_ref()),
            b: v1r * 2u32 + &self.b,
            c: c3,
        };
        f.reduce();
        f
    }

    /// The form raised to `e` ≥ 0 by Cohen's composition and squaring:
    /// the slow twin of [`crate::nucomp::pow`].
    pub fn pow_slow(&self, e: &Integer, d: &Integer) -> Form {
        let mut out = Form::identity(d);
        for i in (0..e.significant_bits()).rev() {
            out = out.square();
            if e.get_bit(i) {
                out = out.compose(self);
            }
        }
        out
    }
}
