pub mod bench;
pub mod chain;
pub mod check;
pub mod client;
pub mod hash;
pub mod identity;
pub mod info;
pub mod network;
pub mod node;
pub mod plot;
pub mod plot_paths;
pub mod prove;
pub mod report;
pub mod stress;
pub mod verify;

/// Prints a value as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
