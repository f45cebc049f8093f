//! What the kernel says of a process: its CPU time and resident memory,
//! read from `/proc` (Linux; none elsewhere). A vault reports its own
//! process's at `/metrics`, and the benchmarks read their vaults'.

/// CPU seconds (user and system) process `pid` used so far; `"self"` is
/// this process.
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (name) state …`: the name may hold spaces and parentheses.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf reads a constant and has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (hz > 0.0).then(|| ticks / hz)
}

/// The resident memory of process `pid`, in bytes.
pub fn resident_bytes(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn this_process_uses_cpu_and_memory() {
        let before = cpu_seconds("self").unwrap();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(150) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(cpu_seconds("self").unwrap() > before);
        assert!(resident_bytes("self").unwrap() > 1 << 20);
        assert_eq!(cpu_seconds("no-such-process"), None);
    }
}
