//! `bench lookup`: lookup latency of a plot of either scheme, warm and
//! cold, against the disk's own random 4 KiB read latency, the time to
//! read a whole proof where that is more than the lookup (a table-chain
//! plot's fourteen reads more), and proof verification time.

use crate::machine::{drop_page_cache, random_read_latency, Machine, SplitMix};
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::any::{AnyPlot, AnyProof};
use spacevault::hard::HardPlotFile;
use spacevault::{PlotFile, ReadMode};
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
    /// Microseconds per lookup: the best score, what a farmer asks of
    /// every plot each slot.
    pub micros: Summary,
    pub reads_per_lookup: f64,
    /// Microseconds to read and check the whole proof after the lookup
    /// (a table-chain plot; a plain plot's lookup is its proof).
    pub proof_micros: Option<Summary>,
    pub reads_per_proof: Option<f64>,
    /// Whether reads bypassed the page cache with O_DIRECT.
    pub direct: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct LookupBench {
    pub machine: Machine,
    pub path: PathBuf,
    /// "plain" or "hard".
    pub scheme: &'static str,
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
    plot: &AnyPlot,
    challenges: &[[u8; 32]],
) -> Result<(LookupRun, Vec<AnyProof>), BenchError> {
    let mut samples = Vec::with_capacity(challenges.len());
    let mut proof_samples = Vec::with_capacity(challenges.len());
    let mut proofs = Vec::with_capacity(challenges.len());
    let (mut lookup_reads, mut proof_reads) = (0u64, 0u64);
    let reads = || match plot {
        AnyPlot::Plain(p) => p.reads(),
        AnyPlot::Hard(p) => p.reads(),
    };
    for c in challenges {
        let t = Instant::now();
        let lookup = plot
            .lookup(c)?
            .ok_or_else(|| BenchError::Invalid("the plot holds no top entries".into()))?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        lookup_reads += lookup.reads;
        let (t, before) = (Instant::now(), reads());
        proofs.push(plot.proof(&lookup)?);
        proof_samples.push(t.elapsed().as_secs_f64() * 1e6);
        proof_reads += reads() - before;
    }
    let n = challenges.len() as f64;
    let hard = matches!(plot, AnyPlot::Hard(_));
    Ok((
        LookupRun {
            micros: Summary::of(&samples),
            reads_per_lookup: lookup_reads as f64 / n,
            proof_micros: hard.then(|| Summary::of(&proof_samples)),
            reads_per_proof: hard.then_some(proof_reads as f64 / n),
            direct: match plot {
                AnyPlot::Plain(p) => p.is_direct(),
                AnyPlot::Hard(p) => p.is_direct(),
            },
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

    let plot = AnyPlot::open(&options.path)?;
    let hard = matches!(plot, AnyPlot::Hard(_));
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
        let plot = if hard {
            AnyPlot::Hard(HardPlotFile::open_with(&options.path, ReadMode::Direct)?)
        } else {
            AnyPlot::Plain(PlotFile::open_with(&options.path, ReadMode::Direct)?)
        };
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
        scheme: plot.scheme_name(),
        k: plot.k(),
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

fn time_verify(proofs: &[AnyProof], challenges: &[[u8; 32]]) -> Summary {
    let samples: Vec<f64> = proofs
        .iter()
        .zip(challenges.iter())
        .map(|(p, c)| {
            let t = Instant::now();
            let v = p.verify(c);
            let micros = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(v.ok());
            micros
        })
        .collect();
    Summary::of(&samples)
}
