//! Writes that run behind the thread that hands them out.
//!
//! The plot's writer thread settles partitions and copies them into 4 MiB
//! staging buffers; a write of a few MiB takes milliseconds, in which the
//! workers finish more partitions than the channel to the writer holds.
//! Made in line, each write stopped the writer and then the workers, and
//! the cores sat a third idle once writes grew from a partition to 8 MiB.
//! On a thread of their own, the next buffer fills while the last is
//! written.

use crate::aligned::AlignedBuf;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A write handed out: `buf[..len]` goes to `offset`; `tag` says whose
/// buffer it is, for when it comes back.
struct Job<T> {
    buf: AlignedBuf,
    len: usize,
    offset: u64,
    tag: T,
}

/// A write carried out, with its buffer back.
pub(crate) struct Done<T> {
    pub buf: AlignedBuf,
    pub tag: T,
    pub result: io::Result<()>,
    /// Time in the write call.
    pub seconds: Duration,
}

/// One thread that writes to one file, in the order the writes are handed
/// out.
pub(crate) struct WriterBehind<T: Send + 'static> {
    jobs: Option<Sender<Job<T>>>,
    done: Receiver<Done<T>>,
    in_flight: usize,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> WriterBehind<T> {
    /// A writer to (a duplicate of the descriptor of) `file`.
    pub fn new(file: &File) -> io::Result<Self> {
        let file = file.try_clone()?;
        let (jobs, job_rx) = channel::<Job<T>>();
        let (done_tx, done) = channel();
        let thread = std::thread::Builder::new()
            .name("plot-writer".into())
            .spawn(move || {
                for job in job_rx {
                    let started = Instant::now();
                    let result = file.write_all_at(&job.buf[..job.len], job.offset);
                    let done = Done {
                        seconds: started.elapsed(),
                        buf: job.buf,
                        tag: job.tag,
                        result,
                    };
                    if done_tx.send(done).is_err() {
                        return;
                    }
                }
            })?;
        Ok(WriterBehind {
            jobs: Some(jobs),
            done,
            in_flight: 0,
            thread: Some(thread),
        })
    }

    /// Writes handed out and not yet taken back.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Hands out a write of `buf[..len]` at `offset`.
    pub fn submit(&mut self, buf: AlignedBuf, len: usize, offset: u64, tag: T) {
        assert!(len <= buf.len(), "a write lies within its buffer");
        let job = Job {
            buf,
            len,
            offset,
            tag,
        };
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        assert!(
            matches!(sent, Some(Ok(()))),
            "the writer thread runs until the writer is dropped"
        );
        self.in_flight += 1;
    }

    /// The next write carried out, waiting for it; `None` when none is in
    /// flight.
    pub fn wait(&mut self) -> Option<Done<T>> {
        if self.in_flight == 0 {
            return None;
        }
        let done = self
            .done
            .recv()
            .expect("the writer thread answers every job");
        self.in_flight -= 1;
        Some(done)
    }

    /// A write already carried out, without waiting.
    pub fn try_done(&mut self) -> Option<Done<T>> {
        let done = self.done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(done)
    }
}

impl<T: Send + 'static> Drop for WriterBehind<T> {
    /// Waits for the writes handed out: none outlives the writer.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_land_in_order_and_buffers_come_back_with_their_tags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        let mut writer = WriterBehind::new(&file).unwrap();
        let mut back = Vec::new();
        for i in 0..5u8 {
            let mut buf = AlignedBuf::zeroed(4096);
            buf.fill(b'a' + i);
            // Only the first `len` bytes go out; a later write overlaps an
            // earlier one and wins, since writes keep their order.
            writer.submit(buf, 3000, u64::from(i) * 2000, i);
            if let Some(done) = writer.try_done() {
                back.push(done);
            }
        }
        while let Some(done) = writer.wait() {
            back.push(done);
        }
        assert_eq!(writer.in_flight(), 0);
        let tags: Vec<u8> = back.iter().map(|d| d.tag).collect();
        assert_eq!(tags, [0, 1, 2, 3, 4]);
        assert!(back.iter().all(|d| d.result.is_ok() && d.buf.len() == 4096));
        drop(writer);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4 * 2000 + 3000);
        // Each 2000 bytes are the write that starts there, and the last
        // 1000 the rest of the last write.
        for (i, chunk) in bytes.chunks(2000).enumerate() {
            let want = b'a' + i.min(4) as u8;
            assert!(chunk.iter().all(|&b| b == want), "chunk {i}");
        }
    }

    #[test]
    fn a_failed_write_comes_back_as_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        // Opened for reading only: every write fails.
        let file = File::open(&path).unwrap();
        let mut writer = WriterBehind::new(&file).unwrap();
        writer.submit(AlignedBuf::zeroed(4096), 4096, 0, ());
        let done = writer.wait().unwrap();
        assert!(done.result.is_err());
        assert!(writer.wait().is_none());
    }
}
