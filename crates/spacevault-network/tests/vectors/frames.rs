//! Each request and response kind: its message, and its frame as
//! `WireCodec` writes it on a stream (a u32 length, then the message).

use crate::file::Vector;
use futures::executor::block_on;
use futures::io::Cursor;
use libp2p::request_response::Codec;
use spacevault_chain::{blob_address, ChainSpec, Keypair, Receipt};
use spacevault_network::wire::{WireCodec, PROTOCOL};
use spacevault_network::{Request, Response};

fn request_frame(request: &Request) -> Vec<u8> {
    let mut io = Cursor::new(Vec::new());
    block_on(WireCodec.write_request(&PROTOCOL, &mut io, request.clone())).unwrap();
    io.into_inner()
}

fn response_frame(response: &Response) -> Vec<u8> {
    let mut io = Cursor::new(Vec::new());
    block_on(WireCodec.write_response(&PROTOCOL, &mut io, response.clone())).unwrap();
    io.into_inner()
}

/// Checks one request kind's vector, and reads its committed frame back.
fn check_request(name: &'static str, about: &str, request: Request) {
    let c = Vector::new(name, about)
        .field("message", request.encode())
        .field("frame", request_frame(&request))
        .check();
    let decoded = Request::decode(c.get("message")).expect("the committed request decodes");
    assert_eq!(decoded, request);
    assert_eq!(decoded.encode(), c.get("message"));
    let mut io = Cursor::new(c.get("frame").to_vec());
    let read = block_on(WireCodec.read_request(&PROTOCOL, &mut io)).expect("the frame reads");
    assert_eq!(read, request);
    assert_eq!(request_frame(&read), c.get("frame"));
}

/// Checks one response kind's vector, and reads its committed frame back.
fn check_response(name: &'static str, about: &str, response: Response) {
    let c = Vector::new(name, about)
        .field("message", response.encode())
        .field("frame", response_frame(&response))
        .check();
    let decoded = Response::decode(c.get("message")).expect("the committed response decodes");
    assert_eq!(decoded, response);
    assert_eq!(decoded.encode(), c.get("message"));
    let mut io = Cursor::new(c.get("frame").to_vec());
    let read = block_on(WireCodec.read_response(&PROTOCOL, &mut io)).expect("the frame reads");
    assert_eq!(read, response);
    assert_eq!(response_frame(&read), c.get("frame"));
}

#[test]
fn every_request_kind() {
    check_request("request_status", "Request::Status", Request::Status);
    check_request(
        "request_blocks",
        "Request::Blocks { from: 7, max: 256 }",
        Request::Blocks { from: 7, max: 256 },
    );
    check_request(
        "request_store",
        "Request::Store of the blob \"spacevault vectors blob\"",
        Request::Store {
            blob: b"spacevault vectors blob".to_vec(),
        },
    );
    check_request(
        "request_locate",
        "Request::Locate of the hashes [1; 32] and [2; 32], at most 256 blocks",
        Request::Locate {
            locator: vec![[1; 32], [2; 32]],
            max: 256,
        },
    );
    check_request(
        "request_slots",
        "Request::Slots { line: [0x5a; 32], from: 5, max: 256 }",
        Request::Slots {
            line: [0x5a; 32],
            from: 5,
            max: 256,
        },
    );
    check_request(
        "request_audit",
        "Request::Audit of chunk 0 of the blob \"spacevault vectors blob\"",
        Request::Audit {
            address: blob_address(b"spacevault vectors blob"),
            chunk: 0,
        },
    );
    check_request(
        "request_fetch",
        "Request::Fetch of the address of the blob \"spacevault vectors blob\"",
        Request::Fetch {
            address: blob_address(b"spacevault vectors blob"),
        },
    );
}

#[test]
fn every_response_kind() {
    check_response(
        "response_status",
        "Response::Status { height: 9, head: [0x5a; 32] }",
        Response::Status {
            height: 9,
            head: [0x5a; 32],
        },
    );
    // The blocks are opaque to the wire: their own vectors are the chain's.
    check_response(
        "response_slice",
        "Response::Slice proving chunk 0 of the blob \"spacevault vectors blob\"\n\
         (one chunk: the blob itself, no parent nodes)",
        Response::Slice(spacevault_chain::audit::prove(b"spacevault vectors blob", 0).unwrap()),
    );
    check_response(
        "response_blocks",
        "Response::Blocks of two byte strings: 01 02 03, and an empty one",
        Response::Blocks(vec![vec![1, 2, 3], vec![]]),
    );
    let chain = ChainSpec::new("vectors", 1_700_000_000_000, 1000).chain_id();
    let receipt = Receipt::sign(
        &Keypair::from_secret(&[6; 32]),
        &chain,
        3,
        &blob_address(b"spacevault vectors blob"),
    );
    check_response(
        "response_stored",
        "Response::Stored of the chain crate's receipt vector: the key of secret\n\
         [6; 32] on the chain of ChainSpec::new(\"vectors\", 1700000000000, 1000)\n\
         in holder era 3 for the blob \"spacevault vectors blob\"",
        Response::Stored(receipt),
    );
    check_response(
        "response_blob",
        "Response::Blob of the blob \"spacevault vectors blob\"",
        Response::Blob(b"spacevault vectors blob".to_vec()),
    );
    check_response(
        "response_not_found",
        "Response::NotFound",
        Response::NotFound,
    );
    check_response(
        "response_refused",
        "Response::Refused(\"blob_too_large\")",
        Response::Refused("blob_too_large".into()),
    );
    // Slot outputs are opaque to the wire: their own vector is the chain's.
    check_response(
        "response_slots",
        "Response::Slots of two byte strings: 04 05, and 06",
        Response::Slots(vec![vec![4, 5], vec![6]]),
    );
}
