//! Fixed vectors for the store's own records (docs/PROTOCOL.md, "Test
//! vectors"): a store outlives the process that wrote it, so a record's
//! bytes must read the same in every later build. The records' encoders
//! are the crate's own, hence a test inside it; the committed files are in
//! `tests/vectors/` with the other crates'.

#[path = "../../spacevault-chain/tests/vectors/file.rs"]
mod file;

use crate::records::{decode_undo, encode_undo, UndoRecord};
use crate::{register_key, BlockInfo, RegisterEntry, Status};
use file::Vector;
use spacevault_chain::types::Ranked;
use spacevault_chain::Target;

fn block_info(status: Status) -> BlockInfo {
    BlockInfo {
        height: 1,
        parent: [0x11; 32],
        slot: 3,
        rank: Ranked {
            distance: [0x03; 32],
            tiebreak: 77,
            plot_id: [0x44; 32],
            quality: 6,
        },
        weight: (1 << 70) + 5,
        child_target: Target(1 << 43),
        line: [0x5a; 32],
        opening: [0x0e; 32],
        status,
    }
}

#[test]
fn a_block_info_of_each_status() {
    let statuses = [
        ("stored", Status::Stored),
        ("applied", Status::Applied),
        ("invalid", Status::Invalid),
    ];
    let mut v = Vector::new(
        "block_info",
        "BlockInfo { height 1, parent [0x11; 32], slot 3, rank { distance [0x03; 32],\n\
         tiebreak 77, plot_id [0x44; 32], quality 6 }, weight 2^70 + 5, child_target\n\
         2^43, line [0x5a; 32], opening [0x0e; 32] } with each status",
    );
    for (name, status) in statuses {
        v = v.field(name, block_info(status).encode());
    }
    let c = v.check();
    for (name, status) in statuses {
        let decoded = BlockInfo::decode(c.get(name)).expect("the committed info decodes");
        assert_eq!(decoded, block_info(status));
        assert_eq!(decoded.encode(), c.get(name));
    }
}

/// The register of the entry and undo vectors: owner [0x66; 32], name "name".
fn key() -> Vec<u8> {
    register_key(&[0x66; 32], b"name")
}

fn entry() -> RegisterEntry {
    RegisterEntry {
        version: 2,
        value: b"value".to_vec(),
        signature: [0x55; 64],
        height: 9,
    }
}

#[test]
fn a_register_and_its_key() {
    let c = Vector::new(
        "register_entry",
        "the key of the register of owner [0x66; 32] named \"name\", and the entry\n\
         RegisterEntry { version 2, value \"value\", signature [0x55; 64], height 9 }",
    )
    .field("key", key())
    .field("entry", entry().encode())
    .check();
    let decoded = RegisterEntry::decode(c.get("entry")).expect("the committed entry decodes");
    assert_eq!(decoded, entry());
    assert_eq!(decoded.encode(), c.get("entry"));
}

#[test]
fn a_blocks_undo_records() {
    // The block wrote the register of `key()` over `entry()`, then created
    // the register "other".
    let records: Vec<UndoRecord> = vec![
        (key(), Some(entry().encode())),
        (register_key(&[0x66; 32], b"other"), None),
    ];
    let c = Vector::new(
        "undo",
        "the undo records of a block that wrote the register_entry vector's\n\
         register over its entry, then created the register of the same owner\n\
         named \"other\"; and the records of a block that wrote nothing",
    )
    .field("records", encode_undo(&records))
    .field("none", encode_undo(&[]))
    .check();
    // Records decode newest first, the order they are undone in.
    let mut decoded = decode_undo(c.get("records")).expect("the committed records decode");
    decoded.reverse();
    assert_eq!(decoded, records);
    assert_eq!(encode_undo(&decoded), c.get("records"));
    assert_eq!(
        decode_undo(c.get("none")).unwrap(),
        Vec::<UndoRecord>::new()
    );
}
