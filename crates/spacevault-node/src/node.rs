//! A running vault: the engine, the farmer and the network wired together
//! by one task that reacts to gossip, requests and timers.

use crate::api::ApiState;
use crate::blocking::Blocking;
use crate::chain::Chain;
use crate::config::{ApiTimes, NodeConfig, StartError};
use crate::data;
use crate::engine::Engine;
use crate::farmer::Farmer;
use crate::metrics::Metrics;
use crate::processor::Processor;
use crate::shared::{Internal, Shared};
use crate::sync::spawn_sync;
use crate::vaults::Vaults;
use crate::work::{self, Work};
use spacevault_chain::SigCache;
use spacevault_meter::{self as meter, Meter};
use spacevault_network::{self as net, Event};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A running vault.
pub struct Node {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    network: tokio::task::JoinHandle<()>,
    api: Option<Api>,
}

/// The API's task, and what tells it to stop.
struct Api {
    task: tokio::task::JoinHandle<()>,
    stop: CancellationToken,
}

/// Blocking threads reads of local blobs hold at most at once.
const BLOB_READERS: usize = 4;

/// How long a stopping vault waits for its tasks to end (a blocking
/// thread cannot be cancelled; one writing a large blob ends soon after).
const STOP_LIMIT: Duration = Duration::from_secs(30);

impl Node {
    /// Opens the store, the plots, the API's socket and the network, and
    /// starts the vault on the current tokio runtime. Stop or drop the
    /// vault before the runtime: a timekeeper's loop holds one of the
    /// runtime's blocking threads until the vault stops, and dropping the
    /// runtime waits for its blocking threads.
    pub async fn start(config: NodeConfig) -> Result<Node, StartError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|cause| StartError::DataDir {
            path: config.data_dir.clone(),
            cause,
        })?;
        let mut engine = Engine::open(&config.data_dir.join("vault.redb"), config.spec.clone())?;
        if let Some(cp) = config.checkpoint {
            engine.set_checkpoint(cp);
            match engine.store().canonical(cp.height)? {
                Some(hash) if hash != cp.hash => tracing::warn!(
                    %cp,
                    held = %hex::encode(hash),
                    "this vault's chain holds another block at the checkpoint's height: \
                     it follows the checkpoint's chain once a peer gives it"
                ),
                _ => tracing::info!(%cp, "following only the chain through the checkpoint"),
            }
        }
        // Before the network: a vault whose API cannot listen starts
        // nothing.
        let listener = match config.api {
            Some(addr) => Some(bind_api(addr).await?),
            None => None,
        };
        let tasks = TaskTracker::new();
        let farmer = if config.plots.is_empty() {
            Farmer::empty()
        } else {
            Farmer::open(&config.plots, &config.key.public(), &config.spec)
        }
        .tracked_by(tasks.clone());
        for s in farmer.skipped() {
            tracing::warn!(plot = %s.path.display(), why = %s.why, "plot not farmed");
        }
        let meter = Arc::new(Meter::new(config.trace_crypto));
        let sig_cache = config.verify_cache.then(|| Arc::new(SigCache::default()));
        let mut time =
            crate::time::Time::open(engine.shared_store(), &config.spec, &engine.head())?;
        if let Some(shared) = &config.shared_slot_checks {
            time.share_checks(shared.clone());
        }
        let time = Arc::new(time);
        let signed_dir = match &config.signed_slots {
            Some(dir) => dir.clone(),
            None => config.data_dir.join("signed-slots"),
        };
        let signed = crate::signed::SignedSlots::open(&signed_dir, &config.spec.chain_id())?;
        if signed.last() > time.slot() {
            tracing::info!(
                signed = signed.last(),
                slot = time.slot(),
                "this farmer key signed a block in a later slot than this store reached: \
                 it signs none until its line passes that slot"
            );
        }
        let chain = Arc::new(Chain::new(engine, sig_cache));
        time.follow_heads(chain.heads());
        let (net, events, network) = net::start(network_config(&config, &meter))?;
        let parts = Parts {
            chain,
            time,
            farmer,
            net,
            meter,
            tasks,
            signed,
        };
        let shared = Arc::new(shared_state(&config, parts));
        data::refresh_blob_metrics(&shared);
        let api = listener.map(|listener| {
            *shared.api_addr.lock().unwrap() = listener.local_addr().ok();
            let api_times = config
                .api_times
                .unwrap_or_else(|| ApiTimes::for_spec(&config.spec));
            let stop = CancellationToken::new();
            let task = tokio::spawn(crate::api::serve(
                listener,
                ApiState::of(&shared, api_times, config.api_max_requests),
                config.api_hosts.clone(),
                stop.clone(),
            ));
            Api { task, stop }
        });
        let task = tokio::spawn(run(shared.clone(), events));
        shared.spawn(crate::scrub::run(shared.clone(), config.scrub));
        shared.spawn(crate::audits::run(shared.clone(), config.audits));
        shared.spawn(crate::holders::follow(shared.clone()));
        shared.spawn(crate::disputes::follow(shared.clone()));
        if config.timekeeper {
            crate::slots::keep_time(&shared);
        }
        Ok(Node {
            shared,
            task,
            network,
            api,
        })
    }

    /// The vault's peer id (its farmer key as libp2p names it).
    pub fn peer_id(&self) -> net::Peer {
        self.shared.net.local_peer()
    }

    pub fn farmer_key(&self) -> [u8; 32] {
        self.shared.key.public()
    }

    pub fn api_addr(&self) -> Option<SocketAddr> {
        *self.shared.api_addr.lock().unwrap()
    }

    /// The addresses the network listens on, once it does (waits up to
    /// `limit`).
    pub async fn listen_addrs(&self, limit: Duration) -> Vec<net::Address> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let addrs = self.shared.net.addresses().await;
            if !addrs.is_empty() || tokio::time::Instant::now() >= deadline {
                return addrs;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn height(&self) -> u64 {
        self.shared.chain.height()
    }

    /// The proof of time's last slot checked here.
    pub fn slot(&self) -> u64 {
        self.shared.time.slot()
    }

    pub fn chain_id(&self) -> [u8; 32] {
        self.shared.chain.chain_id()
    }

    /// The plots it farms.
    pub fn plots(&self) -> Vec<crate::farmer::PlotInfo> {
        self.shared.farmer.plots()
    }

    /// The plots it found and does not farm, with the reason.
    pub fn skipped_plots(&self) -> Vec<crate::farmer::Skipped> {
        self.shared.farmer.skipped().to_vec()
    }

    /// Peers connected now.
    pub fn connected_peers(&self) -> i64 {
        self.shared.metrics.peers.get()
    }

    /// The handle of its network: its peers, and peers to block or dial.
    pub fn network(&self) -> &net::Handle {
        &self.shared.net
    }

    /// Its cryptographic operations so far.
    pub fn meter(&self) -> &Meter {
        &self.shared.meter
    }

    /// Its cache of valid signatures, unless it counts every verification.
    pub fn sig_cache(&self) -> Option<&SigCache> {
        self.shared.chain.sig_cache()
    }

    /// Its metrics, as `/metrics` serves them.
    pub fn metrics_text(&self) -> String {
        self.shared.metrics_text()
    }

    /// Stores `blob` with its holders, as a client's PUT does.
    pub async fn put(&self, blob: Vec<u8>) -> Result<data::Put, data::PutError> {
        data::put(&self.shared, blob).await
    }

    /// The blob at `address`, checked against it (from this vault, or
    /// else from a holder), as a client's GET gives it.
    pub async fn read(&self, address: &[u8; 32]) -> Option<Vec<u8>> {
        data::read_verified(&self.shared, address).await
    }

    /// Whether it is catching up from a peer now.
    pub fn is_syncing(&self) -> bool {
        self.shared.is_syncing()
    }

    /// Whether the vault keeps a copy of the blob at `address` in its own
    /// store (not checked against its address: a read does that).
    pub fn keeps_blob(&self, address: &[u8; 32]) -> Result<bool, spacevault_store::StoreError> {
        self.shared.store.has_blob(address)
    }

    /// The addresses of the blobs the vault keeps in its own store.
    pub fn kept_blobs(&self) -> Result<Vec<[u8; 32]>, spacevault_store::StoreError> {
        self.shared.store.blob_addresses()
    }

    /// Whether the vault counts the vault of farmer key `key` alive (it
    /// heard it lately and has not found it gone).
    pub fn counts_alive(&self, key: &[u8; 32]) -> bool {
        self.shared
            .vaults
            .lock()
            .unwrap()
            .newest_heard(key)
            .is_some()
    }

    /// Whether the vault names the vault of farmer key `key` among the
    /// holders of its chain's era (every vault is one in the bootstrap
    /// era).
    pub fn names_holder(&self, key: &[u8; 32]) -> bool {
        self.shared.vaults.lock().unwrap().is_holder(key)
    }

    /// The vault's line of slots: for tests that give it slots they
    /// computed themselves.
    #[cfg(feature = "testing")]
    pub fn time(&self) -> &crate::time::Time {
        &self.shared.time
    }

    /// The engine, locked: for tests that look inside a vault.
    #[cfg(feature = "testing")]
    pub fn engine(&self) -> crate::chain::EngineForTests<'_> {
        self.shared.chain.engine_for_tests()
    }

    /// The chain it follows: for tests.
    #[cfg(feature = "testing")]
    pub fn chain(&self) -> &Arc<Chain> {
        &self.shared.chain
    }

    /// The vaults it knows of, locked: for tests.
    #[cfg(feature = "testing")]
    pub fn vaults(&self) -> std::sync::MutexGuard<'_, Vaults> {
        self.shared.vaults.lock().unwrap()
    }

    /// What its parts share: for tests that hold its engine from a thread
    /// of their own.
    #[cfg(feature = "testing")]
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the vault: its API first (requests under way get a moment to
    /// finish), then its task, which makes the store durable, its other
    /// tasks and its network; returns once all have ended, when nothing
    /// but this handle holds the store.
    pub async fn stop(mut self) {
        if let Some(api) = self.api.take() {
            api.stop.cancel();
            let _ = api.task.await;
        }
        self.shared.shutdown.cancel();
        let _ = (&mut self.task).await;
        self.end().await;
    }

    /// Ends the vault at once, as a killed process would: nothing is
    /// finished or flushed beyond what the store has committed.
    pub async fn kill(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
        if let Some(api) = self.api.take() {
            api.task.abort();
            let _ = api.task.await;
        }
        self.end().await;
    }

    async fn end(&mut self) {
        self.shared.shutdown.cancel();
        self.network.abort();
        let _ = (&mut self.network).await;
        let tasks = &self.shared.tasks;
        tasks.close();
        if tokio::time::timeout(STOP_LIMIT, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                left = tasks.len(),
                "the vault's tasks did not all end in {STOP_LIMIT:?}"
            );
        }
    }
}

impl Drop for Node {
    /// A vault dropped without [`Node::stop`] (a launcher that failed
    /// partway, a test that panicked) still ends: its tasks are told to
    /// stop and its network ends, and the store closes once they have.
    fn drop(&mut self) {
        if let Some(api) = &self.api {
            api.stop.cancel();
        }
        self.shared.shutdown.cancel();
        self.network.abort();
    }
}

/// The API's socket, bound; a warning if it listens beyond this machine.
async fn bind_api(addr: SocketAddr) -> Result<tokio::net::TcpListener, StartError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|cause| StartError::Api { addr, cause })?;
    if !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "the API listens beyond this machine: whoever reaches it can store blobs through this vault and read its status"
        );
    }
    Ok(listener)
}

fn network_config(config: &NodeConfig, meter: &Arc<Meter>) -> net::Config {
    let chain_id = config.spec.chain_id();
    let mut net_config = net::Config::new(config.key.secret(), config.transport, chain_id);
    net_config.listen = config.listen.clone();
    net_config.bootstrap = config.bootstrap.clone();
    net_config.heartbeat = config.heartbeat;
    net_config.links = config.links.clone();
    net_config.limits = config.connection_limits;
    net_config.meter = Some(meter.clone());
    net_config
}

/// What a vault's shared state is made of besides its config.
struct Parts {
    chain: Arc<Chain>,
    time: Arc<crate::time::Time>,
    farmer: Farmer,
    net: net::Handle,
    meter: Arc<Meter>,
    tasks: TaskTracker,
    signed: crate::signed::SignedSlots,
}

fn shared_state(config: &NodeConfig, parts: Parts) -> Shared {
    let metrics = Arc::new(Metrics::new());
    metrics.height.set(parts.chain.height() as i64);
    let store = parts.chain.store().clone();
    let blob_reads = Blocking::new(BLOB_READERS, parts.tasks.clone(), parts.meter.clone());
    Shared {
        chain: parts.chain,
        time: parts.time,
        catching_up_slots: AtomicBool::new(false),
        clock: Default::default(),
        timekeeper: config.timekeeper,
        store,
        tasks: parts.tasks,
        shutdown: CancellationToken::new(),
        sync_peers: Default::default(),
        blob_reads,
        farmer: parts.farmer,
        vaults: Mutex::new(Vaults::new(config.key.public())),
        key: config.key.clone(),
        signed: parts.signed,
        metrics,
        net: parts.net,
        api_addr: Mutex::new(None),
        listen_addrs: Mutex::new(Vec::new()),
        syncing: AtomicBool::new(false),
        behind: Default::default(),
        meter: parts.meter,
        round_trips: Mutex::new(Default::default()),
        store_budgets: Mutex::new(crate::budget::Budgets::new(
            config.store_budget.0,
            config.store_budget.1,
        )),
        blocks_budgets: Mutex::new(crate::budget::Budgets::new(
            config.blocks_budget.0,
            config.blocks_budget.1,
        )),
        scrub: Default::default(),
        scrub_rate: config.scrub.rate,
        disputes: Default::default(),
        held: Default::default(),
    }
}

/// Takes what the network delivers: gossip and requests into the
/// processor's queues, peers' comings and goings at once. It never waits
/// for the engine, so a busy engine costs the queues their oldest work,
/// not the network its progress.
async fn intake(
    shared: Arc<Shared>,
    internal: mpsc::UnboundedSender<Internal>,
    mut events: mpsc::Receiver<Event>,
) {
    let processor = work::processor(&shared, &internal);
    while let Some(event) = events.recv().await {
        on_event(&shared, &internal, &processor, event);
    }
}

/// Farms each new slot, keeps the store durable, announces the vault, asks
/// peers when the head stands still, and so on: the vault's one task.
/// Whatever it asks of the engine runs on a blocking thread.
async fn run(shared: Arc<Shared>, events: mpsc::Receiver<Event>) {
    let (internal_tx, mut internal) = mpsc::unbounded_channel::<Internal>();
    // The intake ends with this task, however that ends.
    let intake_stop = shared.shutdown.child_token();
    let _intake_stop = intake_stop.clone().drop_guard();
    let intake = intake(shared.clone(), internal_tx.clone(), events);
    shared
        .tasks
        .spawn(async move { intake_stop.run_until_cancelled(intake).await });
    let stop = shared.shutdown.clone();
    let mut head = shared.chain.heads();
    let mut slots = shared.time.slots();
    let slot = Duration::from_millis(shared.chain.spec().slot_ms);
    let stall_after = crate::sync::stall_after(shared.chain.spec());
    let mut tick = tokio::time::interval((slot / 4).max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_announce = tokio::time::Instant::now();
    let mut last_progress = tokio::time::Instant::now();
    let started_slot = shared.chain.spec().clock_slot(crate::now_ms());
    // Vaults that share a machine flush at different moments, not all at
    // once every interval.
    let offset = STORE_FLUSH_INTERVAL.mul_f64(shared.key.public()[0] as f64 / 256.0);
    let mut flush =
        tokio::time::interval_at(tokio::time::Instant::now() + offset, STORE_FLUSH_INTERVAL);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            // A new slot: this vault's plots answer its challenge.
            Ok(()) = slots.changed() => {
                let reached = *slots.borrow_and_update();
                crate::blocks::farm(&shared, reached, started_slot);
            }
            _ = flush.tick() => {
                // An fsync off the runtime's threads, which the network and
                // every other vault in the process share.
                let store = shared.store.clone();
                shared.spawn_blocking(move || flush_store(&store));
            }
            _ = tick.tick() => {
                // A head that has stood still for four block
                // intervals: ask peers.
                if last_progress.elapsed() > stall_after {
                    last_progress = tokio::time::Instant::now();
                    spawn_sync(&shared, &internal_tx, None);
                }
                shared.with_chain(|c| c.expire_orphans(crate::now_ms())).await;
                data::housekeeping(&shared);
            }
            _ = tokio::time::sleep_until(next_announce) => {
                meter::with(&shared.meter, || data::announce(&shared));
                let vaults = shared.vaults.lock().unwrap().count();
                next_announce += data::announce_interval(shared.chain.spec(), vaults);
            }
            Ok(()) = head.changed() => last_progress = tokio::time::Instant::now(),
            Some(Internal::Synced) = internal.recv() => {
                last_progress = tokio::time::Instant::now();
            }
        }
    }
    let store = shared.store.clone();
    let _ = shared.spawn_blocking(move || flush_store(&store)).await;
}

/// How long the chain's latest blocks may wait to be made durable: a vault
/// killed meanwhile opens at an earlier head and syncs the rest again.
const STORE_FLUSH_INTERVAL: Duration = Duration::from_secs(2);

// A restarted vault skips the slots its lost writes may have reached
// (`Engine::open`): they are those of twice the flush interval at most.
const _: () = assert!(STORE_FLUSH_INTERVAL.as_millis() * 2 <= crate::engine::UNFLUSHED_MS as u128);

fn flush_store(store: &spacevault_store::Store) {
    if let Err(e) = store.flush() {
        tracing::error!(%e, "could not make the store durable");
    }
}

fn on_event(
    shared: &Arc<Shared>,
    internal: &mpsc::UnboundedSender<Internal>,
    processor: &Processor<Work>,
    event: Event,
) {
    match event {
        Event::Gossip {
            id,
            source,
            topic,
            data,
        } => {
            let work = Work::Gossip {
                id,
                source,
                topic,
                data,
            };
            work::submit(shared, processor, work);
        }
        Event::Request {
            peer,
            request,
            reply,
        } => {
            let work = Work::Request {
                peer,
                request,
                reply,
            };
            work::submit(shared, processor, work);
        }
        Event::PeerUp(peer) => {
            shared.metrics.peers.inc();
            shared.vaults.lock().unwrap().connected(&peer);
            // A new peer may be ahead, in blocks or in slots.
            spawn_sync(shared, internal, Some(peer));
            crate::slots::spawn_catch_up(shared, peer);
        }
        Event::PeerDown { peer, why } => {
            shared.metrics.peers.dec();
            shared.round_trips.lock().unwrap().remove(&peer);
            // A connection closed for want of use says nothing of the
            // vault. One lost may be a vault gone, or the other side's
            // idle timeout: asking it would dial it again, and a network's
            // idle connections all closing at once would redial each
            // other. The vault is gone if a request to it fails, or if it
            // is not heard of for an announcement interval.
            if why == net::Closed::Lost {
                shared.vaults.lock().unwrap().lost(&peer);
            }
        }
        Event::OtherChain { peer, version } => {
            shared.metrics.peers_other_chain.inc();
            tracing::info!(%peer, %version, "disconnected a peer of another chain");
        }
        Event::RoundTrip { peer, rtt } => {
            shared.metrics.round_trip_seconds.observe(rtt.as_secs_f64());
            shared.round_trips.lock().unwrap().insert(peer, rtt);
        }
        Event::Listening(addr) => {
            tracing::info!(%addr, "listening");
            shared.listen_addrs.lock().unwrap().push(addr);
        }
    }
}
