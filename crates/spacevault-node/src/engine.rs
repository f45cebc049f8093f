//! The chain as one vault follows it: importing blocks (checks, storage,
//! fork choice), the election of the next block's producer, the pool of
//! pending transactions, and producing a block. No I/O but the store's and
//! no clock of its own: the node passes the time in, so that the rules are
//! the same for every caller and tests can drive them.

use spacevault_chain::fork::{self, Fork};
use spacevault_chain::validate::{self, check_tx, Parent};
use spacevault_chain::SigCache;
use spacevault_chain::{
    Block, ChainProof, ChainSpec, Keypair, Limits, ProofMsg, Ranked, RegisterTx, Rejection,
};
use spacevault_store::{Status, Store, StoreError};
use std::path::Path;

mod mempool;
mod orphans;
use mempool::Mempool;
pub use mempool::{MAX_MEMPOOL, MAX_VERSIONS_AHEAD};
pub use orphans::{Origin, MAX_ORPHANS, MAX_ORPHANS_PER_ORIGIN, ORPHAN_SLOTS};

/// What became of an imported block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// It is the new head; `left`: blocks of the old chain that are no
    /// longer canonical (0 when it extends the head).
    NewHead { left: usize },
    /// Valid and kept, on a chain that is not (yet) the best.
    Kept,
    /// Already known.
    Duplicate,
    /// Its parent is not known yet: kept aside until it is.
    Orphan,
}

/// A block to import and the orphans that wait for it, as they are
/// found ([`Engine::import_next`]).
pub struct Adoption {
    queue: Vec<Block>,
    /// Whether the next block is the first, and came by gossip
    /// ([`Engine::import_gossiped`]); the orphans were asked for.
    gossiped: bool,
    /// Who sent the first block (the orphans waited for a known one).
    origin: Origin,
}

impl Adoption {
    pub fn new(block: Block, gossiped: bool, origin: Origin) -> Adoption {
        Adoption {
            queue: vec![block],
            gossiped,
            origin,
        }
    }
}

/// The proofs seen for the next height, best first.
#[derive(Clone, Debug)]
struct Election {
    parent: Parent,
    challenge: [u8; 32],
    seen: Vec<(Ranked, ChainProof)>,
    own: Option<(Ranked, ChainProof)>,
    /// Places this vault waits for its proof's expected place among the
    /// network's beyond the first, whatever it has heard (see
    /// [`Engine::production_due`]).
    own_expected_wait: f64,
    produced: bool,
    /// When this vault learned of the parent (Unix ms).
    opened_ms: u64,
}

/// Proofs an election keeps: enough to rank this vault's own among them.
const ELECTION_KEEPS: usize = 64;
/// Places a vault waits at most for its proof's expected place: at places
/// of the producer timeout (half a slot), four slots without a block,
/// after which any vault may make one.
const MAX_EXPECTED_WAIT: f64 = 8.0;

impl Election {
    fn new(parent: Parent, chain_id: &[u8; 32], opened_ms: u64) -> Election {
        Election {
            challenge: parent.child_challenge(chain_id),
            parent,
            seen: Vec::new(),
            own: None,
            own_expected_wait: 0.0,
            produced: false,
            opened_ms,
        }
    }

    fn height(&self) -> u64 {
        self.parent.height + 1
    }

    /// Adds a proof; whether it is the best seen.
    fn offer(&mut self, rank: Ranked, proof: ChainProof) -> bool {
        if self.seen.iter().any(|(r, _)| *r == rank) {
            return false;
        }
        let best = self.seen.first().is_none_or(|(b, _)| rank.beats(b));
        let at = self.seen.partition_point(|(r, _)| r.beats(&rank));
        self.seen.insert(at, (rank, proof));
        self.seen.truncate(ELECTION_KEEPS);
        best
    }

    /// This vault's place among the proofs seen (0: the best).
    fn own_rank(&self) -> Option<usize> {
        let (own, _) = self.own.as_ref()?;
        Some(self.seen.iter().filter(|(r, _)| r.beats(own)).count())
    }
}

/// A canonical block, as the page and API list them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockSummary {
    pub height: u64,
    pub hash: String,
    pub producer: String,
    pub quality: u32,
    pub timestamp_ms: u64,
    pub txs: usize,
}

/// One vault's view of the chain.
pub struct Engine {
    spec: ChainSpec,
    chain_id: [u8; 32],
    limits: Limits,
    store: std::sync::Arc<Store>,
    head: Parent,
    election: Election,
    /// The last election, kept so that a vault whose better proof lost to
    /// a block made before its own can still produce for that height.
    previous: Option<Election>,
    /// How long gossiped blocks took to arrive after they were made, in
    /// milliseconds, smoothed: what spaces this vault's turn from the
    /// likelier producers' when the network runs late.
    block_delay_ms: f64,
    mempool: Mempool,
    orphans: orphans::Orphans,
    /// Signatures verified before, if the vault keeps them: a block's
    /// transactions were mostly verified as they arrived.
    sig_cache: Option<std::sync::Arc<SigCache>>,
}

impl Engine {
    /// Opens the vault's store at `path` for `spec`'s chain.
    pub fn open(path: &Path, spec: ChainSpec) -> Result<Engine, StoreError> {
        let store = Store::open(path, &spec)?;
        let chain_id = spec.chain_id();
        let genesis = Parent::genesis(&spec);
        let head = match store.head()? {
            Some((hash, _)) => parent_of(&store, &spec, &hash)?.unwrap_or(genesis),
            None => genesis,
        };
        Ok(Engine {
            orphans: orphans::Orphans::new(spec.slot_ms),
            limits: Limits::of(&spec),
            election: Election::new(head, &chain_id, 0),
            previous: None,
            block_delay_ms: 0.0,
            chain_id,
            spec,
            store: std::sync::Arc::new(store),
            head,
            mempool: Mempool::default(),
            sig_cache: None,
        })
    }

    /// Checks transactions' signatures against `cache` first from now on.
    pub fn use_sig_cache(&mut self, cache: std::sync::Arc<SigCache>) {
        self.sig_cache = Some(cache);
    }

    fn sig_cache(&self) -> Option<&SigCache> {
        self.sig_cache.as_deref()
    }

    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    pub fn chain_id(&self) -> [u8; 32] {
        self.chain_id
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for work done without holding the engine (a flush).
    pub fn shared_store(&self) -> std::sync::Arc<Store> {
        self.store.clone()
    }

    /// The canonical head (the genesis before block 1).
    pub fn head(&self) -> Parent {
        self.head
    }

    /// The height and challenge of the election under way.
    pub fn election(&self) -> (u64, [u8; 32], [u8; 32]) {
        (
            self.election.height(),
            self.election.parent.hash,
            self.election.challenge,
        )
    }

    fn parent(&self, hash: &[u8; 32]) -> Result<Option<Parent>, StoreError> {
        parent_of(&self.store, &self.spec, hash)
    }

    /// Checks and keeps a block, and follows it if it makes the better
    /// chain. Errors are the block's fault (or a store failure, as
    /// `Malformed`).
    pub fn import(&mut self, block: Block, now_ms: u64) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, false, Origin::LOCAL)
    }

    /// [`import`](Self::import) for a block `origin` sent: an orphan
    /// counts against that sender's share of the pool.
    pub fn import_from(
        &mut self,
        block: Block,
        now_ms: u64,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, false, origin)
    }

    /// [`import`](Self::import) for a block gossiped to this vault: one
    /// whose proof loses to the canonical block of the same parent is
    /// refused as `NotBetter` once its header is checked, before its
    /// transactions are. It could only be kept as a loser, and under load
    /// every vault whose winner came late made one. Blocks asked for in a
    /// sync are imported whatever they are: a branch that grew on such a
    /// block comes that way.
    pub fn import_gossiped(
        &mut self,
        block: Block,
        now_ms: u64,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        self.import_checked(block, now_ms, true, origin)
    }

    fn import_checked(
        &mut self,
        block: Block,
        now_ms: u64,
        refuse_beaten: bool,
        origin: Origin,
    ) -> Result<Imported, Rejection> {
        let hash = block.hash();
        let store_err = unable_to_store;
        if self.store.info(&hash).map_err(store_err)?.is_some() {
            return Ok(Imported::Duplicate);
        }
        let parent_hash = block.header.parent;
        let Some(parent) = self.parent(&parent_hash).map_err(store_err)? else {
            // What can be checked without the parent is checked before the
            // block is kept: a copy under a real block's hash with another
            // signature or other transactions (the hash covers neither)
            // would otherwise wait in its place and be refused when the
            // parent comes, and the real block, a duplicate of it, dropped.
            let cache = self.sig_cache();
            validate::check_orphan(&self.spec, &self.chain_id, &block, now_ms, cache)?;
            self.orphans.keep(block, hash, origin, now_ms);
            return Ok(Imported::Orphan);
        };
        if let Some(info) = self.store.info(&parent_hash).map_err(store_err)? {
            if info.status == Status::Invalid {
                return Err(Rejection::UnknownParent);
            }
        }
        let rank = validate::check_header(
            &self.spec,
            &self.chain_id,
            &parent,
            &block,
            now_ms,
            self.sig_cache(),
        )?;
        if refuse_beaten {
            // Signed by its producer: its time is the producer's word.
            self.note_delay(block.header.timestamp_ms, now_ms);
            if self.beaten(&block, &rank).map_err(store_err)? {
                return Err(Rejection::NotBetter);
            }
        }
        validate::check_txs(&self.spec, &self.chain_id, &block, self.sig_cache())?;
        self.store.insert_block(&block, rank).map_err(store_err)?;
        let outcome = self.choose(&hash, &block, now_ms).map_err(store_err)??;
        Ok(outcome)
    }

    /// A gossiped block made at `made_ms` arrived at `now_ms`.
    fn note_delay(&mut self, made_ms: u64, now_ms: u64) {
        // A block withheld or relayed very late says little of the
        // network: a sample counts for at most a few slots.
        let sample = now_ms.saturating_sub(made_ms).min(4 * self.spec.slot_ms) as f64;
        self.block_delay_ms += (sample - self.block_delay_ms) / 4.0;
    }

    /// How long gossiped blocks have lately taken to arrive, in
    /// milliseconds (smoothed).
    pub fn block_delay_ms(&self) -> f64 {
        self.block_delay_ms
    }

    /// Whether a block of rank `rank` loses to the canonical block of the
    /// same parent at its height.
    fn beaten(&self, block: &Block, rank: &Ranked) -> Result<bool, StoreError> {
        let h = &block.header;
        let Some(canonical) = self.store.canonical(h.height)? else {
            return Ok(false);
        };
        let Some(info) = self.store.info(&canonical)? else {
            return Ok(false);
        };
        Ok(info.parent == h.parent && info.rank.beats(rank))
    }

    /// Blocks that waited for `parent`, now that it is known.
    pub fn take_orphans(&mut self, parent: &[u8; 32]) -> Vec<Block> {
        self.orphans.take(parent)
    }

    /// Blocks kept while their parent is missing.
    pub fn orphan_count(&self) -> usize {
        self.orphans.count()
    }

    /// Orphans kept from `origin`.
    pub fn orphans_from(&self, origin: Origin) -> usize {
        self.orphans.from(origin)
    }

    /// Drops orphans that waited too long ([`ORPHAN_SLOTS`]): what keeps
    /// the pool from holding blocks whose parents never come once their
    /// senders fall silent.
    pub fn expire_orphans(&mut self, now_ms: u64) {
        self.orphans.expire(now_ms);
    }

    /// Imports the next block of `adoption`: the block it began with, then
    /// each block that waited for an imported one as an orphan. None when
    /// none is left. One block a call, so that a caller can let go of the
    /// engine between blocks.
    pub fn import_next(
        &mut self,
        adoption: &mut Adoption,
        now_ms: u64,
    ) -> Option<([u8; 32], Result<Imported, Rejection>)> {
        let block = adoption.queue.pop()?;
        let hash = block.hash();
        let origin = std::mem::replace(&mut adoption.origin, Origin::LOCAL);
        let outcome = if std::mem::take(&mut adoption.gossiped) {
            self.import_gossiped(block, now_ms, origin)
        } else {
            self.import_from(block, now_ms, origin)
        };
        if matches!(outcome, Ok(Imported::NewHead { .. }) | Ok(Imported::Kept)) {
            adoption.queue.extend(self.take_orphans(&hash));
        }
        Some((hash, outcome))
    }

    /// Imports a block and every block that waited for it, at once
    /// ([`import_next`](Self::import_next) until none is left): each
    /// block's hash and outcome, the first block's first.
    pub fn import_with_orphans(
        &mut self,
        block: Block,
        now_ms: u64,
        gossiped: bool,
    ) -> Vec<([u8; 32], Result<Imported, Rejection>)> {
        let mut adoption = Adoption::new(block, gossiped, Origin::LOCAL);
        std::iter::from_fn(|| self.import_next(&mut adoption, now_ms)).collect()
    }

    /// Fork choice between the canonical chain and the one ending at `tip`.
    fn choose(
        &mut self,
        tip: &[u8; 32],
        block: &Block,
        now_ms: u64,
    ) -> Result<Result<Imported, Rejection>, StoreError> {
        let genesis = Parent::genesis(&self.spec).hash;
        let mut branch = Vec::new();
        let mut at = *tip;
        let ancestor_height = loop {
            if at == genesis {
                break 0;
            }
            let info = self
                .store
                .info(&at)?
                .ok_or(StoreError::Corrupt("a block's parent"))?;
            if info.status == Status::Invalid {
                return Ok(Ok(Imported::Kept));
            }
            if self.store.canonical(info.height)? == Some(at) {
                break info.height;
            }
            branch.push(Fork {
                hash: at,
                rank: info.rank,
            });
            at = info.parent;
        };
        branch.reverse();
        let mut current = Vec::new();
        for height in ancestor_height + 1..=self.head.height {
            let hash = self
                .store
                .canonical(height)?
                .ok_or(StoreError::Corrupt("a height"))?;
            let info = self
                .store
                .info(&hash)?
                .ok_or(StoreError::Corrupt("a block"))?;
            current.push(Fork {
                hash,
                rank: info.rank,
            });
        }
        if !fork::prefer(&current, &branch) {
            return Ok(Ok(Imported::Kept));
        }
        let hashes: Vec<[u8; 32]> = branch.iter().map(|f| f.hash).collect();
        if let Err(refused) = self.store.make_canonical(&hashes)? {
            self.store.mark_invalid(&refused.block)?;
            if refused.block == *tip {
                return Ok(Err(refused.why));
            }
            return Ok(Ok(Imported::Kept));
        }
        let left = current.len();
        self.set_head(tip, block, now_ms)?;
        // The transactions of the blocks that left the canonical chain go
        // back to the pool, unless the new chain holds them: a write that
        // a client was told had succeeded must not vanish with its block.
        for left in &current {
            let Some(old) = self.store.block(&left.hash)? else {
                continue;
            };
            for tx in old.txs {
                let applied = self.store.register_version(&tx.owner, &tx.name)?;
                if tx.version > applied {
                    self.mempool.put_back(tx.id(&self.chain_id), tx);
                }
            }
        }
        Ok(Ok(Imported::NewHead { left }))
    }

    fn set_head(&mut self, hash: &[u8; 32], block: &Block, now_ms: u64) -> Result<(), StoreError> {
        self.head = Parent {
            hash: *hash,
            height: block.header.height,
            timestamp_ms: block.header.timestamp_ms,
            proof_hash: block.header.proof.hash(),
        };
        let next = Election::new(self.head, &self.chain_id, now_ms);
        self.previous = Some(std::mem::replace(&mut self.election, next));
        // Transactions the new chain holds, or made stale, leave the pool.
        let store = &self.store;
        self.mempool
            .retain_ahead(|owner, name| store.register_version(owner, name).ok());
        Ok(())
    }

    /// A proof gossiped for the next block: kept if it is the best seen
    /// (then it is relayed), else refused with why.
    pub fn offer_proof(&mut self, msg: &ProofMsg) -> Result<(), Rejection> {
        if msg.chain_id != self.chain_id {
            return Err(Rejection::WrongChain);
        }
        let height = self.election.height();
        if msg.height < height || (msg.height == height && msg.parent != self.election.parent.hash)
        {
            return Err(Rejection::StaleHeight(msg.height));
        }
        if msg.height > height {
            return Err(Rejection::FutureHeight(msg.height));
        }
        let rank = validate::check_proof(
            &self.spec,
            &self.chain_id,
            &self.election.parent,
            &msg.proof,
        )?;
        if self.election.offer(rank, msg.proof.clone()) {
            Ok(())
        } else {
            Err(Rejection::NotBetter)
        }
    }

    /// This vault's own best proof for the election at `height` on
    /// `parent`: returns the message to gossip when it is the best seen.
    /// `records`: the records the network is thought to hold, from which
    /// the proof's expected place among all the network's proofs follows
    /// ([`Ranked::expected_place`]); 0 when not known.
    pub fn offer_own(
        &mut self,
        height: u64,
        parent: [u8; 32],
        proof: ChainProof,
        rank: Ranked,
        records: f64,
    ) -> Option<ProofMsg> {
        if self.election.height() != height || self.election.parent.hash != parent {
            return None;
        }
        self.election.own = Some((rank, proof.clone()));
        // The best proof's expected place is below 1 two times in three and
        // below 2 six times in seven: it is rarely held back.
        self.election.own_expected_wait =
            (rank.expected_place(records) - 1.0).clamp(0.0, MAX_EXPECTED_WAIT);
        let best = self.election.offer(rank, proof.clone());
        best.then_some(ProofMsg {
            chain_id: self.chain_id,
            height,
            parent,
            proof,
        })
    }

    /// Whether this vault's own proof is still the best seen for the
    /// election at `height` on `parent`.
    pub fn own_is_best(&self, height: u64, parent: &[u8; 32]) -> bool {
        let e = &self.election;
        e.height() == height && e.parent.hash == *parent && e.own_rank() == Some(0)
    }

    /// When this vault may produce the next block, in Unix milliseconds:
    /// one slot after the parent for the best proof, one place later for
    /// each proof seen that beats this vault's own, or for each place its
    /// proof expects to take among the network's beyond the first,
    /// whichever is later. A place is a producer timeout, or twice the
    /// recent [`block_delay_ms`](Self::block_delay_ms) if longer. None
    /// without a proof of its own, or once it has produced.
    ///
    /// The proofs seen space the producers when messages come in time. The
    /// expected place does when they do not: on a loaded machine or across
    /// a distant link the better proofs arrive after the turn has come,
    /// and by the proofs seen alone every vault would be the best it knew
    /// of and produce at once. By its expected place a vault waits in
    /// proportion to how unlikely its proof is to win, and the likely
    /// winner's block reaches it first.
    ///
    /// Never sooner than a proof window after this vault learned of the
    /// parent: a parent that arrives late (a loaded machine, a distant
    /// region) would otherwise find every vault's turn come already, and
    /// every vault would produce before it heard a better proof.
    pub fn production_due(&self) -> Option<u64> {
        let e = &self.election;
        if e.produced {
            return None;
        }
        let seen = e.own_rank()? as f64;
        let places = seen.max(e.own_expected_wait);
        let opens = self
            .spec
            .earliest_ms(e.parent.timestamp_ms)
            .max(e.opened_ms + self.spec.proof_window_ms);
        // A place is a producer timeout, or twice the time blocks have
        // lately taken to arrive if that is longer: a better producer's
        // block must have time to come before this vault's turn.
        let place_ms = (self.spec.producer_timeout_ms as f64).max(2.0 * self.block_delay_ms);
        Some(opens + (places * place_ms).round() as u64)
    }

    /// Whether this vault should produce at once for the height just
    /// settled: its proof beats the new head's, made before its turn came,
    /// and the head is of this slot (an old block met while catching up is
    /// not worth a branch).
    pub fn should_contest(&self, now_ms: u64) -> bool {
        let Some(prev) = &self.previous else {
            return false;
        };
        if now_ms > self.head.timestamp_ms + self.spec.slot_ms {
            return false;
        }
        let Some((own, _)) = &prev.own else {
            return false;
        };
        if prev.produced || prev.height() != self.head.height {
            return false;
        }
        match self.store.info(&self.head.hash) {
            Ok(Some(info)) => info.parent == prev.parent.hash && own.beats(&info.rank),
            _ => false,
        }
    }

    /// Produces the next block from this vault's proof and the pending
    /// transactions that apply, marking the election done. `contest`:
    /// produce for the height just settled instead (see
    /// [`should_contest`](Self::should_contest)).
    pub fn produce(&mut self, key: &Keypair, now_ms: u64, contest: bool) -> Option<Block> {
        let election = if contest {
            self.previous.as_mut()?
        } else {
            &mut self.election
        };
        let (_, proof) = election.own.clone()?;
        if election.produced || proof.farmer_key != key.public() {
            return None;
        }
        election.produced = true;
        let parent = election.parent;
        let timestamp = now_ms.max(self.spec.earliest_ms(parent.timestamp_ms));
        let txs = if contest {
            Vec::new()
        } else {
            self.pending_txs()
        };
        Some(Block::produce(
            key,
            self.chain_id,
            parent.height + 1,
            parent.hash,
            timestamp,
            proof,
            txs,
        ))
    }

    /// Pending transactions that apply on the head, in order, within the
    /// block's limit.
    fn pending_txs(&self) -> Vec<RegisterTx> {
        let store = &self.store;
        self.mempool
            .applicable(self.spec.max_block_txs as usize, |owner, name| {
                store.register_version(owner, name).ok()
            })
    }

    /// A transaction for the pool: checked on its own and against the
    /// register's version; Ok(false) when already pending.
    pub fn add_tx(&mut self, tx: RegisterTx) -> Result<bool, Rejection> {
        check_tx(&self.spec, &self.chain_id, &tx, self.sig_cache())?;
        self.add_checked_tx(tx)
    }

    /// [`Engine::add_tx`] for a transaction `check_tx` passed already: the
    /// signature is checked before the engine's lock is taken, so that
    /// workers check transactions side by side.
    pub fn add_checked_tx(&mut self, tx: RegisterTx) -> Result<bool, Rejection> {
        let current = self
            .store
            .register_version(&tx.owner, &tx.name)
            .map_err(unable_to_store)?;
        let id = tx.id(&self.chain_id);
        self.mempool.add(id, tx, current)
    }

    /// Whether a write of `version` to the register is pending here.
    pub fn is_pending(&self, owner: &[u8; 32], name: &[u8], version: u64) -> bool {
        self.mempool.is_pending(owner, name, version)
    }

    #[cfg(test)]
    pub fn mempool_len(&self) -> usize {
        self.mempool.len()
    }

    /// Canonical blocks from `from`, at most `max` of them and `max_bytes`
    /// encoded (but at least one block, if there is one): a sync answer
    /// must fit in one message.
    pub fn blocks_from(&self, from: u64, max: u32, max_bytes: usize) -> Vec<Vec<u8>> {
        self.store
            .canonical_blocks(from, max, max_bytes)
            .unwrap_or_default()
    }

    /// The canonical block at `height`.
    pub fn block_at(&self, height: u64) -> Result<Option<Block>, StoreError> {
        match self.store.canonical(height)? {
            Some(hash) => self.store.block(&hash),
            None => Ok(None),
        }
    }

    /// The last `n` canonical blocks, newest first.
    pub fn recent(&self, n: usize) -> Vec<BlockSummary> {
        let mut out = Vec::new();
        let mut height = self.head.height;
        while height > 0 && out.len() < n {
            if let (Ok(Some(block)), Ok(Some(hash))) =
                (self.block_at(height), self.store.canonical(height))
            {
                let quality = self
                    .store
                    .info(&hash)
                    .ok()
                    .flatten()
                    .map_or(0, |i| i.rank.quality);
                out.push(BlockSummary {
                    height,
                    hash: hex::encode(hash),
                    producer: hex::encode(block.header.proof.farmer_key),
                    quality,
                    timestamp_ms: block.header.timestamp_ms,
                    txs: block.txs.len(),
                });
            }
            height -= 1;
        }
        out
    }
}

/// This vault's store failed: its own trouble, not the sender's.
fn unable_to_store(e: StoreError) -> Rejection {
    Rejection::Unable {
        what: "store",
        why: e.to_string(),
    }
}

/// A stored block as the parent of its child (the genesis for its hash).
fn parent_of(
    store: &Store,
    spec: &ChainSpec,
    hash: &[u8; 32],
) -> Result<Option<Parent>, StoreError> {
    let genesis = Parent::genesis(spec);
    if *hash == genesis.hash {
        return Ok(Some(genesis));
    }
    Ok(store.info(hash)?.map(|info| Parent {
        hash: *hash,
        height: info.height,
        timestamp_ms: info.timestamp_ms,
        proof_hash: info.proof_hash,
    }))
}

#[cfg(test)]
mod tests;
