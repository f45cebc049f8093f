//! The BLAKE3 compression of one 64-byte block, for N messages side by side.
//!
//! Written once over a small [`Vector`] trait of N lanes, which each backend
//! implements with its own intrinsics (AVX-512: N = 16 in zmm registers,
//! AVX2: N = 8, SSE2 and NEON: N = 4) and [`Portable`] with a plain
//! `[u32; 4]`, the twin the others are tested against (left to the
//! compiler, it comes out partly scalar). The message is specialised to spacevault's records: only
//! words 0 and 1 (the nonce) are non-zero, so the other 112 message additions
//! of the 7 rounds fold away at compile time, and no message transposition is
//! needed at all.

/// BLAKE3's initialisation vector (the SHA-256 one).
pub(crate) const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const ROOT: u32 = 8;
const KEYED_HASH: u32 = 16;
/// A whole message in one block of one chunk, hashed with a key.
pub(crate) const RECORD_FLAGS: u32 = CHUNK_START | CHUNK_END | ROOT | KEYED_HASH;
pub(crate) const BLOCK_LEN: u32 = 64;

const PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

/// Which original message word each of the 16 message positions holds in
/// each of the 7 rounds.
pub(crate) const SCHEDULE: [[usize; 16]; 7] = schedule();

const fn schedule() -> [[usize; 16]; 7] {
    let mut out = [[0usize; 16]; 7];
    let mut i = 0;
    while i < 16 {
        out[0][i] = i;
        i += 1;
    }
    let mut r = 1;
    while r < 7 {
        let mut i = 0;
        while i < 16 {
            out[r][i] = out[r - 1][PERMUTATION[i]];
            i += 1;
        }
        r += 1;
    }
    out
}

/// One SIMD register of 32-bit lanes, or a plain array standing in for one.
pub(crate) trait Vector: Copy {
    const LANES: usize;
    /// # Safety
    /// The caller runs with the vector's target features enabled.
    unsafe fn splat(x: u32) -> Self;
    /// # Safety
    /// As for `splat`; `words` has at least `LANES` elements.
    unsafe fn load(words: &[u32]) -> Self;
    /// # Safety
    /// As for `splat`; `words` has at least `LANES` elements.
    unsafe fn store(self, words: &mut [u32]);
    /// # Safety
    /// As for `splat`.
    unsafe fn add(self, other: Self) -> Self;
    /// # Safety
    /// As for `splat`.
    unsafe fn xor(self, other: Self) -> Self;
    /// # Safety
    /// As for `splat`.
    unsafe fn rotr16(self) -> Self;
    /// # Safety
    /// As for `splat`.
    unsafe fn rotr12(self) -> Self;
    /// # Safety
    /// As for `splat`.
    unsafe fn rotr8(self) -> Self;
    /// # Safety
    /// As for `splat`.
    unsafe fn rotr7(self) -> Self;
}

/// Four lanes in plain Rust: the fallback for any CPU.
#[derive(Clone, Copy)]
pub(crate) struct Portable([u32; 4]);

macro_rules! portable_op {
    ($self:ident, $f:expr) => {{
        let mut out = $self.0;
        for w in out.iter_mut() {
            *w = $f(*w);
        }
        Portable(out)
    }};
}

impl Vector for Portable {
    const LANES: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Portable([x; 4])
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        Portable(words[..4].try_into().unwrap())
    }
    #[inline(always)]
    unsafe fn store(self, words: &mut [u32]) {
        words[..4].copy_from_slice(&self.0);
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        let mut out = self.0;
        for (o, b) in out.iter_mut().zip(other.0) {
            *o = o.wrapping_add(b);
        }
        Portable(out)
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        let mut out = self.0;
        for (o, b) in out.iter_mut().zip(other.0) {
            *o ^= b;
        }
        Portable(out)
    }
    #[inline(always)]
    unsafe fn rotr16(self) -> Self {
        portable_op!(self, |w: u32| w.rotate_right(16))
    }
    #[inline(always)]
    unsafe fn rotr12(self) -> Self {
        portable_op!(self, |w: u32| w.rotate_right(12))
    }
    #[inline(always)]
    unsafe fn rotr8(self) -> Self {
        portable_op!(self, |w: u32| w.rotate_right(8))
    }
    #[inline(always)]
    unsafe fn rotr7(self) -> Self {
        portable_op!(self, |w: u32| w.rotate_right(7))
    }
}

/// A message word as the compiler sees it: the zero words are known to be
/// zero, so their additions disappear.
#[derive(Clone, Copy)]
enum Word<V> {
    Zero,
    Lanes(V),
}

#[inline(always)]
unsafe fn add_word<V: Vector>(a: V, w: Word<V>) -> V {
    match w {
        Word::Zero => a,
        Word::Lanes(m) => a.add(m),
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn g<V: Vector>(
    v: &mut [V; 16],
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    mx: Word<V>,
    my: Word<V>,
) {
    v[a] = add_word(v[a].add(v[b]), mx);
    v[d] = v[d].xor(v[a]).rotr16();
    v[c] = v[c].add(v[d]);
    v[b] = v[b].xor(v[c]).rotr12();
    v[a] = add_word(v[a].add(v[b]), my);
    v[d] = v[d].xor(v[a]).rotr8();
    v[c] = v[c].add(v[d]);
    v[b] = v[b].xor(v[c]).rotr7();
}

#[inline(always)]
unsafe fn round<V: Vector>(v: &mut [V; 16], m: &[Word<V>; 16], s: &[usize; 16]) {
    g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
    diagonals(v, m, s);
}

#[inline(always)]
unsafe fn diagonals<V: Vector>(v: &mut [V; 16], m: &[Word<V>; 16], s: &[usize; 16]) {
    g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
}

/// What every record of a plot has in common before its nonce comes in.
///
/// The first round mixes the state's four columns; the nonce (message words
/// 0 and 1) enters only column 0, so columns 1 to 3 come out the same for
/// every record and are mixed once here, when the kernel is made: 3 of the
/// 56 mixing steps of a hash. The compiler already hoisted them out of the
/// plotter's long loops (phase 1 timed the same), but it cannot across
/// calls, and proving and checking hash one bucket (about 32 records) a
/// call. Column 0 is kept as it starts, with its first addition (`v0 +
/// v4`, both the key's) done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Start([u32; 16]);

impl Start {
    pub fn new(key: &[u32; 8]) -> Start {
        let mut words = [0u32; 16];
        words[..8].copy_from_slice(key);
        words[8..12].copy_from_slice(&IV[..4]);
        // Counter 0 (v[12], v[13] stay zero), one full block, record flags.
        words[14] = BLOCK_LEN;
        words[15] = RECORD_FLAGS;
        // SAFETY: the portable vector needs no target feature.
        let mut v = words.map(|w| unsafe { Portable::splat(w) });
        // In the first round every message word is at its own position,
        // so the columns' words 2 to 7 are all zero.
        for (a, b, c, d) in [(1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)] {
            // SAFETY: as above.
            unsafe { g(&mut v, a, b, c, d, Word::Zero, Word::Zero) };
        }
        let mut v = v.map(|lanes| lanes.0[0]);
        v[0] = v[0].wrapping_add(v[4]);
        Start(v)
    }
}

/// The 8 output words of `keyed_hash(key, LE64(nonce) || 56 zero bytes)`
/// for a register of nonces, lane i holding nonce i, the key given as its
/// [`Start`]. Word j of lane i is bytes 4j..4j+4 of that hash,
/// little-endian.
///
/// # Safety
/// The caller runs with `V`'s target features enabled.
#[inline(always)]
pub(crate) unsafe fn hash_records<V: Vector>(start: &Start, nonce_lo: V, nonce_hi: V) -> [V; 8] {
    let z = V::splat(0);
    let mut v = [z; 16];
    for (word, &shared) in v.iter_mut().zip(&start.0) {
        *word = V::splat(shared);
    }
    let mut m = [Word::Zero; 16];
    m[0] = Word::Lanes(nonce_lo);
    m[1] = Word::Lanes(nonce_hi);
    // The first round's column 0, the one the nonce enters: `g` with
    // `v0 + v4` already added and v12 known to be zero.
    v[0] = v[0].add(nonce_lo);
    v[12] = v[0].rotr16();
    v[8] = v[8].add(v[12]);
    v[4] = v[4].xor(v[8]).rotr12();
    v[0] = v[0].add(v[4]).add(nonce_hi);
    v[12] = v[12].xor(v[0]).rotr8();
    v[8] = v[8].add(v[12]);
    v[4] = v[4].xor(v[8]).rotr7();
    diagonals(&mut v, &m, &SCHEDULE[0]);
    round(&mut v, &m, &SCHEDULE[1]);
    round(&mut v, &m, &SCHEDULE[2]);
    round(&mut v, &m, &SCHEDULE[3]);
    round(&mut v, &m, &SCHEDULE[4]);
    round(&mut v, &m, &SCHEDULE[5]);
    round(&mut v, &m, &SCHEDULE[6]);
    let mut out = [z; 8];
    for i in 0..8 {
        out[i] = v[i].xor(v[i + 8]);
    }
    out
}

const MAX_LANES: usize = 16;

/// `out[i]` = the first 8 bytes, big-endian, of the hash of nonce
/// `first + i`, for `V::LANES` consecutive nonces.
///
/// # Safety
/// The caller runs with `V`'s target features enabled; `out` holds at least
/// `V::LANES` elements.
#[inline(always)]
pub(crate) unsafe fn prefixes_consecutive<V: Vector>(start: &Start, first: u64, out: &mut [u64]) {
    let mut nonces = [0u64; MAX_LANES];
    for (i, x) in nonces.iter_mut().enumerate().take(V::LANES) {
        *x = first.wrapping_add(i as u64);
    }
    prefixes_of::<V>(start, &nonces, out)
}

/// `out[i]` = the first 8 bytes, big-endian, of the hash of `nonces[i]`, for
/// `V::LANES` nonces. Only output words 0 and 1 are kept, so the compiler
/// drops the rest.
///
/// # Safety
/// As for [`prefixes_consecutive`]; `nonces` holds at least `V::LANES` elements.
#[inline(always)]
pub(crate) unsafe fn prefixes_of<V: Vector>(start: &Start, nonces: &[u64], out: &mut [u64]) {
    let mut lo = [0u32; MAX_LANES];
    let mut hi = [0u32; MAX_LANES];
    for i in 0..V::LANES {
        lo[i] = nonces[i] as u32;
        hi[i] = (nonces[i] >> 32) as u32;
    }
    let h = hash_records(start, V::load(&lo), V::load(&hi));
    h[0].store(&mut lo);
    h[1].store(&mut hi);
    for i in 0..V::LANES {
        out[i] = ((lo[i].swap_bytes() as u64) << 32) | hi[i].swap_bytes() as u64;
    }
}

/// `out[i]` = the first 4 bytes, big-endian, of the hash of nonce
/// `first + i`, for `V::LANES` consecutive nonces. Only output word 0 is
/// kept, so the compiler drops the two mixing steps of the last round that
/// only the other words need.
///
/// # Safety
/// As for [`prefixes_consecutive`]; `out` holds at least `V::LANES`
/// elements.
#[inline(always)]
pub(crate) unsafe fn top_words_consecutive<V: Vector>(start: &Start, first: u64, out: &mut [u32]) {
    let mut lo = [0u32; MAX_LANES];
    let mut hi = [0u32; MAX_LANES];
    for i in 0..V::LANES {
        let x = first.wrapping_add(i as u64);
        lo[i] = x as u32;
        hi[i] = (x >> 32) as u32;
    }
    let h = hash_records(start, V::load(&lo), V::load(&hi));
    h[0].store(&mut lo);
    for i in 0..V::LANES {
        out[i] = lo[i].swap_bytes();
    }
}

/// Whole 32-byte hashes of `V::LANES` arbitrary nonces.
///
/// # Safety
/// As for [`prefixes_consecutive`]; `nonces` and `out` hold at least
/// `V::LANES` elements.
#[inline(always)]
pub(crate) unsafe fn hashes<V: Vector>(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    let mut lo = [0u32; MAX_LANES];
    let mut hi = [0u32; MAX_LANES];
    for i in 0..V::LANES {
        lo[i] = nonces[i] as u32;
        hi[i] = (nonces[i] >> 32) as u32;
    }
    let h = hash_records(start, V::load(&lo), V::load(&hi));
    let mut words = [[0u32; MAX_LANES]; 8];
    for j in 0..8 {
        h[j].store(&mut words[j]);
    }
    for (i, bytes) in out[..V::LANES].iter_mut().enumerate() {
        for (j, word) in words.iter().enumerate() {
            bytes[4 * j..4 * j + 4].copy_from_slice(&word[i].to_le_bytes());
        }
    }
}

/// The keyed hashes of `V::LANES` whole 64-byte blocks, each a message of
/// its own: the table-chain scheme's joins, whose message words are all
/// live (no word is known to be zero, so nothing folds away).
///
/// # Safety
/// As for [`prefixes_consecutive`]; `blocks` and `out` hold at least
/// `V::LANES` elements.
#[inline(always)]
pub(crate) unsafe fn blocks<V: Vector>(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    let mut words = [[0u32; MAX_LANES]; 16];
    for (i, block) in blocks[..V::LANES].iter().enumerate() {
        for (j, word) in words.iter_mut().enumerate() {
            word[i] = u32::from_le_bytes(block[4 * j..4 * j + 4].try_into().unwrap());
        }
    }
    let mut m = [Word::Zero; 16];
    for (slot, word) in m.iter_mut().zip(&words) {
        *slot = Word::Lanes(V::load(word));
    }
    let mut v = [V::splat(0); 16];
    for i in 0..8 {
        v[i] = V::splat(key[i]);
    }
    for i in 0..4 {
        v[8 + i] = V::splat(IV[i]);
    }
    v[14] = V::splat(BLOCK_LEN);
    v[15] = V::splat(RECORD_FLAGS);
    for schedule in &SCHEDULE {
        round(&mut v, &m, schedule);
    }
    let mut hashed = [[0u32; MAX_LANES]; 8];
    for (j, word) in hashed.iter_mut().enumerate() {
        v[j].xor(v[j + 8]).store(word);
    }
    for (i, bytes) in out[..V::LANES].iter_mut().enumerate() {
        for (j, word) in hashed.iter().enumerate() {
            bytes[4 * j..4 * j + 4].copy_from_slice(&word[i].to_le_bytes());
        }
    }
}
