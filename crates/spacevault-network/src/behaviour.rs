//! The protocols a node runs (gossipsub, request-response, identify,
//! Kademlia, ping, a block list) with the settings the network relies on,
//! and the noise-and-yamux stack over either transport.

use crate::{links, wire, Config, MessageId, StartError, Topic, PING_INTERVAL};
use libp2p::gossipsub::{self, MessageAuthenticity};
use libp2p::identity::{self, PeerId};
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::NetworkBehaviour;
use libp2p::{allow_block_list, identify, kad, noise, ping, yamux, StreamProtocol};
use spacevault_meter::Op;
use std::sync::Arc;
use std::time::Duration;

#[derive(NetworkBehaviour)]
pub(crate) struct Behaviour {
    /// First: a connection past the limits is refused before any other
    /// protocol sees it.
    pub(crate) limits: crate::limits::Limits,
    pub(crate) gossipsub: gossipsub::Behaviour,
    pub(crate) requests: request_response::Behaviour<wire::WireCodec>,
    pub(crate) identify: identify::Behaviour,
    pub(crate) kad: kad::Behaviour<kad::store::MemoryStore>,
    pub(crate) ping: ping::Behaviour,
    pub(crate) blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
}

pub(crate) fn behaviour(key: &identity::Keypair, config: &Config) -> Result<Behaviour, StartError> {
    let err = |e: &dyn std::fmt::Display| StartError(e.to_string());
    let meter = config.meter.clone();
    let gossip_config = gossipsub::ConfigBuilder::default()
        .heartbeat_interval(config.heartbeat)
        // Messages carry no gossip signature: blocks are signed by their
        // producers, transactions by their owners, announcements by their
        // vaults, and slot outputs carry their own proofs. A gossip
        // signature on top would be checked on every copy received,
        // duplicates included: the most costly work of a large network.
        .validation_mode(gossipsub::ValidationMode::Anonymous)
        .validate_messages()
        .max_transmit_size(wire::MAX_MESSAGE_BYTES)
        // A vault's own messages go to its mesh, as relayed ones do: sent
        // to every connected peer, each message would cost every vault
        // work in proportion to the network's size.
        .flood_publish(false)
        // Four mesh peers, where gossipsub's default is six: every vault
        // validates every message, and each relays it to its mesh, so a
        // message costs the network about vaults x (mesh - 1) copies. At
        // 64 vaults on 2 cores under client load, six used 176 CPU-s for
        // what four did in 131 (three did no better than four).
        .mesh_n(4)
        .mesh_n_low(3)
        .mesh_n_high(6)
        .mesh_outbound_min(2)
        .gossip_lazy(4)
        // A mesh peer that receives a message tells its other mesh peers
        // not to send it (IDONTWANT) when it is larger than this: worth a
        // control message for a block, not for a 1 KiB transaction, which
        // costs hardly more to receive twice than the IDONTWANT does.
        // Measured at 64 vaults x 40 clients: 130 and 142 CPU-s a run at
        // 16 KiB, 146 and 168 at gossipsub's 1,000 bytes.
        .idontwant_message_size_threshold(16 * 1024)
        // Content-addressed ids: the same block from two peers is one
        // message.
        .message_id_fn(move |m: &gossipsub::Message| {
            let started = std::time::Instant::now();
            let digest = blake3::hash(&m.data);
            if let Some(meter) = &meter {
                let input = spacevault_meter::fingerprint_of(digest.as_bytes());
                meter.record(Op::HashMessageId, started, std::time::Instant::now(), input);
            }
            let id = MessageId::from(&digest.as_bytes()[..20]);
            id
        })
        .build()
        .map_err(|e| err(&e))?;
    let mut gossipsub = gossipsub::Behaviour::new(MessageAuthenticity::Anonymous, gossip_config)
        .map_err(|e| err(&e))?;
    for topic in Topic::ALL {
        let ident = topic.ident(&config.chain_id);
        gossipsub.subscribe(&ident).map_err(|e| err(&e))?;
    }
    let (params, thresholds) =
        crate::scoring::score(crate::scoring::topics(&config.chain_id), &config.limits);
    gossipsub
        .with_peer_score(params, thresholds)
        .map_err(|e| err(&e))?;
    let requests = request_response::Behaviour::new(
        [(wire::PROTOCOL, ProtocolSupport::Full)],
        request_response::Config::default().with_request_timeout(Duration::from_secs(20)),
    );
    let identify = identify::Behaviour::new(identify::Config::new(
        crate::identify_version(&config.chain_id),
        key.public(),
    ));
    let peer = key.public().to_peer_id();
    let mut kad_config = kad::Config::new(StreamProtocol::new("/spacevault/kad/1"));
    // The runner bootstraps when it wants more peers, never without any.
    kad_config.set_periodic_bootstrap_interval(None);
    let mut kad = kad::Behaviour::with_config(peer, kad::store::MemoryStore::new(peer), kad_config);
    kad.set_mode(Some(kad::Mode::Server));
    Ok(Behaviour {
        limits: crate::limits::Limits::new(config.limits),
        gossipsub,
        requests,
        identify,
        kad,
        ping: ping::Behaviour::new(ping::Config::new().with_interval(PING_INTERVAL)),
        blocked: Default::default(),
    })
}

/// A raw transport with noise and yamux on top, each connection held at
/// the links profile's distance from its peer where there is one.
pub(crate) fn secured<T>(
    raw: T,
    noise: noise::Config,
    local: PeerId,
    links: Option<Arc<links::LinkProfile>>,
) -> libp2p::core::transport::Boxed<(PeerId, libp2p::core::muxing::StreamMuxerBox)>
where
    T: libp2p::core::Transport + Send + Unpin + 'static,
    T::Output: futures::AsyncRead + futures::AsyncWrite + Unpin + Send + 'static,
    T::Error: Send + Sync + 'static,
    T::Dial: Send + 'static,
    T::ListenerUpgrade: Send + 'static,
{
    use libp2p::core::{upgrade::Version, Transport};
    raw.upgrade(Version::V1)
        .authenticate(noise)
        .multiplex(yamux::Config::default())
        .map(move |(peer, muxer), _| (peer, links::hold(links.as_deref(), &local, &peer, muxer)))
        .boxed()
}
