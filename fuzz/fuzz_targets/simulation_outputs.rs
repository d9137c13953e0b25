//! What the simulation driver reads back: a cachegrind output file and the simulator's
//! stdout. Each parses or is refused, never panics; what parses attributes every
//! instruction to exactly one role.
#![no_main]

use fdb::simulation::{ir_by_role, parse_cachegrind, read_run};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (cachegrind, stdout) = text.split_once('\0').unwrap_or((text, ""));
    if let Ok(run) = parse_cachegrind(cachegrind) {
        let roles: u64 = ir_by_role(&run).values().sum();
        assert_eq!(roles, run.total_ir, "every instruction has one role");
    }
    let _ = read_run(stdout, "perfgate-sim-g18ui");
});
