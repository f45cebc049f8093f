//! A crypto trace (SVTRACE3, docs/PROFILING.md): a file `spacevault report`
//! reads long after the vault that served it is gone.

use crate::file::Vector;
use spacevault_meter::trace::{Trace, TracedOp};
use spacevault_meter::Op;

#[test]
fn a_trace_with_every_operation() {
    // One record of each operation, so that the numbers the file gives
    // them are pinned too.
    let ops = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, &op)| {
            let i = i as u64;
            TracedOp::new(
                op,
                1_700_000_000_000_000_000 + i * 1_000,
                100 + i as u32,
                i * 0x0101,
            )
        })
        .collect();
    let trace = Trace {
        vault: 3,
        cores: 2,
        window_start_ns: 1_700_000_000_000_000_000,
        window_end_ns: 1_700_000_001_000_000_000,
        ops,
    };
    let c = Vector::new(
        "trace",
        "a crypto trace of vault 3 on 2 cores for the window 1700000000 s to\n\
         1700000001 s (in ns), holding each operation of Op::ALL in order, the i-th\n\
         at window start + 1000 i ns, lasting 100 + i ns, input i * 0x0101",
    )
    .field("encoding", trace.encode())
    .check();
    let committed = c.get("encoding");
    let decoded = Trace::decode(committed).expect("the committed trace decodes");
    assert_eq!(decoded, trace);
    assert_eq!(decoded.encode(), committed);
}
