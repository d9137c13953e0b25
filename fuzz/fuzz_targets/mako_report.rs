//! mako's text report (stdout) and JSON report (`--json_report`) of one run, given as
//! one input: the text, a NUL byte, then the JSON. Any input parses to a report or an
//! error, and a parsed report's checks never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use fdb::mako::{last_sample_tps, Format, MakoReport, TextSummary};
use xtask::judge::drift::drift;

fuzz_target!(|data: &[u8]| {
    let (text, json) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let (Ok(text), Ok(json)) = (std::str::from_utf8(text), std::str::from_utf8(json)) else {
        return;
    };
    let _ = TextSummary::parse(text);
    let _ = last_sample_tps(text);
    if let Ok(r) = MakoReport::parse(text, "stdout", json, "report.json", Format::V8_0) {
        let _ = r.validity();
        let _ = drift(&r.samples_tps, r.warmup_duration_s).map(|d| d.unsteady());
    }
});
