//! Rainbow tables against the plain scheme.
//!
//! A plain record is `H(x)` for a counter `x`, and the best answer to a
//! challenge is the record sharing the longest prefix with it. An attacker
//! who inverts `f(x) = the top k bits of H(x)` at the challenge's k-bit
//! prefix finds that record without the plot: Hellman's trade-off, here
//! in Oechslin's rainbow form. Chain `i` starts at `x = i` and steps
//! `x ← R_c(f(x))` for columns `c = 0..length`, with a reduction `R_c`
//! of its own for each column; only the chain's end is kept (sorted, with
//! its start). Inverting a target tries it at each column from the last,
//! walks to the end, and rebuilds each chain whose end matches up to that
//! column: about `length²/2` hashes, for tables that store
//! `chains · (k + 2)` bits (the ends' gaps and the starts) where the plot
//! stores every record.

use crate::construction::{distance, Candidate};
use crate::kernel::Kernel;

/// Prefixes tried, nearest first by XOR, before an attacker gives up on
/// a challenge: an honest plot has a record within a few of any prefix.
pub const MAX_TARGETS: u64 = 64;

/// A rainbow table over one plain plot's records.
pub struct Rainbow {
    k: u8,
    length: u32,
    /// Makes each table's reductions its own: an attacker's tables cover
    /// different parts of the records.
    salt: u64,
    kernel: Kernel,
    /// `(end, start)` of each chain, sorted by end.
    chains: Vec<(u64, u64)>,
}

/// An inversion or an answer, and the hashes it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found<T> {
    pub value: T,
    pub hashes: u64,
}

impl Rainbow {
    /// Builds table `salt` of `chains` chains of `length` steps over the
    /// plot `plot_id` of size `k`: `chains · length` hashes, once, before
    /// any challenge.
    pub fn build(plot_id: &[u8; 32], k: u8, chains: u64, length: u32, salt: u64) -> Rainbow {
        assert!(length >= 1 && chains >= 1 && chains <= 1u64 << k);
        let kernel = Kernel::new(plot_id);
        let mut table = Rainbow {
            k,
            length,
            salt,
            kernel,
            chains: Vec::with_capacity(chains as usize),
        };
        // Each table starts its chains at records of its own.
        let mask = (1u64 << k) - 1;
        let mut ends: Vec<(u64, u64)> = (0..chains)
            .map(|i| {
                let start = (salt.wrapping_mul(chains) + i) & mask;
                (start, start)
            })
            .collect();
        // A column at a time across every chain: the kernel's lanes each
        // take a chain.
        let mut xs = vec![0u64; ends.len()];
        let mut ys = vec![0u64; ends.len()];
        for column in 0..length {
            for (x, e) in xs.iter_mut().zip(&ends) {
                *x = e.0;
            }
            table.kernel.prefixes_of(&xs, &mut ys);
            for (e, &y) in ends.iter_mut().zip(&ys) {
                e.0 = table.reduce(table.top_bits(y), column);
            }
        }
        ends.sort_unstable();
        table.chains = ends;
        table
    }

    /// The bits the table stores: each chain's end as a gap from the one
    /// before (about `k − log2(chains) + 2` bits) and its start (the
    /// chain's number, `log2(chains)` bits, from which and the table's
    /// salt the start follows).
    pub fn stored_bits(&self) -> u64 {
        self.chains.len() as u64 * (u64::from(self.k) + 2)
    }

    pub fn chains(&self) -> u64 {
        self.chains.len() as u64
    }

    pub fn length(&self) -> u32 {
        self.length
    }

    fn top_bits(&self, prefix: u64) -> u64 {
        prefix >> (64 - u32::from(self.k))
    }

    /// `R_c`: a different permutation of the k-bit values for each column,
    /// so that chains which meet in different columns do not merge.
    fn reduce(&self, y: u64, column: u32) -> u64 {
        let mask = (1u64 << self.k) - 1;
        // The product's top bits are the well-mixed ones.
        let key = (u64::from(column) + (self.salt << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (y ^ (key >> (64 - u32::from(self.k)))) & mask
    }

    fn f(&self, x: u64) -> u64 {
        self.top_bits(u64::from_be_bytes(
            self.kernel.hash(x)[..8].try_into().unwrap(),
        ))
    }

    /// Every `x` the table finds with `f(x) = target`.
    pub fn invert(&self, target: u64) -> Found<Vec<u64>> {
        let mut hashes = 0;
        let mut found = Vec::new();
        for column in (0..self.length).rev() {
            let mut x = self.reduce(target, column);
            for c in column + 1..self.length {
                x = self.reduce(self.f(x), c);
                hashes += 1;
            }
            let first = self.chains.partition_point(|e| e.0 < x);
            for &(_, start) in self.chains[first..].iter().take_while(|e| e.0 == x) {
                // Rebuilt to the column: a preimage, or a false alarm
                // (another chain's value merged into this one later).
                let mut y = start;
                for c in 0..column {
                    y = self.reduce(self.f(y), c);
                }
                hashes += u64::from(column) + 1;
                if self.f(y) == target && !found.contains(&y) {
                    found.push(y);
                }
            }
        }
        Found {
            value: found,
            hashes,
        }
    }
}

/// The answer of an attacker holding `tables` (one plot's) to
/// `challenge`: the prefixes nearest the challenge's, in XOR order,
/// inverted in every table until one has preimages; the best of those by
/// whole distance. None when [`MAX_TARGETS`] prefixes give nothing.
pub fn answer(tables: &[Rainbow], challenge: &[u8; 32]) -> Found<Option<Candidate>> {
    let Some(first) = tables.first() else {
        return Found {
            value: None,
            hashes: 0,
        };
    };
    let prefix = first.top_bits(u64::from_be_bytes(challenge[..8].try_into().unwrap()));
    let mut hashes = 0;
    for d in 0..MAX_TARGETS.min(1u64 << first.k) {
        let mut preimages = Vec::new();
        for table in tables {
            let inverted = table.invert(prefix ^ d);
            hashes += inverted.hashes;
            for x in inverted.value {
                if !preimages.contains(&x) {
                    preimages.push(x);
                }
            }
        }
        let best = preimages
            .iter()
            .map(|&nonce| {
                hashes += 1;
                Candidate {
                    nonce,
                    distance: distance(&first.kernel.hash(nonce), challenge),
                }
            })
            .reduce(|a, b| if b.beats(&a) { b } else { a });
        if best.is_some() {
            return Found {
                value: best,
                hashes,
            };
        }
    }
    Found {
        value: None,
        hashes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::construction::{brute_force_best, plot_id};

    /// The slow twin: every x with `f(x) = target`, by hashing them all.
    fn preimages(table: &Rainbow, target: u64) -> Vec<u64> {
        (0..1u64 << table.k)
            .filter(|&x| table.f(x) == target)
            .collect()
    }

    #[test]
    fn what_a_table_finds_is_a_preimage_and_a_full_table_finds_most() {
        let id = plot_id(&[1; 32], &[2; 32], 14);
        let table = Rainbow::build(&id, 14, 1 << 10, 32, 0);
        let (mut all, mut found) = (0, 0);
        for target in (0..1u64 << 14).step_by(97) {
            let truth = preimages(&table, target);
            let got = table.invert(target).value;
            assert!(
                got.iter().all(|x| truth.contains(x)),
                "{target}: {got:?} {truth:?}"
            );
            all += truth.len();
            found += got.len();
        }
        // 2^10 chains of 32 steps cover a good part of 2^14 values, with
        // merges: well above half, never all.
        assert!(found * 10 > all * 5 && found < all, "{found} of {all}");
    }

    #[test]
    fn an_answer_the_table_finds_is_the_honest_answer_when_it_is_as_good() {
        let id = plot_id(&[3; 32], &[4; 32], 14);
        let tables: Vec<_> = (0..2)
            .map(|salt| Rainbow::build(&id, 14, 1 << 11, 32, salt))
            .collect();
        let mut equal = 0;
        for i in 0..50u8 {
            let challenge = [i; 32];
            let honest = brute_force_best(&id, 14, &challenge);
            let got = answer(&tables, &challenge);
            assert!(got.hashes > 0);
            if let Some(c) = got.value {
                assert!(!c.beats(&honest), "an attacker cannot beat the whole plot");
                equal += usize::from(c == honest);
            }
        }
        assert!(equal >= 30, "{equal} of 50");
    }
}
