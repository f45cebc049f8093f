//! What the vault's parts share: the chain's handle, the farmer, the
//! network's handle, the known vaults, metrics and the figures the API
//! reports.

use crate::blocking::Blocking;
use crate::chain::Chain;
use crate::farmer::Farmer;
use crate::metrics::Metrics;
use crate::vaults::Vaults;
use spacevault_chain::{Keypair, Rejection};
use spacevault_meter::Meter;
use spacevault_network as net;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What the vault's parts share.
pub struct Shared {
    pub(crate) chain: Arc<Chain>,
    /// The proof of time's line of slots.
    pub(crate) time: Arc<crate::time::Time>,
    /// Whether slots are being asked of a peer (one catch-up at a time).
    pub(crate) catching_up_slots: AtomicBool,
    /// What the slots' arrival says of this vault's clock.
    pub(crate) clock: crate::clock::ClockCheck,
    /// Whether this vault computes the slots.
    pub(crate) timekeeper: bool,
    /// The chain's store, reached without the chain: blobs are read and
    /// written beside the chain's work.
    pub(crate) store: Arc<spacevault_store::Store>,
    /// Blocking threads reads of local blobs may hold: apart from the
    /// requests' that take the engine's lock, so that reads never wait
    /// behind writes that wait for it.
    pub(crate) blob_reads: Blocking,
    /// Peers cooling down after syncs that brought nothing.
    pub(crate) sync_peers: Mutex<crate::sync_peers::SyncPeers<net::Peer>>,
    /// Every task the vault starts besides its main one and the API's
    /// ([`Shared::spawn`], [`Shared::spawn_blocking`]): its stop waits for
    /// them, so that nothing holds the store once it returns.
    pub(crate) tasks: TaskTracker,
    /// Cancelled when the vault stops: its tasks end at their next wait.
    pub(crate) shutdown: CancellationToken,
    pub(crate) farmer: Farmer,
    pub(crate) key: Keypair,
    /// The last slot the key signed a block in, kept beside the key.
    pub(crate) signed: crate::signed::SignedSlots,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) vaults: Mutex<Vaults>,
    pub(crate) net: net::Handle,
    pub(crate) api_addr: Mutex<Option<SocketAddr>>,
    pub(crate) listen_addrs: Mutex<Vec<net::Address>>,
    pub(crate) syncing: AtomicBool,
    /// Whether the sync under way is from a peer well ahead, bringing
    /// blocks: no farming then.
    pub(crate) behind: crate::behind::Behind,
    /// This vault's cryptographic operations.
    pub(crate) meter: Arc<Meter>,
    /// The last measured round trip to each connected peer.
    pub(crate) round_trips: Mutex<std::collections::HashMap<net::Peer, Duration>>,
    /// What each peer may still have this vault keep.
    pub(crate) store_budgets: Mutex<crate::budget::Budgets<net::Peer>>,
    /// Each peer's allowance for the blocks it asks of this vault.
    pub(crate) blocks_budgets: Mutex<crate::budget::Budgets<net::Peer>>,
    /// Other holders' receipts, and the holders challenged lately.
    pub(crate) disputes: Mutex<crate::receipts::Book>,
    /// Where the scrub of stored blobs stands.
    pub(crate) scrub: ScrubProgress,
    /// Blocks waiting for their slot.
    pub(crate) held: std::sync::Mutex<crate::held::Held>,
    pub(crate) scrub_rate: u64,
}

impl Shared {
    /// The vault's metrics, as `/metrics` serves them: the meter's counts,
    /// the network's dropped commands, the slots pruned and the process's
    /// CPU and memory brought up to date first.
    pub fn metrics_text(&self) -> String {
        self.metrics.sync_crypto(&self.meter);
        self.metrics.sync_network(self.net.commands_dropped());
        self.metrics.sync_pruned(self.chain.slots_pruned());
        self.metrics.sync_process();
        self.metrics.encode()
    }

    /// Runs `f` on the chain on a blocking thread, and gives its result
    /// (none if `f` panicked). The engine's lock may be held by a worker
    /// importing a block of a thousand transactions, or writing the store:
    /// a runtime thread that waited for it would stall the network and
    /// every other vault's task on that thread.
    pub async fn with_chain<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Chain) -> R + Send + 'static,
    ) -> Option<R> {
        self.blocking(move |s| f(&s.chain)).await
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
    /// waits for it (a blocking thread cannot be cancelled: its work is
    /// short, or, like the timekeeper's loop, looks for the stop often).
    pub(crate) fn spawn_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> JoinHandle<R> {
        self.tasks.spawn_blocking(f)
    }

    /// Pools a transaction this vault wrote and gossips it: Ok(false) when
    /// it was pending already, Err when the pool refused it (or the
    /// vault is stopping).
    pub(crate) async fn pool_and_gossip(
        self: &Arc<Self>,
        tx: spacevault_chain::RegisterTx,
    ) -> Result<bool, String> {
        let added = {
            let (task, tx) = (self.clone(), tx.clone());
            self.spawn_blocking(move || task.chain.add_tx(tx)).await
        };
        match added {
            Ok(Ok(new)) => {
                self.net.publish(net::Topic::Txs, tx.encode());
                Ok(new)
            }
            Ok(Err(why)) => Err(why.to_string()),
            Err(e) => Err(e.to_string()),
        }
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

/// What the vault's own tasks (syncs) tell its main task.
pub(crate) enum Internal {
    Synced,
}

/// A gossiped message, as its verdict is reported: at once by the worker
/// that checked it, or later by whatever holds it (a block held for its
/// slot).
#[derive(Clone)]
pub(crate) struct Gossiped {
    pub(crate) id: net::MessageId,
    pub(crate) source: net::Peer,
}

/// The gossip verdict of a refusal: rejected (the sender penalised) for a
/// fault, ignored otherwise.
pub(crate) fn verdict(r: &Rejection) -> net::Verdict {
    if r.is_fault() {
        net::Verdict::Reject
    } else {
        net::Verdict::Ignore
    }
}
