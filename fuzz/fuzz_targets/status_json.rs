//! `fdbcli --exec 'status json'` output: any text gives a status or `None`, an
//! error or a client's view, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = fdb::status::parse_database_status(text);
    let _ = fdb::status::ClusterStatus::parse(text);
    let _ = fdb::status::ClientView::parse(text, text).describe();
});
