//! `bench lookup`: lookup latency of a plot, warm and cold, against the
//! disk's own random 4 KiB read latency, and proof verification time.

use crate::machine::{drop_page_cache, random_read_latency, Machine, SplitMix};
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::{verify, PlotFile, Proof, ReadMode};
use std::path::PathBuf;
use std::time::Instant;

pub struct LookupOptions {
    pub path: PathBuf,
    pub lookups: usize,
    pub cold: bool,
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LookupRun {
    /// Microseconds per lookup.
    pub micros: Summary,
    pub reads_per_lookup: f64,
    /// Whether reads bypassed the page cache with O_DIRECT.
    pub direct: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct LookupBench {
    pub machine: Machine,
    pub path: PathBuf,
    pub k: u8,
    pub lookups: usize,
    pub warm: LookupRun,
    pub cold: Option<LookupRun>,
    /// Whether the page cache was dropped before the cold run.
    pub page_cache_dropped: bool,
    /// What the cold figures mean on this machine.
    pub cold_note: Option<String>,
    /// Random 4 KiB reads of the plot file, microseconds.
    pub random_read_4k_micros: Option<Summary>,
    /// Cold median over the 4 KiB random read median.
    pub cold_over_random_read: Option<f64>,
    /// Microseconds to verify one proof.
    pub verify_micros: Summary,
}

fn timed_lookups(
    plot: &PlotFile,
    challenges: &[[u8; 32]],
) -> Result<(LookupRun, Vec<Proof>), BenchError> {
    let mut samples = Vec::with_capacity(challenges.len());
    let mut proofs = Vec::with_capacity(challenges.len());
    let reads_before = plot.reads();
    let h = plot.header();
    for c in challenges {
        let t = Instant::now();
        let answer = plot.prove(c)?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        proofs.push(Proof {
            farmer_key: h.farmer_key,
            seed: h.seed,
            k: h.k(),
            nonce: answer.nonce,
        });
    }
    let reads = (plot.reads() - reads_before) as f64 / challenges.len() as f64;
    Ok((
        LookupRun {
            micros: Summary::of(&samples),
            reads_per_lookup: reads,
            direct: plot.is_direct(),
        },
        proofs,
    ))
}

pub fn run(options: &LookupOptions) -> Result<LookupBench, BenchError> {
    if options.lookups == 0 {
        return Err(BenchError::Invalid("-n must be at least 1".into()));
    }
    let mut rng = SplitMix(options.seed);
    let challenges: Vec<[u8; 32]> = (0..options.lookups).map(|_| rng.bytes32()).collect();

    let plot = PlotFile::open(&options.path)?;
    // One untimed pass brings the regions into the page cache.
    timed_lookups(&plot, &challenges)?;
    let (warm, proofs) = timed_lookups(&plot, &challenges)?;

    let mut cold = None;
    let mut dropped = false;
    let mut note = None;
    let mut random = None;
    if options.cold {
        let cold_challenges: Vec<[u8; 32]> = (0..options.lookups).map(|_| rng.bytes32()).collect();
        dropped = drop_page_cache();
        let plot = PlotFile::open_with(&options.path, ReadMode::Direct)?;
        let (run, _) = timed_lookups(&plot, &cold_challenges)?;
        note = Some(match (dropped, run.direct) {
            (true, true) => "page cache dropped; reads with O_DIRECT".to_string(),
            (false, true) => "page cache not dropped (needs root); reads with O_DIRECT bypass it".to_string(),
            (true, false) => "page cache dropped; this file system has no O_DIRECT, so repeated regions may be cached".to_string(),
            (false, false) => "could not drop the page cache or use O_DIRECT: the cold figures are warm".to_string(),
        });
        let (r, _) = random_read_latency(&options.path, options.lookups, options.seed ^ 0xABCD)?;
        cold = Some(run);
        random = Some(r);
    }
    let cold_over_random_read = cold
        .as_ref()
        .zip(random.as_ref())
        .map(|(c, r)| c.micros.median / r.median);

    let verify_micros = time_verify(&proofs, &challenges);
    Ok(LookupBench {
        machine: Machine::this(),
        path: options.path.clone(),
        k: plot.header().k(),
        lookups: options.lookups,
        warm,
        cold,
        page_cache_dropped: dropped,
        cold_note: note,
        random_read_4k_micros: random,
        cold_over_random_read,
        verify_micros,
    })
}

fn time_verify(proofs: &[Proof], challenges: &[[u8; 32]]) -> Summary {
    let samples: Vec<f64> = proofs
        .iter()
        .zip(challenges.iter())
        .map(|(p, c)| {
            let t = Instant::now();
            let v = verify(p, c);
            let micros = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(v.ok());
            micros
        })
        .collect();
    Summary::of(&samples)
}
