//! Files larger than one blob: the file is cut into parts of a fixed size,
//! each stored as a blob, and a *manifest* blob lists their addresses in
//! order; the manifest's address is the file's. A file with more parts
//! than one manifest can list gets a tree of manifests: a manifest of
//! depth `d > 0` lists manifests of depth `d - 1`, each covering the next
//! consecutive range of the file. `docs/PROTOCOL.md` ("Files") is the
//! specification.
//!
//! Every manifest names the bytes it covers and their BLAKE3 hash (the
//! root's is the file's `b3sum`), so a reader checks each range as it
//! completes as well as each part against its address.
//!
//! A blob is a manifest when it starts with [`MAGIC`]: a client storing a
//! small file that starts with it wraps the file in a manifest of one part,
//! so that every file a client stores reads back as itself.

use crate::codec::{DecodeError, Reader, Writer};
use std::collections::VecDeque;

/// The first bytes of every manifest.
pub const MAGIC: [u8; 6] = *b"svfile";
/// The manifest version this build writes and reads.
pub const VERSION: u16 = 1;
/// Bytes before the entries: magic, version, bytes, hash, part size,
/// depth, count.
pub const HEADER_BYTES: usize = 6 + 2 + 8 + 32 + 4 + 1 + 4;
/// The deepest tree a reader follows (a writer refuses a file that would
/// need more: [`depth_for`]). With 4 KiB blobs (126 entries a manifest)
/// the nine manifests of a path cover 2^62 parts.
pub const MAX_DEPTH: u8 = 8;
/// The largest part: the largest blob any chain allows.
pub const MAX_PART_BYTES: u32 = 64 << 20;

/// One manifest: the range of a file it covers and what it lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Bytes of the file this manifest covers.
    pub bytes: u64,
    /// BLAKE3 of those bytes.
    pub hash: [u8; 32],
    /// Bytes of every part, but a range's last, which may be shorter.
    pub part_bytes: u32,
    /// 0: the entries are parts; `d`: manifests of depth `d - 1`.
    pub depth: u8,
    pub entries: Vec<[u8; 32]>,
}

/// Whether `blob` claims to be a manifest (it may still not decode).
pub fn is_manifest(blob: &[u8]) -> bool {
    blob.starts_with(&MAGIC)
}

/// The depth of the root of a file of `parts` parts, at `fanout` entries
/// a manifest (0: one manifest lists every part).
pub fn depth_for(parts: u64, fanout: usize) -> u8 {
    let mut depth = 0u8;
    let mut covered = fanout as u64;
    while covered < parts {
        covered = covered.saturating_mul(fanout as u64);
        depth += 1;
    }
    depth
}

/// Entries a manifest holds within blobs of `max_blob_bytes`; at least 2
/// for a tree to grow at all.
pub fn fanout(max_blob_bytes: u32) -> Option<usize> {
    let entries = (max_blob_bytes as usize).checked_sub(HEADER_BYTES)? / 32;
    (entries >= 2).then_some(entries)
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.fixed(&MAGIC)
            .u16(VERSION)
            .u64(self.bytes)
            .fixed(&self.hash)
            .u32(self.part_bytes)
            .u8(self.depth)
            .u32(self.entries.len() as u32);
        for e in &self.entries {
            w.fixed(e);
        }
        w.finish()
    }

    /// A manifest from untrusted bytes: its fields within their bounds and
    /// consistent with each other (a range of `bytes` cut into parts has
    /// exactly that many), nothing allocated beyond the blob's own size.
    pub fn decode(blob: &[u8]) -> Result<Manifest, DecodeError> {
        let mut r = Reader::new(blob);
        if r.array::<6>("manifest's magic")? != MAGIC {
            return Err(DecodeError::Invalid("not a file manifest"));
        }
        let version = r.u16("manifest's version")?;
        if version != VERSION {
            return Err(DecodeError::UnknownVersion {
                what: "file manifest",
                version,
            });
        }
        let bytes = r.u64("manifest's size")?;
        let hash = r.array("manifest's hash")?;
        let part_bytes = r.u32("manifest's part size")?;
        let depth = r.u8("manifest's depth")?;
        let count = r.count("manifest's entries", usize::MAX, 32)?;
        let entries = (0..count)
            .map(|_| r.array("manifest's entry"))
            .collect::<Result<Vec<[u8; 32]>, _>>()?;
        r.finish()?;
        if part_bytes == 0 || part_bytes > MAX_PART_BYTES {
            return Err(DecodeError::Invalid(
                "a manifest's part size must be 1 byte to 64 MiB",
            ));
        }
        if depth > MAX_DEPTH {
            return Err(DecodeError::Invalid("a manifest deeper than 8 levels"));
        }
        if bytes == 0 || entries.is_empty() {
            return Err(DecodeError::Invalid("a manifest of nothing"));
        }
        let parts_needed = bytes.div_ceil(u64::from(part_bytes));
        let fits = match depth {
            0 => parts_needed == entries.len() as u64,
            // Each entry covers at least one part.
            _ => parts_needed >= entries.len() as u64,
        };
        if !fits {
            return Err(DecodeError::Invalid(
                "a manifest's entries do not fit its size",
            ));
        }
        Ok(Manifest {
            bytes,
            hash,
            part_bytes,
            depth,
            entries,
        })
    }
}

/// Builds the manifests of a file from its parts in order: the tree its
/// definition names (parts grouped [`fanout`] at a time, those manifests
/// grouped again, until one manifest holds what is left), made as the
/// parts stream by. A level's manifest is closed as soon as its last
/// entry is complete, so each open level's hash covers exactly its
/// entries' bytes; a root left with one entry is that entry.
pub struct TreeBuilder {
    part_bytes: u32,
    fanout: usize,
    /// Open manifests, depth 0 first: their entries so far, and the hash
    /// and size of the bytes those cover.
    levels: Vec<Open>,
    /// The manifest closed last while parts came: the root, when the file
    /// ends just as it closed.
    last_closed: Option<Manifest>,
}

struct Open {
    entries: Vec<[u8; 32]>,
    hasher: blake3::Hasher,
    bytes: u64,
}

impl Open {
    fn new() -> Open {
        Open {
            entries: Vec::new(),
            hasher: blake3::Hasher::new(),
            bytes: 0,
        }
    }
}

impl TreeBuilder {
    /// For parts of `part_bytes` and manifests of at most `fanout` entries
    /// (from [`fanout`]).
    pub fn new(part_bytes: u32, fanout: usize) -> TreeBuilder {
        assert!(fanout >= 2, "a manifest must hold two entries to branch");
        TreeBuilder {
            part_bytes,
            fanout,
            levels: vec![Open::new()],
            last_closed: None,
        }
    }

    /// The next part, stored at `address`; the manifests this closed (to
    /// be stored too), lower levels first.
    pub fn part(&mut self, address: [u8; 32], data: &[u8]) -> Vec<Manifest> {
        self.levels[0].entries.push(address);
        for level in &mut self.levels {
            level.hasher.update(data);
            level.bytes += data.len() as u64;
        }
        let mut closed = Vec::new();
        let mut depth = 0;
        while self.levels[depth].entries.len() == self.fanout {
            let full = std::mem::replace(&mut self.levels[depth], Open::new());
            if self.levels.len() == depth + 1 {
                // A level grows above the top when the top fills: it
                // covers the same bytes, from the file's first.
                self.levels.push(Open {
                    entries: Vec::new(),
                    hasher: full.hasher.clone(),
                    bytes: full.bytes,
                });
            }
            let manifest = self.close(depth, full);
            self.levels[depth + 1]
                .entries
                .push(crate::blob_address(&manifest.encode()));
            closed.push(manifest);
            depth += 1;
        }
        if let Some(last) = closed.last() {
            self.last_closed = Some(last.clone());
        }
        closed
    }

    /// The root manifest, and the manifests closed to finish the tree
    /// (to be stored before the root); `None` for a file of no parts.
    pub fn finish(mut self) -> Option<(Manifest, Vec<Manifest>)> {
        let mut closed = Vec::new();
        for depth in 0..self.levels.len() - 1 {
            let open = std::mem::replace(&mut self.levels[depth], Open::new());
            if !open.entries.is_empty() {
                let manifest = self.close(depth, open);
                self.levels[depth + 1]
                    .entries
                    .push(crate::blob_address(&manifest.encode()));
                closed.push(manifest);
            }
        }
        let depth = self.levels.len() - 1;
        let top = self.levels.pop()?;
        match top.entries.len() {
            0 => None,
            // Every level below closed into this one: the one manifest it
            // lists is the last closed, and the file's root.
            1 if depth > 0 => {
                let root = closed.pop().or_else(|| self.last_closed.take())?;
                Some((root, closed))
            }
            _ => Some((self.close(depth, top), closed)),
        }
    }

    fn close(&self, depth: usize, open: Open) -> Manifest {
        Manifest {
            bytes: open.bytes,
            hash: *open.hasher.finalize().as_bytes(),
            part_bytes: self.part_bytes,
            depth: depth as u8,
            entries: open.entries,
        }
    }
}

/// Why a file's manifests and parts do not make a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    #[error("a manifest does not decode: {0}")]
    Manifest(#[from] DecodeError),
    #[error("{0}")]
    Inconsistent(&'static str),
    #[error("bytes {start} to {end} do not hash to what their manifest says")]
    WrongRange { start: u64, end: u64 },
}

/// A range of the file a manifest covers, checked once read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub end: u64,
    pub hash: [u8; 32],
}

/// What a reader does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read this part (a blob of exactly `bytes`): the file's next bytes.
    Part {
        address: [u8; 32],
        bytes: u32,
    },
    /// Fetch this manifest and hand it to [`Walker::give`].
    Manifest([u8; 32]),
    Done,
}

/// Plans a file's reading from its root manifest, a part at a time,
/// fetching the manifests below as it reaches them: it holds one manifest
/// a level, so the memory it takes does not grow with the file.
pub struct Walker {
    stack: Vec<Frame>,
    offset: u64,
    part_bytes: u32,
    waiting: bool,
    opened: Vec<Range>,
}

struct Frame {
    manifest: Manifest,
    next: usize,
    end: u64,
}

impl Walker {
    pub fn new(root: Manifest) -> Walker {
        let opened = vec![Range {
            start: 0,
            end: root.bytes,
            hash: root.hash,
        }];
        Walker {
            part_bytes: root.part_bytes,
            offset: 0,
            waiting: false,
            opened,
            stack: vec![Frame {
                end: root.bytes,
                manifest: root,
                next: 0,
            }],
        }
    }

    /// The file's size, as its root says.
    pub fn bytes(&self) -> u64 {
        self.stack.first().map_or(self.offset, |f| f.end)
    }

    pub fn step(&mut self) -> Result<Next, FileError> {
        if self.waiting {
            return Err(FileError::Inconsistent(
                "a manifest was asked for and not given",
            ));
        }
        while let Some(top) = self.stack.last_mut() {
            let Some(&entry) = top.manifest.entries.get(top.next) else {
                if self.offset != top.end {
                    return Err(FileError::Inconsistent(
                        "a manifest's entries cover fewer bytes than it says",
                    ));
                }
                self.stack.pop();
                continue;
            };
            top.next += 1;
            if top.manifest.depth > 0 {
                self.waiting = true;
                return Ok(Next::Manifest(entry));
            }
            let bytes = (top.end - self.offset).min(u64::from(self.part_bytes));
            self.offset += bytes;
            return Ok(Next::Part {
                address: entry,
                bytes: bytes as u32,
            });
        }
        Ok(Next::Done)
    }

    /// The manifest [`Next::Manifest`] asked for (already checked against
    /// its address by the caller).
    pub fn give(&mut self, child: Manifest) -> Result<(), FileError> {
        if !std::mem::take(&mut self.waiting) {
            return Err(FileError::Inconsistent("a manifest that was not asked for"));
        }
        let parent = self
            .stack
            .last()
            .expect("a manifest asked for has a parent");
        if child.part_bytes != self.part_bytes {
            return Err(FileError::Inconsistent(
                "a manifest's part size differs from its parent's",
            ));
        }
        if child.depth + 1 != parent.manifest.depth {
            return Err(FileError::Inconsistent(
                "a manifest's depth is not one less than its parent's",
            ));
        }
        if child.bytes > parent.end - self.offset {
            return Err(FileError::Inconsistent(
                "a manifest covers more bytes than its parent has left",
            ));
        }
        let end = self.offset + child.bytes;
        self.opened.push(Range {
            start: self.offset,
            end,
            hash: child.hash,
        });
        self.stack.push(Frame {
            manifest: child,
            next: 0,
            end,
        });
        Ok(())
    }

    /// The ranges opened since the last call, in the file's order: the
    /// ranges that start with the part [`Walker::step`] gave last.
    pub fn take_ranges(&mut self) -> Vec<Range> {
        std::mem::take(&mut self.opened)
    }
}

/// Checks a file's bytes, read in order, against the ranges its manifests
/// name: each range's hash once its last byte is in.
#[derive(Default)]
pub struct Checker {
    offset: u64,
    pending: VecDeque<Range>,
    open: Vec<(Range, blake3::Hasher)>,
}

impl Checker {
    pub fn new() -> Checker {
        Checker::default()
    }

    /// Ranges to check, in the order [`Walker::take_ranges`] gave them.
    pub fn expect(&mut self, ranges: impl IntoIterator<Item = Range>) {
        self.pending.extend(ranges);
    }

    /// The file's next bytes (one part).
    pub fn feed(&mut self, data: &[u8]) -> Result<(), FileError> {
        while let Some(range) = self.pending.front() {
            if range.start != self.offset {
                break;
            }
            let range = self.pending.pop_front().expect("just seen");
            self.open.push((range, blake3::Hasher::new()));
        }
        let end = self.offset + data.len() as u64;
        for (range, hasher) in &mut self.open {
            if range.end < end {
                return Err(FileError::Inconsistent("a part crosses a range's end"));
            }
            hasher.update(data);
        }
        self.offset = end;
        let mut failed = None;
        self.open.retain(|(range, hasher)| {
            if range.end != end {
                return true;
            }
            if *hasher.finalize().as_bytes() != range.hash {
                failed.get_or_insert(FileError::WrongRange {
                    start: range.start,
                    end: range.end,
                });
            }
            false
        });
        failed.map_or(Ok(()), Err)
    }

    /// Fails unless every range was read whole.
    pub fn finish(self) -> Result<u64, FileError> {
        if !self.pending.is_empty() || !self.open.is_empty() {
            return Err(FileError::Inconsistent("the file ended inside a range"));
        }
        Ok(self.offset)
    }
}

#[cfg(test)]
mod tests;
