//! How gossipsub scores peers. One invalid message graylists its sender,
//! whatever it earned before; peers that deliver messages first earn a
//! little; more vaults behind one IP address than the connection limits
//! let in from one cost each of them (loopback exempt unless the
//! connection limits count it, as they do for connections).
//!
//! Left off, with the reason: the penalty for mesh peers that deliver too
//! few messages (P3). It is tuned for busy topics; a topic of one block a
//! slot never reaches its threshold, and a mesh peer told by IDONTWANT
//! not to send a block it already had delivers nothing by design. Time in
//! the mesh (P1) earns up to 3,600 points, which would hide any penalty.

use crate::{ConnectionLimits, Topic};
use libp2p::gossipsub::{PeerScoreParams, PeerScoreThresholds, TopicHash, TopicScoreParams};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What one invalid message costs its sender on a topic (times the square
/// of its count, which decays by [`INVALID_MESSAGE_DECAY`] a second): past
/// the graylist threshold even with the most a peer can earn, for about 20
/// seconds.
pub const INVALID_MESSAGE_WEIGHT: f64 = -1000.0;
/// How an invalid message's count decays each second.
pub const INVALID_MESSAGE_DECAY: f64 = 0.95;
/// The most a peer's topic terms add to its score, all topics together.
pub const TOPIC_SCORE_CAP: f64 = 10.0;
/// The penalty per peer, times the square of the peers past the threshold
/// (five past it and every one of them is graylisted).
pub const IP_COLOCATION_WEIGHT: f64 = -5.0;

/// The score parameters and thresholds for a chain's topics.
pub(crate) fn score(
    topics: impl IntoIterator<Item = TopicHash>,
    limits: &ConnectionLimits,
) -> (PeerScoreParams, PeerScoreThresholds) {
    let whitelist = if limits.limit_loopback {
        Default::default()
    } else {
        [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ]
        .into_iter()
        .collect()
    };
    let mut params = PeerScoreParams {
        topic_score_cap: TOPIC_SCORE_CAP,
        ip_colocation_factor_weight: IP_COLOCATION_WEIGHT,
        // Peers on one IP address before each of them is penalised: a
        // farmer's machines behind one router, as many as the connection
        // limits let in from one address.
        ip_colocation_factor_threshold: limits.per_ip as f64,
        ip_colocation_factor_whitelist: whitelist,
        ..Default::default()
    };
    for topic in topics {
        let t = TopicScoreParams {
            topic_weight: 1.0,
            time_in_mesh_weight: 0.0,
            // A peer that brings a message first earns a point, decaying
            // by half each second, up to the cap above for all topics.
            first_message_deliveries_weight: 1.0,
            first_message_deliveries_decay: 0.5,
            first_message_deliveries_cap: TOPIC_SCORE_CAP,
            mesh_message_deliveries_weight: 0.0,
            mesh_failure_penalty_weight: 0.0,
            invalid_message_deliveries_weight: INVALID_MESSAGE_WEIGHT,
            invalid_message_deliveries_decay: INVALID_MESSAGE_DECAY,
            ..Default::default()
        };
        params.topics.insert(topic, t);
    }
    (params, PeerScoreThresholds::default())
}

/// The topics of a chain, as gossipsub names them.
pub(crate) fn topics(chain_id: &[u8; 32]) -> Vec<TopicHash> {
    Topic::ALL
        .iter()
        .map(|t| t.ident(chain_id).hash())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(limit_loopback: bool) -> (PeerScoreParams, PeerScoreThresholds) {
        let limits = ConnectionLimits {
            limit_loopback,
            ..Default::default()
        };
        score(topics(&[7; 32]), &limits)
    }

    #[test]
    fn the_parameters_are_ones_gossipsub_accepts() {
        for loopback in [false, true] {
            let (params, thresholds) = with(loopback);
            params.validate().unwrap();
            thresholds.validate().unwrap();
        }
    }

    #[test]
    fn one_invalid_message_graylists_a_peer_whatever_it_earned() {
        let (params, thresholds) = with(false);
        assert_eq!(params.topics.len(), Topic::ALL.len());
        for t in params.topics.values() {
            // P4 is the square of the invalid deliveries times its weight;
            // the count decays each decay interval (a second).
            for seconds in 0..15 {
                let count = t.invalid_message_deliveries_decay.powi(seconds);
                let worst = params.topic_score_cap
                    + t.topic_weight * t.invalid_message_deliveries_weight * count * count;
                assert!(
                    worst < thresholds.graylist_threshold,
                    "{seconds} s: {worst}"
                );
            }
            assert_eq!(params.decay_interval, std::time::Duration::from_secs(1));
            assert!(
                t.first_message_deliveries_weight > 0.0,
                "first deliveries earn"
            );
            assert_eq!(t.mesh_message_deliveries_weight, 0.0);
        }
    }

    #[test]
    fn many_vaults_behind_one_address_cost_each_unless_it_is_loopback_and_exempt() {
        let (params, thresholds) = with(false);
        assert!(params.ip_colocation_factor_weight < 0.0);
        let surplus = 5.0;
        let penalty = params.ip_colocation_factor_weight * surplus * surplus;
        assert!(penalty < thresholds.graylist_threshold, "{penalty}");
        let one_over = params.ip_colocation_factor_weight;
        assert!(
            one_over > thresholds.publish_threshold,
            "one too many still publishes"
        );
        assert!(params
            .ip_colocation_factor_whitelist
            .contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)));
        let (counted, _) = with(true);
        assert!(counted.ip_colocation_factor_whitelist.is_empty());
    }
}
