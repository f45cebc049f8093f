//! The vault's HTTP API (`/v1/...`), its health and metrics, and its page.
//! Bad input gets a 4xx with `{"error": "..."}`; bodies are limited to a
//! blob's size, every request to a minute, the requests worked on at once
//! to the config's `api_max_requests` (by default
//! [`crate::config::MAX_CONCURRENT_REQUESTS`]), and what a request may
//! name and carry as [`guard`] says.

mod content;
pub mod guard;
pub mod types;

pub use crate::config::ApiTimes;
use crate::shared::Shared;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use content::{get_blob, get_register, put_blob, put_register};
pub use content::{register_tx, SETTLED_DEPTH};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
pub use types::{BlockJson, ProofJson, ReceiptJson, RegisterPut, TxJson};
use types::{
    Bootstrap, CryptoAnswer, CryptoOpJson, ErrorAnswer, Head, Health, RecentBlock, Scrub, Status,
};

/// An error answer: its status and reason.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(ErrorAnswer { error: self.1 })).into_response()
    }
}

fn bad(why: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, why.into())
}

/// A body that could not be read: too large (413), or quiet for longer
/// than the vault allows (408), or broken off.
fn body_error(s: &Shared, e: BytesRejection) -> ApiError {
    use std::error::Error;
    let mut source: Option<&(dyn Error + 'static)> = Some(&e);
    while let Some(err) = source {
        if err.is::<tower_http::timeout::TimeoutError>() {
            return ApiError(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "no byte of the body came for {} ms: send it without pauses that long",
                    s.api_times.body_progress.as_millis()
                ),
            );
        }
        source = err.source();
    }
    ApiError(
        e.status(),
        format!("the body could not be read: {}", e.body_text()),
    )
}

/// The engine's blocking task failed (it panicked).
fn engine_failed() -> ApiError {
    internal("the chain's work failed")
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

type S = State<Arc<Shared>>;

/// The routes; `hosts`: the names besides IP addresses and `localhost`
/// that requests may give as their Host.
pub fn router(shared: Arc<Shared>, hosts: Vec<String>) -> Router {
    let body_limit = shared.spec.max_blob_bytes as usize + (64 << 10);
    let request_timeout = shared.api_times.request;
    let max_requests = shared.api_max_requests;
    let hosts = Arc::new(hosts);
    Router::new()
        .route("/", get(page))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/status", get(status))
        .route("/v1/crypto", get(crypto))
        .route("/v1/crypto/trace", get(crypto_trace))
        .route("/v1/head", get(head))
        .route("/v1/blocks/{height}", get(block))
        .route("/v1/blobs", axum::routing::put(put_blob))
        .route("/v1/blobs/{address}", get(get_blob))
        .route(
            "/v1/registers/{owner}/{name}",
            get(get_register).put(put_register),
        )
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such path".into()) })
        .method_not_allowed_fallback(|| async {
            ApiError(
                StatusCode::METHOD_NOT_ALLOWED,
                "this path does not take that method".into(),
            )
        })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            tower::ServiceBuilder::new()
                .layer(axum::error_handling::HandleErrorLayer::new(
                    move |e: tower::BoxError| async move {
                        if e.is::<tower::load_shed::error::Overloaded>() {
                            return ApiError(
                                StatusCode::SERVICE_UNAVAILABLE,
                                format!(
                                    "this vault is working on {max_requests} requests already: try again"
                                ),
                            );
                        }
                        ApiError(
                            StatusCode::GATEWAY_TIMEOUT,
                            format!(
                                "the request took longer than the {} ms this vault allows",
                                request_timeout.as_millis()
                            ),
                        )
                    },
                ))
                .layer(tower::load_shed::LoadShedLayer::new())
                // One limit for the whole API: the router applies a layer
                // to each route apart, and a plain concurrency limit would
                // give each route a limit of its own.
                .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
                    max_requests,
                ))
                .layer(tower::timeout::TimeoutLayer::new(request_timeout)),
        )
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let hosts = hosts.clone();
                async move { guard::check(hosts, request, next).await }
            },
        ))
        .with_state(shared)
}

/// How long requests under way may take to finish once the API stops.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Serves the API on `listener` until `stop`: each connection on a task of
/// its own, at most [`guard::MAX_CONNECTIONS`] at once (those past it are
/// closed at once), each closed when a request's headers take longer than
/// [`ApiTimes::headers`], and a request answered 408 when its body goes
/// [`ApiTimes::body_progress`] without a byte. On `stop` it takes no more
/// connections, lets the requests under way finish for up to [`DRAIN`]
/// (connections idle between requests close at once; one that has not sent
/// its first request yet counts as under way) and ends the rest.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    hosts: Vec<String>,
    stop: tokio_util::sync::CancellationToken,
) {
    let headers = shared.api_times.headers;
    let body_progress = shared.api_times.body_progress;
    let shared_tasks = shared.tasks.clone();
    // A body that goes quiet fails its read with a timeout, which the
    // handlers answer 408 ([`body_error`]).
    let app = tower::ServiceBuilder::new()
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            body_progress,
        ))
        .service(router(shared, hosts));
    let open = Arc::new(tokio::sync::Semaphore::new(guard::MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, for one: wait rather than spin.
                tracing::warn!(%e, "the API could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let stop = stop.clone();
        // Tracked with the vault's tasks: a connection holds the vault's
        // state until it has ended, however it ends.
        let tasks = shared_tasks.clone();
        connections.spawn(tasks.track_future(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(headers)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(permit);
        }));
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::info!(
            left = connections.len(),
            "requests still under way when the API stopped were cut off"
        );
        connections.shutdown().await;
    }
}

async fn page() -> Html<&'static str> {
    Html(crate::page::HTML)
}

async fn health(State(s): S) -> Json<Health> {
    Json(Health {
        ok: true,
        height: *s.head.borrow(),
        peers: s.metrics.peers.get(),
    })
}

async fn metrics(State(s): S) -> impl IntoResponse {
    s.metrics.sync_crypto(&s.meter);
    s.metrics.sync_network(s.net.commands_dropped());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

/// The vault's cryptographic operations so far, by kind and purpose.
async fn crypto(State(s): S) -> Json<CryptoAnswer> {
    let operations = spacevault_meter::Op::ALL
        .iter()
        .map(|&op| CryptoOpJson {
            kind: op.kind().name().to_string(),
            purpose: op.purpose().to_string(),
            count: s.meter.count(op),
            seconds: s.meter.nanos(op) as f64 / 1e9,
            cache_hits: s.sig_cache.as_ref().map_or(0, |c| c.hits(op)),
        })
        .collect();
    Json(CryptoAnswer {
        verify_cache: s.sig_cache.is_some(),
        operations,
    })
}

/// The window of `GET /v1/crypto/trace`, in Unix nanoseconds.
#[derive(Deserialize)]
struct TraceQuery {
    from_ns: u64,
    to_ns: u64,
}

/// The crypto operations this vault performed since the last call that
/// started in the window, as an SVTRACE1 trace (docs/PROFILING.md): what
/// `spacevault stress --trace-crypto` collects from vaults that run as
/// processes of their own. A vault started without `--trace-crypto` keeps
/// no spans: 404.
async fn crypto_trace(
    State(s): S,
    query: Result<axum::extract::Query<TraceQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let query = query.map_err(|e| bad(format!("the query: {}", e.body_text())))?;
    if query.to_ns < query.from_ns {
        return Err(bad("to_ns is before from_ns"));
    }
    if !s.meter.is_tracing() {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            "this vault keeps no crypto trace: start it with --trace-crypto".into(),
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let trace = spacevault_meter::trace::Trace::of_spans(
        0,
        cores,
        s.meter.epoch_unix_ns(),
        (query.from_ns, query.to_ns),
        &s.meter.take_trace(),
    );
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        trace.encode(),
    )
        .into_response())
}

async fn head(State(s): S) -> Result<Json<Head>, ApiError> {
    let h = s
        .for_request(|s| s.engine().head())
        .await
        .ok_or_else(engine_failed)?;
    Ok(Json(Head {
        height: h.height,
        hash: hex::encode(h.hash),
    }))
}

async fn block(State(s): S, Path(height): Path<String>) -> Result<Json<BlockJson>, ApiError> {
    let height: u64 = height
        .parse()
        .map_err(|_| bad(format!("the height '{height}' is not a whole number")))?;
    let found = s
        .for_request(move |s| {
            let engine = s.engine();
            let block = engine.block_at(height)?;
            let quality = block.as_ref().and_then(|b| {
                let info = engine.store().info(&b.hash());
                info.ok().flatten().map(|i| i.rank.quality)
            });
            Ok::<_, spacevault_store::StoreError>(block.map(|b| (b, quality)))
        })
        .await
        .ok_or_else(engine_failed)?;
    let (block, quality) = found.map_err(internal)?.ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            format!("no block at height {height}"),
        )
    })?;
    let hash = block.hash();
    let h = &block.header;
    Ok(Json(BlockJson {
        height: h.height,
        hash: hex::encode(hash),
        parent: hex::encode(h.parent),
        timestamp_ms: h.timestamp_ms,
        producer: hex::encode(h.proof.farmer_key),
        proof: ProofJson {
            farmer_key: hex::encode(h.proof.farmer_key),
            seed: hex::encode(h.proof.seed),
            k: h.proof.k,
            nonce: h.proof.nonce,
        },
        quality,
        txs: block
            .txs
            .iter()
            .map(|t| TxJson {
                owner: hex::encode(t.owner),
                name: String::from_utf8_lossy(&t.name).into_owned(),
                version: t.version,
                value_hex: hex::encode(&t.value),
            })
            .collect(),
        signature: hex::encode(block.signature),
        received_unix_ms: s.arrivals.lock().unwrap().get(&hash),
    }))
}

fn bootstrap_json(b: &spacevault_network::BootstrapStatus) -> Bootstrap {
    Bootstrap {
        address: b.address.to_string(),
        reached: b.reached,
        error: b.error.clone(),
        retry_in_s: b.retry_in.map(|w| w.as_secs_f64()),
    }
}

/// A recent block, with its producer's peer id beside its farmer key.
fn recent_block_json(block: crate::engine::BlockSummary) -> RecentBlock {
    let producer_peer = hex::decode(&block.producer)
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .and_then(|k| spacevault_network::peer_of(&k))
        .map(|p| p.to_string());
    RecentBlock {
        block,
        producer_peer,
    }
}

fn scrub_json(s: &Shared) -> Scrub {
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    Scrub {
        rate_bytes_per_s: s.scrub_rate,
        passes: s.scrub.passes.load(relaxed),
        pass_blobs: s.scrub.pass_blobs.load(relaxed),
        pass_checked: s.scrub.pass_checked.load(relaxed),
        last_pass_ms: s.scrub.last_pass_ms.load(relaxed),
        damaged: s.metrics.scrub_damaged.get(),
    }
}

async fn status(State(s): S) -> Result<Json<Status>, ApiError> {
    let (head, recent, election, block_delay_ms) = s
        .for_request(|s| {
            let e = s.engine();
            (e.head(), e.recent(12), e.election(), e.block_delay_ms())
        })
        .await
        .ok_or_else(engine_failed)?;
    let (blobs, blob_bytes) = s.store.blob_stats().unwrap_or((0, 0));
    let peers = s.net.peers().await;
    let bootstrap = s.net.bootstrap().await.iter().map(bootstrap_json).collect();
    let round_trips_ms = s
        .round_trips
        .lock()
        .unwrap()
        .iter()
        .map(|(p, rtt)| (p.to_string(), rtt.as_secs_f64() * 1000.0))
        .collect();
    let listen = s
        .listen_addrs
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let recent_blocks = recent.into_iter().map(recent_block_json).collect();
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    Ok(Json(Status {
        peer_id: s.net.local_peer().to_string(),
        farmer_key: hex::encode(s.key.public()),
        listen,
        chain_id: hex::encode(s.chain_id),
        slot_ms: s.spec.slot_ms,
        proof_window_ms: s.spec.proof_window_ms,
        max_blob_bytes: s.spec.max_blob_bytes,
        height: head.height,
        head: hex::encode(head.hash),
        election_height: election.0,
        recent_blocks,
        syncing: s.syncing.load(relaxed),
        plots: s.farmer.plots(),
        skipped_plots: s.farmer.skipped().to_vec(),
        peers: peers.iter().map(|p| p.to_string()).collect(),
        bootstrap,
        vaults: s.vaults.lock().unwrap().count(),
        round_trips_ms,
        reorgs: s.metrics.reorgs.get(),
        deepest_reorg: s.deepest_reorg.load(relaxed),
        blocks_produced: s.metrics.proofs_won.get(),
        block_delay_ms,
        blobs,
        blob_bytes,
        scrub: scrub_json(&s),
    }))
}
