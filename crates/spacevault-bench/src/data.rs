//! `spacevault bench data`: what a network of vaults does with clients'
//! data, measured as it runs: PUT and GET throughput of whole blobs and of
//! one file of many blobs, what the vaults' audits of each other cost
//! beside everything else they do, and how long the blobs a holder kept
//! take to be back at R copies after it vanishes (ends at once, as a
//! killed process would). The vaults run in this process over the
//! in-memory transport, so that each vault's store can be asked which
//! blobs it keeps.

use crate::launch::{io, LaunchOptions, Mode, Network};
use crate::machine::{Machine, SplitMix};
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault_meter::Op;
use spacevault_node::audits::AuditConfig;
use spacevault_node::client::{Client, FileOptions};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct DataBenchOptions {
    pub vaults: usize,
    pub k: u8,
    pub slot_ms: u64,
    pub replication: u32,
    /// Clients putting blobs at once, then getting them back.
    pub clients: usize,
    pub blob_bytes: usize,
    /// How long the clients put blobs.
    pub seconds: f64,
    /// The file put and read back after the blobs (0: none).
    pub file_bytes: u64,
    /// How often each vault audits the other holders of its blobs, and
    /// how many blobs a round.
    pub audit_interval_ms: u64,
    pub audit_blobs: usize,
    /// How long the blobs of the vault that vanishes may take to be back
    /// at R copies before the benchmark gives up on them.
    pub recovery_limit_seconds: f64,
    /// Blocks an era (of the target and of the holders): the clients
    /// begin once every vault is a registered holder of the era the chain
    /// is in; 0: at once, in the bootstrap era, every vault placed at its
    /// key.
    pub era_blocks: u64,
    /// Where plots (kept between runs), stores and the file go.
    pub dir: PathBuf,
}

/// This machine's own limits, measured in the same run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Limits {
    /// BLAKE3 over large buffers, every core.
    pub blake3_bytes_per_second: f64,
    /// Sequential writes to the benchmark's directory.
    pub disk_write_bytes_per_second: f64,
}

/// Blobs (or a file) moved one way.
#[derive(Clone, Debug, Serialize)]
pub struct Transfer {
    pub ok: usize,
    pub errors: usize,
    /// Bytes of the clients' data that went through.
    pub bytes: u64,
    pub seconds: f64,
    pub mib_per_second: f64,
    pub latency_ms: Option<Summary>,
}

impl Transfer {
    fn of(ok: usize, errors: usize, bytes: u64, seconds: f64, latencies: &[f64]) -> Transfer {
        Transfer {
            ok,
            errors,
            bytes,
            seconds,
            mib_per_second: bytes as f64 / (1 << 20) as f64 / seconds.max(1e-9),
            latency_ms: (!latencies.is_empty()).then(|| Summary::of(latencies)),
        }
    }
}

/// The file's way in and out.
#[derive(Clone, Debug, Serialize)]
pub struct FileRun {
    pub bytes: u64,
    pub parts: u64,
    pub manifests: u64,
    /// The fewest copies any of its blobs got.
    pub copies: usize,
    pub put: Transfer,
    pub get: Transfer,
    /// The file read back hashed to the file put.
    pub equal: bool,
}

/// What the vaults' audits cost, from the start of the clients' work to
/// the end of the file's.
#[derive(Clone, Debug, Serialize)]
pub struct AuditCost {
    /// Audits asked, by every vault, and of those, passed.
    pub audits: f64,
    pub passed: f64,
    /// Audits answered with a slice, and the slices' bytes.
    pub answers: f64,
    pub answer_bytes: f64,
    /// CPU seconds of the holders' proofs and the auditors' checks (the
    /// crypto meter's `audit_proof` and `audit_check`, timed by the
    /// clock); the blob's re-read hash before each proof is counted with
    /// every other re-read (`disk_reverify`).
    pub proof_seconds: f64,
    pub check_seconds: f64,
    /// CPU seconds of the process over the same time: the vaults and the
    /// benchmark's clients, one process.
    pub process_cpu_seconds: Option<f64>,
    /// The audits' share of that CPU.
    pub cpu_share: Option<f64>,
    /// Bytes of blobs the vaults stored (every copy, the stores' gauge at
    /// the end) and served to clients: not every byte sent (client
    /// uploads and reads forwarded between vaults are left out).
    pub data_bytes: f64,
    /// The slices' bytes against the slices' and the data's together.
    pub bandwidth_share: Option<f64>,
    /// A vault's audits an hour at the vaults' default (a round a minute,
    /// four blobs, each at its other R - 1 holders), at the measured cost
    /// of one: answers' bytes and CPU seconds (answering and checking).
    pub default_hourly_bytes: Option<f64>,
    pub default_hourly_cpu_seconds: Option<f64>,
}

/// Copies made again after a holder vanished.
#[derive(Clone, Debug, Serialize)]
pub struct Recovery {
    /// The vault ended, by farmer key.
    pub vanished: String,
    /// Blobs it kept a copy of: the clients' blobs, the file's parts and
    /// manifests.
    pub blobs_it_kept: usize,
    /// The fewest copies of any of those blobs before it vanished.
    pub fewest_before: usize,
    /// Copies each blob should be back at: R, or every vault left.
    pub wanted: usize,
    /// Until every other vault counted it gone.
    pub forgotten_seconds: Option<f64>,
    /// Until every one of its blobs was back at `wanted` copies.
    pub back_seconds: Option<f64>,
    /// Until no vault named it among the chain's holders any more (its
    /// challenges on the chain unanswered): None in the bootstrap era,
    /// where holders are not the chain's, or not within the limit.
    pub evicted_seconds: Option<f64>,
    /// Its blobs still under `wanted` when the benchmark stopped looking.
    pub short_at_end: usize,
    /// (seconds since it vanished, its blobs under `wanted` copies), at
    /// each look.
    pub short_over_time: Vec<(f64, usize)>,
}

/// What the benchmark found.
#[derive(Clone, Debug, Serialize)]
pub struct DataBench {
    pub machine: Machine,
    pub options: DataBenchOptions,
    pub limits: Limits,
    pub joined_seconds: f64,
    /// Until every vault followed the chain into an era whose holders are
    /// every vault, registered on it (none in the bootstrap era).
    pub registered_seconds: Option<f64>,
    /// The chain's height and holder era when the clients began.
    pub height: u64,
    pub era: u64,
    pub put: Transfer,
    pub get: Transfer,
    /// Copies the PUTs got (receipts the client counted).
    pub copies: Option<Summary>,
    /// Blob bytes the vaults wrote (every copy) a second while the
    /// clients put, against the disk's sequential write speed.
    pub copies_mib_per_second: f64,
    pub copies_disk_share: f64,
    pub file: Option<FileRun>,
    pub audits: AuditCost,
    pub recovery: Option<Recovery>,
}

/// Runs the benchmark on a tokio runtime of its own.
pub fn run(options: &DataBenchOptions) -> Result<DataBench, BenchError> {
    if options.vaults == 0 || options.clients == 0 || options.replication == 0 {
        return Err(BenchError::Invalid(
            "--vaults, --clients and --replication must be at least 1".into(),
        ));
    }
    if options.blob_bytes == 0 {
        return Err(BenchError::Invalid("--size must be at least 1 byte".into()));
    }
    std::fs::create_dir_all(&options.dir).map_err(io("creating the benchmark's directory"))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let limits = Limits {
        blake3_bytes_per_second: blake3_bytes_per_second(cores, Duration::from_millis(500)),
        disk_write_bytes_per_second: crate::machine::disk_speed(&options.dir, 128 << 20)?
            .write_bytes_per_second,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("starting the runtime"))?;
    runtime.block_on(run_async(options, limits))
}

async fn run_async(options: &DataBenchOptions, limits: Limits) -> Result<DataBench, BenchError> {
    let mut network = Network::start(&LaunchOptions {
        vaults: options.vaults,
        k: options.k,
        scheme: spacevault_chain::ProofKind::Plain,
        slot_ms: options.slot_ms,
        pot_iterations: None,
        replication: options.replication,
        mode: Mode::InProcess,
        plot_cache: options.dir.clone(),
        run_dir: options.dir.join(format!("run-{}", std::process::id())),
        logs_dir: options.dir.join("logs"),
        verify_cache: true,
        shared_slot_checks: true,
        distance: Default::default(),
        trace_crypto: false,
        api_max_requests: spacevault_node::config::MAX_CONCURRENT_REQUESTS,
        max_peers: None,
        era_blocks: (options.era_blocks > 0).then_some(options.era_blocks),
        audits: Some(AuditConfig {
            interval: Duration::from_millis(options.audit_interval_ms),
            blobs: options.audit_blobs,
        }),
    })
    .await?;
    let result = measure(&mut network, options, limits).await;
    network.stop().await;
    result
}

async fn measure(
    network: &mut Network,
    options: &DataBenchOptions,
    limits: Limits,
) -> Result<DataBench, BenchError> {
    network.wait_joined(Duration::from_secs(120)).await?;
    let joined_seconds = network.elapsed_seconds();
    let clients: Vec<Client> = network
        .clients
        .iter()
        .map(|c| c.clone().with_spec(&network.spec))
        .collect();
    let registered_seconds = match options.era_blocks {
        0 => None,
        _ => {
            wait_registered(&clients, Duration::from_secs(300)).await?;
            Some(network.elapsed_seconds())
        }
    };
    let status = clients[0]
        .status()
        .await
        .map_err(|e| BenchError::Invalid(format!("vault 0's status: {e}")))?;
    let era = spacevault_chain::holders::era_at(status.height, network.spec.era_blocks);
    let audit_ops = |n: &Network| {
        let proof = n.crypto_op(Op::HashAuditProof).unwrap_or_default();
        let check = n.crypto_op(Op::HashAuditCheck).unwrap_or_default();
        (proof.1, check.1)
    };
    let ops0 = audit_ops(network);
    let cpu0 = network.cpu_seconds();
    let audits0 = audit_metrics(network).await;

    let (put, addresses, copies) = put_blobs(&clients, options).await;
    let stored_after_puts = network.metric_sum("spacevault_blob_bytes_stored", "").await;
    let get = get_blobs(&clients, &addresses, options).await;
    let file = match options.file_bytes {
        0 => None,
        bytes => Some(file_run(&clients, bytes, &options.dir).await?),
    };

    let ops1 = audit_ops(network);
    let cpu1 = network.cpu_seconds();
    let audits1 = audit_metrics(network).await;
    let stored = network.metric_sum("spacevault_blob_bytes_stored", "").await;
    let served = (get.bytes + file.as_ref().map_or(0, |f| f.get.bytes)) as f64;
    let audits = audit_cost(
        audits0,
        audits1,
        (ops1.0 - ops0.0, ops1.1 - ops0.1),
        cpu0.zip(cpu1).map(|(a, b)| b - a),
        stored + served,
        options,
    );
    let copies_mib_per_second = stored_after_puts / (1 << 20) as f64 / put.seconds.max(1e-9);
    let recovery = recover(network, &addresses, options).await;
    Ok(DataBench {
        machine: Machine::this(),
        options: options.clone(),
        limits,
        joined_seconds,
        registered_seconds,
        height: status.height,
        era,
        copies_disk_share: copies_mib_per_second * (1 << 20) as f64
            / limits.disk_write_bytes_per_second.max(1.0),
        copies_mib_per_second,
        copies: (!copies.is_empty()).then(|| Summary::of(&copies)),
        put,
        get,
        file,
        audits,
        recovery,
    })
}

/// Waits until every vault is in an era (past the bootstrap one) whose
/// holders, as the chain registers them, are every vault.
async fn wait_registered(clients: &[Client], limit: Duration) -> Result<(), BenchError> {
    let deadline = Instant::now() + limit;
    loop {
        let mut eras = Vec::new();
        for client in clients {
            match client.holders(None).await {
                Ok(a) if !a.bootstrap && a.holders.len() == clients.len() => eras.push(a.era),
                _ => break,
            }
        }
        if eras.len() == clients.len() && eras.iter().all(|&e| e == eras[0]) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(BenchError::Invalid(format!(
                "the vaults were not all registered holders of one era within {} s",
                limit.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// BLAKE3 over 16 MiB buffers on `threads` threads for `duration`, bytes a
/// second all together.
pub fn blake3_bytes_per_second(threads: usize, duration: Duration) -> f64 {
    let buffer = vec![0x5Au8; 16 << 20];
    let started = Instant::now();
    let hashed: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut bytes = 0u64;
                    while started.elapsed() < duration {
                        std::hint::black_box(blake3::hash(&buffer));
                        bytes += buffer.len() as u64;
                    }
                    bytes
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    hashed as f64 / started.elapsed().as_secs_f64()
}

/// The clients' random blobs, each through a random vault, for the set
/// time: the transfer, the addresses stored, and each PUT's copies.
async fn put_blobs(
    clients: &[Client],
    options: &DataBenchOptions,
) -> (Transfer, Vec<[u8; 32]>, Vec<f64>) {
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(options.seconds);
    let tasks: Vec<_> = (0..options.clients)
        .map(|c| {
            let clients = clients.to_vec();
            let size = options.blob_bytes;
            tokio::spawn(async move {
                let mut rng = SplitMix(0xDA7A + c as u64);
                let (mut done, mut errors) = (Vec::new(), 0usize);
                while Instant::now() < until {
                    let blob = random_bytes(&mut rng, size);
                    let via = &clients[rng.next_u64() as usize % clients.len()];
                    let t = Instant::now();
                    match via.put(blob).await {
                        Ok(answer) => match spacevault_node::client::parse_address(&answer.address)
                        {
                            Ok(address) => {
                                done.push((address, answer.copies, t.elapsed().as_secs_f64() * 1e3))
                            }
                            Err(_) => errors += 1,
                        },
                        Err(_) => errors += 1,
                    }
                }
                (done, errors)
            })
        })
        .collect();
    let (mut addresses, mut copies, mut latencies, mut errors) =
        (Vec::new(), Vec::new(), Vec::new(), 0);
    for task in tasks {
        if let Ok((done, e)) = task.await {
            for (address, n, ms) in done {
                addresses.push(address);
                copies.push(n as f64);
                latencies.push(ms);
            }
            errors += e;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes = (addresses.len() * options.blob_bytes) as u64;
    let transfer = Transfer::of(addresses.len(), errors, bytes, seconds, &latencies);
    (transfer, addresses, copies)
}

/// Every blob put, read back through a random vault by the same number of
/// clients (each read checked against its address by the client).
async fn get_blobs(
    clients: &[Client],
    addresses: &[[u8; 32]],
    options: &DataBenchOptions,
) -> Transfer {
    let started = Instant::now();
    let tasks: Vec<_> = (0..options.clients)
        .map(|c| {
            let clients = clients.to_vec();
            let mine: Vec<[u8; 32]> = addresses
                .iter()
                .skip(c)
                .step_by(options.clients)
                .copied()
                .collect();
            tokio::spawn(async move {
                let mut rng = SplitMix(0x6E7 + c as u64);
                let (mut latencies, mut bytes, mut errors) = (Vec::new(), 0u64, 0usize);
                for address in mine {
                    let from = &clients[rng.next_u64() as usize % clients.len()];
                    let t = Instant::now();
                    match from.get_blob(&address).await {
                        Ok(blob) => {
                            latencies.push(t.elapsed().as_secs_f64() * 1e3);
                            bytes += blob.len() as u64;
                        }
                        Err(_) => errors += 1,
                    }
                }
                (latencies, bytes, errors)
            })
        })
        .collect();
    let (mut latencies, mut bytes, mut errors) = (Vec::new(), 0u64, 0usize);
    for task in tasks {
        if let Ok((l, b, e)) = task.await {
            latencies.extend(l);
            bytes += b;
            errors += e;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Transfer::of(latencies.len(), errors, bytes, seconds, &latencies)
}

fn random_bytes(rng: &mut SplitMix, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    for chunk in bytes.chunks_mut(8) {
        let r = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    bytes
}

/// A file of `bytes` random bytes written to `dir`, put through the first
/// vault and read back through the last into a hasher (never held whole).
async fn file_run(
    clients: &[Client],
    bytes: u64,
    dir: &std::path::Path,
) -> Result<FileRun, BenchError> {
    let path = dir.join(format!("file-{}.bin", std::process::id()));
    let written = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || write_random_file(&path, bytes))
            .await
            .map_err(|e| BenchError::Invalid(format!("writing the file: {e}")))?
    };
    let hash = match written {
        Ok(hash) => hash,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
    };
    let options = FileOptions::default();
    let started = Instant::now();
    let put = clients[0].put_file(&path, &options).await;
    let put_seconds = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let answer = put.map_err(|e| BenchError::Invalid(format!("putting the file: {e}")))?;
    let mut hasher = HashingWriter(blake3::Hasher::new());
    let started = Instant::now();
    let got = clients[clients.len() - 1]
        .get_file(&answer.address, &mut hasher, &options)
        .await;
    let get_seconds = started.elapsed().as_secs_f64();
    let (get_ok, get_bytes) = match &got {
        Ok(g) => (1, g.bytes),
        Err(_) => (0, 0),
    };
    Ok(FileRun {
        bytes,
        parts: answer.parts,
        manifests: answer.manifests,
        copies: answer.copies,
        put: Transfer::of(1, 0, bytes, put_seconds, &[put_seconds * 1e3]),
        get: Transfer::of(
            get_ok,
            1 - get_ok,
            get_bytes,
            get_seconds,
            &[get_seconds * 1e3],
        ),
        equal: got.is_ok() && *hasher.0.finalize().as_bytes() == hash && answer.hash == hash,
    })
}

fn write_random_file(path: &std::path::Path, bytes: u64) -> Result<[u8; 32], BenchError> {
    let file = std::fs::File::create(path).map_err(io("creating the file"))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut hasher = blake3::Hasher::new();
    let mut rng = SplitMix(0xF11E);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(1 << 20) as usize;
        let chunk = random_bytes(&mut rng, n);
        hasher.update(&chunk);
        out.write_all(&chunk).map_err(io("writing the file"))?;
        left -= n as u64;
    }
    out.flush().map_err(io("writing the file"))?;
    Ok(*hasher.finalize().as_bytes())
}

struct HashingWriter(blake3::Hasher);

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Audits asked, passed, answered and the answers' bytes, every vault.
async fn audit_metrics(network: &Network) -> [f64; 4] {
    [
        network.metric_sum("spacevault_audits_total", "").await,
        network
            .metric_sum("spacevault_audits_total", "outcome=\"passed\"")
            .await,
        network
            .metric_sum("spacevault_audit_answers_total", "")
            .await,
        network
            .metric_sum("spacevault_audit_answer_bytes_total", "")
            .await,
    ]
}

fn audit_cost(
    before: [f64; 4],
    after: [f64; 4],
    nanos: (u64, u64),
    cpu_seconds: Option<f64>,
    data_bytes: f64,
    options: &DataBenchOptions,
) -> AuditCost {
    let [audits, passed, answers, answer_bytes] =
        std::array::from_fn(|i| (after[i] - before[i]).max(0.0));
    let (proof_seconds, check_seconds) = (nanos.0 as f64 / 1e9, nanos.1 as f64 / 1e9);
    let audit_seconds = proof_seconds + check_seconds;
    let total_bytes = answer_bytes + data_bytes;
    // A round a minute, four blobs, each at its R - 1 other holders: as
    // many answers a vault gives as it asks for, on average.
    let default = AuditConfig::default();
    let hourly = 3600.0 / default.interval.as_secs_f64()
        * default.blobs as f64
        * options.replication.saturating_sub(1) as f64;
    let per_answer = (answers > 0.0).then(|| (answer_bytes / answers, audit_seconds / answers));
    AuditCost {
        audits,
        passed,
        answers,
        answer_bytes,
        proof_seconds,
        check_seconds,
        process_cpu_seconds: cpu_seconds,
        cpu_share: cpu_seconds.filter(|&c| c > 0.0).map(|c| audit_seconds / c),
        data_bytes,
        bandwidth_share: (total_bytes > 0.0).then(|| answer_bytes / total_bytes),
        default_hourly_bytes: per_answer.map(|(b, _)| b * hourly),
        default_hourly_cpu_seconds: per_answer.map(|(_, s)| s * hourly),
    }
}

/// Ends the last vault (never vault 0, which keeps the network's time)
/// and watches every blob it kept until each is back at R copies among
/// the others, or the limit passes. None when no blob was put.
async fn recover(
    network: &mut Network,
    addresses: &[[u8; 32]],
    options: &DataBenchOptions,
) -> Option<Recovery> {
    let n = network.clients.len();
    if n < 2 || addresses.is_empty() {
        return None;
    }
    let victim = n - 1;
    let wanted = (options.replication as usize).min(n - 1);
    let copies = |network: &Network, address: &[u8; 32]| {
        (0..network.clients.len())
            .filter(|&i| network.keeps(i, address) == Some(true))
            .count()
    };
    // Every blob it keeps: the clients' blobs, the file's parts and
    // manifests, and what replication brought it.
    let kept: Vec<[u8; 32]> = network.kept_blobs(victim)?;
    let fewest_before = kept.iter().map(|a| copies(network, a)).min().unwrap_or(0);
    let vanished = network.statuses().await[victim]
        .as_ref()
        .map(|s| s.farmer_key.clone())
        .unwrap_or_default();
    let key: [u8; 32] = hex::decode(&vanished).ok()?.try_into().ok()?;
    network.kill(victim).await.ok()?;
    let started = Instant::now();
    let limit = Duration::from_secs_f64(options.recovery_limit_seconds);
    let (mut forgotten_seconds, mut back_seconds, mut evicted_seconds) = (None, None, None);
    // Past the bootstrap era the vanished vault is a holder the chain
    // names until a challenge it cannot answer takes it out.
    let chain_holders = options.era_blocks > 0;
    let mut short = kept.clone();
    let mut short_over_time = vec![(0.0, kept.len())];
    while started.elapsed() < limit {
        let now = started.elapsed().as_secs_f64();
        let every = |f: &dyn Fn(usize) -> bool| (0..network.clients.len()).all(f);
        if forgotten_seconds.is_none() && every(&|i| network.counts_alive(i, &key) == Some(false)) {
            forgotten_seconds = Some(now);
        }
        if chain_holders
            && evicted_seconds.is_none()
            && every(&|i| network.names_holder(i, &key) == Some(false))
        {
            evicted_seconds = Some(now);
        }
        if back_seconds.is_none() {
            short.retain(|a| copies(network, a) < wanted);
            short_over_time.push((now, short.len()));
            if short.is_empty() {
                back_seconds = Some(now);
            }
        }
        if back_seconds.is_some() && (evicted_seconds.is_some() || !chain_holders) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Some(Recovery {
        vanished,
        blobs_it_kept: kept.len(),
        fewest_before,
        wanted,
        forgotten_seconds,
        back_seconds,
        evicted_seconds,
        short_at_end: short.len(),
        short_over_time,
    })
}
