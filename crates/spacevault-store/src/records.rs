//! The store's own records, in the chain's canonical encoding.

use crate::StoreError;
use spacevault_chain::codec::{Reader, Writer};
use spacevault_chain::types::Ranked;
use spacevault_chain::Target;

/// Where a stored block stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Passed the stateless checks; its transactions have not yet been
    /// applied on a canonical chain.
    Stored,
    /// Its transactions applied on the canonical chain at least once.
    Applied,
    /// Its transactions do not apply after its parent: it and every block
    /// built on it are refused.
    Invalid,
}

/// What fork choice and validation need of a block, without decoding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    pub height: u64,
    pub parent: [u8; 32],
    /// The slot it was made in.
    pub slot: u64,
    pub rank: Ranked,
    /// The weight of its chain, up to and including it.
    pub weight: u128,
    /// The target its child must meet.
    pub child_target: Target,
    /// The seed of its era's line of slots on its branch.
    pub line: [u8; 32],
    /// The hash of its branch's latest block before its era: the entropy
    /// of the era after it.
    pub opening: [u8; 32],
    pub status: Status,
}

impl BlockInfo {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.height)
            .fixed(&self.parent)
            .u64(self.slot)
            .fixed(&self.rank.distance)
            .u64(self.rank.tiebreak)
            .fixed(&self.rank.plot_id)
            .u32(self.rank.quality)
            .fixed(&self.weight.to_be_bytes())
            .u64(self.child_target.0)
            .fixed(&self.line)
            .fixed(&self.opening)
            .u8(match self.status {
                Status::Stored => 0,
                Status::Applied => 1,
                Status::Invalid => 2,
            });
        w.finish()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<BlockInfo, StoreError> {
        let bad = |_| StoreError::Corrupt("a block's info");
        let mut r = Reader::new(bytes);
        let info = BlockInfo {
            height: r.u64("height").map_err(bad)?,
            parent: r.array("parent").map_err(bad)?,
            slot: r.u64("slot").map_err(bad)?,
            rank: Ranked {
                distance: r.array("distance").map_err(bad)?,
                tiebreak: r.u64("tiebreak").map_err(bad)?,
                plot_id: r.array("plot id").map_err(bad)?,
                quality: r.u32("quality").map_err(bad)?,
            },
            weight: u128::from_be_bytes(r.array("weight").map_err(bad)?),
            child_target: Target(r.u64("child target").map_err(bad)?),
            line: r.array("line").map_err(bad)?,
            opening: r.array("opening").map_err(bad)?,
            status: match r.u8("status").map_err(bad)? {
                0 => Status::Stored,
                1 => Status::Applied,
                2 => Status::Invalid,
                _ => return Err(StoreError::Corrupt("a block's status")),
            },
        };
        r.finish().map_err(bad)?;
        Ok(info)
    }
}

/// A register's latest write on the canonical chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterEntry {
    pub version: u64,
    pub value: Vec<u8>,
    /// The owner's signature of the transaction that wrote it.
    pub signature: [u8; 64],
    /// The block that holds that transaction.
    pub height: u64,
}

impl RegisterEntry {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.version)
            .bytes(&self.value)
            .fixed(&self.signature)
            .u64(self.height);
        w.finish()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<RegisterEntry, StoreError> {
        let bad = |_| StoreError::Corrupt("a register");
        let mut r = Reader::new(bytes);
        let entry = RegisterEntry {
            version: r.u64("version").map_err(bad)?,
            value: r.bytes("value", usize::MAX).map_err(bad)?.to_vec(),
            signature: r.array("signature").map_err(bad)?,
            height: r.u64("height").map_err(bad)?,
        };
        r.finish().map_err(bad)?;
        Ok(entry)
    }
}

/// A block's undo records: each register it wrote and its entry before,
/// none when the block created it.
pub(crate) type UndoRecord = (Vec<u8>, Option<Vec<u8>>);

pub(crate) fn encode_undo(records: &[UndoRecord]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(records.len() as u32);
    for (key, previous) in records {
        w.bytes(key);
        match previous {
            Some(p) => w.u8(1).bytes(p),
            None => w.u8(0),
        };
    }
    w.finish()
}

pub(crate) fn decode_undo(bytes: &[u8]) -> Result<Vec<UndoRecord>, StoreError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let bad = |_| StoreError::Corrupt("a block's undo records");
    let mut r = Reader::new(bytes);
    let n = r.count("undo records", usize::MAX, 5).map_err(bad)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let key = r.bytes("key", usize::MAX).map_err(bad)?.to_vec();
        let previous = match r.u8("flag").map_err(bad)? {
            0 => None,
            _ => Some(r.bytes("entry", usize::MAX).map_err(bad)?.to_vec()),
        };
        out.push((key, previous));
    }
    // Undone newest first: a block that wrote one register twice restores
    // the entry from before the first write last.
    out.reverse();
    r.finish().map_err(bad)?;
    Ok(out)
}
