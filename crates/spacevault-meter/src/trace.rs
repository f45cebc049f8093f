//! Crypto traces: every hash, signature and verification one vault
//! performed in a window of time, with when and on what, as the small
//! binary format (SVTRACE3, docs/PROFILING.md) that a vault serves and
//! `spacevault report` reads.

use crate::{Op, Span};

pub const MAGIC: &[u8; 8] = b"SVTRACE3";
/// The formats before audits were counted (operations 0 to 17) and
/// before the slot check was (0 to 16): the same records. Still read, so
/// that traces kept from them stay readable.
const MAGIC_V2: &[u8; 8] = b"SVTRACE2";
const MAGIC_V1: &[u8; 8] = b"SVTRACE1";
/// Header: magic, vault index (u32), cores (u32), window start and end
/// (u64 Unix ns each).
const HEADER_BYTES: usize = 8 + 4 + 4 + 8 + 8;
/// A record: operation (u8), start (u64 Unix ns), duration (u32 ns),
/// input fingerprint (u64).
const RECORD_BYTES: usize = 1 + 8 + 4 + 8;

/// One vault's operations in a window.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub vault: u32,
    /// The machine's cores, for the ideal minimum.
    pub cores: u32,
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub ops: Vec<TracedOp>,
}

/// One operation, in Unix nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedOp {
    pub op: Op,
    pub start_ns: u64,
    pub duration_ns: u32,
    pub input: u64,
}

impl TracedOp {
    pub fn new(op: Op, start_ns: u64, duration_ns: u32, input: u64) -> TracedOp {
        TracedOp {
            op,
            start_ns,
            duration_ns,
            input,
        }
    }
}

impl Trace {
    /// A vault's spans (relative to its meter's epoch) that fall in the
    /// window.
    pub fn of_spans(
        vault: u32,
        cores: u32,
        epoch_unix_ns: u64,
        window: (u64, u64),
        spans: &[Span],
    ) -> Trace {
        let ops = spans
            .iter()
            .map(|s| TracedOp {
                op: s.op,
                start_ns: epoch_unix_ns + s.start_ns,
                duration_ns: (s.end_ns.saturating_sub(s.start_ns)).min(u32::MAX as u64) as u32,
                input: s.input,
            })
            .filter(|o| (window.0..window.1).contains(&o.start_ns))
            .collect();
        Trace {
            vault,
            cores,
            window_start_ns: window.0,
            window_end_ns: window.1,
            ops,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + RECORD_BYTES * self.ops.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.vault.to_le_bytes());
        out.extend_from_slice(&self.cores.to_le_bytes());
        out.extend_from_slice(&self.window_start_ns.to_le_bytes());
        out.extend_from_slice(&self.window_end_ns.to_le_bytes());
        for o in &self.ops {
            out.push(o.op.index() as u8);
            out.extend_from_slice(&o.start_ns.to_le_bytes());
            out.extend_from_slice(&o.duration_ns.to_le_bytes());
            out.extend_from_slice(&o.input.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Trace, String> {
        let known_ops = match bytes.get(..8) {
            Some(m) if bytes.len() >= HEADER_BYTES && m == MAGIC => Op::ALL.len(),
            Some(m) if bytes.len() >= HEADER_BYTES && m == MAGIC_V2 => 18,
            Some(m) if bytes.len() >= HEADER_BYTES && m == MAGIC_V1 => 17,
            _ => {
                return Err(
                    "not a spacevault crypto trace (no SVTRACE3, SVTRACE2 or SVTRACE1 header)"
                        .into(),
                )
            }
        };
        let body = &bytes[HEADER_BYTES..];
        if !body.len().is_multiple_of(RECORD_BYTES) {
            return Err(format!(
                "cut short: {} bytes of records is not a whole number of {RECORD_BYTES}-byte records",
                body.len()
            ));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
        let (window_start_ns, window_end_ns) = (u64_at(bytes, 16), u64_at(bytes, 24));
        if window_end_ns < window_start_ns {
            return Err("the window ends before it starts".into());
        }
        let mut ops = Vec::with_capacity(body.len() / RECORD_BYTES);
        for (i, r) in body.chunks_exact(RECORD_BYTES).enumerate() {
            let op = *Op::ALL[..known_ops]
                .get(r[0] as usize)
                .ok_or_else(|| format!("record {i}: no operation {}", r[0]))?;
            ops.push(TracedOp {
                op,
                start_ns: u64_at(r, 1),
                duration_ns: u32::from_le_bytes(r[9..13].try_into().expect("4")),
                input: u64_at(r, 13),
            });
        }
        Ok(Trace {
            vault: u32_at(8),
            cores: u32_at(12),
            window_start_ns,
            window_end_ns,
            ops,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_round_trips_and_damage_is_named() {
        let t = Trace {
            vault: 3,
            cores: 2,
            window_start_ns: 1_000,
            window_end_ns: 2_000,
            ops: vec![
                TracedOp::new(Op::VerifyTx, 1_100, 50, 9),
                TracedOp::new(Op::HashData, 1_200, 7, 0),
            ],
        };
        let bytes = t.encode();
        assert_eq!(Trace::decode(&bytes).unwrap(), t);
        assert!(Trace::decode(&bytes[..bytes.len() - 1])
            .unwrap_err()
            .contains("cut short"));
        assert!(Trace::decode(b"hello").unwrap_err().contains("SVTRACE3"));
        let mut bad = bytes.clone();
        bad[HEADER_BYTES] = 200;
        assert!(Trace::decode(&bad)
            .unwrap_err()
            .contains("no operation 200"));
    }

    #[test]
    fn a_trace_of_the_format_before_reads_without_the_slot_check() {
        let t = Trace {
            vault: 1,
            cores: 2,
            window_start_ns: 10,
            window_end_ns: 20,
            ops: vec![TracedOp::new(Op::VerifyAnnouncement, 11, 1, 1)],
        };
        let mut old = t.encode();
        old[..8].copy_from_slice(MAGIC_V1);
        assert_eq!(Trace::decode(&old).unwrap(), t);
        // Operation 17, the slot check, came with SVTRACE2.
        old[HEADER_BYTES] = Op::VerifySlot.index() as u8;
        assert!(Trace::decode(&old).unwrap_err().contains("no operation 17"));
        let mut new = t.encode();
        new[HEADER_BYTES] = Op::VerifySlot.index() as u8;
        assert_eq!(Trace::decode(&new).unwrap().ops[0].op, Op::VerifySlot);
        // Operations 18 and 19, the audits', came with SVTRACE3.
        let mut v2 = t.encode();
        v2[..8].copy_from_slice(MAGIC_V2);
        v2[HEADER_BYTES] = Op::VerifySlot.index() as u8;
        assert_eq!(Trace::decode(&v2).unwrap().ops[0].op, Op::VerifySlot);
        v2[HEADER_BYTES] = Op::HashAuditProof.index() as u8;
        assert!(Trace::decode(&v2).unwrap_err().contains("no operation 18"));
        new[HEADER_BYTES] = Op::HashAuditCheck.index() as u8;
        assert_eq!(Trace::decode(&new).unwrap().ops[0].op, Op::HashAuditCheck);
    }

    #[test]
    fn spans_outside_the_window_are_left_out() {
        let spans = [
            Span {
                op: Op::SignTx,
                start_ns: 5,
                end_ns: 9,
                input: 1,
            },
            Span {
                op: Op::SignTx,
                start_ns: 500,
                end_ns: 900,
                input: 2,
            },
        ];
        // The meter's epoch is Unix time 1000: the spans are at 1005 and 1500.
        let t = Trace::of_spans(0, 2, 1_000, (1_100, 2_000), &spans);
        assert_eq!(t.ops, vec![TracedOp::new(Op::SignTx, 1_500, 400, 2)]);
    }

    #[test]
    fn an_empty_trace_and_a_window_of_one_instant_decode() {
        let t = Trace {
            vault: 1,
            cores: 1,
            window_start_ns: 5,
            window_end_ns: 5,
            ops: vec![],
        };
        let bytes = t.encode();
        assert_eq!(bytes.len(), HEADER_BYTES);
        assert_eq!(Trace::decode(&bytes).unwrap(), t);
        let mut backwards = t.clone();
        backwards.window_end_ns = 4;
        assert!(Trace::decode(&backwards.encode())
            .unwrap_err()
            .contains("ends before it starts"));
    }
}
