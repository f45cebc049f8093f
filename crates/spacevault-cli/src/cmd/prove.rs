//! `spacevault prove`: each plot's best proof for a challenge, and the best of all.

use super::plot_paths::{collect_plots, PathProblem};
use crate::keys::parse_hex32;
use anyhow::{bail, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use spacevault::{AnyPlot, AnyProof};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct ProveArgs {
    /// The challenge: 64 hex digits (default: a random one, printed).
    #[arg(long, value_name = "HEX")]
    pub challenge: Option<String>,
    /// Plot files, or directories of plots.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A proof as prove prints it and verify reads it. `farmer_key`, `seed`,
/// `k` and `nonce` (a plain proof) or `scheme: "hard"` and `leaves` (a
/// table-chain proof) are the proof; the rest says what it is worth.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProofJson {
    /// Absent for the plain scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    pub farmer_key: String,
    pub seed: String,
    pub k: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u32>,
}

#[derive(Serialize)]
struct PlotAnswer {
    path: PathBuf,
    #[serde(flatten)]
    proof: ProofJson,
    reads: u64,
    micros: f64,
}

#[derive(Serialize)]
struct ProveOutput {
    challenge: String,
    plots: Vec<PlotAnswer>,
    errors: Vec<PathProblem>,
    best: Option<ProofJson>,
}

pub fn run(args: ProveArgs) -> Result<()> {
    let challenge = match &args.challenge {
        Some(c) => parse_hex32("--challenge", c)?,
        None => crate::keys::random32()?,
    };
    let found = collect_plots(&args.paths);
    let mut answers = Vec::new();
    let mut errors = found.problems;
    let plots = found.plots;
    // Score, the scheme's tie-break, plot id: the chain's order.
    type Rank = ([u8; 32], u64, [u8; 32]);
    let mut best: Option<(Rank, ProofJson)> = None;
    for path in plots {
        let started = Instant::now();
        let answered = AnyPlot::open(&path).and_then(|plot| {
            let lookup = plot.lookup(&challenge)?;
            let proof = lookup.as_ref().map(|l| plot.proof(l)).transpose()?;
            Ok((plot, lookup.zip(proof)))
        });
        match answered {
            Ok((_, None)) => errors.push(PathProblem {
                path,
                error: "the plot has no top entries to answer with".into(),
            }),
            Ok((plot, Some((lookup, proof)))) => {
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let mut json = ProofJson::of(&proof);
                json.challenge = Some(hex::encode(challenge));
                json.plot_id = Some(hex::encode(plot.plot_id()));
                json.distance = Some(hex::encode(lookup.distance));
                json.quality = Some(lookup.quality);
                // Ranked as the chain ranks proofs: the score on the
                // shared scale, the scheme's tie-break, the plot id.
                let rank = (lookup.distance, lookup.tiebreak(), *plot.plot_id());
                if best.as_ref().is_none_or(|(b, _)| rank < *b) {
                    best = Some((rank, json.clone()));
                }
                answers.push(PlotAnswer {
                    path,
                    proof: json,
                    reads: lookup.reads,
                    micros,
                });
            }
            Err(e) => errors.push(PathProblem {
                path,
                error: e.reason(),
            }),
        }
    }
    // Failures go on the error line when nothing answered, else one line
    // each before the answers.
    let failures = errors
        .iter()
        .map(|e| format!("{}: {}", e.path.display(), e.error))
        .collect::<Vec<_>>();
    let answered = !answers.is_empty();
    if args.json {
        crate::cmd::print_json(&ProveOutput {
            challenge: hex::encode(challenge),
            plots: answers,
            errors,
            best: best.map(|(_, p)| p),
        })?;
    } else if answered {
        if args.challenge.is_none() {
            outln!("challenge: {}", hex::encode(challenge));
        }
        for f in &failures {
            errln!("skipped {f}");
        }
        for t in found.temp_files.iter().filter(|t| !t.in_use) {
            errln!(
                "note: {} is a temp file of {} that an interrupted plot left; the next plot in its directory removes it",
                t.path.display(),
                crate::size::format_size(t.bytes)
            );
        }
        for a in &answers {
            outln!(
                "{}  {}  quality {}  distance {}  ({} read{}, {:.0} us)",
                a.path.display(),
                a.proof.witness(),
                a.proof.quality.unwrap_or(0),
                a.proof.distance.as_deref().unwrap_or(""),
                a.reads,
                if a.reads == 1 { "" } else { "s" },
                a.micros
            );
        }
        if let Some((_, p)) = &best {
            outln!("best: {}", serde_json::to_string(p)?);
        }
    }
    if !answered {
        bail!("no plot answered: {}", failures.join("; "));
    }
    Ok(())
}

impl ProofJson {
    /// The proof's own fields, with nothing claimed of its worth.
    pub fn of(proof: &AnyProof) -> ProofJson {
        let (scheme, nonce, leaves) = match proof {
            AnyProof::Plain(p) => (None, Some(p.nonce), None),
            AnyProof::Hard(p) => (
                Some(proof.scheme_name().to_string()),
                None,
                Some(p.xs.clone()),
            ),
        };
        ProofJson {
            scheme,
            farmer_key: hex::encode(proof.farmer_key()),
            seed: hex::encode(proof.seed()),
            k: proof.k(),
            nonce,
            leaves,
            challenge: None,
            plot_id: None,
            distance: None,
            quality: None,
        }
    }

    /// The proof's answer in a few words: its nonce, or its leaves.
    pub fn witness(&self) -> String {
        match (&self.nonce, &self.leaves) {
            (Some(n), _) => format!("nonce {n}"),
            (None, Some(leaves)) => format!(
                "leaves {}",
                leaves
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            (None, None) => "no answer".into(),
        }
    }
}
