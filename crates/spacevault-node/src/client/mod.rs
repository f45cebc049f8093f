//! A client of a vault's HTTP API: what `spacevault client` and the tests
//! use. Registers are signed here, with the client's own key.
//!
//! The vault asked is not trusted with what it returns: a blob is hashed
//! again against its address, a register's signature is checked against
//! its owner, a PUT's receipts against their holders' keys, and the chain
//! id against the chain spec the client was given, when it was given one.

mod files;
mod holders;

pub use files::{FileAnswer, FileGot, FileOptions};

pub use crate::api::types::{
    CryptoAnswer, Head, Health, HolderJson, HoldersAnswer, PutAnswer, RegisterAnswer, RegisterPut,
    SetAnswer, Status,
};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::{connect::HttpConnector, Client as Hyper};
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use spacevault_chain::{blob_address, Keypair, Receipt, RegisterTx};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

/// Why a call failed: the vault's own reason where it gave one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("{url} is not an HTTP URL of a vault's API")]
    BadUrl { url: String },
    #[error("cannot reach the vault at {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("the vault answered {status}: {reason}")]
    Refused { status: u16, reason: String },
    #[error("the vault's answer does not parse: {0}")]
    BadAnswer(String),
    #[error("'{0}' is not a blob address (64 hex digits)")]
    BadAddress(String),
    /// The vault sent bytes that are not the blob asked for.
    #[error("the vault sent bytes that do not hash to {address}")]
    WrongBytes { address: String },
    /// The vault follows another chain than the spec the client was given.
    #[error("the vault follows the chain {vault}, not {expected} of the chain spec given")]
    WrongChain { vault: String, expected: String },
    /// A register the vault sent that its owner did not sign.
    #[error("the vault sent {owner}/{name} version {version} without its owner's signature")]
    ForgedRegister {
        owner: String,
        name: String,
        version: u64,
    },
    /// A file's manifest or parts that do not fit together.
    #[error("the file at {address}: {why}")]
    BadFile { address: String, why: String },
    /// A file whose manifest claims more bytes than the caller allows.
    #[error("the file at {address} claims {bytes} bytes, more than the {max} allowed")]
    FileTooLarge {
        address: String,
        bytes: u64,
        max: u64,
    },
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("writing the file: {0}")]
    Write(std::io::Error),
    /// A PUT that fewer vaults than wanted took: the blob has an address,
    /// and fewer copies than the chain asks for.
    #[error("only {} of {} vaults stored the blob {}", .0.copies, .0.wanted, .0.address)]
    TooFewCopies(PutAnswer),
}

/// The largest answer the client takes: a blob of the largest size any
/// chain allows, with room for a JSON answer's escaping.
pub const MAX_ANSWER_BYTES: usize =
    (spacevault_chain::manifest::MAX_PART_BYTES as usize) + (1 << 20);

/// How long the client waits for a whole answer: past the vault's own
/// bound on a request (a minute by default).
pub const ANSWER_TIME: std::time::Duration = std::time::Duration::from_secs(120);

/// How long the client keeps an idle connection for reuse: below the
/// vault's default header time (`ApiTimes::headers`, 10 s).
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(5);

/// A vault's API at one base URL.
#[derive(Clone)]
pub struct Client {
    base: String,
    http: Hyper<HttpConnector, Full<Bytes>>,
    /// The chain id of the spec the client was given, if it was.
    expected_chain: Option<[u8; 32]>,
    /// That spec's blob size: a file's part size, not the vault's word.
    blob_bytes: Option<u32>,
    /// The spec the client was given, if it was: holders' registrations
    /// are checked against it.
    spec: Option<Arc<spacevault_chain::ChainSpec>>,
    /// The vault's chain id once asked (and checked): receipts are
    /// checked against it on every PUT.
    chain: Arc<OnceLock<[u8; 32]>>,
    /// The holders of the eras receipts named.
    eras: Arc<holders::Eras>,
}

impl Client {
    /// The vault's API URL, without a trailing `/`.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// `url` like `http://127.0.0.1:8733`.
    pub fn new(url: &str) -> Result<Client, ClientError> {
        let base = url.trim_end_matches('/').to_string();
        if !base.starts_with("http://") || base.parse::<hyper::Uri>().is_err() {
            return Err(ClientError::BadUrl { url: url.into() });
        }
        // A vault closes a connection that sends no request for its
        // header time (10 s by default): a pooled connection idle that
        // long may be closing just as it is reused. Dropped from the pool
        // sooner, it never is.
        let http = Hyper::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .build_http();
        Ok(Client {
            base,
            http,
            expected_chain: None,
            blob_bytes: None,
            spec: None,
            chain: Arc::default(),
            eras: Arc::default(),
        })
    }

    /// The same client, refusing a vault that does not follow the chain
    /// whose id is `chain_id` (the id of the spec the user gave).
    pub fn expecting_chain(mut self, chain_id: [u8; 32]) -> Client {
        self.expected_chain = Some(chain_id);
        self.chain = Arc::default();
        self.eras = Arc::default();
        self
    }

    /// [`expecting_chain`](Self::expecting_chain) of `spec`'s id, its
    /// blob size for the parts of files, and its rules for holders'
    /// registrations.
    pub fn with_spec(self, spec: &spacevault_chain::ChainSpec) -> Client {
        let mut client = self.expecting_chain(spec.chain_id());
        client.blob_bytes = Some(spec.max_blob_bytes);
        client.spec = Some(Arc::new(spec.clone()));
        client
    }

    async fn call(
        &self,
        method: hyper::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let content_type = content_type_of(path);
        self.call_as(method, path, body, content_type).await
    }

    async fn call_as(
        &self,
        method: hyper::Method,
        path: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let url = format!("{}{path}", self.base);
        let body = Bytes::from(body);
        let build = || {
            let mut request = hyper::Request::builder().method(method.clone()).uri(&url);
            if method == hyper::Method::PUT {
                request = request.header(hyper::header::CONTENT_TYPE, content_type);
            }
            request
                .body(Full::new(body.clone()))
                .map_err(|_| ClientError::BadUrl { url: url.clone() })
        };
        let unreachable = |why: String| ClientError::Unreachable {
            url: self.base.clone(),
            why,
        };
        let send = async {
            match self.http.request(build()?).await {
                // A request that reads changes nothing: sent again once if the
                // connection failed under it (a pooled one the vault closed).
                Err(e) if method == hyper::Method::GET && !e.is_connect() => {
                    tracing::debug!(%e, %url, "sending the request again");
                    Ok(self.http.request(build()?).await)
                }
                sent => Ok(sent),
            }
        };
        let response = tokio::time::timeout(ANSWER_TIME, send)
            .await
            .map_err(|_| unreachable(format!("no answer in {} s", ANSWER_TIME.as_secs())))??
            .map_err(|e| unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        // A vault that sends more than any answer holds, or never ends its
        // answer, costs the client no more than the bound.
        let collect = Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect();
        let bytes = tokio::time::timeout(ANSWER_TIME, collect)
            .await
            .map_err(|_| unreachable(format!("no whole answer in {} s", ANSWER_TIME.as_secs())))?
            .map_err(|e| unreachable(e.to_string()))?
            .to_bytes()
            .to_vec();
        Ok((status, bytes))
    }

    /// The call's body when it succeeded, else the vault's reason.
    async fn ok(
        &self,
        method: hyper::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ClientError> {
        let (status, bytes) = self.call(method, path, body).await?;
        if (200..300).contains(&status) {
            return Ok(bytes);
        }
        Err(refusal(status, &bytes))
    }

    async fn json<T: for<'de> Deserialize<'de>>(
        &self,
        method: hyper::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<T, ClientError> {
        let bytes = self.ok(method, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::BadAnswer(e.to_string()))
    }

    pub async fn head(&self) -> Result<Head, ClientError> {
        self.json(hyper::Method::GET, "/v1/head", vec![]).await
    }

    pub async fn health(&self) -> Result<Health, ClientError> {
        self.json(hyper::Method::GET, "/health", vec![]).await
    }

    pub async fn status(&self) -> Result<Status, ClientError> {
        self.json(hyper::Method::GET, "/v1/status", vec![]).await
    }

    /// The chain spec the vault follows, as it says: its id is what a
    /// caller compares with the chain it expects.
    pub async fn spec(&self) -> Result<spacevault_chain::ChainSpec, ClientError> {
        self.json(hyper::Method::GET, "/v1/spec", vec![]).await
    }

    /// The vault's cryptographic operations so far.
    pub async fn crypto(&self) -> Result<CryptoAnswer, ClientError> {
        self.json(hyper::Method::GET, "/v1/crypto", vec![]).await
    }

    /// The canonical block at `height`.
    pub async fn block(&self, height: u64) -> Result<crate::api::BlockJson, ClientError> {
        let path = format!("/v1/blocks/{height}");
        self.json(hyper::Method::GET, &path, vec![]).await
    }

    /// The crypto operations the vault performed since the last call that
    /// started within `window` (Unix ns), for a vault that traces.
    pub async fn crypto_trace(
        &self,
        window: (u64, u64),
    ) -> Result<spacevault_meter::trace::Trace, ClientError> {
        let path = format!("/v1/crypto/trace?from_ns={}&to_ns={}", window.0, window.1);
        let bytes = self.ok(hyper::Method::GET, &path, vec![]).await?;
        spacevault_meter::trace::Trace::decode(&bytes).map_err(ClientError::BadAnswer)
    }

    pub async fn get_path(&self, path: &str) -> Result<(u16, Vec<u8>), ClientError> {
        self.call(hyper::Method::GET, path, vec![]).await
    }

    /// A PUT of `body` to `path`, answered as it is: its status and body.
    pub async fn put_path(&self, path: &str, body: Vec<u8>) -> Result<(u16, Vec<u8>), ClientError> {
        self.call(hyper::Method::PUT, path, body).await
    }

    /// [`put_path`](Self::put_path) with the content type given.
    pub async fn put_path_as(
        &self,
        path: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        self.call_as(hyper::Method::PUT, path, body, content_type)
            .await
    }

    /// Stores a blob; its address and the holders' receipts. Only
    /// receipts signed by their holders for this blob on this chain, one a
    /// holder, by holders of the era they name near the blob's address
    /// ([`holders`]), count as copies; a blob fewer vaults took than wanted is
    /// [`ClientError::TooFewCopies`], with its address and the receipts
    /// it got.
    pub async fn put(&self, blob: Vec<u8>) -> Result<PutAnswer, ClientError> {
        let chain = self.chain_id().await?;
        let address = blob_address(&blob);
        let (status, bytes) = self.call(hyper::Method::PUT, "/v1/blobs", blob).await?;
        match (status, serde_json::from_slice::<PutAnswer>(&bytes)) {
            (200..=299 | 503, Ok(answer)) => {
                let mut answer = checked_put(answer, &address, &chain)?;
                self.keep_holders_receipts(&mut answer, &address).await?;
                // A vault that wants no copy at all has kept nothing.
                if answer.copies < answer.wanted.max(1) {
                    return Err(ClientError::TooFewCopies(answer));
                }
                Ok(answer)
            }
            (200..=299, Err(e)) => Err(ClientError::BadAnswer(e.to_string())),
            _ => Err(refusal(status, &bytes)),
        }
    }

    /// The blob at `address` (64 hex digits), hashed again here: bytes
    /// that are not the blob are [`ClientError::WrongBytes`].
    pub async fn get(&self, address: &str) -> Result<Vec<u8>, ClientError> {
        let wanted = parse_address(address)?;
        self.get_blob(&wanted).await
    }

    /// [`get`](Self::get) of an address already parsed.
    pub async fn get_blob(&self, address: &[u8; 32]) -> Result<Vec<u8>, ClientError> {
        let hex = hex::encode(address);
        let blob = self
            .ok(hyper::Method::GET, &format!("/v1/blobs/{hex}"), vec![])
            .await?;
        if blob_address(&blob) != *address {
            return Err(ClientError::WrongBytes { address: hex });
        }
        Ok(blob)
    }

    /// `owner`'s register `name`, its signature checked against `owner`.
    pub async fn read(&self, owner: &[u8; 32], name: &str) -> Result<RegisterAnswer, ClientError> {
        let path = register_path(owner, name);
        let answer = self.json(hyper::Method::GET, &path, vec![]).await?;
        self.checked_register(owner, name, answer).await
    }

    /// A register as the vault has it once its chain holds `version` or
    /// later (a version this client wrote through another vault): the
    /// client's own writes, read through any vault.
    pub async fn read_version(
        &self,
        owner: &[u8; 32],
        name: &str,
        version: u64,
    ) -> Result<RegisterAnswer, ClientError> {
        let path = format!("{}?min_version={version}", register_path(owner, name));
        let answer = self.json(hyper::Method::GET, &path, vec![]).await?;
        self.checked_register(owner, name, answer).await
    }

    /// `answer` if `owner` signed its version and value of `name` on this
    /// chain; its owner, name and text are set from what was asked and
    /// signed, never taken from the vault.
    async fn checked_register(
        &self,
        owner: &[u8; 32],
        name: &str,
        mut answer: RegisterAnswer,
    ) -> Result<RegisterAnswer, ClientError> {
        let chain = self.chain_id().await?;
        let value = hex::decode(&answer.value_hex)
            .map_err(|_| ClientError::BadAnswer("the register's value is not hex".into()))?;
        let signature: [u8; 64] = hex::decode(&answer.signature)
            .ok()
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| {
                ClientError::BadAnswer("the register's signature is not 64 bytes of hex".into())
            })?;
        let tx = RegisterTx {
            owner: *owner,
            name: name.as_bytes().to_vec(),
            version: answer.version,
            value,
            signature,
        };
        if !tx.signature_ok(&chain) {
            return Err(ClientError::ForgedRegister {
                owner: hex::encode(owner),
                name: name.to_string(),
                version: answer.version,
            });
        }
        answer.owner = hex::encode(owner);
        answer.name = name.to_string();
        answer.value = String::from_utf8(tx.value).ok();
        Ok(answer)
    }

    /// Sets `owner`'s register to `value`: signs the next version and
    /// waits until a block holds it.
    pub async fn set(
        &self,
        owner: &Keypair,
        chain_id: &[u8; 32],
        name: &str,
        value: &[u8],
    ) -> Result<SetAnswer, ClientError> {
        let current = match self.read(&owner.public(), name).await {
            Ok(r) => r.version,
            Err(ClientError::Refused { status: 404, .. }) => 0,
            Err(e) => return Err(e),
        };
        let tx = RegisterTx::signed(owner, chain_id, name.as_bytes(), current + 1, value);
        let body = RegisterPut {
            version: tx.version,
            value_hex: hex::encode(&tx.value),
            signature: hex::encode(tx.signature),
        };
        self.json(
            hyper::Method::PUT,
            &register_path(&owner.public(), name),
            serde_json::to_vec(&body).expect("serializes"),
        )
        .await
    }

    /// The chain id the vault follows (for signing registers and checking
    /// receipts), asked once; a vault on another chain than the spec given
    /// is [`ClientError::WrongChain`].
    pub async fn chain_id(&self) -> Result<[u8; 32], ClientError> {
        if let Some(id) = self.chain.get() {
            return Ok(*id);
        }
        let s = self.status().await?;
        let id: [u8; 32] = hex::decode(&s.chain_id)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| ClientError::BadAnswer("the chain id is not 32 bytes of hex".into()))?;
        if let Some(expected) = self.expected_chain {
            if id != expected {
                return Err(ClientError::WrongChain {
                    vault: hex::encode(id),
                    expected: hex::encode(expected),
                });
            }
        }
        Ok(*self.chain.get_or_init(|| id))
    }
}

/// A blob address from 64 hex digits.
pub fn parse_address(text: &str) -> Result<[u8; 32], ClientError> {
    hex::decode(text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| ClientError::BadAddress(text.to_string()))
}

/// A PUT's answer as far as the client can check it: the address must be
/// the blob's, and only receipts for it, signed on `chain` by distinct
/// holders, count as copies (a vault could say any number, or hand in
/// one holder's receipt twice).
fn checked_put(
    mut answer: PutAnswer,
    address: &[u8; 32],
    chain: &[u8; 32],
) -> Result<PutAnswer, ClientError> {
    if answer.address != hex::encode(address) {
        return Err(ClientError::BadAnswer(format!(
            "the vault stored the blob as {}, but it hashes to {}",
            answer.address,
            hex::encode(address)
        )));
    }
    let mut holders = BTreeSet::new();
    answer.receipts.retain(|r| {
        let parsed = (|| {
            Some(Receipt {
                address: *address,
                holder: hex::decode(&r.holder).ok()?.try_into().ok()?,
                era: r.era,
                signature: hex::decode(&r.signature).ok()?.try_into().ok()?,
            })
        })();
        match parsed {
            Some(receipt) => receipt.verify(chain) && holders.insert(receipt.holder),
            None => false,
        }
    });
    answer.copies = answer.receipts.len();
    Ok(answer)
}

/// An error answer: its status and the reason its JSON gives.
fn refusal(status: u16, bytes: &[u8]) -> ClientError {
    let reason = serde_json::from_slice::<crate::api::types::ErrorAnswer>(bytes)
        .map(|e| e.error)
        .unwrap_or_else(|_| String::from_utf8_lossy(bytes).into_owned());
    ClientError::Refused { status, reason }
}

/// What the API takes at `path`: JSON for a register, bytes for a blob.
fn content_type_of(path: &str) -> &'static str {
    if path.starts_with("/v1/registers/") {
        "application/json"
    } else {
        "application/octet-stream"
    }
}

/// A register's path in the API.
fn register_path(owner: &[u8; 32], name: &str) -> String {
    format!(
        "/v1/registers/{}/{}",
        hex::encode(owner),
        encode_segment(name)
    )
}

/// A register name as one URL path segment.
fn encode_segment(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
