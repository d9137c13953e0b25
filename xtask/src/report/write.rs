//! Report stage, the one writer of a results directory: `meta.json` first (so even a
//! crashed run says what it was), `trials.json` and `results.tsv` after every trial, the
//! build logs, then `summary.json`, `junit.xml` (and the `--junit` copy), `report.html`
//! and `calibration.json`. The formats are pure functions of this stage (`report`,
//! `html`); this module only writes them, atomically (`results::fs::write`).

use std::{io::Write as _, path::Path, time::SystemTime};

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::{
    history, html, junit, junit_setup_error, markdown, results_tsv, run_exit_code, summary_json,
    table, CopyFailure,
};
use crate::{
    build::BuildTimeout,
    config::Direction,
    judge::{calibrate::Calibration, Judgement, Verdict},
    plan::Plan,
    results::{
        fs::{json, write},
        host::Host,
        saved::{META_SCHEMA_VERSION, TRIALS_SCHEMA_VERSION},
        trial::TrialRecord,
    },
};

/// `meta.json`: what was run, where, with what.
#[derive(Serialize)]
struct Meta<'a> {
    /// [`META_SCHEMA_VERSION`].
    schema_version: u32,
    /// perfgate version.
    gate_version: &'static str,
    /// The gate's git commit when it was built, `-dirty` when its checkout had changes,
    /// or `unknown` (not built from its own git checkout); see `crate::version`.
    gate_commit: &'static str,
    /// Seconds since the Unix epoch when the run started.
    started_at_unix_s: u64,
    started_at: String,
    host: Host,
    /// The gate's command line, as given (lossy UTF-8).
    command_line: Vec<String>,
    /// The results dir, absolute (lossy UTF-8): the prefix of the paths in trial errors,
    /// which `compare` makes relative.
    results_dir: String,
    plan: &'a Plan,
}

/// The gate's command line as given, each argument lossy UTF-8.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Writes `meta.json` (the plan, the host, the gate's version and the start time) and
/// copies the build logs of arms built from source beside it (`build-<arm>.log`).
pub fn meta(out: &Path, plan: &Plan) -> Result<()> {
    let now = SystemTime::now();
    let meta = Meta {
        schema_version: META_SCHEMA_VERSION,
        gate_version: env!("CARGO_PKG_VERSION"),
        gate_commit: crate::version::COMMIT,
        started_at_unix_s: now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        started_at: humantime::format_rfc3339_seconds(now).to_string(),
        host: Host::read(),
        command_line: command_line(),
        results_dir: std::path::absolute(out)
            .unwrap_or_else(|_| out.to_path_buf())
            .to_string_lossy()
            .into_owned(),
        plan,
    };
    write(&out.join("meta.json"), &json(&meta))?;
    for p in plan.arms().filter_map(|a| a.provenance.as_ref()) {
        let _ = crate::files::copy("--out", &p.log, &out.join(format!("build-{}.log", p.arm)));
    }
    Ok(())
}

/// Writes every trial so far: `trials.json` (the records, with absolute paths; those
/// `set_aside`, transient failures that ran again, under their own key when there are any)
/// and `results.tsv` (the records judged, paths relative to `out`, as in every file made
/// for reading).
pub fn trials(out: &Path, trials: &[TrialRecord], set_aside: &[TrialRecord]) -> Result<()> {
    let mut file = serde_json::json!({
        "schema_version": TRIALS_SCHEMA_VERSION,
        "trials": trials,
    });
    if !set_aside.is_empty() {
        file["set_aside"] = serde_json::json!(set_aside);
    }
    write(&out.join("trials.json"), &json(&file))?;
    // The errors before the TSV quotes them (an `--out` with a `"` is `""` there).
    let relative: Vec<TrialRecord> = trials
        .iter()
        .cloned()
        .map(|mut t| {
            t.error = t.error.as_deref().map(|e| relative_to_results(out, e));
            t
        })
        .collect();
    write(
        &out.join("results.tsv"),
        &relative_to_results(out, &results_tsv(&relative)),
    )
}

/// A copy whose text a command makes once the run's own files are written (`calibrate
/// --write-profile`: the profile its calibration sizes): written with the other copies,
/// exclusively (it never replaces a file), or a failure of its flag when `text` is the
/// reason it could not be made.
#[derive(Debug, Clone)]
pub struct LateCopy {
    /// The flag that named it, e.g. `--write-profile`.
    pub flag: &'static str,
    pub path: std::path::PathBuf,
    /// Its text, or why there is none.
    pub text: std::result::Result<String, String>,
    /// What stderr says once it is written (how to use it).
    pub written: String,
}

/// Where the run's results also go (`--junit`, `--export-*`), and whether stdout gets the
/// summary as JSON (`--json`) instead of the table.
#[derive(Debug, Clone, Copy, Default)]
pub struct Copies<'a> {
    pub files: crate::config::Copies<'a>,
    pub json_to_stdout: bool,
}

/// What the verdict files say: the judgements, whether a signal cut the run short, and
/// the run's warnings.
#[derive(Debug, Clone, Copy)]
pub struct Verdicts<'a> {
    pub judgements: &'a [Judgement],
    pub interrupted: bool,
    pub warnings: &'a [String],
    /// The simulation driver's differential profile (empty under other drivers).
    pub profile_diff: &'a [crate::results::profile::ProfileDiff],
}

/// Adds `text` to the end of `path` when it is a regular file already (GitHub's
/// `$GITHUB_STEP_SUMMARY` collects every step's), else writes it as [`write`] does.
/// Errors: `path` is something else than a regular file (a link, a FIFO: not followed).
fn append_or_write(path: &Path, text: &str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => {
            use std::io::{Read as _, Seek as _};
            let mut f = crate::files::append("directory", path)
                .with_context(|| format!("cannot append to {}", path.display()))?;
            // Markdown after a last line without its newline would join that line.
            let mut last = [b'\n'];
            if m.len() > 0 {
                f.seek(std::io::SeekFrom::End(-1))
                    .and_then(|_| f.read_exact(&mut last))
                    .with_context(|| format!("cannot read {}", path.display()))?;
            }
            let sep = if last[0] == b'\n' { "" } else { "\n" };
            f.write_all(format!("{sep}{text}").as_bytes())
                .with_context(|| format!("cannot append to {}", path.display()))
        }
        _ => write(path, text),
    }
}

/// Writes `summary.json`, `junit.xml` and `summary.md` into `out` and prints the table
/// (not with `copies.json_to_stdout`): the end of `bench`, `calibrate` and `compare`, but
/// for the copies, which [`Written::copies`] writes once every file of the run's own is.
pub fn verdicts<'a>(
    out: &'a Path,
    v: Verdicts<'a>,
    copies: Copies<'a>,
    run: &super::JunitRun,
) -> Result<Written<'a>> {
    let table_of = |judgements: &[Judgement], warnings: &[String]| {
        let table = table(judgements, warnings);
        match v.profile_diff.is_empty() {
            true => table,
            false => format!(
                "{table}\n{}",
                crate::results::profile::render(v.profile_diff)
            ),
        }
    };
    // The files name the results dir's files relative to it, the terminal keeps them
    // absolute. Rewritten before the formats escape them (an `--out` with a `"` is
    // `\"` in JSON), and after, for the text the formats add.
    let (mut judgements, mut warnings) = (v.judgements.to_vec(), v.warnings.to_vec());
    rewrite_texts(&mut judgements, &mut warnings, |t| {
        relative_to_results(out, t)
    });
    let junit = junit(&judgements, &table_of(&judgements, &warnings), run);
    let written = Written {
        out,
        judgements,
        warnings,
        interrupted: v.interrupted,
        profile_diff: v.profile_diff,
        copies,
        junit: relative_to_results(out, &junit),
    };
    let table = table_of(v.judgements, v.warnings);
    write(&out.join("summary.json"), &written.summary(&[]))?;
    write(&out.join("junit.xml"), &written.junit)?;
    write(&out.join("summary.md"), &written.markdown(&[]))?;
    if !copies.json_to_stdout {
        // A closed stdout (`| head`) must not turn a verdict into a crash.
        let _ = writeln!(std::io::stdout(), "\n{table}\nresults: {}", out.display());
    }
    Ok(written)
}

/// A run's verdict files, written into its results dir, and the copies still to write.
pub struct Written<'a> {
    out: &'a Path,
    /// The judgements and warnings as the files have them (paths relative to `out`).
    judgements: Vec<Judgement>,
    warnings: Vec<String>,
    interrupted: bool,
    profile_diff: &'a [crate::results::profile::ProfileDiff],
    copies: Copies<'a>,
    /// `junit.xml`'s text, which `--junit` copies.
    junit: String,
}

impl Written<'_> {
    /// `summary.json`'s text, with `failures` (copies that could not be written), in
    /// JSON escapes a terminal shows as text (it is printed with `--json`, and quotes
    /// saved runs).
    fn summary(&self, failures: &[CopyFailure]) -> String {
        let summary = relative_to_results(
            self.out,
            &summary_json(
                &self.judgements,
                self.interrupted,
                &self.warnings,
                self.profile_diff,
                failures,
            ),
        );
        crate::process::json_printable(&summary)
    }

    /// `summary.md`'s text, with `failures` (copies that could not be written).
    fn markdown(&self, failures: &[CopyFailure]) -> String {
        let mut md = markdown(&self.judgements, self.interrupted, &self.warnings, failures);
        if !self.profile_diff.is_empty() {
            md = format!(
                "{md}\n```\n{}```\n",
                crate::results::profile::render(self.profile_diff)
            );
        }
        relative_to_results(self.out, &md)
    }

    /// Writes the copies (`--junit`, `--export-*`, then the command's `late` ones; the
    /// Markdown last, so that it names the others that failed), prints the summary with `--json`, and returns the run's exit
    /// status ([`run_exit_code`]). A copy that cannot be written does not stop the others:
    /// it is said on the terminal and in `run.log`, and `summary.json` and `summary.md` are
    /// written again naming it, with the exit status it gives (2).
    pub fn copies(self, late: Vec<LateCopy>) -> Copied {
        let files = self.copies.files;
        let judgements = &self.judgements;
        let mut failures = Vec::new();
        let copy = |failures: &mut Vec<CopyFailure>, flag: &str, path: &Path, done: Result<()>| {
            if let Err(e) = done {
                failures.push(copy_failure(flag, path, &e));
            }
        };
        if let Some(path) = files.junit {
            copy(&mut failures, "--junit", path, write(path, &self.junit));
        }
        if let Some(path) = files.bmf {
            copy(
                &mut failures,
                "--export-bmf",
                path,
                write(path, &history::bmf(judgements)),
            );
        }
        for (path, direction) in files
            .benchmark_action
            .iter()
            .flatten()
            .zip([Direction::HigherIsBetter, Direction::LowerIsBetter])
        {
            let text = history::benchmark_action(judgements, direction);
            copy(
                &mut failures,
                "--export-benchmark",
                path,
                write(path, &text),
            );
        }
        for c in late {
            match c.text {
                Ok(text) => {
                    let done = crate::results::fs::create_new(&c.path, &text);
                    if done.is_ok() {
                        say!("{}", c.written);
                    }
                    copy(&mut failures, c.flag, &c.path, done);
                }
                Err(why) => failures.push(CopyFailure {
                    flag: c.flag.to_string(),
                    path: c.path.display().to_string(),
                    error: why,
                }),
            }
        }
        if let Some(path) = files.markdown {
            let md = self.markdown(&failures);
            copy(
                &mut failures,
                "--export-markdown",
                path,
                append_or_write(path, &md),
            );
        }
        let summary = self.summary(&failures);
        for f in &failures {
            log_error(&f.sentence());
        }
        if !failures.is_empty() {
            // The run's own files say what its exit status says; best effort, as the
            // copies were.
            let _ = write(&self.out.join("summary.json"), &summary);
            let _ = write(&self.out.join("summary.md"), &self.markdown(&failures));
        }
        if self.copies.json_to_stdout {
            let _ = std::io::stdout().write_all(summary.as_bytes());
        }
        Copied {
            exit_code: run_exit_code(judgements, self.interrupted, &failures),
            failed: failures.len(),
        }
    }
}

/// What writing a run's copies came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// The run's exit status: its verdicts', at least 2 when a copy failed.
    pub exit_code: i32,
    /// How many copies could not be written.
    pub failed: usize,
}

/// A copy (`flag`'s `path`) that `e` kept from being written, and what to do about it:
/// the copy's own flag, not `--out`, is the one to change.
fn copy_failure(flag: &str, path: &Path, e: &anyhow::Error) -> CopyFailure {
    use std::io::ErrorKind::{QuotaExceeded, StorageFull};
    let io = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
    let full = io.is_some_and(|io| matches!(io.kind(), StorageFull | QuotaExceeded));
    let why = match io {
        Some(io) => io.to_string(),
        None => format!("{e:#}"),
    };
    let advice = if full {
        format!(
            "its filesystem is full (or the user's quota is spent): free space there, or give \
             {flag} a path on another filesystem"
        )
    } else {
        format!("give {flag} a path the gate can write")
    };
    CopyFailure {
        flag: flag.to_string(),
        path: path.display().to_string(),
        error: format!("{why}; {advice}; the run's own results dir has every result"),
    }
}

/// An error the run survives, said on the terminal and, once the run logs, in `run.log`.
fn log_error(line: &str) {
    if tracing::dispatcher::has_been_set() {
        tracing::error!("{line}");
    } else {
        let line = crate::process::printable(line);
        let _ = writeln!(std::io::stderr(), "error: {line}");
    }
}

/// Writes `report.html` of the verdicts `v` (their judgements, the run's warnings and the
/// profile's differences), with the paths of files inside `out` in its verdicts, trial
/// errors and warnings relative to it (not in the command line it quotes).
pub fn html_report(
    out: &Path,
    plan: &Plan,
    trials: &[TrialRecord],
    v: &Verdicts,
    started: SystemTime,
) -> Result<()> {
    let run = html::RunInfo {
        started,
        host: Host::read(),
        command_line: command_line(),
    };
    let rel = |t: &str| relative_to_results(out, t);
    let (mut judgements, mut warnings) = (v.judgements.to_vec(), v.warnings.to_vec());
    let profile_diff = v.profile_diff;
    rewrite_texts(&mut judgements, &mut warnings, rel);
    let trials: Vec<TrialRecord> = trials
        .iter()
        .cloned()
        .map(|mut t| {
            t.error = t.error.as_deref().map(rel);
            t
        })
        .collect();
    write(
        &out.join("report.html"),
        &html::render(plan, &trials, &judgements, &warnings, profile_diff, &run),
    )
}

/// The judgements' reasons and notes, and `warnings`, each rewritten by `f`.
pub fn rewrite_texts(
    judgements: &mut [Judgement],
    warnings: &mut [String],
    f: impl Fn(&str) -> String,
) {
    for j in judgements.iter_mut() {
        j.reason = f(&j.reason);
        j.notes = j.notes.iter().map(|n| f(n)).collect();
    }
    for w in warnings.iter_mut() {
        *w = f(w);
    }
}

/// `text` (a file of the results dir `out`) with the paths of files inside `out` written
/// relative to it: `<out>/trials/02-redwood-experiment-1/mako.json` becomes
/// `trials/02-redwood-experiment-1/mako.json`. A results dir is read where it was moved
/// to (a CI artifact, downloaded), where the runner's absolute paths mean nothing; the
/// terminal keeps them. Only a path that starts a word is rewritten (not `<x><out>/`),
/// and an `out` that the format had to escape is left as it is.
pub fn relative_to_results(out: &Path, text: &str) -> String {
    rewrite_dir(text, out, "")
}

/// `text` with each path that starts a word inside `dir` (`<dir>/...`) starting with
/// `replacement` instead of `<dir>/` (`""`: relative to `dir`; `"../"`: relative to a
/// directory inside `dir`).
pub fn rewrite_dir(text: &str, dir: &Path, replacement: &str) -> String {
    let prefix = format!("{}/", dir.display());
    let mut result = String::with_capacity(text.len());
    let mut copied = 0;
    for (i, _) in text.match_indices(&prefix) {
        if i < copied {
            continue;
        }
        let starts_word = text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || "/.-_~".contains(c)));
        if starts_word {
            result.push_str(&text[copied..i]);
            result.push_str(replacement);
            copied = i + prefix.len();
        }
    }
    result.push_str(&text[copied..]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_results_dir_become_relative_to_it() {
        let out = Path::new("/ci/runner/perfgate-results/20261201T1854Z-7");
        let text = "mako JSON report /ci/runner/perfgate-results/20261201T1854Z-7/trials/02-redwood-experiment-1/mako.json \
                    is not valid; stderr (/ci/runner/perfgate-results/20261201T1854Z-7/trials/02/mako-run.err) \
                    is empty; --out /ci/runner/perfgate-results/20261201T1854Z-7 \
                    /other/ci/runner/perfgate-results/20261201T1854Z-7/x";
        assert_eq!(
            relative_to_results(out, text),
            "mako JSON report trials/02-redwood-experiment-1/mako.json \
             is not valid; stderr (trials/02/mako-run.err) \
             is empty; --out /ci/runner/perfgate-results/20261201T1854Z-7 \
             /other/ci/runner/perfgate-results/20261201T1854Z-7/x"
        );
    }

    #[test]
    fn an_out_dir_any_format_escapes_is_still_made_relative_and_control_text_escaped() {
        let dir = tempfile::tempdir().unwrap();
        // JSON writes `"` as `\"`, the TSV as `""`; a tab and a newline are escaped too.
        let out = dir.path().join("we\"ird\tout\nx");
        std::fs::create_dir(&out).unwrap();
        let (mut records, mut judgements) = super::super::tests::run();
        let abs = format!("{}/trials/02-redwood-experiment-1/mako.json", out.display());
        judgements[0].reason = format!("mako JSON report {abs} is not valid: \x1b[2J\x1b]0;x\x07");
        records[1].error = Some(format!("see {abs}"));
        let warnings = [format!("see {abs}")];
        let written = verdicts(
            &out,
            Verdicts {
                judgements: &judgements,
                interrupted: false,
                warnings: &warnings,
                profile_diff: &[],
            },
            Copies::default(),
            &super::super::tests::test_run(),
        )
        .unwrap();
        assert_eq!(written.copies(Vec::new()).exit_code, 1);
        trials(&out, &records, &[]).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let reason = summary["judgements"][0]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("mako JSON report trials/02-redwood-experiment-1/mako.json"),
            "{reason}"
        );
        assert_eq!(
            summary["warnings"][0],
            "see trials/02-redwood-experiment-1/mako.json"
        );
        for file in ["summary.json", "summary.md", "junit.xml", "results.tsv"] {
            let text = std::fs::read_to_string(out.join(file)).unwrap();
            assert!(
                !text.contains("ird"),
                "{file} names the results dir: {text}"
            );
            assert!(
                !text.contains('\x1b') && !text.contains('\x07'),
                "{file}: {text}"
            );
        }
        let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(md.contains("\\u{1b}[2J\\u{1b}]0;x\\u{7}"), "{md}");
        // A relative --out: the same, and a longer name that merely ends like it is kept.
        assert_eq!(
            relative_to_results(Path::new("res"), "see res/trials/a and fres/trials/b"),
            "see trials/a and fres/trials/b"
        );
    }
}

/// Writes `calibration.json`.
pub fn calibration(out: &Path, cal: &Calibration) -> Result<()> {
    write(&out.join("calibration.json"), &json(cal))
}

/// Writes the `--junit` file and appends to the `--export-markdown` file (`copies`) of a
/// run that failed before its first trial (bad input, a build that failed or timed
/// out): a CI job shows them, so such a run is an ERROR (a TIMEOUT for a build past its
/// bound) there too, not a missing file or an empty job summary. Best effort: the error
/// itself is what the caller reports.
pub fn setup_error(copies: crate::config::Copies, e: &anyhow::Error) {
    let verdict = if e.downcast_ref::<BuildTimeout>().is_some() {
        Verdict::Timeout
    } else {
        Verdict::Error
    };
    let case = match e.downcast_ref::<Stage>() {
        Some(stage) => stage.0,
        None => "setup",
    };
    // The error may quote a record or a saved run: the Markdown gets it printable.
    let message = crate::process::printable(&format!("{e:#}"));
    if let Some(path) = copies.junit {
        let _ = write(path, &junit_setup_error(case, verdict, &message));
    }
    if let Some(path) = copies.markdown {
        // The heading of a run's summary.md, whose exit status it says too.
        let code = crate::error::exit_status(e);
        let md = format!(
            "## perfgate: {verdict} (exit {code})\n\nThe run stopped before its first trial \
             ({case}):\n\n```text\n{message}\n```\n"
        );
        let _ = append_or_write(path, &md);
    }
}

/// The stage a run failed in after its setup, as an error's context: it names the JUnit
/// test case (`results`: the results could not be written), so that CI does not call a
/// full disk after hours of trials a setup error.
#[derive(Debug, Clone, Copy)]
pub struct Stage(pub &'static str);

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the run's {} stage failed", self.0)
    }
}
