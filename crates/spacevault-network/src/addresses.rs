//! The addresses a vault listens on and dials: which a transport takes,
//! and whether a TCP port is free before the transport binds it.

use crate::{StartError, TransportKind};
use libp2p::Multiaddr;

/// Fails, saying why, when a TCP `address` cannot be listened on: the
/// transport's own listener shares a port with another that allows it (so
/// a second vault on one port would start, and half the dials to it reach
/// the other), and reports a failure to bind only as an event, later. A
/// socket bound here without port sharing finds both out at once.
pub(crate) fn check_free(address: &Multiaddr) -> Result<(), StartError> {
    use libp2p::multiaddr::Protocol;
    let mut ip = None;
    let mut port = None;
    for p in address.iter() {
        match p {
            Protocol::Ip4(a) => ip = Some(std::net::IpAddr::V4(a)),
            Protocol::Ip6(a) => ip = Some(std::net::IpAddr::V6(a)),
            Protocol::Tcp(p) => port = Some(p),
            _ => {}
        }
    }
    let (Some(ip), Some(port)) = (ip, port) else {
        return Ok(());
    };
    if port == 0 {
        return Ok(());
    }
    match std::net::TcpListener::bind((ip, port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(StartError(format!(
            "cannot listen on {address}: the port is in use (another vault, or another program, listens there)"
        ))),
        Err(e) => Err(StartError(format!("cannot listen on {address}: {e}"))),
    }
}

/// Whether `transport` can listen on or dial `address`: an IP address and
/// a TCP port, or a memory port, and at most a peer id after them.
pub(crate) fn usable(address: &Multiaddr, transport: TransportKind) -> bool {
    use libp2p::multiaddr::Protocol;
    let mut parts = address.iter();
    let fits = match (transport, parts.next()) {
        (TransportKind::Tcp, Some(Protocol::Ip4(_) | Protocol::Ip6(_))) => {
            matches!(parts.next(), Some(Protocol::Tcp(_)))
        }
        (TransportKind::Memory, Some(Protocol::Memory(_))) => true,
        _ => false,
    };
    fits && parts.all(|p| matches!(p, Protocol::P2p(_)))
}

/// The addresses a transport takes, for an error about one it does not.
pub(crate) fn supported(transport: TransportKind) -> &'static str {
    match transport {
        TransportKind::Tcp => {
            "the address is not one this vault can use: it takes /ip4/ADDRESS/tcp/PORT or /ip6/ADDRESS/tcp/PORT"
        }
        TransportKind::Memory => "the address is not one this vault can use: it takes /memory/N",
    }
}
