//! `spacevault bench plot` and `bench lookup` through the built binary:
//! repeated runs and their summary, shared memory, the machine's bounds
//! and ratios, huge pages, backends, and lookups of one read each.

mod common;

use common::*;
use predicates::prelude::*;

#[test]
fn bench_plot_runs_repeat_and_summarise() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sv(dir.path());
    cmd.args(["bench", "plot", "-k", "16", "--runs", "2", "--json"])
        .args(["--disk-bytes", "4MiB", "--dir"])
        .arg(dir.path());
    let r = json(&mut cmd);
    assert_eq!(r["reuse_memory"], false);
    // Every run had fresh memory: there are no reused runs to set apart.
    assert!(r["reused_summary"].is_null());
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let walls: Vec<f64> = runs
        .iter()
        .map(|run| {
            // Each run measured its own bounds.
            assert!(run["bounds"]["hash_records_per_second"].as_f64().unwrap() > 0.0);
            assert!(run["machine"]["cores"].as_u64().unwrap() >= 1);
            run["wall_seconds"].as_f64().unwrap()
        })
        .collect();
    let wall = &r["summary"]["wall_seconds"];
    assert_eq!(wall["count"], 2);
    assert_eq!(wall["min"].as_f64().unwrap(), walls[0].min(walls[1]));
    assert_eq!(wall["max"].as_f64().unwrap(), walls[0].max(walls[1]));
    let median = wall["median"].as_f64().unwrap();
    assert!((median - (walls[0] + walls[1]) / 2.0).abs() < 1e-12);
    for key in [
        "ratio_to_hash_bound",
        "ratio_to_blake3_bound",
        "wall_over_design_bound",
        "design_bound_seconds",
        "disk_write_bytes_per_second",
        "file_write_bytes_per_second",
    ] {
        let s = &r["summary"][key];
        assert!(
            s["min"].as_f64().unwrap() <= s["max"].as_f64().unwrap(),
            "{key}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // Human output: a line a run, then the spread.
    let mut cmd = sv(dir.path());
    cmd.args(["bench", "plot", "-k", "16", "--runs", "2"])
        .args(["--disk-bytes", "4MiB", "--dir"])
        .arg(dir.path());
    let out = cmd.assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("2 runs"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("wall (s)")), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("plot's writes (MB/s)")),
        "{out}"
    );

    sv(dir.path())
        .args(["bench", "plot", "--runs", "0"])
        .assert()
        .failure();
}

#[test]
fn bench_plot_runs_can_share_the_plotters_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sv(dir.path());
    cmd.args(["bench", "plot", "-k", "18", "--runs", "2", "--json"])
        .args(["--disk-bytes", "4MiB", "--reuse-memory", "--dir"])
        .arg(dir.path());
    let r = json(&mut cmd);
    assert_eq!(r["reuse_memory"], true);
    let touch: Vec<f64> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["first_touch_seconds"].as_f64().unwrap())
        .collect();
    // The first run brings the buffers into use, the second reuses them.
    assert!(touch[0] > 0.0 && touch[1] == 0.0, "{touch:?}");
    // The runs that reused memory get a spread of their own.
    let second_wall = r["runs"][1]["wall_seconds"].as_f64().unwrap();
    let reused = &r["reused_summary"]["wall_seconds"];
    assert_eq!(reused["count"], 1);
    assert_eq!(reused["min"].as_f64().unwrap(), second_wall);
    assert_eq!(r["summary"]["wall_seconds"]["count"], 2);

    let mut cmd = sv(dir.path());
    cmd.args(["bench", "plot", "-k", "16", "--runs", "2"])
        .args(["--disk-bytes", "4MiB", "--reuse-memory", "--dir"])
        .arg(dir.path());
    let out = cmd.assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.lines()
            .any(|l| l.starts_with("runs 2 to 2, memory reused")),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("wall (s)")).count(),
        2,
        "{out}"
    );
}

#[test]
fn bench_plot_reports_bounds_and_ratios_for_both_strategies() {
    let dir = tempfile::tempdir().unwrap();
    for (strategy, memory) in [("memory", "1GiB"), ("external", "41MiB")] {
        let mut cmd = sv(dir.path());
        cmd.args(["bench", "plot", "-k", "18", "--json"])
            .args(["--disk-bytes", "4MiB", "--strategy", strategy])
            .args(["--memory", memory, "--dir"])
            .arg(dir.path());
        let r = json(&mut cmd);
        assert_eq!(r["strategy"], strategy);
        assert!(r["wall_seconds"].as_f64().unwrap() > 0.0);
        let design = r["design_bound_seconds"].as_f64().unwrap();
        assert!(design >= r["hash_bound_seconds"].as_f64().unwrap() && design > 0.0);
        // The BLAKE3 bound is hashing every record at the blake3 crate's
        // measured rate, and its ratio is that bound over the wall.
        let records = r["records"].as_f64().unwrap();
        let blake3 = r["bounds"]["blake3_records_per_second"].as_f64().unwrap();
        let blake3_bound = r["blake3_bound_seconds"].as_f64().unwrap();
        assert!((blake3_bound - records / blake3).abs() < 1e-9);
        let wall = r["wall_seconds"].as_f64().unwrap();
        let ratio = r["ratio_to_blake3_bound"].as_f64().unwrap();
        assert!((ratio - blake3_bound / wall).abs() < 1e-9);
        // A fresh process's plot first brings its buffers into use, as a
        // phase of its own, whose time adds to the bound.
        assert_eq!(r["phases"][0][0], "first_touch");
        let touch = r["first_touch_seconds"].as_f64().unwrap();
        assert_eq!(r["phases"][0][1].as_f64().unwrap(), touch);
        assert!(touch > 0.0);
        assert!(
            r["bounds"]["fresh_memory_bytes_per_second"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        // The plot's own writes happen in its last phase, and their rate is
        // the file's bytes over them.
        let writes = r["file_write_seconds"].as_f64().unwrap();
        let phases = r["phases"].as_array().unwrap();
        let last_phase = phases.last().unwrap()[1].as_f64().unwrap();
        assert!(
            writes > 0.0 && writes <= last_phase,
            "{writes} of {last_phase}"
        );
        let rate = r["file_write_bytes_per_second"].as_f64().unwrap();
        let bytes = r["file_bytes"].as_f64().unwrap();
        assert!((rate * writes / bytes - 1.0).abs() < 1e-9);
        // The last phase took CPU time, its share of the threads' cores.
        let cpu = r["last_phase_cpu_seconds"].as_f64().unwrap();
        let threads = r["threads"].as_f64().unwrap();
        let busy = r["last_phase_cores_busy"].as_f64().unwrap();
        assert!(cpu > 0.0);
        assert!((busy * last_phase * threads / cpu - 1.0).abs() < 1e-9);
        let with_touch = r["design_bound_with_first_touch_seconds"].as_f64().unwrap();
        assert!(with_touch >= design);
        if strategy == "memory" {
            assert!((with_touch - (design + touch)).abs() < 1e-9);
        }
        let concurrent = &r["bounds"]["concurrent"];
        if strategy == "external" {
            assert!(r["rounds"].as_u64().unwrap() > 1);
            assert!(r["temp_bytes_written"].as_u64().unwrap() > 0);
            assert!(concurrent["read_bytes_per_second"].as_f64().unwrap() > 0.0);
            assert!(concurrent["write_bytes_per_second"].as_f64().unwrap() > 0.0);
        } else {
            assert!(concurrent.is_null());
            assert_eq!(r["rounds"], 0);
        }
        // The plot and the scratch files are gone.
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 0, "bench plot left files behind");
    }
}

/// Memory from the huge page pool is not in the RSS: `bench plot` reports
/// it beside, and takes none where told not to.
#[test]
fn bench_plot_reports_what_it_took_from_the_huge_page_pool() {
    let dir = tempfile::tempdir().unwrap();
    for never in [false, true] {
        let mut cmd = sv(dir.path());
        cmd.args([
            "bench",
            "plot",
            "-k",
            "18",
            "--json",
            "--disk-bytes",
            "4MiB",
        ])
        .arg("--dir")
        .arg(dir.path());
        if never {
            cmd.env("SPACEVAULT_HUGE_PAGE_POOL", "never");
        }
        let r = json(&mut cmd);
        let pool = r["machine"]["huge_page_pool_bytes"].as_u64();
        let took = r["peak_huge_page_pool_bytes"].as_u64().unwrap();
        assert!(took <= pool.unwrap_or(0), "{took} of {pool:?}");
        if never {
            assert_eq!(took, 0);
        }
    }
}

#[test]
fn an_unknown_huge_page_pool_setting_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = sv(dir.path())
        .env("SPACEVAULT_HUGE_PAGE_POOL", "off")
        .args(["plot", "-k", "16", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("SPACEVAULT_HUGE_PAGE_POOL is `off`") && err.contains("`never`"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    for (i, accepted) in ["never", "try", ""].into_iter().enumerate() {
        plot_cmd(dir.path(), "16", &format!("{i:064x}"), &[])
            .env("SPACEVAULT_HUGE_PAGE_POOL", accepted)
            .assert()
            .success();
    }
}

#[test]
fn an_unknown_or_unrunnable_backend_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    // neon is no x86 backend, avx512 no aarch64 one: one of them is
    // unrunnable here.
    let foreign = if cfg!(target_arch = "x86_64") {
        "neon"
    } else {
        "avx512"
    };
    for (value, says) in [("avx1024", "names no backend"), (foreign, "cannot run")] {
        let out = sv(dir.path())
            .env("SPACEVAULT_BACKEND", value)
            .args(["plot", "-k", "16", "--out"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says) && err.contains("portable"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    // The backend asked for is the one the machine line names.
    let v = json(
        sv(dir.path())
            .env("SPACEVAULT_BACKEND", "portable")
            .args([
                "bench", "hash", "--json", "--algo", "blake3", "--size", "64",
            ])
            .args(["--duration", "0.01", "--repeats", "1", "--threads", "1"]),
    );
    assert_eq!(v["machine"]["simd"], "portable");
}

#[test]
fn bench_lookup_times_lookups_of_one_read_each() {
    let dir = tempfile::tempdir().unwrap();
    let path = plot_k16(dir.path());
    let r = json(
        sv(dir.path())
            .args(["bench", "lookup", "-n", "300", "--json"])
            .arg(&path),
    );
    assert_eq!(r["lookups"], 300);
    assert_eq!(r["k"], 16);
    assert_eq!(r["scheme"], "plain");
    // A plain plot's lookup is its proof.
    assert!(r["warm"]["proof_micros"].is_null());
    assert!(!r["machine"]["cpu"].as_str().unwrap().is_empty());
    let warm = &r["warm"];
    assert_eq!(warm["reads_per_lookup"].as_f64().unwrap(), 1.0);
    assert_eq!(warm["micros"]["count"], 300);
    let (min, median) = (&warm["micros"]["min"], &warm["micros"]["median"]);
    assert!(min.as_f64().unwrap() <= median.as_f64().unwrap());
    assert!(r["verify_micros"]["median"].as_f64().unwrap() > 0.0);
    assert!(r["cold"].is_null());

    sv(dir.path())
        .args(["bench", "lookup", "-n", "20"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("warm").and(predicate::str::contains("reads/lookup")));
    let foreign = dir.path().join("foreign.plot");
    std::fs::write(&foreign, b"not a plot").unwrap();
    sv(dir.path())
        .args(["bench", "lookup"])
        .arg(&foreign)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a spacevault plot"));
}

/// A table-chain plot's lookup: the index and a bucket, then one park a
/// level down the path; its whole proof fourteen reads more.
#[test]
fn bench_lookup_times_a_table_chain_plots_lookups_and_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let out = plot_cmd(
        dir.path(),
        "16",
        SEED,
        &["--scheme", "hard", "--threads", "2"],
    )
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let path = std::path::PathBuf::from(String::from_utf8(out).unwrap().trim());
    let r = json(
        sv(dir.path())
            .args(["bench", "lookup", "-n", "100", "--json"])
            .arg(&path),
    );
    assert_eq!(r["scheme"], "hard");
    assert_eq!(r["k"], 16);
    let warm = &r["warm"];
    // Five reads for the bucket and one candidate's path, three more for
    // each other entry with the nearest prefix (at k = 16 about a third
    // of the challenges have two).
    let reads = warm["reads_per_lookup"].as_f64().unwrap();
    assert!((5.0..8.0).contains(&reads), "{reads}");
    assert_eq!(warm["reads_per_proof"].as_f64().unwrap(), 14.0);
    assert_eq!(warm["proof_micros"]["count"], 100);
    assert!(r["verify_micros"]["median"].as_f64().unwrap() > 0.0);
    sv(dir.path())
        .args(["bench", "lookup", "-n", "10"])
        .arg(&path)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("hard scheme").and(predicate::str::contains("warm proof")),
        );
}

#[test]
fn bench_chain_reports_its_runs_and_the_proof_of_times_costs() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = sv(dir.path());
    cmd.args([
        "bench",
        "chain",
        "--slots",
        "300",
        "--discriminant-bits",
        "512",
    ])
    .args(["--json", "--dir"])
    .arg(dir.path());
    let r = json(&mut cmd);
    assert_eq!(r["wanted_blocks_per_slot"], 0.5);
    assert!((r["attacker_space"].as_f64().unwrap() - 0.3).abs() < 1e-9);
    for run in ["honest", "selfish"] {
        let run = &r[run];
        assert_eq!(run["slots"], 300);
        let blocks = run["blocks"].as_u64().unwrap();
        // 150 wanted: far outside this range only if the target is wrong.
        assert!((90..=210).contains(&blocks), "{run}");
        assert!(run["produced"].as_u64().unwrap() >= blocks);
        let share = run["attacker_share"].as_f64().unwrap();
        assert!(share > 0.05 && share < 0.6, "{run}");
    }
    assert!(r["private"]["weight_ratio"].as_f64().unwrap() < 1.0);
    let costs = &r["slot_costs"];
    assert_eq!(costs["discriminant_bits"], 512);
    assert!(costs["squarings_per_second"].as_f64().unwrap() > 0.0);
    assert!(costs["check_ms"].as_f64().unwrap() > 0.0);
    // Without --json: a table on stdout.
    sv(dir.path())
        .args([
            "bench",
            "chain",
            "--slots",
            "50",
            "--discriminant-bits",
            "512",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("withholding"))
        .stdout(predicate::str::contains("squarings/s"));
    // Nonsense refused in one line.
    sv(dir.path())
        .args(["bench", "chain", "--farmers", "3", "--attackers", "3"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--attackers must be fewer than --farmers",
        ));
}

#[test]
fn bench_attack_measures_both_schemes_and_holds_them_against_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cmd = sv(dir.path());
    cmd.args(["bench", "attack", "-k", "16", "--challenges", "20"])
        .args([
            "--rainbow-lengths",
            "16,64",
            "--grind-bits",
            "2,3",
            "--nested-bits",
            "3",
            "--combined-bits",
            "4",
            "--json",
        ])
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out);
    let r = json(&mut cmd);
    let measured = &r["hard_sizes"][0];
    assert_eq!(measured["k"], 16);
    assert!(measured["rebuilt_entries"].as_u64().unwrap() > 3 * 50_000);
    assert!(measured["rebuilt_seconds"].as_f64().unwrap() > 0.0);
    let rows = r["rows"].as_array().unwrap();
    let find = |scheme: &str, attack: &str, k: u64| {
        rows.iter()
            .find(|row| row["scheme"] == scheme && row["attack"] == attack && row["k"] == k)
            .unwrap_or_else(|| panic!("no {scheme} {attack} at k = {k}"))
    };
    // The plain scheme from nothing hashes every record, and answers.
    let nothing = find("plain", "from nothing", 16);
    assert_eq!(nothing["hashes_median"], 65536.0);
    assert_eq!(nothing["answered"], 1.0);
    // Rainbow tables keep a fraction of the plot and answer most
    // challenges for far fewer hashes.
    let rainbow = find("plain", "rainbow t=16 x4", 16);
    assert!(
        rainbow["attacker_bytes"].as_f64().unwrap() < rainbow["honest_bytes"].as_f64().unwrap()
    );
    assert!(rainbow["hashes_median"].as_f64().unwrap() < 65536.0);
    assert!(rainbow["answered"].as_f64().unwrap() >= 0.5, "{rainbow}");
    // Carried to k = 32, the table-chain plot rebuilt costs more than
    // four times 2^32 hashes.
    let hard = find("hard", "from nothing", 32);
    assert!(hard["hashes_median"].as_f64().unwrap() > 4.0 * 2f64.powi(32));
    // Bits dropped from every level cost more than from the top alone.
    let every = find("hard", "3 bits off every level", 16);
    let top = find("hard", "3 bits off the top level", 16);
    assert!(every["hashes_median"].as_f64().unwrap() > top["hashes_median"].as_f64().unwrap());
    // Level 2 recomputed with 4 bits off each top entry: its leaves and
    // a few joins, for less space than either alone.
    let both = find("hard", "level 2 recomputed, 4 bits off the top", 16);
    assert!(both["answered"].as_f64().unwrap() >= 0.9, "{both}");
    assert!(both["hashes_median"].as_f64().unwrap() >= 65536.0);
    let level = find("hard", "drop level 2", 16);
    assert!(both["attacker_bytes"].as_f64().unwrap() < level["attacker_bytes"].as_f64().unwrap());
    let gate = r["gate"].as_array().unwrap();
    assert_eq!(gate.len(), 4);
    // Rainbow tables save twice the space for a few thousand hashes.
    assert_eq!(gate[0]["scheme"], "plain");
    assert_eq!(gate[0]["passes"], false);
    assert!(r["rainbow_fit"]["exponent"].as_f64().unwrap() > 1.0);
    let svg = std::fs::read_to_string(out.join("attack.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("table-chain scheme"));
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("attack.json")).unwrap()).unwrap();
    assert_eq!(saved["gate"], r["gate"]);
    // Nonsense refused in one line.
    sv(dir.path())
        .args(["bench", "attack", "-k", "30"])
        .arg("--dir")
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the attacks run at k = 16 to 24"));
}
