//! `spacevault client`: store and fetch data through a vault's API.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use spacevault_node::client::Client;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ClientArgs {
    /// The vault's API.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:8733",
        global = true
    )]
    pub api: String,
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: ClientCommand,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Store a file (at most the chain's blob size) as an immutable blob;
    /// prints its address.
    Put {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Fetch a blob by its address.
    Get {
        #[arg(value_name = "ADDRESS")]
        address: String,
        /// Write it here instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Set one of this client's registers (signed with the client's key)
    /// and wait until a block holds it.
    Set {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "VALUE")]
        value: String,
    },
    /// The chain's head as the vault sees it.
    Head,
    /// Read a register: OWNER/NAME, OWNER being 64 hex digits (or `me`).
    Read {
        #[arg(value_name = "OWNER/NAME")]
        register: String,
    },
}

pub fn run(args: ClientArgs) -> Result<()> {
    let client = Client::new(&args.api)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(run_with(client, args.command, args.json))
}

async fn run_with(client: Client, command: ClientCommand, json: bool) -> Result<()> {
    match command {
        ClientCommand::Put { file } => put(&client, &file, json).await?,
        ClientCommand::Get { address, out } => get(&client, &address, out).await?,
        ClientCommand::Set { name, value } => set(&client, &name, &value, json).await?,
        ClientCommand::Head => {
            let head = client.head().await?;
            if json {
                crate::cmd::print_json(&head)?;
            } else {
                outln!("{} {}", head.height, head.hash);
            }
        }
        ClientCommand::Read { register } => read(&client, &register, json).await?,
    }
    Ok(())
}

async fn put(client: &Client, file: &std::path::Path, json: bool) -> Result<()> {
    // The largest blob any chain allows; the vault says its own.
    let blob = crate::input::read_regular(file, "the file", 64 << 20)?;
    // A blob over the chain's limit is refused here, with that
    // reason: the vault's 413 comes before it has read the body,
    // and a client still sending sees only a closed connection.
    if let Ok(status) = client.status().await {
        let max = u64::from(status.max_blob_bytes);
        if blob.len() as u64 > max {
            bail!(
                "{} is {} bytes: this chain's blobs are at most {max} bytes ({})",
                file.display(),
                blob.len(),
                spacevault::units::human_bytes(max)
            );
        }
    }
    let (put, partial) = match client.put(blob).await {
        Ok(put) => (put, false),
        Err(spacevault_node::client::ClientError::TooFewCopies(put)) => (put, true),
        Err(e) => return Err(e.into()),
    };
    if json {
        crate::cmd::print_json(&serde_json::json!({
            "address": put.address,
            "copies": put.copies,
            "wanted": put.wanted,
            "receipts": put.receipts,
        }))?;
    } else {
        outln!("{}", put.address);
        errln!("stored on {} of {} vaults", put.copies, put.wanted);
    }
    if partial {
        errln!(
            "warning: fewer vaults than the chain wants took the blob: PUT it again to add copies"
        );
        return Err(crate::cmd::ExitWith(3).into());
    }
    Ok(())
}

async fn get(client: &Client, address: &str, out: Option<std::path::PathBuf>) -> Result<()> {
    let blob = client.get(address).await?;
    let got = spacevault_chain::blob_address(&blob);
    if hex::encode(got) != address.to_lowercase() {
        bail!("the vault sent bytes that do not hash to {address}");
    }
    match out {
        Some(path) => {
            std::fs::write(&path, &blob).with_context(|| format!("writing {}", path.display()))?
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(&blob).and_then(|()| stdout.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Err(crate::out::StdoutClosed.into())
                }
                other => other.context("writing to stdout")?,
            }
        }
    }
    Ok(())
}

async fn set(client: &Client, name: &str, value: &str, json: bool) -> Result<()> {
    let key = crate::keys::client_keypair()?;
    let chain = client.chain_id().await?;
    let set = client.set(&key, &chain, name, value.as_bytes()).await?;
    if json {
        crate::cmd::print_json(&serde_json::json!({
            "owner": hex::encode(key.public()),
            "name": name,
            "version": set.version,
            "height": set.height,
        }))?;
    } else {
        outln!(
            "{}/{} version {} at height {}",
            hex::encode(key.public()),
            name,
            set.version,
            set.height
        );
    }
    Ok(())
}

async fn read(client: &Client, register: &str, json: bool) -> Result<()> {
    let Some((owner, name)) = register.split_once('/') else {
        bail!("'{register}' is not OWNER/NAME");
    };
    let owner = if owner == "me" {
        crate::keys::client_keypair()?.public()
    } else {
        crate::keys::parse_hex32("the register's owner", owner)?
    };
    let r = client.read(&owner, name).await?;
    if json {
        crate::cmd::print_json(&serde_json::json!({
            "owner": r.owner,
            "name": r.name,
            "version": r.version,
            "value": r.value,
            "value_hex": r.value_hex,
            "signature": r.signature,
            "height": r.height,
        }))?;
    } else {
        match &r.value {
            Some(text) => outln!("{text}"),
            None => outln!("{}", r.value_hex),
        }
        errln!("version {} at height {}", r.version, r.height);
    }
    Ok(())
}
