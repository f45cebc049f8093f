//! A vault's store: every block it has seen, the canonical chain, the
//! registers as of the chain's head and the proof of time's slots in one
//! redb database in the node's `--data` directory, and the blobs it keeps
//! as files beside it.
//!
//! redb, rather than an LSM store such as fjall: a vault's writes are small
//! and its reads random (a block, a register, a blob), redb's copy-on-write
//! B-trees commit atomically with one fsync and need no compaction or
//! write-ahead log to replay, and a process killed at any moment leaves the
//! last durable transaction. Everything that must change together (a new
//! head, the canonical heights, the registers and their undo records)
//! changes in one transaction, so a reopened store is always consistent.
//!
//! Two kinds of writes differ in what they promise. A blob is durable when
//! `put_blob` returns, since the vault then signs a receipt for it. Chain
//! writes (blocks, the head) are atomic but not synced one by one: any peer
//! can send a block again, and an fsync for every block on every vault is
//! the largest cost of a busy machine running many vaults. They become
//! durable with the next blob or [`Store::flush`], which the node calls
//! every few seconds, when it stops, and before it answers a client's
//! register write as done; a store killed before that opens at an
//! earlier, consistent head.
//!
//! Blob bytes are files of their own beside the database ([`blobs`]); the
//! database indexes them (address and length) and counts them in the same
//! transaction (`blob_index.rs`). Whoever reads a blob hashes it again before trusting it
//! (the store never remembers that a blob was valid).
//!
//! The store has a version, in its `meta` table ([`STORE_VERSION`]): 1
//! (no version recorded) kept blob bytes in the database and is moved to
//! files when opened; later ones keep them in files. A store of an older
//! version than this build's holds the chain of an older spec, whose id no
//! spec of this build has, and is refused as another chain's; one of a
//! later version is refused as newer. A database
//! that cannot be opened can be moved aside: the vault then starts a new
//! one, indexes the blob files it finds, and syncs the chain from its
//! peers.

mod blob_index;
pub mod blobs;
mod disputes;
mod holders;
mod locate;
mod records;
mod slots;

pub use blob_index::blob_dir_of;
use blob_index::index_blobs;
pub use holders::Registered;
pub use records::{BlockInfo, RegisterEntry, Status};
pub use slots::Pruned;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use spacevault_chain::time::Branch;
use spacevault_chain::types::Ranked;
use spacevault_chain::validate::{check_versions, Versions};
use spacevault_chain::{Block, ChainSpec, Limits, Rejection, Target};
use std::path::Path;

/// The store's version: 2, blob bytes in files; 3, blocks' slots, weights
/// and targets in their info; 4, the farmer keys the canonical chain bans;
/// 5, slots kept by line and each block's line in its info; 6, the lines
/// listed by era (a store of version 5 is listed when opened); 7, holder
/// registrations by owner and height; 8, challenges to holders and their
/// answers by holder and height (a store of an older version belongs to a
/// chain of an older spec, whose id no spec of this build has).
pub const STORE_VERSION: u32 = 8;

const BLOCKS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("blocks");
const INFO: TableDefinition<&[u8], &[u8]> = TableDefinition::new("block_info");
const CANONICAL: TableDefinition<u64, &[u8]> = TableDefinition::new("canonical");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const REGISTERS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("registers");
const UNDO: TableDefinition<&[u8], &[u8]> = TableDefinition::new("undo");
const BLOBS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("blobs");
/// Farmer keys the canonical chain bans for equivocation, each to the hash
/// of the block that carried the evidence.
const BANS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bans");

/// A count or mark kept in the meta table under `key` (a u64,
/// little-endian; 0 when absent), `what` naming it when damaged.
pub(crate) fn meta_u64(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
    what: &'static str,
) -> Result<u64, StoreError> {
    match meta.get(key)? {
        None => Ok(0),
        Some(v) => v
            .value()
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| StoreError::Corrupt(what)),
    }
}

/// The page cache redb keeps for a store.
const CACHE_BYTES: usize = 16 << 20;

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("the store: {0}")]
    Db(String),
    #[error(
        "{path} holds chain {found}, not this spec's {expected}: give the node another --data directory"
    )]
    OtherChain {
        path: String,
        found: String,
        expected: String,
    },
    #[error("the store's record of {0} is damaged")]
    Corrupt(&'static str),
    #[error("block {0} is not in the store")]
    MissingBlock(String),
    #[error("blob {0} is in the store's index but its file is gone")]
    BlobLost(String),
    #[error("the blob files: {0}")]
    Files(String),
    #[error(
        "{path} was written by a newer spacevault (store version {found}; this one reads up to {STORE_VERSION})"
    )]
    Newer { path: String, found: u32 },
    #[error(
        "the store {path} cannot be opened ({why}). Its blobs are files in {blobs} and its chain is kept by the network: move {path} aside and start the vault again to rebuild it from them"
    )]
    Unopenable {
        path: String,
        blobs: String,
        why: String,
    },
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> StoreError {
        StoreError::Files(e.to_string())
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> StoreError {
                StoreError::Db(redb::Error::from(e).to_string())
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

/// [`Store::head`], in a read transaction under way.
fn head_in(tx: &redb::ReadTransaction) -> Result<Option<([u8; 32], u64)>, StoreError> {
    let meta = tx.open_table(META)?;
    let Some(hash) = meta.get("head")? else {
        return Ok(None);
    };
    let hash: [u8; 32] = hash
        .value()
        .try_into()
        .map_err(|_| StoreError::Corrupt("the head"))?;
    let info = tx.open_table(INFO)?;
    let height = match info.get(hash.as_slice())? {
        Some(v) => BlockInfo::decode(v.value())?.height,
        None => return Err(StoreError::Corrupt("the head's block")),
    };
    Ok(Some((hash, height)))
}

/// A block that could not be made canonical, and why.
#[derive(Debug)]
pub struct Refused {
    pub block: [u8; 32],
    pub why: Rejection,
}

/// The store of one vault.
pub struct Store {
    db: Database,
    blobs: blobs::BlobFiles,
    limits: Limits,
    /// The chain's slots and eras: which era a kept slot's line is of.
    time: spacevault_chain::time::TimeParams,
    /// Whether chain writes wait for a durable commit.
    unsynced: std::sync::atomic::AtomicBool,
}

/// The key of a register: its owner, then its name.
fn register_key(owner: &[u8; 32], name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(32 + name.len());
    k.extend_from_slice(owner);
    k.extend_from_slice(name);
    k
}

impl Store {
    /// Opens the store at `path`, creating it for `spec`'s chain if it is
    /// new; a store of another chain is refused.
    pub fn open(path: &Path, spec: &ChainSpec) -> Result<Store, StoreError> {
        let blob_dir = blob_dir_of(path);
        // A vault's working set is small; many vaults share one machine in
        // tests and benchmarks. A panic inside redb on a damaged file is
        // an unopenable store too.
        let created = std::panic::catch_unwind(|| {
            redb::Builder::new()
                .set_cache_size(CACHE_BYTES)
                .create(path)
        });
        let unopenable = |why: String| StoreError::Unopenable {
            path: path.display().to_string(),
            blobs: blob_dir.display().to_string(),
            why,
        };
        let db = match created {
            Ok(Ok(db)) => db,
            Ok(Err(e)) => return Err(unopenable(e.to_string())),
            Err(_) => return Err(unopenable("the database library failed reading it".into())),
        };
        let blobs = blobs::BlobFiles::open(&blob_dir)?;
        let chain_id = spec.chain_id();
        let tx = db.begin_write()?;
        {
            let mut meta = tx.open_table(META)?;
            let found = meta.get("chain_id")?.map(|v| v.value().to_vec());
            match found {
                Some(found) if found != chain_id => {
                    return Err(StoreError::OtherChain {
                        path: path.display().to_string(),
                        found: hex::encode(found),
                        expected: hex::encode(chain_id),
                    })
                }
                Some(_) => {}
                None => {
                    meta.insert("chain_id", chain_id.as_slice())?;
                }
            }
            // Every table exists from the start, so that readers need not
            // tell "empty" from "missing".
            tx.open_table(BLOCKS)?;
            tx.open_table(INFO)?;
            tx.open_table(CANONICAL)?;
            tx.open_table(REGISTERS)?;
            tx.open_table(UNDO)?;
            tx.open_table(BLOBS)?;
            tx.open_table(BANS)?;
            tx.open_table(slots::SLOTS)?;
            tx.open_table(slots::LINES)?;
            tx.open_table(holders::HOLDERS)?;
            tx.open_table(disputes::DISPUTES)?;
            let version = match meta.get("store_version")? {
                Some(v) => u32::from_le_bytes(
                    v.value()
                        .try_into()
                        .map_err(|_| StoreError::Corrupt("the store's version"))?,
                ),
                None => 1,
            };
            if version > STORE_VERSION {
                return Err(StoreError::Newer {
                    path: path.display().to_string(),
                    found: version,
                });
            }
            drop(meta);
            if version < STORE_VERSION {
                index_blobs(&tx, &blobs)?;
                slots::index_lines(&tx, &spec.time())?;
                let mut meta = tx.open_table(META)?;
                meta.insert("store_version", STORE_VERSION.to_le_bytes().as_slice())?;
            }
        }
        tx.commit()?;
        Ok(Store {
            db,
            blobs,
            limits: Limits::of(spec),
            time: spec.time(),
            unsynced: Default::default(),
        })
    }

    /// A transaction for chain data: atomic, durable with the next flush.
    fn begin_chain_write(&self) -> Result<redb::WriteTransaction, StoreError> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(redb::Durability::None)?;
        self.unsynced
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(tx)
    }

    /// A durable transaction: it makes every earlier write durable too.
    fn begin_durable_write(&self) -> Result<redb::WriteTransaction, StoreError> {
        let tx = self.db.begin_write()?;
        // Taken under redb's write lock, as chain writes set it.
        self.unsynced
            .store(false, std::sync::atomic::Ordering::Relaxed);
        Ok(tx)
    }

    /// Makes every earlier write durable; a no-op when there is none.
    ///
    /// The flag is read under redb's write lock: a flush that found it set
    /// holds the lock until its commit is durable, so a second flush that
    /// finds it clear has waited for that commit, and never returns while
    /// the data it answers for is still on its way to the disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        let tx = self.db.begin_write()?;
        if !self
            .unsynced
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            tx.abort()?;
            return Ok(());
        }
        tx.commit().inspect_err(|_| {
            // Still not durable: the next flush tries again.
            self.unsynced
                .store(true, std::sync::atomic::Ordering::Relaxed)
        })?;
        Ok(())
    }

    /// The canonical head: its hash and height, none before block 1.
    pub fn head(&self) -> Result<Option<([u8; 32], u64)>, StoreError> {
        head_in(&self.db.begin_read()?)
    }

    /// The canonical block's hash at `height`.
    pub fn canonical(&self, height: u64) -> Result<Option<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(CANONICAL)?;
        let hash = t.get(height)?;
        hash.map(|h| {
            h.value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("a height"))
        })
        .transpose()
    }

    pub fn block(&self, hash: &[u8; 32]) -> Result<Option<Block>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(BLOCKS)?;
        let bytes = t.get(hash.as_slice())?;
        bytes
            .map(|b| {
                Block::decode(b.value(), &self.limits).map_err(|_| StoreError::Corrupt("a block"))
            })
            .transpose()
    }

    /// Canonical blocks from `from` (at least 1), encoded, at most `max`
    /// of them and `max_bytes` with a 4-byte length each (but at least
    /// one block, if there is one): one read of one moment of the chain,
    /// so that a reorg under way never mixes two branches in an answer.
    /// Each block is decoded on the way, so a damaged one ends the run
    /// rather than being sent on.
    pub fn canonical_blocks(
        &self,
        from: u64,
        max: u32,
        max_bytes: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let tx = self.db.begin_read()?;
        self.canonical_blocks_in(&tx, from, max, max_bytes)
    }

    /// [`Store::canonical_blocks`], in a read transaction under way.
    fn canonical_blocks_in(
        &self,
        tx: &redb::ReadTransaction,
        from: u64,
        max: u32,
        max_bytes: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let canonical = tx.open_table(CANONICAL)?;
        let blocks = tx.open_table(BLOCKS)?;
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let from = from.max(1);
        for height in from..from.saturating_add(max as u64) {
            let Some(hash) = canonical.get(height)? else {
                break;
            };
            let Some(stored) = blocks.get(hash.value())? else {
                break;
            };
            let Ok(block) = Block::decode(stored.value(), &self.limits) else {
                break;
            };
            let encoded = block.encode();
            bytes += encoded.len() + 4;
            if bytes > max_bytes && !out.is_empty() {
                break;
            }
            out.push(encoded);
        }
        Ok(out)
    }

    /// What the store knows of a block without decoding it.
    pub fn info(&self, hash: &[u8; 32]) -> Result<Option<BlockInfo>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(INFO)?;
        let v = t.get(hash.as_slice())?;
        v.map(|v| BlockInfo::decode(v.value())).transpose()
    }

    /// Keeps a block that passed the stateless checks, not yet canonical,
    /// with its proof's rank, its chain's weight through it, the target
    /// its child must meet and its branch's lines of slots. Its transactions' versions are checked when it
    /// joins the canonical chain ([`make_canonical`](Self::make_canonical)).
    pub fn insert_block(
        &self,
        block: &Block,
        rank: Ranked,
        weight: u128,
        child_target: Target,
        lines: &Branch,
    ) -> Result<BlockInfo, StoreError> {
        let info = BlockInfo {
            height: block.header.height,
            parent: block.header.parent,
            slot: block.header.stamp.slot,
            rank,
            weight,
            child_target,
            line: lines.line,
            opening: lines.opening,
            status: Status::Stored,
        };
        let hash = block.hash();
        let tx = self.begin_chain_write()?;
        {
            tx.open_table(BLOCKS)?
                .insert(hash.as_slice(), block.encode().as_slice())?;
            let mut infos = tx.open_table(INFO)?;
            if infos.get(hash.as_slice())?.is_none() {
                infos.insert(hash.as_slice(), info.encode().as_slice())?;
            }
        }
        tx.commit()?;
        Ok(info)
    }

    /// Marks a block (and so every block built on it) as invalid.
    pub fn mark_invalid(&self, hash: &[u8; 32]) -> Result<(), StoreError> {
        let tx = self.begin_chain_write()?;
        {
            let mut infos = tx.open_table(INFO)?;
            let current = infos.get(hash.as_slice())?.map(|v| v.value().to_vec());
            if let Some(bytes) = current {
                let mut info = BlockInfo::decode(&bytes)?;
                info.status = Status::Invalid;
                infos.insert(hash.as_slice(), info.encode().as_slice())?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Makes the chain ending at `tip` canonical, in one transaction: rolls
    /// the registers and bans back over the blocks of the old chain above
    /// the common ancestor, applies the new ones' transactions (checking
    /// their versions) and evidence (refusing a block of a banned farmer
    /// key, or evidence against one), and moves the head. When a new block
    /// does not apply, nothing changes and that block is named.
    pub fn make_canonical(&self, branch: &[[u8; 32]]) -> Result<Result<(), Refused>, StoreError> {
        let Some(first) = branch.first() else {
            return Ok(Ok(()));
        };
        let first_height = self
            .info(first)?
            .ok_or_else(|| StoreError::MissingBlock(hex::encode(first)))?
            .height;
        let head_height = self.head()?.map_or(0, |(_, h)| h);
        let tx = self.begin_chain_write()?;
        {
            let mut canonical = tx.open_table(CANONICAL)?;
            let mut registers = tx.open_table(REGISTERS)?;
            let mut undo = tx.open_table(UNDO)?;
            let blocks = tx.open_table(BLOCKS)?;
            let mut infos = tx.open_table(INFO)?;
            let mut bans = tx.open_table(BANS)?;
            let mut holders = tx.open_table(holders::HOLDERS)?;
            let mut disputes = tx.open_table(disputes::DISPUTES)?;
            let read_block = |blocks: &redb::Table<&[u8], &[u8]>, hash: &[u8]| {
                let bytes = blocks
                    .get(hash)?
                    .map(|b| b.value().to_vec())
                    .ok_or_else(|| StoreError::MissingBlock(hex::encode(hash)))?;
                Block::decode(&bytes, &self.limits).map_err(|_| StoreError::Corrupt("a block"))
            };
            // Roll back, newest first.
            for height in (first_height..=head_height).rev() {
                let Some(hash) = canonical.remove(height)?.map(|h| h.value().to_vec()) else {
                    continue;
                };
                // A key is banned by one block of a chain at most (a second
                // piece of evidence against it is refused), so the bans a
                // block made are its evidence's keys.
                let old = read_block(&blocks, &hash)?;
                for e in &old.evidence {
                    bans.remove(e.farmer_key().as_slice())?;
                }
                holders::unrecord(&mut holders, &old)?;
                disputes::unrecord(&mut disputes, &old)?;
                let records = undo.remove(hash.as_slice())?.map(|v| v.value().to_vec());
                for (key, previous) in records::decode_undo(records.as_deref().unwrap_or(&[]))? {
                    match previous {
                        Some(entry) => registers.insert(key.as_slice(), entry.as_slice())?,
                        None => registers.remove(key.as_slice())?,
                    };
                }
            }
            // Apply, oldest first.
            for hash in branch {
                let block = read_block(&blocks, hash)?;
                let refused = |why| Ok(Err(Refused { block: *hash, why }));
                if bans
                    .get(block.header.proof.farmer_key().as_slice())?
                    .is_some()
                {
                    return refused(Rejection::Banned);
                }
                for e in &block.evidence {
                    if bans.get(e.farmer_key().as_slice())?.is_some() {
                        return refused(Rejection::EvidenceKnown);
                    }
                }
                let mut current = std::collections::HashMap::new();
                for t in &block.txs {
                    if let std::collections::hash_map::Entry::Vacant(slot) =
                        current.entry(register_key(&t.owner, &t.name))
                    {
                        let entry = registers.get(slot.key().as_slice())?;
                        let version = entry
                            .map(|v| RegisterEntry::decode(v.value()))
                            .transpose()?
                            .map_or(0, |e| e.version);
                        slot.insert(version);
                    }
                }
                if let Err(why) = check_versions(&MapVersions(current), &block.txs) {
                    // Dropping the transaction uncommitted leaves the store
                    // as it was.
                    return Ok(Err(Refused { block: *hash, why }));
                }
                let mut records = Vec::new();
                for t in &block.txs {
                    let key = register_key(&t.owner, &t.name);
                    let previous = registers.get(key.as_slice())?.map(|v| v.value().to_vec());
                    records.push((key.clone(), previous));
                    let entry = RegisterEntry {
                        version: t.version,
                        value: t.value.clone(),
                        signature: t.signature,
                        height: block.header.height,
                    };
                    registers.insert(key.as_slice(), entry.encode().as_slice())?;
                }
                undo.insert(hash.as_slice(), records::encode_undo(&records).as_slice())?;
                holders::record(&mut holders, &block)?;
                disputes::record(&mut disputes, &block)?;
                for e in &block.evidence {
                    bans.insert(e.farmer_key().as_slice(), hash.as_slice())?;
                }
                canonical.insert(block.header.height, hash.as_slice())?;
                let info_bytes = infos.get(hash.as_slice())?.map(|v| v.value().to_vec());
                if let Some(info_bytes) = info_bytes {
                    let mut info = BlockInfo::decode(&info_bytes)?;
                    if info.status == Status::Stored {
                        info.status = Status::Applied;
                        infos.insert(hash.as_slice(), info.encode().as_slice())?;
                    }
                }
            }
            let tip = branch.last().expect("not empty");
            tx.open_table(META)?.insert("head", tip.as_slice())?;
        }
        tx.commit()?;
        Ok(Ok(()))
    }

    /// The block of the canonical chain whose evidence banned `farmer_key`
    /// for equivocation; None when the chain does not ban it.
    pub fn ban_of(&self, farmer_key: &[u8; 32]) -> Result<Option<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(BANS)?;
        let v = t.get(farmer_key.as_slice())?;
        v.map(|v| {
            v.value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("a ban"))
        })
        .transpose()
    }

    /// The register's latest entry on the canonical chain.
    pub fn register(
        &self,
        owner: &[u8; 32],
        name: &[u8],
    ) -> Result<Option<RegisterEntry>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(REGISTERS)?;
        let v = t.get(register_key(owner, name).as_slice())?;
        v.map(|v| RegisterEntry::decode(v.value())).transpose()
    }

    /// The register's version on the canonical chain (0 when it has none).
    pub fn register_version(&self, owner: &[u8; 32], name: &[u8]) -> Result<u64, StoreError> {
        Ok(self.register(owner, name)?.map_or(0, |e| e.version))
    }
}

/// The versions of a block's registers before it, read from the store.
struct MapVersions(std::collections::HashMap<Vec<u8>, u64>);

impl Versions for MapVersions {
    fn version(&self, owner: &[u8; 32], name: &[u8]) -> u64 {
        self.0.get(&register_key(owner, name)).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;
