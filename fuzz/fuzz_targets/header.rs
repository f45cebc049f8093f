//! Any bytes given to the header parser: an error or a header, never a panic;
//! and a header that parses encodes back to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault::format::{Header, HEADER_SIZE};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(&h.encode()[..], &data[..HEADER_SIZE]);
    }
});
