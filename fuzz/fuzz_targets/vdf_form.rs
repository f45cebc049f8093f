//! Any bytes as a proof of time's forms (input, output, proof): no panic;
//! a form that decodes is reduced and encodes back to the same bytes, and
//! three that decode are checked as a proof without a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spacevault_vdf::{Group, FORM_BYTES};
use std::sync::OnceLock;

fn group() -> &'static Group {
    static GROUP: OnceLock<Group> = OnceLock::new();
    GROUP.get_or_init(|| Group::from_seed(b"fuzz", 1024))
}

fuzz_target!(|data: &[u8]| {
    let group = group();
    let mut forms = Vec::new();
    for bytes in data.chunks(FORM_BYTES).take(3) {
        if let Some(form) = group.deserialize(bytes) {
            assert!(form.is_reduced());
            assert_eq!(&group.serialize(&form)[..], bytes);
            forms.push(bytes);
        }
    }
    if let [x, y, proof] = forms[..] {
        let _ = group.verify(x, y, proof, 1 + data.len() as u64 % 64);
    }
});
