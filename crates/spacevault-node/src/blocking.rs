//! Blocking threads a kind of the vault's work may hold at once.

use spacevault_meter::Meter;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

/// Runs work on blocking threads, at most so many at once, as the vault's
/// tasks (its stop waits for them) and counted by its meter. The rest wait
/// as tasks, which cost nothing: a thousand clients' requests on blocking
/// threads of their own would only queue on the engine's lock, or thrash
/// the cores, at the cost of a thread each.
#[derive(Clone)]
pub struct Blocking {
    slots: Arc<Semaphore>,
    tasks: TaskTracker,
    meter: Arc<Meter>,
}

impl Blocking {
    pub fn new(threads: usize, tasks: TaskTracker, meter: Arc<Meter>) -> Blocking {
        Blocking {
            slots: Arc::new(Semaphore::new(threads.max(1))),
            tasks,
            meter,
        }
    }

    /// Runs `f` on a blocking thread once one of the slots is free, and
    /// gives its result (none if it panicked). A caller cancelled
    /// meanwhile leaves the thread at work, holding its slot until `f`
    /// ends.
    pub async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Option<R> {
        let permit = self.slots.clone().acquire_owned().await.ok()?;
        let meter = self.meter.clone();
        self.tasks
            .spawn_blocking(move || {
                let _permit = permit;
                spacevault_meter::with(&meter, f)
            })
            .await
            .ok()
    }

    /// The vault's tasks, which the stop waits for.
    pub fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }
}
