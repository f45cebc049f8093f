//! Chia's compressed serialization of reduced forms (BQFC), byte for byte:
//! the bytes of x and y are hashed into the proof's prime, so two
//! implementations agree on a proof only if they agree on these bytes.
//!
//! A form (a, b) is sent as a' = a/g, t' = t/g, g and b0 = b/a' (truncated),
//! where t is the cofactor of b in the partial extended gcd of a and |b|
//! stopped below √a, and g = gcd(a, t): b is recovered from a, t and the
//! discriminant by a square root modulo a. For a discriminant of d bits
//! (rounded up to 32) a form takes 3·d/32 + 4 bytes; this crate's forms
//! are 1024 bits at most, 100 bytes.

use crate::form::Form;
use crate::nucomp::xgcd_partial;
use rug::integer::Order;
use rug::ops::RemRounding;
use rug::Integer;

/// The largest discriminant, in bits, that forms are serialized for.
pub const MAX_D_BITS: u32 = 1024;

/// Bytes of a serialized form (for the largest discriminant; smaller ones
/// are zero-padded to it, as chiavdf pads them).
pub const FORM_BYTES: usize = (MAX_D_BITS as usize).div_ceil(32) * 3 + 4;

const B_SIGN: u8 = 1 << 0;
const T_SIGN: u8 = 1 << 1;
const IS_IDENTITY: u8 = 1 << 2;
const IS_GENERATOR: u8 = 1 << 3;

/// The compressed parts of a form.
struct Compressed {
    a: Integer,
    t: Integer,
    g: Integer,
    b0: Integer,
    b_sign: bool,
}

fn compress(a: &Integer, b: &Integer) -> Compressed {
    if a == b {
        return Compressed {
            a: a.clone(),
            t: Integer::new(),
            g: Integer::new(),
            b0: Integer::new(),
            b_sign: false,
        };
    }
    let b_sign = *b < 0;
    let a_sqrt = Integer::from(a.sqrt_ref());
    let (_, co1, _, _) = xgcd_partial(a.clone(), Integer::from(b.abs_ref()), &a_sqrt);
    let t = -co1;
    let g = Integer::from(a.gcd_ref(&t));
    if g == 1 {
        return Compressed {
            a: a.clone(),
            t,
            g,
            b0: Integer::new(),
            b_sign,
        };
    }
    let a_over_g = Integer::from(a.div_exact_ref(&g));
    let t_over_g = t.div_exact(&g);
    let (mut b0, _): (Integer, Integer) = b.div_rem_ref(&a_over_g).into();
    if b_sign {
        b0 = -b0;
    }
    Compressed {
        a: a_over_g,
        t: t_over_g,
        g,
        b0,
        b_sign,
    }
}

/// |n| as `size` little-endian bytes at `out`; false if it does not fit.
fn export(out: &mut [u8], n: &Integer) -> bool {
    let digits = n.as_abs().to_digits::<u8>(Order::Lsf);
    if digits.len() > out.len() {
        return false;
    }
    out[..digits.len()].copy_from_slice(&digits);
    out[digits.len()..].fill(0);
    true
}

/// The discriminant's bits, rounded up to a multiple of 32.
fn rounded_bits(d: &Integer) -> Option<usize> {
    let bits = d.significant_bits();
    (bits > 0 && bits <= MAX_D_BITS).then(|| (bits as usize).div_ceil(32) * 32)
}

/// The bytes of a', t', g and b0 after the two header bytes, for a
/// discriminant of `d_bits` (rounded) and a g of `g_size + 1` bytes.
fn field_sizes(d_bits: usize, g_size: usize) -> [usize; 4] {
    [
        d_bits / 16 - g_size,
        d_bits / 32 - g_size,
        g_size + 1,
        g_size + 1,
    ]
}

/// The form's bytes; None for a discriminant over [`MAX_D_BITS`].
pub fn serialize(f: &Form, d: &Integer) -> Option<[u8; FORM_BYTES]> {
    let d_bits = rounded_bits(d)?;
    let mut out = [0u8; FORM_BYTES];
    if f.b == 1 && f.a <= 2 {
        out[0] = if f.a == 2 { IS_GENERATOR } else { IS_IDENTITY };
        return Some(out);
    }
    let c = compress(&f.a, &f.b);
    out[0] = if c.b_sign { B_SIGN } else { 0 } | if c.t < 0 { T_SIGN } else { 0 };
    let g_size = (c.g.significant_bits().max(1) as usize).div_ceil(8) - 1;
    out[1] = u8::try_from(g_size).ok()?;
    let sizes = field_sizes(d_bits, g_size);
    let mut at = 2;
    for (n, size) in [&c.a, &c.t, &c.g, &c.b0].into_iter().zip(sizes) {
        if !export(&mut out[at..at + size], n) {
            return None;
        }
        at += size;
    }
    Some(out)
}

/// The form `bytes` stand for, if they are the canonical serialization of
/// a reduced form of `d` (anything else is refused: a form has one
/// encoding, so that its hash is its own).
pub fn deserialize(bytes: &[u8], d: &Integer) -> Option<Form> {
    let d_bits = rounded_bits(d)?;
    if bytes.len() != FORM_BYTES {
        return None;
    }
    if bytes[0] & (IS_IDENTITY | IS_GENERATOR) != 0 {
        let a = if bytes[0] & IS_GENERATOR != 0 { 2 } else { 1 };
        let f = Form::from_ab(Integer::from(a), Integer::from(1), d)?;
        return (serialize(&f, d)?[..] == *bytes).then_some(f);
    }
    let g_size = bytes[1] as usize;
    if g_size >= d_bits / 32 {
        return None;
    }
    let sizes = field_sizes(d_bits, g_size);
    let mut parts = Vec::with_capacity(4);
    let mut at = 2;
    for size in sizes {
        parts.push(Integer::from_digits(&bytes[at..at + size], Order::Lsf));
        at += size;
    }
    let [a, mut t, g, b0]: [Integer; 4] = parts.try_into().ok()?;
    if bytes[0] & T_SIGN != 0 {
        t = -t;
    }
    let (a, b) = decompress(&a, &t, &g, &b0, bytes[0] & B_SIGN != 0, d)?;
    // Reduced as sent, and canonical: the bytes of the form found must be
    // these bytes.
    let f = Form::reduced(a, b, d)?;
    (serialize(&f, d)?[..] == *bytes).then_some(f)
}

fn decompress(
    a: &Integer,
    t: &Integer,
    g: &Integer,
    b0: &Integer,
    b_sign: bool,
    d: &Integer,
) -> Option<(Integer, Integer)> {
    if *t == 0 {
        return Some((a.clone(), a.clone()));
    }
    if *a == 0 {
        return None;
    }
    let t_pos = if *t < 0 {
        Integer::from(t + a)
    } else {
        t.clone()
    };
    let t_inv = t_pos.invert(a).ok()?;
    let d_mod_a = d.clone().rem_euc(a);
    // sqrt(t² · d mod a)
    let mut sq = Integer::from(t.square_ref()).rem_euc(a) * d_mod_a;
    sq %= a;
    if !sq.is_perfect_square() {
        return None;
    }
    let root = sq.sqrt();
    let mut b = Integer::from(&root * &t_inv) % a;
    let out_a = if *g > 1 {
        Integer::from(a * g)
    } else {
        a.clone()
    };
    if *b0 > 0 {
        b += Integer::from(a * b0);
    }
    if b_sign {
        b = -b;
    }
    Some((out_a, b))
}
