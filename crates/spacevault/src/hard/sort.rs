//! The plotter's sorts: a counting pass that spreads items into small
//! ranges of their key, then a comparison sort of each range, the ranges
//! split between threads. Every key the plotter sorts by (an output, a
//! line point) is near uniform over its range, so the ranges hold a few
//! dozen items each and the whole is linear; the result is exactly what
//! a comparison sort by the full order gives, which the test checks.

/// Items a range holds on average.
const PER_RANGE: usize = 32;

/// Coarse buckets of the first pass: few enough that writing into each
/// streams, many enough that a bucket's items fit in a core's cache for
/// the second pass.
const COARSE: usize = 256;

/// A monotone map of keys in `lo..hi` onto ranges `0..n` of about equal
/// spans, by a shift and a multiplication: dividing each key (a 128-bit
/// division) took 3% of the disk plotter's samples. Sorting by range,
/// then within each, is sorting whatever the ranges' spans, as long as
/// the map never decreases.
#[derive(Clone, Copy)]
struct Spread {
    lo: u128,
    hi: u128,
    /// Keys' offsets from `lo` lose this many low bits, to fit 32.
    shift: u32,
    /// Ranges a reduced offset spans, times 2^32.
    factor: u128,
    n: usize,
}

impl Spread {
    fn new(lo: u128, hi: u128, n: usize) -> Spread {
        let hi = hi.max(lo + 1);
        let largest = hi - 1 - lo;
        let shift = (128 - largest.leading_zeros()).saturating_sub(32);
        let reduced = (largest >> shift) + 1;
        Spread {
            lo,
            hi,
            shift,
            factor: ((n.max(1) as u128) << 32) / reduced,
            n: n.max(1),
        }
    }

    #[inline(always)]
    fn of(&self, key: u128) -> usize {
        let reduced = (key.clamp(self.lo, self.hi - 1) - self.lo) >> self.shift;
        (((reduced * self.factor) >> 32) as usize).min(self.n - 1)
    }

    /// The first key range `c` holds (`hi` past the last).
    fn edge(&self, c: usize) -> u128 {
        if c >= self.n {
            return self.hi;
        }
        let reduced = ((c as u128) << 32).div_ceil(self.factor);
        self.lo.saturating_add(reduced << self.shift).min(self.hi)
    }
}

/// Sorts `items` (all with keys in `lo..hi`) into `out` by `full`: a
/// counting pass into ranges of about [`PER_RANGE`] items, then a
/// comparison sort of each range.
fn fine_sort<T: Copy, K: Ord>(
    items: &[T],
    out: &mut [T],
    (lo, hi): (u128, u128),
    key: &impl Fn(&T) -> u128,
    full: &impl Fn(&T) -> K,
) {
    let ranges = (items.len() / PER_RANGE).max(1);
    let spread = Spread::new(lo, hi, ranges);
    let range_of = |item: &T| -> usize { spread.of(key(item)) };
    let mut starts = vec![0usize; ranges + 1];
    for item in items {
        starts[range_of(item) + 1] += 1;
    }
    for r in 0..ranges {
        starts[r + 1] += starts[r];
    }
    let mut next = starts.clone();
    for item in items {
        let r = range_of(item);
        out[next[r]] = *item;
        next[r] += 1;
    }
    for r in 0..ranges {
        out[starts[r]..starts[r + 1]].sort_unstable_by_key(full);
    }
}

/// `items` sorted by `full`, whose first component must be `key` (a
/// number below `bound`, so that ordering by key ranges, then by `full`
/// within each, is ordering by `full`).
pub(crate) fn sort_by<T, K>(
    items: Vec<T>,
    bound: u128,
    key: impl Fn(&T) -> u128 + Sync,
    full: impl Fn(&T) -> K + Sync,
    threads: usize,
) -> Vec<T>
where
    T: Copy + Send + Sync + Default,
    K: Ord,
{
    let coarse = Spread::new(0, bound.max(1), COARSE);
    let edge = |c: usize| coarse.edge(c);
    let coarse_of = |item: &T| -> usize { coarse.of(key(item)) };
    let mut starts = vec![0usize; COARSE + 1];
    for item in &items {
        starts[coarse_of(item) + 1] += 1;
    }
    for c in 0..COARSE {
        starts[c + 1] += starts[c];
    }
    let mut next = starts.clone();
    let mut spread = vec![T::default(); items.len()];
    for item in &items {
        let c = coarse_of(item);
        spread[next[c]] = *item;
        next[c] += 1;
    }
    let mut out = items;
    // Each thread sorts the coarse buckets of an equal share of the items.
    let threads = threads.max(1);
    let (mut rest_in, mut rest_out) = (spread.as_slice(), out.as_mut_slice());
    let mut done = 0usize;
    std::thread::scope(|s| {
        let mut bucket = 0usize;
        for t in 0..threads {
            let goal = starts[COARSE] * (t + 1) / threads;
            let first = bucket;
            while bucket < COARSE && starts[bucket + 1] <= goal {
                bucket += 1;
            }
            if t + 1 == threads {
                bucket = COARSE;
            }
            let end = starts[bucket];
            let (mine_in, tail_in) = rest_in.split_at(end - done);
            let (mine_out, tail_out) = rest_out.split_at_mut(end - done);
            (rest_in, rest_out) = (tail_in, tail_out);
            let offset = done;
            done = end;
            let (starts, key, full, edge) = (&starts, &key, &full, &edge);
            s.spawn(move || {
                for c in first..bucket {
                    let (a, b) = (starts[c] - offset, starts[c + 1] - offset);
                    fine_sort(
                        &mine_in[a..b],
                        &mut mine_out[a..b],
                        (edge(c), edge(c + 1)),
                        key,
                        full,
                    );
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_never_decreases_and_its_edges_bound_its_ranges() {
        for (lo, hi, n) in [
            (0u128, 10u128, 4usize),
            (5, 6, 1),
            (0, 1 << 20, 256),
            (1 << 40, (1 << 40) + (1 << 33) + 17, 1000),
            (0, 1 << 69, 256),
            (3, 7, 100),
        ] {
            let spread = Spread::new(lo, hi, n);
            let step = ((hi - lo) / 5000).max(1);
            let mut last = 0;
            let mut key = lo;
            while key < hi {
                let r = spread.of(key);
                assert!(r >= last && r < n, "{key} in {lo}..{hi}: {r}");
                assert!(
                    spread.edge(r) <= key && key < spread.edge(r + 1),
                    "{key}: {r}"
                );
                last = r;
                key += step;
            }
        }
    }

    #[test]
    fn it_sorts_as_a_comparison_sort_does() {
        for (n, bound) in [
            (0usize, 10u128),
            (1, 10),
            (1000, 1 << 20),
            (100_000, 1 << 44),
            (5000, 7),
            (20_000, 1 << 69),
        ] {
            let items: Vec<(u64, u32)> = (0..n as u64)
                .map(|i| {
                    let h = blake3::hash(&i.to_le_bytes());
                    let v = u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap());
                    ((u128::from(v) % bound) as u64, (v >> 40) as u32 % 3)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_unstable();
            for threads in [1, 2, 3] {
                let got = sort_by(items.clone(), bound, |e| u128::from(e.0), |e| *e, threads);
                assert_eq!(got, expected, "n {n} threads {threads}");
            }
        }
    }
}
