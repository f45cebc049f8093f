//! Limits on the connections peers open to a node: in all, and from one IP
//! address, so that one machine (or a few) cannot take every slot a node
//! has. Connections this node dials are not limited here: it chooses them.
//! Loopback addresses are exempt from the per-address limit unless asked
//! (a test network runs every vault on 127.0.0.1); addresses without an IP
//! (the in-memory transport) count toward the total only.

use libp2p::core::transport::PortUse;
use libp2p::core::Endpoint;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::{
    dummy, ConnectionClosed, ConnectionDenied, ConnectionId, FromSwarm, NetworkBehaviour, THandler,
    THandlerInEvent, THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::task::{Context, Poll};

/// How many connections peers may open, and how many a node keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections peers opened, at most, all together.
    pub inbound: usize,
    /// Connections peers opened from one IP address, at most.
    pub per_ip: usize,
    /// Whether loopback addresses count toward `per_ip`.
    pub limit_loopback: bool,
    /// Connections beyond this many are closed once unused
    /// ([`crate::peers`]); none: a connection closes only when no protocol
    /// holds a stream on it, and gossipsub holds one with every peer, so a
    /// vault stays connected to every peer it ever met. Off by default:
    /// at 64 vaults the connections closed cost more in handshakes when
    /// clients store blobs than they save while idle (docs/DESIGN.md).
    pub max_peers: Option<usize>,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            inbound: 1024,
            per_ip: 16,
            limit_loopback: false,
            max_peers: None,
        }
    }
}

/// Why a connection was refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(String);

/// The behaviour that keeps the limits.
pub(crate) struct Limits {
    limits: ConnectionLimits,
    /// Each inbound connection, and its IP when it counts per address.
    inbound: HashMap<ConnectionId, Option<IpAddr>>,
    per_ip: HashMap<IpAddr, usize>,
}

fn ip_of(address: &Multiaddr) -> Option<IpAddr> {
    address.iter().find_map(|p| match p {
        Protocol::Ip4(a) => Some(IpAddr::V4(a)),
        Protocol::Ip6(a) => Some(IpAddr::V6(a)),
        _ => None,
    })
}

impl Limits {
    pub fn new(limits: ConnectionLimits) -> Limits {
        Limits {
            limits,
            inbound: HashMap::new(),
            per_ip: HashMap::new(),
        }
    }

    /// The address a connection from `remote` counts under, if any.
    fn counted_ip(&self, remote: &Multiaddr) -> Option<IpAddr> {
        ip_of(remote).filter(|ip| self.limits.limit_loopback || !ip.is_loopback())
    }

    fn check(&self, remote: &Multiaddr) -> Result<(), ConnectionDenied> {
        if self.inbound.len() >= self.limits.inbound {
            return Err(ConnectionDenied::new(Refused(format!(
                "{} connections from peers already",
                self.limits.inbound
            ))));
        }
        if let Some(ip) = self.counted_ip(remote) {
            if self.per_ip.get(&ip).copied().unwrap_or(0) >= self.limits.per_ip {
                return Err(ConnectionDenied::new(Refused(format!(
                    "{} connections from {ip} already",
                    self.limits.per_ip
                ))));
            }
        }
        Ok(())
    }

    #[cfg(test)]
    pub fn inbound(&self) -> usize {
        self.inbound.len()
    }
}

impl NetworkBehaviour for Limits {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_pending_inbound_connection(
        &mut self,
        _: ConnectionId,
        _: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<(), ConnectionDenied> {
        self.check(remote)
    }

    fn handle_established_inbound_connection(
        &mut self,
        id: ConnectionId,
        _: PeerId,
        _: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        // Checked again: connections pending together all passed the
        // first check.
        self.check(remote)?;
        let ip = self.counted_ip(remote);
        if let Some(ip) = ip {
            *self.per_ip.entry(ip).or_default() += 1;
        }
        self.inbound.insert(id, ip);
        Ok(dummy::ConnectionHandler)
    }

    fn handle_established_outbound_connection(
        &mut self,
        _: ConnectionId,
        _: PeerId,
        _: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        if let FromSwarm::ConnectionClosed(ConnectionClosed { connection_id, .. }) = event {
            if let Some(Some(ip)) = self.inbound.remove(&connection_id) {
                if let Some(n) = self.per_ip.get_mut(&ip) {
                    *n -= 1;
                    if *n == 0 {
                        self.per_ip.remove(&ip);
                    }
                }
            }
        }
    }

    fn on_connection_handler_event(
        &mut self,
        _: PeerId,
        _: ConnectionId,
        event: THandlerOutEvent<Self>,
    ) {
        match event {}
    }

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> Multiaddr {
        text.parse().unwrap()
    }

    #[test]
    fn connections_are_counted_in_all_and_per_address_loopback_aside() {
        let mut l = Limits::new(ConnectionLimits {
            inbound: 4,
            per_ip: 2,
            limit_loopback: false,
            max_peers: None,
        });
        let local = addr("/ip4/10.0.0.1/tcp/7733");
        let from = |ip: &str| addr(&format!("/ip4/{ip}/tcp/50000"));
        let peer = PeerId::random();
        let take = |l: &mut Limits, n: usize, remote: &Multiaddr| {
            l.handle_pending_inbound_connection(ConnectionId::new_unchecked(n), &local, remote)?;
            l.handle_established_inbound_connection(
                ConnectionId::new_unchecked(n),
                peer,
                &local,
                remote,
            )
            .map(|_| ())
        };
        assert!(take(&mut l, 1, &from("1.2.3.4")).is_ok());
        assert!(take(&mut l, 2, &from("1.2.3.4")).is_ok());
        assert!(
            take(&mut l, 3, &from("1.2.3.4")).is_err(),
            "a third from one address"
        );
        // Loopback is not limited per address, only in all.
        assert!(take(&mut l, 4, &from("127.0.0.1")).is_ok());
        assert!(take(&mut l, 5, &from("127.0.0.1")).is_ok());
        assert!(take(&mut l, 6, &from("5.6.7.8")).is_err(), "past the total");
        assert_eq!(l.inbound(), 4);
        // A closed connection gives its place back.
        l.on_swarm_event(FromSwarm::ConnectionClosed(ConnectionClosed {
            peer_id: peer,
            connection_id: ConnectionId::new_unchecked(1),
            endpoint: &libp2p::core::ConnectedPoint::Listener {
                local_addr: local.clone(),
                send_back_addr: from("1.2.3.4"),
            },
            cause: None,
            remaining_established: 0,
        }));
        assert!(take(&mut l, 7, &from("1.2.3.4")).is_ok());
        // Asked to, loopback counts per address too.
        let mut strict = Limits::new(ConnectionLimits {
            inbound: 10,
            per_ip: 1,
            limit_loopback: true,
            max_peers: None,
        });
        assert!(take(&mut strict, 1, &from("127.0.0.1")).is_ok());
        assert!(take(&mut strict, 2, &from("127.0.0.1")).is_err());
        // Memory addresses count toward the total only.
        assert!(take(&mut strict, 3, &addr("/memory/5")).is_ok());
        assert!(take(&mut strict, 4, &addr("/memory/5")).is_ok());
    }
}
