//! How much space a table-chain plot takes as an attacker counts it.

/// A table-chain plot's size in the compact encoding an attacker would use
/// first: each middle level's sorted values and the top level's sorted
/// prefixes in Elias–Fano form (`2 + ⌊log2(range / n)⌋` bits an entry
/// for `n` sorted values below `range`), the top's values (pairs of
/// positions, in prefix order) at their full width, and no index (the
/// sorted prefixes are one).
#[derive(Clone, Debug, PartialEq)]
pub struct Compact {
    pub k: u8,
    pub levels: u8,
    /// Entries stored at levels 2 to `levels`.
    pub stored: Vec<u64>,
}

fn elias_fano_bits(n: f64, range: f64) -> f64 {
    if n < 1.0 {
        return 0.0;
    }
    n * (2.0 + (range / n).log2().floor().max(0.0))
}

impl Compact {
    fn count(&self, level: u8) -> f64 {
        if level == 1 {
            2f64.powi(i32::from(self.k))
        } else {
            self.stored[usize::from(level) - 2] as f64
        }
    }

    /// The bits of `level`'s section with the low `dropped` bits of each
    /// value gone.
    pub fn section_bits(&self, level: u8, dropped: u32) -> f64 {
        let n = self.count(level);
        // A value is a line point of two positions below (about half the
        // square of the count) and one bit for which child is left.
        let values = self.count(level - 1).powi(2);
        let shrink = 2f64.powi(dropped as i32);
        if level < self.levels {
            elias_fano_bits(n, values / shrink)
        } else {
            let prefixes = elias_fano_bits(n, 2f64.powi(i32::from(self.k)));
            prefixes + n * ((values / shrink).log2().ceil().max(0.0))
        }
    }

    pub fn total_bits(&self) -> f64 {
        (2..=self.levels).map(|l| self.section_bits(l, 0)).sum()
    }

    pub fn bytes(&self) -> f64 {
        self.total_bits() / 8.0
    }

    /// The bytes an attacker keeps who drops `dropped` (middle levels)
    /// and keeps a bit a matched entry of the highest of them, `matched`
    /// of them, to prune the recomputed level as the plotter did.
    pub(super) fn without_levels(&self, dropped: &[u8], matched: f64) -> f64 {
        self.without(dropped, matched, &[], 0)
    }

    /// The bytes an attacker keeps who drops `bits` of each value of the
    /// levels `short`.
    pub(super) fn without_bits(&self, short: &[u8], bits: u32) -> f64 {
        self.without(&[], 0.0, short, bits)
    }

    /// Both: the levels `dropped` gone (with `matched` bits kept to prune
    /// the highest), and `bits` off each value of the levels `short`.
    pub(super) fn without(&self, dropped: &[u8], matched: f64, short: &[u8], bits: u32) -> f64 {
        let gone: f64 = dropped.iter().map(|&l| self.section_bits(l, 0)).sum();
        let saved: f64 = short
            .iter()
            .map(|&l| self.section_bits(l, 0) - self.section_bits(l, bits))
            .sum();
        (self.total_bits() - gone + matched - saved) / 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_count_takes_about_k_bits_a_middle_entry_and_2k_at_the_top() {
        let n = 1u64 << 20;
        let c = Compact {
            k: 20,
            levels: 5,
            stored: vec![n; 4],
        };
        // n sorted values below n^2: 2 + 20 bits each; the top: 2 + 0
        // for its prefixes, 40 for its pair.
        assert_eq!(c.section_bits(3, 0), n as f64 * 22.0);
        assert_eq!(c.section_bits(5, 0), n as f64 * 42.0);
        assert_eq!(c.total_bits(), n as f64 * (3.0 * 22.0 + 42.0));
        // Dropped bits come off each entry; dropping a level leaves the
        // rest and the attacker's bits.
        assert_eq!(c.section_bits(2, 4), n as f64 * 18.0);
        assert_eq!(
            c.without_levels(&[2, 3], 8.0),
            (n as f64 * 64.0 + 8.0) / 8.0
        );
        assert_eq!(
            c.without(&[2, 3], 8.0, &[5], 10),
            (n as f64 * 54.0 + 8.0) / 8.0
        );
    }
}
