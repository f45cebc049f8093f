//! Sizes for people.

/// Bytes in binary units with two decimals: `100 B`, `1.50 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn units() {
        assert_eq!(super::human_bytes(100), "100 B");
        assert_eq!(super::human_bytes(3 << 29), "1.50 GiB");
        assert_eq!(super::human_bytes(5 << 40), "5.00 TiB");
    }
}
