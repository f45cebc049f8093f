//! Work on a sequence of pieces (spill files, parks) spread over threads
//! whose results must be taken in order: each piece is worked on by any
//! thread, and the caller takes the results one by one as the sequence
//! runs. At most `parallel` pieces are in hand at once (being worked on
//! or waiting to be taken), which bounds the memory to that many pieces'
//! work whatever their speeds.

use crate::plot::PlotError;
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

struct Gate<I> {
    items: I,
    /// Index of the next item handed out.
    started: usize,
    /// Results taken so far.
    taken: usize,
    stop: bool,
}

/// Runs `work` on every item of `items` on `parallel` threads and hands
/// the results to `take` in the items' order. The first error (from
/// `work` or `take`) stops the rest and is returned.
pub(super) fn map_in_order<I, O>(
    items: impl IntoIterator<Item = I, IntoIter: Send>,
    parallel: usize,
    work: impl Fn(I) -> Result<O, PlotError> + Sync,
    mut take: impl FnMut(O) -> Result<(), PlotError>,
) -> Result<(), PlotError>
where
    I: Send,
    O: Send,
{
    if parallel <= 1 {
        for item in items {
            take(work(item)?)?;
        }
        return Ok(());
    }
    let gate = Mutex::new(Gate {
        items: items.into_iter(),
        started: 0,
        taken: 0,
        stop: false,
    });
    let changed = Condvar::new();
    let (tx, rx) = mpsc::channel::<(usize, Result<O, PlotError>)>();
    let next_item = || -> Option<(usize, I)> {
        let mut g = gate.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if g.stop {
                return None;
            }
            if g.started < g.taken + parallel {
                let item = g.items.next()?;
                g.started += 1;
                return Some((g.started - 1, item));
            }
            g = changed.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    };
    let stop = || {
        gate.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
        changed.notify_all();
    };
    // A thread that panics (a worker, or the caller in `take`) stops the
    // rest on its way out, so that the scope ends and passes the panic on
    // instead of every other thread waiting for its result forever.
    struct StopOnPanic<F: Fn()>(F);
    impl<F: Fn()> Drop for StopOnPanic<F> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                (self.0)();
            }
        }
    }
    std::thread::scope(|s| {
        for _ in 0..parallel {
            let tx = tx.clone();
            let (next_item, work, stop) = (&next_item, &work, &stop);
            s.spawn(move || {
                let _guard = StopOnPanic(stop);
                while let Some((i, item)) = next_item() {
                    if tx.send((i, work(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let _guard = StopOnPanic(&stop);
        let mut waiting = BTreeMap::new();
        let mut next = 0usize;
        let mut outcome = Ok(());
        for (i, result) in &rx {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&next) {
                next += 1;
                outcome = result.and_then(&mut take);
                if outcome.is_err() {
                    break;
                }
                gate.lock().unwrap_or_else(|e| e.into_inner()).taken = next;
                changed.notify_all();
            }
            if outcome.is_err() {
                stop();
                break;
            }
        }
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn results_come_in_order_whatever_the_threads_and_speeds() {
        for parallel in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            map_in_order(
                0..200u64,
                parallel,
                |i| {
                    // Uneven work, so that later items finish first.
                    std::thread::sleep(std::time::Duration::from_micros((i * 7919) % 300));
                    Ok(i * i)
                },
                |v| {
                    seen.push(v);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, (0..200u64).map(|i| i * i).collect::<Vec<_>>());
        }
    }

    #[test]
    fn no_more_than_parallel_items_are_in_hand() {
        let in_hand = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        map_in_order(
            0..100u32,
            3,
            |_| {
                let now = in_hand.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_micros(200));
                Ok(())
            },
            |()| {
                in_hand.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            },
        )
        .unwrap();
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
    }

    /// Runs `f` on a thread of its own and says whether it panicked,
    /// failing (rather than hanging) if it has not ended within a minute.
    fn panics_within_a_minute(f: impl FnOnce() + Send + 'static) -> bool {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(outcome.is_err());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("map_in_order hung after a panic")
    }

    #[test]
    fn a_panic_in_a_worker_or_in_take_ends_the_map_with_that_panic() {
        for parallel in [2, 3] {
            assert!(panics_within_a_minute(move || {
                let _ = map_in_order(
                    0..100u32,
                    parallel,
                    |i| {
                        assert!(i != 3, "a worker's panic");
                        Ok(i)
                    },
                    |_| Ok(()),
                );
            }));
            assert!(panics_within_a_minute(move || {
                let _ = map_in_order(0..100u32, parallel, Ok, |i| {
                    assert!(i != 3, "take's panic");
                    Ok(())
                });
            }));
        }
    }

    #[test]
    fn the_first_error_stops_the_rest_and_is_returned() {
        for parallel in [1, 2, 4] {
            let worked = AtomicUsize::new(0);
            let err = map_in_order(
                0..1000u32,
                parallel,
                |i| {
                    worked.fetch_add(1, Ordering::SeqCst);
                    if i == 10 {
                        Err(PlotError::Interrupted)
                    } else {
                        Ok(i)
                    }
                },
                |_| Ok(()),
            )
            .unwrap_err();
            assert!(matches!(err, PlotError::Interrupted));
            assert!(worked.load(Ordering::SeqCst) <= 10 + 1 + parallel);
            let mut taken = 0;
            let err = map_in_order(0..1000u32, parallel, Ok, |i| {
                taken += 1;
                if i == 5 {
                    Err(PlotError::Interrupted)
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
            assert!(matches!(err, PlotError::Interrupted));
            assert_eq!(taken, 6);
        }
    }
}
