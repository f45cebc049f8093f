//! The hashes, the matching rule and the score of the table-chain scheme:
//! what every implementation must compute alike for proofs to verify.
//!
//! A plot of size k has `levels` levels. Level 1 has one entry for each
//! x in `[0, 2^k)`. An entry of level i + 1 joins two entries of level i
//! that *match*: their outputs `y` (k + 6 bits) lie in adjacent buckets
//! and satisfy the rule of [`matches`], which leaves each entry about one
//! partner. Every entry carries a 16-byte digest (`meta`) of its
//! children, so that each join is one keyed BLAKE3 compression of a
//! 64-byte block however high the level: the inputs never grow.
//!
//! Messages (64 bytes, keyed by the plot id; byte 63 is the level, which
//! keeps the domains apart):
//! - level 1: `LE64(x)`, then zeros (byte 63 = 0);
//! - level i ≥ 2: `LE64(y_L) ‖ meta_L ‖ meta_R`, zeros, byte 63 = i;
//! - the quality: `challenge ‖ LE64(x_a) ‖ LE64(x_b)`, zeros, byte 63 = 0xFF.
//!
//! An entry's `y` is the top k + 6 bits of its hash's first 8 bytes read
//! big-endian, and its `meta` the hash's bytes 8 to 24.

/// The levels of the chain's scheme (kind 2): a proof holds 2^(5-1) = 16
/// leaves and verifies with 31 compressions.
pub const LEVELS: u8 = 5;
/// The levels a plot may have: the attack harness tries more than five.
pub const MIN_LEVELS: u8 = 3;
pub const MAX_LEVELS: u8 = 7;

/// The plot sizes the scheme supports. x fits 32 bits, positions of a
/// level 33, and a pair of positions (a line point) 66.
pub const MIN_K: u8 = 16;
pub const MAX_K: u8 = 32;

/// Bits an output has beyond k: buckets of [`BUCKET`] outputs then hold
/// about 236 entries, and a left entry meets about one right one.
pub const EXTRA_BITS: u8 = 6;

/// The matching rule's constants: a bucket of `B × C` outputs, each read
/// as a pair (b, c) with `b < B`, `c < C`. C is prime, so the 64 offsets
/// `(2j + parity)^2 mod C` are distinct: each of a left entry's 64
/// targets can be hit, and about one is.
pub const B: u64 = 119;
pub const C: u64 = 127;
pub const BUCKET: u64 = B * C;
/// Target offsets a left entry tries in c.
pub const TARGETS: u64 = 64;

/// BLAKE3 `derive_key` context for the scheme's plot identities; not the
/// plain scheme's, so that no plot id is shared between the two.
pub const PLOT_ID_CONTEXT: &str = "spacevault 2026-11 table-chain plot id v1";

const QUALITY_TAG: u8 = 0xFF;

/// `derive_key(PLOT_ID_CONTEXT, farmer_key ‖ seed ‖ [k] ‖ [levels])`.
pub fn plot_id(farmer_key: &[u8; 32], seed: &[u8; 32], k: u8, levels: u8) -> [u8; 32] {
    let mut material = [0u8; 66];
    material[..32].copy_from_slice(farmer_key);
    material[32..64].copy_from_slice(seed);
    material[64] = k;
    material[65] = levels;
    blake3::derive_key(PLOT_ID_CONTEXT, &material)
}

pub fn k_is_supported(k: u8) -> bool {
    (MIN_K..=MAX_K).contains(&k)
}

pub fn levels_are_supported(levels: u8) -> bool {
    (MIN_LEVELS..=MAX_LEVELS).contains(&levels)
}

/// Leaves of one proof: `2^(levels - 1)`.
pub fn leaves(levels: u8) -> usize {
    1 << (levels - 1)
}

/// One entry of a level as the next level sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node {
    pub y: u64,
    pub meta: [u8; 16],
}

/// The node a 32-byte hash stands for at size k.
pub fn node_of(hash: &[u8; 32], k: u8) -> Node {
    let top = u64::from_be_bytes(hash[..8].try_into().unwrap());
    Node {
        y: top >> (64 - u32::from(k + EXTRA_BITS)),
        meta: hash[8..24].try_into().unwrap(),
    }
}

/// Level 1's entry for x: `keyed_hash(id, LE64(x) ‖ 56 zeros)`, the same
/// message as a plain record, under this scheme's plot id.
pub fn leaf(id: &[u8; 32], k: u8, x: u64) -> Node {
    let mut message = [0u8; 64];
    message[..8].copy_from_slice(&x.to_le_bytes());
    node_of(blake3::keyed_hash(id, &message).as_bytes(), k)
}

/// The message that joins two matching entries into one of `level`.
pub fn join_message(level: u8, left: &Node, right: &Node) -> [u8; 64] {
    let mut message = [0u8; 64];
    message[..8].copy_from_slice(&left.y.to_le_bytes());
    message[8..24].copy_from_slice(&left.meta);
    message[24..40].copy_from_slice(&right.meta);
    message[63] = level;
    message
}

/// The entry of `level` (2 or more) made of `left` and `right`.
pub fn join(id: &[u8; 32], k: u8, level: u8, left: &Node, right: &Node) -> Node {
    let message = join_message(level, left, right);
    node_of(blake3::keyed_hash(id, &message).as_bytes(), k)
}

/// Whether offset `dc` (in c) is one of the targets for a left entry of
/// this parity: the table the plotter and the verifier share, built from
/// the rule's definition in [`matches_by_definition`]'s terms.
const fn target_table() -> [[bool; C as usize]; 2] {
    let mut t = [[false; C as usize]; 2];
    let mut parity = 0;
    while parity < 2 {
        let mut j = 0;
        while j < TARGETS {
            let v = 2 * j + parity as u64;
            t[parity][((v * v) % C) as usize] = true;
            j += 1;
        }
        parity += 1;
    }
    t
}

/// `IS_TARGET[parity][dc]`.
pub const IS_TARGET: [[bool; C as usize]; 2] = target_table();

/// Whether a left output `yl` and a right output `yr` match: `yr`'s
/// bucket follows `yl`'s, `b_r = b_l + 1 (mod B)`, and
/// `c_r = c_l + (2j + parity)^2 (mod C)` for some `j < 64`, where parity
/// is that of `yl`'s bucket.
pub fn matches(yl: u64, yr: u64) -> bool {
    let bucket = yl / BUCKET;
    if yr / BUCKET != bucket + 1 {
        return false;
    }
    let (lb, lc) = ((yl % BUCKET) / C, yl % C);
    let (rb, rc) = ((yr % BUCKET) / C, yr % C);
    if (rb + B - lb) % B != 1 {
        return false;
    }
    IS_TARGET[(bucket % 2) as usize][((rc + C - lc) % C) as usize]
}

/// [`matches`] written out as the rule reads, with no table: the test of
/// the table.
pub fn matches_by_definition(yl: u64, yr: u64) -> bool {
    let (bl, br) = (yl / BUCKET, yr / BUCKET);
    let parity = bl % 2;
    br == bl + 1
        && ((yr % BUCKET) / C + B - (yl % BUCKET) / C) % B == 1
        && (0..TARGETS).any(|j| {
            let v = 2 * j + parity;
            (yr % C + C - yl % C) % C == (v * v) % C
        })
}

/// Which pair of a proof's leaves (in proof order) the challenge's path
/// selects: from the top entry down, bit i of the challenge's last byte
/// chooses the right child (1) or the left (0) at the i-th level below
/// the top.
pub fn path_pair(challenge: &[u8; 32], levels: u8) -> usize {
    let steps = u32::from(levels) - 2;
    let mut pair = 0usize;
    for i in 0..steps {
        pair = (pair << 1) | usize::from((challenge[31] >> i) & 1);
    }
    pair
}

/// The hash a proof's quality comes from: the challenge and the two
/// leaves its path selects, `x_a` left of `x_b` in proof order.
pub fn quality_hash(id: &[u8; 32], challenge: &[u8; 32], x_a: u64, x_b: u64) -> [u8; 32] {
    let mut message = [0u8; 64];
    message[..32].copy_from_slice(challenge);
    message[32..40].copy_from_slice(&x_a.to_le_bytes());
    message[40..48].copy_from_slice(&x_b.to_le_bytes());
    message[63] = QUALITY_TAG;
    *blake3::keyed_hash(id, &message).as_bytes()
}

/// The top k bits of a top entry's output: what a challenge is compared
/// with.
pub fn top_prefix(y: u64) -> u64 {
    y >> EXTRA_BITS
}

/// The challenge's top k bits.
pub fn challenge_prefix(challenge: &[u8; 32], k: u8) -> u64 {
    u64::from_be_bytes(challenge[..8].try_into().unwrap()) >> (64 - u32::from(k))
}

/// A proof's score, as 256 big-endian bits: the top entry's prefix XOR
/// the challenge's (k bits), then the quality hash's first 256 - k bits.
/// Over a plot of n top entries the best score is the least of n uniform
/// 256-bit draws, the plain scheme's scale with n records; the farmer
/// finds its candidates with one lookup and hashes one path each.
pub fn score(k: u8, prefix: u64, challenge: &[u8; 32], quality: &[u8; 32]) -> [u8; 32] {
    let d = prefix ^ challenge_prefix(challenge, k);
    let limbs: [u64; 4] =
        std::array::from_fn(|i| u64::from_be_bytes(quality[8 * i..8 * i + 8].try_into().unwrap()));
    let s = u32::from(k);
    let mut out = [0u64; 4];
    out[0] = (d << (64 - s)) | (limbs[0] >> s);
    for i in 1..4 {
        out[i] = (limbs[i - 1] << (64 - s)) | (limbs[i] >> s);
    }
    let mut bytes = [0u8; 32];
    for (i, limb) in out.iter().enumerate() {
        bytes[8 * i..8 * i + 8].copy_from_slice(&limb.to_be_bytes());
    }
    bytes
}

/// The index of an unordered pair `a > b` among all such pairs: a
/// *line point*, `a(a-1)/2 + b`. Sorted line points have small gaps,
/// which is what a compact table stores.
pub fn line_point(a: u64, b: u64) -> u128 {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    u128::from(hi) * u128::from(hi - 1) / 2 + u128::from(lo)
}

/// The pair `(a, b)`, `a > b`, of a line point.
pub fn line_point_pair(lp: u128) -> (u64, u64) {
    // (2a - 1)^2 <= 8 lp + 1 < (2a + 1)^2.
    let a = (8 * lp + 1).isqrt().div_ceil(2);
    let b = lp - a * (a - 1) / 2;
    (a as u64, b as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_table_is_the_rule() {
        // Every pair of offsets in two adjacent buckets, both parities.
        for bucket in [6u64, 7] {
            for l in (0..BUCKET).step_by(997) {
                for r in 0..BUCKET {
                    let (yl, yr) = (bucket * BUCKET + l, (bucket + 1) * BUCKET + r);
                    assert_eq!(matches(yl, yr), matches_by_definition(yl, yr));
                }
            }
        }
        assert!(!matches(5, 6));
        assert!(!matches(BUCKET * 3, BUCKET * 5));
    }

    #[test]
    fn the_64_offsets_are_distinct() {
        for targets in IS_TARGET {
            assert_eq!(targets.iter().filter(|&&t| t).count(), 64);
        }
    }

    #[test]
    fn a_left_entry_has_about_one_partner() {
        // For every left offset, the right offsets that match: B·C
        // outputs a bucket, 64 of C offsets in c and one of B in b.
        let (mut total, mut lefts) = (0u64, 0u64);
        for l in (0..BUCKET).step_by(13) {
            lefts += 1;
            for rb in 0..B {
                for rc in 0..C {
                    total += u64::from(matches(l, BUCKET + rb * C + rc));
                }
            }
        }
        // Each left offset has exactly 64 right offsets it matches; a
        // bucket holds 2^6 times fewer entries than offsets: one partner.
        assert_eq!(total, lefts * TARGETS);
    }

    #[test]
    fn line_points_round_trip() {
        for (a, b) in [
            (1u64, 0u64),
            (2, 1),
            (1000, 999),
            (u32::MAX as u64, 7),
            ((1 << 33) - 1, (1 << 33) - 2),
        ] {
            let lp = line_point(a, b);
            assert_eq!(line_point(b, a), lp);
            assert_eq!(line_point_pair(lp), (a, b));
        }
        // Consecutive pairs have consecutive line points.
        assert_eq!(line_point(5, 4) + 1, line_point(6, 0));
    }

    #[test]
    fn the_score_puts_the_prefix_distance_first() {
        let k = 20;
        let mut challenge = [0u8; 32];
        challenge[0] = 0xAB;
        let quality = [0xFFu8; 32];
        let prefix = challenge_prefix(&challenge, k);
        let s = score(k, prefix, &challenge, &quality);
        // Distance 0 in the top 20 bits, then the quality's ones.
        assert_eq!(&s[..2], &[0, 0]);
        assert_eq!(s[2], 0x0F);
        assert_eq!(&s[3..], &[0xFF; 29]);
        let s = score(k, prefix ^ 1, &challenge, &[0; 32]);
        assert_eq!(s[2], 0x10);
    }

    #[test]
    fn the_plot_id_binds_every_input() {
        let id = plot_id(&[1; 32], &[2; 32], 20, 5);
        assert_ne!(id, plot_id(&[1; 32], &[2; 32], 20, 6));
        assert_ne!(id, plot_id(&[1; 32], &[2; 32], 21, 5));
        assert_ne!(id, plot_id(&[1; 32], &[3; 32], 20, 5));
        assert_ne!(id, plot_id(&[0; 32], &[2; 32], 20, 5));
        assert_ne!(id, crate::construction::plot_id(&[1; 32], &[2; 32], 20));
    }

    #[test]
    fn the_path_reads_the_last_byte_from_the_top() {
        let mut c = [0u8; 32];
        c[31] = 0b001;
        assert_eq!(path_pair(&c, 5), 0b100);
        c[31] = 0b110;
        assert_eq!(path_pair(&c, 5), 0b011);
        assert_eq!(path_pair(&c, 3), 0);
    }
}
