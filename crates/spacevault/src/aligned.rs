//! Page-aligned, zeroed byte buffers, as O_DIRECT needs, and opening files
//! for O_DIRECT reads where the file system allows it.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

pub const ALIGN: usize = 4096;

/// The size of a transparent huge page on x86-64 and on arm64 with 4 KiB
/// base pages.
const HUGE_PAGE: usize = 2 << 20;

/// Buffers of this size or more are mapped in whole huge pages (see
/// [`AlignedBuf::zeroed`]).
const HUGE_FROM: usize = 1 << 20;

pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// Whether the buffer is a mapping of its own (`len` bytes of it)
    /// rather than memory from the allocator.
    mapped: bool,
}

// SAFETY: the buffer owns its memory exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out shared slices.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of at least `len` bytes: rounded up to whole pages,
    /// and from 1 MiB on to whole 2 MiB huge pages.
    ///
    /// A buffer of 1 MiB or more gets its own mapping, aligned to and
    /// rounded up to whole 2 MiB huge pages, which the kernel is asked to
    /// back with transparent huge pages; its length is the whole mapping,
    /// so that a buffer kept for reuse serves any request up to it (with
    /// lengths to the page, buffers a page too short were mapped and
    /// faulted in afresh over and over: a ninth of an external plot's CPU
    /// time went to zeroing new huge pages). Such buffers are for O_DIRECT
    /// I/O, and a buffer that is contiguous in physical memory is a few
    /// long segments for the block layer rather than one a 4 KiB page:
    /// on the development VM (a virtio disk) 8 MiB writes from huge pages
    /// ran at 3.3 to 4.2 GB/s against 1.9 to 2.2 from base pages, reads at
    /// 2.8 against 1.1, with a sixth of the system time. Where huge pages
    /// are not to be had, the mapping is plain pages and nothing is lost.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let len = len.div_ceil(ALIGN).max(1) * ALIGN;
        if len >= HUGE_FROM {
            if let Some(buf) = AlignedBuf::in_huge_pages(len) {
                return buf;
            }
        }
        let layout = Layout::from_size_align(len, ALIGN).expect("buffer size fits in memory");
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf {
            ptr,
            len,
            mapped: false,
        }
    }

    /// An anonymous mapping of whole, aligned huge pages, at least `len`
    /// bytes; `None` when the mapping fails.
    fn in_huge_pages(len: usize) -> Option<AlignedBuf> {
        let bytes = len.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        // One huge page more than needed, so that an aligned start lies
        // inside; the unaligned head and the rest of the tail go back.
        let over = bytes.checked_add(HUGE_PAGE)?;
        let raw = map_anonymous(over).ok()?;
        let head = (raw as usize).next_multiple_of(HUGE_PAGE) - raw as usize;
        // SAFETY: both ranges lie inside the mapping just made and outside
        // the part kept; `raw + head` is aligned, so the kept part is whole
        // huge pages.
        unsafe {
            let start = raw.cast::<u8>().add(head);
            if head > 0 {
                libc::munmap(raw, head);
            }
            if over - head - bytes > 0 {
                libc::munmap(start.add(bytes).cast(), over - head - bytes);
            }
            // Advice only: failing leaves base pages.
            libc::madvise(start.cast(), bytes, libc::MADV_HUGEPAGE);
            Some(AlignedBuf {
                ptr: NonNull::new(start).expect("mmap never returns null"),
                len: bytes,
                mapped: true,
            })
        }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr points to len initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: unmapping exactly what `in_huge_pages` kept.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
            return;
        }
        // SAFETY: allocated in `zeroed` with this very layout.
        unsafe {
            dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.len, ALIGN),
            )
        }
    }
}

/// Opens a file for reading, with O_DIRECT if asked and the file system
/// allows it; says whether O_DIRECT is in effect.
pub fn open_read(path: &std::path::Path, direct: bool) -> std::io::Result<(std::fs::File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    if direct {
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(f) => return Ok((f, true)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((std::fs::File::open(path)?, false))
}

/// A new private anonymous mapping of `bytes` (zeroed, readable and
/// writable), to be unmapped by its owner.
fn map_anonymous(bytes: usize) -> std::io::Result<*mut libc::c_void> {
    // SAFETY: an anonymous private mapping; checked for failure below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ptr)
}

/// How a [`MappedBuf`] asks the kernel to back it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// The system's base pages (4 KiB). For arrays written front to back,
    /// where the TLB reach of huge pages buys little. On the development VM
    /// (a host that takes freed guest memory back, free page reporting of
    /// 2 MiB blocks) base pages also come into use far faster: the guest
    /// hands out recently freed 4 KiB pages that the host still backs, about
    /// its first GiB at 3.5 to 4.7 GB/s, where a huge page is almost always
    /// a reported block the host must find again (0.7 to 0.8 GB/s). Mapping
    /// the plotter's scatter arrays this way took a fresh k = 28 plot from
    /// 3.5 to 2.1-2.5 s and k = 30 with 1 GiB from 12.6-13.6 to 11.3-11.6 s.
    Base,
    /// Transparent huge pages where the system allows: for arrays read or
    /// written at random, whose 4 KiB pages would each miss the TLB.
    Huge,
}

/// A large zeroed array of plain integers in its own anonymous mapping,
/// given back to the system when dropped.
pub struct MappedBuf<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    bytes: usize,
}

// SAFETY: owns its memory exclusively, like a Vec<T>.
unsafe impl<T: Copy + Send> Send for MappedBuf<T> {}
// SAFETY: shared access only hands out shared slices.
unsafe impl<T: Copy + Sync> Sync for MappedBuf<T> {}

impl<T: Copy> MappedBuf<T> {
    /// `len` zeroed elements; T must be an integer type (all-zero is valid).
    pub fn zeroed(len: usize, pages: Pages) -> std::io::Result<MappedBuf<T>> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        let ptr = map_anonymous(bytes)?;
        if pages == Pages::Huge {
            // SAFETY: advice on our own mapping; failure only loses speed.
            unsafe { libc::madvise(ptr, bytes, libc::MADV_HUGEPAGE) };
        }
        Ok(MappedBuf {
            ptr: NonNull::new(ptr.cast()).expect("mmap never returns null"),
            len,
            bytes,
        })
    }
}

impl<T: Copy> Deref for MappedBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the mapping holds len zero-initialised elements.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for MappedBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, exclusive through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for MappedBuf<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what zeroed() mapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_and_whole_pages_small_or_large() {
        for len in [
            1,
            4096,
            4097,
            HUGE_FROM - ALIGN,
            HUGE_FROM - 1,
            5 * HUGE_PAGE + 1,
        ] {
            let mut buf = AlignedBuf::zeroed(len);
            let pages = len.div_ceil(ALIGN) * ALIGN;
            let align = if pages >= HUGE_FROM { HUGE_PAGE } else { ALIGN };
            assert_eq!(buf.len(), len.div_ceil(align) * align, "len {len}");
            assert_eq!(buf.as_ptr() as usize % align, 0, "len {len}");
            assert!(buf.iter().all(|&b| b == 0), "len {len}");
            // Every byte is ours to write.
            buf.fill(0xA5);
            let last = buf.len() - 1;
            assert_eq!(buf[0] & buf[last], 0xA5);
        }
    }
}
