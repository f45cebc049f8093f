//! `spacevault client`: store and fetch data through a vault's API.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use spacevault_node::client::{Client, ClientError, FileOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// The chain spec the vault must follow: a vault on another chain is
    /// refused (without it, the client takes the vault's word).
    #[arg(long, value_name = "SPEC", global = true)]
    pub chain: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: ClientCommand,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Store a file of any size; prints its address. A file larger than
    /// one blob is stored as parts and a manifest that lists them.
    Put {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Parts stored at once.
        #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
        parallel: u16,
    },
    /// Fetch a file (or blob) by its address, every part checked against
    /// it.
    Get {
        #[arg(value_name = "ADDRESS")]
        address: String,
        /// Write it here instead of stdout (written aside and renamed
        /// once whole and checked).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// The blob at the address as stored, even when it is a manifest.
        #[arg(long)]
        raw: bool,
        /// Parts fetched at once.
        #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
        parallel: u16,
        /// Refuse a file that claims more bytes than this, before a byte
        /// is written (default with --out: the room left where it goes;
        /// to stdout: no limit).
        #[arg(long, value_name = "SIZE", value_parser = crate::size::parse_size)]
        max_size: Option<u64>,
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
    let mut client = Client::new(&args.api)?;
    if let Some(spec) = &args.chain {
        client = client.with_spec(&crate::cmd::chain::read_spec(spec)?);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(run_with(client, args.command, args.json, args.quiet))
}

async fn run_with(client: Client, command: ClientCommand, json: bool, quiet: bool) -> Result<()> {
    match command {
        ClientCommand::Put { file, parallel } => {
            put(&client, &file, options(parallel, quiet, "stored"), json).await?
        }
        ClientCommand::Get {
            address,
            out,
            raw,
            parallel,
            max_size,
        } => {
            let (mut file_options, bar) = options(parallel, quiet || out.is_none(), "fetched");
            file_options.max_bytes = match (max_size, &out) {
                (Some(max), _) => Some(max),
                (None, Some(path)) => Some(room_for(path)?),
                (None, None) => None,
            };
            get(&client, &address, out, raw, (file_options, bar)).await?
        }
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

/// The bytes free where `path` is written: a file claiming more would
/// fill the disk before it failed.
fn room_for(path: &Path) -> Result<u64> {
    let dir = dir_of(path);
    spacevault::plot::free_space(dir)
        .with_context(|| format!("finding the room left in {}", dir.display()))
}

/// The directory `path` is written in.
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// How a file goes through, with a progress bar on stderr unless `quiet`.
fn options(parallel: u16, quiet: bool, verb: &str) -> (FileOptions, crate::progress::Bar) {
    let bar = crate::progress::Bar::bytes(verb.to_string(), quiet);
    let shown = bar.clone();
    let options = FileOptions {
        parallel: usize::from(parallel),
        progress: Some(Arc::new(move |done, total| shown.set_bytes(done, total))),
        max_bytes: None,
    };
    (options, bar)
}

async fn put(
    client: &Client,
    file: &Path,
    (options, bar): (FileOptions, crate::progress::Bar),
    json: bool,
) -> Result<()> {
    crate::input::check_regular(file, "the file")?;
    let put = client.put_file(file, &options).await;
    bar.finish();
    let put = put?;
    let address = hex::encode(put.address);
    if json {
        crate::cmd::print_json(&serde_json::json!({
            "address": address,
            "bytes": put.bytes,
            "blake3": hex::encode(put.hash),
            "parts": put.parts,
            "manifests": put.manifests,
            "copies": put.copies,
            "wanted": put.wanted,
        }))?;
    } else {
        outln!("{address}");
        match put.manifests {
            0 => errln!("stored on {} of {} vaults", put.copies, put.wanted),
            m => errln!(
                "stored {} in {} parts and {m} manifest{}, each on at least {} of {} vaults",
                spacevault::units::human_bytes(put.bytes),
                put.parts,
                if m == 1 { "" } else { "s" },
                put.copies,
                put.wanted
            ),
        }
    }
    if put.copies < put.wanted {
        errln!(
            "warning: fewer vaults than the chain wants took some of it: PUT it again to add copies"
        );
        return Err(crate::cmd::ExitWith(3).into());
    }
    Ok(())
}

async fn get(
    client: &Client,
    address: &str,
    out: Option<PathBuf>,
    raw: bool,
    (options, bar): (FileOptions, crate::progress::Bar),
) -> Result<()> {
    let address = spacevault_node::client::parse_address(address)?;
    match out {
        Some(path) => {
            // Written aside and renamed once whole: a GET that fails leaves
            // whatever was at `path` as it was.
            let dir = dir_of(&path);
            // Ctrl-C, `kill`, a closed terminal while a file comes: the
            // partial file is removed (it is dropped), and the command
            // ends as the signal would have ended it. Listening starts
            // before the file is made, so no signal finds it unguarded.
            use tokio::signal::unix::{signal, SignalKind};
            let listen = |kind: SignalKind| signal(kind).context("listening for signals");
            let (mut int, mut term, mut hup, mut quit) = (
                listen(SignalKind::interrupt())?,
                listen(SignalKind::terminate())?,
                listen(SignalKind::hangup())?,
                listen(SignalKind::quit())?,
            );
            // A short prefix: the name with it must stay a legal name.
            let name: String = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .chars()
                .take(100)
                .collect();
            let mut aside = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".partial")
                .tempfile_in(dir)
                .with_context(|| format!("creating a file in {}", dir.display()))?;
            let stopped = |signal: libc::c_int| -> Result<()> {
                Err(crate::signals::StoppedBy(signal).into())
            };
            let got = tokio::select! {
                got = fetch(client, &address, raw, aside.as_file_mut(), &options) => got,
                _ = int.recv() => { bar.finish(); return stopped(libc::SIGINT) }
                _ = term.recv() => { bar.finish(); return stopped(libc::SIGTERM) }
                _ = hup.recv() => { bar.finish(); return stopped(libc::SIGHUP) }
                _ = quit.recv() => { bar.finish(); return stopped(libc::SIGQUIT) }
            };
            bar.finish();
            got?;
            // The file's mode is the one it replaces, or the usual one
            // for a new file, not the private one a temporary file gets.
            let mode = std::fs::metadata(&path)
                .map(|m| m.permissions())
                .unwrap_or_else(|_| std::os::unix::fs::PermissionsExt::from_mode(0o644));
            aside
                .as_file()
                .set_permissions(mode)
                .and_then(|()| aside.as_file().sync_all())
                .with_context(|| format!("writing {}", path.display()))?;
            aside
                .persist(&path)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let mut stdout = std::io::stdout();
            let got = fetch(client, &address, raw, &mut stdout, &options).await;
            bar.finish();
            match got {
                Err(ClientError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Err(crate::out::StdoutClosed.into())
                }
                other => other?,
            }
        }
    }
    Ok(())
}

async fn fetch(
    client: &Client,
    address: &[u8; 32],
    raw: bool,
    out: &mut (dyn std::io::Write + Send),
    options: &FileOptions,
) -> Result<(), ClientError> {
    if raw {
        let blob = client.get_blob(address).await?;
        return out.write_all(&blob).map_err(ClientError::Write);
    }
    client.get_file(address, out, options).await.map(|_| ())
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
