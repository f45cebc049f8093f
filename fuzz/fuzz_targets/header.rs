//! Any bytes given to the header parser: an error or a header, never a panic;
//! and a header that parses encodes back to the same bytes. The bytes are
//! parsed twice: as they are, and as a header's fields behind the right
//! magic, version, plot id and checksum, with the fields the layout derives
//! made right where the first byte says (see `derived_fields`), since a
//! fuzzer cannot forge a checksum and would otherwise never reach the
//! layout checks.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::format::{Header, HEADER_SIZE};
use spacevault::fuzzing::{derived_fields, sealed_header};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(&h.encode()[..], &data[..HEADER_SIZE]);
    }
    let Some((&mask, fields)) = data.split_first() else {
        return;
    };
    let sealed = sealed_header(&derived_fields(mask, fields));
    if let Ok(h) = Header::decode(&sealed) {
        assert_eq!(h.encode(), sealed);
        h.layout.validate().unwrap();
    }
});
