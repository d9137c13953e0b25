//! Test double of `mako --mode build|run`: same flags, real report formats (text on stdout
//! and `--json_report`, as in fixtures `mako-run.txt` and `mako.json`), TPS and timing
//! from the tree's behaviour file.

mod common;

use std::{fmt::Write as _, io::Write as _, path::PathBuf, time::Duration};

fn main() {
    // Paths keep their bytes (a results dir may have a name that is not UTF-8); the
    // other flags are read as text.
    let args_os: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let args: Vec<String> = args_os
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.first().map(String::as_str) == Some("--double-worker") {
        // A lingering worker: its command line names the cluster file, like real workers.
        std::thread::sleep(Duration::from_secs(3600));
        return;
    }
    let b = common::behaviour();
    let help = match b.release.as_str() {
        "7.1" => include_str!("../../fdb/testdata/releases/mako-help-7.1.txt"),
        "7.2" => include_str!("../../fdb/testdata/releases/mako-help-7.2.txt"),
        "7.3" => include_str!("../../fdb/testdata/releases/mako-help-7.3.txt"),
        "7.4" => include_str!("../../fdb/testdata/releases/mako-help-7.4.txt"),
        _ => include_str!("../../fdb/testdata/releases/mako-help-8.0.txt"),
    };
    // Like every release's mako: usage on stdout and exit 0, for --help and for an option
    // it does not know (getopt's message on stderr first).
    let unknown = [
        ("--warmup_seconds", (8, 0)),
        ("--async_xacts", (7, 2)),
        ("--stats_export_path", (7, 2)),
    ]
    .into_iter()
    .find(|(o, since)| b.release() < *since && args.iter().any(|a| a.starts_with(o)));
    if let Some((option, _)) = unknown {
        eprintln!("mako: unrecognized option '{option}'");
        print!("{help}");
        std::process::exit(0);
    }
    if args.iter().any(|a| a == "--help") {
        print!("{help}");
        std::process::exit(0);
    }
    // Like the real binary, which links libfdb_c.so without an rpath.
    let lib_ok = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .any(|d| !d.is_empty() && PathBuf::from(d).join("libfdb_c.so").is_file());
    if !lib_ok {
        eprintln!("mako: error while loading shared libraries: libfdb_c.so: cannot open shared object file: No such file or directory");
        std::process::exit(127);
    }
    let num = |names: &[&str], default: f64| -> f64 {
        common::flag(&args, names)
            .map(|v| v.parse().expect("numeric flag"))
            .unwrap_or(default)
    };
    let cluster = PathBuf::from(common::flag(&args, &["-c", "--cluster"]).expect("--cluster FILE"));
    match common::ask(&cluster, "status").as_deref() {
        Some("unconfigured") | None => {
            eprintln!("ERROR: database not available");
            std::process::exit(1);
        }
        Some(_) => {}
    }
    let mode = common::flag(&args, &["-m", "--mode"]).expect("--mode");
    let rows = num(&["-r", "--rows"], 100000.0);
    if mode == "build" {
        let xacts = (rows / 100.0).ceil();
        println!("====== Measured Duration  0.501 sec ======\n");
        let timeouts = if b.release() >= (7, 3) {
            "Total Timeouts:           0\n"
        } else {
            ""
        };
        println!("Total Xacts:         {xacts:>6}\nTotal Conflicts:          0\nTotal Errors:             0\n{timeouts}Overall TPS:            {}", (xacts / 0.501) as u64);
        finish(&b);
    }
    // Like the real mako: a sample directory and shared memory named after the main
    // pid, removed only on a clean exit (mako.cpp, TEMP_DATA_STORE and shm_open).
    let pid = std::process::id();
    let leftovers = [format!("/tmp/makoTemp{pid}"), format!("/dev/shm/mako{pid}")];
    // Whether nothing another user planted at the names can be used: /dev/shm and /tmp
    // are file systems of this mako's own, not the gate's ("private"), or the gate made
    // both names before mako ran, a file of 0600 and a directory of this user's
    // ("claimed"). Said in `<tree>/double-mako-claimed`, a line per mako.
    {
        use std::os::unix::fs::MetadataExt as _;
        let me = nix::unistd::geteuid().as_raw();
        let shm = std::fs::symlink_metadata(&leftovers[1]);
        let temp = std::fs::symlink_metadata(&leftovers[0]);
        let gates = format!("/proc/{}/root", nix::unistd::getppid());
        let own = |dir: &str| {
            let mine = std::fs::metadata(dir).map(|m| m.dev());
            let theirs = std::fs::metadata(format!("{gates}{dir}")).map(|m| m.dev());
            matches!((mine, theirs), (Ok(a), Ok(b)) if a != b)
        };
        let private = own("/dev/shm") && own("/tmp") && shm.is_err() && temp.is_err();
        let claimed = shm.is_ok_and(|m| m.is_file() && m.uid() == me && m.mode() & 0o777 == 0o600)
            && temp.is_ok_and(|m| m.is_dir() && m.uid() == me);
        let claimed = if private {
            "private"
        } else if claimed {
            "claimed"
        } else {
            "unclaimed"
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(common::tree_root().join("double-mako-claimed"))
        {
            use std::io::Write as _;
            let _ = writeln!(f, "{pid} {claimed}");
        }
    }
    let _ = std::fs::create_dir_all(&leftovers[0]);
    let _ = std::fs::write(&leftovers[1], "");
    if b.mako_forks_worker || b.mako_detached_worker {
        use std::os::unix::process::CommandExt as _;
        let mut worker = this_mako();
        worker.arg("--double-worker").arg(&cluster);
        if b.mako_detached_worker {
            worker.process_group(0);
        }
        let _ = worker.spawn();
    }
    if b.mako_setsid_worker {
        use std::os::unix::process::CommandExt as _;
        let mut worker = this_mako();
        worker.arg("--double-worker").arg(&cluster);
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            worker.pre_exec(|| nix::unistd::setsid().map(drop).map_err(Into::into));
        }
        let _ = worker.spawn();
    }
    if b.mako_escaped_worker {
        // `setsid -f` forks, the fork calls setsid and execs the worker, and setsid exits:
        // the worker is an orphan at once, with nothing of the run on its command line.
        let _ = std::process::Command::new("setsid")
            .arg("-f")
            .arg(format!("/proc/{}/exe", std::process::id()))
            .arg("--double-worker")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    // Written once the worker runs its own command line (spawn returns after its exec):
    // tests that wait for this file then see every process of the run.
    // Written whole and renamed into place: a test that sees the file sees its pids (a
    // plain write creates it empty first, and a loaded host showed that to a test).
    let pids = common::tree_root().join("double-mako-pids");
    let partial = pids.with_extension(format!("{pid}.tmp"));
    let _ = std::fs::write(
        &partial,
        format!(
            "{}{pid}\n",
            std::fs::read_to_string(&pids).unwrap_or_default()
        ),
    );
    let _ = std::fs::rename(&partial, &pids);
    common::burn_cpu(b.cpu_pct.get("client").copied().unwrap_or(0.0));
    let seconds = num(&["-s", "--seconds"], 30.0);
    let warmup = num(&["--warmup_seconds"], 0.0);
    if b.cluster_freezes_on_run {
        common::ask(&cluster, "freeze");
        std::thread::sleep(Duration::from_secs(3600));
    }
    if b.mako_run_hang {
        println!("         OPS        15533          860          860       847.53         7.99");
        std::thread::sleep(Duration::from_secs(3600));
    }
    if b.mako_run_waits_for_go {
        let go = common::tree_root().join("double-go");
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while !go.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let k = common::next_run();
    let errors = if b.mako_error_runs.contains(&k) {
        64
    } else {
        0
    };
    let stream = common::stream(&b);
    let moment = (b.host_speed_pct > 0.0).then(common::host_moment);
    let host = moment
        .as_ref()
        .map_or(1.0, |m| common::host_speed(b.host_speed_pct, m.number));
    if let Some(m) = &moment {
        // A line per run: the moment it measured in, for tests to pair runs by.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(common::tree_root().join("double-host-moments"))
        {
            let _ = writeln!(f, "{}", m.number);
        }
    }
    let tps = b.tps * common::noise_factor(b.noise_pct, k, stream) * host;
    // Latency has noise of its own (another stream), rounded like mako's microseconds.
    let p99_us = (b.p99_us * common::noise_factor(b.noise_pct, k, !stream)).round();
    let mut text = String::from(
        "                      GET       UPDATE       INSERT          TPS  Conflicts/s \n",
    );
    let mut samples = Vec::new();
    for i in 0..seconds as u64 {
        std::thread::sleep(Duration::from_secs_f64(b.time_scale));
        // Within a moment the host's speed also moves from second to second, by half as
        // much, the same for every run in the moment.
        let second = moment.as_ref().map_or(1.0, |m| {
            common::host_speed(b.host_speed_pct / 2.0, m.number * 1_000_000 + i + 1)
        });
        let tps = tps * second;
        let line = format!(
            "         OPS {:>12} {:>12} {:>12} {:>12.2} {:>12.2} ",
            (tps * 18.0) as u64,
            tps as u64,
            tps as u64,
            tps,
            1.0
        );
        println!("{line}");
        samples.push(format!(
            "{{\"GET\": {},\"tps\": {tps:.2},\"conflictsPerSec\": 1.00}}",
            (tps * 18.0) as u64
        ));
    }
    if let Some(m) = moment {
        m.end();
    }
    let (seconds, warmup) = match b.measured_window_s {
        Some(window) => (window, 0.0),
        None => (seconds, warmup),
    };
    // Before 8.0 there is no warmup: the whole run is measured.
    let v8 = b.release() >= (8, 0);
    let warmup = if v8 { warmup } else { 0.0 };
    let measured = seconds - warmup;
    let xacts = (tps * measured) as u64;
    let timeouts = b.release() >= (7, 3);
    let _ = write!(
        text,
        "\n====== {} Duration {measured:>6.3} sec ======\n\n{}Total Xacts:         {xacts}\n\
         Total Conflicts:         0\nTotal Errors:             {}\n{}Overall TPS:            {}\n",
        if v8 { "Measured" } else { "Total" },
        if v8 {
            format!("Run Duration:        {seconds:.3}\nWarmup Duration:      {warmup:.3}\n")
        } else {
            String::new()
        },
        b.text_errors.max(errors),
        if timeouts {
            format!("Total Timeouts:           {}\n", b.mako_timeouts)
        } else {
            String::new()
        },
        tps as u64
    );
    if b.stray_bytes {
        let _ = std::io::stdout().write_all(b"double: a stray byte \xff\n");
    }
    if b.mako_stderr_garbage {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "double: \u{fffe}\u{ffff} \x1b[31mred\x1b[0m");
        let _ = writeln!(err, "{}", "z".repeat(12 << 20));
        let _ = writeln!(err, "double: the last line");
    }
    println!("{text}");
    let json = format!(
        "{{\"makoArgs\": {{\"rows\": {rows},\"seconds\": {seconds},\"warmup_seconds\": {warmup}}},\"samples\": [{}],\
         \"results\": {{{}\"totalDuration\": {measured:.3},\
         \"totalXacts\": {xacts},\"totalConflicts\": 0,\"totalErrors\": {errors},{}\"overallTPS\": {}, \
         \"tps\": {tps:.2}, \"numSamples\": {{\"TRANSACTION\": 16}}, \"medianLatency\": {{\"TRANSACTION\": 2000}}, \
         \"p99Latency\": {{\"TRANSACTION\": {}}}}}}}",
        samples.join(","),
        if v8 {
            format!("\"runDuration\": {seconds:.3},\"warmupDuration\": {warmup:.3},")
        } else {
            String::new()
        },
        if timeouts {
            format!("\"totalTimeouts\": {},", b.mako_timeouts)
        } else {
            String::new()
        },
        tps as u64,
        p99_us
    );
    if let Some(path) = common::flag_os(&args_os, "--json_report") {
        if b.mako_truncates_report {
            std::fs::write(path, &json[..json.len() / 2]).expect("write --json_report");
            std::process::exit(0);
        }
        std::fs::write(path, json).expect("write --json_report");
    }
    if let Some(path) = common::flag_os(&args_os, "--stats_export_path") {
        std::fs::write(path, "{\"total_errors\":0}").expect("write --stats_export_path");
    }
    let _ = std::fs::remove_dir_all(&leftovers[0]);
    let _ = std::fs::remove_file(&leftovers[1]);
    finish(&b);
}

/// The real mako aborts in `_dl_fini` after its report; so does the double by default.
fn finish(b: &common::Behaviour) -> ! {
    if b.mako_abort_at_exit {
        std::process::abort();
    }
    std::process::exit(0)
}

/// This mako's program again, named as it was (`argv[0]`): started by its own
/// `/proc/<pid>/exe`, which names the file whatever the mount namespace (the gate's path
/// to it may cross a link into a /tmp that mako's namespace covers).
fn this_mako() -> std::process::Command {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new(format!("/proc/{}/exe", std::process::id()));
    cmd.arg0(std::env::args_os().next().unwrap());
    cmd
}
