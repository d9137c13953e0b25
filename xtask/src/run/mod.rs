//! Run stage: a plan's trials, one at a time, each on a fresh supervised cluster
//! (`trial`, `cluster`, `monitor`), in the run's own locked directory on the work dir with
//! a reaper beside the gate (`reaper`). The [`Runner`] hands every record to its caller as
//! soon as the trial ends, so a later failure loses nothing.

pub mod cluster;
pub mod context;
mod driver;
mod mako;
pub mod monitor;
pub mod multitest;
pub mod probe;
pub mod reaper;
pub mod simulation;
pub mod stall;
pub mod trial;

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use anyhow::{Context, Result};
use fdb::Engine;

use crate::{
    contain::{Containment, RunCgroup},
    plan::{Plan, PlannedTrial},
    process::{interrupted, on_cpus, take_stalls},
    results::trial::{Outcome, TrialRecord},
};
use context::{Meeting, TrialContext};
use reaper::{clean_stale_runs, live_runs, live_runs_on_host, Reaper, RunDir};
use trial::run_trial;

/// What the runner calls with every record so far after each trial (to write them out);
/// its error stops the run.
type Save<'a> = Box<dyn FnMut(&[TrialRecord], &[TrialRecord]) -> Result<()> + 'a>;

/// Batches (a duet's pair, or one trial) a run runs again after a transient failure
/// ([`TrialRecord::transient_failure`]), each once: a storage server blocked for seconds
/// fails mako's transactions in flight now and then on a busy 2-vCPU host (2 trials of
/// about 150 on FDB 8.0 under duets), and would end a run of hours with ERROR; more than
/// this many in one run is a problem of its own, left to fail.
pub const MAX_RERUNS: usize = 2;

/// Runs a plan's trials in order and keeps their records; `save` gets every record so far
/// after each trial, and the records set aside (to write them out), and stops the run with
/// its error.
pub struct Runner<'a> {
    plan: &'a Plan,
    out: &'a Path,
    /// The plan's environment of the children, `TMPDIR` the run dir.
    child_env: crate::plan::env::ChildEnv,
    run_workdir: PathBuf,
    save: Save<'a>,
    /// The records of the trials that ended, in run order: those judged.
    pub trials: Vec<TrialRecord>,
    /// Records of trials that failed transiently and ran again (at most [`MAX_RERUNS`]
    /// batches): kept, never judged; the rerun has their index.
    set_aside: Vec<TrialRecord>,
    /// Batches run again so far.
    reruns: usize,
    /// What the run's results must say of it (its reruns).
    warnings: Vec<String>,
    /// The trials this run is known to have, for "trial i of n": the plan's, less those
    /// skipped or never to run ([`Runner::expect_fewer`]), plus those added past it
    /// ([`Runner::expect_more`]).
    expected: usize,
    /// Whether trials may still be added or dropped (a sweep, `--trials auto`): then the
    /// count is "so far".
    open: bool,
    /// Children the gate had before its first trial (inherited across the `exec` that
    /// started it, or started by an earlier stage): never a trial's, never touched.
    inherited: Vec<u32>,
    /// The run's cgroup, which every process the trials start joins (with
    /// [`Containment::Cgroup`]); dropped before the reaper, it ends what is left in it.
    cgroup: Option<RunCgroup>,
    // Last: dropped after everything else, it removes the run dir and releases the reaper.
    reaper: Reaper,
}

/// Why a measured trial has no CPU figures: with testers on other hosts the gate sees
/// none of the processes it accounts; otherwise the run ended before its measurement
/// window (CPU is sampled from the end of the warmup).
fn unmeasured_cpu(plan: &Plan) -> String {
    match plan.config.cluster.remote_testers() {
        0 => "not measured: the run ended before its measurement window (CPU is sampled \
              from the end of the warmup on)"
            .into(),
        n => format!(
            "not measured: {n} tester(s) run on other hosts, and the gate sees only its own \
             processes"
        ),
    }
}

/// The run's cgroup, named like its run dir, when the plan's containment is one: every
/// child the gate starts from now on joins it, and its path is written into the run dir
/// for the reaper and the next gate. Errors: it cannot be made or recorded.
fn contain(plan: &Plan, run_dir: &RunDir) -> Result<Option<RunCgroup>> {
    let Containment::Cgroup { parent } = &plan.containment else {
        return Ok(None);
    };
    let name = run_dir.path.file_name().context("a run dir has a name")?;
    let cgroup = RunCgroup::create(parent, &name.to_string_lossy())?;
    run_dir.record_cgroup(&cgroup.path)?;
    cgroup.contain_children();
    Ok(Some(cgroup))
}

/// Lets a gate run beside another one on the host when set to `1` (the trials then
/// measure each other; a warning says so).
pub const ALLOW_CONCURRENT_ENV: &str = "PERFGATE_ALLOW_CONCURRENT";

/// [`ALLOW_CONCURRENT_ENV`]'s value read: `1` allows, unset, empty or `0` does not.
/// Errors: a [`crate::error::UsageError`] for anything else (`yes`, `true`), which would
/// otherwise be ignored without a word.
fn allow_concurrent(value: Option<&std::ffi::OsStr>) -> Result<bool> {
    match value.map(|v| v.to_str()) {
        None | Some(Some("" | "0")) => Ok(false),
        Some(Some("1")) => Ok(true),
        Some(v) => Err(crate::error::UsageError(format!(
            "{ALLOW_CONCURRENT_ENV}={}: set it to 1 to run beside another gate, or to 0 (or \
             unset it) not to",
            crate::process::printable(v.unwrap_or("(not UTF-8)"))
        ))
        .into()),
    }
}

/// Errors when another gate runs anywhere on this host ([`live_runs_on_host`]), unless
/// [`ALLOW_CONCURRENT_ENV`] is `1`, which turns the refusal into the warning returned (the
/// caller logs it); [`Runner::start`] refuses one on the same work dir all the same.
pub fn refuse_other_gates() -> Result<Option<String>> {
    let allowed = allow_concurrent(std::env::var_os(ALLOW_CONCURRENT_ENV).as_deref())?;
    let others = live_runs_on_host();
    if others.is_empty() {
        return Ok(None);
    }
    let said = format!(
        "another gate is running on this host: {}; two benchmarks on one host measure each \
         other, whatever their work dirs",
        others.join(", ")
    );
    if allowed {
        return Ok(Some(format!(
            "{said} ({ALLOW_CONCURRENT_ENV}=1: running anyway; its trials are noisier)"
        )));
    }
    anyhow::bail!(
        "{said}, so this one does not start: wait for it to end, or set \
         {ALLOW_CONCURRENT_ENV}=1 to run anyway (the trials of both are then noisier)"
    )
}

/// Errors when another gate runs on `workdir` (a live run dir lock), whatever
/// [`ALLOW_CONCURRENT_ENV`] says. Checked before the results dir is made, so that the
/// refused run leaves nothing in `--out` and its retry may use the same one, and again by
/// [`Runner::start`].
pub fn refuse_busy_workdir(workdir: &Path) -> Result<()> {
    let live = live_runs(workdir);
    if !live.is_empty() {
        anyhow::bail!(
            "another gate is running on the work dir {}: {}; two benchmarks on one host \
             measure each other, so this one does not start: wait for it to end (in CI, \
             run benchmark jobs one at a time: GitHub `concurrency:`, GitLab \
             `resource_group:`), or set {ALLOW_CONCURRENT_ENV}=1 and give --workdir a \
             directory of this run's own (its trials are then noisier)",
            workdir.display(),
            live.join(", ")
        );
    }
    Ok(())
}

impl<'a> Runner<'a> {
    /// Cleans up after earlier gates that died on the plan's work dir, creates this run's
    /// dir there and starts its reaper (which appends to `<out>/run.log`).
    pub fn start(
        plan: &'a Plan,
        out: &'a Path,
        save: impl FnMut(&[TrialRecord], &[TrialRecord]) -> Result<()> + 'a,
    ) -> Result<Runner<'a>> {
        refuse_busy_workdir(&plan.workdir.path)?;
        for line in clean_stale_runs(&plan.workdir.path) {
            tracing::warn!("{line}");
        }
        let run_dir = RunDir::create(&plan.workdir.path)?;
        let run_workdir = run_dir.path.clone();
        let cgroup = contain(plan, &run_dir)?;
        // Ends what the trials started if this gate dies without tearing down (SIGKILL); it
        // owns the run dir, which goes first when the runner is dropped.
        let inherited = crate::process::children()
            .into_iter()
            .map(|(pid, _)| pid)
            .collect();
        let reaper = Reaper::start(run_dir, &out.join("run.log"))?;
        // What escapes a trial's process groups and loses its parent comes to the gate,
        // which ends it after the trial.
        crate::process::adopt_orphans()?;
        crate::process::watch_stalls();
        // Tools write temporary files under TMPDIR by names others can guess (valgrind's
        // vgdb pipes carry the pid): the run's own dir, which nobody else can enter.
        let mut child_env = plan.child_env.clone();
        child_env
            .passed
            .insert("TMPDIR".into(), run_workdir.clone().into_os_string());
        Ok(Runner {
            plan,
            out,
            child_env,
            run_workdir,
            save: Box::new(save),
            trials: Vec::new(),
            set_aside: Vec::new(),
            reruns: 0,
            warnings: Vec::new(),
            expected: plan.trials.len(),
            open: plan.config.schedule.open_ended(),
            inherited,
            cgroup,
            reaper,
        })
    }

    /// Errors when the results dir lost its `meta.json` (written before the first trial)
    /// since the run started: someone removed or moved it, and trials written into a new
    /// one would leave results without their plan. (A trial that was running then fails
    /// reading its own files; this names the cause.)
    fn check_results_dir(&self, index: usize) -> Result<()> {
        let meta = self.out.join("meta.json");
        if std::fs::symlink_metadata(&meta).is_err() {
            anyhow::bail!(
                "the results dir {} lost its meta.json during the run (removed or moved?): \
                 stopping before trial {index}, whose results would have no plan; run again \
                 with a new --out",
                self.out.display()
            );
        }
        Ok(())
    }

    /// Counts `n` trials that will run past the plan's (a sweep's confirmations,
    /// `--trials auto`'s pairs), so that the progress lines count them before they run.
    pub fn expect_more(&mut self, n: usize) {
        self.expected += n;
    }

    /// Drops `n` of the plan's trials that will not run (an engine's sweep stopped past
    /// its knee, `--trials auto` decided before its planned pairs) from the count.
    pub fn expect_fewer(&mut self, n: usize) {
        self.expected = self.expected.saturating_sub(n).max(self.trials.len());
    }

    /// Runs one trial (unless its engine already failed) and saves every record so far.
    /// Returns false when the run must stop (interrupt). Errors: the results dir is gone
    /// ([`Runner::check_results_dir`]), or the records cannot be saved.
    pub fn run(&mut self, planned: PlannedTrial) -> Result<bool> {
        self.run_batch(vec![planned])
    }

    /// Runs `batch`'s trials (those whose engine has not failed) at the same time, each on
    /// a thread of its own, then saves every record so far, in run order. Only for trials
    /// whose figures do not depend on what else runs on the host (the simulation driver's
    /// instruction counts); one trial is [`Runner::run`]. Returns false when the run must
    /// stop (interrupt).
    pub fn run_batch(&mut self, batch: Vec<PlannedTrial>) -> Result<bool> {
        let mut planned = Vec::new();
        for mut p in batch {
            // One failed trial already makes the engine's verdict TIMEOUT or ERROR: its
            // remaining trials would cost time and change nothing.
            if self.failed(p.engine) {
                tracing::warn!("{} trial skipped: an earlier {0} trial failed", p.engine);
                self.expected = self.expected.saturating_sub(1);
                continue;
            }
            p.index = self.trials.len() + planned.len() + 1;
            self.check_results_dir(p.index)?;
            // A trial the caller did not announce still counts.
            self.expected = self.expected.max(p.index);
            self.announce(&p);
            planned.push(p);
        }
        let Some(last) = planned.last().map(|p| p.index) else {
            return Ok(true);
        };
        for stall in take_stalls() {
            tracing::warn!(
                "the gate was stalled for {:.0} s between trials (stopped, or starved of CPU)",
                stall.as_secs_f64()
            );
        }
        let records = self.run_at_once(&planned);
        let stalls: Vec<f64> = take_stalls().iter().map(|d| d.as_secs_f64()).collect();
        let orphans = self.end_escapees();
        let mut stop = interrupted();
        // Trials that ran at once share their escapees: said once, of them all.
        let which = records
            .iter()
            .map(|r| r.index.to_string())
            .collect::<Vec<_>>()
            .join(" or ");
        for mut record in records {
            record.gate_stalls_s = stalls.clone();
            self.log(&record);
            stop |= record.outcome == Outcome::Interrupted;
            self.trials.push(record);
        }
        for (pid, cmd) in &orphans {
            tracing::warn!(
                "trial {which}: pid {pid} outlived the trial outside its process groups \
                 (setsid) and was killed: {cmd}"
            );
        }
        for index in simulation::check_determinism(self.plan, &mut self.trials) {
            tracing::error!(
                "trial {index}: the simulation did not replay its seed (see trials.json)"
            );
        }
        let is_rerun = planned.iter().any(|p| p.rerun);
        let rerun = !stop && self.set_aside_for_rerun(planned.len(), is_rerun);
        self.check_results_dir(last + 1)?;
        (self.save)(&self.trials, &self.set_aside)?;
        if stop {
            tracing::warn!("interrupted: stopping after trial {}", self.trials.len());
        }
        if rerun {
            let again = planned.into_iter().map(|p| PlannedTrial {
                index: 0,
                rerun: true,
                ..p
            });
            return self.run_batch(again.collect());
        }
        Ok(!stop)
    }

    /// Moves the batch just run (the last `n` records) to the records set aside when its
    /// trials that failed all failed transiently, the batch is not a rerun itself
    /// (`rerun`) and fewer than [`MAX_RERUNS`] batches ran again: a duet's pair runs again
    /// whole, so that its arms still share their seconds. A batch with any other failure
    /// stands, its ERROR or TIMEOUT judged. Returns whether it did.
    fn set_aside_for_rerun(&mut self, n: usize, rerun: bool) -> bool {
        let batch = self.trials.len() - n;
        let failed: Vec<&TrialRecord> = self.trials[batch..]
            .iter()
            .filter(|t| t.outcome != Outcome::Measured)
            .collect();
        if failed.is_empty() || !failed.iter().all(|t| t.transient_failure()) {
            return false;
        }
        if rerun || self.reruns >= MAX_RERUNS {
            for t in failed {
                tracing::warn!(
                    "trial {}: {}: a transient failure; not run again: {}",
                    t.index,
                    t.error.as_deref().unwrap_or("?"),
                    match rerun {
                        true => "it is a rerun already",
                        false => "the run's reruns are spent",
                    }
                );
            }
            return false;
        }
        let what = match n {
            1 => "the trial is".to_string(),
            _ => format!("its {n} trials, which ran at once, are"),
        };
        let warnings: Vec<String> = failed.iter().map(|t| t.rerun_warning(&what)).collect();
        for warning in warnings {
            tracing::warn!("{warning}");
            self.warnings.push(warning);
        }
        self.reruns += 1;
        self.set_aside.extend(self.trials.drain(batch..));
        true
    }

    /// Runs `planned` at the same time, one thread each (one trial on the gate's own
    /// thread, on the CPUs of everything but the storage server when pinned); a duet's
    /// trials each on their own CPUs, starting their runs together. Their records, in
    /// `planned`'s order.
    fn run_at_once(&self, planned: &[PlannedTrial]) -> Vec<TrialRecord> {
        let ctx = self.context();
        let others = ctx.pinning.map(|p| p.others.as_slice());
        let plan = self.plan;
        let meeting = plan
            .duet_halves
            .is_some()
            .then(|| Meeting::new(planned.len()));
        match planned {
            [one] => vec![on_cpus(others, || run_trial(&ctx, plan.arm(one.arm), one))],
            many => std::thread::scope(|s| {
                let running: Vec<_> = many
                    .iter()
                    .map(|p| {
                        let ctx = TrialContext {
                            pinning: p.pinning.as_ref().or(ctx.pinning),
                            meeting: meeting.as_ref(),
                            ..ctx.clone()
                        };
                        s.spawn(move || run_trial(&ctx, plan.arm(p.arm), p))
                    })
                    .collect();
                running
                    .into_iter()
                    .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            }),
        }
    }

    /// Ends what the trials just run left behind (left running, it would take CPU from the
    /// next trials' servers): everything still in the run's cgroup (a double fork's
    /// grandchild has a live parent and is no orphan of the gate's), then every child the
    /// gate adopted ([`crate::process::end_orphans`]). Returns them as `(pid, command)`.
    fn end_escapees(&self) -> Vec<(u32, String)> {
        let keep: Vec<u32> = std::iter::once(self.reaper.pid())
            .chain(self.inherited.iter().copied())
            .collect();
        let mut ended = self
            .cgroup
            .as_ref()
            .map(RunCgroup::end_all)
            .unwrap_or_default();
        crate::process::reap(&ended.iter().map(|(p, _)| *p).collect::<Vec<_>>());
        for o in crate::process::end_orphans(&keep) {
            if !ended.iter().any(|(p, _)| *p == o.0) {
                ended.push(o);
            }
        }
        ended
    }

    /// Says which trial starts, of how many, and about how long the rest take.
    fn announce(&self, planned: &PlannedTrial) {
        tracing::info!(
            "trial {} of {}{}: {} {} #{}{}{}{}",
            planned.index,
            self.expected,
            if self.open { " so far" } else { "" },
            planned.engine,
            planned.arm,
            planned.repetition,
            if planned.rerun {
                ", again after a transient failure"
            } else {
                ""
            },
            planned
                .target_tps
                .map(|t| format!(", target {t} TPS"))
                .unwrap_or_default(),
            eta(
                &self.trials,
                (self.expected + 1 - planned.index).div_ceil(self.plan.parallel_trials())
            )
        );
    }

    /// What every trial of the run shares.
    fn context(&self) -> TrialContext<'_> {
        let config = &self.plan.config;
        TrialContext {
            workload: &config.workload,
            cluster: &config.cluster,
            bounds: &config.bounds,
            run_workdir: &self.run_workdir,
            results_dir: self.out,
            require_cpu_bound: config.require_cpu_bound,
            host_probe: config.host_probe,
            progress: !config.quiet,
            pinning: self.plan.pinning.pinned(),
            recorded_cluster: self
                .plan
                .recorded
                .as_ref()
                .and_then(|b| Some((b.name.as_str(), b.cluster.as_deref()?))),
            env: &self.child_env,
            ports: config.port_range,
            simulation: self.plan.simulation.as_ref(),
            mako_names: &self.plan.mako_names,
            meeting: None,
        }
    }

    fn log(&self, record: &TrialRecord) {
        if !record.gate_stalls_s.is_empty() {
            let phases: Vec<String> = record
                .phases
                .iter()
                .map(|p| format!("{} {:.0} s", p.phase, p.duration_s))
                .collect();
            tracing::warn!(
                "trial {}: the gate itself was stalled for {} s during it (stopped, or \
                 starved of CPU): its phase timings include the stall ({}), and a phase \
                 bound could not fire while it lasted",
                record.index,
                record
                    .gate_stalls_s
                    .iter()
                    .map(|s| format!("{s:.0}"))
                    .collect::<Vec<_>>()
                    .join(" + "),
                phases.join(", ")
            );
        }
        match (&record.outcome, record.tps(), &record.simulation) {
            (Outcome::Measured, _, Some(s)) => tracing::info!(
                "trial {}: seed {}, unseed {}, {} transactions; instructions per transaction: \
                 {}; {} in all",
                record.index,
                s.seed,
                s.result.unseed,
                s.result.transactions,
                s.instructions_by_role
                    .keys()
                    .filter_map(|r| Some(format!("{} {:.0}", r.as_str(), s.per_transaction(*r)?)))
                    .collect::<Vec<_>>()
                    .join(", "),
                s.instructions
            ),
            (Outcome::Measured, Some(tps), None) => tracing::info!(
                "trial {}: {:.1} TPS, CPU {}",
                record.index,
                tps,
                record
                    .cpu
                    .as_ref()
                    .filter(|c| !c.cores.is_empty())
                    .map(|c| c
                        .cores
                        .iter()
                        .map(|(role, cores)| format!(
                            "{role} {cores:.2} cores ({:.0} µs/txn)",
                            cores * 1e6 / tps
                        ))
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_else(|| unmeasured_cpu(self.plan))
            ),
            // The level already says ERROR; a timeout or a signal is said as such.
            _ => tracing::error!(
                "trial {}: {}{}; artifacts in {}",
                record.index,
                match record.outcome {
                    Outcome::Timeout => "TIMEOUT: ",
                    Outcome::Interrupted => "interrupted: ",
                    _ => "",
                },
                record.error.as_deref().unwrap_or(""),
                self.out.join(&record.artifacts).display()
            ),
        }
    }

    /// Ends the run: removes the run dir and releases the reaper; returns the records
    /// judged and what the results must say of the run (its trials set aside).
    pub fn finish(self) -> (Vec<TrialRecord>, Vec<String>) {
        (self.trials, self.warnings)
    }

    /// Whether a trial of `engine` ended without a measurement.
    pub fn failed(&self, engine: Engine) -> bool {
        self.trials
            .iter()
            .any(|t| t.engine == engine && t.outcome != Outcome::Measured)
    }
}

/// ", about N min left" for `remaining` trials (rounds of trials that run at once) at the
/// mean wall time of the trials so far (their phases'), or "" before the first has
/// finished. An estimate, no bound: a sweep
/// stops one step past its knee, before its last planned trial, and may rerun a step;
/// `--trials auto` stops when decided and may add pairs.
fn eta(done: &[TrialRecord], remaining: usize) -> String {
    if done.is_empty() {
        return String::new();
    }
    let seconds: f64 = done
        .iter()
        .flat_map(|t| &t.phases)
        .map(|p| p.duration_s)
        .sum::<f64>()
        / done.len() as f64
        * remaining as f64;
    if seconds < 90.0 {
        // Rounded up: a trial still runs, so never "0 s".
        format!(", about {} s left", seconds.ceil().max(1.0))
    } else {
        format!(", about {:.0} min left", seconds / 60.0)
    }
}

/// Whether the terminal output gets ANSI colours: as `--color always` or `never` said
/// (`forced`), whatever the environment says; else (`auto`) on a terminal, unless
/// `NO_COLOR` is set to something (https://no-color.org: "present and not an empty
/// string") or `TERM` is `dumb` (a terminal that declares it understands no escape
/// sequences: Emacs' shell, some CI log viewers).
pub fn use_color(
    forced: Option<bool>,
    terminal: bool,
    no_color: Option<std::ffi::OsString>,
    term: Option<std::ffi::OsString>,
) -> bool {
    forced.unwrap_or_else(|| {
        terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
    })
}

/// The tracing target of lines for `run.log` alone: what the terminal is told another way
/// (the error that ends a run, which `main` prints).
pub const RUN_LOG_ONLY: &str = "run_log_only";

/// Logs go to stderr (short; warnings only with `quiet`; ANSI colours when `color`, see
/// [`use_color`]; not the [`RUN_LOG_ONLY`] lines) and to `<out>/run.log` (with timestamps,
/// never coloured).
pub fn init_logging(out: &Path, quiet: bool, color: bool) -> Result<()> {
    use tracing_subscriber::{
        filter::{filter_fn, LevelFilter},
        fmt,
        layer::SubscriberExt,
        util::SubscriberInitExt,
        Layer,
    };
    let file =
        crate::files::create("--out", &out.join("run.log")).context("cannot create run.log")?;
    tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(color)
                .with_writer(std::io::stderr)
                .without_time()
                .with_target(false)
                .with_filter(if quiet {
                    LevelFilter::WARN
                } else {
                    LevelFilter::INFO
                })
                .with_filter(filter_fn(|m| m.target() != RUN_LOG_ONLY)),
        )
        .with(
            fmt::layer()
                .with_writer(Mutex::new(file))
                .with_ansi(false)
                .with_target(false),
        )
        .try_init()
        .context("logging was already set up")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_concurrent_takes_one_or_zero_and_names_anything_else() {
        use std::ffi::OsStr;
        assert!(!allow_concurrent(None).unwrap());
        assert!(!allow_concurrent(Some(OsStr::new(""))).unwrap());
        assert!(!allow_concurrent(Some(OsStr::new("0"))).unwrap());
        assert!(allow_concurrent(Some(OsStr::new("1"))).unwrap());
        for bad in ["yes", "true", "\x1b[2J"] {
            let e = allow_concurrent(Some(OsStr::new(bad))).unwrap_err();
            assert!(
                e.downcast_ref::<crate::error::UsageError>().is_some(),
                "{bad}"
            );
            let e = e.to_string();
            assert!(
                e.starts_with("PERFGATE_ALLOW_CONCURRENT=") && !e.contains('\x1b'),
                "{e}"
            );
        }
    }

    #[test]
    fn no_color_or_a_dumb_terminal_turns_colors_off() {
        // NO_COLOR set to anything non-empty turns colours off, on a terminal too.
        assert!(use_color(None, true, None, None));
        assert!(!use_color(None, true, Some("1".into()), None));
        assert!(use_color(None, true, Some("".into()), None));
        assert!(!use_color(None, false, None, None));
        // TERM=dumb declares a terminal without escape sequences.
        assert!(!use_color(None, true, None, Some("dumb".into())));
        assert!(use_color(None, true, None, Some("xterm-256color".into())));
    }

    #[test]
    fn an_explicit_color_flag_wins_over_the_terminal_and_the_environment() {
        let (dumb, no_color) = (Some("dumb".into()), Some("1".into()));
        for terminal in [false, true] {
            assert!(use_color(
                Some(true),
                terminal,
                no_color.clone(),
                dumb.clone()
            ));
            assert!(!use_color(Some(false), terminal, None, None));
        }
    }

    #[test]
    fn time_left_is_the_mean_trial_times_the_trials_left_never_zero() {
        use crate::results::trial::{Phase, PhaseTiming};
        let took = |s: f64| {
            let mut t = crate::results::trial::measured_trial(1, crate::config::Arm::Baseline, 1.0);
            t.phases = vec![PhaseTiming {
                phase: Phase::MakoRun,
                duration_s: s,
            }];
            t
        };
        assert_eq!(eta(&[], 3), "");
        // Never "about 0 s left", even from trials of a fraction of a second.
        assert_eq!(eta(&[took(0.2), took(0.3)], 1), ", about 1 s left");
        assert_eq!(eta(&[took(10.0), took(20.0)], 2), ", about 30 s left");
        assert_eq!(eta(&[took(100.0)], 3), ", about 5 min left");
    }
}
