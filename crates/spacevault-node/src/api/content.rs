//! The API's data: blobs put and read by address, registers written and
//! read by owner and name.

use super::types::{PutAnswer, ReceiptJson, RegisterAnswer, RegisterPut, SetAnswer};
use super::ApiState;
use super::{bad, body_error, internal, ApiError, S};
use crate::data::PutError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use spacevault_chain::RegisterTx;

fn parse_address(text: &str) -> Result<[u8; 32], ApiError> {
    hex::decode(text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad(format!("'{text}' is not an address: 64 hex digits")))
}

pub(super) async fn put_blob(
    State(s): S,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| body_error(&s, e))?;
    match s.blobs.put(body.to_vec()).await {
        Ok(put) => Ok((
            StatusCode::CREATED,
            Json(PutAnswer {
                error: None,
                address: hex::encode(put.address),
                copies: put.receipts.len(),
                wanted: put.wanted,
                receipts: receipts_json(&put.receipts),
            }),
        )
            .into_response()),
        Err(e @ PutError::TooLarge { .. }) => {
            Err(ApiError(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()))
        }
        Err(PutError::TooFewCopies { got, wanted, put }) => Ok((
            StatusCode::SERVICE_UNAVAILABLE,
            Json(PutAnswer {
                error: Some(format!("only {got} of {wanted} vaults stored the blob")),
                address: hex::encode(put.address),
                copies: got,
                wanted,
                receipts: receipts_json(&put.receipts),
            }),
        )
            .into_response()),
    }
}

fn receipts_json(receipts: &[spacevault_chain::Receipt]) -> Vec<ReceiptJson> {
    receipts
        .iter()
        .map(|r| ReceiptJson {
            holder: hex::encode(r.holder),
            era: r.era,
            signature: hex::encode(r.signature),
        })
        .collect()
}

pub(super) async fn get_blob(
    State(s): S,
    Path(address): Path<String>,
) -> Result<Response, ApiError> {
    let address = parse_address(&address)?;
    match s.blobs.read(&address).await {
        Some(blob) => {
            Ok(([(header::CONTENT_TYPE, "application/octet-stream")], blob).into_response())
        }
        None => Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("no vault holds a blob at {}", hex::encode(address)),
        )),
    }
}

/// The transaction a register PUT asks for, from its path and body: the
/// one parser of this untrusted input (fuzzed as `api`). The signature is
/// checked later, with the rest of the transaction's validity.
#[doc(hidden)]
pub fn register_tx(owner: &str, name: &str, body: &[u8]) -> Result<RegisterTx, String> {
    let owner = parse_address(owner).map_err(|e| e.1)?;
    let put: RegisterPut = serde_json::from_slice(body)
        .map_err(|e| format!("the body must be JSON with version, value_hex and signature: {e}"))?;
    let value = hex::decode(&put.value_hex).map_err(|_| "value_hex is not hex".to_string())?;
    let signature: [u8; 64] = hex::decode(&put.signature)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "signature must be 128 hex digits".to_string())?;
    Ok(RegisterTx {
        owner,
        name: name.as_bytes().to_vec(),
        version: put.version,
        value,
        signature,
    })
}

/// Blocks above a register write's block before its PUT is answered.
pub const SETTLED_DEPTH: u64 = 2;

pub(super) async fn put_register(
    State(s): S,
    Path((owner, name)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SetAnswer>, ApiError> {
    require_json(&headers)?;
    let body = body.map_err(|e| body_error(&s, e))?;
    let tx = register_tx(&owner, &name, &body).map_err(bad)?;
    refuse_skipped_version(&s, &tx).await?;
    // The signature check and the engine's lock, off the runtime's
    // threads.
    let added = {
        let tx = tx.clone();
        s.on_chain(move |c| c.add_tx(tx)).await?
    };
    match added {
        Ok(_) => {}
        Err(r @ spacevault_chain::Rejection::BadTxVersion { .. }) => {
            return Err(ApiError(StatusCode::CONFLICT, r.to_string()))
        }
        Err(r @ spacevault_chain::Rejection::Unable { .. }) => {
            return Err(ApiError(StatusCode::SERVICE_UNAVAILABLE, r.to_string()))
        }
        Err(r) => return Err(bad(r.to_string())),
    }
    s.metrics.registers_written.inc();
    s.net.publish(spacevault_network::Topic::Txs, tx.encode());
    // Done when a canonical block holds it and is settled (two blocks
    // deep): a branch of one or two blocks that loses to another takes
    // its writes back to the pool, and a write answered earlier could be
    // missing from the chain for a while.
    let written = until_head_moves(&s, || {
        let entry = s
            .chain
            .store()
            .register(&tx.owner, &tx.name)
            .map_err(internal)?;
        let head = s.chain.height();
        let settled = |e: &spacevault_store::RegisterEntry| head >= e.height + SETTLED_DEPTH;
        Ok(entry.filter(|e| e.version >= tx.version && settled(e)))
    })
    .await?;
    let Some(e) = written else {
        return Err(ApiError(
            StatusCode::GATEWAY_TIMEOUT,
            "the transaction is pending but no block has included it yet".into(),
        ));
    };
    // Chain writes are durable every few seconds; a write answered as done
    // must survive this vault's crash before then, so its block is made
    // durable first (off the runtime's threads: an fsync).
    let store = s.chain.store().clone();
    s.flushes
        .run(move || store.flush())
        .await
        .ok_or_else(|| internal("the flush failed"))?
        .map_err(internal)?;
    Ok(Json(SetAnswer {
        owner: hex::encode(tx.owner),
        name: String::from_utf8_lossy(&tx.name).into_owned(),
        version: e.version,
        height: e.height,
    }))
}

/// A register is written as `application/json` (else 415).
fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    Err(ApiError(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("a register is written as application/json, not '{content_type}'"),
    ))
}

/// A write that skips a version no block holds and nothing here waits to
/// write could only time out: it is answered at once (409).
async fn refuse_skipped_version(s: &ApiState, tx: &RegisterTx) -> Result<(), ApiError> {
    let (owner, name, version) = (tx.owner, tx.name.clone(), tx.version);
    let before = version.saturating_sub(1);
    let (current, pending) = s
        .on_chain(move |c| c.register_state(&owner, &name, before))
        .await?
        .map_err(internal)?;
    if version > current + 1 && !pending {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "version {version} skips version {before}: the register is at version {current}, and no write of {before} is pending"
            ),
        ));
    }
    Ok(())
}

/// Asks `ready` now and after each change of the head, until it answers
/// or a request's wait on the chain is over: None then.
async fn until_head_moves<T>(
    s: &ApiState,
    mut ready: impl FnMut() -> Result<Option<T>, ApiError>,
) -> Result<Option<T>, ApiError> {
    let deadline = tokio::time::Instant::now() + s.times.chain_wait;
    let mut heads = s.chain.heads();
    loop {
        if let Some(answer) = ready()? {
            return Ok(Some(answer));
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let _ = tokio::time::timeout(left, heads.changed()).await;
    }
}

/// A client reads its own writes through any vault: `?min_version=V`
/// answers once this vault's chain holds version V or later of the
/// register (the vault that took the write may be on a branch this one
/// has not followed yet: the write reaches it on its own branch, later);
/// `?min_height=H` once its chain reached height H.
#[derive(Deserialize)]
pub(super) struct ReadQuery {
    min_height: Option<u64>,
    min_version: Option<u64>,
}

pub(super) async fn get_register(
    State(s): S,
    Path((owner, name)): Path<(String, String)>,
    query: Result<axum::extract::Query<ReadQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RegisterAnswer>, ApiError> {
    let owner = parse_address(&owner)?;
    let query = query.map_err(|e| bad(format!("the query: {}", e.body_text())))?;
    if let Some(min) = query.min_height {
        let reached = until_head_moves(&s, || Ok((s.chain.height() >= min).then_some(()))).await?;
        if reached.is_none() {
            let height = s.chain.height();
            return Err(ApiError(
                StatusCode::GATEWAY_TIMEOUT,
                format!("this vault's chain is at height {height}, below min_height {min}"),
            ));
        }
    }
    let read = || {
        let store = s.chain.store();
        store.register(&owner, name.as_bytes()).map_err(internal)
    };
    let entry = match query.min_version {
        Some(min) => {
            let held = until_head_moves(&s, || Ok(read()?.filter(|e| e.version >= min))).await?;
            match held {
                Some(e) => Some(e),
                None => {
                    let version = read()?.map_or(0, |e| e.version);
                    return Err(ApiError(
                        StatusCode::NOT_FOUND,
                        format!(
                            "this vault's chain holds version {version} of register {name}, not min_version {min}, after waiting {} ms",
                            s.times.chain_wait.as_millis()
                        ),
                    ));
                }
            }
        }
        None => read()?,
    };
    let entry = entry.ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            format!("no register {name} of {}", hex::encode(owner)),
        )
    })?;
    // Read back from disk, a register is checked again as a blob is: its
    // owner's signature must still cover what is served. Verified in full,
    // never answered from the cache of signatures seen: the check is of
    // what the disk gave back.
    let tx = RegisterTx {
        owner,
        name: name.as_bytes().to_vec(),
        version: entry.version,
        value: entry.value.clone(),
        signature: entry.signature,
    };
    let valid = spacevault_meter::with(&s.meter, || tx.signature_ok(&s.chain.chain_id()));
    if !valid {
        s.metrics.register_reverify_failures.inc();
        tracing::warn!(owner = %hex::encode(owner), %name, "a stored register does not carry its owner's signature");
        return Err(ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "this vault's copy of register {name} of {} is damaged (its owner's signature does not cover it): ask another vault",
                hex::encode(owner)
            ),
        ));
    }
    Ok(Json(RegisterAnswer {
        owner: hex::encode(owner),
        name,
        version: entry.version,
        value_hex: hex::encode(&entry.value),
        value: String::from_utf8(entry.value.clone()).ok(),
        signature: hex::encode(entry.signature),
        height: entry.height,
    }))
}
