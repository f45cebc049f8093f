//! The table-chain scheme plotted and proved the slow, obvious way: every
//! level in memory as whole trees (each entry keeps all its leaves),
//! matches found by reading the rule as written, the best proof found by
//! scoring every top entry. It shares no code with the plotter, the
//! reader or the verifier (it hashes with the `blake3` crate directly and
//! builds its own messages), so that their agreement with it means
//! something. Usable up to k = 20 or so.

use std::collections::HashMap;

const EXTRA_BITS: u32 = 6;
const B: u64 = 119;
const C: u64 = 127;

/// One entry of a level with everything below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub y: u64,
    pub meta: [u8; 16],
    /// In proof order: the left child's leaves, then the right's.
    pub leaves: Vec<u64>,
}

/// A whole plot, every level's trees kept.
pub struct ReferencePlot {
    pub k: u8,
    pub levels: u8,
    pub plot_id: [u8; 32],
    /// Entries of each level, level 1 first.
    pub sizes: Vec<usize>,
    pub tops: Vec<Tree>,
}

fn message_hash(id: &[u8; 32], message: &[u8; 64]) -> [u8; 32] {
    *blake3::keyed_hash(id, message).as_bytes()
}

fn output(hash: &[u8; 32], k: u8) -> (u64, [u8; 16]) {
    let mut top = 0u64;
    for &b in &hash[..8] {
        top = top * 256 + u64::from(b);
    }
    let y = top >> (64 - u32::from(k) - EXTRA_BITS);
    let mut meta = [0u8; 16];
    meta.copy_from_slice(&hash[8..24]);
    (y, meta)
}

/// The matching rule, as its definition reads.
fn rule(yl: u64, yr: u64) -> bool {
    let bucket_size = B * C;
    let (bl, br) = (yl / bucket_size, yr / bucket_size);
    if br != bl + 1 {
        return false;
    }
    let (l_b, l_c) = ((yl % bucket_size) / C, (yl % bucket_size) % C);
    let (r_b, r_c) = ((yr % bucket_size) / C, (yr % bucket_size) % C);
    if (l_b + 1) % B != r_b {
        return false;
    }
    let parity = bl % 2;
    (0..64u64).any(|m| (l_c + (2 * m + parity) * (2 * m + parity)) % C == r_c)
}

impl ReferencePlot {
    pub fn build(farmer_key: &[u8; 32], seed: &[u8; 32], k: u8, levels: u8) -> ReferencePlot {
        let mut material = farmer_key.to_vec();
        material.extend_from_slice(seed);
        material.push(k);
        material.push(levels);
        let id = blake3::derive_key("spacevault 2026-11 table-chain plot id v1", &material);

        let mut level: Vec<Tree> = (0..1u64 << k)
            .map(|x| {
                let mut message = [0u8; 64];
                message[..8].copy_from_slice(&x.to_le_bytes());
                let (y, meta) = output(&message_hash(&id, &message), k);
                Tree {
                    y,
                    meta,
                    leaves: vec![x],
                }
            })
            .collect();
        let mut sizes = vec![level.len()];
        for number in 2..=levels {
            // Entries by (bucket, b), so that each left entry is checked
            // against the right entries the rule's b condition allows.
            let mut by_group: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
            for (i, t) in level.iter().enumerate() {
                let group = (t.y / (B * C), (t.y % (B * C)) / C);
                by_group.entry(group).or_default().push(i);
            }
            let mut next = Vec::new();
            for left in &level {
                let (bucket, b) = (left.y / (B * C), (left.y % (B * C)) / C);
                let Some(rights) = by_group.get(&(bucket + 1, (b + 1) % B)) else {
                    continue;
                };
                for &r in rights {
                    let right = &level[r];
                    if !rule(left.y, right.y) {
                        continue;
                    }
                    let mut message = [0u8; 64];
                    message[..8].copy_from_slice(&left.y.to_le_bytes());
                    message[8..24].copy_from_slice(&left.meta);
                    message[24..40].copy_from_slice(&right.meta);
                    message[63] = number;
                    let (y, meta) = output(&message_hash(&id, &message), k);
                    let mut leaves = left.leaves.clone();
                    leaves.extend_from_slice(&right.leaves);
                    next.push(Tree { y, meta, leaves });
                }
            }
            sizes.push(next.len());
            level = next;
        }
        ReferencePlot {
            k,
            levels,
            plot_id: id,
            sizes,
            tops: level,
        }
    }

    /// The score of one top entry: bits of `(prefix XOR the challenge's
    /// k bits)`, then of the quality hash, 256 in all.
    pub fn score_of(&self, top: &Tree, challenge: &[u8; 32]) -> [u8; 32] {
        let k = usize::from(self.k);
        let mut pair = 0usize;
        for level in 0..usize::from(self.levels) - 2 {
            pair = 2 * pair + usize::from(challenge[31] >> level & 1);
        }
        let mut message = [0u8; 64];
        message[..32].copy_from_slice(challenge);
        message[32..40].copy_from_slice(&top.leaves[2 * pair].to_le_bytes());
        message[40..48].copy_from_slice(&top.leaves[2 * pair + 1].to_le_bytes());
        message[63] = 0xFF;
        let quality = message_hash(&self.plot_id, &message);
        let bit = |bytes: &[u8], i: usize| (bytes[i / 8] >> (7 - i % 8)) & 1;
        let prefix = top.y >> EXTRA_BITS;
        let mut bits = Vec::with_capacity(256);
        for i in 0..k {
            let mine = (prefix >> (k - 1 - i)) & 1;
            bits.push((mine as u8) ^ bit(challenge, i));
        }
        for i in 0..256 - k {
            bits.push(bit(&quality, i));
        }
        let mut score = [0u8; 32];
        for (i, b) in bits.into_iter().enumerate() {
            score[i / 8] |= b << (7 - i % 8);
        }
        score
    }

    /// The best proof for a challenge: the least score over every top
    /// entry, ties to the smaller leaves. A score starts with its
    /// entry's prefix distance, so only the entries nearest by prefix
    /// are scored in full.
    pub fn best(&self, challenge: &[u8; 32]) -> Option<([u8; 32], Vec<u64>)> {
        let k = u32::from(self.k);
        let mut wanted = 0u64;
        for &b in &challenge[..8] {
            wanted = wanted * 256 + u64::from(b);
        }
        wanted >>= 64 - k;
        let distance = |t: &Tree| (t.y >> EXTRA_BITS) ^ wanted;
        let nearest = self.tops.iter().map(distance).min()?;
        self.tops
            .iter()
            .filter(|t| distance(t) == nearest)
            .map(|t| (self.score_of(t, challenge), t.leaves.clone()))
            .min()
    }
}
