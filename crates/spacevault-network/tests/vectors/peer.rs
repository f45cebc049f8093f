//! A vault's libp2p peer id is its farmer key's: peers name each other by
//! it, and the node turns it back into the key that signs blocks. And the
//! binary form of the addresses vaults announce.

use crate::file::Vector;
use spacevault_chain::Keypair;
use spacevault_network::{farmer_key_of, peer_of, Address, Peer};

#[test]
fn the_peer_id_of_a_farmer_key() {
    let key = Keypair::from_secret(&[3; 32]).public();
    let peer = peer_of(&key).expect("a public key has a peer id");
    let c = Vector::new(
        "peer_id",
        "the peer id (its bytes: the identity multihash of the key's protobuf\n\
         encoding) of the public key of secret [3; 32]",
    )
    .field("peer_id", peer.to_bytes())
    .check();
    let decoded = Peer::from_bytes(c.get("peer_id")).expect("the committed peer id parses");
    assert_eq!(decoded, peer);
    assert_eq!(decoded.to_bytes(), c.get("peer_id"));
    assert_eq!(farmer_key_of(&decoded), Some(key));
}

#[test]
fn an_address_in_binary_form() {
    // Announcements carry their addresses in this form.
    let text = "/ip4/127.0.0.1/tcp/4001";
    let address: Address = text.parse().unwrap();
    let c = Vector::new(
        "address",
        "the multiaddr /ip4/127.0.0.1/tcp/4001 in its binary form, as an\n\
         announcement holds it",
    )
    .field("address", address.to_vec())
    .check();
    let decoded = Address::try_from(c.get("address").to_vec()).expect("the address parses");
    assert_eq!(decoded.to_string(), text);
    assert_eq!(decoded.to_vec(), c.get("address"));
}
