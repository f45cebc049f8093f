//! Clients' immutable blobs: which vaults keep one (of the era's holders
//! alive, the R whose places are nearest its address by XOR, every one
//! when there are fewer: [`Vaults::holders`]), how a
//! PUT gathers their receipts, how a GET finds a copy, and how copies are
//! made again when a vault leaves or a local copy is found damaged.
//!
//! A blob read back from the store is hashed again every time before it is
//! served: nothing remembers that a copy was good.

use crate::replication::Pass;
use crate::shared::Shared;
use crate::vaults::MISSED_TO_LEAVE;
pub use crate::vaults::{Vaults, MAX_KNOWN_VAULTS};
use spacevault_chain::{blob_address, Announce, Receipt, Rejection};
use spacevault_meter::{self as meter, Op};
use spacevault_network::{self as net, Request, Response, Topic};
use std::collections::{BTreeMap, HashSet};
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
    let a = Announce::signed(
        &shared.key,
        &shared.chain.chain_id(),
        crate::now_ms(),
        addrs,
    );
    shared.net.publish(Topic::Vaults, a.encode());
}

/// Another vault's announcement: refused unless it is signed by the vault,
/// news (`Vaults::is_news`: an old one replayed would keep a vault that
/// left "alive"), and every address parses.
pub fn on_announce(shared: &Arc<Shared>, data: &[u8]) -> Result<(), Rejection> {
    let a = Announce::decode(data).map_err(|e| Rejection::Malformed(e.to_string()))?;
    if !a.signature_ok(&shared.chain.chain_id()) {
        return Err(Rejection::BadSignature);
    }
    let peer = net::peer_of(&a.vault).ok_or(Rejection::BadSignature)?;
    {
        let vaults = shared.vaults.lock().unwrap();
        let max_age = announce_interval(shared.chain.spec(), vaults.count()) * MISSED_TO_LEAVE;
        let drift = spacevault_chain::validate::CLOCK_ALLOWANCE_MS;
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
        let interval = announce_interval(shared.chain.spec(), v.count());
        v.expire(interval);
        let count = v.count();
        (v.start_pass(Instant::now()), count)
    };
    shared.metrics.vaults.set(count as i64);
    if let Some(pass) = pass {
        let task = shared.clone();
        shared.spawn(async move {
            let shared = task;
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
            v.finish_pass(pass, self.complete, Instant::now());
        }
    }
}

/// Sends each local blob to the holders the pass names for it
/// ([`Pass::targets`]: a copy already held is kept again at no cost). True
/// when every copy was taken.
async fn replicate(shared: &Arc<Shared>, pass: &Pass) -> bool {
    // The plan (every blob's targets: two rankings of the vaults a blob)
    // on a blocking thread: a pass over a store of many blobs is seconds
    // of work, which on the runtime's threads held up gossip.
    let store = shared.store.clone();
    let (planned, r, own) = (
        pass.clone(),
        shared.chain.spec().replication as usize,
        shared.key.public(),
    );
    let plan = shared.spawn_blocking(move || {
        let addresses = store.blob_addresses()?;
        Ok::<_, spacevault_store::StoreError>(
            addresses
                .into_iter()
                .filter_map(|address| {
                    let mut targets = planned.targets(&address, r);
                    targets.retain(|k| *k != own);
                    (!targets.is_empty()).then_some((address, targets))
                })
                .collect::<Vec<_>>(),
        )
    });
    let Ok(Ok(plan)) = plan.await else {
        return false;
    };
    let mut complete = true;
    // Holders that stayed over this vault's allowance for a whole
    // patience, or did not answer: the rest of the pass skips them (its
    // retry sends their copies), so that one slow or hostile holder costs
    // a pass one patience, not one a blob.
    let mut skipped: HashSet<net::Peer> = HashSet::new();
    for (address, targets) in plan {
        let targets: Vec<([u8; 32], net::Peer)> = {
            let v = shared.vaults.lock().unwrap();
            targets
                .iter()
                .filter_map(|k| Some((*k, v.peer(k)?)))
                .collect()
        };
        if targets.is_empty() {
            continue;
        }
        if targets.iter().all(|(_, p)| skipped.contains(p)) {
            complete = false;
            continue;
        }
        let Some(blob) = read_verified(shared, &address).await else {
            continue;
        };
        for (key, peer) in targets {
            if skipped.contains(&peer) {
                complete = false;
                continue;
            }
            // A holder that spent this vault's allowance takes the copy
            // once it grows back (8 MiB/s), sooner than the pass's retry.
            match store_patiently(shared, peer, blob.clone()).await {
                Ok(Response::Stored(receipt)) => {
                    keep_receipt(shared, &key, &receipt);
                    shared.metrics.blob_copies_pushed.inc();
                }
                answer => {
                    complete = false;
                    let spent =
                        matches!(&answer, Ok(Response::Refused(why)) if why == "over_budget");
                    if spent || answer.is_err() {
                        skipped.insert(peer);
                    }
                }
            }
        }
    }
    complete
}

/// Keeps `receipt` to challenge its holder with, if `asked` signed it.
pub(crate) fn keep_receipt(shared: &Shared, asked: &[u8; 32], receipt: &spacevault_chain::Receipt) {
    let chain_id = shared.chain.chain_id();
    meter::with(&shared.meter, || {
        shared
            .disputes
            .lock()
            .unwrap()
            .keep_if_signed(asked, receipt, &chain_id)
    });
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
    if let Ok((count, bytes)) = shared.store.blob_stats() {
        shared.metrics.blobs_stored.set(count as i64);
        shared.metrics.blob_bytes_stored.set(bytes as i64);
    }
}

/// Keeps a blob for another vault and signs a receipt, if this vault is
/// among its holders as this vault sees them, give or take
/// [`HOLDER_SLACK`] (any peer could otherwise make it keep anything), and
/// the peer has the allowance for it ([`crate::budget`]).
pub async fn store_request(shared: &Arc<Shared>, peer: net::Peer, blob: Vec<u8>) -> Response {
    if blob.len() > shared.chain.spec().max_blob_bytes as usize {
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

/// Whether this vault is within the `replication + HOLDER_SLACK` holders
/// nearest `address` that it knows of, now or before the holders last
/// changed ([`Vaults::holds`]).
fn holds_with_slack(shared: &Shared, address: &[u8; 32]) -> bool {
    let places = shared.chain.spec().replication as usize + HOLDER_SLACK;
    shared.vaults.lock().unwrap().holds(address, places)
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
    let task = shared.clone();
    shared
        .spawn_blocking(move || {
            let shared = task;
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
        let store = shared.store.clone();
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
        shared.vaults.lock().unwrap().stored(address);
        refresh_blob_metrics(shared);
    }
    let era = shared.vaults.lock().unwrap().era();
    Ok(Receipt::sign(
        &shared.key,
        &shared.chain.chain_id(),
        era,
        &address,
    ))
}

/// The local copy of a blob, if it hashes to its address.
pub(crate) fn read_local(shared: &Shared, address: &[u8; 32]) -> Result<Option<Vec<u8>>, ()> {
    let store = shared.store.clone();
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
            let task = shared.clone();
            let address = *address;
            shared.spawn(async move { read_verified(&task, &address).await });
            Response::NotFound
        }
    }
}

/// Answers an audit from the local copy only: the chunk asked for, with
/// the tree nodes that tie it to the address ([`spacevault_chain::audit`]).
///
/// An audit costs its asker little and this vault a blob's read and two
/// hashes of it: each is charged to the asking peer's allowance for
/// blocks ([`crate::budget`]) at the chain's largest blob.
pub fn audit_request(
    shared: &Arc<Shared>,
    peer: net::Peer,
    address: &[u8; 32],
    chunk: u64,
) -> Response {
    let cost = u64::from(shared.chain.spec().max_blob_bytes);
    let allowed = shared
        .blocks_budgets
        .lock()
        .unwrap()
        .take(&peer, cost, Instant::now());
    if !allowed {
        return Response::Refused("over_budget".into());
    }
    match fetch_request(shared, address) {
        Response::Blob(blob) => match audit_proof(shared, address, &blob, chunk) {
            Ok(slice) => {
                shared.metrics.audit_answers.inc();
                shared.metrics.audit_answer_bytes.inc_by(slice.len() as u64);
                Response::Slice(slice)
            }
            Err(_) => Response::Refused("no_such_chunk".into()),
        },
        other => other,
    }
}

/// The meter's fingerprint of an audit of chunk `chunk` of the blob at
/// `address`, for its proof and its check alike: the same blob and chunk
/// asked again is the same work.
pub(crate) fn audit_input(address: &[u8; 32], chunk: u64) -> u64 {
    spacevault_meter::fingerprint_of(address)
        .wrapping_add(chunk)
        .max(1)
}

/// The slice proving chunk `chunk` of `blob`, its hashing counted by the
/// meter.
fn audit_proof(
    shared: &Shared,
    address: &[u8; 32],
    blob: &[u8],
    chunk: u64,
) -> Result<Vec<u8>, spacevault_chain::audit::AuditError> {
    let input = audit_input(address, chunk);
    meter::with(&shared.meter, || {
        meter::timed_on(Op::HashAuditProof, input, || {
            spacevault_chain::audit::prove(blob, chunk)
        })
    })
}

/// Blobs put and read, as the API reaches them.
#[derive(Clone)]
pub struct Blobs {
    shared: Arc<Shared>,
}

impl Blobs {
    pub(crate) fn new(shared: Arc<Shared>) -> Blobs {
        Blobs { shared }
    }

    /// Stores `blob` with its holders ([`put`]).
    pub async fn put(&self, blob: Vec<u8>) -> Result<Put, PutError> {
        put(&self.shared, blob).await
    }

    /// The blob at `address`, checked against it ([`read_verified`]).
    pub async fn read(&self, address: &[u8; 32]) -> Option<Vec<u8>> {
        read_verified(&self.shared, address).await
    }
}

/// A blob checked against its address: the local copy, or else a copy from
/// a holder; a damaged local copy is replaced by the good one.
pub async fn read_verified(shared: &Arc<Shared>, address: &[u8; 32]) -> Option<Vec<u8>> {
    // The read and its re-hash, and a repair's write, off the runtime's
    // threads.
    let local = {
        let (address, reader) = (*address, shared.clone());
        shared
            .blob_reads
            .run(move || read_local(&reader, &address))
            .await
            .unwrap_or(Err(()))
    };
    if let Ok(Some(b)) = local {
        return Some(b);
    }
    let damaged = local.is_err();
    let blob = fetch_remote(shared, address).await?;
    if damaged {
        let store = shared.store.clone();
        let (address, copy) = (*address, blob.clone());
        let put = shared
            .spawn_blocking(move || store.put_blob(&address, &copy))
            .await;
        if matches!(put, Ok(Ok(_))) {
            shared.metrics.blob_repairs.inc();
            tracing::info!(address = %hex::encode(address), "repaired a damaged blob from another vault");
        }
    }
    Some(blob)
}

/// A copy from the vaults that should hold it, nearest first, then from
/// those that held it before the holders last changed
/// ([`Vaults::fetch_order`]).
async fn fetch_remote(shared: &Arc<Shared>, address: &[u8; 32]) -> Option<Vec<u8>> {
    let peers: Vec<net::Peer> = {
        let v = shared.vaults.lock().unwrap();
        v.fetch_order(address, fetch_asks(shared.chain.spec().replication))
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

/// How long a PUT waits, at most, for a holder whose allowance for this
/// vault's `Store`s ([`crate::budget`]) is spent: a client storing a large
/// file through one vault outruns every holder's allowance for it after
/// the first 512 MiB, and its parts then go at the allowance's rate rather
/// than with fewer copies.
pub const STORE_PATIENCE: Duration = Duration::from_secs(10);

/// A `Store` to a holder, asked again while the holder answers
/// `over_budget` (pauses of 100 ms doubling to 2 s), for at most
/// [`STORE_PATIENCE`].
pub(crate) async fn store_patiently(
    shared: &Shared,
    peer: net::Peer,
    blob: Vec<u8>,
) -> Result<Response, net::RequestError> {
    let deadline = Instant::now() + STORE_PATIENCE;
    let mut pause = Duration::from_millis(100);
    loop {
        let request = Request::Store { blob: blob.clone() };
        let answer = request_vault(shared, peer, request).await;
        match &answer {
            Ok(Response::Refused(why))
                if why == "over_budget" && Instant::now() + pause < deadline =>
            {
                shared.metrics.store_waits.inc();
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            _ => return answer,
        }
    }
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
    let max = shared.chain.spec().max_blob_bytes as usize;
    if blob.len() > max {
        return Err(PutError::TooLarge {
            got: blob.len(),
            max,
        });
    }
    let address = address_of(shared, Op::HashData, &blob);
    let (holders, peers): (Vec<[u8; 32]>, BTreeMap<[u8; 32], net::Peer>) = {
        let v = shared.vaults.lock().unwrap();
        let holders = v.holders(&address, shared.chain.spec().replication as usize);
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
        let task = shared.clone();
        let blob = blob.clone();
        let asked = *holder;
        asks.push((
            asked,
            shared.spawn(async move { store_patiently(&task, peer, blob).await }),
        ));
    }
    let mut receipts = Vec::new();
    if holders.contains(&own) {
        if let Ok(r) = store_local(shared, blob.clone(), address).await {
            receipts.push(r);
        }
    }
    for (asked, ask) in asks {
        if let Ok(Some(Ok(Response::Stored(receipt)))) = ask.await {
            // The holder asked, and only it: another holder's receipt
            // (seen in an earlier PUT's answer) would count one copy twice.
            let from_asked = receipt.holder == asked;
            // Of this era, or of one beside it: vaults cross an era's
            // first block at slightly different moments.
            let era = shared.vaults.lock().unwrap().era();
            let this_era = receipt.era.abs_diff(era) <= 1;
            let signed = meter::with(&shared.meter, || receipt.verify(&shared.chain.chain_id()));
            if receipt.address == address && from_asked && this_era && signed {
                shared.disputes.lock().unwrap().keep(receipt.clone());
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
