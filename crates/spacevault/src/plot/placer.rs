//! How a partition's records, filed by window (`windows.rs`), are put into
//! their slots (`pack.rs`): the interface between the two, and what both
//! take their sizes from.

/// Buckets a window holds at most: their slots and cursors together fit in
/// L2 (about 300 KiB).
pub(crate) const WINDOW_BUCKETS_LOG2: u32 = 11;

/// Memory for placing a window's records into a plain array of slots
/// first (k = 32, see `SlotPlacer::place_window_dense`), kept from window
/// to window.
#[derive(Default)]
pub(crate) struct Dense {
    pub(crate) slots: Vec<u32>,
    pub(crate) cursors: Vec<u32>,
}

impl Dense {
    pub fn bytes(&self) -> usize {
        (self.slots.capacity() + self.cursors.capacity()) * 4
    }
}

/// Where a window's records are put: the slot placer, or in tests a list.
pub(crate) trait Placer {
    /// Makes buckets `..end` ready to receive records.
    fn open_buckets(&mut self, end: usize);
    /// Puts each entry's nonce, `high | (entry & (2^shift - 1))`, into
    /// bucket `first + (entry >> shift)`.
    fn put_entries(&mut self, first: usize, entries: &[u32], shift: u32, high: u64);
    /// Places a window: buckets `first..end`, `entries` records in runs of
    /// `(entries, high)` as `put_entries` takes them.
    #[inline(always)]
    fn place_window<'a>(
        &mut self,
        first: usize,
        end: usize,
        runs: impl Iterator<Item = (&'a [u32], u64)>,
        shift: u32,
        entries: usize,
        dense: &mut Dense,
    ) {
        let _ = (entries, dense);
        place_by_runs(self, first, end, runs, shift);
    }
}

/// A window's runs handed to `put_entries` one after another.
#[inline(always)]
pub(crate) fn place_by_runs<'a, P: Placer + ?Sized>(
    placer: &mut P,
    first: usize,
    end: usize,
    runs: impl Iterator<Item = (&'a [u32], u64)>,
    shift: u32,
) {
    placer.open_buckets(end);
    for (run, high) in runs {
        placer.put_entries(first, run, shift, high);
    }
}
