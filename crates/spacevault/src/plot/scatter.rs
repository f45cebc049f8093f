//! Scattering records into per-partition arrays.
//!
//! Thousands of partitions written one record at a time would touch a
//! different page for nearly every record. Records are first gathered in a
//! 128-byte line per partition (all lines together fit in L2) and copied out
//! a whole line at a time, so the big arrays see sequential full-line writes.

#[cfg(target_arch = "x86_64")]
use super::lines::LinePusher;
use super::lines::LINE_BYTES;
#[cfg(target_arch = "x86_64")]
use super::simd::avx512;
use super::simd::Simd;
use super::{Phase, PlotError, Progress};
use crate::aligned::{MappedBuf, Pages};
use std::sync::Mutex;

/// With [`Room::Pages`] each partition's array starts on a page boundary
/// and spans whole pages, so it can be written with O_DIRECT straight from
/// here.
const PAGE_BYTES: usize = 4096;

/// What each partition's room in the arrays is rounded up to. Whole pages
/// where the arrays are written to the temp file with O_DIRECT straight
/// from memory; whole lines where they are only read back in memory: with
/// many threads a thread's share of a partition is a few thousand keys
/// (about 2000 at 64 threads for an in-memory plot's 2^17-record
/// partitions), and rounding it to pages would cost a quarter or more of
/// the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    Pages,
    Lines,
}

impl Room {
    /// Room for `cap` records of `T`, rounded up.
    fn round<T>(self, cap: usize) -> usize {
        let unit = match self {
            Room::Pages => PAGE_BYTES,
            Room::Lines => LINE_BYTES,
        } / std::mem::size_of::<T>();
        cap.div_ceil(unit) * unit
    }
}

pub(crate) struct Scatter<T: Copy + Default> {
    arrays: Arrays<T>,
    lines: Vec<T>,
    line_fill: Vec<u8>,
    /// Whether the arrays' pages may not all be in use yet.
    fresh: bool,
    room: Room,
}

/// Every partition's array, and the records that did not fit.
struct Arrays<T: Copy> {
    keys: MappedBuf<T>,
    /// Room per partition, a whole number of lines.
    cap: usize,
    fill: Vec<usize>,
    overflow: Vec<(u64, T)>,
    overflowed: Vec<u32>,
}

impl<T: Copy + Default> Scatter<T> {
    const LINE: usize = LINE_BYTES / std::mem::size_of::<T>();
    const PAGE: usize = PAGE_BYTES / std::mem::size_of::<T>();

    /// Room for at least `cap` records in each of `parts` partitions,
    /// rounded up as `room` says.
    pub fn new(parts: usize, cap: usize, room: Room) -> Result<Scatter<T>, PlotError> {
        let cap = room.round::<T>(cap);
        let keys = MappedBuf::zeroed(parts * cap, Pages::Base)
            .map_err(|e| PlotError::io("allocating sort buffers", e))?;
        Ok(Scatter {
            arrays: Arrays {
                keys,
                cap,
                fill: vec![0; parts],
                overflow: Vec::new(),
                overflowed: vec![0; parts],
            },
            lines: vec![T::default(); parts * Self::LINE],
            line_fill: vec![0; parts],
            fresh: true,
            room,
        })
    }

    /// Whether [`prefault`](Self::prefault) has work to do.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// Brings every page of the arrays into use now, with one store each,
    /// rather than at the first store of the scatter into it: the kernel
    /// zeroes each page then either way, but done first it can be timed
    /// (it is most of what a fresh plot pays beyond hashing on a VM) and
    /// done on all threads at once.
    pub fn prefault(&mut self) {
        if std::mem::take(&mut self.fresh) {
            self.arrays
                .keys
                .chunks_mut(Self::PAGE)
                .for_each(|page| page[0] = T::default());
        }
    }

    /// Whether this scatter was made by `new(parts, cap, room)`.
    fn has_shape(&self, parts: usize, cap: usize, room: Room) -> bool {
        self.arrays.fill.len() == parts
            && self.room == room
            && self.arrays.cap == room.round::<T>(cap)
    }

    /// Memory a scatter of this shape takes.
    pub fn bytes(parts: usize, cap: usize, room: Room) -> u64 {
        let cap = room.round::<T>(cap);
        ((parts * cap + parts * Self::LINE) * std::mem::size_of::<T>()) as u64
    }

    /// Forgets every record, keeping the memory.
    pub fn clear(&mut self) {
        self.arrays.fill.iter_mut().for_each(|f| *f = 0);
        self.line_fill.iter_mut().for_each(|f| *f = 0);
        self.arrays.overflow.clear();
        self.arrays.overflowed.iter_mut().for_each(|c| *c = 0);
    }

    /// Appends `keys[i]` to partition `parts[i]`, in turn. One call per
    /// block lets the loop keep the arrays' addresses in registers, and one
    /// range check for the whole block spares a check per record. With
    /// AVX-512, full lines go out in its stores (see [`stream_line`]).
    #[inline(never)]
    pub fn push_block(&mut self, parts: &[u32], keys: &[T], simd: Simd) {
        assert_eq!(parts.len(), keys.len());
        let line = Self::LINE;
        let Scatter {
            arrays,
            lines,
            line_fill,
            ..
        } = self;
        let (lines, line_fill) = (&mut lines[..], &mut line_fill[..]);
        let worst = largest(parts, simd) as usize;
        assert!(worst < line_fill.len(), "partition {worst} out of range");
        assert_eq!(lines.len(), line_fill.len() * line);
        let mut next = 0;
        while next < parts.len() {
            #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
            let mut end = parts.len();
            #[cfg(target_arch = "x86_64")]
            if matches!(simd, Simd::Avx512 { .. }) && std::mem::size_of::<T>() == 4 {
                // SAFETY: Simd::Avx512 stands for AVX-512F; T is 4 bytes (a
                // plain integer), so its slices can be seen as u32 and the
                // scatter as a Scatter<u32>, whose arrays, fills and lines
                // the pusher takes for this block only (`&mut self`, sized
                // as LinePusher::new asks); every partition in `parts` is
                // below line_fill.len() (checked above).
                unsafe {
                    let keys = std::slice::from_raw_parts(keys.as_ptr().cast(), keys.len());
                    let mut pusher = LinePusher::new(
                        arrays.keys.as_mut_ptr().cast(),
                        arrays.cap,
                        arrays.fill.as_mut_ptr(),
                        lines.as_mut_ptr().cast(),
                        line_fill.as_mut_ptr(),
                        line_fill.len(),
                    );
                    next += avx512::push_fitting_lines(&mut pusher, &parts[next..], &keys[next..]);
                }
                // The record there, if any, fills a line its array has no
                // room for: the loop below takes it to the overflow.
                end = (next + 1).min(parts.len());
            }
            for (&p, &key) in parts[next..end].iter().zip(&keys[next..end]) {
                let p = p as usize;
                // SAFETY: p < line_fill.len() (checked above for the
                // block), lines has `line` entries per partition, and a
                // line's fill stays below `line` (it is reset when it
                // reaches it).
                unsafe {
                    let n = *line_fill.get_unchecked(p) as usize;
                    *lines.get_unchecked_mut(p * line + n) = key;
                    if n + 1 == line {
                        let full = lines.get_unchecked(p * line..(p + 1) * line);
                        arrays.flush_line(p, full, key, simd);
                        *line_fill.get_unchecked_mut(p) = 0;
                    } else {
                        *line_fill.get_unchecked_mut(p) = (n + 1) as u8;
                    }
                }
            }
            next = end;
        }
    }

    #[cfg(test)]
    pub fn push(&mut self, p: u64, key: T) {
        self.push_block(&[p as u32], &[key], Simd::Plain);
    }

    /// Records pushed so far to each partition (stored, in lines, or overflowed).
    pub fn pushed(&self) -> impl Iterator<Item = u32> + '_ {
        let a = &self.arrays;
        let lines = self.line_fill.iter();
        (a.fill.iter().zip(lines).zip(&a.overflowed))
            .map(|((&fill, &line), &over)| (fill + line as usize) as u32 + over)
    }

    #[cfg(test)]
    pub fn pushed_counts(&self) -> Vec<u32> {
        self.pushed().collect()
    }

    /// Partitions this scatter has.
    pub fn parts(&self) -> usize {
        self.arrays.fill.len()
    }

    /// Moves the partial lines out; call once after the last push.
    pub fn finish(&mut self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: sfence only orders stores; SSE2 is part of x86-64.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
        for p in 0..self.arrays.fill.len() {
            let n = self.line_fill[p] as usize;
            for i in 0..n {
                let key = self.lines[p * Self::LINE + i];
                self.arrays.store_one(p, key);
            }
            self.line_fill[p] = 0;
        }
    }

    /// Partition p's array as bytes, padded with whatever follows to whole
    /// pages, and the number of records in it. Call after `finish`.
    pub fn page_padded_bytes(&self, p: u64) -> (&[u8], usize) {
        assert_eq!(self.room, Room::Pages, "arrays padded to pages");
        let start = p as usize * self.arrays.cap;
        let fill = self.arrays.fill[p as usize];
        let padded = fill.div_ceil(Self::PAGE) * Self::PAGE;
        let elems = &self.arrays.keys[start..start + padded];
        // SAFETY: T is a plain integer type; any byte view of it is valid.
        let bytes = unsafe {
            std::slice::from_raw_parts(elems.as_ptr().cast::<u8>(), std::mem::size_of_val(elems))
        };
        (bytes, fill)
    }

    /// Partition p's records in the order pushed: the array, then the overflow.
    pub fn records(&self, p: u64) -> (&[T], impl Iterator<Item = T> + '_) {
        let a = &self.arrays;
        let start = p as usize * a.cap;
        let slice = &a.keys[start..start + a.fill[p as usize]];
        let extra = a
            .overflow
            .iter()
            .filter(move |(q, _)| *q == p)
            .map(|&(_, k)| k);
        (slice, extra)
    }
}

/// Scatters kept from one plot to the next. They are most of the memory a
/// plot touches, and touching fresh memory is not free: the kernel zeroes
/// it, and a VM whose host backs guest memory lazily stalls on every new
/// page (on such a VM, more than hashing a whole k = 28 plot). Plots made
/// one after another reuse the memory instead.
#[derive(Default)]
pub(crate) struct ScatterPool(Mutex<Vec<Scatter<u32>>>);

impl ScatterPool {
    /// An empty scatter of room `cap` in each of `parts` partitions: a kept
    /// one of that shape, or a new one.
    pub fn take(&self, parts: usize, cap: usize, room: Room) -> Result<Scatter<u32>, PlotError> {
        let kept = {
            let mut kept = self.0.lock().unwrap();
            let found = kept.iter().position(|s| s.has_shape(parts, cap, room));
            found.map(|i| kept.swap_remove(i))
        };
        match kept {
            Some(mut scatter) => {
                scatter.clear();
                Ok(scatter)
            }
            None => Scatter::new(parts, cap, room),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap().is_empty()
    }

    pub fn give(&self, scatter: Scatter<u32>) {
        self.0.lock().unwrap().push(scatter);
    }

    /// Frees every kept scatter but those a plot is about to take, one
    /// `(parts, cap, room)` shape for each scatter: a plot's memory limit
    /// counts only its own buffers.
    pub fn keep_only(&self, shapes: &[(usize, usize, Room)]) {
        let mut wanted = shapes.to_vec();
        let mut kept = self.0.lock().unwrap();
        kept.retain(|s| {
            let found = wanted
                .iter()
                .position(|&(parts, cap, room)| s.has_shape(parts, cap, room));
            found.map(|i| wanted.swap_remove(i)).is_some()
        });
    }

    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Brings the pages of the fresh ones among `scatters` into use, on
/// `threads` threads, as a phase of its own so that its time is known;
/// returns the bytes brought into use.
pub(crate) fn bring_into_use(
    mut scatters: Vec<&mut Scatter<u32>>,
    threads: usize,
    progress: &dyn Progress,
) -> u64 {
    scatters.retain(|s| s.is_fresh());
    if scatters.is_empty() {
        return 0;
    }
    progress.phase(Phase::FirstTouch, 0);
    let bytes = scatters
        .iter()
        .map(|s| std::mem::size_of_val(&s.arrays.keys[..]) as u64)
        .sum();
    // Taken in turn, largest first: the in-memory plot's scatters shrink
    // with its hashing ranges, and split into runs the first thread would
    // get most of the memory.
    scatters.sort_by_key(|s| std::cmp::Reverse(s.arrays.keys.len()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let scatters: Vec<_> = scatters.into_iter().map(Mutex::new).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(scatters.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match scatters.get(i) {
                    Some(scatter) => scatter.lock().unwrap().prefault(),
                    None => return,
                }
            });
        }
    });
    bytes
}

impl<T: Copy> Arrays<T> {
    /// Moves partition p's full line, whose last record is `last`, to its
    /// array, or record by record to the overflow once the array is full.
    #[inline(never)]
    fn flush_line(&mut self, p: usize, line: &[T], last: T, simd: Simd) {
        let (f, cap) = (self.fill[p], self.cap);
        if f + line.len() <= cap {
            let dst = &mut self.keys[p * cap + f..p * cap + f + line.len()];
            stream_line(dst, line, last, simd);
            self.fill[p] = f + line.len();
        } else {
            for &key in line {
                self.store_one(p, key);
            }
        }
    }

    fn store_one(&mut self, p: usize, key: T) {
        let f = self.fill[p];
        if f < self.cap {
            self.keys[p * self.cap + f] = key;
            self.fill[p] = f + 1;
        } else {
            self.overflow.push((p as u64, key));
            self.overflowed[p] += 1;
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Scatter<u32> {
    pub(crate) fn line_pusher(&mut self) -> LinePusher<'_> {
        let Scatter {
            arrays,
            lines,
            line_fill,
            ..
        } = self;
        assert_eq!(lines.len(), line_fill.len() * Self::LINE);
        assert_eq!(arrays.fill.len(), line_fill.len());
        // SAFETY: the pusher borrows the scatter mutably for its life; the
        // arrays hold `parts * cap` records (Scatter::new), and `fill`,
        // `line_fill` and the lines one entry and one line a partition
        // (asserted above).
        unsafe {
            LinePusher::new(
                arrays.keys.as_mut_ptr(),
                arrays.cap,
                arrays.fill.as_mut_ptr(),
                lines.as_mut_ptr(),
                line_fill.as_mut_ptr(),
                line_fill.len(),
            )
        }
    }
}

/// The largest of `parts` (0 for none). In SSE2, which has no unsigned
/// 32-bit max, the compiler's loop took 15% of the scatter's time; with
/// AVX-512 it is one max per 16 values.
fn largest(parts: &[u32], simd: Simd) -> u32 {
    match simd {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Simd::Avx512 stands for AVX-512F.
        Simd::Avx512 { .. } => unsafe { avx512::largest(parts) },
        Simd::Plain => parts.iter().copied().max().unwrap_or(0),
    }
}

/// Copies one line with non-temporal stores: the line goes straight
/// to memory without first being read into the cache (a plain store would
/// read every line of the arrays from memory before overwriting it).
///
/// `last` is the line's last record, stored just now: reading it back
/// from `src` would wait for that store to reach the cache, since a load
/// spanning several earlier stores cannot be forwarded from them. With
/// AVX-512 and 4-byte records it comes from a register instead.
#[inline(always)]
fn stream_line<T: Copy>(dst: &mut [T], src: &[T], last: T, simd: Simd) {
    debug_assert_eq!(std::mem::size_of_val(dst), LINE_BYTES);
    match simd {
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 { .. }
            if std::mem::size_of::<T>() == 4
                && (dst.as_ptr() as usize).is_multiple_of(LINE_BYTES) =>
        {
            // SAFETY: T is 4 bytes, so reading it as a u32 is reading its
            // bytes; Simd::Avx512 stands for AVX-512F; dst is a
            // line-aligned slice of a line and src has a line's records.
            unsafe {
                let last: u32 = std::mem::transmute_copy(&last);
                avx512::stream_line(dst.as_mut_ptr().cast(), src.as_ptr().cast(), last);
            }
            return;
        }
        _ => {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let d = dst.as_mut_ptr() as *mut __m128i;
        let s = src.as_ptr() as *const __m128i;
        if (d as usize).is_multiple_of(LINE_BYTES) && src.len() == dst.len() {
            // SAFETY: both are slices of a line; d is line-aligned, more
            // than _mm_stream_si128 needs (16); SSE2 is part of x86-64.
            unsafe {
                for i in 0..LINE_BYTES / 16 {
                    _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i)));
                }
            }
            return;
        }
    }
    // Plain stores, the last record from the register as above.
    let n = dst.len();
    dst[..n - 1].copy_from_slice(&src[..n - 1]);
    dst[n - 1] = last;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_in_order_even_past_capacity() {
        let parts = 5;
        let mut s = Scatter::<u64>::new(parts, 10, Room::Lines).unwrap();
        let mut want = vec![Vec::new(); parts];
        for i in 0..400u64 {
            let p = (i * 7 + i / 3) % parts as u64;
            // Partition 0 gets far more than its room.
            let p = if i % 2 == 0 { 0 } else { p };
            s.push(p, i);
            want[p as usize].push(i);
        }
        s.finish();
        for (p, want) in want.iter().enumerate() {
            let (slice, extra) = s.records(p as u64);
            let got: Vec<u64> = slice.iter().copied().chain(extra).collect();
            assert_eq!(&got, want, "partition {p}");
        }
        s.clear();
        assert!(s.records(0).0.is_empty());
    }

    /// Full lines streamed from a register (AVX-512) or from the line give
    /// the same arrays, in order, also once a partition overflows.
    #[test]
    fn both_ways_of_streaming_lines_keep_every_record() {
        let parts = 7;
        let keys: Vec<u32> = (0..20_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        // Partition 3 takes every other record, far beyond its room.
        let to: Vec<u32> = (0..keys.len() as u32)
            .map(|i| if i % 2 == 0 { 3 } else { i % 7 })
            .collect();
        let mut want = vec![Vec::new(); parts];
        for (&p, &key) in to.iter().zip(&keys) {
            want[p as usize].push(key);
        }
        for simd in Simd::all_here() {
            for room in [Room::Pages, Room::Lines] {
                let mut s = Scatter::<u32>::new(parts, 3000, room).unwrap();
                for (p, k) in to.chunks(999).zip(keys.chunks(999)) {
                    s.push_block(p, k, simd);
                }
                s.finish();
                for (p, want) in want.iter().enumerate() {
                    let (slice, extra) = s.records(p as u64);
                    let got: Vec<u32> = slice.iter().copied().chain(extra).collect();
                    assert_eq!(&got, want, "partition {p}, {simd:?}, {room:?}");
                }
            }
        }
    }

    #[test]
    fn the_largest_partition_is_found_either_way() {
        for len in [0usize, 1, 15, 16, 17, 100, 4096] {
            for at in [0, len / 2, len.saturating_sub(1)] {
                let mut parts: Vec<u32> =
                    (0..len as u32).map(|i| i.wrapping_mul(7) % 500).collect();
                if len > 0 {
                    parts[at] = 0x8000_0001;
                }
                let want = parts.iter().copied().max().unwrap_or(0);
                for simd in Simd::all_here() {
                    assert_eq!(largest(&parts, simd), want, "len {len}, {simd:?}");
                }
            }
        }
    }

    #[test]
    fn the_pool_gives_back_only_empty_scatters_of_the_shape_asked_for() {
        let pool = ScatterPool::default();
        let mut s = pool.take(4, 100, Room::Pages).unwrap();
        s.push(2, 9);
        s.finish();
        pool.give(s);
        let s = pool.take(4, 100, Room::Pages).unwrap();
        assert_eq!(s.pushed_counts(), [0; 4]);
        pool.give(s);
        // Another shape is a new scatter; keep_only frees the old one.
        let other = pool.take(4, 5000, Room::Pages).unwrap();
        assert!(other.has_shape(4, 5000, Room::Pages));
        assert_eq!(pool.kept(), 1);
        pool.keep_only(&[(4, 5000, Room::Pages); 9]);
        assert_eq!(pool.kept(), 0);
        (0..3).for_each(|_| pool.give(Scatter::new(4, 100, Room::Pages).unwrap()));
        pool.give(Scatter::new(4, 3000, Room::Pages).unwrap());
        pool.keep_only(&[(4, 100, Room::Pages); 2]);
        assert_eq!(pool.kept(), 2);
        // Several shapes at once: as many of each as asked for.
        (0..2).for_each(|_| pool.give(Scatter::new(4, 3000, Room::Pages).unwrap()));
        let shapes = [
            (4, 3000, Room::Pages),
            (4, 100, Room::Pages),
            (4, 9000, Room::Pages),
        ];
        pool.keep_only(&shapes);
        assert_eq!(pool.kept(), 2);
        for (i, &(parts, cap, room)) in shapes[..2].iter().enumerate() {
            assert!(pool
                .take(parts, cap, room)
                .unwrap()
                .has_shape(parts, cap, room));
            assert_eq!(pool.kept(), 1 - i, "each kept scatter of a shape asked for");
        }
        pool.give(Scatter::new(4, 100, Room::Pages).unwrap());
        // Room rounded to lines is another shape, and takes less memory.
        let lines = pool.take(4, 100, Room::Lines).unwrap();
        assert!(lines.has_shape(4, 100, Room::Lines) && !lines.has_shape(4, 100, Room::Pages));
        assert_eq!(pool.kept(), 1);
        let bytes = |room| Scatter::<u32>::bytes(4, 100, room);
        assert_eq!(
            (bytes(Room::Lines), bytes(Room::Pages)),
            (4 * 512 + 512, 4 * 4096 + 512)
        );
    }
}
