//! Vaults run many to a machine, for tests and benchmarks: vault `i`'s
//! farmer key, its plot (made once and kept), and its config for the
//! in-memory transport. One derivation of keys and plots serves the
//! node's tests, `bench network` and `stress`, so that vault 3 is the same
//! vault wherever it runs, and a plot cache made by one is used by the
//! others.

use crate::config::NodeConfig;
use spacevault::plot::NoProgress;
use spacevault::PlotOptions;
use spacevault_chain::{ChainSpec, Keypair};
use spacevault_network::{Address, TransportKind};
use std::path::{Path, PathBuf};

/// Why a vault's plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    #[error("making the plot directory: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Plot(#[from] spacevault::PlotError),
}

/// Vault `i`'s farmer key.
pub fn vault_key(i: usize) -> Keypair {
    let mut secret = [0u8; 32];
    secret[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
    secret[8] = 0x5a;
    Keypair::from_secret(&secret)
}

/// The directory under `cache` holding a plot of size `k` for vault `i`'s
/// key, plotted there unless one is there already.
pub fn vault_plot(cache: &Path, i: usize, k: u8) -> Result<PathBuf, KitError> {
    plot_once(&cache.join("plots").join(format!("k{k}-vault{i}")), |dir| {
        spacevault::plot(
            &PlotOptions::new(k, vault_key(i).public(), vault_seed(i)),
            dir,
            &NoProgress,
        )
        .map(drop)
    })
}

/// The directory under `cache` holding a table-chain (hard scheme) plot
/// of size `k` for vault `i`'s key, plotted there unless one is there
/// already.
pub fn vault_hard_plot(cache: &Path, i: usize, k: u8) -> Result<PathBuf, KitError> {
    plot_once(
        &cache.join("plots").join(format!("hard-k{k}-vault{i}")),
        |dir| {
            let options =
                spacevault::hard::HardPlotOptions::new(k, vault_key(i).public(), vault_seed(i));
            spacevault::hard::plot(&options, dir).map(drop)
        },
    )
}

fn vault_seed(i: usize) -> [u8; 32] {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
    seed
}

/// `dir`, with `make` run on it first unless it holds a plot.
fn plot_once(
    dir: &Path,
    make: impl FnOnce(&Path) -> Result<(), spacevault::PlotError>,
) -> Result<PathBuf, KitError> {
    let made = std::fs::read_dir(dir)
        .map(|mut d| d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "plot"))))
        .unwrap_or(false);
    if !made {
        std::fs::create_dir_all(dir)?;
        make(dir)?;
    }
    Ok(dir.to_path_buf())
}

/// A vault's config on the in-memory transport: it farms `plots`, keeps
/// its store in `data`, listens on a memory address of its own, dials
/// `bootstrap`, and serves its API on a free loopback port when `api`.
pub fn memory_config(
    spec: &ChainSpec,
    key: &Keypair,
    plots: &Path,
    data: &Path,
    bootstrap: Vec<Address>,
    api: bool,
) -> NodeConfig {
    let mut config = NodeConfig::new(
        spec.clone(),
        key.clone(),
        data.to_path_buf(),
        TransportKind::Memory,
    );
    config.plots = vec![plots.to_path_buf()];
    config.listen = vec!["/memory/0".parse().expect("a memory address")];
    config.bootstrap = bootstrap;
    if api {
        config.api = Some("127.0.0.1:0".parse().expect("a socket address"));
    }
    config
}

/// The vaults that vault `i` of a network bootstraps from: a few earlier
/// ones, near and far, as a network's newcomers would be given different
/// addresses. All from vault 0 would make it every vault's first peer and
/// the one hub of every gossip mesh until discovery spread the
/// connections.
pub fn bootstrap_of(i: usize) -> Vec<usize> {
    let mut from: Vec<usize> = [i.wrapping_sub(1), i / 2, i / 3]
        .into_iter()
        .filter(|&j| j < i)
        .collect();
    from.dedup();
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_and_plots_are_made_once() {
        let keys: std::collections::HashSet<[u8; 32]> =
            (0..64).map(|i| vault_key(i).public()).collect();
        assert_eq!(keys.len(), 64);
        let dir = tempfile::tempdir().unwrap();
        let plots = vault_plot(dir.path(), 2, 16).unwrap();
        let files = |p: &Path| std::fs::read_dir(p).unwrap().count();
        assert_eq!(files(&plots), 1);
        let modified = |p: &Path| {
            let f = std::fs::read_dir(p).unwrap().next().unwrap().unwrap();
            f.metadata().unwrap().modified().unwrap()
        };
        let first = modified(&plots);
        assert_eq!(vault_plot(dir.path(), 2, 16).unwrap(), plots);
        assert_eq!(modified(&plots), first, "kept, not made again");
        assert_eq!(bootstrap_of(0), Vec::<usize>::new());
        assert_eq!(bootstrap_of(1), vec![0]);
        assert_eq!(bootstrap_of(9), vec![8, 4, 3]);
    }
}
