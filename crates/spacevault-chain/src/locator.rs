//! Block locators: how a vault tells a peer, in one request, where its
//! canonical chain stands, so that the peer answers from where their two
//! chains last agree. A locator names the hashes of the asking vault's
//! canonical blocks at its ten highest heights, then at heights each twice
//! as far below as the last, and at height 1: a few dozen hashes for any
//! chain, and the meeting point of a fork `d` blocks deep is found within
//! `2d` of it (as Bitcoin's `getheaders` does). The peer answers its
//! canonical blocks after the highest of them that is canonical in its own
//! chain, or from height 1 when none is.

/// Hashes a locator holds at most: enough for a chain of 2^53 blocks.
pub const MAX_LOCATOR: usize = 64;

/// Hashes taken one height apart before the steps start doubling.
const DENSE: usize = 10;

/// The heights a locator of a chain whose head is at `head` names, highest
/// first: `head` down to `head - 9`, then steps of 2, 4, 8, … and height 1
/// last. Empty for a chain of no block.
pub fn locator_heights(head: u64) -> Vec<u64> {
    let mut heights = Vec::new();
    let mut height = head;
    let mut step = 1u64;
    while height >= 1 && heights.len() < MAX_LOCATOR - 1 {
        heights.push(height);
        if heights.len() >= DENSE {
            step = step.saturating_mul(2);
        }
        height = height.saturating_sub(step);
    }
    if heights.last().is_some_and(|&h| h != 1) {
        heights.push(1);
    }
    heights
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locator_is_dense_at_the_head_then_doubles_down_to_height_one() {
        assert_eq!(locator_heights(0), Vec::<u64>::new());
        assert_eq!(locator_heights(1), vec![1]);
        assert_eq!(locator_heights(5), vec![5, 4, 3, 2, 1]);
        assert_eq!(
            locator_heights(100),
            vec![100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 89, 85, 77, 61, 29, 1]
        );
        for head in [2, 10, 11, 12, 1000, 1 << 20, u64::MAX / 2, u64::MAX] {
            let h = locator_heights(head);
            assert_eq!(h[0], head);
            assert_eq!(*h.last().unwrap(), 1, "{head}");
            assert!(h.len() <= MAX_LOCATOR, "{head}: {}", h.len());
            assert!(h.windows(2).all(|w| w[0] > w[1]), "{head}: {h:?}");
            // Each gap at most twice the one before: the meeting point of
            // a fork d deep is found within 2d of it.
            let gaps: Vec<u64> = h.windows(2).map(|w| w[0] - w[1]).collect();
            assert!(
                gaps.windows(2)
                    .all(|g| g[1] <= 2 * g[0] || g[1] == *gaps.last().unwrap()),
                "{head}: {gaps:?}"
            );
        }
    }
}
