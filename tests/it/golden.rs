//! Golden outputs of whole runs on the test double: the results dir's `summary.json`,
//! `junit.xml`, `results.tsv` and `report.html`, compared with the files in `golden/<case>/` once what
//! differs between two runs is masked. The double's TPS is a function of its behaviour
//! file and of how many runs its tree has had (`noise_factor`), and `--seed` fixes the
//! trial order, so every number left in these files is the gate's own doing.
//!
//! `UPDATE_EXPECT=1 cargo test -p perfgate-tests --test it golden` rewrites the files;
//! review their diff like code. The double's noise hashes with std's `DefaultHasher`,
//! whose algorithm std does not promise to keep: a toolchain that changes it changes every
//! noisy TPS here (and only those), which is a reason to regenerate, not a gate change.
//!
//! Masked, and why (nothing else is: TPS, deltas, intervals, p-values, verdicts, reasons
//! and notes are pinned as written):
//! - the sandbox's and the work dir's absolute paths (temp dirs) become `[SANDBOX]` and
//!   `[WORKDIR]`; what follows them (`[SANDBOX]/results/trials/02-...`) stays pinned;
//! - `workdir_peak_bytes`: the growth of the work dir's filesystem, which other tests'
//!   clusters share, sampled once a second;
//! - `host_probe_s` and `steal_pct`: the host-speed probe's seconds and the hypervisor's
//!   steal time, properties of the host at that moment;
//! - `results.tsv`'s phase durations (`cluster_start_s`, ...), wall-clock times;
//! - floats of `summary.json` are rounded to 10 significant digits: glibc picks its
//!   `exp`/`log` by CPU (with FMA or without), which may change a last bit;
//! - in `report.html`'s trial table, the phase durations (their names stay) and the work
//!   dir's peak; in its line on a recorded baseline, the recording host's class and start
//!   time. Its charts plot TPS and latency only, values of the double, so their SVG is
//!   pinned whole;
//! - loopback ports, chosen at run time (an existing cluster's coordinator).

use expect_test::expect_file;
use serde_json::{json, Value};

use crate::support::{assert_valid_junit, code, text, Sandbox};

/// [`crate::support::TINY`] with a 5 s warmup. The double's run of 6 scaled seconds takes
/// about 0.1 s, and the gate opens the storage server's CPU window at the end of the warmup
/// in real seconds, so that window never opens and the CPU columns read "not measured" on
/// any host, however loaded (measured, they would be a property of the host).
fn workload() -> Vec<&'static str> {
    let mut w = crate::support::TINY.to_vec();
    let i = w.iter().position(|f| *f == "--warmup-seconds").unwrap();
    w[i + 1] = "5";
    w
}

/// The quick profile's own client count: without `--procs` a host of fewer than 4 cores
/// scales it down and says so in a warning, which would make the files host-dependent.
const PROCS: [&str; 2] = ["--procs", "2"];

const MASK: &str = "[VOLATILE]";

#[test]
fn a_seeded_noisy_regression_writes_the_golden_results() {
    let Some(s) = run(
        json!({"tps": 1000.0, "noise_pct": 1.0}),
        json!({"tps": 950.0, "noise_pct": 1.0}),
        // Three trials per arm: the paired statistics have two degrees of freedom.
        &["--trials", "3"],
        1,
    ) else {
        return;
    };
    check(&s, "regression");
}

#[test]
fn a_truncated_mako_report_writes_the_golden_error_results() {
    let Some(s) = run(
        json!({}),
        json!({"mako_truncates_report": true}),
        &["--trials", "2"],
        2,
    ) else {
        return;
    };
    check(&s, "error");
}

#[test]
fn a_configure_that_hangs_writes_the_golden_timeout_results() {
    let Some(s) = run(
        json!({}),
        json!({"configure_hang": true}),
        &["--trials", "2", "--timeout-configure", "1"],
        2,
    ) else {
        return;
    };
    check(&s, "timeout");
}

/// FDB's ReadWrite through the multitest driver, the multitest tests' small workload. The
/// multitest driver has no warmup of the gate's and no client processes to scale, so
/// neither [`workload`]'s nor [`PROCS`]'s reason applies.
const MULTITEST: [&str; 6] = crate::bench::SMALL;

#[test]
fn a_seeded_multitest_regression_writes_the_golden_results() {
    let Some(s) = run_with(
        &MULTITEST,
        json!({"tps": 1000.0, "noise_pct": 1.0}),
        json!({"tps": 950.0, "noise_pct": 1.0}),
        &["--trials", "3"],
        1,
    ) else {
        return;
    };
    check(&s, "multitest");
}

#[test]
fn a_sweep_with_a_lower_knee_writes_the_golden_results() {
    let Some(s) = run_with(
        &MULTITEST,
        json!({"tps": 1000.0}),
        json!({"tps": 800.0}),
        &["--sweep", "400,600,900,1200,2000", "--trials", "1"],
        1,
    ) else {
        return;
    };
    check(&s, "sweep");
}

#[test]
fn a_run_against_a_recorded_baseline_with_a_control_writes_the_golden_results() {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() {
        eprintln!("golden outputs skipped: the work dir is not on tmpfs");
        return;
    }
    let release = s.tree("release", json!({"tps": 1000.0, "noise_pct": 1.0}));
    let day1 = s.dir.path().join("release-run");
    s.calibrate_with(&release, &day1, &[&workload()[..], &PROCS[..]].concat(), 3);
    let baselines = s.dir.path().join("baselines");
    let o = crate::support::gate_cmd()
        .args(["baseline", "record", "--from"])
        .arg(&day1)
        .args(["--name", "release", "--baselines-dir"])
        .arg(&baselines)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let candidate = s.tree(
        "candidate",
        json!({"tps": 940.0, "noise_pct": 1.0,
               "source_version": "0000000000000000000000000000000000000002"}),
    );
    let o = crate::support::gate_cmd()
        .args(["bench", "--against-recorded", "release", "--baselines-dir"])
        .arg(&baselines)
        .arg("--baseline-build")
        .arg(&release)
        .arg("--experiment-build")
        .arg(&candidate)
        .arg("--out")
        .arg(s.out())
        .args(workload())
        .args(PROCS)
        .args(["--seed", "3", "--trials", "3"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    check(&s, "recorded");
}

#[test]
fn a_run_on_an_existing_cluster_writes_the_golden_results() {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() {
        eprintln!("golden outputs skipped: the work dir is not on tmpfs");
        return;
    }
    let tree = s.tree("a", json!({"tps": 1000.0, "noise_pct": 1.0}));
    let (file, _server) = crate::bench::hand_started_cluster(&s, &tree);
    let o = crate::support::gate_cmd()
        .arg("bench")
        .arg("--experiment-build")
        .arg(&tree)
        .arg("--cluster-file")
        .arg(&file)
        .arg("--out")
        .arg(s.out())
        .args(MULTITEST)
        .args(["--seed", "3", "--trials", "2", "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    check(&s, "existing");
}

/// Runs the gate on a baseline tree of behaviour `a` and an experiment tree of behaviour
/// `b` with [`workload`], [`PROCS`], seed 3 and `extra`, and checks its exit status. `None`
/// on a host without a tmpfs work dir, where the plan itself differs (no AIO knob, a
/// warning about the disk).
fn run(a: Value, b: Value, extra: &[&str], exit: i32) -> Option<Sandbox> {
    run_with(&workload(), a, b, &[&PROCS[..], extra].concat(), exit)
}

/// [`run`] with the workload flags `workload` and no others of its own.
fn run_with(workload: &[&str], a: Value, b: Value, extra: &[&str], exit: i32) -> Option<Sandbox> {
    let s = Sandbox::new();
    if !s.workdir_is_tmpfs() {
        eprintln!("golden outputs skipped: the work dir is not on tmpfs");
        return None;
    }
    let (a, b) = s.ab(a, b);
    // With the host-speed probe, as by default: its columns are in the results.
    let o = s
        .probed_bench_command(&a, &b, &s.out(), workload, extra)
        .output()
        .unwrap();
    assert_eq!(code(&o), exit, "{}", text(&o));
    Some(s)
}

/// Each result file of `s`, masked, against `golden/<case>/<file>`.
fn check(s: &Sandbox, case: &str) {
    let read = |file: &str| {
        let path = s.out().join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        mask_paths(&text, s)
    };
    expect_file![format!("golden/{case}/summary.json")]
        .assert_eq(&summary_json(&read("summary.json")));
    expect_file![format!("golden/{case}/junit.xml")].assert_eq(&junit_xml(&read("junit.xml")));
    assert_valid_junit(&s.out().join("junit.xml"));
    expect_file![format!("golden/{case}/results.tsv")]
        .assert_eq(&results_tsv(&read("results.tsv")));
    expect_file![format!("golden/{case}/summary.md")].assert_eq(&read("summary.md"));
    expect_file![format!("golden/{case}/report.html")]
        .assert_eq(&report_html(&read("report.html")));
}

/// The sandbox's and the work dir's paths, as given and as resolved (a symlinked TMPDIR),
/// and loopback ports, chosen at run time.
fn mask_paths(text: &str, s: &Sandbox) -> String {
    let mut text = text.to_string();
    for (dir, name) in [(s.dir.path(), "[SANDBOX]"), (s.workdir.path(), "[WORKDIR]")] {
        for path in [dir.to_path_buf(), dir.canonicalize().unwrap()] {
            text = text.replace(path.to_str().unwrap(), name);
        }
    }
    mask_number_after(&text, "127.0.0.1:")
}

fn summary_json(text: &str) -> String {
    round_floats(&mask_number_after(text, "\"workdir_peak_bytes_max\": "))
}

fn junit_xml(text: &str) -> String {
    // Properties (`name="baseline_workdir_peak_bytes" value="0"`) and their copies as
    // `name=value` lines in the failure text and system-out.
    let text = mask_number_after(text, "_workdir_peak_bytes\" value=\"");
    let mut text = mask_number_after(&text, "_workdir_peak_bytes=");
    // When and where the run was, and how long its trials took.
    for attr in [" time=\"", " timestamp=\"", " hostname=\""] {
        text = mask_attribute(&text, attr);
    }
    text
}

/// `text` with the value of every attribute opening with `marker` (` name="`) replaced by
/// [`MASK`].
fn mask_attribute(text: &str, marker: &str) -> String {
    mask_after(text, marker, true, |tail| {
        tail.find('"').unwrap_or(tail.len())
    })
}

fn results_tsv(text: &str) -> String {
    mask_tsv_columns(
        text,
        &[
            "cluster_start_s",
            "configure_s",
            "available_s",
            "mako_build_s",
            "mako_run_s",
            "multitest_s",
            "simulation_s",
            "teardown_s",
            "workdir_peak_bytes",
            "host_probe_s",
            "steal_pct",
        ],
    )
}

/// The trial table's phase durations and work dir peaks; the rest as written.
fn report_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut columns: Option<(usize, usize)> = None;
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("<h2>Trials</h2><table><tr><th>") {
            let names: Vec<&str> = header
                .trim_end_matches("</th></tr>")
                .split("</th><th>")
                .collect();
            let at = |name: &str| {
                names
                    .iter()
                    .position(|n| *n == name)
                    .unwrap_or_else(|| panic!("no {name:?} column in {line}"))
            };
            columns = Some((at("work dir peak (MiB)"), at("phases (s)")));
            out += line;
        } else if line.starts_with("<p>Started ") {
            // The start time, host and command line of this run.
            out += &format!("<p>Started {MASK}</p>");
        } else if let Some(record) = line.strip_prefix("<tr><th>record</th><td>") {
            // The recording run's host class and start time, of this host and this day.
            let record = mask_after(record, "host '", true, |tail| {
                tail.find('\'').unwrap_or(tail.len())
            });
            let record = mask_after(&record, "', ", true, |tail| {
                tail.find(')').unwrap_or(tail.len())
            });
            out += &format!("<tr><th>record</th><td>{record}");
        } else if let (Some(columns), Some(row)) = (columns, line.strip_prefix("<tr><td>")) {
            out += &mask_trial_row(row, columns);
        } else {
            if line == "</table>" {
                columns = None;
            }
            out += line;
        }
        out.push('\n');
    }
    out
}

/// A row of the trial table (after its `<tr><td>`) with the cells of the `(peak, phases)`
/// columns masked; a phase keeps its name (`cluster-start 0.1, configure 0.2` becomes
/// `cluster-start [VOLATILE], configure [VOLATILE]`).
fn mask_trial_row(row: &str, (peak, phases): (usize, usize)) -> String {
    let cells: Vec<String> = row
        .trim_end_matches("</td></tr>")
        .split("</td><td>")
        .enumerate()
        .map(|(i, cell)| {
            if cell.is_empty() {
                String::new()
            } else if i == peak {
                MASK.to_string()
            } else if i == phases {
                let names = cell
                    .split(", ")
                    .map(|p| p.rsplit_once(' ').map_or(p, |(name, _)| name));
                names
                    .map(|name| format!("{name} {MASK}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                cell.to_string()
            }
        })
        .collect();
    format!("<tr><td>{}</td></tr>", cells.join("</td><td>"))
}

/// `text` with the number right after each `marker` replaced by [`MASK`].
fn mask_number_after(text: &str, marker: &str) -> String {
    mask_after(text, marker, false, |tail| {
        tail.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .unwrap_or(tail.len())
    })
}

/// `text` with the value after each `marker` replaced by [`MASK`]; `value_len` says how
/// long the value at the start of what follows the marker is, and an empty one is masked
/// too only when `empty_too`.
fn mask_after(
    text: &str,
    marker: &str,
    empty_too: bool,
    value_len: impl Fn(&str) -> usize,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        let (head, tail) = rest.split_at(i + marker.len());
        out.push_str(head);
        let len = value_len(tail);
        if len > 0 || empty_too {
            out.push_str(MASK);
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// Non-empty cells of the named columns of a TSV file with a header line.
fn mask_tsv_columns(text: &str, columns: &[&str]) -> String {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let masked: Vec<usize> = header
        .split('\t')
        .enumerate()
        .filter(|(_, name)| columns.contains(name))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        masked.len(),
        columns.len(),
        "columns {columns:?} in {header}"
    );
    let mut out = format!("{header}\n");
    for line in lines {
        let cells: Vec<&str> = line
            .split('\t')
            .enumerate()
            .map(|(i, c)| {
                if masked.contains(&i) && !c.is_empty() {
                    MASK
                } else {
                    c
                }
            })
            .collect();
        out += &cells.join("\t");
        out.push('\n');
    }
    out
}

/// Floats of pretty-printed JSON (one value a line) rounded to 10 significant digits;
/// integers and strings unchanged.
fn round_floats(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for line in json.lines() {
        let start = match line.find("\": ") {
            Some(i) => i + 3,
            None => line.len() - line.trim_start().len(),
        };
        let (head, value) = line.split_at(start);
        let (number, comma) = value.strip_suffix(',').map_or((value, ""), |v| (v, ","));
        match number.parse::<f64>() {
            Ok(x) if number.contains(['.', 'e', 'E']) => {
                let rounded: f64 = format!("{x:.9e}").parse().unwrap();
                out += &format!("{head}{rounded:?}{comma}");
            }
            _ => out += line,
        }
        out.push('\n');
    }
    out
}

#[test]
fn masks_keep_what_they_do_not_name() {
    assert_eq!(
        mask_number_after(
            "a=1 x_workdir_peak_bytes=4096 b=2.5",
            "_workdir_peak_bytes="
        ),
        "a=1 x_workdir_peak_bytes=[VOLATILE] b=2.5"
    );
    assert_eq!(
        mask_tsv_columns(
            "a\tworkdir_peak_bytes\tb\n1\t4096\t2\n3\t\t4\n",
            &["workdir_peak_bytes"]
        ),
        "a\tworkdir_peak_bytes\tb\n1\t[VOLATILE]\t2\n3\t\t4\n"
    );
    assert_eq!(
        round_floats("{\n  \"p\": 0.12882270991373912,\n  \"n\": 2,\n  \"t\": [\n    985.96\n  ],\n  \"r\": \"x: 1.5\"\n}\n"),
        "{\n  \"p\": 0.1288227099,\n  \"n\": 2,\n  \"t\": [\n    985.96\n  ],\n  \"r\": \"x: 1.5\"\n}\n"
    );
    let table = "<h2>Trials</h2><table><tr><th>#</th><th>work dir peak (MiB)</th><th>phases (s)</th><th>error</th></tr>\n\
                 <tr><td>1</td><td>0.5</td><td>cluster-start 0.1, teardown 2.0</td><td>x 1.5</td></tr>\n\
                 <tr><td>2</td><td></td><td>cluster-start 0.1</td><td></td></tr>\n\
                 </table>\n<tr><td>3</td><td>0.5</td><td>1.0</td></tr>\n";
    assert_eq!(
        report_html(table),
        "<h2>Trials</h2><table><tr><th>#</th><th>work dir peak (MiB)</th><th>phases (s)</th><th>error</th></tr>\n\
         <tr><td>1</td><td>[VOLATILE]</td><td>cluster-start [VOLATILE], teardown [VOLATILE]</td><td>x 1.5</td></tr>\n\
         <tr><td>2</td><td></td><td>cluster-start [VOLATILE]</td><td></td></tr>\n\
         </table>\n<tr><td>3</td><td>0.5</td><td>1.0</td></tr>\n"
    );
}
