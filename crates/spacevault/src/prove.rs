//! Answering a challenge from a plot: read the bucket the challenge falls
//! in (one read of two regions), rehash its nonces, keep the nearest.

use crate::construction::{distance, quality, Candidate};
use crate::reader::{PlotFile, ReadError, RegionBuf};

pub type ProveError = ReadError;

/// A plot's best answer to a challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub nonce: u64,
    pub hash: [u8; 32],
    pub distance: [u8; 32],
    pub quality: u32,
    /// Read calls this lookup made.
    pub reads: u64,
}

impl Answer {
    pub fn candidate(&self) -> Candidate {
        Candidate {
            nonce: self.nonce,
            distance: self.distance,
        }
    }
}

/// Regions read per lookup: the group's own region and the one its records
/// may spill into.
const LOOKUP_REGIONS: u64 = 2;

impl PlotFile {
    /// The plot's best proof for `challenge`: the nonce whose hash has the
    /// smallest XOR distance to it, the smaller nonce on a tie.
    pub fn prove(&self, challenge: &[u8; 32]) -> Result<Answer, ProveError> {
        let layout = self.header().layout;
        let reads_before = self.reads();
        let home = layout.bucket_of(challenge);
        let mut cache = None;
        // Every hash in bucket q is nearer than any hash outside it when q
        // shares the most top bits with the challenge: try buckets in order of
        // (q XOR home). Only an empty bucket sends the search further.
        for d in 0..layout.bucket_count() {
            let bucket = home ^ d;
            let nonces = self.bucket_nonces(bucket, &mut cache)?;
            if nonces.is_empty() {
                continue;
            }
            let mut hashes = vec![[0u8; 32]; nonces.len()];
            self.kernel.hashes(&nonces, &mut hashes);
            let mut best: Option<(Candidate, [u8; 32])> = None;
            for (&nonce, hash) in nonces.iter().zip(hashes.iter()) {
                if layout.bucket_of(hash) != bucket {
                    let region = layout.group_of_bucket(bucket);
                    return Err(self.damaged(region, "a record is in the wrong bucket"));
                }
                let c = Candidate {
                    nonce,
                    distance: distance(hash, challenge),
                };
                if best.as_ref().is_none_or(|(b, _)| c.beats(b)) {
                    best = Some((c, *hash));
                }
            }
            let (c, hash) = best.expect("bucket is not empty");
            return Ok(Answer {
                nonce: c.nonce,
                hash,
                distance: c.distance,
                quality: quality(&c.distance),
                reads: self.reads() - reads_before,
            });
        }
        Err(self.damaged(0, "the plot holds no records"))
    }

    /// The nonces stored in one bucket, in file order. `cache` keeps the
    /// regions last read, so neighbouring buckets cost no new read.
    pub fn bucket_nonces(
        &self,
        bucket: u64,
        cache: &mut Option<RegionBuf>,
    ) -> Result<Vec<u64>, ReadError> {
        let header = self.header();
        let layout = &header.layout;
        let slots = layout.slots_per_region as u64;
        let group = layout.group_of_bucket(bucket);
        if !cache.as_ref().is_some_and(|c| c.contains(group)) {
            *cache = Some(self.read_checked_regions(group, LOOKUP_REGIONS)?);
        }
        let regions = cache.as_ref().unwrap();
        let head = regions.region(header, group);
        let counts = head.counts();
        let local = (bucket - group * layout.buckets_per_group as u64) as usize;
        let before: u64 = counts[..local].iter().map(|&c| c as u64).sum();
        let n = counts[local] as u64;
        let first = group * slots + head.group_offset() as u64 + before;
        if n == 0 {
            return Ok(Vec::new());
        }
        let last_region = (first + n - 1) / slots;
        if last_region >= header.region_count {
            return Err(self.damaged(group, "a bucket reaches past the end of the plot"));
        }
        if !regions.contains(last_region) {
            // A spill longer than one region: rare, costs one more read.
            *cache = Some(self.read_checked_regions(group, last_region - group + 1)?);
        }
        let regions = cache.as_ref().unwrap();
        let record_count = layout.record_count();
        let mut nonces = Vec::with_capacity(n as usize);
        for s in first..first + n {
            let nonce = regions.region(header, s / slots).slot((s % slots) as usize);
            if nonce >= record_count {
                return Err(self.damaged(s / slots, "a nonce is out of range"));
            }
            nonces.push(nonce);
        }
        Ok(nonces)
    }
}
