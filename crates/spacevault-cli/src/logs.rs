//! Logs on stderr for long-running commands: info and above from
//! spacevault's crates unless `RUST_LOG` says otherwise.

pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(
            "warn,libp2p_kad=error,spacevault=info,spacevault_node=info,spacevault_network=info",
        )
    });
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
