//! Closing big temp files off the plot's critical path.
//!
//! Unlinking a temp file of many GiB is quick; its last close is not: that
//! is when the file system frees its blocks, and one mounted with `discard`
//! waits for the disk to trim them: seconds for a k = 32 temp file. The
//! plot does not depend on it, so the close runs on a thread of its
//! own and a [`Plotter`](super::Plotter)'s next plot overlaps it.

use std::fs::File;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Files being closed in the background; dropping it waits for them.
#[derive(Default)]
pub(crate) struct Closer {
    pending: Mutex<Vec<JoinHandle<()>>>,
}

impl Closer {
    /// Closes `file` on a thread of its own (here, when no thread can be
    /// started). Unlink the file first: a file killed mid-close is still
    /// freed by the kernel, but a name left behind would not be.
    pub fn close_later(&self, file: File) {
        let spawned = std::thread::Builder::new()
            .name("temp-close".into())
            .spawn(move || drop(file));
        if let Ok(handle) = spawned {
            self.pending.lock().unwrap().push(handle);
        }
    }

    /// Whether a close is still under way.
    pub fn busy(&self) -> bool {
        self.pending
            .lock()
            .unwrap()
            .iter()
            .any(|h| !h.is_finished())
    }

    /// Waits until every file handed over is closed.
    pub fn wait(&self) {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap());
        for handle in pending {
            // A close cannot panic; if the thread did, the file is closed.
            let _ = handle.join();
        }
    }
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// The write end of a pipe, handed over: once `wait` returns, the read
    /// end sees the end of the stream instead of "nothing yet".
    #[test]
    fn files_handed_over_are_closed_by_the_time_wait_returns() {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into an array of two.
        assert_eq!(
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) },
            0
        );
        // SAFETY: both descriptors are open and owned by nothing else.
        let (mut read_end, write_end) =
            unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let mut byte = [0u8; 1];
        let open = read_end.read(&mut byte).unwrap_err();
        assert_eq!(open.kind(), std::io::ErrorKind::WouldBlock);
        let closer = Closer::default();
        closer.close_later(write_end);
        closer.wait();
        assert!(!closer.busy());
        assert_eq!(read_end.read(&mut byte).unwrap(), 0);
    }
}
