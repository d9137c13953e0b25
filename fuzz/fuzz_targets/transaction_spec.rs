//! mako's `-x` transaction spec (e.g. `g18ui`, `grv:1`), as given to `--transaction`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|spec: &str| {
    if let Ok(ops) = fdb::mako::transaction_ops(spec) {
        assert!(!ops.is_empty(), "an accepted spec has at least one operation");
    }
});
