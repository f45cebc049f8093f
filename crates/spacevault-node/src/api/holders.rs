//! `GET /v1/holders`: an era's data holders.

use super::types::{HolderJson, HoldersAnswer};
use super::{bad, internal, ApiError, S};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct EraQuery {
    era: Option<u64>,
}

/// The holders of the era asked for (the chain's current one by
/// default), read from the store off the runtime's threads.
pub(super) async fn holders(
    State(s): S,
    query: Result<axum::extract::Query<EraQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<HoldersAnswer>, ApiError> {
    let query = query.map_err(|e| bad(format!("the query: {}", e.body_text())))?;
    let spec = s.chain.spec().clone();
    let current = spacevault_chain::holders::era_at(s.chain.height(), spec.era_blocks);
    let era = query.era.unwrap_or(current);
    let read = s
        .on_chain(move |c| crate::holders::era_holders(c.store(), &spec, era))
        .await?
        .map_err(internal)?;
    let Some(holders) = read else {
        if era == 0 {
            return Ok(Json(HoldersAnswer {
                era,
                bootstrap: true,
                first_block: String::new(),
                holders: vec![],
            }));
        }
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("the chain has not reached holder era {era} (it is in era {current})"),
        ));
    };
    Ok(Json(HoldersAnswer {
        era,
        bootstrap: false,
        first_block: hex::encode(holders.first_block),
        holders: holders
            .members
            .iter()
            .map(|m| HolderJson {
                key: hex::encode(m.tx.owner),
                place: hex::encode(m.place),
                height: m.height,
                since_era: m.since_era,
                version: m.tx.version,
                value_hex: hex::encode(&m.tx.value),
                signature: hex::encode(m.tx.signature),
            })
            .collect(),
    }))
}
