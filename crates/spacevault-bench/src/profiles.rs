//! Where a test network's vaults are: the profiling study's three settings (one
//! datacenter, four regions of one continent, eight countries) or a matrix
//! from a file, dealt to the vaults in turn, and the measured round trips
//! set beside the profile's.
//!
//! A matrix file, as the built-in ones below are written:
//! ```text
//! # one-way delay in milliseconds from the row's region to the column's
//! regions   virginia ohio california oregon
//! virginia  0.25     6    31         35
//! ...
//! jitter 5%
//! ```

use crate::BenchError;
use serde::Serialize;
use spacevault_node::links::{LinksFile, FORMAT};
use std::collections::BTreeMap;
use std::path::Path;

/// The profiling study's continental test: four US regions, up to 35 ms one way (70
/// ms round trip, east coast to west). Approximations of public
/// inter-region round trips, halved.
pub const CONTINENT: &str = "\
# Four regions of one continent (the profiling study: US east and west coasts, round
# trips up to 70 ms). One-way delays in ms.
regions     virginia ohio california oregon
virginia    0.25     6    31         35
ohio        6        0.25 26         25
california  31       26   0.25       10
oregon      35       25   10         0.25
jitter 5%
";

/// The profiling study's global test: eight countries, up to 200 ms one way (400 ms
/// round trip, Europe to Australia, the largest it saw).
pub const GLOBAL: &str = "\
# Eight countries (the profiling study: round trips up to 400 ms, Europe to
# Australia). One-way delays in ms.
regions    virginia california saopaulo frankfurt london mumbai tokyo sydney
virginia   0.25     31         58       45        38     93     73    100
california 31       0.25       88       73        69     115    53    70
saopaulo   58       88         0.25     103       93     150    128   155
frankfurt  45       73         103      0.25      8      55     113   195
london     38       69         93       8         0.25   58     108   200
mumbai     93       115        150      55        58     0.25   63    75
tokyo      73       53         128      113       108    63     0.25  53
sydney     100      70         155      195       200    75     53    0.25
jitter 5%
";

/// Regions and the one-way delays between them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionMatrix {
    /// `lan`, `continent`, `global`, or the file it came from.
    pub name: String,
    pub regions: Vec<String>,
    pub one_way_ms: Vec<Vec<f64>>,
    /// Each delay varies by up to this fraction either way.
    pub jitter: f64,
}

impl RegionMatrix {
    /// `lan`, `continent`, `global`, or a matrix file's path. `lan` is no
    /// matrix: loopback and the in-memory transport are already well under
    /// the millisecond the profiling study measured in one datacenter, and nothing is
    /// added to them.
    pub fn named(what: &str) -> Result<Option<RegionMatrix>, BenchError> {
        match what {
            "lan" => Ok(None),
            "continent" => RegionMatrix::parse("continent", CONTINENT).map(Some),
            "global" => RegionMatrix::parse("global", GLOBAL).map(Some),
            path => {
                let text = std::fs::read_to_string(Path::new(path)).map_err(|e| {
                    BenchError::Invalid(format!(
                        "--latency {path}: not lan, continent or global, and not a readable file ({e})"
                    ))
                })?;
                RegionMatrix::parse(path, &text).map(Some)
            }
        }
    }

    /// One region, nothing added.
    pub fn lan() -> RegionMatrix {
        RegionMatrix {
            name: "lan".into(),
            regions: vec!["lan".into()],
            one_way_ms: vec![vec![0.0]],
            jitter: 0.0,
        }
    }

    pub fn parse(name: &str, text: &str) -> Result<RegionMatrix, BenchError> {
        let bad = |line: usize, why: String| {
            BenchError::Invalid(format!("latency matrix {name}, line {line}: {why}"))
        };
        let mut regions: Vec<String> = Vec::new();
        let mut rows: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut jitter = 0.0;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.split('#').next().unwrap_or("").trim();
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["regions", names @ ..] => {
                    if names.is_empty() || !regions.is_empty() {
                        return Err(bad(n, "one 'regions' line, naming them all".into()));
                    }
                    regions = names.iter().map(|s| s.to_string()).collect();
                }
                ["jitter", amount] => {
                    let pct = amount.strip_suffix('%').ok_or_else(|| {
                        bad(n, format!("jitter '{amount}': a percentage, e.g. 5%"))
                    })?;
                    jitter = pct
                        .parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=100.0).contains(p))
                        .ok_or_else(|| bad(n, format!("jitter '{amount}': from 0% to 100%")))?
                        / 100.0;
                }
                [region, delays @ ..] => {
                    if regions.is_empty() {
                        return Err(bad(n, "the 'regions' line comes first".into()));
                    }
                    if !regions.iter().any(|r| r == region) {
                        return Err(bad(n, format!("'{region}' is not among the regions")));
                    }
                    if delays.len() != regions.len() {
                        return Err(bad(
                            n,
                            format!("{} delays; {} regions", delays.len(), regions.len()),
                        ));
                    }
                    let delays = delays
                        .iter()
                        .map(|d| {
                            d.parse::<f64>()
                                .ok()
                                .filter(|ms| (0.0..=60_000.0).contains(ms))
                                .ok_or_else(|| {
                                    bad(n, format!("'{d}' is not a delay in ms (0 to 60000)"))
                                })
                        })
                        .collect::<Result<Vec<f64>, _>>()?;
                    if rows.insert(region.to_string(), delays).is_some() {
                        return Err(bad(n, format!("a second row for '{region}'")));
                    }
                }
            }
        }
        if regions.is_empty() {
            return Err(BenchError::Invalid(format!(
                "latency matrix {name}: no 'regions' line"
            )));
        }
        let one_way_ms = regions
            .iter()
            .map(|r| {
                rows.remove(r).ok_or_else(|| {
                    BenchError::Invalid(format!("latency matrix {name}: no row for '{r}'"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(RegionMatrix {
            name: name.to_string(),
            regions,
            one_way_ms,
            jitter,
        })
    }

    /// The region of the `i`th vault: dealt in turn, as the profiling study started
    /// the same number of machines in each region.
    pub fn region_of(&self, i: usize) -> usize {
        i % self.regions.len()
    }

    /// The links file that places `peers` (in vault order) in regions.
    pub fn links_file(&self, peers: &[String], bytes_per_second: Option<u64>) -> LinksFile {
        LinksFile {
            format: FORMAT,
            regions: self.regions.clone(),
            one_way_ms: self.one_way_ms.clone(),
            jitter: self.jitter,
            bytes_per_second,
            placement: peers
                .iter()
                .enumerate()
                .map(|(i, p)| (p.clone(), self.region_of(i)))
                .collect(),
        }
    }

    /// The round trip set between two regions.
    pub fn round_trip_ms(&self, a: usize, b: usize) -> f64 {
        self.one_way_ms[a][b] + self.one_way_ms[b][a]
    }
}

/// How far apart a test network's vaults are: a matrix of regions (none:
/// as close as the machine makes them) and a bandwidth cap (none: none).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Distance {
    pub matrix: Option<RegionMatrix>,
    pub bytes_per_second: Option<u64>,
}

impl Distance {
    /// The profile's name for reports.
    pub fn name(&self) -> String {
        let place = self.matrix.as_ref().map_or("lan", |m| m.name.as_str());
        match self.bytes_per_second {
            Some(rate) => format!("{place}, {:.0} Mbit/s", rate as f64 * 8.0 / 1e6),
            None => place.to_string(),
        }
    }

    /// The regions, one where nothing is added.
    pub fn regions(&self) -> RegionMatrix {
        self.matrix.clone().unwrap_or_else(RegionMatrix::lan)
    }

    /// Whether the transport is left as it is: no regions, no cap.
    pub fn adds_nothing(&self) -> bool {
        self.matrix.is_none() && self.bytes_per_second.is_none()
    }

    /// The links file that holds `peers` (in vault order) at this distance;
    /// none where nothing is added.
    pub fn links_file(&self, peers: &[String]) -> Option<LinksFile> {
        (!self.adds_nothing()).then(|| self.regions().links_file(peers, self.bytes_per_second))
    }
}

/// Round trips measured between two regions, beside the profile's.
#[derive(Clone, Debug, Serialize)]
pub struct RoundTrips {
    pub from: String,
    pub to: String,
    pub set_ms: f64,
    pub measured_median_ms: f64,
    pub samples: usize,
}

impl RoundTrips {
    /// `virginia–ohio: set 12.0 ms, measured 12.4 ms (+3%, 40 pings)`.
    pub fn describe(&self) -> String {
        let off = match self.set_ms {
            set if set > 0.0 => format!("{:+.0}%, ", (self.measured_median_ms / set - 1.0) * 100.0),
            _ => String::new(),
        };
        format!(
            "{}–{}: set {:.1} ms, measured {:.1} ms ({off}{} pings)",
            self.from, self.to, self.set_ms, self.measured_median_ms, self.samples
        )
    }
}

/// Each pair of regions' median measured round trip. `measured` holds
/// (vault, peer vault, ms) for each vault's last ping of each peer.
pub fn round_trips(matrix: &RegionMatrix, measured: &[(usize, usize, f64)]) -> Vec<RoundTrips> {
    let mut by_pair: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for &(a, b, ms) in measured {
        let (ra, rb) = (matrix.region_of(a), matrix.region_of(b));
        by_pair
            .entry((ra.min(rb), ra.max(rb)))
            .or_default()
            .push(ms);
    }
    by_pair
        .into_iter()
        .map(|((a, b), mut ms)| {
            ms.sort_by(f64::total_cmp);
            RoundTrips {
                from: matrix.regions[a].clone(),
                to: matrix.regions[b].clone(),
                set_ms: matrix.round_trip_ms(a, b),
                measured_median_ms: ms[ms.len() / 2],
                samples: ms.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_matrices_are_seed_004s() {
        let c = RegionMatrix::named("continent").unwrap().unwrap();
        assert_eq!(c.regions.len(), 4);
        let max_rtt = |m: &RegionMatrix| {
            (0..m.regions.len())
                .flat_map(|a| (0..m.regions.len()).map(move |b| (a, b)))
                .map(|(a, b)| m.round_trip_ms(a, b))
                .fold(0.0, f64::max)
        };
        assert_eq!(max_rtt(&c), 70.0);
        let g = RegionMatrix::named("global").unwrap().unwrap();
        assert_eq!(g.regions.len(), 8);
        assert_eq!(max_rtt(&g), 400.0);
        assert_eq!(g.jitter, 0.05);
        assert!(RegionMatrix::named("lan").unwrap().is_none());
        // Symmetric, as the public figures are.
        for m in [&c, &g] {
            for a in 0..m.regions.len() {
                for b in 0..m.regions.len() {
                    assert_eq!(m.one_way_ms[a][b], m.one_way_ms[b][a]);
                }
            }
        }
    }

    #[test]
    fn a_bad_matrix_names_its_line() {
        let cases = [
            ("virginia 1\n", "line 1: the 'regions' line comes first"),
            ("regions a b\na 1\n", "line 2: 1 delays; 2 regions"),
            ("regions a b\na 1 x\n", "'x' is not a delay"),
            ("regions a b\nc 1 2\n", "'c' is not among"),
            ("regions a b\na 1 2\n", "no row for 'b'"),
            ("regions a\na 1\njitter 5\n", "a percentage"),
            ("", "no 'regions' line"),
        ];
        for (text, says) in cases {
            let e = RegionMatrix::parse("m", text).unwrap_err().to_string();
            assert!(e.contains(says), "'{e}' should say '{says}'");
        }
        assert!(RegionMatrix::named("/nonexistent/matrix")
            .unwrap_err()
            .to_string()
            .contains("not lan, continent or global"));
    }

    #[test]
    fn vaults_are_dealt_to_regions_in_turn() {
        let g = RegionMatrix::named("global").unwrap().unwrap();
        let peers: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        let f = g.links_file(&peers, None);
        assert_eq!(f.placement["p0"], 0);
        assert_eq!(f.placement["p7"], 7);
        assert_eq!(f.placement["p8"], 0);
    }

    #[test]
    fn round_trips_gather_by_region_pair() {
        let c = RegionMatrix::named("continent").unwrap().unwrap();
        // Vaults 0 and 4 are in virginia, 2 in california.
        let got = round_trips(&c, &[(0, 2, 63.0), (2, 0, 61.0), (4, 2, 64.0), (0, 4, 0.6)]);
        assert_eq!(got.len(), 2);
        let vc = got.iter().find(|r| r.to == "california").unwrap();
        assert_eq!(
            (vc.set_ms, vc.measured_median_ms, vc.samples),
            (62.0, 63.0, 3)
        );
    }
}
