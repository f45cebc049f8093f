//! A vault's plots, and the best proof among them for a challenge: one read
//! per plot, all plots looked up at once, every record re-hashed after it is
//! read (the plot's region checksums and `PlotFile::prove`'s rehash).

use spacevault::PlotFile;
use spacevault_chain::{ChainProof, ChainSpec, ProofKind, Ranked};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;

/// A plot the vault farms.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlotInfo {
    pub path: PathBuf,
    pub k: u8,
    pub plot_id: String,
    /// How long the last lookup took, in microseconds.
    pub last_lookup_us: Option<f64>,
}

/// A plot that is not farmed, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// The best proof of a lookup.
#[derive(Clone, Debug)]
pub struct Found {
    pub proof: ChainProof,
    pub rank: Ranked,
    /// The slowest plot's lookup: when the proof was ready.
    pub took: Duration,
    /// Plots that answered, each with a record read and hashed again.
    pub answers: usize,
}

/// The plots of one farmer key.
pub struct Farmer {
    plots: Vec<Arc<PlotFile>>,
    info: Mutex<Vec<PlotInfo>>,
    skipped: Vec<Skipped>,
    /// Where lookups' blocking threads are counted ([`Farmer::tracked_by`]).
    lookups: TaskTracker,
}

/// The `*.plot` files in `dir`, sorted (a file named as a directory is
/// taken as given).
fn plot_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == spacevault::plot::PLOT_EXTENSION)
        })
        .collect();
    found.sort();
    Ok(found)
}

impl Farmer {
    /// Opens the plots in `dirs` that belong to `farmer_key` and whose size
    /// the chain takes; the others are skipped with the reason.
    pub fn open(dirs: &[PathBuf], farmer_key: &[u8; 32], spec: &ChainSpec) -> Farmer {
        // Plot files hold the plain scheme's records.
        let plain_sizes = spec.sizes(ProofKind::Plain);
        let (mut plots, mut info, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for dir in dirs {
            let files = match plot_files(dir) {
                Ok(f) => f,
                Err(e) => {
                    skipped.push(Skipped {
                        path: dir.clone(),
                        why: e.to_string(),
                    });
                    continue;
                }
            };
            for path in files {
                let why = match PlotFile::open(&path) {
                    Err(e) => e.reason(),
                    Ok(p) if p.header().farmer_key != *farmer_key => format!(
                        "made for farmer key {}, not this node's",
                        hex::encode(p.header().farmer_key)
                    ),
                    Ok(p)
                        if !plain_sizes
                            .as_ref()
                            .is_some_and(|s| s.contains(&p.header().k())) =>
                    {
                        match &plain_sizes {
                            Some(sizes) => format!(
                                "k = {} is outside the chain's {}..={}",
                                p.header().k(),
                                sizes.start(),
                                sizes.end()
                            ),
                            None => "the chain takes no proofs of the plain scheme".into(),
                        }
                    }
                    Ok(p) => {
                        info.push(PlotInfo {
                            path: path.clone(),
                            k: p.header().k(),
                            plot_id: hex::encode(p.header().plot_id),
                            last_lookup_us: None,
                        });
                        plots.push(Arc::new(p));
                        continue;
                    }
                };
                skipped.push(Skipped { path, why });
            }
        }
        Farmer {
            plots,
            info: Mutex::new(info),
            skipped,
            lookups: TaskTracker::new(),
        }
    }

    /// A farmer with no plots: a vault that only keeps data.
    pub fn empty() -> Farmer {
        Farmer {
            plots: Vec::new(),
            info: Mutex::new(Vec::new()),
            skipped: Vec::new(),
            lookups: TaskTracker::new(),
        }
    }

    /// The same farmer, its lookups counted by `tasks`: a vault that stops
    /// waits for the plot reads under way.
    pub fn tracked_by(mut self, tasks: TaskTracker) -> Farmer {
        self.lookups = tasks;
        self
    }

    pub fn plots(&self) -> Vec<PlotInfo> {
        self.info.lock().unwrap().clone()
    }

    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The best proof of all plots for `challenge`, each plot looked up on
    /// a blocking thread of its own; none without plots. A plot whose read
    /// fails (damage) is left out.
    pub async fn best(&self, challenge: [u8; 32]) -> Option<Found> {
        let started = Instant::now();
        let lookups: Vec<_> = self
            .plots
            .iter()
            .map(|plot| {
                let plot = plot.clone();
                self.lookups.spawn_blocking(move || {
                    let t = Instant::now();
                    let answer = plot.prove(&challenge);
                    (answer, t.elapsed())
                })
            })
            .collect();
        let mut best: Option<(ChainProof, Ranked)> = None;
        let mut answers = 0;
        for (i, lookup) in lookups.into_iter().enumerate() {
            let Ok((answer, took)) = lookup.await else {
                continue;
            };
            self.info.lock().unwrap()[i].last_lookup_us = Some(took.as_secs_f64() * 1e6);
            let Ok(answer) = answer else {
                tracing::warn!(plot = %self.plots[i].path().display(), "lookup failed");
                continue;
            };
            answers += 1;
            let h = self.plots[i].header();
            let proof = ChainProof::plain(h.farmer_key, h.seed, h.k(), answer.nonce);
            let rank = Ranked {
                distance: answer.distance,
                nonce: answer.nonce,
                plot_id: h.plot_id,
                quality: answer.quality,
            };
            if best.as_ref().is_none_or(|(_, b)| rank.beats(b)) {
                best = Some((proof, rank));
            }
        }
        best.map(|(proof, rank)| Found {
            proof,
            rank,
            took: started.elapsed(),
            answers,
        })
    }
}
