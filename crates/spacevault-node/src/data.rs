//! Clients' immutable blobs: which vaults keep one (the R whose farmer keys
//! are nearest its address by XOR, every vault when there are fewer), how a
//! PUT gathers their receipts, how a GET finds a copy, and how copies are
//! made again when a vault leaves or a local copy is found damaged.
//!
//! A blob read back from the store is hashed again every time before it is
//! served: nothing remembers that a copy was good.

use crate::node::Shared;
use crate::replication::{nearest, Pass, Passes, View};
use spacevault_chain::meter::{self, Op};
use spacevault_chain::{blob_address, Announce, Receipt, Rejection};
use spacevault_network::{self as net, Request, Response, Topic};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a vault says it is alive: every two slots in a small network,
/// and less often as it grows, so that the network carries a few
/// announcements a second whatever its size (each reaches every vault).
pub fn announce_interval(spec: &spacevault_chain::ChainSpec, vaults: usize) -> Duration {
    let by_slot = (spec.slot_ms * 2).clamp(200, 5000);
    let by_size = 200 * vaults as u64;
    Duration::from_millis(by_slot.max(by_size).min(30_000))
}

/// Vaults a vault keeps track of at most: announcements cost nothing to
/// make, so the table is bounded (a few hundred bytes a vault). A new vault
/// beyond it is not taken until others leave.
pub const MAX_KNOWN_VAULTS: usize = 65_536;

/// Announcements missed before a vault counts as gone.
const MISSED_TO_LEAVE: u32 = 3;

/// A vault this one knows of.
#[derive(Clone, Debug)]
struct Known {
    peer: net::Peer,
    last_seen: Instant,
    /// The time of its newest announcement heard (its clock, Unix ms).
    newest_ms: u64,
    /// When this vault's last connection with it was lost (Unix ms), until
    /// it is heard of again.
    lost_ms: Option<u64>,
}

/// The vaults alive as far as this one knows: itself, and every vault whose
/// announcement it heard lately.
pub struct Vaults {
    own: [u8; 32],
    known: HashMap<[u8; 32], Known>,
    /// Changes every time the set of vaults alive does.
    generation: u64,
    /// The passes that send local blobs to their new holders.
    passes: Passes,
    /// Vaults known at most, besides this one.
    max_known: usize,
    /// The newest announcement's time of each vault that left (Unix ms),
    /// while an announcement that old could still be news: a late or
    /// replayed one must not bring it back.
    departed: HashMap<[u8; 32], u64>,
}

impl Vaults {
    pub fn new(own: [u8; 32]) -> Vaults {
        Vaults {
            own,
            known: HashMap::new(),
            generation: 1,
            passes: Passes::default(),
            departed: HashMap::new(),
            max_known: MAX_KNOWN_VAULTS,
        }
    }

    /// An announcement made at `time_ms`: an older one than the loss of
    /// the connection (relayed late) does not prove the vault alive. False
    /// when the vault is new and [`MAX_KNOWN_VAULTS`] are known already.
    fn heard(&mut self, key: [u8; 32], peer: net::Peer, time_ms: u64) -> bool {
        if key == self.own {
            return true;
        }
        if !self.known.contains_key(&key) && self.known.len() >= self.max_known {
            return false;
        }
        let lost_ms = self
            .known
            .get(&key)
            .and_then(|k| k.lost_ms)
            .filter(|&lost| time_ms <= lost);
        self.departed.remove(&key);
        let new = !self.known.contains_key(&key);
        self.known.insert(
            key,
            Known {
                peer,
                last_seen: Instant::now(),
                newest_ms: time_ms,
                lost_ms,
            },
        );
        if new {
            self.generation += 1;
        }
        true
    }

    /// Whether an announcement made at `time_ms` is news at `now_ms`: made
    /// after the newest heard from that vault, while it was known or since
    /// it left (a replay is not), within the drift a block's time is
    /// allowed ahead of `now_ms`, and no older than `max_age`, the time a
    /// vault unheard still counts as alive (older, it says nothing of the
    /// vault now).
    fn is_news(
        &self,
        key: &[u8; 32],
        time_ms: u64,
        now_ms: u64,
        max_age: Duration,
        max_drift_ms: u64,
    ) -> Result<(), Rejection> {
        if time_ms > now_ms.saturating_add(max_drift_ms) {
            return Err(Rejection::Future {
                got: time_ms,
                now: now_ms,
            });
        }
        let oldest = now_ms.saturating_sub(max_age.as_millis() as u64);
        let newest = self
            .known
            .get(key)
            .map(|k| k.newest_ms)
            .or_else(|| self.departed.get(key).copied())
            .unwrap_or(0);
        if time_ms < oldest {
            return Err(Rejection::Stale {
                got: time_ms,
                oldest,
            });
        }
        if time_ms <= newest {
            return Err(Rejection::Replayed {
                got: time_ms,
                newest,
            });
        }
        Ok(())
    }

    /// Forgets vaults not heard for a while, and vaults lost and not heard
    /// of for an interval since.
    fn expire(&mut self, interval: Duration) {
        let limit = interval * MISSED_TO_LEAVE;
        let now = crate::now_ms();
        let lost_limit = interval.as_millis() as u64;
        // What left long enough ago that its announcements are stale anyway.
        self.departed
            .retain(|_, newest| now.saturating_sub(*newest) <= limit.as_millis() as u64);
        let before = self.known.len();
        let departed = &mut self.departed;
        self.known.retain(|key, k| {
            let stays = k.last_seen.elapsed() < limit
                && k.lost_ms.is_none_or(|t| now.saturating_sub(t) < lost_limit);
            if !stays {
                departed.insert(*key, k.newest_ms);
            }
            stays
        });
        if self.known.len() != before {
            self.generation += 1;
        }
    }

    /// The last connection with `peer` was lost: not proof that it left
    /// (the other side's idle timeout closes connections too), so it is
    /// gone only if not heard of for an interval, or at once if a request
    /// to it fails ([`Vaults::unreachable`]).
    pub fn lost(&mut self, peer: &net::Peer) {
        let now = crate::now_ms();
        for k in self.known.values_mut().filter(|k| k.peer == *peer) {
            k.lost_ms.get_or_insert(now);
        }
    }

    /// A connection with `peer` is up: it is alive.
    pub fn connected(&mut self, peer: &net::Peer) {
        for k in self.known.values_mut().filter(|k| k.peer == *peer) {
            k.lost_ms = None;
        }
    }

    /// A request to `peer` failed: if its connection was lost too, it is
    /// gone until heard again.
    pub fn unreachable(&mut self, peer: &net::Peer) {
        let before = self.known.len();
        let departed = &mut self.departed;
        self.known.retain(|key, k| {
            let stays = k.peer != *peer || k.lost_ms.is_none();
            if !stays {
                departed.insert(*key, k.newest_ms);
            }
            stays
        });
        if self.known.len() != before {
            self.generation += 1;
        }
    }

    /// The time of the newest announcement heard from `key` while it is
    /// known.
    pub fn newest_heard(&self, key: &[u8; 32]) -> Option<u64> {
        self.known.get(key).map(|k| k.newest_ms)
    }

    /// Vaults alive, this one included.
    pub fn count(&self) -> usize {
        self.known.len() + 1
    }

    /// The `r` vaults nearest `address` by XOR of their farmer keys.
    pub fn holders(&self, address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
        nearest(&self.view(), address, r)
    }

    /// Every vault alive, this one included.
    fn view(&self) -> View {
        view_of(&self.known, self.own)
    }

    fn peer(&self, key: &[u8; 32]) -> Option<net::Peer> {
        self.known.get(key).map(|k| k.peer)
    }
}

/// Every vault in `known`, and `own`.
fn view_of(known: &HashMap<[u8; 32], Known>, own: [u8; 32]) -> View {
    known.keys().copied().chain([own]).collect()
}

/// Publishes this vault's signed announcement: where it listens, and the
/// time (which also makes each announcement a message of its own, gossip
/// ids being content hashes).
pub fn announce(shared: &Arc<Shared>) {
    let addrs: Vec<Vec<u8>> = shared
        .listen_addrs
        .lock()
        .unwrap()
        .iter()
        .take(spacevault_chain::types::MAX_ANNOUNCED_ADDRESSES)
        .map(|a| a.to_vec())
        .collect();
    let a = Announce::signed(&shared.key, &shared.chain_id, crate::now_ms(), addrs);
    shared.net.publish(Topic::Vaults, a.encode());
}

/// Another vault's announcement: refused unless it is signed by the vault,
/// news ([`Vaults::is_news`]: an old one replayed would keep a vault that
/// left "alive"), and every address parses.
pub fn on_announce(shared: &Arc<Shared>, data: &[u8]) -> Result<(), Rejection> {
    let a = Announce::decode(data).map_err(|e| Rejection::Malformed(e.to_string()))?;
    if !a.signature_ok(&shared.chain_id) {
        return Err(Rejection::BadSignature);
    }
    let peer = net::peer_of(&a.vault).ok_or(Rejection::BadSignature)?;
    {
        let vaults = shared.vaults.lock().unwrap();
        let max_age = announce_interval(&shared.spec, vaults.count()) * MISSED_TO_LEAVE;
        let drift = spacevault_chain::validate::max_drift_ms(&shared.spec);
        vaults.is_news(&a.vault, a.time_ms, crate::now_ms(), max_age, drift)?;
    }
    let addresses = a
        .addresses
        .iter()
        .map(|bytes| net::Address::try_from(bytes.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| Rejection::Malformed("an address that does not parse".into()))?;
    let taken = shared
        .vaults
        .lock()
        .unwrap()
        .heard(a.vault, peer, a.time_ms);
    if !taken {
        return Err(Rejection::Unable {
            what: "vaults_full",
            why: format!("{MAX_KNOWN_VAULTS} vaults are known already"),
        });
    }
    for addr in addresses {
        shared.net.add_address(peer, addr);
    }
    Ok(())
}

/// Timers' work: forget silent vaults, and when the set of vaults changed
/// and no replication pass runs, start one.
pub fn housekeeping(shared: &Arc<Shared>) {
    let (pass, count) = {
        let mut v = shared.vaults.lock().unwrap();
        let interval = announce_interval(&shared.spec, v.count());
        v.expire(interval);
        let count = v.count();
        // The view is built only when a pass starts: it lists every vault.
        let v = &mut *v;
        let (known, own) = (&v.known, v.own);
        let view = || view_of(known, own);
        (v.passes.start(v.generation, Instant::now(), view), count)
    };
    shared.metrics.vaults.set(count as i64);
    if let Some(pass) = pass {
        let shared = shared.clone();
        tokio::spawn(async move {
            // Ends the pass however the task ends: a pass that never
            // ended would stop every later one.
            let mut running = Running {
                shared: &shared,
                pass: Some(pass),
                complete: false,
            };
            let pass = running.pass.as_ref().expect("just set");
            running.complete = replicate(&shared, pass).await;
        });
    }
}

struct Running<'a> {
    shared: &'a Shared,
    pass: Option<Pass>,
    complete: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(pass) = self.pass.take() {
            let mut v = self.shared.vaults.lock().unwrap();
            v.passes.finish(pass, self.complete, Instant::now());
        }
    }
}

/// Sends each local blob to its holders in the pass's view (they keep it
/// once; a copy already held is kept again at no cost). True when every
/// copy was taken.
async fn replicate(shared: &Arc<Shared>, pass: &Pass) -> bool {
    let Ok(addresses) = shared.engine().store().blob_addresses() else {
        return false;
    };
    let r = shared.spec.replication as usize;
    let own = shared.key.public();
    let mut complete = true;
    for address in addresses {
        let targets: Vec<net::Peer> = {
            let v = shared.vaults.lock().unwrap();
            nearest(&pass.now, &address, r)
                .iter()
                .filter(|k| **k != own)
                .filter_map(|k| v.peer(k))
                .collect()
        };
        if targets.is_empty() {
            continue;
        }
        let Some(blob) = read_verified(shared, &address).await else {
            continue;
        };
        for peer in targets {
            let request = Request::Store { blob: blob.clone() };
            match request_vault(shared, peer, request).await {
                Ok(Response::Stored(_)) => {
                    shared.metrics.blob_copies_pushed.inc();
                }
                _ => complete = false,
            }
        }
    }
    complete
}

/// A blob's address, counted in this vault's meter as `op` (data as it
/// arrives, or read back from disk).
fn address_of(shared: &Shared, op: Op, blob: &[u8]) -> [u8; 32] {
    meter::with(&shared.meter, || meter::timed(op, || blob_address(blob)))
}

/// A request to another vault; one that fails tells the vault table.
async fn request_vault(
    shared: &Shared,
    peer: net::Peer,
    request: Request,
) -> Result<Response, net::RequestError> {
    let answer = shared.net.request(peer, request).await;
    if answer.is_err() {
        shared.vaults.lock().unwrap().unreachable(&peer);
    }
    answer
}

pub fn refresh_blob_metrics(shared: &Shared) {
    if let Ok((count, bytes)) = shared.engine().store().blob_stats() {
        shared.metrics.blobs_stored.set(count as i64);
        shared.metrics.blob_bytes_stored.set(bytes as i64);
    }
}

/// Keeps a blob for another vault and signs a receipt, if this vault is
/// among its holders as this vault sees them, give or take
/// [`HOLDER_SLACK`] (any peer could otherwise make it keep anything), and
/// the peer has the allowance for it ([`crate::budget`]).
pub async fn store_request(shared: &Arc<Shared>, peer: net::Peer, blob: Vec<u8>) -> Response {
    if blob.len() > shared.spec.max_blob_bytes as usize {
        return Response::Refused("blob_too_large".into());
    }
    let cost = crate::budget::store_cost(blob.len());
    let allowed = shared
        .store_budgets
        .lock()
        .unwrap()
        .take(&peer, cost, Instant::now());
    if !allowed {
        return Response::Refused("over_budget".into());
    }
    let address = address_of(shared, Op::HashData, &blob);
    if !holds_with_slack(shared, &address) {
        return Response::Refused("not_holder".into());
    }
    match store_local(shared, blob, address).await {
        Ok(receipt) => Response::Stored(receipt),
        Err(why) => Response::Refused(why),
    }
}

/// Places beyond the replication factor within which a vault still takes a
/// blob to keep: the vault that asks may know vaults this one does not
/// (or not yet, or no longer), so their rankings of the nearest differ by
/// a few places while announcements spread.
pub const HOLDER_SLACK: usize = 2;

/// Whether this vault is within the `replication + HOLDER_SLACK` vaults
/// nearest `address` that it knows of.
fn holds_with_slack(shared: &Shared, address: &[u8; 32]) -> bool {
    let places = shared.spec.replication as usize + HOLDER_SLACK;
    let own = shared.key.public();
    shared
        .vaults
        .lock()
        .unwrap()
        .holders(address, places)
        .contains(&own)
}

/// Keeps a blob (already hashed to `address` and within the size limit)
/// durably, on a blocking thread: an fsync on one of the runtime's
/// workers, which every vault of a process shares, would hold up every
/// vault's gossip for its duration.
async fn store_local(
    shared: &Arc<Shared>,
    blob: Vec<u8>,
    address: [u8; 32],
) -> Result<Receipt, String> {
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        meter::with(&shared.meter, || {
            store_local_metered(&shared, &blob, address)
        })
    })
    .await
    .map_err(|e| format!("the store's task failed: {e}"))?
}

fn store_local_metered(shared: &Shared, blob: &[u8], address: [u8; 32]) -> Result<Receipt, String> {
    let fresh = {
        // The store, not the engine: the vault goes on while this writes.
        let store = shared.engine().shared_store();
        let present = store.get_blob(&address).map_err(|e| e.to_string())?;
        // A damaged copy is replaced by the good one offered.
        let good =
            present.is_some_and(|b| meter::timed(Op::HashReread, || blob_address(&b)) == address);
        if !good {
            store.put_blob(&address, blob).map_err(|e| e.to_string())?;
        }
        !good
    };
    if fresh {
        refresh_blob_metrics(shared);
    }
    Ok(Receipt::sign(&shared.key, &shared.chain_id, &address))
}

/// The local copy of a blob, if it hashes to its address.
pub(crate) fn read_local(shared: &Shared, address: &[u8; 32]) -> Result<Option<Vec<u8>>, ()> {
    let store = shared.engine().shared_store();
    let bytes = store.get_blob(address).map_err(|e| {
        if let spacevault_store::StoreError::BlobLost(_) = e {
            shared.metrics.blob_reverify_failures.inc();
            tracing::warn!(address = %hex::encode(address), "a stored blob's file is gone");
        }
    })?;
    match bytes {
        None => Ok(None),
        Some(b) if address_of(shared, Op::HashReread, &b) == *address => Ok(Some(b)),
        Some(_) => {
            shared.metrics.blob_reverify_failures.inc();
            tracing::warn!(address = %hex::encode(address), "a stored blob does not hash to its address");
            Err(())
        }
    }
}

/// Answers another vault's fetch from the local copy only.
pub fn fetch_request(shared: &Arc<Shared>, address: &[u8; 32]) -> Response {
    match read_local(shared, address) {
        Ok(Some(b)) => Response::Blob(b),
        Ok(None) => Response::NotFound,
        Err(()) => {
            // Damaged here: repaired in the background, not served.
            let shared = shared.clone();
            let address = *address;
            tokio::spawn(async move { read_verified(&shared, &address).await });
            Response::NotFound
        }
    }
}

/// A blob checked against its address: the local copy, or else a copy from
/// a holder; a damaged local copy is replaced by the good one.
pub async fn read_verified(shared: &Arc<Shared>, address: &[u8; 32]) -> Option<Vec<u8>> {
    let local = read_local(shared, address);
    if let Ok(Some(b)) = local {
        return Some(b);
    }
    let damaged = local.is_err();
    let blob = fetch_remote(shared, address).await?;
    if damaged {
        let put = shared.engine().store().put_blob(address, &blob);
        if put.is_ok() {
            shared.metrics.blob_repairs.inc();
            tracing::info!(address = %hex::encode(address), "repaired a damaged blob from another vault");
        }
    }
    Some(blob)
}

/// A copy from the vaults that should hold it, nearest first, then from
/// every other vault known.
async fn fetch_remote(shared: &Arc<Shared>, address: &[u8; 32]) -> Option<Vec<u8>> {
    let peers: Vec<net::Peer> = {
        let v = shared.vaults.lock().unwrap();
        v.holders(address, fetch_asks(shared.spec.replication))
            .into_iter()
            .filter_map(|k| v.peer(&k))
            .collect()
    };
    for peer in peers {
        if let Ok(Response::Blob(b)) =
            request_vault(shared, peer, Request::Fetch { address: *address }).await
        {
            if address_of(shared, Op::HashData, &b) == *address {
                return Some(b);
            }
            shared.metrics.rejected("fetch", "wrong_blob");
        }
    }
    None
}

/// Vaults a GET asks for a blob this vault lacks, nearest first, at most:
/// the holders, the vaults that keep copies by the holder check's slack,
/// and a few past them for views that differ more. A GET of an address
/// nobody holds costs this many requests, not one to every vault known.
pub fn fetch_asks(replication: u32) -> usize {
    replication as usize + 2 * HOLDER_SLACK + 4
}

/// A PUT's result.
#[derive(Clone, Debug)]
pub struct Put {
    pub address: [u8; 32],
    pub receipts: Vec<Receipt>,
    /// Copies asked for: the replication factor, or every vault when there
    /// are fewer.
    pub wanted: usize,
}

/// Why a PUT failed.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    #[error("the blob is {got} bytes, more than the {max} allowed")]
    TooLarge { got: usize, max: usize },
    #[error("only {got} of {wanted} vaults stored the blob")]
    TooFewCopies { got: usize, wanted: usize, put: Put },
}

/// Stores a blob on its R holders and gathers their receipts.
pub async fn put(shared: &Arc<Shared>, blob: Vec<u8>) -> Result<Put, PutError> {
    let max = shared.spec.max_blob_bytes as usize;
    if blob.len() > max {
        return Err(PutError::TooLarge {
            got: blob.len(),
            max,
        });
    }
    let address = address_of(shared, Op::HashData, &blob);
    let (holders, peers): (Vec<[u8; 32]>, BTreeMap<[u8; 32], net::Peer>) = {
        let v = shared.vaults.lock().unwrap();
        let holders = v.holders(&address, shared.spec.replication as usize);
        let peers = holders
            .iter()
            .filter_map(|k| Some((*k, v.peer(k)?)))
            .collect();
        (holders, peers)
    };
    let own = shared.key.public();
    let mut asks = Vec::new();
    for holder in &holders {
        if *holder == own {
            continue;
        }
        let Some(&peer) = peers.get(holder) else {
            continue;
        };
        let shared = shared.clone();
        let blob = blob.clone();
        asks.push(tokio::spawn(async move {
            request_vault(&shared, peer, Request::Store { blob }).await
        }));
    }
    let mut receipts = Vec::new();
    if holders.contains(&own) {
        if let Ok(r) = store_local(shared, blob.clone(), address).await {
            receipts.push(r);
        }
    }
    for ask in asks {
        if let Ok(Ok(Response::Stored(receipt))) = ask.await {
            let from_holder = holders.contains(&receipt.holder);
            let signed = meter::with(&shared.meter, || receipt.verify(&shared.chain_id));
            if receipt.address == address && from_holder && signed {
                receipts.push(receipt);
            } else {
                shared.metrics.rejected("store", "bad_receipt");
            }
        }
    }
    let put = Put {
        address,
        receipts,
        wanted: holders.len(),
    };
    if put.receipts.len() < put.wanted {
        return Err(PutError::TooFewCopies {
            got: put.receipts.len(),
            wanted: put.wanted,
            put,
        });
    }
    Ok(put)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_the_nearest_by_xor_including_this_vault() {
        let peer =
            net::peer_of(&spacevault_chain::Keypair::from_secret(&[1; 32]).public()).unwrap();
        let mut v = Vaults::new([0x00; 32]);
        for k in [0x10u8, 0x20, 0x30, 0x40, 0x80] {
            assert!(v.heard([k; 32], peer, 1));
        }
        assert_eq!(v.count(), 6);
        assert_eq!(v.holders(&[0x21; 32], 2), vec![[0x20; 32], [0x30; 32]]);
        assert_eq!(v.holders(&[0x01; 32], 1), vec![[0x00; 32]]);
        assert_eq!(v.holders(&[0xff; 32], 10).len(), 6);
        let g = v.generation;
        v.lost(&peer);
        v.unreachable(&peer);
        assert_eq!(v.count(), 1);
        assert!(v.generation > g);
    }

    #[test]
    fn a_lost_connection_alone_or_a_failed_request_alone_keeps_a_vault() {
        let key = |i: u8| spacevault_chain::Keypair::from_secret(&[i; 32]).public();
        let (a, b) = (key(1), key(2));
        let (pa, pb) = (net::peer_of(&a).unwrap(), net::peer_of(&b).unwrap());
        let mut v = Vaults::new([0x00; 32]);
        v.heard(a, pa, 1);
        v.heard(b, pb, 1);
        // A request that failed while connected (a timeout under load).
        v.unreachable(&pa);
        assert_eq!(v.count(), 3);
        // A lost connection, then word from the vault made before it.
        v.lost(&pb);
        v.heard(b, pb, 1);
        v.expire(Duration::ZERO);
        assert_eq!(
            v.count(),
            1,
            "a lost vault not heard since is gone after an interval"
        );
        // Lost, then heard anew, then a failed request: alive.
        let mut v = Vaults::new([0x00; 32]);
        v.heard(a, pa, 1);
        v.lost(&pa);
        v.heard(a, pa, crate::now_ms() + 1);
        v.unreachable(&pa);
        assert_eq!(v.count(), 2);
        // Lost, then reconnected: alive.
        v.lost(&pa);
        v.connected(&pa);
        v.unreachable(&pa);
        assert_eq!(v.count(), 2);
        // Lost, and a request fails: gone at once.
        v.lost(&pa);
        v.unreachable(&pa);
        assert_eq!(v.count(), 1);
    }

    #[test]
    fn the_vaults_known_are_bounded_and_a_known_one_is_always_heard() {
        let key = |i: u8| spacevault_chain::Keypair::from_secret(&[i; 32]).public();
        let mut v = Vaults::new([0x00; 32]);
        v.max_known = 2;
        let (a, b, c) = (key(1), key(2), key(3));
        let peer = |k: &[u8; 32]| net::peer_of(k).unwrap();
        assert!(v.heard(a, peer(&a), 1));
        assert!(v.heard(b, peer(&b), 1));
        assert!(!v.heard(c, peer(&c), 1), "a third is one too many");
        assert_eq!(v.count(), 3, "two and this vault");
        assert!(v.heard(a, peer(&a), 2), "a known vault heard again");
        assert!(v.heard([0x00; 32], peer(&a), 2), "this vault itself");
        v.lost(&peer(&b));
        v.unreachable(&peer(&b));
        assert!(v.heard(c, peer(&c), 1), "room again once one left");
    }

    #[test]
    fn an_announcement_is_news_only_once_and_only_while_fresh() {
        let key = spacevault_chain::Keypair::from_secret(&[1; 32]).public();
        let peer = net::peer_of(&key).unwrap();
        let mut v = Vaults::new([0x00; 32]);
        let age = Duration::from_secs(6);
        let now = 1_000_000;
        let news = |v: &Vaults, t| v.is_news(&key, t, now, age, 50);
        assert_eq!(news(&v, now), Ok(()));
        assert_eq!(news(&v, now + 50), Ok(()), "the drift allowed");
        assert_eq!(
            news(&v, now + 51),
            Err(Rejection::Future { got: now + 51, now })
        );
        assert_eq!(news(&v, now - 6000), Ok(()), "as old as may be");
        assert_eq!(
            news(&v, now - 6001),
            Err(Rejection::Stale {
                got: now - 6001,
                oldest: now - 6000
            })
        );
        v.heard(key, peer, now - 10);
        assert_eq!(
            news(&v, now - 10),
            Err(Rejection::Replayed {
                got: now - 10,
                newest: now - 10
            }),
            "a replay"
        );
        assert!(news(&v, now - 11).is_err(), "older than the newest");
        assert_eq!(news(&v, now - 9), Ok(()));
        // Gone, its last word replayed is no news either.
        v.lost(&peer);
        v.unreachable(&peer);
        assert_eq!(v.count(), 1);
        assert!(news(&v, now - 10).is_err(), "a replay after it left");
        assert_eq!(news(&v, now - 9), Ok(()));
    }
}
