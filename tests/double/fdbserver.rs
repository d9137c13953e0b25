//! Test double of `fdbserver`: same command line, listens on its port, writes a trace
//! file, and (as the coordinator, the stateless process) keeps the database's
//! configuration for the fake fdbcli and mako.

mod common;
mod multitest;
mod simulation;

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let b = common::behaviour();
    if args.iter().any(|a| a == "--version" || a == "-v") {
        print!("{}", common::version_text("fdbserver", &b));
        return;
    }
    // Like getSharedMemoryMachineId (fdbserver/fdbserver.cpp), in every role: without
    // both localities fdbserver takes its machine id from
    // /dev/shm/fdbserver_shared_memory_id, a name any user of the host can plant. The
    // double refuses rather than touch the host's /dev/shm.
    if ["--locality-machineid", "--locality-zoneid"]
        .iter()
        .any(|name| common::flag(&args, &[name]).is_none())
    {
        eprintln!(
            "double: no --locality-machineid and --locality-zoneid: fdbserver would take \
             its machine id from /dev/shm/fdbserver_shared_memory_id"
        );
        std::process::exit(1);
    }
    if common::flag(&args, &["-r", "--role"]).as_deref() == Some("multitest") {
        multitest::main(&args, &b);
        return;
    }
    if common::flag(&args, &["-r", "--role"]).as_deref() == Some("simulation") {
        simulation::main(&args, &b);
        return;
    }
    let listen = common::flag(&args, &["-p", "--public_address"]).expect("-p ADDRESS");
    let role = common::flag(&args, &["-c", "--class"]).unwrap_or_else(|| "unset".into());
    let data = PathBuf::from(common::flag(&args, &["-d", "--datadir"]).expect("-d DIR"));
    let logdir = PathBuf::from(common::flag(&args, &["-L", "--logdir"]).expect("-L DIR"));
    let port = listen.rsplit(':').next().unwrap().to_string();
    let trace = logdir.join(format!("trace.127.0.0.1.{port}.1.double.0.1.xml"));
    // Like ServerKnobs.cpp: an unknown knob or a bad value is only a warning.
    let mut events = String::new();
    if b.stray_bytes {
        let _ = std::io::stderr().write_all(b"double: a stray byte \xff\n");
    }
    // Like FDB 7.2+ (apple/foundationdb PR 7765): `FDB_KNOB_<name>` from the environment
    // applies too, after the command line.
    let env_knobs: Vec<String> = std::env::vars()
        .filter_map(|(k, v)| {
            Some(format!(
                "{}={v}",
                k.strip_prefix("FDB_KNOB_")?.to_lowercase()
            ))
        })
        .collect();
    for (name, value) in args
        .iter()
        .filter_map(|a| a.strip_prefix("--knob_")?.split_once('='))
        .chain(env_knobs.iter().filter_map(|k| k.split_once('=')))
    {
        let valid = match name {
            "disable_posix_kernel_aio" => ["0", "1"].contains(&value),
            "rocksdb_use_direct_reads" | "rocksdb_use_direct_io_flush_compaction" => {
                ["true", "false"].contains(&value)
            }
            "page_cache_4k" => value.parse::<u64>().is_ok(),
            _ => {
                eprintln!("WARNING: Invalid knob option '{name}'");
                events += &format!("<Event Severity=\"30\" Type=\"InvalidKnobName\" Knob=\"{name}\" Value=\"{value}\" />\n");
                continue;
            }
        };
        if !valid {
            eprintln!("WARNING: Invalid value '{value}' for knob option '{name}'");
            events += &format!("<Event Severity=\"30\" Type=\"InvalidKnobValue\" Knob=\"{name}\" Value=\"{value}\" />\n");
        }
    }
    if role == "storage" && b.storage_slow_task_s > 0.0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        events += &format!(
            "<Event Severity=\"10\" Time=\"{now:.6}\" Type=\"SlowTask\" TaskID=\"8600\" Duration=\"{}\" Roles=\"SS\" />\n",
            b.storage_slow_task_s
        );
    }
    let mut trace_bytes = if b.stray_bytes {
        b"<Event Severity=\"10\" Type=\"Stray\" Byte=\"\xff\" />\n".to_vec()
    } else {
        Vec::new()
    };
    trace_bytes.extend(format!(
        "{events}<Event Severity=\"10\" Type=\"ProgramStart\" SourceVersion=\"{}\" CommandLine=\"fdbserver {}\" />\n",
        b.source_version,
        args.join(" ")
    ).into_bytes());
    let _ = std::fs::write(&trace, trace_bytes);
    if b.server_ignores_sigterm {
        // SAFETY: setting a signal to SIG_IGN has no handler to be unsafe about.
        unsafe {
            nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGTERM,
                nix::sys::signal::SigHandler::SigIgn,
            )
            .expect("ignore SIGTERM");
        }
    }
    let aio_off = args
        .iter()
        .any(|a| a == "--knob_disable_posix_kernel_aio=1");
    if b.refuse_tmpfs_without_aio && !aio_off && is_tmpfs(&data) {
        // The real server cannot open its files with O_DIRECT on tmpfs.
        eprintln!(
            "ERROR: Disk i/o operation failed (io_error): open {} with O_DIRECT: Invalid argument",
            data.display()
        );
        std::process::exit(1);
    }
    std::thread::sleep(Duration::from_millis(b.server_start_delay_ms));
    // `auto:PORT`: the address on the route to the coordinators, loopback here.
    let listen = match listen.strip_prefix("auto:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => listen,
    };
    // Like FDB 8.0's fdbserver when its port is taken (`address_in_use`, 2105): one line on
    // stderr, exit 1, before any trace file is written.
    let address_in_use = || {
        eprintln!(
            "Error initializing networking with public address {listen} and listen address \
             {listen} (Local address in use)"
        );
        std::process::exit(1)
    };
    if role == "storage"
        && b.address_in_use_starts
            .contains(&common::next_storage_start())
    {
        address_in_use();
    }
    let listener = TcpListener::bind(&listen).unwrap_or_else(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            address_in_use();
        }
        eprintln!("ERROR: cannot listen on {listen}: {e}");
        std::process::exit(1)
    });
    if let (Some(ms), "storage") = (b.storage_crash_after_ms, role.as_str()) {
        let trace = trace.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            eprintln!("double: storage server crashing on purpose");
            // Like flow's crash handler: a SevError event before dying.
            let mut events = std::fs::read_to_string(&trace).unwrap_or_default();
            events += "<Event Severity=\"40\" Type=\"Crash\" Signal=\"6\" Name=\"Aborted\" />\n";
            let _ = std::fs::write(&trace, events);
            std::process::abort();
        });
    }
    common::burn_cpu(b.cpu_pct.get(&role).copied().unwrap_or(0.0));
    if role == "test" {
        // A tester joins the cluster: the coordinator counts it for the multitest.
        let cluster = PathBuf::from(common::flag(&args, &["-C", "--cluster-file"]).expect("-C"));
        let listen = listen.clone();
        std::thread::spawn(move || {
            while common::ask(&cluster, &format!("tester-join {listen}")).as_deref() != Some("ok") {
                std::thread::sleep(Duration::from_millis(20));
            }
        });
    }
    // Testers by port; like the cluster controller's failure monitor, a tester that no
    // longer listens is gone (a cluster outlives its testers when the gate did not start
    // it).
    let testers: Arc<Mutex<Vec<Tester>>> = Arc::default();
    let linger = Duration::from_millis(b.tester_linger_ms);
    let configured: Arc<Mutex<Option<String>>> = Arc::default();
    let exit_on_configure = b.coordinator_exits_on_configure;
    let release = b.release.clone();
    // `cluster.generation`: 2 right after configure, as on real FDB.
    let generation = Arc::new(std::sync::atomic::AtomicU64::new(2));
    let recovering = Arc::new(std::sync::atomic::AtomicU64::new(
        b.recovering_status_answers,
    ));
    for stream in listener.incoming().flatten() {
        let release = release.clone();
        let generation = Arc::clone(&generation);
        let recovering = Arc::clone(&recovering);
        let configured = Arc::clone(&configured);
        let testers = Arc::clone(&testers);
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_err() {
                return;
            }
            let mut state = configured.lock().unwrap();
            let answer = match line.trim().split_once(' ') {
                Some(("configure", _)) if exit_on_configure => {
                    eprintln!("double: coordinator exiting during configure on purpose");
                    std::process::exit(1);
                }
                Some(("configure", engine)) => {
                    *state = Some(engine.to_string());
                    "ok".to_string()
                }
                _ if line.trim() == "release" => release.clone(),
                _ if line.trim() == "generation" => generation
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .to_string(),
                _ if line.trim() == "recovery_state" => {
                    use std::sync::atomic::Ordering::SeqCst;
                    let left = recovering.load(SeqCst);
                    recovering.store(left.saturating_sub(1), SeqCst);
                    if left > 0 {
                        "all_logs_recruited"
                    } else {
                        "fully_recovered"
                    }
                    .to_string()
                }
                _ if line.trim() == "freeze" => {
                    // Answered first, then the whole server stops, its port still open.
                    let _ = writeln!(&stream, "ok");
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
                    return;
                }
                _ if line.trim() == "recover" => {
                    generation.fetch_add(2, std::sync::atomic::Ordering::SeqCst);
                    "ok".to_string()
                }
                _ if line.trim() == "status" => {
                    state.clone().unwrap_or_else(|| "unconfigured".into())
                }
                Some(("tester-join", address)) => {
                    testers
                        .lock()
                        .unwrap()
                        .push((address.parse().expect("an address"), None));
                    "ok".to_string()
                }
                // The testers listed: their count, or their addresses, comma-separated.
                _ if matches!(line.trim(), "testers" | "tester-addresses") => {
                    let mut t = testers.lock().unwrap();
                    for (address, gone) in t.iter_mut() {
                        if gone.is_none() && std::net::TcpStream::connect(*address).is_err() {
                            *gone = Some(std::time::Instant::now());
                        }
                    }
                    t.retain(|(_, gone)| gone.is_none_or(|g| g.elapsed() < linger));
                    match line.trim() {
                        "testers" => t.len().to_string(),
                        _ => t
                            .iter()
                            .map(|(a, _)| a.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    }
                }
                _ => "unknown request".into(),
            };
            let _ = writeln!(&stream, "{answer}");
        });
    }
}

fn is_tmpfs(path: &std::path::Path) -> bool {
    nix::sys::statfs::statfs(path)
        .map(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
        .unwrap_or(false)
}

/// A tester that joined: its address, and since when it no longer listens.
type Tester = (std::net::SocketAddr, Option<std::time::Instant>);
