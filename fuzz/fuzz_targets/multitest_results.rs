//! `fdbserver -r multitest` stdout and trace XML, read for ReadWrite's metrics: parses
//! or is refused, never panics; what parses combines and reads as FDB's figures do.
#![no_main]

use fdb::multitest::{combine, parse_stdout, parse_trace, ReadWriteResult};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (stdout, trace) = text.split_once('\0').unwrap_or((text, ""));
    if let Ok(out) = parse_stdout(stdout) {
        for t in &out.tests {
            let _ = ReadWriteResult::from_metrics(&combine(&t.testers));
        }
        let _ = out.all_passed();
    }
    for t in parse_trace(trace) {
        let _ = ReadWriteResult::from_metrics(&t.metrics);
    }
});
