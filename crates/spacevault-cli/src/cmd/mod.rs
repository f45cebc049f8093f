pub mod bench;
pub mod bench_attack;
pub mod bench_chain;
pub mod bench_data;
pub mod bench_holders;
pub mod chain;
pub mod check;
pub mod client;
pub mod hash;
pub mod identity;
pub mod info;
pub mod network;
pub mod node;
pub mod plot;
pub mod plot_hard;
pub mod plot_paths;
pub mod prove;
pub mod report;
pub mod stress;
pub mod stress_compare;
pub mod verify;

/// A command that said what it had to and ends with status `.0` (a result
/// that is neither success nor error: a PUT fewer vaults took than wanted).
#[derive(Debug)]
pub struct ExitWith(pub u8);

impl std::fmt::Display for ExitWith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for ExitWith {}

/// Prints a value as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
