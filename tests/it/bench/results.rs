//! The results dir and the terminal: every file a run writes, `--json`/`--quiet`,
//! `report.html` in a browser, and output paths refused before any trial.

use std::os::unix::fs::FileTypeExt as _;

use serde_json::json;

use crate::support::{code, read_junit, text, Sandbox};

#[test]
fn equal_arms_are_measured_and_every_result_file_is_written() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({"tps": 1000.0}), json!({"tps": 995.0}));
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary = s.read_json("summary.json");
    let j = &summary["judgements"][0];
    assert_eq!(j["verdict"], "MEASURED", "{summary}");
    assert_eq!(j["engine"], "redwood");
    // 1000 and 995 TPS give or take the double's 0.05% noise per trial.
    let tps = j["baseline"]["tps"].as_array().unwrap();
    assert_eq!(tps.len(), 2, "{j}");
    assert!(
        tps.iter()
            .all(|t| (t.as_f64().unwrap() - 1000.0).abs() <= 0.5),
        "{j}"
    );
    assert!(
        (j["mean_change_pct"].as_f64().unwrap() + 0.5).abs() < 0.1,
        "{j}"
    );

    // Trials ran A B B A, each with a fresh cluster and the tmpfs knob.
    let trials = s.read_trials();
    let arms: Vec<&str> = trials
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["arm"].as_str().unwrap())
        .collect();
    assert_eq!(arms, ["baseline", "experiment", "experiment", "baseline"]);
    let t0 = &trials[0];
    assert_eq!(t0["outcome"], "measured");
    let phases = crate::support::phase_names(t0);
    assert_eq!(
        phases,
        [
            "cluster-start",
            "configure",
            "available",
            "mako-build",
            "mako-run",
            "teardown"
        ]
    );
    if s.workdir_is_tmpfs() {
        assert_eq!(t0["knobs"][0]["name"], "disable_posix_kernel_aio");
        assert_eq!(t0["knobs"][0]["source"], "auto");
    }
    // Artifacts were harvested off the work dir, and the work dir was wiped.
    let art = s.out().join(t0["artifacts"].as_str().unwrap());
    for f in [
        "mako-run.txt",
        "mako.json",
        "mako-sketch.json",
        "mako-build.txt",
        "fdbcli-configure.txt",
        "status.json",
    ] {
        assert!(art.join(f).is_file(), "{f} missing in {}", art.display());
    }
    let traces = std::fs::read_dir(&art)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("storage-"));
    let storage_dir = traces.map(|e| e.path()).next().expect("storage trace dir");
    assert!(std::fs::read_dir(storage_dir).unwrap().count() > 0);
    assert_eq!(
        std::fs::read_dir(s.workdir.path()).unwrap().count(),
        0,
        "work dir not wiped"
    );

    let meta = s.read_json("meta.json");
    assert_eq!(
        meta["plan"]["baseline"]["version"]["source_version"],
        "0000000000000000000000000000000000000001"
    );
    assert_eq!(meta["plan"]["workdir"]["tmpfs"], s.workdir_is_tmpfs());
    // The gate's own commit, as the checkout it was built from has it.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = meta["gate_commit"].as_str().unwrap();
    match head {
        Some(head) => assert!(commit.starts_with(&head), "{commit} vs {head}"),
        None => assert_eq!(commit, "unknown"),
    }
    let tsv = std::fs::read_to_string(s.out().join("results.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 5, "{tsv}");
    let junit = std::fs::read_to_string(s.out().join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testcase name="tps" classname="perfgate.redwood" time=""#),
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    let parsed = read_junit(&s.out().join("junit.xml"));
    assert_eq!(parsed[0]["name"], "redwood");
    assert_eq!(parsed[0]["cases"][0]["classname"], "perfgate.redwood");
    assert_eq!(parsed[0]["cases"][0]["results"], json!([]));
    assert_eq!(parsed[0]["cases"][0]["properties"]["verdict"], "MEASURED");
    // run.log says where the run is, and how long the rest takes.
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(log.contains("trial 1 of 4: redwood "), "{log}");
    assert!(
        log.contains("trial 4 of 4: redwood baseline #2, about "),
        "{log}"
    );
    assert!(log.contains(" s left"), "{log}");
    s.assert_no_leftover_processes();
}

#[test]
fn a_non_empty_results_dir_or_unwritable_junit_path_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::create_dir_all(s.out()).unwrap();
    std::fs::write(s.out().join("stale.txt"), "earlier run").unwrap();
    let junit = s.dir.path().join("usage-junit.xml");
    let o = s.bench(&a, &b, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not an empty directory"));
    // CI still gets a JUnit file saying why nothing ran.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<error message="ERROR: "#) && xml.contains("is not an empty directory"),
        "{xml}"
    );
    std::fs::remove_file(s.out().join("stale.txt")).unwrap();
    // A work dir inside the (empty) results dir: refused naming both, nothing created
    // (before: "the results dir is not empty", and `wd` left behind).
    let wd = s.out().join("wd");
    let o = s.bench(&a, &b, &["--workdir", wd.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("/wd is inside --out"), "{}", text(&o));
    assert!(!wd.exists());
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = s.bench(
        &a,
        &b,
        &["--junit", file.join("junit.xml").to_str().unwrap()],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a-file: "),
        "{}",
        text(&o)
    );
    assert!(!s.out().join("meta.json").exists(), "no trial may run");
    // The JUnit file may go inside the results dir, which does not exist yet, also in a
    // subdirectory; and a run that failed at once (its error JUnit file the only thing
    // there) does not block the corrected rerun.
    std::fs::remove_dir_all(s.out()).unwrap();
    let junit = s.out().join("ci/junit.xml");
    let j = junit.to_str().unwrap();
    let o = s.bench(&a, &b, &["--junit", j, "--procs", "0"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains(r#"<error message="ERROR: "#));
    let o = s.bench(&a, &b, &["--junit", j]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    // The suite names the JUnit file, so that mikepenz/action-junit-report puts its
    // annotations there, not on a source file named like the engine; this one is inside
    // the results dir, so relative to it, as every path there.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testcase") && xml.contains(r#" file="ci/junit.xml""#),
        "{xml}"
    );
}

#[test]
fn copies_may_go_inside_the_results_dir_but_never_among_the_trials_files() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // A copy onto a trial's own file would replace its mako report with JUnit XML.
    let trial_file = s.out().join("trials/01-redwood-experiment-1/mako.json");
    for flag in ["--junit", "--export-markdown"] {
        let o = s.bench(&a, &b, &[flag, trial_file.to_str().unwrap()]);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains(&format!("{flag} ")) && text(&o).contains("inside the run's trials/"),
            "{}",
            text(&o)
        );
        assert!(!s.out().join("meta.json").exists(), "no trial may run");
    }
    // A Markdown copy in a subdirectory of a new --out: its directory is made only after
    // the check that the results dir is empty, or the run would refuse its own copy.
    let _ = std::fs::remove_dir_all(s.out());
    let md = s.out().join("ci/summary-copy.md");
    let o = s.bench(&a, &b, &["--export-markdown", md.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let copy = std::fs::read_to_string(&md).unwrap();
    assert!(copy.contains("MEASURED"), "{copy}");
    // A run stopped before its first trial, by a bad value or a flag clap does not know,
    // still tells the job summary why (appended, as every step's summary is).
    let summary = s.dir.path().join("job-summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    for (extra, said) in [
        ("--max-regression=-1", "--max-regression"),
        ("--no-such-flag", "unexpected argument '--no-such-flag'"),
    ] {
        let _ = std::fs::remove_dir_all(s.out());
        let o = s.bench(
            &a,
            &b,
            &["--export-markdown", summary.to_str().unwrap(), extra],
        );
        assert_eq!(code(&o), 64, "{}", text(&o));
        let md = std::fs::read_to_string(&summary).unwrap();
        assert!(md.starts_with("earlier step\n"), "{md}");
        assert!(
            md.contains("## perfgate: ERROR (exit 64)") && md.contains(said),
            "{md}"
        );
    }
}

#[test]
fn junit_at_a_link_or_a_fifo_is_refused_and_a_non_utf8_out_dir_works() {
    use std::os::unix::ffi::OsStrExt as _;
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // A FIFO stands in for a device node (`--junit /dev/stdout` as root); a symlink may
    // have been planted in a shared dir. Both stay as they were.
    let fifo = s.dir.path().join("fifo.xml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let victim = s.dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = s.dir.path().join("link.xml");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (path, kind) in [(&fifo, "a FIFO"), (&link, "a symlink")] {
        let o = s.bench(&a, &b, &["--junit", path.to_str().unwrap()]);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(kind), "{}", text(&o));
        assert!(!s.out().join("meta.json").exists(), "no trial may run");
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    // --junit naming one of the run's own files would overwrite it with JUnit XML, and
    // --export-markdown would append to it (junit.xml and summary.json would no longer
    // parse).
    for (flag, own) in [
        ("--junit", "meta.json"),
        ("--junit", "trials.json"),
        ("--junit", "summary.md"),
        ("--export-markdown", "junit.xml"),
        ("--export-markdown", "summary.json"),
        ("--export-markdown", "summary.md"),
    ] {
        let path = s.out().join(own);
        let o = s.bench(&a, &b, &[flag, path.to_str().unwrap()]);
        assert_eq!(code(&o), 64, "{flag} {own}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("{flag} "))
                && text(&o).contains(&format!("is the run's own {own}")),
            "{}",
            text(&o)
        );
        assert!(!s.out().join("meta.json").exists(), "no trial may run");
    }
    // Paths are OS strings: a results dir and JUnit path that are not UTF-8 work.
    let odd = s.dir.path().join(std::ffi::OsStr::from_bytes(b"out-\xff"));
    let junit = odd.join(std::ffi::OsStr::from_bytes(b"junit-\xfe.xml"));
    let o = s
        .bench_command_out(&a, &b, &odd, &["--trials", "1"])
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<testcase"));
    let meta = std::fs::read_to_string(odd.join("meta.json")).unwrap();
    assert!(meta.contains("out-\u{fffd}"), "{meta}");
}

#[test]
fn json_prints_the_summary_for_scripts_and_quiet_keeps_the_terminal_to_warnings() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &["--trials", "2", "--json", "--quiet"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is the summary JSON");
    assert_eq!(summary, s.read_json("summary.json"));
    crate::support::assert_valid_summary(&summary);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("INFO"), "{stderr}");
    // run.log keeps everything.
    assert!(std::fs::read_to_string(s.out().join("run.log"))
        .unwrap()
        .contains("INFO"));
}

#[test]
fn report_html_is_self_contained_and_renders_in_a_real_browser() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"tps": 1000.0, "noise_pct": 0.3}),
        json!({"tps": 900.0, "noise_pct": 0.3}),
    );
    let o = s.bench(&a, &b, &["--trials", "3"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let page = s.out().join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg"), "charts are inlined");
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    );
    assert!(!html.contains("<script"), "no script, nothing fetched");
    assert!(
        html.contains("REGRESSION")
            && html.contains("Provenance")
            && html.contains("TPS per second")
    );
    // Headless Chromium (Debian's `chromium`, installed by ci/setup.sh) renders it.
    let dom = chromium(&s, &page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("Verdicts") && dom.contains("REGRESSION"),
        "{dom}"
    );
    // The heading and the page's title say the verdict, the metric that decided it and
    // its change with its interval (before: "REGRESSION (redwood tps REGRESSION; 1
    // metric(s) shown, not gating)").
    let h1 = element_text(&dom, "h1");
    let change = h1
        .strip_prefix("REGRESSION: redwood TPS ")
        .unwrap_or_else(|| panic!("{h1}"));
    let (c, interval) = change.split_once("% [").unwrap_or_else(|| panic!("{h1}"));
    let (lo, hi) = interval
        .strip_suffix("%]")
        .and_then(|i| i.split_once("%, "))
        .unwrap_or_else(|| panic!("{h1}"));
    let [c, lo, hi] = [c, lo, hi].map(|v| v.parse::<f64>().unwrap_or_else(|e| panic!("{v}: {e}")));
    assert!(lo <= c && c <= hi && (-11.0..-9.0).contains(&c), "{h1}");
    assert!(element_text(&dom, "title").starts_with(&h1), "{dom}");
    check_charts(&dom);
    let charts = charts(&dom);
    let y_titles: Vec<&str> = charts
        .iter()
        .flat_map(|c| &c.texts)
        .filter(|t| t.rotated)
        .map(|t| t.text.as_str())
        .collect();
    for title in ["throughput (TPS)", "p99 latency (µs)"] {
        assert!(y_titles.contains(&title), "{title}: {y_titles:?}");
    }
    let x_titles = [
        "change, experiment vs baseline (%)",
        "trial (run order)",
        "time into the run (s)",
    ];
    for title in x_titles {
        let named = charts
            .iter()
            .flat_map(|c| &c.texts)
            .any(|t| t.text == title);
        assert!(named, "no x axis reads {title:?}");
    }
    let per_trial: Vec<&Chart> = charts
        .iter()
        .filter(|c| c.title.contains("per trial"))
        .collect();
    assert_eq!(per_trial.len(), 2, "TPS and p99 per trial");
    for chart in per_trial {
        assert_eq!(
            x_ticks(chart),
            ["1", "2", "3", "4", "5", "6"],
            "{}",
            chart.title
        );
    }
    assert_eq!(latency_units(&dom), ["µs"], "one unit for latency");
    let png = screenshot(&s, &page, "report.png");
    assert!(
        png.width > 1000 && png.height > 1000,
        "{}x{}",
        png.width,
        png.height
    );
}

/// A sweep's page reads as a mako run's does: every chart's axes named and its text
/// readable, the experiment's lines dashed as the legend says (before: solid on both sweep
/// charts), and latency in one unit (before: ms in the sweep's and ReadWrite's tables, µs
/// in the trials').
#[test]
fn report_html_of_a_sweep_follows_the_legend_and_reads_latency_in_one_unit() {
    let s = Sandbox::new();
    // The experiment's third run measures half: the arms split on 900 TPS, and that step
    // runs two more rounds.
    let (a, b) = s.ab(json!({}), json!({"multitest_slow_runs": [2]}));
    let o = super::multitest::multitest(
        &s,
        &a,
        &b,
        &["--sweep", "400,600,900,1200", "--trials", "1"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let page = s.out().join("report.html");
    let dom = chromium(&s, &page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        element_text(&dom, "h1"),
        "MEASURED: redwood knee TPS +0.00%",
        "{dom}"
    );
    check_charts(&dom);
    let charts = charts(&dom);
    let sweep: Vec<&Chart> = charts
        .iter()
        .filter(|c| c.title.contains(" against the "))
        .collect();
    assert_eq!(sweep.len(), 2, "the sweep's two charts");
    let y_titles: Vec<&str> = sweep
        .iter()
        .flat_map(|c| &c.texts)
        .filter(|t| t.rotated)
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(y_titles, ["measured (TPS)", "p98 latency (µs)"]);
    for chart in sweep {
        assert!(
            chart.dashes > 10 && chart.solid_lines == 1,
            "{}: {} dashes, {} solid lines",
            chart.title,
            chart.dashes,
            chart.solid_lines
        );
    }
    assert_eq!(latency_units(&dom), ["µs"], "one unit for latency");
}

/// The text of the first `<tag>` element of `dom`, tags inside it dropped.
fn element_text(dom: &str, tag: &str) -> String {
    let start = dom
        .find(&format!("<{tag}>"))
        .or_else(|| dom.find(&format!("<{tag} ")))
        .unwrap_or_else(|| panic!("no <{tag}> in {dom}"));
    let inner = &dom[start..];
    let inner = &inner[inner.find('>').unwrap() + 1..inner.find(&format!("</{tag}>")).unwrap()];
    let mut text = String::new();
    let mut in_tag = false;
    for c in inner.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.trim().to_string()
}

/// A `<text>` of a chart: its size (CSS px), anchor, whether it is rotated (the y axis's
/// title), and what it says.
struct ChartText {
    size_px: f64,
    anchor: String,
    rotated: bool,
    text: String,
}

/// A chart of report.html as its SVG draws it.
struct Chart {
    /// Its `<title>`.
    title: String,
    texts: Vec<ChartText>,
    /// Lines in the experiment's colour, and their longest segment (px).
    dashes: usize,
    longest_dash_px: f64,
    /// Lines in the baseline's colour longer than a dash.
    solid_lines: usize,
}

/// The value of `name="..."` among an element's `attrs`.
fn attr<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let v = attrs.split(&format!(" {name}=\"")).nth(1)?;
    Some(&v[..v.find('"')?])
}

/// Every chart (inline `<svg>`) of `dom`.
fn charts(dom: &str) -> Vec<Chart> {
    dom.split("<svg ")
        .skip(1)
        .map(|svg| {
            let svg = &svg[..svg.find("</svg>").unwrap()];
            let title = element_text(svg, "title");
            let texts = svg
                .split("<text ")
                .skip(1)
                .map(|t| {
                    let (attrs, rest) = t.split_once('>').unwrap();
                    let attrs = format!(" {attrs}");
                    ChartText {
                        size_px: attr(&attrs, "font-size").unwrap().parse().unwrap(),
                        anchor: attr(&attrs, "text-anchor").unwrap_or("").to_string(),
                        rotated: attrs.contains("rotate("),
                        text: rest[..rest.find("</text>").unwrap()].trim().to_string(),
                    }
                })
                .collect();
            // Each polyline's colour and length, px.
            let lines: Vec<(String, f64)> = svg
                .split("<polyline ")
                .skip(1)
                .map(|l| {
                    let attrs = format!(" {}", &l[..l.find('>').unwrap()]);
                    let points: Vec<(f64, f64)> = attr(&attrs, "points")
                        .unwrap()
                        .split_whitespace()
                        .map(|p| {
                            let (x, y) = p.split_once(',').unwrap();
                            (x.parse().unwrap(), y.parse().unwrap())
                        })
                        .collect();
                    let length = points
                        .windows(2)
                        .map(|w| (w[1].0 - w[0].0).hypot(w[1].1 - w[0].1))
                        .sum();
                    (attr(&attrs, "stroke").unwrap_or("").to_uppercase(), length)
                })
                .collect();
            let of = |colour: &str| -> Vec<f64> {
                lines
                    .iter()
                    .filter(|l| l.0 == colour)
                    .map(|l| l.1)
                    .collect()
            };
            Chart {
                title,
                texts,
                dashes: of("#E69F00").len(),
                longest_dash_px: of("#E69F00").into_iter().fold(0.0, f64::max),
                solid_lines: of("#004488")
                    .into_iter()
                    .filter(|&l| l > DASH_MAX_PX)
                    .count(),
            }
        })
        .collect()
}

/// The numbers along a chart's x axis (centred under their ticks; the y axis's are
/// right-aligned).
fn x_ticks(chart: &Chart) -> Vec<&str> {
    chart
        .texts
        .iter()
        .filter(|t| t.anchor == "middle" && t.text.parse::<f64>().is_ok())
        .map(|t| t.text.as_str())
        .collect()
}

/// The longest an experiment's dash may be, px: 6 drawn, and rounding.
const DASH_MAX_PX: f64 = 8.0;

/// What every chart of report.html must do: name its y axis (a rotated title; before: none
/// had one), draw its text at 12 px or more (before: 9.7 px), tick a chart per trial at
/// whole trials (before: 0.0, 1.0, ...), and, where it joins an arm's points, draw the
/// experiment's line dashed as the legend says (before: solid on the sweep's charts). The
/// changes chart colours its intervals by better or worse, not by arm. Every chart's
/// faults are listed together.
fn check_charts(dom: &str) {
    let charts = charts(dom);
    assert!(!charts.is_empty(), "{dom}");
    let mut faults = Vec::new();
    for c in &charts {
        let y_titles = c.texts.iter().filter(|t| t.rotated).count();
        if y_titles != 1 {
            faults.push(format!("{}: {y_titles} y axis titles", c.title));
        }
        if let Some(t) = c.texts.iter().find(|t| t.size_px < 12.0) {
            faults.push(format!("{}: {:?} at {} px", c.title, t.text, t.size_px));
        }
        let ticks = x_ticks(c);
        if c.title.contains("per trial") && ticks.iter().any(|t| t.contains('.')) {
            faults.push(format!("{}: trials ticked at {ticks:?}", c.title));
        }
        if !c.title.starts_with("change with") && c.longest_dash_px > DASH_MAX_PX {
            faults.push(format!(
                "{}: the experiment's line has a stroke of {:.0} px, not dashes",
                c.title, c.longest_dash_px
            ));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// The units latency is given in across `dom`: in table headers and cells, and in the
/// charts' text, wherever a percentile or the word latency is named.
fn latency_units(dom: &str) -> Vec<String> {
    let mut units = std::collections::BTreeSet::new();
    for tag in ["th", "td", "text", "title"] {
        for piece in dom.split(&format!("<{tag}")).skip(1) {
            let Some(end) = piece.find(&format!("</{tag}>")) else {
                continue;
            };
            let text = &piece[piece.find('>').unwrap_or(0) + 1..end];
            let named = ["latency", "p50", "p90", "p98", "p99"]
                .iter()
                .any(|w| text.contains(w));
            if !named {
                continue;
            }
            for word in text.split(|c: char| !(c.is_alphanumeric() || c == 'µ')) {
                if ["ms", "us", "µs"].contains(&word) {
                    units.insert(word.to_string());
                }
            }
        }
    }
    units.into_iter().collect()
}

/// In a greyscale print of report.html the two arms' marks must differ. The
/// page is rendered twice by Chromium, as it is and under CSS `filter: grayscale(1)`;
/// the pixels drawn in each arm's colour in the first render are looked up in the second.
#[test]
fn report_html_arms_stay_apart_when_rendered_in_greyscale() {
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"tps": 1000.0, "noise_pct": 5.0}),
        json!({"tps": 950.0, "noise_pct": 5.0}),
    );
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert!(s.out().join("report.html").is_file(), "{}", text(&o));
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    let grey_page = s.dir.path().join("grey.html");
    let styled = html.replacen(
        "</head>",
        "<style>html { filter: grayscale(1) }</style></head>",
        1,
    );
    assert_ne!(styled, html, "report.html has a </head>");
    std::fs::write(&grey_page, styled).unwrap();
    let colour = screenshot(&s, &s.out().join("report.html"), "colour.png");
    let grey = screenshot(&s, &grey_page, "grey.png");
    assert_eq!((colour.width, colour.height), (grey.width, grey.height));
    // The arms' colours (xtask/src/report/chart.rs): dark blue and orange.
    let arm_pixels = |rgb: [u8; 3]| -> Vec<usize> {
        (0..colour.pixels())
            .filter(|&i| (0..3).all(|c| colour.at(i)[c].abs_diff(rgb[c]) <= 6))
            .collect()
    };
    let (base, exp) = (arm_pixels([0, 68, 136]), arm_pixels([230, 159, 0]));
    assert!(
        base.len() > 200 && exp.len() > 200,
        "each arm draws marks: {} baseline and {} experiment pixels",
        base.len(),
        exp.len()
    );
    let mean_grey = |px: &[usize]| -> f64 {
        px.iter()
            .map(|&i| {
                let p = grey.at(i);
                assert!(
                    p[0].abs_diff(p[1]) <= 2 && p[1].abs_diff(p[2]) <= 2,
                    "the filter made pixel {i} grey: {p:?}"
                );
                f64::from(p[0])
            })
            .sum::<f64>()
            / px.len() as f64
    };
    let (gb, ge) = (mean_grey(&base), mean_grey(&exp));
    assert!(
        (ge - gb).abs() > 60.0,
        "baseline grey {gb:.0} and experiment grey {ge:.0} (0-255) are too close to tell apart"
    );
}

/// A decoded screenshot: 8-bit RGB(A) pixels, row by row.
struct Shot {
    width: u32,
    height: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Shot {
    fn pixels(&self) -> usize {
        (self.width * self.height) as usize
    }

    fn at(&self, i: usize) -> &[u8] {
        &self.data[i * self.channels..i * self.channels + 3]
    }
}

/// `page` rendered by headless Chromium into `name` (1200 x 3000 CSS pixels), decoded.
fn screenshot(s: &Sandbox, page: &std::path::Path, name: &str) -> Shot {
    let shot = s.dir.path().join(name);
    let o = chromium(
        s,
        page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000",
            "--force-device-scale-factor=1",
            "--hide-scrollbars",
        ],
    );
    let file =
        std::fs::File::open(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&o)));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut data = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut data).unwrap();
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "{info:?}");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("screenshot colour type {other:?}"),
    };
    data.truncate(info.buffer_size());
    Shot {
        width: info.width,
        height: info.height,
        channels,
        data,
    }
}

/// Headless Chromium (Debian's `chromium`, installed by ci/setup.sh) on `page`.
fn chromium(s: &Sandbox, page: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let Ok(chromium) = which_chromium() else {
        panic!("chromium not found: run ci/setup.sh")
    };
    let profile = s.dir.path().join("chromium-profile");
    std::process::Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap()
}

fn which_chromium() -> Result<std::path::PathBuf, ()> {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|c| {
            let o = std::process::Command::new("sh")
                .args(["-c", &format!("command -v {c}")])
                .output()
                .ok()?;
            o.status
                .success()
                .then(|| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        })
        .ok_or(())
}

#[test]
fn an_out_dir_under_a_file_is_refused_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = s
        .bench_command_out(&a, &b, &file.join("res"), &[])
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("a-file is not a directory"),
        "{}",
        text(&o)
    );
}

/// A tmpfs of `size` mounted at `at` for one test, unmounted when dropped.
struct SmallFs(std::path::PathBuf);

impl SmallFs {
    /// `None` where this process may not mount (not root, or no CAP_SYS_ADMIN).
    fn mount(at: &std::path::Path, size: &str) -> Option<SmallFs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallFs(at.to_path_buf()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_results_dir_that_fills_up_mid_run_is_named_in_a_results_case() {
    let s = Sandbox::new();
    let Some(fs) = SmallFs::mount(&s.dir.path().join("small"), "2m") else {
        // Needs root with CAP_SYS_ADMIN (as in .ci/run); say so where it cannot run.
        eprintln!("skipped: this process cannot mount a small tmpfs to fill up");
        return;
    };
    // The second trial (arm B) ends only once the disk is full (a loaded host let the
    // whole run end first when this was left to the trials' length).
    let (a, b) = s.ab(json!({}), json!({"mako_run_waits_for_go": true}));
    let out = fs.0.join("results");
    let junit = s.dir.path().join("junit.xml");
    let gate = s
        .bench_command_out(
            &a,
            &b,
            &out,
            &["--trials", "2", "--junit", junit.to_str().unwrap()],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    // results.tsv is written after trials.json: waiting for trials.json alone let a
    // loaded host fill the disk between the two (test-mt32: results.tsv was named).
    while !out.join("results.tsv").exists() {
        assert!(std::time::Instant::now() < deadline, "no trial was written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The first trial is written; nothing else fits from now on.
    {
        use std::io::Write as _;
        let mut filler = std::fs::File::create(fs.0.join("filler")).unwrap();
        while filler.write_all(&[0u8; 65536]).is_ok() {}
    }
    std::fs::write(b.join("double-go"), "").unwrap();
    let o = gate.wait_with_output().unwrap();
    assert_eq!(code(&o), 2, "{}", text(&o));
    let cases = read_junit(&junit)[0]["cases"].clone();
    assert_eq!(cases[0]["name"], "results", "{cases}");
    let message = cases[0]["results"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("trials.json") && message.contains("is full"),
        "{message}"
    );
    // The first trial's record is kept, and no temporary file is left.
    let trials = crate::support::trials_of(
        &serde_json::from_str(&std::fs::read_to_string(out.join("trials.json")).unwrap()).unwrap(),
    );
    assert_eq!(trials.as_array().unwrap().len(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    s.assert_no_leftover_processes();
}

#[test]
fn a_junit_copy_on_a_full_filesystem_costs_neither_the_results_nor_later_copies() {
    let s = Sandbox::new();
    let Some(fs) = SmallFs::mount(&s.dir.path().join("full"), "1m") else {
        eprintln!("skipped: this process cannot mount a small tmpfs to fill up");
        return;
    };
    {
        use std::io::Write as _;
        let mut filler = std::fs::File::create(fs.0.join("filler")).unwrap();
        while filler.write_all(&[0u8; 65536]).is_ok() {}
    }
    // A REGRESSION (exit 1) on its own: the failed copy must make it 2, in summary.json too.
    let (a, b) = s.ab(json!({}), json!({"tps": 950}));
    let junit = fs.0.join("junit.xml");
    let md = s.dir.path().join("step-summary.md");
    let o = s
        .bench_command(
            &a,
            &b,
            &[
                "--trials",
                "2",
                "--junit",
                junit.to_str().unwrap(),
                "--export-markdown",
                md.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    // The verdict table and every file of the run's own are there.
    assert!(stdout.contains("REGRESSION"), "{stdout}");
    for file in ["summary.json", "summary.md", "report.html", "results.tsv"] {
        assert!(s.out().join(file).is_file(), "{file}: {}", text(&o));
    }
    // The failure names --junit and its own way out, not --out.
    assert!(
        stderr.contains(&format!("--junit {} was not written", junit.display()))
            && stderr.contains("give --junit a path on another filesystem")
            && !stderr.contains("--out on another"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(s.out().join("run.log")).unwrap();
    assert!(
        log.contains("--junit") && log.contains("was not written"),
        "{log}"
    );
    let summary = s.read_json("summary.json");
    assert_eq!(summary["exit_code"], 2, "{summary}");
    assert_eq!(summary["copy_failures"][0]["flag"], "--junit", "{summary}");
    crate::support::assert_valid_summary(&summary);
    // The later copy was written all the same, and says so too.
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("(exit 2)") && md.contains("**ERROR**: --junit"),
        "{md}"
    );
    let own = std::fs::read_to_string(s.out().join("summary.md")).unwrap();
    assert!(own.contains("(exit 2)"), "{own}");
    assert!(!junit.exists() || std::fs::metadata(&junit).unwrap().len() == 0);
}

#[test]
fn the_markdown_summary_is_appended_to_a_job_summary_file() {
    // CI job summaries take Markdown; GitHub's $GITHUB_STEP_SUMMARY collects
    // every step's, so an existing file is appended to, never replaced.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"tps": 900.0}));
    let summary = s.dir.path().join("step-summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let o = s.bench(
        &a,
        &b,
        &[
            "--trials",
            "2",
            "--export-markdown",
            summary.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 1, "{}", text(&o));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("# earlier step\n## perfgate: REGRESSION (exit 1)\n"),
        "{md}"
    );
    assert!(md.contains("| redwood | TPS |"), "{md}");
    assert_eq!(
        std::fs::read_to_string(s.out().join("summary.md")).unwrap(),
        md.trim_start_matches("# earlier step\n")
    );
    // A link planted there is not followed.
    let target = s.dir.path().join("elsewhere.md");
    std::fs::write(&target, "keep").unwrap();
    let link = s.dir.path().join("link.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = s
        .bench_command_out(
            &a,
            &b,
            &s.dir.path().join("second"),
            &["--trials", "2", "--export-markdown", link.to_str().unwrap()],
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    // A file whose last line has no newline gets one before the table, which would
    // otherwise continue that line.
    let bare = s.dir.path().join("bare.md");
    std::fs::write(&bare, "no newline").unwrap();
    let o = s
        .bench_command_out(
            &a,
            &b,
            &s.dir.path().join("third"),
            &["--trials", "2", "--export-markdown", bare.to_str().unwrap()],
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    let md = std::fs::read_to_string(&bare).unwrap();
    assert!(
        md.starts_with("no newline\n## perfgate: REGRESSION"),
        "{md}"
    );
}

#[test]
fn json_answers_on_stdout_even_when_no_trial_ran_and_for_compare() {
    // A CI step reads --json's answer from stdout whatever happened: an error before the
    // first trial still prints one, and compare takes --json too.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"tps": 900.0}));
    std::fs::remove_file(b.join("bin/mako")).unwrap();
    let o = s.bench(&a, &b, &["--json"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(
        (v["schema_version"].as_u64(), v["exit_code"].as_u64()),
        (Some(2), Some(2))
    );
    crate::support::assert_valid_summary(&v);
    assert!(
        v["error"].as_str().unwrap().contains("bin/mako is missing"),
        "{v}"
    );

    let b = s.tree(
        "b2",
        json!({"tps": 900.0, "source_version": "2222222222222222222222222222222222222222"}),
    );
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let o = crate::support::gate_cmd()
        .args(["compare", "--json", "--max-regression", "20"])
        .arg(s.out())
        .arg("--out")
        .arg(s.dir.path().join("again"))
        .output()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["schema_version"], 2, "{v}");
    crate::support::assert_valid_summary(&v);
    assert_eq!(v["judgements"][0]["engine"], "redwood", "{v}");
    assert_eq!(v["exit_code"].as_i64(), Some(i64::from(code(&o))), "{v}");
}

#[test]
fn a_moved_run_judged_again_names_its_files_from_where_it_is() {
    // Absolute paths in compare's files would name nothing once the run is a downloaded
    // artifact, and two compares in one second must not collide on the default results
    // dir.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({"mako_truncates_report": true}));
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let moved = s.dir.path().join("downloaded");
    std::fs::rename(s.out(), &moved).unwrap();
    let compare = || {
        crate::support::gate_cmd()
            .arg("compare")
            .arg(&moved)
            .output()
            .unwrap()
    };
    let (first, second) = (compare(), compare());
    assert_eq!((code(&first), code(&second)), (2, 2), "{}", text(&second));
    let dirs: Vec<_> = std::fs::read_dir(&moved)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("compare-"))
        .map(|e| e.path())
        .collect();
    assert_eq!(
        dirs.len(),
        2,
        "each compare has its own results dir: {dirs:?}"
    );
    let summary = std::fs::read_to_string(dirs[0].join("summary.json")).unwrap();
    let original = s.out().display().to_string();
    assert!(
        summary.contains("../trials/02-redwood-experiment-1/mako.json")
            && !summary.contains(&original),
        "{summary}"
    );
}

#[test]
fn report_html_quotes_the_command_line_as_given() {
    // The rewrite of results-dir paths to relative ones must leave the command line alone:
    // it would eat `--out DIR/` (and every path inside it) out of the page's copy.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let out = format!("{}/", s.out().display());
    let junit = format!("{out}ci/copy.xml");
    let o = s
        .bench_command_with(
            &a,
            &b,
            std::path::Path::new(&out),
            &crate::support::TINY,
            &["--trials", "1"],
        )
        .args(["--junit", &junit])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let html = std::fs::read_to_string(s.out().join("report.html")).unwrap();
    assert!(
        html.contains(&format!("--out {out} ")) && html.contains(&format!("--junit {junit}")),
        "{}",
        html.lines()
            .find(|l| l.contains("--out"))
            .unwrap_or_default()
    );
}

#[test]
fn servers_listen_in_the_port_range_given_or_the_trial_says_it_is_too_narrow() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    // Ranges below the kernel's ephemeral ports, which the other tests' clusters take
    // (bound to port 0): a range among those would take ports they just chose. Spread
    // by pid, for two suites at once; some may be taken: the free ones serve.
    let ephemeral_low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let low = ephemeral_low.max(8000) - 6000 + (std::process::id() % 100) as u16 * 50;
    let range = format!("{low}-{}", low + 39);
    let o = s.bench(&a, &b, &["--trials", "1", "--port-range", &range]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let t = s.read_trials();
    let mut ports = Vec::new();
    for trial in t.as_array().unwrap() {
        let art = s.out().join(trial["artifacts"].as_str().unwrap());
        for e in std::fs::read_dir(&art).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some((_, port)) = name
                .split_once('-')
                .filter(|(role, _)| ["stateless", "log", "storage"].contains(role))
            {
                ports.push(port.parse::<u16>().unwrap());
            }
        }
    }
    // 2 trials of 3 servers each.
    assert_eq!(ports.len(), 6, "{ports:?}");
    assert!(
        ports.iter().all(|p| (low..=low + 39).contains(p)),
        "{ports:?}"
    );
    // A range of 3 of which another program holds one, and a cluster of 3 servers: said
    // by the trial, not hung.
    let port = low + 40;
    // Held by this test, or already by another program: held either way.
    let held = std::net::TcpListener::bind(("127.0.0.1", port));
    let narrow = format!("{port}-{}", port + 2);
    let o = s.bench_in(
        "narrow",
        &a,
        &b,
        &["--trials", "1", "--port-range", &narrow],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(&format!("--port-range {narrow} has "))
            && text(&o).contains("free port(s) now, and the cluster needs 3"),
        "{}",
        text(&o)
    );
    drop(held);
    let o = s.bench_in("bad", &a, &b, &["--port-range", "9000-8000"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("LOW is above HIGH"), "{}", text(&o));
    // Too few for a 3-server cluster: said before any trial, not as the first trial's
    // error.
    let o = s.bench_in("small", &a, &b, &["--port-range", "42000-42001"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains(
            "--port-range 42000-42001 holds 2 port(s), and each trial listens on 3 (one per \
             server and tester here)"
        ),
        "{}",
        text(&o)
    );
    assert!(!s.dir.path().join("small").join("trials.json").exists());
    s.assert_no_leftover_processes();
}

#[test]
fn history_tools_get_the_experiments_values_in_their_formats() {
    // Post-merge history: Bencher's BMF and github-action-benchmark's two custom tools.
    let s = Sandbox::new();
    let (a, b) = s.ab(
        json!({"p99_us": 4000.0}),
        json!({"tps": 900.0, "p99_us": 5000.0}),
    );
    let dir = s.dir.path().join("history");
    let (bmf, hi, lo) = (
        dir.join("bmf.json"),
        dir.join("hi.json"),
        dir.join("lo.json"),
    );
    let o = s.bench(
        &a,
        &b,
        &[
            "--trials",
            "2",
            "--export-bmf",
            bmf.to_str().unwrap(),
            "--export-benchmark",
            hi.to_str().unwrap(),
            lo.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 1, "{}", text(&o));
    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let tps = &read(&bmf)["perfgate/redwood"]["tps"];
    // 900 TPS give or take the double's 0.05% noise per trial.
    assert!(
        (tps["value"].as_f64().unwrap() - 900.0).abs() < 1.0,
        "{tps}"
    );
    assert!(
        tps["lower_value"].as_f64() <= tps["upper_value"].as_f64(),
        "{tps}"
    );
    let hi = read(&hi);
    assert_eq!(
        (&hi[0]["name"], &hi[0]["unit"]),
        (&json!("redwood tps"), &json!("TPS")),
        "{hi}"
    );
    let extra = hi[0]["extra"].as_str().unwrap();
    let change: f64 = extra
        .strip_prefix("REGRESSION ")
        .and_then(|r| r.split('%').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{hi}"));
    assert!((change + 10.0).abs() < 0.3, "{hi}");
    let lo = read(&lo);
    let p99 = lo
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "redwood txn_latency_p99")
        .unwrap_or_else(|| panic!("{lo}"));
    assert!(
        (p99["value"].as_f64().unwrap() - 5000.0).abs() < 10.0,
        "{p99}"
    );
    assert_eq!(p99["unit"], "µs");
    // compare writes them too; two copies to one file are refused before any work.
    let again = s.dir.path().join("again.json");
    let o = crate::support::gate_cmd()
        .args(["compare", "--max-regression", "20", "--export-bmf"])
        .arg(&again)
        .arg(s.out())
        .arg("--out")
        .arg(s.dir.path().join("compared"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(read(&again)["perfgate/redwood"]["tps"], *tps);
    let o = s.bench_in(
        "twice",
        &a,
        &b,
        &[
            "--export-bmf",
            bmf.to_str().unwrap(),
            "--junit",
            bmf.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--export-bmf") && text(&o).contains("is also the file of --junit"),
        "{}",
        text(&o)
    );
}
