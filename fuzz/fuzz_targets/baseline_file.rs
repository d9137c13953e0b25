//! A recorded baseline file (`baselines/*.json`): parses or is refused, never panics;
//! an accepted one converts to the judge's samples.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xtask::{judge::samples::Sample, results::baseline::Baseline};

fuzz_target!(|text: &str| {
    if let Ok(b) = Baseline::parse(text, "fuzz.json") {
        assert!(b.trials.len() >= 2, "parse accepted fewer than 2 trials");
        assert_eq!(Sample::of_recorded(&b).len(), b.trials.len());
    }
});
