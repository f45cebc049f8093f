//! Whether this vault is syncing from a peer well ahead of it: then it
//! farms nothing, for a block on a head the network passed long ago only
//! loses, and costs every vault that checks it. The peer's height is its
//! own claim, so it counts only while the sync keeps bringing new blocks:
//! a peer that claims a height and sends nothing stops no farming for
//! longer than a couple of slots.

use std::sync::atomic::{AtomicU64, Ordering};

/// Blocks a peer must be ahead for this vault to stop farming while it
/// syncs from it: a vault a block or two behind, which the next gossiped
/// block would bring level, farms on.
pub const FAR_AHEAD_BLOCKS: u64 = 4;

/// Slots a sync's last new block counts for.
const PROGRESS_SLOTS: u64 = 2;

/// The height of the peer a sync is under way from, and when it last
/// brought a new block.
#[derive(Default)]
pub struct Behind {
    /// The peer's height; 0 when no sync is under way.
    target: AtomicU64,
    /// When the sync last brought a new block (Unix ms).
    progress_ms: AtomicU64,
}

impl Behind {
    /// A sync begins from a peer at `height`.
    pub fn begin(&self, height: u64, now_ms: u64) {
        self.progress_ms.store(now_ms, Ordering::Release);
        self.target.store(height, Ordering::Release);
    }

    /// The sync brought a new block.
    pub fn progressed(&self, now_ms: u64) {
        self.progress_ms.store(now_ms, Ordering::Release);
    }

    /// The sync ended.
    pub fn end(&self) {
        self.target.store(0, Ordering::Release);
    }

    /// Whether a vault at `height` syncs, at `now_ms`, from a peer at
    /// least [`FAR_AHEAD_BLOCKS`] ahead that brought a new block within
    /// the last slots of `slot_ms`.
    pub fn far_behind(&self, height: u64, now_ms: u64, slot_ms: u64) -> bool {
        let target = self.target.load(Ordering::Acquire);
        let progress = self.progress_ms.load(Ordering::Acquire);
        target >= height.saturating_add(FAR_AHEAD_BLOCKS)
            && now_ms.saturating_sub(progress) <= PROGRESS_SLOTS * slot_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sync_from_a_peer_far_ahead_that_brings_blocks_stops_farming() {
        let behind = Behind::default();
        assert!(!behind.far_behind(10, 1_000, 100), "no sync");
        behind.begin(13, 1_000);
        assert!(!behind.far_behind(10, 1_000, 100), "three blocks ahead");
        behind.begin(14, 1_000);
        assert!(behind.far_behind(10, 1_000, 100));
        assert!(behind.far_behind(10, 1_200, 100));
        // No new block for more than two slots: its claim no longer counts.
        assert!(!behind.far_behind(10, 1_201, 100));
        behind.progressed(1_300);
        assert!(behind.far_behind(10, 1_350, 100));
        // Caught up to within the margin, or the sync over: farming again.
        assert!(!behind.far_behind(11, 1_350, 100));
        behind.end();
        assert!(!behind.far_behind(0, 1_350, 100));
    }
}
