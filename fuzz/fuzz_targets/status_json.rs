//! `fdbcli --exec 'status json'` output: any text gives a status or `None`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = fdb::status::parse_database_status(text);
});
