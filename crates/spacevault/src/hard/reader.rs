//! Opening a table-chain plot and answering challenges from it: the
//! top-level index and one bucket of entries give the candidates (two
//! reads), one park a level gives each candidate's quality (three reads
//! at five levels), and the whole tree (fourteen more) only for a proof
//! that wins.

use super::construction::{challenge_prefix, line_point_pair, quality_hash, score, top_prefix};
use super::format::{Header, Layout, HEADER_SIZE, INDEX_VALUE_BYTES};
use super::park::{
    bucket_bytes_bound, decode_bucket, park_value, BUCKET_ENTRIES_LOG2, PARK_ENTRIES,
};
use super::verify::{top_of, HardProof};
use crate::aligned::{AlignedBuf, ALIGN};
use crate::format::FormatError;
use crate::reader::{ReadError, ReadMode};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Empty buckets a lookup reads past (`home XOR d` for `d` below it, an
/// aligned block): an honest plot's bucket (2^8 entries on average) is
/// next to never empty, so a block of 64 empty ones is damage.
pub const MAX_EMPTY_BUCKETS: u64 = 64;

/// Entries one bucket may hold: 64 times the average.
pub const MAX_BUCKET_ENTRIES: u64 = 64 << BUCKET_ENTRIES_LOG2;

/// An open table-chain plot.
pub struct HardPlotFile {
    path: PathBuf,
    file: File,
    /// Whether reads bypass the page cache (O_DIRECT).
    direct: bool,
    header: Header,
    layout: Layout,
    reads: AtomicU64,
}

/// A top entry: its position, its prefix and the value naming its
/// children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopEntry {
    pub index: u64,
    pub prefix: u64,
    pub value: u128,
}

/// The best answer a plot has for a challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HardAnswer {
    pub challenge: [u8; 32],
    pub top: TopEntry,
    /// The leaves the challenge's path selects, in proof order.
    pub pair: (u64, u64),
    pub quality_hash: [u8; 32],
    /// On the scale every scheme shares (see [`crate::scheme`]).
    pub score: [u8; 32],
}

/// `len` bytes at `offset`: with O_DIRECT, through the aligned pages
/// that hold them (the file's end need not be aligned, so the last read
/// may come back short, past what was asked for).
fn read_span(file: &File, direct: bool, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    if !direct || len == 0 {
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, offset)?;
        return Ok(buf);
    }
    let start = offset / ALIGN as u64 * ALIGN as u64;
    let end = (offset + len as u64).next_multiple_of(ALIGN as u64);
    let span = (end - start) as usize;
    // The buffer may be longer than asked for (large ones are whole huge
    // pages): only the span's pages are read.
    let mut pages = AlignedBuf::zeroed(span);
    let wanted = (offset + len as u64 - start) as usize;
    let mut got = 0;
    while got < wanted {
        // Reads stay whole pages: O_DIRECT takes nothing else.
        let from = got / ALIGN * ALIGN;
        let n = match file.read_at(&mut pages[from..span], start + from as u64) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r?,
        };
        // A read that ends where the last did is the file's end.
        if from + n <= got {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got = from + n;
    }
    let at = (offset - start) as usize;
    Ok(pages[at..at + len].to_vec())
}

impl HardPlotFile {
    /// Opens and checks the header, and that the file has exactly the
    /// size it implies.
    pub fn open(path: impl AsRef<Path>) -> Result<HardPlotFile, ReadError> {
        HardPlotFile::open_with(path, ReadMode::Buffered)
    }

    /// [`HardPlotFile::open`], reading with O_DIRECT where `mode` asks
    /// for it and the file system has it (what a cold lookup measures).
    pub fn open_with(path: impl AsRef<Path>, mode: ReadMode) -> Result<HardPlotFile, ReadError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |cause| ReadError::Io {
            path: path.clone(),
            cause,
        };
        let (file, direct) =
            crate::aligned::open_read(&path, mode == ReadMode::Direct).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        let head = read_span(&file, direct, 0, HEADER_SIZE.min(size as usize)).map_err(io_err)?;
        let fmt_err = |cause| ReadError::Format {
            path: path.clone(),
            cause,
        };
        let header = Header::decode(&head).map_err(fmt_err)?;
        let layout = header.layout().map_err(fmt_err)?;
        if size != layout.file_size {
            return Err(fmt_err(FormatError::WrongSize {
                expected: layout.file_size,
                actual: size,
            }));
        }
        Ok(HardPlotFile {
            path,
            file,
            direct,
            header,
            layout,
            reads: AtomicU64::new(0),
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads made so far (each one span of the file; with O_DIRECT, a
    /// short read may make one span two `pread`s).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Whether reads bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, ReadError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        read_span(&self.file, self.direct, offset, len).map_err(|cause| ReadError::Io {
            path: self.path.clone(),
            cause,
        })
    }

    fn damaged(&self, level: u8, index: u64, what: &'static str) -> ReadError {
        ReadError::TableDamaged {
            path: self.path.clone(),
            level,
            index,
            what,
        }
    }

    /// Entry `i` of a middle level (2 to `levels - 1`): one read of its
    /// park.
    pub(crate) fn entry(&self, level: u8, i: u64) -> Result<u128, ReadError> {
        let section = self.layout.level(level);
        if i >= section.count {
            return Err(self.damaged(level + 1, i, "it points past the level below"));
        }
        let (offset, len, place) = section.park_of(i);
        let park = self.read_at(offset, len)?;
        let n = PARK_ENTRIES.min(section.count - (i - place));
        park_value(&park, section.width, section.fixed_bits, n, place)
            .map_err(|what| self.damaged(level, i, what))
    }

    /// The left and right children, in proof order, that a value of
    /// `level` names: positions in the level below, or leaves for level 2.
    pub(crate) fn children(
        &self,
        level: u8,
        index: u64,
        value: u128,
    ) -> Result<(u64, u64), ReadError> {
        let (a, b) = line_point_pair(value >> 1);
        let bound = if level == 2 {
            1u64 << self.header.k
        } else {
            self.layout.level(level - 1).count
        };
        if a >= bound {
            return Err(self.damaged(level, index, "it points past the level below"));
        }
        Ok(if value & 1 == 1 { (a, b) } else { (b, a) })
    }

    /// Where bucket `bucket` starts and ends: its entries' numbers and
    /// its bytes in the top level's section. One read.
    fn bucket_bounds(&self, bucket: u64) -> Result<([u64; 2], [u64; 2]), ReadError> {
        let top = self.layout.top();
        let levels = self.header.levels;
        let at = self.layout.index.offset + INDEX_VALUE_BYTES * bucket;
        let raw = self.read_at(at, 2 * INDEX_VALUE_BYTES as usize)?;
        let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap());
        let (entries, bytes) = ([u64_at(0), u64_at(16)], [u64_at(8), u64_at(24)]);
        if entries[0] > entries[1] || entries[1] > top.count {
            return Err(self.damaged(levels, entries[0], "the index is out of order"));
        }
        if bytes[0] > bytes[1] || bytes[1] > top.bytes {
            return Err(self.damaged(levels, entries[0], "the index points past the level"));
        }
        let count = entries[1] - entries[0];
        let low_bits = self.header.k - self.layout.bucket_bits;
        if count > MAX_BUCKET_ENTRIES
            || bytes[1] - bytes[0] > bucket_bytes_bound(count, top.width, low_bits)
        {
            return Err(self.damaged(
                levels,
                entries[0],
                "the index gives a bucket far too many entries",
            ));
        }
        Ok((entries, bytes))
    }

    /// The entries of bucket `bucket`, in order: two reads.
    pub fn bucket(&self, bucket: u64) -> Result<Vec<TopEntry>, ReadError> {
        let (k, bits) = (self.header.k, self.layout.bucket_bits);
        if bucket >= 1u64 << bits {
            return Ok(Vec::new());
        }
        let ([first, end], [start, stop]) = self.bucket_bounds(bucket)?;
        if first == end {
            return Ok(Vec::new());
        }
        let top = self.layout.top();
        let bytes = self.read_at(top.offset + start, (stop - start) as usize)?;
        let entries = decode_bucket(&bytes, end - first, k - bits, top.width)
            .map_err(|what| self.damaged(self.header.levels, first, what))?;
        Ok((first..)
            .zip(entries)
            .map(|(index, (low, value))| TopEntry {
                index,
                prefix: bucket << (k - bits) | low,
                value,
            })
            .collect())
    }

    /// Every top entry, in order: for tests (two reads a bucket).
    pub fn top_entries(&self) -> Result<Vec<TopEntry>, ReadError> {
        let mut all = Vec::with_capacity(self.layout.top().count as usize);
        for bucket in 0..1u64 << self.layout.bucket_bits {
            all.extend(self.bucket(bucket)?);
        }
        Ok(all)
    }

    /// The top entries whose prefixes are nearest the challenge's by XOR:
    /// all with the least distance (usually one, or none where the plot
    /// is empty). Two reads, unless the challenge's bucket is empty.
    pub fn candidates(&self, challenge: &[u8; 32]) -> Result<Vec<TopEntry>, ReadError> {
        let (k, bits) = (self.header.k, self.layout.bucket_bits);
        let top = self.layout.top();
        if top.count == 0 {
            return Ok(Vec::new());
        }
        let target = challenge_prefix(challenge, k);
        let home = target >> (k - bits);
        // A bucket's prefixes differ from the target's in its bits above
        // the bucket's: the nearest non-empty bucket by XOR holds them.
        // A run of empty buckets longer than an honest plot ever has is
        // damage, not a reason to read on.
        for d in 0..(1u64 << bits).min(MAX_EMPTY_BUCKETS) {
            let entries = self.bucket(home ^ d)?;
            let Some(best) = entries.iter().map(|e| e.prefix ^ target).min() else {
                continue;
            };
            return Ok(entries
                .into_iter()
                .filter(|e| e.prefix ^ target == best)
                .collect());
        }
        if (1u64 << bits) > MAX_EMPTY_BUCKETS {
            return Err(self.damaged(
                self.header.levels,
                0,
                "the index shows no entry near the challenge",
            ));
        }
        Ok(Vec::new())
    }

    /// The two leaves the challenge's path selects below `top`: one read
    /// a level below the top.
    pub fn path_leaves(
        &self,
        top: &TopEntry,
        challenge: &[u8; 32],
    ) -> Result<(u64, u64), ReadError> {
        let levels = self.header.levels;
        let mut children = self.children(levels, top.index, top.value)?;
        for (step, level) in (2..levels).rev().enumerate() {
            let right = (challenge[31] >> step) & 1 == 1;
            let next = if right { children.1 } else { children.0 };
            let value = self.entry(level, next)?;
            children = self.children(level, next, value)?;
        }
        Ok(children)
    }

    /// The leaves of `top`'s tree in proof order.
    pub fn leaves(&self, top: &TopEntry) -> Result<Vec<u64>, ReadError> {
        let levels = self.header.levels;
        let (l, r) = self.children(levels, top.index, top.value)?;
        let mut nodes = vec![l, r];
        for level in (2..levels).rev() {
            let mut next = Vec::with_capacity(2 * nodes.len());
            for &i in &nodes {
                let value = self.entry(level, i)?;
                let (l, r) = self.children(level, i, value)?;
                next.push(l);
                next.push(r);
            }
            nodes = next;
        }
        Ok(nodes)
    }

    /// The best answer for a challenge, or None for a plot with no top
    /// entries. Ties (the same score from two trees) go to the smaller
    /// leaves.
    pub fn prove(&self, challenge: &[u8; 32]) -> Result<Option<HardAnswer>, ReadError> {
        let h = &self.header;
        let mut candidates = self.candidates(challenge)?;
        // Two entries alike are one tree (only a damaged file has them):
        // each is looked up once.
        candidates.sort_unstable_by_key(|t| (t.prefix, t.value));
        candidates.dedup_by_key(|t| (t.prefix, t.value));
        let mut best: Option<HardAnswer> = None;
        // The best answer's leaves, once a tie has needed them.
        let mut best_leaves: Option<Vec<u64>> = None;
        for top in candidates {
            let pair = self.path_leaves(&top, challenge)?;
            let quality_hash = quality_hash(&h.plot_id, challenge, pair.0, pair.1);
            let answer = HardAnswer {
                challenge: *challenge,
                top,
                pair,
                quality_hash,
                score: score(h.k, top.prefix, challenge, &quality_hash),
            };
            let better = match &best {
                None => true,
                Some(b) if answer.score != b.score => answer.score < b.score,
                Some(b) => {
                    let held = match best_leaves.take() {
                        Some(leaves) => leaves,
                        None => self.leaves(&b.top)?,
                    };
                    let leaves = self.leaves(&answer.top)?;
                    let better = leaves < held;
                    best_leaves = Some(if better { leaves } else { held });
                    better
                }
            };
            if better {
                if best.as_ref().is_some_and(|b| b.score != answer.score) {
                    best_leaves = None;
                }
                best = Some(answer);
            }
        }
        Ok(best)
    }

    /// The leaves of `top`'s tree, checked: every join matches and the
    /// top entry they make has `top`'s prefix.
    pub fn checked_leaves(&self, top: &TopEntry) -> Result<Vec<u64>, ReadError> {
        let h = &self.header;
        let xs = self.leaves(top)?;
        let node = top_of(&h.plot_id, h.k, h.levels, &xs)
            .map_err(|_| self.damaged(h.levels, top.index, "its tree does not verify"))?;
        if top_prefix(node.y) != top.prefix {
            return Err(self.damaged(h.levels, top.index, "its prefix is not its tree's"));
        }
        Ok(xs)
    }

    /// The whole proof for an answer, checked before it is given (data
    /// read back from disk may have changed since it was written): its
    /// tree, and the score the lookup reported.
    pub fn proof(&self, answer: &HardAnswer) -> Result<HardProof, ReadError> {
        let h = &self.header;
        let proof = HardProof {
            farmer_key: h.farmer_key,
            seed: h.seed,
            k: h.k,
            xs: self.checked_leaves(&answer.top)?,
        };
        match super::verify::verify_with(h.levels, &proof, &answer.challenge) {
            Ok(v) if v.distance == answer.score => Ok(proof),
            _ => Err(self.damaged(
                h.levels,
                answer.top.index,
                "its proof is not worth its score",
            )),
        }
    }
}
