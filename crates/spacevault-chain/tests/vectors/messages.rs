//! What vaults gossip and sign besides blocks: receipts,
//! announcements, and the keys and blob addresses they name.

use crate::file::Vector;
use crate::{chain_id, holder, owner, producer, vault};
use spacevault_chain::codec::{Reader, Writer};
use spacevault_chain::keys::verify;
use spacevault_chain::types::context;
use spacevault_chain::{blob_address, Announce, Keypair, Receipt};

#[test]
fn the_keys() {
    // Every signature here is a function of these keys: a change of the
    // key derivation shows here first.
    let mut v = Vector::new(
        "keys",
        "Keypair::from_secret(&[n; 32]).public() for n = 3, 4, 6 and 7",
    );
    for n in [3u8, 4, 6, 7] {
        v = v.field(
            format!("public_{n}"),
            Keypair::from_secret(&[n; 32]).public(),
        );
    }
    v.check();
    for (n, key) in [(3, producer()), (4, owner()), (6, holder()), (7, vault())] {
        assert_eq!(key.secret(), [n; 32]);
    }
}

/// What a signed message is, computed here from docs/PROTOCOL.md rather
/// than by the code under test: `H(context, fields)`.
fn signed_message(context: &str, fields: &[&[u8]]) -> [u8; 32] {
    blake3::derive_key(context, &fields.concat())
}

#[test]
fn a_receipt() {
    let address = blob_address(b"spacevault vectors blob");
    let receipt = Receipt::sign(&holder(), &chain_id(), 3, &address);
    let mut w = Writer::new();
    receipt.encode_into(&mut w);
    let message = signed_message(
        context::RECEIPT,
        &[&chain_id(), &address, &receipt.holder, &3u64.to_le_bytes()],
    );
    let c = Vector::new(
        "receipt",
        "Receipt::sign by the key of secret [6; 32] on the chain_spec vector's chain\n\
         in holder era 3 for the blob \"spacevault vectors blob\": the blob's address,\n\
         the receipt's encoding, the message signed\n\
         (H(RECEIPT, chain_id | address | holder | era as u64 LE)) and the signature",
    )
    .field("address", address)
    .field("encoding", w.finish())
    .field("message", message)
    .field("signature", receipt.signature)
    .check();
    let committed = c.get("encoding");
    let mut r = Reader::new(committed);
    let decoded = Receipt::decode_from(&mut r).expect("the committed receipt decodes");
    r.finish().expect("and nothing follows it");
    assert_eq!(decoded, receipt);
    let mut w = Writer::new();
    decoded.encode_into(&mut w);
    assert_eq!(w.finish(), committed);
    assert!(decoded.verify(&chain_id()));
    assert!(verify(
        &decoded.holder,
        c.get("message"),
        &c.array::<64>("signature")
    ));
}

#[test]
fn an_announcement() {
    // /ip4/127.0.0.1/tcp/4001 and /ip4/10.0.0.2/tcp/4002 in multiaddr's
    // binary form.
    let addresses = vec![
        vec![4, 127, 0, 0, 1, 6, 0x0f, 0xa1],
        vec![4, 10, 0, 0, 2, 6, 0x0f, 0xa2],
    ];
    let time_ms = 1_700_000_005_000u64;
    let a = Announce::signed(&vault(), &chain_id(), time_ms, addresses.clone());
    let mut body = Writer::new();
    body.u64(time_ms).fixed(&a.vault).u32(2);
    for address in &addresses {
        body.bytes(address);
    }
    let message = signed_message(context::ANNOUNCE, &[&chain_id(), &body.finish()]);
    let c = Vector::new(
        "announce",
        "Announce::signed by the key of secret [7; 32] on the chain_spec vector's\n\
         chain at 1700000005000 ms, addresses /ip4/127.0.0.1/tcp/4001 and\n\
         /ip4/10.0.0.2/tcp/4002: its encoding, the message signed\n\
         (H(ANNOUNCE, chain_id | time_ms | vault | addresses)) and the signature",
    )
    .field("encoding", a.encode())
    .field("message", message)
    .field("signature", a.signature)
    .check();
    let committed = c.get("encoding");
    let decoded = Announce::decode(committed).expect("the committed announcement decodes");
    assert_eq!(decoded, a);
    assert_eq!(decoded.encode(), committed);
    assert!(decoded.signature_ok(&chain_id()));
    assert!(verify(
        &decoded.vault,
        c.get("message"),
        &c.array::<64>("signature")
    ));
}

#[test]
fn a_challenge_and_its_answer() {
    use spacevault_chain::audit::prove_with_last;
    use spacevault_chain::challenge::{
        answer_name, challenge_name, challenged_chunk, check_dispute, Answer, Challenge,
    };
    use spacevault_chain::RegisterTx;
    let blob: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let address = blob_address(&blob);
    let (accuser, accused) = (vault(), holder());
    let receipt = Receipt::sign(&accused, &chain_id(), 3, &address);
    let challenge = RegisterTx::signed(
        &accuser,
        &chain_id(),
        &challenge_name(&accused.public()),
        1,
        &Challenge { receipt }.encode(),
    );
    let chunk = challenged_chunk(
        &chain_id(),
        &accuser.public(),
        &accused.public(),
        (1, &challenge.signature),
        &address,
        blob.len() as u64,
    );
    let answer = RegisterTx::signed(
        &accused,
        &chain_id(),
        &answer_name(&accuser.public()),
        1,
        &Answer {
            challenge_version: 1,
            challenge_signature: challenge.signature,
            address,
            len: blob.len() as u64,
            slice: prove_with_last(&blob, chunk).unwrap(),
        }
        .encode(),
    );
    let c = Vector::new(
        "dispute",
        "the key of secret [7; 32] challenges the key of secret [6; 32] with its\n\
         receipt of holder era 3 for the 5,000-byte blob of bytes i mod 251, in\n\
         version 1 of register \"\\0challenge\" | accused; the accused answers in\n\
         version 1 of \"\\0answer\" | accuser: the chunk the challenge draws (u64\n\
         LE), the challenge's and the answer's RegisterTx encodings",
    )
    .field("chunk", chunk.to_le_bytes())
    .field("challenge", challenge.encode())
    .field("answer", answer.encode())
    .check();
    let limits = spacevault_chain::Limits {
        max_block_txs: 1,
        max_register_name_bytes: 64,
        max_register_value_bytes: 4096,
        max_block_evidence: 0,
    };
    for name in ["challenge", "answer"] {
        let tx = RegisterTx::decode(c.get(name), &limits).expect("the committed tx decodes");
        assert_eq!(tx.encode(), c.get(name));
        assert!(tx.signature_ok(&chain_id()));
        assert_eq!(check_dispute(&chain_id(), 1 << 20, &tx), Ok(()), "{name}");
    }
    assert_eq!(c.get("chunk"), chunk.to_le_bytes());
}
