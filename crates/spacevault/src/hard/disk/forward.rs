//! The forward pass through disk: level 1 hashed and spilled by output,
//! then each level matched as a stream (a window of whole buckets at a
//! time) and its joins spilled by output; each spill file sorted in
//! memory becomes the next piece of the sorted level. The order is the
//! in-memory plotter's to the entry (output, then children), so that both
//! number every level alike.
//!
//! A sorted level is two files: its *stream* (output and digest, what the
//! next join reads) and its *pointers* (for level 1 the x, above it the
//! left child's position and the right's distance from it; for the top
//! level also the output, whose prefix the file is indexed by).

use super::ordered::map_in_order;
use super::temp::{get, get64, put, Gathered, Spill, TempFile};
use super::{Plan, Work};
use crate::hard::construction::{node_of, EXTRA_BITS};
use crate::hard::plot::{bucket_runs, join_runs, split};
use crate::hard::sort::sort_by;
use crate::kernel::Kernel;
use crate::plot::PlotError;

/// Bytes of an output (k + 6 ≤ 38 bits), a position (levels hold fewer
/// than 2^40 entries) and a digest.
pub(super) const Y: usize = 5;
pub(super) const POS: usize = 5;
const META: usize = 16;
/// Bytes of a right child's distance from its left: the two lie in
/// adjacent buckets of about 236 entries each.
pub(super) const DR: usize = 2;

/// A stream entry: output, digest.
const STREAM: usize = Y + META;
/// A level-1 spill record: output, x, digest.
const LEAF: usize = Y + POS + META;
/// A join's spill record: output, left child, distance to the right,
/// digest (none for the top level).
const JOINED: usize = Y + POS + DR + META;
/// Pointers of a middle level (left, distance) and of the top (and output).
pub(super) const BACK: usize = POS + DR;
pub(super) const TOP_BACK: usize = POS + DR + Y;

/// A level as the forward pass leaves it on disk, in output order.
pub(super) struct SortedLevel {
    /// Output and digest of each entry; none for the top level.
    pub stream: Option<TempFile>,
    pub back: TempFile,
    pub count: u64,
}

/// Entries read from a stream at once: a window of whole buckets.
fn window_entries(plan: &Plan) -> u64 {
    (plan.bucket_entries / 4).clamp(1 << 12, 1 << 20)
}

/// Level 1: every x hashed, spilled by output, each spill file sorted.
pub(super) fn level_one(id: &[u8; 32], k: u8, work: &Work) -> Result<SortedLevel, PlotError> {
    let kernel = Kernel::new(id);
    let n = 1u64 << k;
    let key_bits = u32::from(k + EXTRA_BITS);
    let mut spill = Spill::create(&work.temps, "hard-leaves", work.plan.log2, key_bits)?;
    let piece = window_entries(&work.plan).max(4096 * work.plan.threads as u64);
    for start in (0..n).step_by(piece as usize) {
        let end = (start + piece).min(n);
        let parts: Vec<Gathered> = std::thread::scope(|s| {
            let handles: Vec<_> = split((end - start) as usize, work.plan.threads)
                .into_iter()
                .map(|r| {
                    let (kernel, mut gathered) = (&kernel, spill.gatherer());
                    s.spawn(move || {
                        let xs: Vec<u64> = (start + r.start as u64..start + r.end as u64).collect();
                        let mut hashes = vec![[0u8; 32]; xs.len()];
                        kernel.hashes(&xs, &mut hashes);
                        for (x, h) in xs.iter().zip(&hashes) {
                            let node = node_of(h, k);
                            let record = gathered.part(node.y);
                            put(record, u128::from(node.y), Y);
                            put(record, u128::from(*x), POS);
                            record.extend_from_slice(&node.meta);
                        }
                        gathered
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a plotting thread panicked"))
                .collect()
        });
        for gathered in parts {
            spill.absorb(gathered)?;
        }
    }
    let mut stream = TempFile::create(&work.temps, "hard-stream1")?;
    let mut back = TempFile::create(&work.temps, "hard-back1")?;
    let mut count = 0u64;
    let sort_threads = work.plan.sort_threads();
    map_in_order(
        spill.finish()?,
        work.plan.parallel,
        |(file, (lo, hi))| {
            let leaves: Vec<(u64, u64, [u8; 16])> = file.take_records(LEAF, |r| {
                (
                    get64(&r[..Y]),
                    get64(&r[Y..Y + POS]),
                    r[Y + POS..].try_into().unwrap(),
                )
            })?;
            let leaves = sort_by(
                leaves,
                u128::from(hi - lo),
                |e| u128::from(e.0 - lo),
                |e| (e.0, e.1),
                sort_threads,
            );
            let mut out = Vec::with_capacity(leaves.len() * STREAM);
            let mut xs = Vec::with_capacity(leaves.len() * POS);
            for (y, x, meta) in &leaves {
                put(&mut out, u128::from(*y), Y);
                out.extend_from_slice(meta);
                put(&mut xs, u128::from(*x), POS);
            }
            Ok((out, xs, leaves.len() as u64))
        },
        |(out, xs, n)| {
            stream.append(&out)?;
            back.append(&xs)?;
            count += n;
            Ok(())
        },
    )?;
    stream.flush()?;
    back.flush()?;
    Ok(SortedLevel {
        stream: Some(stream),
        back,
        count,
    })
}

/// Level `level` from the sorted level below, which it consumes.
pub(super) fn next_level(
    id: &[u8; 32],
    k: u8,
    level: u8,
    top: bool,
    below: TempFile,
    work: &Work,
) -> Result<SortedLevel, PlotError> {
    let kernel = Kernel::new(id);
    let key_bits = u32::from(k + EXTRA_BITS);
    let mut spill = Spill::create(
        &work.temps,
        &format!("hard-joins{level}-"),
        work.plan.log2,
        key_bits,
    )?;
    // The window: whole runs of buckets, from position `base` on.
    let (mut ys, mut metas) = (Vec::<u64>::new(), Vec::<[u8; 16]>::new());
    let mut base = 0u64;
    let piece = window_entries(&work.plan) * STREAM as u64;
    let mut pieces = below.pieces(piece).peekable();
    let mut read = 0u64;
    loop {
        let more = pieces.next().transpose()?;
        if let Some(bytes) = &more {
            // In the window now: the level below's file need not keep it,
            // so the level and its joins take little more than the larger.
            read += bytes.len() as u64;
            below.release_before(read);
            for r in bytes.chunks_exact(STREAM) {
                ys.push(get64(&r[..Y]));
                metas.push(r[Y..].try_into().unwrap());
            }
        }
        let last = pieces.peek().is_none();
        let runs = bucket_runs(&ys);
        // A left run's partners are the run after it: while more is to
        // come, the last run may be unfinished, so the two runs before
        // the end wait for the next piece.
        let lefts = if last {
            runs.len()
        } else if runs.len() >= 3 {
            runs.len() - 2
        } else {
            continue;
        };
        let parts = join_runs(
            &kernel,
            k,
            level,
            (&ys, &metas),
            &runs,
            0..lefts,
            work.plan.threads,
            |joined| -> Result<Gathered, PlotError> {
                let mut gathered = spill.gatherer();
                for (y, [l, r], meta) in joined {
                    let record = gathered.part(y);
                    put(record, u128::from(y), Y);
                    put(record, u128::from(base + u64::from(l)), POS);
                    put(record, u128::from(distance(l, r)?), DR);
                    // The top level's digests are never joined: not kept.
                    if !top {
                        record.extend_from_slice(&meta);
                    }
                }
                Ok(gathered)
            },
        );
        for gathered in parts {
            spill.absorb(gathered?)?;
        }
        if last {
            break;
        }
        let keep = runs[runs.len() - 2].1;
        ys.drain(..keep);
        metas.drain(..keep);
        base += keep as u64;
    }
    drop(pieces);
    drop(below);

    let mut stream = if top {
        None
    } else {
        Some(TempFile::create(
            &work.temps,
            &format!("hard-stream{level}-"),
        )?)
    };
    let mut back = TempFile::create(&work.temps, &format!("hard-back{level}-"))?;
    let mut count = 0u64;
    let sort_threads = work.plan.sort_threads();
    map_in_order(
        spill.finish()?,
        work.plan.parallel,
        |(file, (lo, hi))| {
            let size = if top { JOINED - META } else { JOINED };
            let joined: Vec<(u64, u64, u64, [u8; 16])> = file.take_records(size, |r| {
                (
                    get64(&r[..Y]),
                    get64(&r[Y..Y + POS]),
                    get64(&r[Y + POS..Y + POS + DR]),
                    r.get(Y + POS + DR..JOINED)
                        .map_or([0; 16], |m| m.try_into().unwrap()),
                )
            })?;
            // (output, left, distance) orders as (output, left, right).
            let joined = sort_by(
                joined,
                u128::from(hi - lo),
                |e| u128::from(e.0 - lo),
                |e| (e.0, e.1, e.2),
                sort_threads,
            );
            let mut out = Vec::with_capacity(joined.len() * STREAM);
            let mut pointers = Vec::with_capacity(joined.len() * TOP_BACK);
            for (y, l, dr, meta) in &joined {
                put(&mut pointers, u128::from(*l), POS);
                put(&mut pointers, u128::from(*dr), DR);
                if top {
                    put(&mut pointers, u128::from(*y), Y);
                } else {
                    put(&mut out, u128::from(*y), Y);
                    out.extend_from_slice(meta);
                }
            }
            Ok((out, pointers, joined.len() as u64))
        },
        |(out, pointers, n)| {
            if let Some(stream) = &mut stream {
                stream.append(&out)?;
            }
            back.append(&pointers)?;
            count += n;
            Ok(())
        },
    )?;
    if let Some(stream) = &mut stream {
        stream.flush()?;
    }
    back.flush()?;
    Ok(SortedLevel {
        stream,
        back,
        count,
    })
}

/// A right child's distance from its left, which adjacent buckets keep
/// far below 2^16.
fn distance(l: u32, r: u32) -> Result<u64, PlotError> {
    let d = u64::from(r) - u64::from(l);
    if d >> (8 * DR) != 0 {
        return Err(PlotError::Inconsistent(format!(
            "a match {d} entries apart, more than two buckets hold"
        )));
    }
    Ok(d)
}

/// The entries of a pointers record: left, right and (top level) output.
pub(super) fn pointers(r: &[u8]) -> (u64, u64, u64) {
    let l = get64(&r[..POS]);
    let right = l + get64(&r[POS..POS + DR]);
    let y = if r.len() >= TOP_BACK {
        get64(&r[POS + DR..TOP_BACK])
    } else {
        0
    };
    (l, right, y)
}

/// A position record.
pub(super) fn position(r: &[u8]) -> u64 {
    get(r) as u64
}
