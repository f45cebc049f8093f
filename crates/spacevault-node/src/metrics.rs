//! The vault's metrics, in OpenMetrics text at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Reason {
    pub reason: String,
}

/// An audit's outcome, as a label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopicReason {
    pub topic: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueShed {
    pub queue: String,
    pub why: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CryptoOp {
    pub kind: String,
    pub purpose: String,
}

/// Every metric the vault keeps.
pub struct Metrics {
    pub registry: Registry,
    pub height: Gauge,
    pub peers: Gauge,
    pub vaults: Gauge,
    /// The holder era the chain is in, and its registered holders.
    pub holder_era: Gauge,
    pub holders: Gauge,
    pub lookup_seconds: Histogram,
    pub round_trip_seconds: Histogram,
    pub blocks_produced: Counter,
    pub blocks_accepted: Counter,
    pub blocks_rejected: Family<Reason, Counter>,
    pub messages_rejected: Family<TopicReason, Counter>,
    /// Messages this vault could not take for trouble of its own.
    pub messages_unable: Family<TopicReason, Counter>,
    pub reorgs: Counter,
    /// Equivocations this vault caught in the blocks it checked.
    pub equivocations_caught: Counter,
    /// Pieces of evidence this vault took for its blocks (caught, or
    /// gossiped to it).
    pub evidence_kept: Counter,
    pub reorg_depth: Histogram,
    pub blobs_stored: Gauge,
    pub blob_bytes_stored: Gauge,
    pub blob_reverify_failures: Counter,
    pub blob_repairs: Counter,
    /// Registers read back whose owner's signature no longer covers them.
    pub register_reverify_failures: Counter,
    pub scrub_checked: Counter,
    pub peers_other_chain: Counter,
    pub blocks_held_early: Counter,
    pub scrub_damaged: Counter,
    pub scrub_passes: Counter,
    pub blob_copies_pushed: Counter,
    /// Pauses of a PUT for a holder whose allowance was spent.
    pub store_waits: Counter,
    /// Audits of other holders, by outcome: `passed`, a failure's reason,
    /// or `unanswered`.
    pub audits: Family<Outcome, Counter>,
    /// Blobs sent again to a holder that failed an audit, and taken.
    pub audit_repairs: Counter,
    /// Challenges on the chain: `made` by this vault, and those to it
    /// `answered` or `unanswerable` (no holder had the blob).
    pub challenges: Family<Outcome, Counter>,
    /// Audits this vault answered with a slice, and the slices' bytes.
    pub audit_answers: Counter,
    pub audit_answer_bytes: Counter,
    /// Syncs that asked a peer ahead for its blocks.
    pub syncs: Counter,
    /// Requests for blocks those syncs made.
    pub sync_requests: Counter,
    pub registers_written: Counter,
    /// Work the processor's queues shed: full (a flood of one kind) or
    /// closed (the vault stopping).
    pub work_shed: Family<QueueShed, Counter>,
    /// Commands to the network's task dropped for a full queue, brought up
    /// to date at each scrape.
    pub network_commands_dropped: Counter,
    /// Copies of the vault's crypto meter, brought up to date at each
    /// scrape.
    pub crypto_ops: Family<CryptoOp, Counter>,
    pub crypto_seconds: Family<CryptoOp, Counter<f64, std::sync::atomic::AtomicU64>>,
    /// The proof of time's last slot checked here.
    pub slot: Gauge,
    /// Time to check a slot's output and keep it.
    pub slot_check_seconds: Histogram,
    /// Slots this vault computed as a timekeeper and was first to offer.
    pub slots_kept: Counter,
    /// Slots of lines asked of a peer for a block's sake, checked and kept.
    pub line_slots_fetched: Counter,
    /// Slots of lines the canonical chain can no longer take, forgotten;
    /// brought up to date at each scrape.
    pub line_slots_pruned: Counter,
    /// The median of the last slot outputs' arrival less their due time
    /// (ms): this vault's clock against the timekeepers'.
    pub clock_offset_ms: Gauge,
    /// The CPU seconds and resident memory of the process the vault runs
    /// in, brought up to date at each scrape (vaults sharing a process
    /// report the same figures).
    pub process_cpu_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    pub process_resident_bytes: Gauge,
}

/// The proof of time's metrics.
fn register_time(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "slot",
        "The proof of time's last slot checked here",
        m.slot.clone(),
    );
    registry.register(
        "slot_check_seconds",
        "Time to check a slot's output and keep it",
        m.slot_check_seconds.clone(),
    );
    registry.register(
        "clock_offset_ms",
        "The median of the last gossiped slot outputs' arrival less their due time, in ms (below zero: this vault's clock is behind)",
        m.clock_offset_ms.clone(),
    );
    registry.register(
        "slots_kept",
        "Slots this vault computed as a timekeeper and offered first",
        m.slots_kept.clone(),
    );
    registry.register(
        "line_slots_fetched",
        "Slots of a line asked of a peer because a block needed them (another branch's, or the line followed past where its slots reach), checked and kept",
        m.line_slots_fetched.clone(),
    );
    registry.register(
        "line_slots_pruned",
        "Slots of lines forgotten because the final blocks settled their era on another line",
        m.line_slots_pruned.clone(),
    );
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("spacevault");
        let m = Metrics {
            height: Gauge::default(),
            slot: Gauge::default(),
            slot_check_seconds: Histogram::new([1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2, 0.1]),
            slots_kept: Counter::default(),
            line_slots_fetched: Counter::default(),
            line_slots_pruned: Counter::default(),
            clock_offset_ms: Gauge::default(),
            process_cpu_seconds: Gauge::default(),
            process_resident_bytes: Gauge::default(),
            peers: Gauge::default(),
            vaults: Gauge::default(),
            holder_era: Gauge::default(),
            holders: Gauge::default(),
            lookup_seconds: Histogram::new([
                1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0,
            ]),
            round_trip_seconds: Histogram::new([
                5e-4, 1e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.2, 0.4, 0.8, 1.6,
            ]),
            blocks_produced: Counter::default(),
            blocks_accepted: Counter::default(),
            blocks_rejected: Family::default(),
            messages_rejected: Family::default(),
            messages_unable: Family::default(),
            reorgs: Counter::default(),
            equivocations_caught: Counter::default(),
            evidence_kept: Counter::default(),
            reorg_depth: Histogram::new([1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0]),
            blobs_stored: Gauge::default(),
            blob_bytes_stored: Gauge::default(),
            blob_reverify_failures: Counter::default(),
            blob_repairs: Counter::default(),
            register_reverify_failures: Counter::default(),
            scrub_checked: Counter::default(),
            peers_other_chain: Counter::default(),
            blocks_held_early: Counter::default(),
            scrub_damaged: Counter::default(),
            scrub_passes: Counter::default(),
            blob_copies_pushed: Counter::default(),
            store_waits: Counter::default(),
            audits: Family::default(),
            audit_repairs: Counter::default(),
            challenges: Family::default(),
            audit_answers: Counter::default(),
            audit_answer_bytes: Counter::default(),
            syncs: Counter::default(),
            sync_requests: Counter::default(),
            registers_written: Counter::default(),
            work_shed: Family::default(),
            network_commands_dropped: Counter::default(),
            crypto_ops: Family::default(),
            crypto_seconds: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "chain_height",
            "Height of the canonical head",
            m.height.clone(),
        );
        registry.register("peers", "Peers connected", m.peers.clone());
        registry.register(
            "work_shed",
            "Gossip and requests shed unworked by the vault's processor, by queue and why (full, closed)",
            m.work_shed.clone(),
        );
        registry.register(
            "blocks_held_early",
            "Gossiped blocks dated a little past the clock's allowance, held until their time",
            m.blocks_held_early.clone(),
        );
        registry.register(
            "peers_other_chain",
            "Peers disconnected at the handshake for naming another chain",
            m.peers_other_chain.clone(),
        );
        registry.register(
            "scrub_blobs_checked",
            "Stored blobs the scrub read back and hashed",
            m.scrub_checked.clone(),
        );
        registry.register(
            "scrub_blobs_damaged",
            "Stored blobs the scrub found damaged or gone (and repaired when a holder had a copy)",
            m.scrub_damaged.clone(),
        );
        registry.register(
            "scrub_passes",
            "Scrub passes over every stored blob finished",
            m.scrub_passes.clone(),
        );
        registry.register(
            "register_reverify_failures",
            "Registers read back from disk whose owner's signature no longer covers them",
            m.register_reverify_failures.clone(),
        );
        registry.register(
            "network_commands_dropped",
            "Commands to the network's task dropped because its queue was full",
            m.network_commands_dropped.clone(),
        );
        registry.register(
            "vaults",
            "Vaults known alive, this one included",
            m.vaults.clone(),
        );
        registry.register(
            "holder_era",
            "The holder era the canonical chain is in (0: the bootstrap era)",
            m.holder_era.clone(),
        );
        registry.register(
            "holders",
            "Data holders the chain registers for the current era",
            m.holders.clone(),
        );
        register_time(&mut registry, &m);
        registry.register(
            "process_cpu_seconds",
            "CPU seconds, user and system, of the process the vault runs in (vaults sharing a process report the same)",
            m.process_cpu_seconds.clone(),
        );
        registry.register(
            "process_resident_bytes",
            "Resident memory of the process the vault runs in",
            m.process_resident_bytes.clone(),
        );
        registry.register(
            "lookup_seconds",
            "Time to look up the best proof of all plots",
            m.lookup_seconds.clone(),
        );
        registry.register(
            "peer_round_trip_seconds",
            "Ping round trips to connected peers",
            m.round_trip_seconds.clone(),
        );
        registry.register(
            "blocks_produced",
            "Blocks this vault produced",
            m.blocks_produced.clone(),
        );
        registry.register(
            "blocks_accepted",
            "Valid blocks imported",
            m.blocks_accepted.clone(),
        );
        registry.register(
            "equivocations_caught",
            "Pieces of evidence this vault made from two blocks one farmer key signed for one slot (one a key while it waits for a block; each is gossiped, and goes into a block)",
            m.equivocations_caught.clone(),
        );
        registry.register(
            "evidence_kept",
            "Pieces of evidence of equivocation this vault took for its blocks, caught or gossiped to it",
            m.evidence_kept.clone(),
        );
        registry.register(
            "blocks_rejected",
            "Blocks refused, by reason",
            m.blocks_rejected.clone(),
        );
        registry.register(
            "messages_rejected",
            "Gossip messages and requests refused, by topic and reason",
            m.messages_rejected.clone(),
        );
        registry.register(
            "messages_unable",
            "Gossip messages and requests this vault could not take for trouble of its own (its store failed, its pool was full), by topic and trouble: never counted against the sender",
            m.messages_unable.clone(),
        );
        registry.register(
            "reorgs",
            "Times the canonical head moved to another branch",
            m.reorgs.clone(),
        );
        registry.register(
            "reorg_depth",
            "Blocks that left the canonical chain at each change of branch",
            m.reorg_depth.clone(),
        );
        registry.register(
            "blobs_stored",
            "Blobs this vault keeps",
            m.blobs_stored.clone(),
        );
        registry.register(
            "blob_bytes_stored",
            "Bytes of the blobs this vault keeps",
            m.blob_bytes_stored.clone(),
        );
        registry.register(
            "blob_reverify_failures",
            "Blobs whose bytes read back from the store did not hash to their address",
            m.blob_reverify_failures.clone(),
        );
        registry.register(
            "blob_repairs",
            "Damaged local copies replaced by a good copy from another vault",
            m.blob_repairs.clone(),
        );
        registry.register(
            "blob_copies_pushed",
            "Copies of local blobs sent to vaults that should hold them",
            m.blob_copies_pushed.clone(),
        );
        registry.register(
            "audits",
            "Audits of the other holders of this vault's blobs, by outcome",
            m.audits.clone(),
        );
        registry.register(
            "audit_repairs",
            "Blobs sent again to a holder that failed an audit, and taken",
            m.audit_repairs.clone(),
        );
        registry.register(
            "challenges",
            "Challenges on the chain this vault made, and those to it it answered or could not",
            m.challenges.clone(),
        );
        registry.register(
            "audit_answers",
            "Audits of this vault's blobs it answered with a slice",
            m.audit_answers.clone(),
        );
        registry.register(
            "audit_answer_bytes",
            "Bytes of the slices this vault answered audits with",
            m.audit_answer_bytes.clone(),
        );
        registry.register(
            "store_waits",
            "Pauses of a PUT for a holder that refused its Store as over this vault's allowance",
            m.store_waits.clone(),
        );
        registry.register(
            "syncs",
            "Syncs that asked a peer ahead (or on another branch) for its blocks",
            m.syncs.clone(),
        );
        registry.register(
            "sync_requests",
            "Requests for blocks (locates, then batches) that syncs made",
            m.sync_requests.clone(),
        );
        registry.register(
            "registers_written",
            "Register transactions accepted into the pool from clients",
            m.registers_written.clone(),
        );
        registry.register(
            "crypto_operations",
            "Cryptographic operations performed, by kind and purpose",
            m.crypto_ops.clone(),
        );
        registry.register(
            "crypto_operation_seconds",
            "Time spent in cryptographic operations, by kind and purpose",
            m.crypto_seconds.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Brings the count of dropped network commands up to `dropped`.
    pub fn sync_network(&self, dropped: u64) {
        catch_up(&self.network_commands_dropped, dropped);
    }

    /// Brings the count of forgotten slots up to `pruned`.
    pub fn sync_pruned(&self, pruned: u64) {
        catch_up(&self.line_slots_pruned, pruned);
    }

    /// Brings the process's CPU and memory figures up to date.
    pub fn sync_process(&self) {
        if let Some(cpu) = crate::process::cpu_seconds("self") {
            self.process_cpu_seconds.set(cpu);
        }
        if let Some(bytes) = crate::process::resident_bytes("self") {
            self.process_resident_bytes
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Brings the crypto counters up to the meter's figures.
    pub fn sync_crypto(&self, meter: &spacevault_meter::Meter) {
        for op in spacevault_meter::Op::ALL {
            let label = CryptoOp {
                kind: op.kind().name().to_string(),
                purpose: op.purpose().to_string(),
            };
            catch_up(&self.crypto_ops.get_or_create(&label), meter.count(op));
            let seconds = self.crypto_seconds.get_or_create(&label);
            let total = meter.nanos(op) as f64 / 1e9;
            if total > seconds.get() {
                seconds.inc_by(total - seconds.get());
            }
        }
    }

    /// Counts a message refused for `why`: under its reason, or, for this
    /// vault's own trouble, apart ([`spacevault_chain::Rejection::Unable`]).
    pub fn refused(&self, topic: &str, why: &spacevault_chain::Rejection) {
        match why {
            spacevault_chain::Rejection::Unable { what, .. } => {
                self.messages_unable
                    .get_or_create(&TopicReason {
                        topic: topic.to_string(),
                        reason: what.to_string(),
                    })
                    .inc();
            }
            r => self.rejected(topic, r.name()),
        }
    }

    /// Counts work a queue shed unworked.
    pub fn work_shed(&self, queue: &str, why: &str) {
        self.work_shed
            .get_or_create(&QueueShed {
                queue: queue.into(),
                why: why.into(),
            })
            .inc();
    }

    /// Counts an audit of another holder that came to `outcome`.
    pub fn audit(&self, outcome: &str) {
        self.audits
            .get_or_create(&Outcome {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Counts a challenge on the chain by `outcome`.
    pub fn challenge(&self, outcome: &str) {
        self.challenges
            .get_or_create(&Outcome {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Counts a refused message.
    pub fn rejected(&self, topic: &str, reason: &str) {
        self.messages_rejected
            .get_or_create(&TopicReason {
                topic: topic.to_string(),
                reason: reason.to_string(),
            })
            .inc();
        if topic == "blocks" {
            self.blocks_rejected
                .get_or_create(&Reason {
                    reason: reason.to_string(),
                })
                .inc();
        }
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("metrics encode into a String");
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Brings counter `c` up to `total`, a count kept elsewhere.
fn catch_up(c: &Counter, total: u64) {
    c.inc_by(total.saturating_sub(c.get()));
}
