//! The vault's HTTP API (`/v1/...`), its health and metrics, and its page.
//! Bad input gets a 4xx with `{"error": "..."}`; bodies are limited to a
//! blob's size, every request to a minute, the requests worked on at once
//! to the config's `api_max_requests` (by default
//! [`crate::config::MAX_CONCURRENT_REQUESTS`]), and what a request may
//! name and carry as [`guard`] says.

mod content;
pub mod guard;
mod holders;
pub mod types;

use crate::blocking::Blocking;
use crate::chain::Chain;
pub use crate::config::ApiTimes;
use crate::data::Blobs;
use crate::metrics::Metrics;
use crate::shared::Shared;
use crate::status::Report;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use content::{get_blob, get_register, put_blob, put_register};
pub use content::{register_tx, SETTLED_DEPTH};
use serde::Deserialize;
use spacevault_meter::Meter;
use std::sync::Arc;
use std::time::Duration;
pub use types::{BlockJson, ProofJson, ReceiptJson, RegisterPut, TxJson};
use types::{CryptoAnswer, ErrorAnswer, Head, Health, Status};

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

/// What the API reaches of the vault: a handle for each part it serves,
/// and its own limits.
#[derive(Clone)]
pub struct ApiState {
    /// Heads, blocks, and registers' writes.
    chain: Arc<Chain>,
    /// Blobs put and read.
    blobs: Blobs,
    /// Status, health, metrics and crypto counts.
    report: Report,
    /// The crypto trace, and the check of registers read back.
    meter: Arc<Meter>,
    metrics: Arc<Metrics>,
    /// To gossip the register writes it takes.
    net: spacevault_network::Handle,
    /// Blocking threads requests may hold.
    requests: Blocking,
    /// Blocking threads the flushes of register writes hold: apart from
    /// the requests', so that a write settled in a block is never kept
    /// from its answer behind requests that wait for the engine's lock.
    flushes: Blocking,
    times: ApiTimes,
    max_requests: usize,
}

/// Blocking threads a vault's client requests hold at most at once.
pub const MAX_REQUEST_WORKERS: usize = 4;

/// Blocking threads flushes of register writes hold at most at once
/// (each waits for the store's write lock and an fsync: more would only
/// queue there).
pub const MAX_FLUSH_WORKERS: usize = 2;

impl ApiState {
    /// The API's handles on `shared`, with the config's request limits.
    pub(crate) fn of(shared: &Arc<Shared>, times: ApiTimes, max_requests: usize) -> ApiState {
        ApiState {
            chain: shared.chain.clone(),
            blobs: Blobs::new(shared.clone()),
            report: Report::new(shared.clone()),
            meter: shared.meter.clone(),
            metrics: shared.metrics.clone(),
            net: shared.net.clone(),
            requests: Blocking::new(
                MAX_REQUEST_WORKERS,
                shared.tasks.clone(),
                shared.meter.clone(),
            ),
            flushes: Blocking::new(
                MAX_FLUSH_WORKERS,
                shared.tasks.clone(),
                shared.meter.clone(),
            ),
            times,
            max_requests: max_requests.max(1),
        }
    }

    /// Runs `f` on the chain on one of the requests' blocking threads:
    /// what takes the engine's lock never waits on a runtime thread.
    async fn on_chain<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Chain) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        let chain = self.chain.clone();
        self.requests
            .run(move || f(&chain))
            .await
            .ok_or_else(engine_failed)
    }
}

/// A body that could not be read: too large (413), or quiet for longer
/// than the vault allows (408), or broken off.
fn body_error(s: &ApiState, e: BytesRejection) -> ApiError {
    use std::error::Error;
    let mut source: Option<&(dyn Error + 'static)> = Some(&e);
    while let Some(err) = source {
        if err.is::<tower_http::timeout::TimeoutError>() {
            return ApiError(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "no byte of the body came for {} ms: send it without pauses that long",
                    s.times.body_progress.as_millis()
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

type S = State<ApiState>;

/// The routes; `hosts`: the names besides IP addresses and `localhost`
/// that requests may give as their Host.
pub fn router(state: ApiState, hosts: Vec<String>) -> Router {
    let body_limit = state.chain.spec().max_blob_bytes as usize + (64 << 10);
    let request_timeout = state.times.request;
    let max_requests = state.max_requests;
    let hosts = Arc::new(hosts);
    Router::new()
        .route("/", get(page))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/status", get(status))
        .route("/v1/crypto", get(crypto))
        .route("/v1/crypto/trace", get(crypto_trace))
        .route("/v1/head", get(head))
        .route("/v1/spec", get(spec))
        .route("/v1/blocks/{height}", get(block))
        .route("/v1/holders", get(holders::holders))
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
        .with_state(state)
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
    state: ApiState,
    hosts: Vec<String>,
    stop: tokio_util::sync::CancellationToken,
) {
    let headers = state.times.headers;
    let body_progress = state.times.body_progress;
    let vault_tasks = state.requests.tasks().clone();
    // A body that goes quiet fails its read with a timeout, which the
    // handlers answer 408 ([`body_error`]).
    let app = tower::ServiceBuilder::new()
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            body_progress,
        ))
        .service(router(state, hosts));
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
        let tasks = vault_tasks.clone();
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
    Json(s.report.health())
}

async fn metrics(State(s): S) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.report.metrics_text(),
    )
}

/// The vault's cryptographic operations so far, by kind and purpose.
async fn crypto(State(s): S) -> Json<CryptoAnswer> {
    Json(s.report.crypto())
}

/// The window of `GET /v1/crypto/trace`, in Unix nanoseconds.
#[derive(Deserialize)]
struct TraceQuery {
    from_ns: u64,
    to_ns: u64,
}

/// The crypto operations this vault performed since the last call that
/// started in the window, as an SVTRACE3 trace (docs/PROFILING.md): what
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
    let h = s.chain.head();
    Ok(Json(Head {
        height: h.height,
        hash: hex::encode(h.hash),
    }))
}

async fn block(State(s): S, Path(height): Path<String>) -> Result<Json<BlockJson>, ApiError> {
    let height: u64 = height
        .parse()
        .map_err(|_| bad(format!("the height '{height}' is not a whole number")))?;
    let found = s.on_chain(move |c| c.block_at(height)).await?;
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
        slot: h.stamp.slot,
        timestamp_ms: s.chain.spec().slot_due_ms(h.stamp.slot),
        slot_output: hex::encode(h.stamp.output),
        producer: hex::encode(h.proof.farmer_key()),
        proof: ProofJson::of(&h.proof),
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
        received_unix_ms: s.chain.arrival(&hash),
    }))
}

/// The chain spec the vault follows: a program that drives vaults it did
/// not start reads the chain's limits here, and checks the spec against
/// the chain id each vault reports.
async fn spec(State(s): S) -> Json<spacevault_chain::ChainSpec> {
    Json(s.chain.spec().clone())
}

async fn status(State(s): S) -> Result<Json<Status>, ApiError> {
    let chain = s.on_chain(|c| c.view(12)).await?;
    Ok(Json(s.report.status(chain).await))
}
