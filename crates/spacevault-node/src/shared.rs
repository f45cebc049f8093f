//! What the vault's parts share: the engine behind its lock, the farmer,
//! the network's handle, the known vaults, metrics and the figures the API
//! reports.

use crate::config::ApiTimes;
use crate::engine::Engine;
use crate::farmer::{Farmer, Found};
use crate::metrics::Metrics;
use crate::vaults::Vaults;
use spacevault_chain::{ChainSpec, Keypair, SigCache};
use spacevault_meter::Meter;
use spacevault_network as net;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Blocking threads a vault's client requests hold at most at once.
pub const MAX_REQUEST_WORKERS: usize = 4;

/// What the vault's parts share.
pub struct Shared {
    pub(crate) engine: Mutex<Engine>,
    /// The engine's store, reached without the engine's lock: blobs are
    /// read and written beside the chain's work.
    pub(crate) store: Arc<spacevault_store::Store>,
    /// Blocking threads clients' requests may hold ([`Shared::for_request`]).
    pub(crate) request_workers: Arc<tokio::sync::Semaphore>,
    /// Blocking threads reads of local blobs may hold: apart from the
    /// engine's, so that reads never wait behind writes that wait for the
    /// engine's lock.
    pub(crate) blob_readers: Arc<tokio::sync::Semaphore>,
    /// Peers cooling down after syncs that brought nothing.
    pub(crate) sync_peers: Mutex<crate::sync_peers::SyncPeers<net::Peer>>,
    /// Woken when workers change the engine ([`Shared::engine_changed`]).
    pub(crate) engine_changed: tokio::sync::Notify,
    /// Every task the vault starts besides its main one and the API's
    /// ([`Shared::spawn`], [`Shared::spawn_blocking`]): its stop waits for
    /// them, so that nothing holds the store once it returns.
    pub(crate) tasks: TaskTracker,
    /// Cancelled when the vault stops: its tasks end at their next wait.
    pub(crate) shutdown: CancellationToken,
    pub(crate) farmer: Farmer,
    pub(crate) key: Keypair,
    pub(crate) metrics: Metrics,
    pub(crate) vaults: Mutex<Vaults>,
    pub(crate) net: net::Handle,
    pub(crate) spec: ChainSpec,
    pub(crate) chain_id: [u8; 32],
    /// The canonical head's height, for waiters.
    pub(crate) head: watch::Sender<u64>,
    pub(crate) api_addr: Mutex<Option<SocketAddr>>,
    pub(crate) listen_addrs: Mutex<Vec<net::Address>>,
    /// When each recent block was first imported here (Unix ms): what the
    /// network benchmark measures propagation with.
    pub(crate) arrivals: Mutex<Arrivals>,
    pub(crate) syncing: AtomicBool,
    /// This vault's cryptographic operations.
    pub(crate) meter: Arc<Meter>,
    /// Signatures verified before, if the vault keeps them (the engine
    /// holds it too).
    pub(crate) sig_cache: Option<Arc<SigCache>>,
    /// The most blocks one change of branch took off the canonical chain.
    pub(crate) deepest_reorg: std::sync::atomic::AtomicU64,
    /// The last measured round trip to each connected peer.
    pub(crate) round_trips: Mutex<std::collections::HashMap<net::Peer, Duration>>,
    /// How long the API lets requests run.
    pub(crate) api_times: ApiTimes,
    /// Requests the API works on at once.
    pub(crate) api_max_requests: usize,
    /// What each peer may still have this vault keep.
    pub(crate) store_budgets: Mutex<crate::budget::Budgets<net::Peer>>,
    /// Each peer's allowance for the blocks it asks of this vault.
    pub(crate) blocks_budgets: Mutex<crate::budget::Budgets<net::Peer>>,
    /// Where the scrub of stored blobs stands.
    pub(crate) scrub: ScrubProgress,
    /// Early blocks waiting for their time.
    pub(crate) early_blocks: std::sync::atomic::AtomicUsize,
    pub(crate) scrub_rate: u64,
}

/// First-import times of the last blocks, bounded.
#[derive(Default)]
pub struct Arrivals {
    times: std::collections::HashMap<[u8; 32], u64>,
    order: std::collections::VecDeque<[u8; 32]>,
}

/// Blocks whose arrival time is kept.
const ARRIVALS_KEPT: usize = 4096;

impl Arrivals {
    pub(crate) fn note(&mut self, hash: [u8; 32], at_ms: u64) {
        if self.times.insert(hash, at_ms).is_none() {
            self.order.push_back(hash);
            if self.order.len() > ARRIVALS_KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.times.remove(&old);
                }
            }
        }
    }

    pub fn get(&self, hash: &[u8; 32]) -> Option<u64> {
        self.times.get(hash).copied()
    }
}

impl Shared {
    pub fn engine(&self) -> std::sync::MutexGuard<'_, Engine> {
        self.engine.lock().unwrap()
    }

    /// The vault's metrics, as `/metrics` serves them.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode()
    }

    /// Runs `f` on the engine on a blocking thread, and gives its result
    /// (none if `f` panicked). The engine's lock may be held by a worker
    /// importing a block of a thousand transactions, or writing the store:
    /// a runtime thread that waited for it would stall the network and
    /// every other vault's task on that thread.
    pub async fn with_engine<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Engine) -> R + Send + 'static,
    ) -> Option<R> {
        self.blocking(move |s| f(&mut s.engine())).await
    }

    /// Runs `f` with the vault on a blocking thread, metered: for work
    /// that takes the engine's lock more than once (production, imports).
    pub async fn blocking<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Arc<Shared>) -> R + Send + 'static,
    ) -> Option<R> {
        let shared = self.clone();
        self.spawn_blocking(move || spacevault_meter::with(&shared.meter, || f(&shared)))
            .await
            .ok()
    }

    /// Starts `task` as one of the vault's: it ends at its next wait once
    /// the vault stops (its result is then `None`), and the stop waits
    /// for it.
    pub(crate) fn spawn<R: Send + 'static>(
        &self,
        task: impl std::future::Future<Output = R> + Send + 'static,
    ) -> JoinHandle<Option<R>> {
        let shutdown = self.shutdown.clone();
        self.tasks
            .spawn(async move { shutdown.run_until_cancelled(task).await })
    }

    /// Runs `f` on a blocking thread as one of the vault's tasks: the stop
    /// waits for it (a blocking thread cannot be cancelled; its work is
    /// short).
    pub(crate) fn spawn_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> JoinHandle<R> {
        self.tasks.spawn_blocking(f)
    }

    /// Tells the vault's task that the engine took a block or a proof from
    /// a peer: its turn to produce may have moved.
    pub(crate) fn engine_changed(&self) {
        self.engine_changed.notify_one();
    }

    /// [`Shared::with_engine`] for a client's request: at most
    /// [`MAX_REQUEST_WORKERS`] of this vault's requests at once wait on a
    /// blocking thread (the rest wait as tasks, which cost nothing). A
    /// thousand clients' requests on blocking threads of their own would
    /// only queue on the engine's lock, or thrash the cores, at the cost
    /// of a thread each.
    pub async fn for_request<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Arc<Shared>) -> R + Send + 'static,
    ) -> Option<R> {
        self.on_blocking_thread(&self.request_workers, f).await
    }

    /// [`Shared::blocking`], holding a permit of `slots` until `f` ends
    /// (a request cancelled meanwhile leaves its thread at work, and the
    /// permit with it).
    pub(crate) async fn on_blocking_thread<R: Send + 'static>(
        self: &Arc<Self>,
        slots: &Arc<tokio::sync::Semaphore>,
        f: impl FnOnce(&Arc<Shared>) -> R + Send + 'static,
    ) -> Option<R> {
        let permit = slots.clone().acquire_owned().await.ok()?;
        self.blocking(move |s| {
            let _permit = permit;
            f(s)
        })
        .await
    }

    /// Whether a sync from a peer is under way (one at a time).
    pub fn is_syncing(&self) -> bool {
        self.syncing.load(Ordering::Acquire)
    }
}

/// Where the scrub stands, for the status and the page.
#[derive(Default)]
pub struct ScrubProgress {
    pub passes: AtomicU64,
    /// Blobs in the pass under way, and checked of them.
    pub pass_blobs: AtomicU64,
    pub pass_checked: AtomicU64,
    /// When the last pass ended (Unix ms; 0 before the first).
    pub last_pass_ms: AtomicU64,
}

/// What the vault's own tasks (lookups, syncs) tell its main task.
pub(crate) enum Internal {
    Found {
        height: u64,
        parent: [u8; 32],
        found: Box<Found>,
    },
    Synced,
}
