//! Page-aligned, zeroed byte buffers, as O_DIRECT needs, and opening files
//! for O_DIRECT reads where the file system allows it.
//!
//! Large buffers come from the system's pool of 2 MiB huge pages
//! (`vm.nr_hugepages`) when it has room for them: see [`pool_allowed`].

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

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
    /// Where the memory came from: the allocator, or a mapping of its own
    /// (`len` bytes of it).
    backing: Backing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backing {
    Allocator,
    Mapping,
    Pool,
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
    /// long segments for the block layer rather than one a 4 KiB page (a
    /// virtio disk wrote such buffers nearly twice as fast, for a sixth of
    /// the system time). Where huge pages
    /// are not to be had, the mapping is plain pages and nothing is lost.
    /// Such a buffer comes from the huge page pool first, where the pool
    /// has room for it.
    pub fn zeroed(len: usize) -> AlignedBuf {
        let len = len.div_ceil(ALIGN).max(1) * ALIGN;
        if let Some((ptr, bytes)) = map_from_pool(len) {
            return AlignedBuf {
                ptr,
                len: bytes,
                backing: Backing::Pool,
            };
        }
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
            backing: Backing::Allocator,
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
                backing: Backing::Mapping,
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
        match self.backing {
            Backing::Pool => return unmap_from_pool(self.ptr, self.len),
            // SAFETY: unmapping exactly what `in_huge_pages` kept.
            Backing::Mapping => return unsafe { unmap(self.ptr, self.len) },
            Backing::Allocator => {}
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

/// Opens a regular file for reading, with O_DIRECT if asked and the file
/// system allows it; says whether O_DIRECT is in effect. Anything else is
/// refused without waiting: opening a FIFO would block until a writer
/// came, and a device or directory is no plot.
pub fn open_read(path: &std::path::Path, direct: bool) -> std::io::Result<(std::fs::File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let open = |flags: libc::c_int| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags | libc::O_NONBLOCK)
            .open(path)
    };
    let (file, direct) = match direct {
        true => match open(libc::O_DIRECT) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(0)?, false),
            Err(e) => return Err(e),
        },
        false => (open(0)?, false),
    };
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", file_kind(&kind)),
        ));
    }
    // Regular files ignore O_NONBLOCK on local file systems; cleared so that
    // none other reads differently.
    use std::os::unix::io::AsRawFd;
    // SAFETY: fcntl on a valid descriptor with integer arguments.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok((file, direct))
}

/// What a file that is not a regular file is, in a user's words.
pub fn file_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_symlink() {
        "symbolic link"
    } else {
        "regular file"
    }
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

/// Unmaps `bytes` at `ptr`.
///
/// # Safety
/// `ptr` and `bytes` must be exactly a mapping this module made and no
/// longer uses.
unsafe fn unmap(ptr: NonNull<u8>, bytes: usize) {
    // SAFETY: the caller's promise.
    unsafe { libc::munmap(ptr.as_ptr().cast(), bytes) };
}

static POOL_IN_USE: AtomicUsize = AtomicUsize::new(0);
static POOL_PEAK: AtomicUsize = AtomicUsize::new(0);

/// The environment variable that keeps buffers out of the huge page pool
/// when it is `never`; `try`, the default, uses the pool where it has room.
pub const POOL_ENV: &str = "SPACEVAULT_HUGE_PAGE_POOL";

/// Whether [`POOL_ENV`] lets buffers come from the pool: unset, empty or
/// `try` does, `never` does not; any other value is given back as the
/// error, for a program to refuse (the library itself then uses the pool).
pub fn pool_setting() -> Result<bool, String> {
    match std::env::var(POOL_ENV) {
        Err(_) => Ok(true),
        Ok(v) => match v.as_str() {
            "" | "try" => Ok(true),
            "never" => Ok(false),
            _ => Err(v),
        },
    }
}

/// Whether large buffers may come from the system's pool of 2 MiB huge
/// pages (`vm.nr_hugepages`, set by an administrator).
///
/// The pool holds pages that only the process mapping them uses and that
/// the kernel never hands back to the rest of the system. That is why the
/// plotter prefers it. On a VM whose host backs guest memory only when the
/// guest first writes it, and takes freed memory back (free page
/// reporting), every fresh page of the plotter's sort buffers costs the
/// host's work again, which can take longer than hashing a k = 28 plot. A
/// pool page the host has backed once stays backed after the process that
/// used it exits, so later processes pay only its zeroing (a pool's first
/// use costs what fresh memory costs). On bare metal the pool saves the
/// faults of 4 KiB pages.
///
/// A buffer is taken from the pool when the pool has room for all of it
/// (the kernel reserves a private mapping's pages when it is made, so a
/// buffer never meets an empty pool later), and otherwise from ordinary
/// memory as before. [`POOL_ENV`]`=never` leaves the pool alone, for a
/// pool that is meant for another program.
pub fn pool_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| pool_setting().unwrap_or(true))
}

/// A count the kernel keeps of the pool of 2 MiB pages, such as
/// `nr_hugepages` (its size) or `free_hugepages`; `None` where unknown.
fn pool_count(file: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/kernel/mm/hugepages/hugepages-2048kB/{file}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The size of the system's pool of 2 MiB huge pages, reserved for this
/// process and others alike; `None` where unknown.
pub fn pool_bytes() -> Option<u64> {
    pool_count("nr_hugepages").map(|pages| pages * HUGE_PAGE as u64)
}

/// Bytes of the huge page pool this process holds now.
pub fn pool_in_use() -> usize {
    POOL_IN_USE.load(Ordering::Relaxed)
}

/// The most bytes of the huge page pool this process has held at once since
/// the last [`reset_pool_peak`]. Pool pages are not counted in a process's
/// resident memory (VmRSS, VmHWM): add this to it.
pub fn pool_peak() -> usize {
    POOL_PEAK.load(Ordering::Relaxed)
}

/// Starts [`pool_peak`] again from what is held now.
pub fn reset_pool_peak() {
    POOL_PEAK.store(pool_in_use(), Ordering::Relaxed);
}

/// A private mapping from the huge page pool for a buffer of `bytes`, and
/// its length: `bytes` rounded up to whole 2 MiB pages. `None` for a
/// buffer smaller than [`HUGE_FROM`], or where the pool lacks room or is
/// not to be used.
fn map_from_pool(bytes: usize) -> Option<(NonNull<u8>, usize)> {
    if bytes < HUGE_FROM || !pool_allowed() {
        return None;
    }
    let bytes = bytes.checked_next_multiple_of(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping; checked for failure below. The
    // kernel reserves its pages now, or refuses.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | libc::MAP_HUGE_2MB,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    let ptr = NonNull::new(ptr.cast()).expect("mmap never returns null");
    let held = POOL_IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    POOL_PEAK.fetch_max(held, Ordering::Relaxed);
    Some((ptr, bytes))
}

/// Gives a mapping made by [`map_from_pool`] back.
fn unmap_from_pool(ptr: NonNull<u8>, bytes: usize) {
    // SAFETY: the owner's whole mapping, dropped.
    unsafe { unmap(ptr, bytes) };
    POOL_IN_USE.fetch_sub(bytes, Ordering::Relaxed);
}

/// How a [`MappedBuf`] asks the kernel to back it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// The system's base pages (4 KiB). For arrays written front to back,
    /// where the TLB reach of huge pages buys little. On a VM whose host
    /// takes freed guest memory back in 2 MiB blocks (free page reporting)
    /// base pages also come into use far faster: the guest hands out
    /// recently freed 4 KiB pages that the host still backs, where a huge
    /// page is almost always a reported block the host must find again.
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
    pooled: bool,
}

// SAFETY: owns its memory exclusively, like a Vec<T>.
unsafe impl<T: Copy + Send> Send for MappedBuf<T> {}
// SAFETY: shared access only hands out shared slices.
unsafe impl<T: Copy + Sync> Sync for MappedBuf<T> {}

impl<T: Copy> MappedBuf<T> {
    /// `len` zeroed elements; T must be an integer type (all-zero is valid).
    /// From 1 MiB on, the elements come from the huge page pool where it
    /// has room for them, whatever `pages` says.
    pub fn zeroed(len: usize, pages: Pages) -> std::io::Result<MappedBuf<T>> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        if let Some((ptr, whole)) = map_from_pool(bytes) {
            return Ok(MappedBuf {
                ptr: ptr.cast(),
                len,
                bytes: whole,
                pooled: true,
            });
        }
        let ptr = map_anonymous(bytes)?;
        if pages == Pages::Huge {
            // SAFETY: advice on our own mapping; failure only loses speed.
            unsafe { libc::madvise(ptr, bytes, libc::MADV_HUGEPAGE) };
        }
        Ok(MappedBuf {
            ptr: NonNull::new(ptr.cast()).expect("mmap never returns null"),
            len,
            bytes,
            pooled: false,
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
        let ptr = self.ptr.cast();
        match self.pooled {
            true => unmap_from_pool(ptr, self.bytes),
            // SAFETY: unmapping exactly what zeroed() mapped.
            false => unsafe { unmap(ptr, self.bytes) },
        }
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

    /// The page size the kernel backs the mapping holding `addr` with, from
    /// /proc/self/smaps, in KiB.
    fn kernel_page_kib(addr: usize) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if let Some(size) = line.strip_prefix("KernelPageSize:").filter(|_| inside) {
                return size.split_whitespace().next()?.parse().ok();
            }
        }
        None
    }

    /// A count from the system's pool of 2 MiB pages (0 where unknown).
    fn pool_pages(file: &str) -> usize {
        pool_count(file).unwrap_or(0) as usize
    }

    /// Whether a plain mmap of one 2 MiB page from the pool succeeds here,
    /// asked apart from the code under test: an emulator (qemu-user) or a
    /// container may refuse it while the host's pool has room.
    fn kernel_grants_a_huge_page() -> bool {
        // SAFETY: a fresh anonymous mapping, unmapped at once if granted.
        unsafe {
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                HUGE_PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | libc::MAP_HUGE_2MB,
                -1,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return false;
            }
            libc::munmap(ptr, HUGE_PAGE);
            true
        }
    }

    #[test]
    fn large_buffers_come_from_the_pool_when_it_has_room_and_from_ordinary_memory_when_not() {
        // Other tests take and give back pool pages meanwhile, so where a
        // buffer comes from is predicted only when the answer is clear:
        // no pool, or a pool with far more room than the buffer needs.
        let free = pool_pages("free_hugepages");
        let granted = free > 0 && kernel_grants_a_huge_page();
        let expect_pool = match (pool_allowed(), free) {
            _ if !granted => Some(false),
            (false, _) | (_, 0) => Some(false),
            (true, 128..) => Some(true),
            _ => None,
        };
        let len = 3 * HUGE_PAGE + 1;
        let mut buf = AlignedBuf::zeroed(len);
        let pooled = buf.backing == Backing::Pool;
        assert!(expect_pool.is_none_or(|e| e == pooled), "{free} free pages");
        assert_eq!(buf.len(), 4 * HUGE_PAGE);
        assert_eq!(buf.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(buf.iter().all(|&b| b == 0));
        buf.fill(0x5A);
        // The kernel agrees on where the memory is.
        let kib = kernel_page_kib(buf.as_ptr() as usize).expect("the buffer is in smaps");
        assert_eq!(kib == 2048, pooled, "kernel page size {kib} KiB");
        assert!(!pooled || pool_peak() >= buf.len());

        let mut keys = MappedBuf::<u32>::zeroed((HUGE_PAGE + 8) / 4, Pages::Base).unwrap();
        assert!(expect_pool.is_none_or(|e| e == keys.pooled));
        assert!(keys.iter().all(|&k| k == 0));
        keys.fill(7);
        let kib = kernel_page_kib(keys.as_ptr() as usize).unwrap();
        assert_eq!(kib == 2048, keys.pooled, "kernel page size {kib} KiB");

        // A buffer larger than the whole pool is ordinary memory.
        let pool = pool_pages("nr_hugepages") + pool_pages("nr_overcommit_hugepages");
        let big = MappedBuf::<u8>::zeroed((pool + 1) * HUGE_PAGE, Pages::Base).unwrap();
        assert!(!big.pooled);
        // Small ones never take a huge page.
        assert_eq!(
            AlignedBuf::zeroed(HUGE_FROM - ALIGN).backing,
            Backing::Allocator
        );
    }
}
