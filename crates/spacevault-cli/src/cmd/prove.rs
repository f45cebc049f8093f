//! `spacevault prove`: each plot's best proof for a challenge, and the best of all.

use super::plot_paths::{collect_plots, PathProblem};
use crate::keys::parse_hex32;
use anyhow::{bail, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use spacevault::PlotFile;
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
/// `k` and `nonce` are the proof; the rest says what it is worth.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProofJson {
    pub farmer_key: String,
    pub seed: String,
    pub k: u8,
    pub nonce: u64,
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
    let mut best: Option<(spacevault::Candidate, ProofJson)> = None;
    for path in plots {
        let started = Instant::now();
        match PlotFile::open(&path).and_then(|p| p.prove(&challenge).map(|a| (p, a))) {
            Ok((plot, answer)) => {
                let micros = started.elapsed().as_secs_f64() * 1e6;
                let h = plot.header();
                let proof = ProofJson {
                    farmer_key: hex::encode(h.farmer_key),
                    seed: hex::encode(h.seed),
                    k: h.k(),
                    nonce: answer.nonce,
                    challenge: Some(hex::encode(challenge)),
                    plot_id: Some(hex::encode(h.plot_id)),
                    distance: Some(hex::encode(answer.distance)),
                    quality: Some(answer.quality),
                };
                if best
                    .as_ref()
                    .is_none_or(|(b, _)| answer.candidate().beats(b))
                {
                    best = Some((answer.candidate(), proof.clone()));
                }
                answers.push(PlotAnswer {
                    path,
                    proof,
                    reads: answer.reads,
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
                "{}  nonce {}  quality {}  distance {}  ({} read{}, {:.0} us)",
                a.path.display(),
                a.proof.nonce,
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
