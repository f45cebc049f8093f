pub mod bench;
pub mod check;
pub mod hash;
pub mod info;
pub mod plot;
pub mod plot_paths;
pub mod prove;
pub mod verify;

/// Prints a value as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
