//! fdbserver stderr and XML trace files, read for knob warnings and error events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use fdb::trace::{knob_problems, trace_errors};

fuzz_target!(|text: &str| {
    let (stderr, trace) = text.split_at(text.find('\n').unwrap_or(0));
    let _ = knob_problems(stderr, trace);
    let _ = trace_errors(text, 5);
});
