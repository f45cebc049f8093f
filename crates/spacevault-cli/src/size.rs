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

/// Parses a rate in bytes a second: a size (`50MiB`, `1MB`, as
/// [`parse_size`] reads them, with or without `/s`), or bits as network
/// people write them (`2Gbit`, `100Mbps`, decimal prefixes).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let not_a_rate = || format!("'{text}' is not a rate (try 2Gbit, 100Mbit or 50MiB)");
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let lower = t.to_ascii_lowercase();
    let bits = lower
        .strip_suffix("bps")
        .or_else(|| lower.strip_suffix("bit"));
    let bytes_per_second = match bits {
        Some(prefixed) => {
            let split = prefixed
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(prefixed.len());
            let (number, prefix) = prefixed.split_at(split);
            let scale = match prefix.trim() {
                "" => 1.0,
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                other => {
                    return Err(format!(
                        "unknown prefix '{other}' in '{text}' (use kbit, Mbit or Gbit)"
                    ))
                }
            };
            let n: f64 = number.parse().map_err(|_| not_a_rate())?;
            n * scale / 8.0
        }
        None => parse_size(t).map_err(|_| not_a_rate())? as f64,
    };
    if !bytes_per_second.is_finite() || bytes_per_second < 1.0 {
        return Err(format!("'{text}' carries less than a byte a second"));
    }
    Ok(bytes_per_second as u64)
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

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(parse_rate("2Gbit"), Ok(250_000_000));
        assert_eq!(parse_rate("100Mbit"), Ok(12_500_000));
        assert_eq!(parse_rate("100Mbps"), Ok(12_500_000));
        assert_eq!(parse_rate("50MiB"), Ok(50 << 20));
        assert_eq!(parse_rate("1MB/s"), Ok(1_000_000));
        for bad in ["fast", "0", "10 parsecs", ""] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }
}
