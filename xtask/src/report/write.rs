//! Report stage, the one writer of a results directory: `meta.json` first (so even a
//! crashed run says what it was), `trials.json` and `results.tsv` after every trial, the
//! build logs, then `summary.json`, `junit.xml` (and the `--junit` copy), `report.html`
//! and `calibration.json`. The formats are pure functions of this stage (`report`,
//! `html`); this module only writes them, atomically (`results::fs::write`).

use std::{io::Write as _, path::Path, time::SystemTime};

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::{history, html, junit, junit_setup_error, markdown, results_tsv, summary_json, table};
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

/// Writes every trial so far: `trials.json` (the records, with absolute paths) and
/// `results.tsv` (paths relative to `out`, as in every file made for reading).
pub fn trials(out: &Path, trials: &[TrialRecord]) -> Result<()> {
    let file = serde_json::json!({
        "schema_version": TRIALS_SCHEMA_VERSION,
        "trials": trials,
    });
    write(&out.join("trials.json"), &json(&file))?;
    write(
        &out.join("results.tsv"),
        &relative_to_results(out, &results_tsv(trials)),
    )
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

/// Writes `summary.json`, `junit.xml` and `summary.md` (and their `copies`) into `out`
/// and prints the table (or, with `copies.json_to_stdout`, the summary): the end of
/// `bench`, `calibrate` and `compare`.
pub fn verdicts(out: &Path, v: Verdicts, copies: Copies, run: &super::JunitRun) -> Result<()> {
    let Verdicts {
        judgements,
        interrupted,
        warnings,
        profile_diff,
    } = v;
    let mut table = table(judgements, warnings);
    if !profile_diff.is_empty() {
        table = format!("{table}\n{}", crate::results::profile::render(profile_diff));
    }
    let junit = relative_to_results(out, &junit(judgements, &table, run));
    let summary = relative_to_results(
        out,
        &summary_json(judgements, interrupted, warnings, profile_diff),
    );
    let mut md = markdown(judgements, interrupted, warnings);
    if !profile_diff.is_empty() {
        md = format!(
            "{md}\n```\n{}```\n",
            crate::results::profile::render(profile_diff)
        );
    }
    let md = relative_to_results(out, &md);
    write(&out.join("summary.json"), &summary)?;
    write(&out.join("junit.xml"), &junit)?;
    write(&out.join("summary.md"), &md)?;
    let files = copies.files;
    if let Some(extra) = files.junit {
        write(extra, &junit)?;
    }
    if let Some(extra) = files.markdown {
        append_or_write(extra, &md)?;
    }
    if let Some(extra) = files.bmf {
        write(extra, &history::bmf(judgements))?;
    }
    if let Some([bigger, smaller]) = files.benchmark_action {
        write(
            bigger,
            &history::benchmark_action(judgements, Direction::HigherIsBetter),
        )?;
        write(
            smaller,
            &history::benchmark_action(judgements, Direction::LowerIsBetter),
        )?;
    }
    // A closed stdout (`| head`) must not turn a verdict into a crash.
    let _ = if copies.json_to_stdout {
        std::io::stdout().write_all(summary.as_bytes())
    } else {
        writeln!(std::io::stdout(), "\n{table}\nresults: {}", out.display())
    };
    Ok(())
}

/// Writes `report.html`, with the paths of files inside `out` in its verdicts, trial
/// errors and warnings relative to it (not in the command line it quotes).
pub fn html_report(
    out: &Path,
    plan: &Plan,
    trials: &[TrialRecord],
    judgements: &[Judgement],
    profile_diff: &[crate::results::profile::ProfileDiff],
    started: SystemTime,
) -> Result<()> {
    let run = html::RunInfo {
        started,
        host: Host::read(),
        command_line: command_line(),
    };
    let rel = |t: &str| relative_to_results(out, t);
    let (mut judgements, mut warnings) = (judgements.to_vec(), plan.warnings.clone());
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
    let message = format!("{e:#}");
    if let Some(path) = copies.junit {
        let _ = write(path, &junit_setup_error(case, verdict, &message));
    }
    if let Some(path) = copies.markdown {
        let md = format!(
            "### perfgate: {verdict}\n\nThe run stopped before its first trial ({case}):\n\n\
             ```text\n{message}\n```\n"
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
