//! Reading phase-2 partitions ahead of the workers that need them, so that
//! no worker sits in a read while a core is free.

use super::{stop_requested, PlotError};
use crate::aligned::AlignedBuf;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

pub(crate) struct ReadAhead {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Partitions read and not yet taken.
    ready: BTreeMap<u64, Result<AlignedBuf, PlotError>>,
    /// Buffers given back, for the reader to reuse.
    pool: Vec<AlignedBuf>,
    /// Partitions that may be read before a buffer is given back.
    credits: usize,
    /// Nothing more will be read: all done, stopped, failed or cancelled.
    closed: bool,
    /// The next partition no reader has taken.
    next: u64,
}

impl ReadAhead {
    #[cfg(test)]
    pub fn new(depth: usize) -> ReadAhead {
        ReadAhead::with_buffers(depth, Vec::new())
    }

    /// Lets the reader run up to `depth` partitions ahead of the buffers
    /// given back, reading into `buffers` (kept from an earlier plot)
    /// before it allocates any.
    pub fn with_buffers(depth: usize, buffers: Vec<AlignedBuf>) -> ReadAhead {
        ReadAhead {
            state: Mutex::new(State {
                ready: BTreeMap::new(),
                pool: buffers,
                credits: depth.max(1),
                closed: false,
                next: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// A reader: reads partitions `0..count` with `read`, which fills the
    /// buffer it is given (growing it if needed). Several readers may run at
    /// once; each takes the next partition nobody has taken, so together
    /// they read in order with more than one read in flight.
    pub fn run(
        &self,
        count: u64,
        mut read: impl FnMut(u64, &mut AlignedBuf) -> Result<(), PlotError>,
    ) {
        loop {
            let (p, mut buf) = {
                let mut s = self.state.lock().unwrap();
                while s.credits == 0 && !s.closed {
                    s = self.changed.wait(s).unwrap();
                }
                if s.closed || s.next >= count {
                    return;
                }
                s.credits -= 1;
                s.next += 1;
                (
                    s.next - 1,
                    s.pool.pop().unwrap_or_else(|| AlignedBuf::zeroed(0)),
                )
            };
            let result = if stop_requested() {
                Err(PlotError::Interrupted)
            } else {
                read(p, &mut buf).map(|()| buf)
            };
            let failed = result.is_err();
            let mut s = self.state.lock().unwrap();
            s.ready.insert(p, result);
            s.closed |= failed;
            self.changed.notify_all();
            if failed {
                return;
            }
        }
    }

    /// Waits for partition p's bytes.
    pub fn take(&self, p: u64) -> Result<AlignedBuf, PlotError> {
        let mut s = self.state.lock().unwrap();
        loop {
            if let Some(result) = s.ready.remove(&p) {
                return result;
            }
            if s.closed {
                return Err(PlotError::Aborted);
            }
            s = self.changed.wait(s).unwrap();
        }
    }

    /// Returns a buffer from [`take`](Self::take) once its bytes are used.
    pub fn give_back(&self, buf: AlignedBuf) {
        let mut s = self.state.lock().unwrap();
        s.pool.push(buf);
        s.credits += 1;
        self.changed.notify_all();
    }

    /// Every buffer, for the next plot: those given back and those read
    /// but never taken.
    pub fn into_buffers(self) -> Vec<AlignedBuf> {
        let State {
            ready, mut pool, ..
        } = self.state.into_inner().unwrap();
        pool.extend(ready.into_values().flatten());
        pool
    }

    /// Stops the reader; partitions not yet read are refused.
    pub fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_arrive_in_any_taking_order_within_the_depth() {
        let ra = ReadAhead::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                ra.run(5, |p, buf| {
                    *buf = AlignedBuf::zeroed(4096);
                    buf[0] = p as u8;
                    Ok(())
                })
            });
            for p in 0..5 {
                let buf = ra.take(p).unwrap();
                assert_eq!(buf[0], p as u8);
                ra.give_back(buf);
            }
        });
    }

    #[test]
    fn two_readers_deliver_every_partition_once() {
        let ra = ReadAhead::new(3);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    ra.run(50, |p, buf| {
                        *buf = AlignedBuf::zeroed(4096);
                        buf[..8].copy_from_slice(&p.to_le_bytes());
                        Ok(())
                    })
                });
            }
            for p in 0..50u64 {
                let buf = ra.take(p).unwrap();
                assert_eq!(buf[..8], p.to_le_bytes());
                ra.give_back(buf);
            }
        });
    }

    #[test]
    fn a_failed_read_is_reported_and_later_partitions_are_refused() {
        let ra = ReadAhead::new(3);
        std::thread::scope(|s| {
            s.spawn(|| {
                ra.run(5, |p, _| {
                    if p == 1 {
                        Err(PlotError::Inconsistent("test".into()))
                    } else {
                        Ok(())
                    }
                })
            });
            assert!(ra.take(0).is_ok());
            assert!(matches!(ra.take(1), Err(PlotError::Inconsistent(_))));
            assert!(matches!(ra.take(2), Err(PlotError::Aborted)));
        });
    }

    #[test]
    fn closing_releases_a_waiting_reader() {
        let ra = ReadAhead::new(1);
        std::thread::scope(|s| {
            s.spawn(|| ra.run(10, |_, _| Ok(())));
            assert!(ra.take(0).is_ok());
            // Partition 1 waits for a credit that never comes back.
            ra.close();
        });
    }
}
