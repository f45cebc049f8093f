//! The plotter's sorts: a counting pass that spreads items into small
//! ranges of their key, then a comparison sort of each range, the ranges
//! split between threads. Every key the plotter sorts by (an output, a
//! line point) is near uniform over its range, so the ranges hold a few
//! dozen items each and the whole is linear; the result is exactly what
//! a comparison sort by the full order gives, which the test checks.

/// Items a range holds on average.
const PER_RANGE: usize = 32;

/// `items` sorted by `full`, whose first component must be `key` (a
/// number below `bound`, so that ordering by range then by `full` is
/// ordering by `full`).
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
    let ranges = (items.len() / PER_RANGE).max(1);
    let bound = bound.max(1);
    let range_of = |item: &T| -> usize {
        let k = key(item).min(bound - 1);
        // k < bound, so the quotient is below `ranges`: u128 holds the
        // product for keys of up to 96 bits and a few billion ranges.
        (k * ranges as u128 / bound) as usize
    };
    let mut starts = vec![0usize; ranges + 1];
    for item in &items {
        starts[range_of(item) + 1] += 1;
    }
    for r in 0..ranges {
        starts[r + 1] += starts[r];
    }
    let mut next = starts.clone();
    let mut out = vec![T::default(); items.len()];
    for item in &items {
        let r = range_of(item);
        out[next[r]] = *item;
        next[r] += 1;
    }
    drop(items);
    // Each thread sorts the ranges of an equal share of the items.
    let threads = threads.max(1);
    let mut rest = out.as_mut_slice();
    let mut done = 0usize;
    std::thread::scope(|s| {
        let mut range = 0usize;
        for t in 0..threads {
            let goal = starts[ranges] * (t + 1) / threads;
            let first = range;
            while range < ranges && starts[range + 1] <= goal {
                range += 1;
            }
            if t + 1 == threads {
                range = ranges;
            }
            let end = starts[range];
            let (mine, tail) = rest.split_at_mut(end - done);
            rest = tail;
            let offset = done;
            done = end;
            let (starts, full) = (&starts, &full);
            s.spawn(move || {
                for r in first..range {
                    mine[starts[r] - offset..starts[r + 1] - offset].sort_unstable_by_key(full);
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
    fn it_sorts_as_a_comparison_sort_does() {
        for (n, bound) in [
            (0usize, 10u128),
            (1, 10),
            (1000, 1 << 20),
            (100_000, 1 << 44),
            (5000, 7),
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
