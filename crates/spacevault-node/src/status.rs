//! What a vault reports of itself (its status, health, metrics and
//! crypto operations), as the API and the page show it: one handle that
//! reads the vault's parts and gives the API's typed answers.

use crate::api::types::{
    Bootstrap, CryptoAnswer, CryptoOpJson, Health, RecentBlock, Scrub, Status,
};
use crate::chain::View;
use crate::shared::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A vault's figures, as it reports them.
#[derive(Clone)]
pub struct Report {
    shared: Arc<Shared>,
}

impl Report {
    pub(crate) fn new(shared: Arc<Shared>) -> Report {
        Report { shared }
    }

    /// `GET /health`: the head's height and the peers connected.
    pub fn health(&self) -> Health {
        Health {
            ok: true,
            height: self.shared.chain.height(),
            peers: self.shared.metrics.peers.get(),
        }
    }

    /// The metrics, as `/metrics` serves them: the meter's counts and the
    /// network's dropped commands brought up to date first.
    pub fn metrics_text(&self) -> String {
        self.shared.metrics_text()
    }

    /// The vault's cryptographic operations so far, by kind and purpose.
    pub fn crypto(&self) -> CryptoAnswer {
        let s = &self.shared;
        let cache = s.chain.sig_cache();
        let operations = spacevault_meter::Op::ALL
            .iter()
            .map(|&op| CryptoOpJson {
                kind: op.kind().name().to_string(),
                purpose: op.purpose().to_string(),
                count: s.meter.count(op),
                seconds: s.meter.nanos(op) as f64 / 1e9,
                cache_hits: match op {
                    spacevault_meter::Op::VerifySlot => s.time.checks_remembered(),
                    _ => cache.map_or(0, |c| c.hits(op)),
                },
            })
            .collect();
        CryptoAnswer {
            verify_cache: cache.is_some(),
            operations,
        }
    }

    /// `GET /v1/status`, with `chain` read of the chain (on a blocking
    /// thread: it takes the engine's lock).
    pub async fn status(&self, chain: View) -> Status {
        let s = &self.shared;
        let (blobs, blob_bytes) = s.store.blob_stats().unwrap_or((0, 0));
        let peers = s.net.peers().await;
        let bootstrap = s.net.bootstrap().await.iter().map(bootstrap_json).collect();
        let round_trips_ms = s
            .round_trips
            .lock()
            .unwrap()
            .iter()
            .map(|(p, rtt)| (p.to_string(), rtt.as_secs_f64() * 1000.0))
            .collect();
        let listen = s
            .listen_addrs
            .lock()
            .unwrap()
            .iter()
            .map(|a| a.to_string())
            .collect();
        let spec = s.chain.spec();
        Status {
            peer_id: s.net.local_peer().to_string(),
            farmer_key: hex::encode(s.key.public()),
            listen,
            chain_id: hex::encode(s.chain.chain_id()),
            slot_ms: spec.slot_ms,
            block_interval_slots: spec.block_interval_slots,
            max_blob_bytes: spec.max_blob_bytes,
            height: chain.head.height,
            head: hex::encode(chain.head.hash),
            head_slot: chain.head.slot,
            network_records: chain.head.child_target.records(spec.block_interval_slots),
            chain_weight: chain.head.weight.to_string(),
            slot: s.time.slot(),
            clock_slot: s.time.clock_slot(crate::now_ms()),
            clock_offset_ms: s.clock.offset_ms(),
            clock_warning: s.clock.verdict(spec.slot_ms).warning(spec.slot_ms),
            timekeeper: s.timekeeper,
            recent_blocks: chain.recent.into_iter().map(recent_block_json).collect(),
            syncing: s.is_syncing(),
            plots: s.farmer.plots(),
            skipped_plots: s.farmer.skipped().to_vec(),
            peers: peers.iter().map(|p| p.to_string()).collect(),
            bootstrap,
            vaults: s.vaults.lock().unwrap().count(),
            round_trips_ms,
            reorgs: s.metrics.reorgs.get(),
            deepest_reorg: s.chain.deepest_reorg(),
            blocks_produced: s.metrics.blocks_produced.get(),
            blobs,
            blob_bytes,
            scrub: scrub_json(s),
        }
    }
}

fn bootstrap_json(b: &spacevault_network::BootstrapStatus) -> Bootstrap {
    Bootstrap {
        address: b.address.to_string(),
        reached: b.reached,
        error: b.error.clone(),
        retry_in_s: b.retry_in.map(|w| w.as_secs_f64()),
    }
}

/// A recent block, with its producer's peer id beside its farmer key.
fn recent_block_json(block: crate::engine::BlockSummary) -> RecentBlock {
    let producer_peer = hex::decode(&block.producer)
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .and_then(|k| spacevault_network::peer_of(&k))
        .map(|p| p.to_string());
    RecentBlock {
        block,
        producer_peer,
    }
}

fn scrub_json(s: &Shared) -> Scrub {
    let relaxed = Ordering::Relaxed;
    Scrub {
        rate_bytes_per_s: s.scrub_rate,
        passes: s.scrub.passes.load(relaxed),
        pass_blobs: s.scrub.pass_blobs.load(relaxed),
        pass_checked: s.scrub.pass_checked.load(relaxed),
        last_pass_ms: s.scrub.last_pass_ms.load(relaxed),
        damaged: s.metrics.scrub_damaged.get(),
    }
}
