//! A plot's plan: everything its options and this machine settle before
//! any work. [`PlotPlan::new`] decides the strategy, the partitions, an
//! external plot's rounds and how many stay in memory, and the most bytes
//! its temp file will hold; the in-memory and external pipelines then only
//! read it. `bench plot` prints it.

use super::external::{self, ExternalPlan};
use super::memory;
use super::partition::{self, Partitioning};
use super::{PlotError, PlotOptions, Strategy};

/// Memory the plotter keeps for itself beyond its sort keys.
const FIXED_OVERHEAD: u64 = 48 << 20;

/// How a plot will be made.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct PlotPlan {
    pub k: u8,
    /// [`Strategy::Memory`] or [`Strategy::External`], never `Auto`.
    #[serde(serialize_with = "strategy_name")]
    pub strategy: Strategy,
    pub threads: usize,
    /// The memory limit the plan keeps to.
    pub memory_limit: u64,
    /// What the sort keys of a plot in memory take, with the plotter's own
    /// buffers: the least `memory_limit` that plots in memory.
    pub memory_in_memory: u64,
    /// Partitions the records are sorted in.
    pub partitions: u64,
    /// Rounds phase 1 hashes in (1 for a plot in memory), the records a
    /// round hashes, and how many of the last rounds never go through the
    /// temp file.
    pub rounds: u64,
    pub records_per_round: u64,
    pub rounds_in_memory: u64,
    /// Workers in phase 2 of an external plot (the threads for one in
    /// memory).
    pub phase_two_workers: usize,
    /// The most bytes the temp file will hold (0 in memory).
    pub temp_bytes_at_most: u64,
    #[serde(skip)]
    pub(crate) detail: Detail,
}

fn strategy_name<S: serde::Serializer>(s: &Strategy, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_str(s.name())
}

/// What each pipeline reads of the plan.
#[derive(Clone, Debug)]
pub(crate) enum Detail {
    InMemory(Partitioning),
    External(ExternalPlan),
}

impl PlotPlan {
    /// The plan for `options`: [`Strategy::Auto`] plots in memory when the
    /// sort keys fit the memory limit. An error when the threads are out
    /// of bounds, the in-memory strategy is asked for and does not fit, or
    /// the limit is too small even for a temp file.
    pub fn new(options: &PlotOptions) -> Result<PlotPlan, PlotError> {
        super::check_threads(options.threads)?;
        let layout = options.layout()?;
        let in_memory = partition::partitioning(layout);
        let memory_in_memory = memory::memory_needed(&in_memory, options.threads) + FIXED_OVERHEAD;
        let strategy = match options.strategy {
            Strategy::Auto if memory_in_memory <= options.memory => Strategy::Memory,
            Strategy::Auto => Strategy::External,
            s => s,
        };
        let plan = |detail, partitions, rounds, per_round, kept, workers, temp| PlotPlan {
            k: options.k,
            strategy,
            threads: options.threads,
            memory_limit: options.memory,
            memory_in_memory,
            partitions,
            rounds,
            records_per_round: per_round,
            rounds_in_memory: kept,
            phase_two_workers: workers,
            temp_bytes_at_most: temp,
            detail,
        };
        match strategy {
            Strategy::External => {
                let ext = ExternalPlan::for_limit(&layout, options.threads, options.memory)?;
                Ok(plan(
                    Detail::External(ext.clone()),
                    ext.partitions(),
                    ext.rounds(),
                    ext.records_per_round(),
                    ext.rounds_in_memory(),
                    ext.workers(),
                    external::temp_size_of(&ext, options.threads),
                ))
            }
            _ if memory_in_memory > options.memory => Err(PlotError::MemoryTooSmall {
                given: options.memory,
                needed: memory_in_memory,
            }),
            _ => Ok(plan(
                Detail::InMemory(in_memory.clone()),
                in_memory.count,
                1,
                layout.record_count(),
                1,
                options.threads,
                0,
            )),
        }
    }

    /// The plan in one line, for people.
    pub fn describe(&self) -> String {
        match self.strategy {
            Strategy::External => format!(
                "external: {} partitions, rounds {} x {} records ({} kept in memory), \
                 {} phase 2 workers, temp file at most {}",
                self.partitions,
                self.rounds,
                self.records_per_round,
                self.rounds_in_memory,
                self.phase_two_workers,
                crate::units::human_bytes(self.temp_bytes_at_most)
            ),
            _ => format!(
                "in memory: {} partitions, sort buffers {} of the {} limit",
                self.partitions,
                crate::units::human_bytes(self.memory_in_memory),
                crate::units::human_bytes(self.memory_limit)
            ),
        }
    }
}
