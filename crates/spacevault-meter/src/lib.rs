//! Accounting of cryptographic operations: every BLAKE3 hash, ed25519
//! signature and verification a vault performs, by purpose, with the time
//! each took. The vault-network profiling study wished for exactly this ("total messages
//! × signature verification time + total chunks × hashing time") to compare
//! a network's real time against.
//!
//! Many vaults share one process in tests and benchmarks, so a meter is
//! not global: the vault makes its meter current on the thread for each
//! synchronous piece of its work ([`with`]), and the operations inside
//! record themselves into it ([`timed`]). Crypto is synchronous, so a meter
//! current for a synchronous call is current for every operation in it.
//! Outside any meter, operations cost one thread-local read. The meter
//! only counts: nothing it holds decides what is valid.
//!
//! [`trace`] is the file format of one vault's operations in a window.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub mod trace;

/// Every operation counted, by kind and purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// The record re-hashed after a plot lookup, before it becomes a proof.
    HashLookup,
    /// A proof verified: its plot id and record hash.
    HashProof,
    /// A block's (or header's) hash and its transaction root.
    HashBlock,
    /// A challenge or genesis derived.
    HashChallenge,
    /// A transaction's id.
    HashTx,
    /// A blob's address computed as it arrives (PUT, a copy pushed or
    /// fetched).
    HashData,
    /// A blob hashed again after it was read back from disk.
    HashReread,
    /// A gossip message's id (every copy received, duplicates included).
    HashMessageId,
    /// Receipts' and announcements' signed messages.
    HashMessage,
    SignBlock,
    SignReceipt,
    SignAnnouncement,
    SignTx,
    VerifyBlock,
    VerifyTx,
    VerifyReceipt,
    VerifyAnnouncement,
    /// A slot's proof-of-time output checked (the VDF's proof): once a
    /// slot a vault, the costliest check a vault makes while idle.
    VerifySlot,
    /// A blob's BLAKE3 tree built to answer an audit with one chunk's
    /// slice (the whole blob hashed, beside its re-read check). Last, with
    /// the next, so that the operations' numbers in traces stay put.
    HashAuditProof,
    /// An audit's answer checked: the chunk and the parents above it
    /// hashed up to the blob's address.
    HashAuditCheck,
}

/// The three kinds the profiling study tallies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Hash,
    Sign,
    Verify,
}

impl Op {
    pub const ALL: [Op; 20] = [
        Op::HashLookup,
        Op::HashProof,
        Op::HashBlock,
        Op::HashChallenge,
        Op::HashTx,
        Op::HashData,
        Op::HashReread,
        Op::HashMessageId,
        Op::HashMessage,
        Op::SignBlock,
        Op::SignReceipt,
        Op::SignAnnouncement,
        Op::SignTx,
        Op::VerifyBlock,
        Op::VerifyTx,
        Op::VerifyReceipt,
        Op::VerifyAnnouncement,
        Op::VerifySlot,
        Op::HashAuditProof,
        Op::HashAuditCheck,
    ];

    pub fn kind(self) -> Kind {
        use Op::*;
        match self {
            HashLookup | HashProof | HashBlock | HashChallenge | HashTx | HashData | HashReread
            | HashMessageId | HashMessage | HashAuditProof | HashAuditCheck => Kind::Hash,
            SignBlock | SignReceipt | SignAnnouncement | SignTx => Kind::Sign,
            VerifyBlock | VerifyTx | VerifyReceipt | VerifyAnnouncement | VerifySlot => {
                Kind::Verify
            }
        }
    }

    /// The purpose's name, as metrics and reports print it.
    pub fn purpose(self) -> &'static str {
        use Op::*;
        match self {
            HashLookup => "lookup_rehash",
            HashProof => "proof",
            HashBlock => "block",
            HashChallenge => "challenge",
            HashTx => "tx_id",
            HashData => "data_address",
            HashReread => "disk_reverify",
            HashMessageId => "message_id",
            HashMessage => "signed_message",
            HashAuditProof => "audit_proof",
            HashAuditCheck => "audit_check",
            SignBlock | VerifyBlock => "block",
            SignReceipt | VerifyReceipt => "receipt",
            SignAnnouncement | VerifyAnnouncement => "announcement",
            SignTx | VerifyTx => "tx",
            VerifySlot => "slot_output",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hash => "hash",
            Kind::Sign => "sign",
            Kind::Verify => "verify",
        }
    }
}

/// One operation's start and end, in nanoseconds since the meter's start,
/// and a fingerprint of what it worked on: two operations of one kind with
/// the same fingerprint did the same work (0: not known).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub op: Op,
    pub start_ns: u64,
    pub end_ns: u64,
    pub input: u64,
}

/// What an operation's result says of its input, for [`Span::input`]: a
/// hash's output names its input, a signature names its message and key.
pub trait Fingerprint {
    fn fingerprint(&self) -> u64;
}

/// The first eight bytes of a digest or a signature.
pub fn fingerprint_of(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    // Never 0, which means unknown.
    u64::from_le_bytes(b).max(1)
}

impl Fingerprint for [u8; 32] {
    fn fingerprint(&self) -> u64 {
        fingerprint_of(self)
    }
}

impl Fingerprint for [u8; 64] {
    fn fingerprint(&self) -> u64 {
        fingerprint_of(self)
    }
}

impl Fingerprint for spacevault::Verified {
    fn fingerprint(&self) -> u64 {
        fingerprint_of(&self.distance)
    }
}

impl<T: Fingerprint, E> Fingerprint for Result<T, E> {
    fn fingerprint(&self) -> u64 {
        self.as_ref().map_or(0, T::fingerprint)
    }
}

/// A vault's counts and times of each operation.
pub struct Meter {
    counts: [AtomicU64; Op::ALL.len()],
    nanos: [AtomicU64; Op::ALL.len()],
    epoch: Instant,
    /// The epoch as Unix time, so that spans of many vaults line up.
    epoch_unix_ns: u64,
    /// Each operation's span, when tracing.
    trace: Option<Mutex<Vec<Span>>>,
}

impl Default for Meter {
    fn default() -> Meter {
        Meter::new(false)
    }
}

impl Meter {
    /// A meter; with `trace`, one that also keeps every operation's span.
    pub fn new(trace: bool) -> Meter {
        Meter {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            nanos: std::array::from_fn(|_| AtomicU64::new(0)),
            epoch: Instant::now(),
            epoch_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            trace: trace.then(|| Mutex::new(Vec::new())),
        }
    }

    /// One operation, on the input `input` fingerprints (0: not known).
    pub fn record(&self, op: Op, started: Instant, ended: Instant, input: u64) {
        self.counts[op.index()].fetch_add(1, Ordering::Relaxed);
        let ns = ended.duration_since(started).as_nanos() as u64;
        self.nanos[op.index()].fetch_add(ns, Ordering::Relaxed);
        if let Some(trace) = &self.trace {
            let since = |t: Instant| t.duration_since(self.epoch).as_nanos() as u64;
            trace.lock().unwrap().push(Span {
                op,
                start_ns: since(started),
                end_ns: since(ended),
                input,
            });
        }
    }

    /// Operations counted whose time is spent inside other work.
    pub fn add(&self, op: Op, n: u64) {
        self.counts[op.index()].fetch_add(n, Ordering::Relaxed);
    }

    pub fn count(&self, op: Op) -> u64 {
        self.counts[op.index()].load(Ordering::Relaxed)
    }

    /// Nanoseconds spent in `op`, all of them together.
    pub fn nanos(&self, op: Op) -> u64 {
        self.nanos[op.index()].load(Ordering::Relaxed)
    }

    /// The spans kept so far, emptied; none unless tracing.
    pub fn take_trace(&self) -> Vec<Span> {
        match &self.trace {
            Some(t) => std::mem::take(&mut *t.lock().unwrap()),
            None => Vec::new(),
        }
    }

    /// When the meter started, as Unix time in nanoseconds: spans count
    /// from here.
    pub fn epoch_unix_ns(&self) -> u64 {
        self.epoch_unix_ns
    }

    /// Whether the meter keeps spans.
    pub fn is_tracing(&self) -> bool {
        self.trace.is_some()
    }
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = f.debug_map();
        for op in Op::ALL.iter().filter(|&&op| self.count(op) > 0) {
            m.entry(op, &self.count(*op));
        }
        m.finish()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Meter>>> = const { RefCell::new(None) };
}

/// Runs `f` with `meter` current on this thread (and the meter before it
/// current again after). `f` must not await: a task may move threads.
pub fn with<R>(meter: &Arc<Meter>, f: impl FnOnce() -> R) -> R {
    let before = CURRENT.with(|c| c.replace(Some(meter.clone())));
    struct Restore(Option<Arc<Meter>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let _restore = Restore(before);
    f()
}

/// Runs one operation, recording it into the current meter if any, its
/// result's fingerprint as its input's.
pub fn timed<R: Fingerprint>(op: Op, f: impl FnOnce() -> R) -> R {
    measured(op, f, R::fingerprint)
}

/// Runs one operation on the input `input` fingerprints (a verification's
/// signature: its result says nothing of its input).
pub fn timed_on<R>(op: Op, input: u64, f: impl FnOnce() -> R) -> R {
    measured(op, f, |_| input)
}

fn measured<R>(op: Op, f: impl FnOnce() -> R, input: impl FnOnce(&R) -> u64) -> R {
    let meter = CURRENT.with(|c| c.borrow().clone());
    match meter {
        None => f(),
        Some(m) => {
            let started = Instant::now();
            let r = f();
            let ended = Instant::now();
            m.record(op, started, ended, input(&r));
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_count_into_the_current_meter_only() {
        let a = Arc::new(Meter::new(true));
        let b = Arc::new(Meter::default());
        let digest = [7u8; 32];
        timed(Op::HashBlock, || digest);
        with(&a, || {
            timed(Op::HashBlock, || digest);
            with(&b, || timed_on(Op::VerifyTx, 9, || true));
            timed_on(Op::VerifyTx, 9, || true);
        });
        timed_on(Op::VerifyTx, 9, || true);
        assert_eq!((a.count(Op::HashBlock), a.count(Op::VerifyTx)), (1, 1));
        assert_eq!((b.count(Op::HashBlock), b.count(Op::VerifyTx)), (0, 1));
        let spans = a.take_trace();
        assert_eq!(spans.len(), 2);
        assert!(spans.iter().all(|s| s.end_ns >= s.start_ns));
        // A hash is known by its output, a verification by what it was told.
        assert_eq!(spans[0].input, fingerprint_of(&digest));
        assert_eq!(spans[1].input, 9);
        assert!(b.take_trace().is_empty(), "no spans without tracing");
    }

    #[test]
    fn a_panic_inside_leaves_no_meter_current() {
        let a = Arc::new(Meter::default());
        let _ = std::panic::catch_unwind(|| with(&a, || panic!("inside")));
        timed(Op::HashBlock, || [0u8; 32]);
        assert_eq!(a.count(Op::HashBlock), 0);
    }

    #[test]
    fn every_op_has_a_kind_and_a_place() {
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
            assert!(!op.purpose().is_empty());
        }
        assert_eq!(Op::SignTx.kind(), Kind::Sign);
        assert_eq!(Op::HashReread.kind(), Kind::Hash);
    }

    #[test]
    fn every_operation_has_a_kind_and_a_purpose_and_each_pair_is_its_own() {
        let mut pairs = std::collections::HashSet::new();
        for op in Op::ALL {
            let (kind, purpose) = (op.kind().name(), op.purpose());
            assert!(["hash", "sign", "verify"].contains(&kind));
            assert!(
                !purpose.is_empty() && purpose.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            );
            assert!(pairs.insert((kind, purpose)), "{op:?}");
        }
        assert_eq!(Op::HashReread.purpose(), "disk_reverify");
        assert_eq!(Op::SignBlock.purpose(), Op::VerifyBlock.purpose());
    }

    #[test]
    fn fingerprints_are_the_first_bytes_and_never_zero() {
        let mut digest = [0u8; 32];
        digest[..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(fingerprint_of(&digest), 0x1122_3344_5566_7788);
        assert_eq!(digest.fingerprint(), 0x1122_3344_5566_7788);
        let mut signature = [0u8; 64];
        signature[0] = 9;
        assert_eq!(signature.fingerprint(), 9);
        assert_eq!(fingerprint_of(&[0; 32]), 1, "0 means unknown");
        assert_eq!(fingerprint_of(&[3]), 3);
        let ok: Result<[u8; 32], ()> = Ok(digest);
        assert_eq!(ok.fingerprint(), 0x1122_3344_5566_7788);
        assert_eq!(Err::<[u8; 32], ()>(()).fingerprint(), 0);
        let verified = spacevault::verify(
            &spacevault::Proof {
                farmer_key: [1; 32],
                seed: [2; 32],
                k: 16,
                nonce: 3,
            },
            &[4; 32],
        )
        .unwrap();
        assert_eq!(verified.fingerprint(), fingerprint_of(&verified.distance));
    }

    #[test]
    fn a_meter_adds_counts_and_times_and_says_what_it_keeps() {
        let m = Meter::new(false);
        assert!(!m.is_tracing());
        assert!(Meter::new(true).is_tracing());
        m.add(Op::HashLookup, 5);
        m.add(Op::HashLookup, 2);
        assert_eq!(m.count(Op::HashLookup), 7);
        assert_eq!(m.nanos(Op::HashLookup), 0, "added, not timed");
        let t = Instant::now();
        m.record(Op::SignTx, t, t + std::time::Duration::from_nanos(1500), 0);
        m.record(Op::SignTx, t, t + std::time::Duration::from_nanos(500), 0);
        assert_eq!((m.count(Op::SignTx), m.nanos(Op::SignTx)), (2, 2000));
        assert!(m.take_trace().is_empty(), "no spans unless tracing");
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let epoch = m.epoch_unix_ns();
        assert!(epoch <= now_ns && now_ns - epoch < 3_600_000_000_000);
        assert_eq!(format!("{m:?}"), "{HashLookup: 7, SignTx: 2}");
    }
}
