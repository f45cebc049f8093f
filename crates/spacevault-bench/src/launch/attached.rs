//! A network of vaults this run did not start: driven through their APIs
//! alone, its CPU read from their metrics, and left running. Each vault is
//! asked with a deadline of its own, all at once, so that one that hangs
//! costs a run seconds, not a vault's worth of request timeouts.

use super::{Network, Vaults};
use crate::BenchError;
use spacevault_chain::ChainSpec;
use spacevault_node::client::{Client, Status};
use spacevault_node::process::cpu_seconds;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long an attached vault has to answer one of the run's own
/// questions (its status, spec, metrics).
const ASK_TIME: Duration = Duration::from_secs(10);

/// What one vault says of itself when attached.
async fn ask(api: String, trace_crypto: bool) -> Result<(Client, Status, ChainSpec), BenchError> {
    let api = api.as_str();
    let client = Client::new(api).map_err(|e| BenchError::Invalid(format!("{api}: {e}")))?;
    let failed = |what: &str, why: String| {
        BenchError::Invalid(format!("the vault at {api} did not give its {what}: {why}"))
    };
    let within = |what: &'static str| {
        move |_| {
            BenchError::Invalid(format!(
                "the vault at {api} did not give its {what} within {} s",
                ASK_TIME.as_secs()
            ))
        }
    };
    let status = tokio::time::timeout(ASK_TIME, client.status())
        .await
        .map_err(within("status"))?
        .map_err(|e| failed("status", e.to_string()))?;
    let spec = tokio::time::timeout(ASK_TIME, client.spec())
        .await
        .map_err(within("chain spec"))?
        .map_err(|e| failed("chain spec", e.to_string()))?;
    spec.validate()
        .map_err(|e| failed("chain spec", e.to_string()))?;
    if hex::encode(spec.chain_id()) != status.chain_id {
        return Err(BenchError::Invalid(format!(
            "the vault at {api} serves a chain spec that is not its chain's ({})",
            status.chain_id
        )));
    }
    // A run with traces asks for them after the clients' work: a vault
    // that keeps none says so now, before any work is lost.
    if trace_crypto {
        tokio::time::timeout(ASK_TIME, client.crypto_trace((0, 0)))
            .await
            .map_err(within("crypto trace"))?
            .map_err(|e| failed("crypto trace (start it with --trace-crypto)", e.to_string()))?;
    }
    Ok((client, status, spec))
}

/// The `spacevault_process_cpu_seconds` a vault's `/metrics` gives.
async fn process_cpu(client: Client) -> Option<f64> {
    let Ok(Ok((200, body))) = tokio::time::timeout(ASK_TIME, client.get_path("/metrics")).await
    else {
        return None;
    };
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("spacevault_process_cpu_seconds "))?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

impl Network {
    /// A network of vaults already running, at the API URLs given: each
    /// must answer, each a vault of its own, and all must follow one
    /// chain, whose spec (asked of the vaults, checked, and checked
    /// against the id each reports) the run takes its limits from.
    /// `trace_crypto`: the vaults keep crypto traces (started with
    /// `--trace-crypto`) and a run collects them.
    pub async fn attach(apis: &[String], trace_crypto: bool) -> Result<Network, BenchError> {
        if apis.is_empty() {
            return Err(BenchError::Invalid("the network names no vault".into()));
        }
        let started = Instant::now();
        let asks: Vec<_> = apis
            .iter()
            .map(|api| tokio::spawn(ask(api.clone(), trace_crypto)))
            .collect();
        let mut clients = Vec::with_capacity(apis.len());
        let mut peers = Vec::with_capacity(apis.len());
        let mut seen = HashSet::new();
        let mut spec: Option<ChainSpec> = None;
        for (api, asked) in apis.iter().zip(asks) {
            let (client, status, its_spec) = asked
                .await
                .map_err(|e| BenchError::Invalid(format!("asking the vault at {api}: {e}")))??;
            if let Some(first) = &spec {
                if first.chain_id() != its_spec.chain_id() {
                    return Err(BenchError::Invalid(format!(
                        "the vault at {api} follows chain {}, the first vault {}",
                        status.chain_id,
                        hex::encode(first.chain_id())
                    )));
                }
            }
            // Two URLs of one vault would count its work twice.
            if !seen.insert(status.peer_id.clone()) {
                return Err(BenchError::Invalid(format!(
                    "the vault at {api} is listed already ({})",
                    status.peer_id
                )));
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
    /// (none unless every vault answers in time).
    pub async fn vaults_cpu_seconds(&self) -> Option<f64> {
        if !matches!(self.vaults, Vaults::Attached) {
            return self.cpu_seconds();
        }
        let asks: Vec<_> = self
            .clients
            .iter()
            .map(|c| tokio::spawn(process_cpu(c.clone())))
            .collect();
        let mut sum = 0.0;
        for ask in asks {
            sum += ask.await.ok()??;
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
