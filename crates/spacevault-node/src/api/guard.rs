//! What the API checks of every request before it routes it: the length
//! of its target and of its headers (answered 414 and 431 in JSON, below
//! the HTTP parser's own, far larger, limits), and its Host, so that a web
//! page whose name an attacker points at 127.0.0.1 (DNS rebinding) cannot
//! drive a vault from a farmer's browser.

use super::ApiError;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The longest request target (path and query) the API reads.
pub const MAX_URI_BYTES: usize = 8 << 10;
/// The most header bytes (names and values) a request may carry.
pub const MAX_HEADER_BYTES: usize = 16 << 10;
/// Connections the API keeps open at once; past it, new ones are closed.
pub const MAX_CONNECTIONS: usize = 2048;

/// Whether `host` (a Host header's value) names this vault: an IP address
/// (which no other site's page can take the name of), `localhost`, or one
/// of the names `allowed` (`--api-host`).
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        // [v6]:port
        Some(rest) => match rest.split_once(']') {
            Some((v6, tail)) if tail.is_empty() || tail.starts_with(':') => v6,
            _ => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(n, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                n
            } else {
                host
            }
        }),
    };
    name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// The middleware: refuses what it must, passes the rest on.
pub async fn check(allowed: Arc<Vec<String>>, request: Request, next: Next) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return ApiError(
            StatusCode::URI_TOO_LONG,
            format!(
                "the request target is {target} bytes; this vault reads at most {MAX_URI_BYTES}"
            ),
        )
        .into_response();
    }
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return ApiError(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "the headers are {header_bytes} bytes; this vault reads at most {MAX_HEADER_BYTES}"
            ),
        )
        .into_response();
    }
    if let Some(host) = request.headers().get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !host_allowed(host, &allowed) {
            return ApiError(
                StatusCode::FORBIDDEN,
                format!(
                    "the Host '{host}' is not a name of this vault: it answers to IP addresses, localhost, and the names given with --api-host"
                ),
            )
            .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_by_address_loopback_name_or_configured_name_only() {
        let allowed = vec!["vault.example.org".to_string()];
        for ok in [
            "127.0.0.1:8733",
            "127.0.0.1",
            "10.1.2.3:80",
            "[::1]:8733",
            "[::1]",
            "localhost:8733",
            "LOCALHOST",
            "vault.example.org:8733",
            "Vault.Example.org",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for refused in [
            "evil.example.com",
            "evil.example.com:8733",
            "localhost.evil.example.com",
            "127.0.0.1.nip.io:8733",
            "[::1]x",
            "[::1",
            "",
        ] {
            assert!(!host_allowed(refused, &allowed), "{refused}");
        }
    }
}
