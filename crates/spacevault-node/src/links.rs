//! The links file: where each vault of a test network is and how far
//! apart the places are, for `spacevault node --links FILE`. The network
//! holds each peer at that distance (see `spacevault_network::links`).
//!
//! JSON, format 1:
//! `{"format": 1, "regions": ["virginia", ...], "one_way_ms": [[0.25, 6.0, ...], ...],
//!   "jitter": 0.05, "bytes_per_second": null, "placement": {"<peer id>": 0, ...}}`
//! `one_way_ms[i][j]` is the delay from region i to region j; jitter is
//! the fraction either way by which each delay varies.

use serde::{Deserialize, Serialize};
use spacevault_network::links::LinkProfile;
use spacevault_network::Peer;
use std::collections::BTreeMap;
use std::time::Duration;

pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksFile {
    pub format: u32,
    pub regions: Vec<String>,
    pub one_way_ms: Vec<Vec<f64>>,
    #[serde(default)]
    pub jitter: f64,
    #[serde(default)]
    pub bytes_per_second: Option<u64>,
    pub placement: BTreeMap<String, usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum LinksError {
    #[error("the links file is not valid JSON of format {FORMAT}: {0}")]
    Json(String),
    #[error("the links file is format {0}; this vault reads format {FORMAT}")]
    Format(u32),
    #[error("the links file: {0}")]
    Invalid(String),
}

impl LinksFile {
    pub fn parse(text: &str) -> Result<LinkProfile, LinksError> {
        let file: LinksFile =
            serde_json::from_str(text).map_err(|e| LinksError::Json(e.to_string()))?;
        file.profile()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data")
    }

    /// The profile, once every number is checked.
    pub fn profile(&self) -> Result<LinkProfile, LinksError> {
        let bad = |why: String| Err(LinksError::Invalid(why));
        if self.format != FORMAT {
            return Err(LinksError::Format(self.format));
        }
        let n = self.regions.len();
        if n == 0 {
            return bad("no regions".into());
        }
        if self.one_way_ms.len() != n || self.one_way_ms.iter().any(|row| row.len() != n) {
            return bad(format!(
                "one_way_ms must be {n} rows of {n} delays, one per region"
            ));
        }
        let mut one_way = Vec::with_capacity(n);
        for row in &self.one_way_ms {
            let mut delays = Vec::with_capacity(n);
            for &ms in row {
                if !(0.0..=60_000.0).contains(&ms) {
                    return bad(format!("a delay of {ms} ms: from 0 to 60000 ms"));
                }
                delays.push(Duration::from_secs_f64(ms / 1000.0));
            }
            one_way.push(delays);
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return bad(format!("jitter {}: a fraction from 0 to 1", self.jitter));
        }
        if self.bytes_per_second == Some(0) {
            return bad("a bandwidth of 0 bytes a second carries nothing".into());
        }
        let mut placement = std::collections::HashMap::new();
        for (peer, &region) in &self.placement {
            let peer: Peer = peer
                .parse()
                .map_err(|_| LinksError::Invalid(format!("'{peer}' is not a peer id")))?;
            if region >= n {
                return bad(format!("{peer} is in region {region}; there are {n}"));
            }
            placement.insert(peer, region);
        }
        Ok(LinkProfile {
            regions: self.regions.clone(),
            one_way,
            jitter: self.jitter,
            bytes_per_second: self.bytes_per_second,
            placement,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> LinksFile {
        LinksFile {
            format: FORMAT,
            regions: vec!["east".into(), "west".into()],
            one_way_ms: vec![vec![0.5, 30.0], vec![30.0, 0.5]],
            jitter: 0.05,
            bytes_per_second: Some(1 << 20),
            placement: [(Peer::random().to_string(), 1)].into_iter().collect(),
        }
    }

    #[test]
    fn a_links_file_round_trips_into_its_profile() {
        let f = file();
        let profile = LinksFile::parse(&f.to_json()).unwrap();
        assert_eq!(profile.one_way[0][1], Duration::from_millis(30));
        assert_eq!(profile.placement.values().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(profile.bytes_per_second, Some(1 << 20));
    }

    #[test]
    fn a_bad_links_file_says_what_is_wrong() {
        type Spoil = Box<dyn Fn(&mut LinksFile)>;
        let cases: Vec<(Spoil, &str)> = vec![
            (Box::new(|f| f.format = 2), "format 2"),
            (
                Box::new(|f| f.one_way_ms.pop().map(drop).unwrap_or(())),
                "2 rows",
            ),
            (Box::new(|f| f.one_way_ms[0][0] = -1.0), "a delay of -1"),
            (Box::new(|f| f.jitter = 2.0), "jitter 2"),
            (
                Box::new(|f| f.bytes_per_second = Some(0)),
                "carries nothing",
            ),
            (
                Box::new(|f| {
                    f.placement.insert("nobody".into(), 0);
                }),
                "not a peer id",
            ),
            (
                Box::new(|f| {
                    f.placement.insert(Peer::random().to_string(), 5);
                }),
                "region 5",
            ),
        ];
        for (spoil, says) in cases {
            let mut f = file();
            spoil(&mut f);
            let e = LinksFile::parse(&f.to_json()).unwrap_err().to_string();
            assert!(e.contains(says), "'{e}' should say '{says}'");
        }
        assert!(LinksFile::parse("{")
            .unwrap_err()
            .to_string()
            .contains("JSON"));
    }
}
