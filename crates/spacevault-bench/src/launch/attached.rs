//! A network of vaults this run did not start: driven through their APIs
//! alone, its CPU read from their metrics, and left running.

use super::{Network, Vaults};
use crate::BenchError;
use spacevault_chain::ChainSpec;
use spacevault_node::client::Client;
use spacevault_node::process::cpu_seconds;
use std::path::PathBuf;
use std::time::Instant;

impl Network {
    /// A network of vaults already running, at the API URLs given: each
    /// must answer, and all must follow one chain, whose spec (asked of
    /// the vaults, and checked against the id each reports) the run takes
    /// its limits from. `trace_crypto`: the vaults keep crypto traces
    /// (started with `--trace-crypto`) and a run collects them.
    pub async fn attach(apis: &[String], trace_crypto: bool) -> Result<Network, BenchError> {
        if apis.is_empty() {
            return Err(BenchError::Invalid("the network names no vault".into()));
        }
        let started = Instant::now();
        let mut clients = Vec::with_capacity(apis.len());
        let mut peers = Vec::with_capacity(apis.len());
        let mut spec: Option<ChainSpec> = None;
        for api in apis {
            let client =
                Client::new(api).map_err(|e| BenchError::Invalid(format!("{api}: {e}")))?;
            let asked = |what: &str, e: spacevault_node::client::ClientError| {
                BenchError::Invalid(format!("the vault at {api} did not give its {what}: {e}"))
            };
            let status = client.status().await.map_err(|e| asked("status", e))?;
            let its_spec = client.spec().await.map_err(|e| asked("chain spec", e))?;
            if hex::encode(its_spec.chain_id()) != status.chain_id {
                return Err(BenchError::Invalid(format!(
                    "the vault at {api} serves a chain spec that is not its chain's ({})",
                    status.chain_id
                )));
            }
            if let Some(first) = &spec {
                if first.chain_id() != its_spec.chain_id() {
                    return Err(BenchError::Invalid(format!(
                        "the vault at {api} follows chain {}, the first vault {}",
                        status.chain_id,
                        hex::encode(first.chain_id())
                    )));
                }
            }
            spec.get_or_insert(its_spec);
            peers.push(status.peer_id);
            clients.push(client);
        }
        Ok(Network {
            vaults: Vaults::Attached,
            peers,
            clients,
            spec: spec.expect("at least one vault"),
            run_dir: PathBuf::new(),
            started_seconds: started.elapsed().as_secs_f64(),
            first_block_due_seconds: 0.0,
            started,
            rss_before: None,
            trace_crypto,
        })
    }

    /// CPU seconds the vaults used so far, all together: for vaults this
    /// run did not start, what each one's `/metrics` says of its process
    /// (none unless every vault answers).
    pub async fn vaults_cpu_seconds(&self) -> Option<f64> {
        if !matches!(self.vaults, Vaults::Attached) {
            return self.cpu_seconds();
        }
        let mut sum = 0.0;
        for client in &self.clients {
            let Ok((200, body)) = client.get_path("/metrics").await else {
                return None;
            };
            sum += String::from_utf8_lossy(&body)
                .lines()
                .find_map(|l| l.strip_prefix("spacevault_process_cpu_seconds "))?
                .trim()
                .parse::<f64>()
                .ok()?;
        }
        Some(sum)
    }

    /// CPU seconds this process used so far, where the vaults run apart
    /// from it (processes of their own, or attached): then it is the
    /// clients' alone. None when the vaults share this process.
    pub fn clients_cpu_seconds(&self) -> Option<f64> {
        match self.vaults {
            Vaults::InProcess(_) => None,
            Vaults::Processes(_) | Vaults::Attached => cpu_seconds("self"),
        }
    }
}
