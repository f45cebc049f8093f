//! Blocking work behind bounded queues, as Lighthouse's beacon processor
//! does it: the network's task only sorts what peers send into one queue
//! per kind of work; blocking workers (tokio's blocking threads, a few per
//! vault) take the queues in priority order and check signatures, write
//! the store and read blobs there. A queue that is full drops its oldest
//! item, which the owner hears of (and counts): a flood of one kind costs
//! that kind its oldest work, never the vault its memory or its other
//! work.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One queue: its name in metrics, its bound, and whether its items must be
/// worked one at a time in order (blocks, whose parents come first, and
/// register writes, whose versions do).
#[derive(Clone, Copy, Debug)]
pub struct Queue {
    pub name: &'static str,
    pub capacity: usize,
    pub serial: bool,
}

/// Why an item was not worked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shed {
    /// Its queue was full and it was the oldest there.
    Full,
    /// The processor was closed before a worker reached it.
    Closed,
}

type WorkFn<T> = Box<dyn Fn(usize, T) + Send + Sync>;
type ShedFn<T> = Box<dyn Fn(usize, T, Shed) + Send + Sync>;

/// The queues and their workers. Dropping it closes it: what waits is shed
/// with [`Shed::Closed`]; items in a worker's hands finish.
pub struct Processor<T: Send + 'static> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    queues: Vec<Queue>,
    max_workers: usize,
    state: Mutex<State<T>>,
    work: WorkFn<T>,
    shed: ShedFn<T>,
    runtime: tokio::runtime::Handle,
    /// Where workers are counted, so that the owner can wait for them.
    tasks: tokio_util::task::TaskTracker,
}

struct State<T> {
    waiting: Vec<VecDeque<T>>,
    /// Workers at work on each serial queue (0 or 1).
    busy: Vec<usize>,
    workers: usize,
    closed: bool,
}

impl<T: Send + 'static> Processor<T> {
    /// `queues` in priority order: a worker takes the first that has work
    /// it may take. `work(queue, item)` runs on a blocking thread;
    /// `shed(queue, item, why)` on the thread that shed it. Workers are
    /// tracked by `tasks`. Must be called within a tokio runtime.
    pub fn new(
        queues: Vec<Queue>,
        max_workers: usize,
        tasks: tokio_util::task::TaskTracker,
        work: impl Fn(usize, T) + Send + Sync + 'static,
        shed: impl Fn(usize, T, Shed) + Send + Sync + 'static,
    ) -> Processor<T> {
        let n = queues.len();
        Processor {
            inner: Arc::new(Inner {
                queues,
                max_workers: max_workers.max(1),
                state: Mutex::new(State {
                    waiting: (0..n).map(|_| VecDeque::new()).collect(),
                    busy: vec![0; n],
                    workers: 0,
                    closed: false,
                }),
                work: Box::new(work),
                shed: Box::new(shed),
                runtime: tokio::runtime::Handle::current(),
                tasks,
            }),
        }
    }

    /// Queues `item` on `queue` (an index into the queues given to
    /// [`Processor::new`]), shedding that queue's oldest if it is full.
    pub fn submit(&self, queue: usize, item: T) {
        let inner = &self.inner;
        let (shed, start_worker) = {
            let mut state = inner.state.lock().unwrap();
            if state.closed {
                drop(state);
                (inner.shed)(queue, item, Shed::Closed);
                return;
            }
            let waiting = &mut state.waiting[queue];
            waiting.push_back(item);
            let shed = if waiting.len() > inner.queues[queue].capacity {
                waiting.pop_front()
            } else {
                None
            };
            let start_worker = state.workers < inner.max_workers;
            if start_worker {
                state.workers += 1;
            }
            (shed, start_worker)
        };
        if let Some(old) = shed {
            (inner.shed)(queue, old, Shed::Full);
        }
        if start_worker {
            let worker = inner.clone();
            inner
                .tasks
                .spawn_blocking_on(move || worker.work_until_empty(), &inner.runtime);
        }
    }

    /// Items waiting, per queue.
    pub fn waiting(&self) -> Vec<usize> {
        let state = self.inner.state.lock().unwrap();
        state.waiting.iter().map(VecDeque::len).collect()
    }

    /// Workers running now.
    pub fn workers(&self) -> usize {
        self.inner.state.lock().unwrap().workers
    }

    /// The queues, as given.
    pub fn queues(&self) -> &[Queue] {
        &self.inner.queues
    }
}

impl<T: Send + 'static> std::ops::Drop for Processor<T> {
    fn drop(&mut self) {
        let left: Vec<(usize, VecDeque<T>)> = {
            let mut state = self.inner.state.lock().unwrap();
            state.closed = true;
            state
                .waiting
                .iter_mut()
                .map(std::mem::take)
                .enumerate()
                .collect()
        };
        for (queue, items) in left {
            for item in items {
                (self.inner.shed)(queue, item, Shed::Closed);
            }
        }
    }
}

impl<T> Inner<T> {
    /// A worker's life: the first queue it may take from, one item at a
    /// time, until none has work it may take. A serial queue's items wait
    /// for the worker already on it, which takes them next.
    fn work_until_empty(&self) {
        let mut finished: Option<usize> = None;
        loop {
            let next = {
                let mut state = self.state.lock().unwrap();
                if let Some(q) = finished.take() {
                    if self.queues[q].serial {
                        state.busy[q] -= 1;
                    }
                }
                let taken_by_another = |q: usize| self.queues[q].serial && state.busy[q] > 0;
                let found = (0..self.queues.len())
                    .find(|&q| !state.waiting[q].is_empty() && !taken_by_another(q));
                match found {
                    Some(q) => {
                        if self.queues[q].serial {
                            state.busy[q] += 1;
                        }
                        let item = state.waiting[q].pop_front().expect("a waiting item");
                        Some((q, item))
                    }
                    None => {
                        state.workers -= 1;
                        None
                    }
                }
            };
            let Some((q, item)) = next else { return };
            // A panic in one item must not leave its serial queue marked
            // busy forever, nor the worker count too high.
            let guard = Release {
                inner: self,
                queue: q,
            };
            (self.work)(q, item);
            std::mem::forget(guard);
            finished = Some(q);
        }
    }
}

/// Undoes a worker's marks if its item panics.
struct Release<'a, T> {
    inner: &'a Inner<T>,
    queue: usize,
}

impl<T> std::ops::Drop for Release<'_, T> {
    fn drop(&mut self) {
        let mut state = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.inner.queues[self.queue].serial {
            state.busy[self.queue] -= 1;
        }
        state.workers -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};
    use tokio_util::task::TaskTracker;

    fn queues() -> Vec<Queue> {
        vec![
            Queue {
                name: "first",
                capacity: 4,
                serial: true,
            },
            Queue {
                name: "second",
                capacity: 2,
                serial: false,
            },
        ]
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A gate the work waits behind, so that tests fill queues while the
    /// workers are held.
    #[derive(Default)]
    struct Gate {
        open: Mutex<bool>,
        changed: std::sync::Condvar,
    }

    impl Gate {
        fn wait(&self) {
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.changed.wait(open).unwrap();
            }
        }
        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.changed.notify_all();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_sheds_its_oldest_and_the_rest_are_worked_in_order() {
        let gate = Arc::new(Gate::default());
        let done = Arc::new(Mutex::new(Vec::new()));
        let shed = Arc::new(Mutex::new(Vec::new()));
        let p = {
            let (gate, done, shed) = (gate.clone(), done.clone(), shed.clone());
            Processor::new(
                queues(),
                1,
                TaskTracker::new(),
                move |q, item: u32| {
                    gate.wait();
                    done.lock().unwrap().push((q, item));
                },
                move |q, item, why| shed.lock().unwrap().push((q, item, why)),
            )
        };
        // The one worker takes item 0 and waits at the gate; 1 to 6 queue
        // behind it, where 4 fit.
        p.submit(0, 0);
        wait_until("the worker to take the first item", || p.waiting()[0] == 0);
        for i in 1..=6 {
            p.submit(0, i);
        }
        for i in 10..=12 {
            p.submit(1, i);
        }
        assert_eq!(p.waiting(), vec![4, 2]);
        assert_eq!(p.workers(), 1, "one worker at most");
        assert_eq!(
            *shed.lock().unwrap(),
            vec![(0, 1, Shed::Full), (0, 2, Shed::Full), (1, 10, Shed::Full)]
        );
        gate.open();
        wait_until("every item worked", || done.lock().unwrap().len() == 7);
        // The first queue before the second, each in arrival order.
        assert_eq!(
            *done.lock().unwrap(),
            vec![(0, 0), (0, 3), (0, 4), (0, 5), (0, 6), (1, 11), (1, 12)]
        );
        wait_until("the worker to end", || p.workers() == 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_serial_queue_is_worked_by_one_worker_at_a_time() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let worked = Arc::new(AtomicUsize::new(0));
        let p = {
            let (running, most, worked) = (running.clone(), most.clone(), worked.clone());
            Processor::new(
                queues(),
                4,
                TaskTracker::new(),
                move |q, _item: u32| {
                    if q == 0 {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(1));
                        running.fetch_sub(1, Ordering::SeqCst);
                    }
                    worked.fetch_add(1, Ordering::SeqCst);
                },
                |_, _, why| panic!("nothing is shed here, yet one was: {why:?}"),
            )
        };
        for round in 0..20 {
            for i in 0..4 {
                p.submit(0, round * 4 + i);
            }
            wait_until("the round's work", || {
                worked.load(Ordering::SeqCst) == (round as usize + 1) * 4
            });
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            1,
            "two workers on one serial queue"
        );
        wait_until("the workers to end", || p.workers() == 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn several_workers_share_a_queue_that_is_not_serial() {
        let gate = Arc::new(Gate::default());
        let running = Arc::new(AtomicUsize::new(0));
        let p = {
            let (gate, running) = (gate.clone(), running.clone());
            Processor::new(
                queues(),
                2,
                TaskTracker::new(),
                move |_, _item: u32| {
                    running.fetch_add(1, Ordering::SeqCst);
                    gate.wait();
                },
                |_, _, _| {},
            )
        };
        p.submit(1, 1);
        p.submit(1, 2);
        wait_until("two workers at once", || {
            running.load(Ordering::SeqCst) == 2
        });
        gate.open();
        wait_until("the workers to end", || p.workers() == 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_sheds_what_waits_and_whatever_comes_after() {
        let gate = Arc::new(Gate::default());
        let shed = Arc::new(Mutex::new(Vec::new()));
        let tasks = TaskTracker::new();
        let p = {
            let (gate, shed) = (gate.clone(), shed.clone());
            Processor::new(
                queues(),
                1,
                tasks.clone(),
                move |_, _item: u32| gate.wait(),
                move |q, item, why| shed.lock().unwrap().push((q, item, why)),
            )
        };
        p.submit(0, 0);
        wait_until("the worker to take the first item", || p.waiting()[0] == 0);
        p.submit(0, 1);
        p.submit(1, 2);
        let inner = p.inner.clone();
        drop(p);
        assert_eq!(
            *shed.lock().unwrap(),
            vec![(0, 1, Shed::Closed), (1, 2, Shed::Closed)]
        );
        Processor {
            inner: inner.clone(),
        }
        .submit(1, 3);
        assert_eq!(shed.lock().unwrap().last(), Some(&(1, 3, Shed::Closed)));
        gate.open();
        // The owner waits for the worker through the tracker.
        tasks.close();
        tokio::time::timeout(Duration::from_secs(10), tasks.wait())
            .await
            .expect("the worker to end");
        assert_eq!(inner.state.lock().unwrap().workers, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_item_frees_its_worker_and_its_serial_queue() {
        let worked = Arc::new(AtomicUsize::new(0));
        let p = {
            let worked = worked.clone();
            Processor::new(
                queues(),
                1,
                TaskTracker::new(),
                move |_, item: u32| {
                    if item == 0 {
                        panic!("a bad item");
                    }
                    worked.fetch_add(1, Ordering::SeqCst);
                },
                |_, _, _| {},
            )
        };
        p.submit(0, 0);
        wait_until("the panicking worker to end", || p.workers() == 0);
        p.submit(0, 1);
        wait_until("the next item worked", || {
            worked.load(Ordering::SeqCst) == 1
        });
    }
}
