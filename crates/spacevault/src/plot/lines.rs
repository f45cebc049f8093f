//! A scatter's lines as the AVX-512 loops that fill them see them: the
//! size of a line, and the scatter's arrays and lines through raw
//! pointers. It depends on nothing else of the plotter, so that those
//! loops (`simd/avx512.rs`) and the scatter that calls them
//! (`scatter.rs`) both build on it.

/// Two cache lines: a partition's line fills half as often as with one, and
/// each fill is a mispredicted branch and a few loads and stores besides
/// the store itself. At k = 32 (512 partitions, 64 KiB of lines a thread)
/// that made the scatter faster than 64-byte lines did, and 256 bytes
/// gained nothing more.
pub(crate) const LINE_BYTES: usize = 128;

/// A scatter of 4-byte records seen through raw pointers, for loops that
/// push records from between their own AVX-512 steps:
/// [`Scatter::push_block`](super::scatter::Scatter::push_block)'s fast
/// path, and the plotter's loop that hashes, locates and pushes 16 records
/// at a time (`plot/keys.rs`). It holds the scatter mutably borrowed for
/// `'a`.
#[cfg(target_arch = "x86_64")]
pub(crate) struct LinePusher<'a> {
    pub(crate) base: *mut u32,
    pub(crate) cap: usize,
    pub(crate) fills: *mut usize,
    pub(crate) lines: *mut u32,
    pub(crate) line_fill: *mut u8,
    parts: usize,
    _scatter: std::marker::PhantomData<&'a mut [u32]>,
}

#[cfg(target_arch = "x86_64")]
impl<'a> LinePusher<'a> {
    /// The view of a scatter of `parts` partitions: its arrays from `base`,
    /// room for `cap` records in each, filled as `fills` says, and its
    /// lines, filled as `line_fill` says.
    ///
    /// # Safety
    ///
    /// For all of `'a`, nothing else may touch what the pointers point at,
    /// and each must be valid for reads and writes of: `base`, `parts * cap`
    /// records; `fills` and `line_fill`, `parts` entries; `lines`, `parts`
    /// lines of [`LINE_BYTES`]. The loops that take a pusher rely on it.
    pub(crate) unsafe fn new(
        base: *mut u32,
        cap: usize,
        fills: *mut usize,
        lines: *mut u32,
        line_fill: *mut u8,
        parts: usize,
    ) -> LinePusher<'a> {
        LinePusher {
            base,
            cap,
            fills,
            lines,
            line_fill,
            parts,
            _scatter: std::marker::PhantomData,
        }
    }

    /// Partitions of the scatter.
    pub fn parts(&self) -> usize {
        self.parts
    }
}
