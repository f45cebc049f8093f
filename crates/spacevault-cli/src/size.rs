//! Human sizes: `4GiB`, `512M`, `1.5 GB`, `65536`.

/// Parses a size in bytes. Binary units (KiB, MiB, ...) and their one-letter
/// forms (K, M, G, T) are powers of 1024; decimal ones (kB, MB, GB, TB) of 1000.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (try 4GiB, 512MiB or 1048576)"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
            "unknown size unit '{other}' in '{text}' (use KiB, MiB, GiB, TiB, kB, MB, GB or TB)"
        ))
        }
    };
    let bytes = value * multiplier as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(bytes as u64)
}

pub use spacevault::units::human_bytes as format_size;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(format_size(3 << 29), "1.50 GiB");
        assert_eq!(format_size(100), "100 B");
    }
}
