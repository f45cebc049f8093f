//! A vault's plots, of either scheme the chain accepts, and the best proof
//! among them for a challenge: every plot looked up at once (one read for
//! a plain plot, a few for a table-chain one), every value re-hashed after
//! it is read (the plot's region checksums, `PlotFile::prove`'s rehash, the
//! table chain's quality hashes), and the winner's whole proof read and
//! verified before it is offered: a damaged plot is passed over, not
//! signed for.

use spacevault::{AnyPlot, Lookup};
use spacevault_chain::{ChainProof, ChainSpec, ProofKind, Ranked};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;

/// A plot the vault farms.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlotInfo {
    pub path: PathBuf,
    /// The plot's scheme: `plain` or `hard` (absent from vaults that farm
    /// only plain plots).
    #[serde(default = "plain")]
    pub scheme: String,
    pub k: u8,
    pub plot_id: String,
    /// How long the last lookup took, in microseconds.
    pub last_lookup_us: Option<f64>,
}

fn plain() -> String {
    "plain".into()
}

/// A plot that is not farmed, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// The plots' lookups for one challenge, best first: their scores are
/// known, their whole proofs not yet read.
pub struct Looked {
    challenge: [u8; 32],
    ranked: Vec<(usize, Lookup, Ranked)>,
    /// From the lookups' start to the last plot's answer.
    pub took: Duration,
}

impl Looked {
    /// The best score's rank: what eligibility is asked of before any
    /// whole proof is read.
    pub fn best(&self) -> &Ranked {
        &self.ranked[0].2
    }

    /// Plots that answered, each with the values it read hashed again.
    pub fn answers(&self) -> usize {
        self.ranked.len()
    }
}

/// The best proof of a lookup, read whole and verified.
#[derive(Clone, Debug)]
pub struct Found {
    pub proof: ChainProof,
    pub rank: Ranked,
}

/// The plots of one farmer key.
pub struct Farmer {
    plots: Vec<Arc<AnyPlot>>,
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
    /// Opens the plots in `dirs` that belong to `farmer_key` and whose
    /// scheme and size the chain takes; the others are skipped with the
    /// reason.
    pub fn open(dirs: &[PathBuf], farmer_key: &[u8; 32], spec: &ChainSpec) -> Farmer {
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
                match AnyPlot::open(&path) {
                    Err(e) => skipped.push(Skipped {
                        path,
                        why: e.reason(),
                    }),
                    Ok(plot) => match refusal(&plot, farmer_key, spec) {
                        Some(why) => skipped.push(Skipped { path, why }),
                        None => {
                            info.push(PlotInfo {
                                path,
                                scheme: plot.scheme_name().to_string(),
                                k: plot.k(),
                                plot_id: hex::encode(plot.plot_id()),
                                last_lookup_us: None,
                            });
                            plots.push(Arc::new(plot));
                        }
                    },
                }
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

    /// Every plot's lookup for `challenge`, each on a blocking thread of
    /// its own; none without an answer. A plot whose read fails (damage)
    /// is left out.
    pub async fn lookup(&self, challenge: [u8; 32]) -> Option<Looked> {
        let started = Instant::now();
        let lookups: Vec<_> = self
            .plots
            .iter()
            .map(|plot| {
                let plot = plot.clone();
                self.lookups.spawn_blocking(move || {
                    let t = Instant::now();
                    let lookup = plot.lookup(&challenge);
                    (lookup, t.elapsed())
                })
            })
            .collect();
        let mut ranked: Vec<(usize, Lookup, Ranked)> = Vec::new();
        for (i, lookup) in lookups.into_iter().enumerate() {
            let Ok((lookup, took)) = lookup.await else {
                continue;
            };
            self.info.lock().unwrap()[i].last_lookup_us = Some(took.as_secs_f64() * 1e6);
            let lookup = match lookup {
                Ok(Some(lookup)) => lookup,
                // A table-chain plot without top entries answers nothing.
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(plot = %self.plots[i].path().display(), %e, "lookup failed");
                    continue;
                }
            };
            let rank = Ranked {
                distance: lookup.distance,
                tiebreak: lookup.tiebreak(),
                plot_id: *self.plots[i].plot_id(),
                quality: lookup.quality,
            };
            ranked.push((i, lookup, rank));
        }
        if ranked.is_empty() {
            return None;
        }
        ranked.sort_by_key(|(_, _, r)| (r.distance, r.tiebreak, r.plot_id));
        Some(Looked {
            challenge,
            ranked,
            took: started.elapsed(),
        })
    }

    /// The best lookup's whole proof, read and verified (the next best's
    /// if that one fails its check: a damaged plot is passed over, not
    /// signed for), and the proofs verified to find it.
    pub async fn proof(&self, looked: Looked) -> (Option<Found>, usize) {
        let mut verified = 0;
        for (i, lookup, rank) in looked.ranked {
            let plot = self.plots[i].clone();
            let challenge = looked.challenge;
            let read = self
                .lookups
                .spawn_blocking(move || whole_proof(&plot, &lookup, &challenge, &rank));
            match read.await {
                Ok((Ok(proof), _)) => return (Some(Found { proof, rank }), verified + 1),
                Ok((Err(why), checked)) => {
                    verified += usize::from(checked);
                    tracing::warn!(plot = %self.plots[i].path().display(), %why, "the best proof failed its check: the next plot's is offered");
                }
                Err(_) => {}
            }
        }
        (None, verified)
    }

    /// [`Farmer::lookup`] then [`Farmer::proof`]: the best proof of all
    /// plots for `challenge`.
    pub async fn best(&self, challenge: [u8; 32]) -> Option<Found> {
        let looked = self.lookup(challenge).await?;
        self.proof(looked).await.0
    }
}

/// Why a plot is not farmed by a vault of `farmer_key` on a chain of
/// `spec`, if it is not.
fn refusal(plot: &AnyPlot, farmer_key: &[u8; 32], spec: &ChainSpec) -> Option<String> {
    if plot.farmer_key() != farmer_key {
        return Some(format!(
            "made for farmer key {}, not this node's",
            hex::encode(plot.farmer_key())
        ));
    }
    let Some(kind) = ProofKind::from_number(plot.kind()) else {
        return Some(format!(
            "a {} plot: a scheme no chain takes",
            plot.scheme_name()
        ));
    };
    let Some(sizes) = spec.sizes(kind) else {
        return Some(format!(
            "the chain takes no proofs of the {} scheme",
            kind.name()
        ));
    };
    if !sizes.contains(&plot.k()) {
        return Some(format!(
            "k = {} is outside the chain's {}..={} for the {} scheme",
            plot.k(),
            sizes.start(),
            sizes.end(),
            kind.name()
        ));
    }
    None
}

/// The whole proof of `lookup`, read from `plot` and verified: it must
/// give the rank the lookup gave. Says too whether it got as far as
/// verifying.
fn whole_proof(
    plot: &AnyPlot,
    lookup: &Lookup,
    challenge: &[u8; 32],
    rank: &Ranked,
) -> (Result<ChainProof, String>, bool) {
    let read = plot
        .proof(lookup)
        .map_err(|e| e.to_string())
        .and_then(|p| ChainProof::from_any(p).map_err(|e| e.to_string()));
    let proof = match read {
        Ok(proof) => proof,
        Err(why) => return (Err(why), false),
    };
    let checked = match proof.verify(challenge) {
        Ok(checked) => checked,
        Err(e) => return (Err(e.to_string()), true),
    };
    if checked != *rank {
        return (
            Err("the proof read does not give the lookup's score".into()),
            true,
        );
    }
    (Ok(proof), true)
}
