//! Test double of `fdbcli -C FILE --exec "..." --timeout N`: `configure new
//! single|double|triple <engine> [logs=N commit_proxies=N grv_proxies=N resolvers=N]` (the
//! mode and counts checked, not kept) and `status json`, answered by the fake coordinator.

mod common;

use std::{path::PathBuf, time::Duration};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let b = common::behaviour();
    if args.iter().any(|a| a == "--version" || a == "-v") {
        print!("{}", common::version_text("CLI", &b));
        return;
    }
    let cluster = PathBuf::from(common::flag(&args, &["-C", "--cluster-file"]).expect("-C FILE"));
    let exec = common::flag(&args, &["--exec"]).expect("--exec COMMAND");
    let timeout: u64 = common::flag(&args, &["--timeout"])
        .and_then(|t| t.parse().ok())
        .unwrap_or(5);
    // For tests: what was asked, appended to the tree's `double-fdbcli.log` (the real
    // fdbcli's stderr and stdout stay as they are).
    if let Ok(mut log) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(common::tree_root().join("double-fdbcli.log"))
    {
        use std::io::Write as _;
        let _ = writeln!(log, "{exec}");
    }
    let words: Vec<&str> = exec.split_whitespace().collect();
    match words.as_slice() {
        ["configure", "new", mode, engine, counts @ ..]
            if ["single", "double", "triple"].contains(mode)
                && counts.iter().all(|c| {
                    c.split_once('=').is_some_and(|(k, v)| {
                        ["logs", "commit_proxies", "grv_proxies", "resolvers"].contains(&k)
                            && v.parse::<u32>().is_ok_and(|n| n > 0)
                    })
                }) =>
        {
            if b.configure_hang {
                // Like a rocksdb build on tmpfs without the direct-I/O knobs: no answer.
                std::thread::sleep(Duration::from_secs(3600));
            }
            let known = match *engine {
                "ssd-redwood-1" => b.release() >= (7, 3),
                "ssd-redwood-1-experimental" => b.release() <= (7, 3),
                "ssd-sharded-rocksdb" => b.release() >= (7, 2),
                _ => true,
            };
            if !known {
                eprintln!(
                    "double fdbcli: FDB {} has no storage engine {engine}",
                    b.release
                );
                std::process::exit(1);
            }
            if b.configure_says_exists {
                eprintln!(
                    "ERROR: Database already exists! To change configuration, don't say `new'"
                );
                std::process::exit(1);
            }
            match common::ask(&cluster, &format!("configure {engine}")) {
                Some(_) => println!("Database created"),
                None => {
                    std::thread::sleep(Duration::from_secs(timeout));
                    println!("ERROR: Timed out");
                    std::process::exit(1);
                }
            }
        }
        ["status", "json"] => match common::ask(&cluster, "status") {
            // Servers of another release: as a real 7.3 fdbcli against an 8.0 cluster, it
            // reaches no coordinator and warns (fdb/testdata/fdbcli-incompatible-stderr.txt).
            Some(_) if common::ask(&cluster, "release").is_some_and(|r| r != b.release) => {
                eprint!("WARNING: One or more of the processes in the cluster is incompatible with this version of fdbcli.\n\n");
                print_unreachable(&cluster);
            }
            Some(engine) if engine != "unconfigured" => {
                // The fields `fdb::status::ClusterStatus` reads, as a real 8.0 answer has
                // them (fdb/testdata/status-json-available.json).
                // The servers' release, not this fdbcli's: they may differ.
                let release = common::ask(&cluster, "release").unwrap_or(b.release.clone());
                let (major, minor) = release.split_once('.').expect("a release like 8.0");
                // Testers are processes of the cluster too, class `test`.
                let testers: Vec<String> = common::ask(&cluster, "tester-addresses")
                    .unwrap_or_default()
                    .split(',')
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect();
                let generation = common::ask(&cluster, "generation").unwrap_or("2".into());
                let recovery =
                    common::ask(&cluster, "recovery_state").unwrap_or("fully_recovered".into());
                let testers: String = testers
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!(", \"t{i}\": {{\"address\": \"{a}\", \"class_type\": \"test\", \"version\": \"{major}.{minor}.0\"}}"))
                    .collect();
                println!(
                    "{{\"client\": {{\"database_status\": {{\"available\": true, \"healthy\": false}}}}, \
                     \"cluster\": {{\"protocol_version\": \"fdb00b0{major}{minor}000000\", \"generation\": {generation}, \
                     \"recovery_state\": {{\"name\": \"{recovery}\"}}, \
                     \"configuration\": {{\"storage_engine\": \"{engine}\", \"redundancy_mode\": \"single\", \"logs\": 1}}, \
                     \"processes\": {{\"p1\": {{\"address\": \"127.0.0.1:4500\", \"class_type\": \"unset\", \"version\": \"{major}.{minor}.0\"}}{testers}}}}}}}"
                )
            }
            // The real fdbcli prints nothing before the database exists (fixture
            // status-json-unconfigured.json).
            Some(_)
                if b.never_configured_answer_s > 0 && timeout >= b.never_configured_answer_s =>
            {
                print!(
                    "{}",
                    include_str!("../../fdb/testdata/status-json-never-configured-8.0.json")
                )
            }
            Some(_) => std::process::exit(1),
            // No coordinator answers: what the client saw, as a real one says it
            // (fdb/testdata/status-json-quorum-not-reachable-7.3-cli.json).
            None => print_unreachable(&cluster),
        },
        ["getrangekeys", "\"\"", "\\xff", "1"] => match common::ask(&cluster, "status") {
            Some(_) => {
                // As `fdbcli/fdbcli.cpp` prints a range's keys.
                println!("\nRange limited to 1 keys");
                for key in b.database_keys.iter().take(1) {
                    println!("`{key}'");
                }
                println!();
            }
            None => {
                std::thread::sleep(Duration::from_secs(timeout));
                println!("ERROR: Timed out");
                std::process::exit(1);
            }
        },
        _ => {
            eprintln!("double fdbcli: unsupported command {exec:?}");
            std::process::exit(1);
        }
    }
}

/// `status json` of a client that reached no coordinator, as a real one prints it
/// (fdb/testdata/status-json-quorum-not-reachable-7.3-cli.json).
fn print_unreachable(cluster: &std::path::Path) {
    let address = common::coordinator(cluster).unwrap_or_default();
    println!(
        "{{\"client\": {{\"coordinators\": {{\"coordinators\": [{{\"address\": \"{address}\", \"reachable\": false}}], \"quorum_reachable\": false}}, \
         \"database_status\": {{\"available\": false, \"healthy\": false}}, \
         \"messages\": [{{\"description\": \"Unable to reach a quorum of coordinators.\", \"name\": \"quorum_not_reachable\"}}]}}, \
         \"cluster\": {{\"layers\": {{\"_valid\": false}}}}}}"
    );
}
