//! One client of `spacevault stress`: it PUTs its blobs and registers
//! through one vault's HTTP API, GETs each back through another, and
//! records what became of every operation (ok, an error, lost, wrong) and
//! how long it took.

use crate::machine::SplitMix;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use spacevault_chain::Keypair;
use spacevault_node::client::{Client, ClientError};
use std::sync::Arc;
use std::time::Instant;

/// The kinds of operation a client performs, in the order it performs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    PutImmutable,
    PutMutable,
    GetImmutable,
    GetMutable,
}

impl OpKind {
    pub const ALL: [OpKind; 4] = [
        OpKind::PutImmutable,
        OpKind::PutMutable,
        OpKind::GetImmutable,
        OpKind::GetMutable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::PutImmutable => "put_immutable",
            OpKind::PutMutable => "put_mutable",
            OpKind::GetImmutable => "get_immutable",
            OpKind::GetMutable => "get_mutable",
        }
    }
}

/// One kind of operation's outcome in a cell.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpFigures {
    pub ok: usize,
    /// The vault refused or failed the operation (a PUT that did not
    /// succeed, a GET that could not reach the vault).
    pub errors: usize,
    /// A GET of something PUT successfully that the network no longer has.
    pub lost: usize,
    /// A GET that returned other bytes, or another register version, than
    /// were PUT.
    pub wrong: usize,
    pub latency_ms: Option<Summary>,
    /// The first error's message, for the report.
    pub first_error: Option<String>,
}

/// What became of one operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Error(String),
    Lost,
    Wrong,
}

/// One operation, as a client records it (and a client process writes it
/// in its answer).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub kind: OpKind,
    pub ms: f64,
    /// When the operation finished, in seconds from the cell's clients'
    /// start: the run's time series.
    pub end_seconds: f64,
    pub outcome: Outcome,
}

pub(crate) fn figures_of<'a>(records: impl Iterator<Item = &'a Record>) -> OpFigures {
    let mut f = OpFigures::default();
    let mut ms = Vec::new();
    for r in records {
        match &r.outcome {
            Outcome::Ok => {
                f.ok += 1;
                ms.push(r.ms);
            }
            Outcome::Error(why) => {
                f.errors += 1;
                f.first_error.get_or_insert_with(|| why.clone());
            }
            Outcome::Lost => f.lost += 1,
            Outcome::Wrong => f.wrong += 1,
        }
    }
    f.latency_ms = (!ms.is_empty()).then(|| Summary::of(&ms));
    f
}

/// One client's share of a cell.
pub(crate) struct ClientWork {
    pub index: usize,
    pub put_via: Client,
    pub get_via: Client,
    pub chain_id: [u8; 32],
    pub immutable: usize,
    pub mutable: usize,
    pub size: usize,
    pub value_bytes: usize,
    pub in_flight: usize,
    /// The cell's clients' start, which every record's end counts from.
    pub started: Instant,
    /// Mixed into the client's key and bytes: 0 for a network started for
    /// the run, else a run's own, so that runs against one long-lived
    /// network write data of their own.
    pub seed: u64,
}

/// One client's share of a cell as a process of its own is given it
/// (`spacevault stress client` reads it as JSON on its standard input).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientJob {
    pub index: usize,
    pub put_via: String,
    pub get_via: String,
    /// Hex.
    pub chain_id: String,
    pub immutable: usize,
    pub mutable: usize,
    pub size: usize,
    pub value_bytes: usize,
    pub in_flight: usize,
    pub seed: u64,
    /// The clients' start as Unix ns: the process puts its records' ends
    /// on the run's clock from it, its own start-up included.
    pub origin_unix_ns: u64,
}

/// What a client process answers on its standard output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientAnswer {
    /// Their ends on the run's clock (from the job's origin).
    pub records: Vec<Record>,
    /// The process's own CPU seconds when it was done (filled in by the
    /// process once its runtime's threads are gone).
    pub cpu_seconds: Option<f64>,
}

/// Now, in Unix ns: the clock a run's clients and their processes share.
pub(crate) fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Runs one client's job, as `spacevault stress client` does in a process
/// of its own; the answer's CPU is left for the process to fill in.
pub async fn run_job(job: ClientJob) -> Result<ClientAnswer, crate::BenchError> {
    // How long after the clients' start this process began its work, by
    // the wall clock both share.
    let shift = unix_ns().saturating_sub(job.origin_unix_ns) as f64 / 1e9;
    let bad = |e: String| crate::BenchError::Invalid(e);
    let client = |url: &str| Client::new(url).map_err(|e| bad(format!("{url}: {e}")));
    let mut chain_id = [0u8; 32];
    hex::decode_to_slice(&job.chain_id, &mut chain_id)
        .map_err(|_| bad("the job's chain id is not 32 bytes of hex".into()))?;
    let work = ClientWork {
        index: job.index,
        put_via: client(&job.put_via)?,
        get_via: client(&job.get_via)?,
        chain_id,
        immutable: job.immutable,
        mutable: job.mutable,
        size: job.size,
        value_bytes: job.value_bytes,
        in_flight: job.in_flight.max(1),
        started: Instant::now(),
        seed: job.seed,
    };
    let mut records = work.run().await;
    for r in &mut records {
        r.end_seconds += shift;
    }
    Ok(ClientAnswer {
        records,
        cpu_seconds: None,
    })
}

/// Runs each job in a process of its own (`exe stress client`), all at
/// once, and gathers their records (on the run's clock, from the jobs'
/// origin) and the CPU they used, all together.
pub(crate) async fn run_in_processes(
    exe: &std::path::Path,
    jobs: Vec<ClientJob>,
) -> Result<(Vec<Record>, Option<f64>), crate::BenchError> {
    let tasks: Vec<_> = jobs
        .into_iter()
        .map(|job| {
            let exe = exe.to_path_buf();
            tokio::task::spawn_blocking(move || one_process(&exe, &job))
        })
        .collect();
    let (mut records, mut cpu) = (Vec::new(), Some(0.0));
    for task in tasks {
        let (r, c) = task
            .await
            .map_err(|e| crate::BenchError::Invalid(format!("a client process: {e}")))??;
        records.extend(r);
        cpu = cpu.zip(c).map(|(a, b)| a + b);
    }
    Ok((records, cpu))
}

/// One client process, from its start to its answer. The thread that
/// spawns it waits for it, so the process dies with the run
/// ([`crate::launch::die_with_parent`]).
fn one_process(
    exe: &std::path::Path,
    job: &ClientJob,
) -> Result<(Vec<Record>, Option<f64>), crate::BenchError> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let failed = |what: String| crate::BenchError::Invalid(format!("client {}: {what}", job.index));
    let mut cmd = Command::new(exe);
    cmd.args(["stress", "client"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::launch::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| failed(format!("starting {}: {e}", exe.display())))?;
    let job_json = serde_json::to_vec(job).expect("a job serializes");
    // A process that ended before reading its job says why on stderr:
    // waited for either way.
    let given = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(&job_json));
    let out = child
        .wait_with_output()
        .map_err(|e| failed(format!("waiting for it: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .find(|l| l.starts_with("error") || l.contains("panicked"))
            .or_else(|| stderr.trim().lines().last())
            .unwrap_or_default();
        return Err(failed(format!("{} ({why})", out.status)));
    }
    if let Some(Err(e)) = given {
        return Err(failed(format!("giving it its job: {e}")));
    }
    let answer: ClientAnswer = serde_json::from_slice(&out.stdout)
        .map_err(|e| failed(format!("its answer is not a client's: {e}")))?;
    Ok((answer.records, answer.cpu_seconds))
}

/// What a client put, to check what it gets back against.
enum Put {
    Blob {
        address: String,
        bytes: Vec<u8>,
    },
    Register {
        name: String,
        value: Vec<u8>,
        version: u64,
    },
}

impl ClientWork {
    /// The client's own key: registers belong to their writer.
    fn key(&self) -> Keypair {
        let mut secret = [0u8; 32];
        secret[..8].copy_from_slice(&(self.index as u64).to_le_bytes());
        secret[8] = 0xc1;
        secret[16..24].copy_from_slice(&self.seed.to_le_bytes());
        Keypair::from_secret(&secret)
    }

    fn bytes(&self, what: u64, i: usize, len: usize) -> Vec<u8> {
        let mut rng = SplitMix(
            ((self.index as u64) << 32) ^ (what << 24) ^ i as u64 ^ self.seed.rotate_left(17),
        );
        let mut out = vec![0u8; len];
        for chunk in out.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        out
    }

    pub async fn run(self) -> Vec<Record> {
        let me = Arc::new(self);
        let key = Arc::new(me.key());
        let mut records = Vec::new();
        // PUT everything, then GET everything back, as the profiling study's clients
        // do: immutable blobs first, then registers, each stage with
        // `in_flight` operations outstanding.
        let puts_imm = (0..me.immutable)
            .map(|i| (OpKind::PutImmutable, i))
            .collect();
        let puts_mut = (0..me.mutable).map(|i| (OpKind::PutMutable, i)).collect();
        let mut put: Vec<Option<Put>> = Vec::new();
        for stage in [puts_imm, puts_mut] {
            for (record, p) in me.stage(&key, stage, Vec::new()).await {
                records.push(record);
                put.push(p);
            }
        }
        let put: Vec<Put> = put.into_iter().flatten().collect();
        let (blobs, registers): (Vec<Put>, Vec<Put>) =
            put.into_iter().partition(|p| matches!(p, Put::Blob { .. }));
        for (kind, items) in [
            (OpKind::GetImmutable, blobs),
            (OpKind::GetMutable, registers),
        ] {
            let ops = (0..items.len()).map(|i| (kind, i)).collect();
            for (record, _) in me.stage(&key, ops, items).await {
                records.push(record);
            }
        }
        records
    }

    /// Runs `ops` with `in_flight` of them outstanding; GETs check against
    /// `items` (indexed by the op's number).
    async fn stage(
        self: &Arc<Self>,
        key: &Arc<Keypair>,
        ops: Vec<(OpKind, usize)>,
        items: Vec<Put>,
    ) -> Vec<(Record, Option<Put>)> {
        let items = Arc::new(items);
        let ops = Arc::new(ops);
        let workers = self.in_flight.min(ops.len().max(1));
        let mut tasks = Vec::new();
        for w in 0..workers {
            let (me, key, ops, items) = (self.clone(), key.clone(), ops.clone(), items.clone());
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                for &(kind, i) in ops.iter().skip(w).step_by(workers) {
                    out.push(me.op(&key, kind, i, &items).await);
                }
                out
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            if let Ok(r) = t.await {
                out.extend(r);
            }
        }
        out
    }

    async fn op(
        &self,
        key: &Keypair,
        kind: OpKind,
        i: usize,
        items: &[Put],
    ) -> (Record, Option<Put>) {
        let t = Instant::now();
        let (outcome, put) = match kind {
            OpKind::PutImmutable => {
                let bytes = self.bytes(1, i, self.size);
                match self.put_via.put(bytes.clone()).await {
                    Ok(a) => (
                        Outcome::Ok,
                        Some(Put::Blob {
                            address: a.address,
                            bytes,
                        }),
                    ),
                    Err(e) => (Outcome::Error(e.to_string()), None),
                }
            }
            OpKind::PutMutable => {
                let name = format!("stress-{i}");
                let value = self.bytes(2, i, self.value_bytes);
                match self.put_via.set(key, &self.chain_id, &name, &value).await {
                    Ok(a) => (
                        Outcome::Ok,
                        Some(Put::Register {
                            name,
                            value,
                            version: a.version,
                        }),
                    ),
                    Err(e) => (Outcome::Error(e.to_string()), None),
                }
            }
            OpKind::GetImmutable => {
                let Put::Blob { address, bytes } = &items[i] else {
                    unreachable!("GETs of blobs are given blobs")
                };
                match self.get_via.get(address).await {
                    Ok(got) if got == *bytes => (Outcome::Ok, None),
                    Ok(_) => (Outcome::Wrong, None),
                    Err(e) => (judge(e), None),
                }
            }
            OpKind::GetMutable => {
                let Put::Register {
                    name,
                    value,
                    version,
                } = &items[i]
                else {
                    unreachable!("GETs of registers are given registers")
                };
                // Read through another vault once its chain holds the
                // write (the writing vault's branch may not be its own
                // yet): a 404 then is a write that did not reach its
                // chain in the API's wait, lost as far as a client knows.
                match self
                    .get_via
                    .read_version(&key.public(), name, *version)
                    .await
                {
                    Ok(r) if r.version == *version && r.value_hex == hex::encode(value) => {
                        (Outcome::Ok, None)
                    }
                    Ok(_) => (Outcome::Wrong, None),
                    Err(e) => (judge(e), None),
                }
            }
        };
        let record = Record {
            kind,
            ms: t.elapsed().as_secs_f64() * 1e3,
            end_seconds: self.started.elapsed().as_secs_f64(),
            outcome,
        };
        (record, put)
    }
}

/// A failed GET of something that was put: lost when the vault says it
/// has no such thing, an error when the vault could not be asked.
fn judge(e: ClientError) -> Outcome {
    match e {
        ClientError::Refused { status: 404, .. } => Outcome::Lost,
        ClientError::WrongBytes { .. } | ClientError::ForgedRegister { .. } => Outcome::Wrong,
        e => Outcome::Error(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_count_each_outcome_and_time_only_the_good() {
        let r = |ms, outcome| Record {
            kind: OpKind::GetImmutable,
            ms,
            end_seconds: 0.0,
            outcome,
        };
        let records = [
            r(1.0, Outcome::Ok),
            r(3.0, Outcome::Ok),
            r(100.0, Outcome::Lost),
            r(200.0, Outcome::Wrong),
            r(300.0, Outcome::Error("refused".into())),
        ];
        let f = figures_of(records.iter());
        assert_eq!((f.ok, f.lost, f.wrong, f.errors), (2, 1, 1, 1));
        assert_eq!(f.latency_ms.unwrap().max, 3.0);
        assert_eq!(f.first_error.as_deref(), Some("refused"));
    }

    #[test]
    fn a_404_is_lost_data_and_anything_else_an_error() {
        let refused = |status| ClientError::Refused {
            status,
            reason: "x".into(),
        };
        assert_eq!(judge(refused(404)), Outcome::Lost);
        assert!(matches!(judge(refused(503)), Outcome::Error(_)));
    }
}
