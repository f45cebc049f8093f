//! Committed test vectors: each is a file `tests/vectors/<name>.hex`,
//! written once from the code and compared with the code ever after, so
//! that a change to an encoder and its decoder together, which every round
//! trip passes, still fails here.
//!
//! A file holds comment lines (`#`, the inputs), then fields: a line
//! `name:`, then the field's bytes in hex, 32 bytes a line. A format that
//! people read and write (a chain spec's JSON) is a text vector instead,
//! committed as it is and compared whole.
//!
//! `SPACEVAULT_WRITE_VECTORS=1` writes the files from the code instead of
//! comparing: for a new vector, or for a format whose version number has
//! just changed, never to make a failing vector pass. It is opt-in so that
//! no test run can rewrite what it is meant to compare against.
//!
//! Every crate's vectors use this one file, included by its path: test
//! targets of different crates cannot share a module without a crate of
//! their own. Paths are the including crate's (`CARGO_MANIFEST_DIR` is
//! read where the file is compiled).

// Each crate's vectors use only part of this file.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The variable that turns comparing into writing.
const WRITE: &str = "SPACEVAULT_WRITE_VECTORS";

/// One vector: its file name, what its inputs are, and its fields as the
/// code computes them now.
pub struct Vector {
    name: &'static str,
    about: String,
    fields: Vec<(String, Vec<u8>)>,
}

/// The fields as committed, for the decoding half of a test.
pub struct Committed {
    name: &'static str,
    fields: Vec<(String, Vec<u8>)>,
}

impl Vector {
    /// `about` names the inputs, one comment line each.
    pub fn new(name: &'static str, about: &str) -> Vector {
        Vector {
            name,
            about: about.to_string(),
            fields: Vec::new(),
        }
    }

    pub fn field(mut self, name: impl Into<String>, bytes: impl AsRef<[u8]>) -> Vector {
        self.fields.push((name.into(), bytes.as_ref().to_vec()));
        self
    }

    /// Asserts that every field equals the committed bytes exactly (or
    /// writes them, under `SPACEVAULT_WRITE_VECTORS=1`), and returns the
    /// committed fields.
    #[track_caller]
    pub fn check(self) -> Committed {
        let path = dir().join(format!("{}.hex", self.name));
        let text = read_or_write(&path, &self.render());
        let committed = Committed {
            name: self.name,
            fields: parse(&text, &path),
        };
        assert_eq!(
            field_names(&committed.fields),
            field_names(&self.fields),
            "vector {}: the committed fields are not the ones the test computes",
            self.name
        );
        for (field, bytes) in &self.fields {
            let want = committed.get(field);
            if want != bytes.as_slice() {
                panic!(
                    "vector {}, field {field}: the code no longer gives the committed bytes\n{}\n{BUMP}",
                    self.name,
                    first_difference(want, bytes)
                );
            }
        }
        committed
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for line in self.about.lines() {
            match line {
                "" => out.push_str("#\n"),
                line => out.push_str(&format!("# {line}\n")),
            }
        }
        for (name, bytes) in &self.fields {
            out.push_str(&format!("\n{name}:\n"));
            for chunk in bytes.chunks(32) {
                out.push_str(&hex::encode(chunk));
                out.push('\n');
            }
        }
        out
    }
}

/// A vector that is text, compared whole: for a file people read and
/// write, such as a chain spec. Returns the committed text.
#[track_caller]
pub fn check_text(name: &str, text: &str) -> String {
    let committed = read_or_write(&dir().join(name), text);
    if committed != text {
        panic!(
            "vector {name}: the code no longer gives the committed text\n{}\n{BUMP}",
            first_difference(committed.as_bytes(), text.as_bytes())
        );
    }
    committed
}

/// What a failing vector asks of whoever changed the format.
const BUMP: &str = "A format that changes needs its version number bumped (docs/FORMAT.md, \
                    docs/PROTOCOL.md: Test vectors) before its vectors are written again.";

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

/// The committed file, first written from `text` under
/// `SPACEVAULT_WRITE_VECTORS=1`.
#[track_caller]
fn read_or_write(path: &Path, text: &str) -> String {
    if std::env::var(WRITE).is_ok_and(|v| v == "1") {
        std::fs::write(path, text).expect("the vector file is writable");
        eprintln!("wrote {}", path.display());
    }
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no committed vector {} ({e}): a new vector is written once with {WRITE}=1",
            path.display()
        )
    })
}

impl Committed {
    pub fn get(&self, field: &str) -> &[u8] {
        self.fields
            .iter()
            .find(|(n, _)| n == field)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_else(|| panic!("vector {} has no field {field}", self.name))
    }

    pub fn array<const N: usize>(&self, field: &str) -> [u8; N] {
        self.get(field)
            .try_into()
            .unwrap_or_else(|_| panic!("vector {}, field {field}: not {N} bytes", self.name))
    }
}

fn field_names(fields: &[(String, Vec<u8>)]) -> Vec<&str> {
    fields.iter().map(|(n, _)| n.as_str()).collect()
}

fn parse(text: &str, path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_suffix(':') {
            fields.push((name.to_string(), Vec::new()));
            continue;
        }
        let bytes = hex::decode(line)
            .unwrap_or_else(|e| panic!("{}:{}: not hex: {e}", path.display(), i + 1));
        match fields.last_mut() {
            Some((_, field)) => field.extend_from_slice(&bytes),
            None => panic!("{}:{}: bytes before any field", path.display(), i + 1),
        }
    }
    fields
}

/// Where two byte strings part, with the bytes around it, in words.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let window =
        |b: &[u8]| hex::encode(&b[at.saturating_sub(8).min(b.len())..(at + 8).min(b.len())]);
    format!(
        "committed {} bytes, computed {}; first difference at byte {at}: \
         committed ..{}.., computed ..{}..",
        want.len(),
        got.len(),
        window(want),
        window(got)
    )
}
