//! Allocator settings for the plotting commands.
//!
//! The plotters through disk allocate and free buffers of a few MiB for
//! every spill file they sort. glibc's malloc serves those from fresh
//! mappings and gives them back at once, so each one costs page faults
//! and the kernel clearing its pages again: page faults were a sixth of
//! a k = 22 hard plot's samples, and system time a third of its CPU time. Keeping freed memory for reuse (buffers up
//! to 32 MiB from the heap, and the heap's top trimmed only past 256 MiB)
//! took that plot from 6.0 s to 5.1 s on two cores. Only plotting asks for
//! it: a long-running vault keeps glibc's defaults, and so does anyone who
//! set the `MALLOC_*` variables themselves.

/// Asks glibc's malloc to keep freed memory for reuse, unless the
/// environment already says how.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set_by_user = ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        if !set_by_user {
            // SAFETY: mallopt takes two integers and changes only the
            // allocator's thresholds; no memory is handed over.
            unsafe {
                // 32 MiB is the largest threshold glibc accepts on 64 bits.
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
            }
        }
    }
}
