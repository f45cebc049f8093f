//! Farmer keys, plot seeds and challenges given as hex, and the farmer key
//! kept in the user's config directory.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// 32 bytes from 64 hex digits.
pub fn parse_hex32(what: &str, text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let bytes = hex::decode(t)
        .map_err(|_| anyhow::anyhow!("{what} must be 64 hex digits, got '{text}'"))?;
    match <[u8; 32]>::try_from(bytes.as_slice()) {
        Ok(b) => Ok(b),
        Err(_) => bail!(
            "{what} must be 32 bytes (64 hex digits), got {} hex digits",
            t.len()
        ),
    }
}

pub fn random32() -> Result<[u8; 32]> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(b)
}

/// `$SPACEVAULT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/spacevault`, else
/// `~/.config/spacevault`. An empty variable counts as unset.
pub fn config_dir() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("SPACEVAULT_CONFIG_DIR") {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(d).join("spacevault"));
    }
    match var("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("spacevault")),
        None => {
            bail!("no HOME or XDG_CONFIG_HOME to keep the farmer key in; pass --farmer-key HEX")
        }
    }
}

/// The farmer key file in the config directory.
pub fn farmer_key_path() -> Result<PathBuf> {
    Ok(config_dir()?.join("farmer.key"))
}

/// The client key file in the config directory.
pub fn client_key_path() -> Result<PathBuf> {
    Ok(config_dir()?.join("client.key"))
}

/// The farmer key F from the config directory, made on first use (an
/// ed25519 key pair whose public key is F; a file of an earlier spacevault
/// with F alone still plots). Says on stderr where a new key was saved.
pub fn stored_farmer_key() -> Result<[u8; 32]> {
    let path = farmer_key_path()?;
    let (key, made) = spacevault_node::identity::load_or_create(&path)?;
    if made {
        errln!(
            "created a new farmer key in {} (back it up: plots belong to it)",
            path.display()
        );
    }
    Ok(key.public())
}

/// The farmer's key pair, for a node.
pub fn farmer_keypair() -> Result<spacevault_chain::Keypair> {
    let path = farmer_key_path()?;
    let (key, made) = spacevault_node::identity::farmer_keypair(&path)?;
    if made {
        errln!(
            "created a new farmer key in {} (back it up: plots belong to it)",
            path.display()
        );
    }
    Ok(key)
}

/// The client's key pair, which owns its registers; made on first use.
pub fn client_keypair() -> Result<spacevault_chain::Keypair> {
    let path = client_key_path()?;
    let (key, made) = spacevault_node::identity::load_or_create(&path)?;
    if made {
        errln!("created a new client key in {}", path.display());
    }
    match key {
        spacevault_node::identity::KeyFile::Pair(k) => Ok(k),
        spacevault_node::identity::KeyFile::PublicOnly(_) => {
            bail!("{} holds no secret key: move it aside", path.display())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_hex32;

    #[test]
    fn hex32_takes_64_digits_with_or_without_0x() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_hex32("--seed", &hex).unwrap(), [0xab; 32]);
        assert_eq!(
            parse_hex32("--seed", &format!(" 0x{hex}\n")).unwrap(),
            [0xab; 32]
        );
    }

    #[test]
    fn hex32_says_how_many_digits_it_got() {
        let e = parse_hex32("--seed", "0102").unwrap_err().to_string();
        assert_eq!(
            e,
            "--seed must be 32 bytes (64 hex digits), got 4 hex digits"
        );
        let e = parse_hex32("--seed", "xyz").unwrap_err().to_string();
        assert_eq!(e, "--seed must be 64 hex digits, got 'xyz'");
    }
}
