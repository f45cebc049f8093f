//! Files the user names as input: only regular files, and no larger than
//! what they can hold. A device or a FIFO given by mistake (`/dev/zero`,
//! a named pipe) would otherwise grow memory without end or hang.

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::Path;

/// The bytes of `path`, `what` in messages, refused unless it is a regular
/// file of at most `max` bytes.
pub fn read_regular(path: &Path, what: &str, max: u64) -> Result<Vec<u8>> {
    check_regular(path, what)?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .with_context(|| format!("reading {what} {}", path.display()))?;
    if bytes.len() as u64 > max {
        bail!(
            "{what} {} is larger than {}",
            path.display(),
            spacevault::units::human_bytes(max)
        );
    }
    Ok(bytes)
}

/// Fails unless `path` is a regular file; its size.
pub fn check_regular(path: &Path, what: &str) -> Result<u64> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("reading {what} {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "{what} {} is not a regular file (a {})",
            path.display(),
            spacevault::aligned::file_kind(&meta.file_type())
        );
    }
    Ok(meta.len())
}

/// [`read_regular`] as UTF-8 text.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String> {
    String::from_utf8(read_regular(path, what, max)?)
        .map_err(|_| anyhow::anyhow!("{what} {} is not UTF-8 text", path.display()))
}
