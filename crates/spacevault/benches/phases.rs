//! Each plotting phase's CPU work on one thread, without the disk, in
//! nanoseconds a record: `cargo bench -p spacevault --bench phases`.
//! Where a plot's time goes when the disk is not the limit; `spacevault
//! bench plot` times whole plots against the machine's bounds.

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let phases: [(&str, fn()); 3] = [
        ("phase_one", spacevault::plot::phase_bench::phase_one),
        ("phase_two", spacevault::plot::phase_bench::phase_two),
        ("last_phase", spacevault::plot::phase_bench::last_phase),
    ];
    for (name, run) in phases {
        if only.as_deref().is_none_or(|o| name.contains(o)) {
            println!("== {name}");
            run();
        }
    }
}
