//! Phase 2's partitions: read back from the temp file or taken from the
//! rounds kept in memory, counted, filed by window and hashed again where
//! the keys hold no buckets.

use super::temp_file::{RoundBuffers, RoundSegments};
use crate::kernel::Kernel;
use crate::plot::key_shape::KeyShape;
use crate::plot::keys::{for_each_run, hash_range, RangeKeys};
use crate::plot::pack::SlotPlacer;
use crate::plot::partition::Partitioning;
use crate::plot::pipeline::{PartitionSource, Scratch};
use crate::plot::readahead::ReadAhead;
use crate::plot::windows::Windows;
use crate::plot::{PlotError, Progress};
use std::ops::Range;
use std::sync::mpsc;

/// Phase 2's partitions: read back from the temp file, then taken from the
/// rounds kept in memory (and hashed again when the keys hold no buckets).
pub(super) struct TempSource<'a> {
    pub(super) segments: &'a [RoundSegments],
    pub(super) resident: &'a [RoundBuffers],
    pub(super) shape: KeyShape,
    pub(super) parting: &'a Partitioning,
    pub(super) kernel: &'a Kernel,
    pub(super) ahead: &'a ReadAhead,
}

impl PartitionSource for TempSource<'_> {
    /// Takes the partition's keys from the read-ahead, then from the rounds
    /// kept in memory (ascending by nonce: rounds, threads and each
    /// thread's array then overflow all come in nonce order), counts them
    /// by bucket and files them by window.
    fn count(&self, p: u64, scratch: &mut Scratch, counts: &mut [u32]) -> Result<(), PlotError> {
        let Scratch {
            windows,
            nonces,
            prefixes,
        } = scratch;
        windows.reset(counts.len(), self.parting.records_per_part() as usize);
        let buf = self.ahead.take(p)?;
        let mut at = 0usize;
        for seg in self.segments.iter().flat_map(|round| &round[p as usize]) {
            let (array, extra, epochs) = seg.parts(&buf[at..]);
            at += seg.bytes() as usize;
            let keys = (array, extra, seg.first_epoch, epochs.iter().copied());
            self.file_keys(p, keys, windows, nonces, prefixes)?;
        }
        self.ahead.give_back(buf);
        for thread in self.resident.iter().flatten() {
            let (array, extra, first_epoch, epochs) = thread.partition(p);
            let keys = (array, &extra[..], first_epoch, epochs);
            self.file_keys(p, keys, windows, nonces, prefixes)?;
        }
        windows.add_counts(counts);
        Ok(())
    }

    fn fill(&self, _: u64, scratch: &mut Scratch, placer: &mut SlotPlacer) {
        scratch.windows.place(placer);
    }
}

impl TempSource<'_> {
    /// Counts one thread's keys of one round by bucket and files them by
    /// window: `(array, overflow, first epoch, keys in each epoch)`.
    pub(super) fn file_keys(
        &self,
        p: u64,
        (array, extra, first_epoch, epochs): (&[u32], &[u32], u64, impl Iterator<Item = u32>),
        windows: &mut Windows,
        nonces: &mut Vec<u64>,
        prefixes: &mut Vec<u64>,
    ) -> Result<(), PlotError> {
        let shape = self.shape;
        let damaged = || {
            PlotError::Inconsistent(format!(
                "the temp file's keys of partition {p} do not add up"
            ))
        };
        let covered = if shape.has_buckets() {
            windows
                .file_keys((array, extra), first_epoch, epochs, shape)
                .ok_or_else(damaged)?
        } else {
            nonces.clear();
            let covered = for_each_run(array, extra, first_epoch, epochs, |keys, epoch| {
                nonces.extend(keys.iter().map(|&key| shape.nonce(key, epoch)))
            });
            self.bucket_by_hashing(p, nonces, prefixes, windows)?;
            covered
        };
        if covered != array.len() + extra.len() {
            return Err(damaged());
        }
        Ok(())
    }

    /// Hashes `nonces` a block at a time to find their buckets, counts them
    /// and files them by window.
    pub(super) fn bucket_by_hashing(
        &self,
        p: u64,
        nonces: &[u64],
        prefixes: &mut Vec<u64>,
        windows: &mut Windows,
    ) -> Result<(), PlotError> {
        let layout = &self.parting.layout;
        let first_bucket = self.parting.buckets(p).start;
        prefixes.resize(HASH_BLOCK, 0);
        for block in nonces.chunks(HASH_BLOCK) {
            let n = block.len();
            self.kernel.prefixes_of(block, &mut prefixes[..n]);
            // Every record belongs here, so its bucket within the
            // partition is a subtraction; anything out of range wraps to a
            // huge value and is caught below.
            let mut worst = 0u64;
            for prefix in prefixes[..n].iter_mut() {
                *prefix = layout.bucket_of_prefix(*prefix).wrapping_sub(first_bucket);
                worst = worst.max(*prefix);
            }
            if worst >= windows.buckets() as u64 {
                let (q, _) = self.parting.locate(worst.wrapping_add(first_bucket));
                return Err(PlotError::Inconsistent(format!(
                    "a record of partition {q} came back with partition {p}"
                )));
            }
            windows.file_nonces(block, &prefixes[..n]);
        }
        Ok(())
    }
}

/// Nonces hashed at once in phase 2: their buffers stay in L1.
pub(super) const HASH_BLOCK: usize = 2048;

/// A thread's share of a round: its nonces and the buffers they go to.
pub(super) struct Share {
    pub(super) round: usize,
    pub(super) nonces: Range<u64>,
    pub(super) keys: RangeKeys,
}

/// A share hashed, or the error that stopped it.
pub(super) struct HashedShare {
    pub(super) round: usize,
    pub(super) thread: usize,
    pub(super) keys: RangeKeys,
    pub(super) result: Result<(), PlotError>,
}

/// Phase 1's hashing threads, one for each of a round's buffers, kept for
/// the whole phase. Each hashes its contiguous share of every round in
/// turn. With a join after every round, the faster thread waited for the
/// slower at each round's end, a few percent of phase 1. Instead a thread done
/// with its share goes on to its share of the next round as soon as that
/// round's buffers are free, which they are while the writer keeps up.
pub(super) struct Hashers {
    pub(super) shares: Vec<mpsc::SyncSender<Share>>,
    pub(super) hashed: mpsc::Receiver<HashedShare>,
    /// Shares of later rounds that came in while waiting for an earlier.
    pub(super) early: Vec<HashedShare>,
}

impl Hashers {
    pub(super) fn start<'scope>(
        s: &'scope std::thread::Scope<'scope, '_>,
        threads: usize,
        (kernel, parting, shape): (&'scope Kernel, &'scope Partitioning, KeyShape),
        progress: &'scope dyn Progress,
    ) -> Hashers {
        let (done, hashed) = mpsc::channel();
        let shares = (0..threads)
            .map(|thread| {
                // Room for the share after the one in hand.
                let (tx, rx) = mpsc::sync_channel::<Share>(2);
                let done = done.clone();
                s.spawn(move || {
                    for Share {
                        round,
                        nonces,
                        keys,
                    } in rx
                    {
                        let RangeKeys {
                            mut scatter,
                            mut marks,
                        } = keys;
                        scatter.clear();
                        let result = hash_range(
                            kernel,
                            parting,
                            shape,
                            nonces,
                            &mut scatter,
                            &mut marks,
                            progress,
                        );
                        let keys = RangeKeys { scatter, marks };
                        let share = HashedShare {
                            round,
                            thread,
                            keys,
                            result,
                        };
                        if done.send(share).is_err() {
                            return;
                        }
                    }
                });
                tx
            })
            .collect();
        Hashers {
            shares,
            hashed,
            early: Vec::new(),
        }
    }

    /// Hands round `round`'s nonces to the threads, a contiguous share
    /// each, into `buffers` (one for each thread).
    pub(super) fn hand_out(
        &self,
        round: usize,
        nonces: Range<u64>,
        buffers: RoundBuffers,
    ) -> Result<(), PlotError> {
        let threads = self.shares.len() as u64;
        assert_eq!(buffers.len() as u64, threads, "a buffer a thread");
        let (base, len) = (nonces.start, nonces.end - nonces.start);
        for ((t, keys), to) in buffers.into_iter().enumerate().zip(&self.shares) {
            let t = t as u64;
            let nonces = base + len * t / threads..base + len * (t + 1) / threads;
            let share = Share {
                round,
                nonces,
                keys,
            };
            to.send(share).map_err(|_| PlotError::Aborted)?;
        }
        Ok(())
    }

    /// Waits for every share of round `round`; returns its buffers in
    /// thread order.
    pub(super) fn collect(&mut self, round: usize) -> Result<RoundBuffers, PlotError> {
        let mut buffers: Vec<Option<RangeKeys>> = self.shares.iter().map(|_| None).collect();
        let mut missing = buffers.len();
        while missing > 0 {
            let share = match self.early.iter().position(|s| s.round == round) {
                Some(i) => self.early.swap_remove(i),
                None => self.hashed.recv().map_err(|_| PlotError::Aborted)?,
            };
            if share.round != round {
                self.early.push(share);
                continue;
            }
            share.result?;
            buffers[share.thread] = Some(share.keys);
            missing -= 1;
        }
        Ok(buffers
            .into_iter()
            .map(|b| b.expect("every share"))
            .collect())
    }
}
