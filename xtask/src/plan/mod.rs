//! Plan stage: config + checked build trees + work dir -> the list of trials to run.
//!
//! Pure except for nothing: the inputs were read by their own stages, so a plan can be
//! printed (`--dry-run`) and tested without running anything.

use std::{fmt::Write as _, time::Duration};

use serde::Serialize;

pub mod env;
pub mod pinning;
pub mod preflight;
pub mod resolve;
pub mod simulation;
pub mod workdir;

use fdb::{
    cmake::BuildConfig,
    knob::{effective_knobs, tester_knobs},
    Engine, FdbVersion, Knob, MakoCaps,
};

use anyhow::Result;

use crate::{
    build::{
        tree::{read_build_config, FdbTree},
        Provenance,
    },
    config::{slo::SloTps, Arm, BenchConfig, ClusterSource, Schedule, MIN_PAIRS},
    contain::{Containment, MakoNames},
    error::UsageError,
    results::{baseline::Baseline, noise::NoisePrior},
};
use pinning::{cpu_list, PinPlan, Pinning};
use preflight::Preflight;
use workdir::Workdir;

/// One arm's build tree and what it says it is.
#[derive(Debug, Clone, Serialize)]
pub struct ArmPlan {
    pub arm: Arm,
    pub tree: FdbTree,
    pub version: FdbVersion,
    /// What its mako takes and prints (its release and `--help`).
    pub mako: MakoCaps,
    /// How the tree was configured (`CMakeCache.txt`), when it says.
    pub build_config: Option<BuildConfig>,
    /// How the tree was built, when the gate built it from `--fdb-src` (`build`).
    pub provenance: Option<Provenance>,
    /// The user's fdbserver knobs for this arm, in order (later ones win): the config's,
    /// or for the control arm of a recorded baseline, the record's.
    pub knobs: Vec<Knob>,
}

/// One trial: a fresh cluster, `mako --mode build`, `mako --mode run`, teardown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedTrial {
    /// Position in the run order, from 1.
    pub index: usize,
    pub engine: Engine,
    pub arm: Arm,
    /// Which repetition of this arm and engine, from 1.
    pub repetition: u32,
    /// fdbserver knobs, in command-line order, no name twice.
    pub knobs: Vec<Knob>,
    /// The step's target TPS of a saturation sweep (`--sweep`), over the workload's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_tps: Option<u64>,
    /// The CPUs of a duet's trial (`--pairing duet`): its half of the allowed CPUs, for
    /// every process of the trial; `None` when the run's own pinning applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Pinning>,
    /// A second run of a trial whose first was set aside (`run::Runner`'s reruns): the
    /// same trial, with artifacts and a work dir of its own (`-rerun`). Never planned.
    #[serde(skip)]
    pub rerun: bool,
}

/// Everything execute needs.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub config: BenchConfig,
    /// Engines in the order they run: the config's, or a recorded baseline's own.
    pub engines: Vec<Engine>,
    /// Effective TPS floors per engine (flag, environment, `baselines/slo.json`).
    pub slo: SloTps,
    /// Where each effective floor came from.
    pub slo_sources: Vec<String>,
    pub workdir: Workdir,
    /// The baseline arm (against a record: the control arm of the recorded build); `None`
    /// with `--no-control`.
    pub baseline: Option<ArmPlan>,
    pub experiment: ArmPlan,
    /// The recorded baseline the experiment is judged against (`--against-recorded`).
    pub recorded: Option<Baseline>,
    /// The capacity check's numbers, once done.
    pub preflight: Option<Preflight>,
    /// A calibration's noise the pairs' is compared with, never pooled (`--noise-from`), as
    /// checked and read before any trial.
    pub noise_prior: Option<NoisePrior>,
    pub trials: Vec<PlannedTrial>,
    /// Which CPUs the trials' processes run on.
    pub pinning: PinPlan,
    /// The two halves of the allowed CPUs a duet's arms run on (`--pairing duet`, see
    /// [`pinning::duet_halves`]); `None` when the trials of a pair run one after the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duet_halves: Option<[Vec<usize>; 2]>,
    /// How the run's processes are kept from outliving it: a cgroup of the run's own, or
    /// process groups only (and why).
    pub containment: Containment,
    /// Where mako's files named after its pid are made: a `/dev/shm` and `/tmp` of its
    /// own, or the host's, claimed first.
    pub mako_names: MakoNames,
    /// Things the user must see before trusting the numbers (e.g. a disk-backed work dir).
    pub warnings: Vec<String>,
    /// The environment every fdbserver, fdbcli and mako gets ([`env::ChildEnv`]).
    pub child_env: env::ChildEnv,
    /// Whether both arms are one build: the same source version and byte-identical
    /// binaries (one tree, or copies of it). With the same knobs, an A/A: the simulation
    /// driver then checks that each seed replays.
    #[serde(skip)]
    pub same_build: bool,
    /// What the simulation driver's trials run (Valgrind, seeds, specs); `None` under the
    /// other drivers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulation: Option<simulation::SimulationPlan>,
}

impl Plan {
    /// Builds the plan; refuses an A/B whose arms cannot differ (the same source version,
    /// byte-identical binaries per `same_binaries`, and the same knobs) unless
    /// `--allow-same`. Without a baseline arm only the experiment runs (against a record,
    /// `--no-control`).
    pub fn new(
        config: BenchConfig,
        engines: Vec<Engine>,
        workdir: Workdir,
        baseline: Option<ArmPlan>,
        experiment: ArmPlan,
        same_binaries: bool,
    ) -> Result<Plan, UsageError> {
        let mut plan = Plan {
            pinning: PinPlan::for_host(config.pin),
            duet_halves: None,
            containment: Containment::for_host()?,
            mako_names: MakoNames::for_host(),
            config,
            engines,
            slo: SloTps::default(),
            slo_sources: Vec::new(),
            workdir,
            baseline,
            experiment,
            recorded: None,
            preflight: None,
            noise_prior: None,
            trials: Vec::new(),
            warnings: Vec::new(),
            child_env: env::ChildEnv::default(),
            simulation: None,
            same_build: false,
        };
        plan.check_arms_differ(same_binaries)?;
        if plan.config.pairing.is_duet() {
            plan.duet_halves = Some(pinning::duet_halves()?);
            plan.pinning = PinPlan::Off(
                "--pairing duet places each trial on its half of the CPUs (duet_halves, \
                 each trial's pinning)"
                    .into(),
            );
        }
        plan.warnings.extend(plan.setup_warnings());
        plan.trials = plan.planned_trials();
        Ok(plan)
    }

    /// Refuses two arms that cannot differ (an A/A) unless `--allow-same`; warns when the
    /// source versions agree but the binaries do not (`same_binaries`: byte-identical).
    fn check_arms_differ(&mut self, same_binaries: bool) -> Result<(), UsageError> {
        let Some(baseline) = &self.baseline else {
            return Ok(());
        };
        let experiment = &self.experiment;
        let user = [&baseline.knobs[..], &experiment.knobs[..]];
        let same_knobs = same_knobs(
            &self.config.cluster,
            user,
            &self.engines,
            self.workdir.tmpfs,
        );
        let version = &baseline.version.source_version;
        let same_version = *version == experiment.version.source_version;
        let version = match version.as_str() {
            "" => "(none: both were built from a source tree without git)",
            v => v,
        };
        self.same_build = same_version && same_binaries;
        if same_version && same_binaries && same_knobs && !self.config.allow_same {
            return Err(UsageError(format!(
                "baseline and experiment run byte-identical binaries (source version \
                 {version}) with the same knobs, so this would be an A/A run, not an A/B; give \
                 the arms different builds or --baseline-knob/--experiment-knob, or pass \
                 --allow-same to measure noise on purpose"
            )));
        }
        if same_version && !same_binaries {
            self.warnings.push(format!(
                "both arms report source version {version} but their binaries differ \
                 (uncommitted changes, or other build flags): the source version alone does \
                 not tell them apart"
            ));
        }
        Ok(())
    }

    /// The warnings of how the run is set up: one pair per arm, a work dir on disk.
    fn setup_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let compared = self.baseline.is_some() || self.config.against.record().is_some();
        // A sweep judges its knee step by step, and reruns the steps the arms split on.
        if compared && self.config.schedule == (crate::config::Schedule::Fixed { pairs: 1 }) {
            // The simulation driver has no noise to wait out: only a second seed is missing.
            let more = match self.config.cluster {
                ClusterSource::Simulated => "give --trials 2 or more (a seed each)",
                ClusterSource::Own(_) | ClusterSource::Existing(_) => {
                    "--trials auto adds pairs until decided"
                }
            };
            warnings.push(format!(
                "--trials 1 GIVES AT MOST INCONCLUSIVE: one trial per arm and engine carries \
                 no estimate of the noise, so no change can be called; the statistics need 2 \
                 pairs, and {MIN_PAIRS} or more resolve changes of a few percent ({more})"
            ));
        }
        if let (Some(_), &crate::config::Schedule::Fixed { pairs }) =
            (&self.duet_halves, &self.config.schedule)
        {
            if pairs % 2 == 1 && pairs > 1 {
                warnings.push(format!(
                    "a duet of {pairs} pairs puts the baseline on the first half of \
                     the CPUs in {} of them and on the second in {}: a difference between the \
                     halves does not cancel from the mean; give an even --trials",
                    pairs / 2 + 1,
                    pairs / 2
                ));
            }
        }
        let workdir = &self.workdir;
        // The simulator's files are simulated: the disk does not bound its counts.
        if !workdir.tmpfs && !matches!(self.config.cluster, ClusterSource::Simulated) {
            warnings.push(format!(
                "WORK DIR {} IS NOT A RAM DISK (statfs type {}): TPS will be bound by disk \
                 fsync latency, not by the storage server's CPU; use --workdir on a tmpfs",
                workdir.path.display(),
                workdir.fs_type
            ));
        }
        warnings
    }

    /// Every trial planned up front, in run order: the planned pairs of each engine (at
    /// each step of a sweep, each step's pairs numbered on), the baseline's trials only
    /// when a baseline arm runs.
    fn planned_trials(&self) -> Vec<PlannedTrial> {
        let steps: Vec<Option<u64>> = match self.config.schedule.ladder() {
            Some(ladder) => ladder.iter().copied().map(Some).collect(),
            None => vec![None],
        };
        let pairs = self.config.schedule.planned_pairs();
        let mut trials = Vec::new();
        for &engine in &self.engines {
            for (step, &target_tps) in steps.iter().enumerate() {
                for (repetition, arm) in step_order(pairs, self.config.seed, step) {
                    if arm == Arm::Baseline && self.baseline.is_none() {
                        continue;
                    }
                    trials.push(PlannedTrial {
                        index: trials.len() + 1,
                        target_tps,
                        ..self.trial(engine, arm, step as u32 * pairs + repetition)
                    });
                }
            }
        }
        trials
    }

    /// A trial of `arm` on `engine`, its `repetition`-th, with its knobs; not numbered
    /// (index 0) and at the workload's target TPS.
    fn trial(&self, engine: Engine, arm: Arm, repetition: u32) -> PlannedTrial {
        let user = &self.arm(arm).knobs;
        PlannedTrial {
            index: 0,
            engine,
            arm,
            repetition,
            knobs: trial_knobs(&self.config.cluster, user, engine, self.workdir.tmpfs),
            target_tps: None,
            pinning: self.duet_pinning(arm, repetition),
            rerun: false,
        }
    }

    /// A duet trial's CPUs: in odd pairs the baseline has the first half and the
    /// experiment the second, in even pairs the other way round, so that a difference
    /// between the halves cancels over pairs. `None` in a sequential run.
    fn duet_pinning(&self, arm: Arm, repetition: u32) -> Option<Pinning> {
        let halves = self.duet_halves.as_ref()?;
        let first = (repetition % 2 == 1) == (arm == Arm::Baseline);
        let cpus = halves[usize::from(!first)].clone();
        Some(Pinning {
            storage: cpus.clone(),
            others: cpus,
        })
    }
    /// The two trials of pair `repetition` of `engine`, in run order, for `--trials auto`
    /// runs past the planned pairs; their `index` is left 0 for the runner to set.
    pub fn pair(&self, engine: Engine, repetition: u32) -> Vec<PlannedTrial> {
        arm_order(repetition, self.config.seed)
            .into_iter()
            .filter(|(rep, arm)| {
                *rep == repetition && (*arm == Arm::Experiment || self.baseline.is_some())
            })
            .map(|(_, arm)| self.trial(engine, arm, repetition))
            .collect()
    }

    /// The arms that run: the baseline (when there is one), then the experiment.
    pub fn arms(&self) -> impl Iterator<Item = &ArmPlan> {
        self.baseline.iter().chain([&self.experiment])
    }

    /// The arm's build; only planned arms have trials, so the baseline is there when asked.
    pub fn arm(&self, arm: Arm) -> &ArmPlan {
        match arm {
            Arm::Baseline => self
                .baseline
                .as_ref()
                .expect("baseline trials only with a baseline arm"),
            Arm::Experiment => &self.experiment,
        }
    }

    /// Human-readable plan for `--dry-run`: [`Plan::render_body`] and the warnings.
    pub fn render(&self) -> String {
        let mut s = self.render_body();
        for warning in &self.warnings {
            let _ = writeln!(s, "WARNING: {warning}");
        }
        s
    }

    /// The plan without its warnings (the run log shows those at warn level).
    pub fn render_body(&self) -> String {
        let mut s = String::new();
        if let Some(r) = &self.recorded {
            let _ = writeln!(s, "{:<10} recorded baseline {}", "record", r.summary());
        }
        if let Some(n) = &self.noise_prior {
            let _ = writeln!(
                s,
                "{:<10} compared with calibration {} (started {}, {} engine/metric figures), \
                 not pooled",
                "noise",
                n.source.display(),
                n.calibrated_at,
                n.noise.len()
            );
        }
        for a in self.arms() {
            let _ = writeln!(
                s,
                "{:<10} {} ({}, source version {})",
                a.arm.to_string(),
                a.tree.root.display(),
                a.version.release,
                a.version.source_version
            );
        }
        let _ = writeln!(
            s,
            "work dir   {} ({}, {} free, chosen by {})",
            self.workdir.path.display(),
            self.workdir.kind(),
            human_bytes(self.workdir.free_bytes),
            self.workdir.chosen_by
        );
        let _ = writeln!(s, "workload   {}", self.workload_line());
        let _ = writeln!(s, "cluster    {}", self.cluster_line());
        if let Schedule::Sweep { ladder, pairs } = &self.config.schedule {
            let _ = writeln!(
                s,
                "sweep      targets {} TPS, {pairs} pair(s) each, over the workload's target; \
                 it stops one step past the knee, so fewer trials than listed may run",
                crate::config::readwrite::ladder_text(ladder).replace(',', ", "),
            );
        }
        s.push_str(&self.judging_lines());
        if let Some(r) = self.config.port_range {
            let _ = writeln!(
                s,
                "ports      {r}, {} per trial",
                crate::config::ports_per_trial(&self.config)
            );
        }
        let mako = self.config.workload.driver_kind().needs_mako();
        let _ = writeln!(s, "environment {}", self.child_env.summary(mako));
        if let Schedule::Sequential { budget } = self.config.schedule {
            let _ = writeln!(
                s,
                "adaptive   pairs are added after these until decided or {} are spent",
                humantime::format_duration(budget)
            );
        }
        let _ = writeln!(s, "{}", self.trials_header());
        for t in &self.trials {
            let _ = writeln!(s, "{}", self.trial_line(t));
        }
        s
    }

    /// The plan's lines on what shapes the judging besides the trials: pinning and TPS
    /// floors, or under the simulation driver its gates and tolerance.
    fn judging_lines(&self) -> String {
        let mut s = String::new();
        if matches!(self.config.cluster, ClusterSource::Simulated) {
            // Counts depend neither on where a process runs nor on a TPS floor.
            let _ = writeln!(
                s,
                "gates      {} (tolerance {}%); no pinning, no TPS floor: counts do not \
                 depend on them",
                self.config
                    .gates
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.config.max_regression_pct
            );
        } else if let Some([first, second]) = &self.duet_halves {
            let _ = writeln!(
                s,
                "pairing    duet: each pair's arms at once, one on CPU {} and the other on \
                 CPU {}, swapped from pair to pair ({})",
                cpu_list(first),
                cpu_list(second),
                self.config.pairing.reason
            );
        } else {
            let _ = writeln!(
                s,
                "pairing    sequential: each pair's trials one after the other ({})",
                self.config.pairing.reason
            );
            let _ = writeln!(s, "pinning    {}", self.pinning);
        }
        if !matches!(self.config.cluster, ClusterSource::Simulated) {
            let slo = match self.slo_sources.as_slice() {
                [] => "no TPS floor (--slo-tps, PERFGATE_SLO_TPS_<ENGINE>, slo.json)".to_string(),
                sources => sources.join("; "),
            };
            let _ = writeln!(s, "slo        {slo}");
        }
        s
    }

    /// The line over the trials: how many, the seed of their order, and the least time
    /// they take (their test time; each trial's cluster start and data load add to it,
    /// and the run says its own estimate once a trial has ended).
    fn trials_header(&self) -> String {
        if let Some(v) = self.simulation.as_ref().map(|s| &s.valgrind) {
            return format!(
                "trials     {} in this order (--seed {} repeats it), {} at a time (one per \
                 core); trial #k runs simulator seed k, under {} (2-5 min a seed on a \
                 2-core VM):",
                self.trials.len(),
                self.config.seed,
                self.parallel_trials(),
                v.version
            );
        }
        let seconds = self.config.workload.seconds;
        let at_once = self.parallel_trials() as u64;
        let test = Duration::from_secs(self.trials.len() as u64 * seconds / at_once);
        // A sweep may stop before its last step, and reruns a step the arms split on.
        let least = match self.config.schedule {
            Schedule::Sweep { .. } => "if each runs once,",
            Schedule::Fixed { .. } | Schedule::Sequential { .. } => "at least",
        };
        // A cluster the gate did not start is only checked before each trial.
        let setup = match self.config.cluster {
            ClusterSource::Own(_) | ClusterSource::Simulated => "cluster start",
            ClusterSource::Existing(_) => "status check",
        };
        let order = match at_once {
            1 => "in this order",
            _ => "a pair at once, the pair's arms started together",
        };
        format!(
            "trials     {} {order} (--seed {} repeats it), {least} {} of test time ({seconds} \
             s each), plus each trial's {setup} and data load:",
            self.trials.len(),
            self.config.seed,
            humantime::format_duration(test),
        )
    }

    /// One trial's line of the plan: index, arm, engine, repetition, sweep target, knobs.
    fn trial_line(&self, t: &PlannedTrial) -> String {
        let whose = self.config.cluster.knob_owner();
        let knobs: Vec<String> = t.knobs.iter().map(Knob::arg).collect();
        let knobs = match knobs.is_empty() {
            true => String::new(),
            false => format!("{whose}{}", knobs.join(" ")),
        };
        let target = t
            .target_tps
            .map(|t| format!("target {t} TPS  "))
            .unwrap_or_default();
        let cpus = t
            .pinning
            .as_ref()
            .map(|p| format!("on CPU {}  ", cpu_list(&p.others)))
            .unwrap_or_default();
        format!(
            "  {:>3}. {} {:<15} {:<10} #{}  {cpus}{target}{knobs}",
            t.index,
            t.arm.letter(),
            t.engine.to_string(),
            t.arm.to_string(),
            t.repetition,
        )
    }

    /// The plan's `workload` line: the workload, and the testers on other hosts that
    /// share its target.
    fn workload_line(&self) -> String {
        let summary = self.config.workload.summary();
        let remote = self.config.cluster.remote_testers();
        let here = self.config.workload.driver_kind().testers();
        match remote {
            0 => summary,
            n => format!(
                "{summary}; plus {n} tester(s) on other hosts (--remote-testers): the target \
                 is split over {} testers",
                here + n
            ),
        }
    }

    /// How many trials run at the same time: one; the two of a pair in a duet; under the
    /// simulation driver one per core of the host (`std::thread::available_parallelism`, which honours affinity and
    /// cgroup quotas): an instruction count does not depend on what else runs, so the
    /// trials of a pair, and several pairs, run at once.
    pub fn parallel_trials(&self) -> usize {
        match self.config.cluster {
            ClusterSource::Simulated => {
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            }
            ClusterSource::Own(_) if self.duet_halves.is_some() => 2,
            ClusterSource::Own(_) | ClusterSource::Existing(_) => 1,
        }
    }

    /// The plan's `cluster` line: the shape of the cluster each trial starts, or the
    /// cluster the gate did not start and the testers it waits for.
    fn cluster_line(&self) -> String {
        match &self.config.cluster {
            ClusterSource::Existing(e) => format!(
                "existing, not started by the gate: {} (coordinators {}), its shape from \
                 status json at each trial; {} tester(s) here{}",
                e.path.display(),
                e.connection.coordinators.join(","),
                self.config.workload.driver_kind().testers(),
                match e.remote_testers {
                    0 => String::new(),
                    n => format!(" and {n} on other hosts"),
                }
            ),
            ClusterSource::Own(t) => t.summary(),
            ClusterSource::Simulated => "FDB's simulator, in one process per trial, under \
                                          cachegrind: single replication, one storage server, \
                                          tlog, commit proxy, GRV proxy and resolver; no \
                                          buggify, fault injection or attrition"
                .to_string(),
        }
    }
}

/// Refuses a tree whose `CMakeCache.txt` shows a build whose numbers would be invalid
/// (not Release, no mako where `needs_mako`, instrumented), unless `allow`
/// (`--allow-non-release`: then each problem becomes a warning).
pub fn check_build_config(
    tree: &FdbTree,
    needs_mako: bool,
    allow: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<BuildConfig>> {
    let (config, problems) = match read_build_config(&tree.root) {
        Ok(c) => {
            let mut p = c.problems();
            if !needs_mako {
                p.retain(|p| !p.starts_with("BUILD_MAKO"));
            }
            (Some(c), p)
        }
        Err(e) => (
            None,
            vec![format!(
                "{e:#}: cannot check it is a Release build with -DBUILD_MAKO=ON"
            )],
        ),
    };
    if problems.is_empty() {
        return Ok(config);
    }
    let what = format!(
        "build tree {}: {}",
        tree.root.display(),
        problems.join("; ")
    );
    if !allow {
        return Err(
            UsageError(format!("{what}; pass --allow-non-release to run it anyway")).into(),
        );
    }
    warnings.push(format!("NOT A RELEASE BUILD (--allow-non-release): {what}"));
    Ok(config)
}

/// The knobs of a trial of an arm with user knobs `user` on `engine` (`tmpfs`: the work
/// dir is a RAM disk): the user's with the automatic ones (`fdb::knob::effective_knobs`);
/// against a cluster the gate did not start, the testers' alone (`fdb::knob::tester_knobs`):
/// its servers have their own.
pub fn trial_knobs(
    cluster: &ClusterSource,
    user: &[Knob],
    engine: Engine,
    tmpfs: bool,
) -> Vec<Knob> {
    match cluster {
        ClusterSource::Existing(_) => tester_knobs(tmpfs),
        ClusterSource::Own(_) => effective_knobs(user, engine, tmpfs),
        // The simulator's storage is simulated files: no direct I/O to turn off.
        ClusterSource::Simulated => user.to_vec(),
    }
}

/// Whether both arms' fdbservers get the same knobs for every engine, given the arms'
/// user knobs (`[baseline, experiment]`), compared as command lines (`tmpfs`: the work dir
/// is a RAM disk): a user knob equal to an automatic one is no change.
pub fn same_knobs(
    cluster: &ClusterSource,
    user: [&[Knob]; 2],
    engines: &[Engine],
    tmpfs: bool,
) -> bool {
    engines.iter().all(|&e| {
        let [a, b] = user.map(|knobs| -> Vec<String> {
            trial_knobs(cluster, knobs, e, tmpfs)
                .iter()
                .map(Knob::arg)
                .collect()
        });
        a == b
    })
}

/// Arms in balanced blocks: each block of two repetitions runs A B B A or B A A B (a
/// trailing single repetition A B or B A), chosen by a generator seeded with `seed`. Each
/// pair runs both arms back to back, a block cancels a linear drift of the host, and the
/// random choice keeps a periodic disturbance from lining up with one arm.
pub fn arm_order(trials: u32, seed: u64) -> Vec<(u32, Arm)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (a, b) = (Arm::Baseline, Arm::Experiment);
    let mut order = Vec::new();
    for first in (1..=trials).step_by(2) {
        let pairs = if rng.random_bool(0.5) {
            [[a, b], [b, a]]
        } else {
            [[b, a], [a, b]]
        };
        for (rep, pair) in (first..=trials.min(first + 1)).zip(pairs) {
            order.extend(pair.map(|arm| (rep, arm)));
        }
    }
    order
}

/// [`arm_order`] of step `step` (from 0) of a sweep, or of a run without one (step 0):
/// each step draws its own order from `seed`, since with one pair per step one order at
/// every step would run the same arm first all the way up the ladder.
fn step_order(trials: u32, seed: u64, step: usize) -> Vec<(u32, Arm)> {
    arm_order(trials, seed.wrapping_add(step as u64))
}

fn human_bytes(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_run_in_balanced_blocks_chosen_by_the_seed() {
        let letters = |trials, seed| -> String {
            arm_order(trials, seed)
                .iter()
                .map(|(_, a)| a.letter())
                .collect()
        };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let order = letters(5, seed);
            assert_eq!(order.len(), 10);
            // Blocks of four are ABBA or BAAB; the last pair is AB or BA.
            for block in order.as_bytes().chunks(4) {
                let b = std::str::from_utf8(block).unwrap();
                assert!(["ABBA", "BAAB", "AB", "BA"].contains(&b), "{order}");
            }
            assert_eq!(order, letters(5, seed), "the seed decides");
            seen.insert(order);
        }
        assert!(seen.len() > 4, "the seed matters: {seen:?}");
        // A sweep's steps of one pair each do not all run the same arm first.
        let firsts: std::collections::BTreeSet<Arm> =
            (0..8).map(|step| step_order(1, 3, step)[0].1).collect();
        assert_eq!(firsts.len(), 2, "{firsts:?}");
        assert_eq!(step_order(4, 3, 0), arm_order(4, 3));
        let reps: Vec<u32> = arm_order(3, 7).iter().map(|(r, _)| *r).collect();
        assert_eq!(reps, [1, 1, 2, 2, 3, 3]);
    }
}
