//! Benchmarks for spacevault, each reported against the machine's own
//! limits measured in the same run: how fast this machine hashes records on
//! every core, and how fast it writes and reads the output disk; and the
//! chain's rules measured against what the spec wants ([`chain`]).

pub mod attack;
pub mod attack_chart;
pub mod chain;
pub mod crypto_trace;
pub mod data;
pub mod data_chart;
pub mod heatmap;
pub mod holders;
pub mod launch;
pub mod lookup;
pub mod machine;
pub mod network;
pub mod plot;
pub mod profiles;
pub mod stats;
pub mod stress;
mod stress_client;
pub mod stress_compare;
pub mod stress_output;
pub mod stress_timeline;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    #[error("{context}: {cause}")]
    Io {
        context: String,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Plot(#[from] spacevault::PlotError),
    #[error(transparent)]
    Read(#[from] spacevault::ReadError),
    #[error("{0}")]
    Invalid(String),
}

impl BenchError {
    pub(crate) fn io(context: impl Into<String>, cause: std::io::Error) -> BenchError {
        BenchError::Io {
            context: context.into(),
            cause,
        }
    }
}
