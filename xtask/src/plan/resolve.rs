//! Plan stage: what a run resolves from its config before anything slow starts (the
//! recorded baseline and with it the engine, the SLO floors, the work dir and that a trial
//! fits on it), then the [`Plan`] from the arms' trees.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use super::simulation::{SimulationPlan, Valgrind};
use fdb::{knob::KnobSource, Engine, Knob, Release};

use super::{
    check_build_config,
    env::ChildEnv,
    preflight::{self, Preflight},
    workdir::{self, Workdir},
    ArmPlan, Plan,
};
use crate::{
    build::{
        tree::{same_binaries, FdbTree},
        Provenance,
    },
    config::existing::ExistingCluster,
    config::{
        slo, Against, Arm, BenchConfig, ClusterSource, DriverKind, Metric, PairingChoice,
        HARDWARE_PMU,
    },
    error::UsageError,
    results::{
        baseline::{self, Baseline},
        fs::check_results_dir,
        host::Host,
    },
};

/// What a run resolves from its config before anything slow starts (a build, a trial).
pub struct Prepared {
    /// The engines that run: the config's, or the recorded baseline's.
    engines: Vec<Engine>,
    /// The effective TPS floors and where each came from.
    slo: slo::Floors,
    workdir: Workdir,
    /// `--against-recorded`: the record and the warnings of comparing with it.
    recorded: Option<(Baseline, Vec<String>)>,
    /// That a trial fits on the work dir (a duet's two at once).
    preflight: Preflight,
    /// The config's pairing, or sequential where `--pairing auto` chose a duet and two
    /// trials at once do not fit.
    pairing: PairingChoice,
    /// The control arm of a record, when one runs: the recorded build as it was recorded.
    control: Option<Control>,
    /// Valgrind, found before any build, under the simulation driver.
    valgrind: Option<Valgrind>,
}

/// The control arm of `--against-recorded` (without `--no-control`): the record's user
/// knobs, and the record's own build tree when it is still there and no
/// `--baseline-build` was given (else the control is built from source at the record's
/// source version). The plan checks that the tree is the recorded build (source version
/// and configuration), as for a given tree.
struct Control {
    knobs: Vec<Knob>,
    tree: Option<PathBuf>,
}

impl Control {
    /// The control arm of record `b`. A recorded tree that is still there is the
    /// control's even when it is damaged, so that the plan's check of it says what is
    /// wrong with it; only a tree that is gone is built again from source, and the log
    /// says so.
    ///
    /// A record is data, not code: a `baselines/*.json` changed in a merge request could
    /// point the gate, root on CI, at binaries a local user controls. Its tree is run
    /// only when it and every binary the gate would start pass the files layer's trust
    /// rules (owned by root or this user, writable by nobody else, on a path only they
    /// control). Errors: a [`UsageError`] naming the tree and what to do.
    fn of(config: &BenchConfig, b: &Baseline) -> Result<Control> {
        let recorded = b.build_tree.as_deref().map(PathBuf::from);
        let tree = match recorded.filter(|_| config.baseline.build_dir.is_none()) {
            // The tree as resolved and checked, links and all: no other user can change
            // what that path names before the binaries run.
            Some(t) if t.symlink_metadata().is_ok() => Some(check_recorded_tree(b, &t)?),
            Some(t) => {
                tracing::info!(
                    "the build tree of baseline {}, {}, is gone: the control arm is built \
                     from source at its source version {}",
                    b.name,
                    t.display(),
                    b.build.source_version
                );
                None
            }
            None => None,
        };
        Ok(Control {
            knobs: recorded_user_knobs(b),
            tree,
        })
    }
}

/// Refuses the tree `tree` that record `b` names unless it and the binaries the gate runs
/// from it are trusted ([`FdbTree::trusted`]), before anything is built. Returns the
/// tree's path without links.
fn check_recorded_tree(b: &Baseline, tree: &Path) -> Result<PathBuf> {
    let what = format!(
        "the build tree of baseline {} (its record's build_tree)",
        b.name
    );
    FdbTree::trusted(tree, &what).map_err(|e| {
        UsageError(format!(
            "{e:#}: the gate would run it as this user; pass --baseline-build with a tree of \
             your own, or remove the record's build_tree to build the control arm from its \
             source version"
        ))
        .into()
    })
}

/// Whether record `b` can judge this run (`tmpfs`: the work dir is a RAM disk): the same
/// workload, host class, work dir kind, knobs, cluster shape and sweep ladder, as
/// [`Baseline::check_compatible`] checks them. Returns the warnings of what
/// `--allow-host-mismatch` or `--allow-knob-mismatch` let pass. Errors: a [`UsageError`]
/// naming what differs.
fn check_record(config: &BenchConfig, b: &Baseline, tmpfs: bool) -> Result<Vec<String>> {
    let ours = &config.experiment.knobs;
    let knobs = super::trial_knobs(&config.cluster, ours, b.engine, tmpfs);
    let run = baseline::RunSetup {
        host: &Host::read(),
        workload: &config.workload,
        workdir_tmpfs: tmpfs,
        knobs: &knobs,
        topology: config.cluster.topology(),
        sweep: config.schedule.ladder(),
        existing: config.cluster.existing().is_some(),
    };
    let allowed = baseline::Allowed {
        host: config.allow_host_mismatch,
        knobs: config.allow_knob_mismatch,
    };
    b.check_compatible(&run, allowed)
}

impl Prepared {
    /// The engines that run.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    /// The recorded baseline of `--against-recorded`.
    pub fn record(&self) -> Option<&Baseline> {
        self.recorded.as_ref().map(|(b, _)| b)
    }

    /// Whether the work dir is a RAM disk (which decides the automatic knobs).
    pub fn tmpfs(&self) -> bool {
        self.workdir.tmpfs
    }

    /// The user knobs of `arm`, in order (later ones win): the config's, or for the
    /// control arm of a record, the record's.
    pub fn arm_knobs<'a>(&'a self, config: &'a BenchConfig, arm: Arm) -> &'a [Knob] {
        match (&self.control, arm) {
            (Some(c), Arm::Baseline) => &c.knobs,
            _ => &config.arm(arm).knobs,
        }
    }

    /// The build tree `arm` runs without a build: the user's (`--*-build`), or for the
    /// control arm of a record the record's own tree while it holds `bin/fdbserver`.
    /// `None`: the arm is built from source.
    pub fn given_tree<'a>(&'a self, config: &'a BenchConfig, arm: Arm) -> Option<&'a Path> {
        let control = match (&self.control, arm) {
            (Some(c), Arm::Baseline) => c.tree.as_deref(),
            _ => None,
        };
        config.arm(arm).build_dir.as_deref().or(control)
    }

    /// Whether the two arms get the same fdbserver knobs for every engine (an A/A run
    /// unless their builds differ): [`super::same_knobs`] of the arms' user knobs.
    pub fn same_knobs(&self, config: &BenchConfig) -> bool {
        let knobs = [Arm::Baseline, Arm::Experiment].map(|arm| self.arm_knobs(config, arm));
        super::same_knobs(&config.cluster, knobs, &self.engines, self.workdir.tmpfs)
    }
}

/// Checks and resolves what needs no build tree: the recorded baseline (which also fixes
/// the engine), the SLO floors, that `--out` is free, the work dir (it may create the
/// directory) and that a trial fits on it. Errors are the user's to fix, before hours of
/// building.
pub fn prepare(config: &BenchConfig) -> Result<Prepared> {
    let baselines = baseline::dir(config.baselines_dir.as_deref())?;
    let record = match config.against.record() {
        Some(name) => Some(baseline::find(&baselines, name)?.1),
        None => None,
    };
    // A record is one engine's: that engine is what runs.
    let engines = match &record {
        Some(b) => vec![b.engine],
        None => config.engines.clone(),
    };
    // The simulator's TPS is simulated time's: no floor applies to it.
    let slo = match config.cluster {
        ClusterSource::Simulated => slo::Floors::default(),
        ClusterSource::Own(_) | ClusterSource::Existing(_) => floors(config, &engines, &baselines)?,
    };
    if let Some(out) = &config.out {
        check_results_dir(out, config.copies())?;
    }
    let counted = |m: &Metric| matches!(m, Metric::InstructionsPerTxn(_));
    // The simulation driver counts instructions under Valgrind, with no PMU.
    let valgrind = match config.workload.driver_kind() {
        DriverKind::Simulation(_) => Some(Valgrind::find()?),
        DriverKind::Mako | DriverKind::Multitest(_) => None,
    };
    if let Some(m) = config
        .gates
        .iter()
        .find(counted)
        .filter(|_| valgrind.is_none())
    {
        if !Path::new(HARDWARE_PMU).exists() {
            return Err(UsageError(format!(
                "gating on {} needs a hardware PMU, and this host has none ({HARDWARE_PMU} \
                 is absent, as on VMs without PMU passthrough): gate on storage-cpu-ratio \
                 instead, or run on a host with a PMU",
                m.label()
            ))
            .into());
        }
    }
    if let (Some(wd), Some(out)) = (&config.workdir, &config.out) {
        check_apart(wd, out)?;
    }
    let workdir = workdir::choose(config.workdir.as_deref())?;
    let recorded = match record {
        Some(b) => {
            let warnings = check_record(config, &b, workdir.tmpfs)?;
            Some((b, warnings))
        }
        None => None,
    };
    let best_recorded_tps = recorded.as_ref().and_then(|(b, _)| {
        b.runs()
            .iter()
            .flat_map(|(_, ts)| ts.iter().map(|t| t.tps))
            .reduce(f64::max)
    });
    let (preflight, pairing) = room(config, &workdir, best_recorded_tps)?;
    let control = recorded
        .as_ref()
        .filter(|_| config.against.baseline_arm())
        .map(|(b, _)| Control::of(config, b))
        .transpose()?;
    Ok(Prepared {
        engines,
        slo,
        workdir,
        recorded,
        preflight,
        pairing,
        control,
        valgrind,
    })
}

/// That the run's trials fit on `workdir` (a duet's two at once), and the pairing they fit
/// with: the config's, or sequential where `--pairing auto` chose a duet whose two trials do
/// not fit and one does. Errors: what does not fit, and what would ([`preflight::fits`]).
fn room(
    config: &BenchConfig,
    workdir: &Workdir,
    best_recorded_tps: Option<f64>,
) -> Result<(Preflight, PairingChoice)> {
    let fits = |at_once: u32| {
        preflight::fits(
            &config.workload,
            workdir,
            best_recorded_tps,
            &config.cluster,
            at_once,
        )
    };
    let mut pairing = config.pairing.clone();
    let preflight = match fits(pairing.pairing.trials_at_once()) {
        Err(two) if pairing.auto && pairing.is_duet() => {
            let one = fits(1)?;
            pairing.fall_back(&format!("two trials at once do not fit ({two:#})"));
            one
        }
        fitted => fitted?,
    };
    Ok((preflight, pairing))
}

/// The plan of a run judged against record `b` without a control arm: `--no-control`,
/// or a cluster the gate did not start, which is the one cluster there is.
fn no_control_plan(
    config: BenchConfig,
    engines: Vec<Engine>,
    workdir: Workdir,
    experiment: ArmPlan,
    b: &Baseline,
) -> Result<Plan> {
    let existing = config.cluster.existing().is_some();
    let days = days_without_control(b, existing)?;
    let (why, instead) = match existing {
        true => ("the cluster is not the gate's", ""),
        false => (
            "--no-control",
            "; a control arm of the recorded build gives a verdict on the build alone, \
             with more power",
        ),
    };
    let mut plan = one_arm_plan(config, engines, workdir, experiment)?;
    plan.warnings.push(format!(
        "NO CONTROL ARM ({why}): the experiment is compared unpaired with the record's runs \
         from {days} days, the day-to-day variance in the error{instead}"
    ));
    Ok(plan)
}

/// The days of runs `b` holds, for a judgement without a control arm: at least 2, or a
/// [`UsageError`] saying why one is not enough and what to do (on a cluster the gate did
/// not start, `existing`, a control arm is no remedy: there is one cluster).
fn days_without_control(b: &Baseline, existing: bool) -> Result<usize, UsageError> {
    let days = b.runs().len();
    if days >= 2 {
        return Ok(days);
    }
    let (flag, remedy) = if existing {
        ("--cluster-file with --against-recorded", "")
    } else {
        (
            "--no-control",
            "run a control arm of the recorded build (drop --no-control), or ",
        )
    };
    Err(UsageError(format!(
        "{flag}: baseline {} holds one run, so nothing tells the build's speed from the \
         speed of the day (docs/recorded-baselines.md: against one recorded run, \
         false REGRESSION 17.6% of the time on this project's 2-core host); {remedy}add runs of it from other days with \
         `cargo xtask baseline record --from DIR --name {} --add-run`",
        b.name, b.name
    )))
}

/// Refuses a `--workdir` inside `--out` (checked before either is created): the results
/// dir must start empty and holds the user's files, the work dir gets each trial's data
/// and is wiped. Errors: a [`UsageError`] naming both.
fn check_apart(workdir: &Path, out: &Path) -> Result<(), UsageError> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if abs(workdir).starts_with(abs(out)) {
        return Err(UsageError(format!(
            "--workdir {} is inside --out {}: the results dir must start empty and the work \
             dir is wiped after each trial; give the work dir another place (e.g. /dev/shm)",
            workdir.display(),
            out.display()
        )));
    }
    Ok(())
}

/// Reads the storage engine of a cluster the gate did not start, given the config, the
/// experiment arm (whose fdbcli asks), the children's environment and the work dir (for
/// scratch files). The command passes `run::cluster::Cluster::engine_of_existing`: the plan
/// stage starts no process of FDB's.
pub type EngineProbe<'a> =
    &'a dyn Fn(&BenchConfig, &ArmPlan, &ChildEnv, &Workdir) -> Result<Engine>;

/// The plan of a run: each arm's tree (given, or `built` from source) checked and read,
/// the trials in order, and every warning the user must see before trusting the numbers.
/// Against a cluster the gate did not start, its engine is read with `probe` and is the
/// one engine of the plan.
pub fn plan(
    config: BenchConfig,
    prepared: Prepared,
    built: Vec<(Arm, Provenance)>,
    probe: EngineProbe,
) -> Result<Plan> {
    let mut sources = ArmSource::of_arms(&config, &prepared, built);
    let Prepared {
        engines,
        slo,
        workdir,
        recorded,
        preflight,
        pairing,
        control: _,
        valgrind,
    } = prepared;
    let config = config.paired(pairing);
    let mut build_warnings = Vec::new();
    let mut arm_plan = |arm: Arm| {
        let source = sources.remove(&arm).context("an arm is planned once")?;
        arm_plan(&config, arm, source, &mut build_warnings)
    };
    let one_tree = config.one_tree();
    let experiment = match arm_plan(Arm::Experiment) {
        Ok(e) => e,
        // Both trees wrong: say so at once, not one per attempt.
        Err(e) if config.against.baseline_arm() && !one_tree => match arm_plan(Arm::Baseline) {
            Err(b) => return Err(e.context(format!("{b:#}\nand"))),
            Ok(_) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let (child_env, env_warning) = child_env(&config.cluster);
    let (engines, slo) = match &config.cluster {
        ClusterSource::Existing(_) => {
            let record = recorded.as_ref().map(|(b, _)| b);
            existing_engine(&config, &experiment, &child_env, &workdir, probe, record)?
        }
        ClusterSource::Own(_) | ClusterSource::Simulated => (engines, slo),
    };
    let mut plan = match recorded {
        None if config.against == Against::Nothing => {
            one_arm_plan(config, engines, workdir, experiment)?
        }
        Some((b, warnings)) if !config.against.baseline_arm() => {
            let mut plan = no_control_plan(config, engines, workdir, experiment, &b)?;
            plan.warnings.extend(warnings);
            plan.recorded = Some(b);
            plan
        }
        Some((b, warnings)) => {
            let control = arm_plan(Arm::Baseline)?;
            check_control(&control, &b)?;
            build_warnings.extend(arms_configured_differently(&control, &experiment));
            let same = same_binaries(&control.tree, &experiment.tree)?;
            let mut plan = Plan::new(config, engines, workdir, Some(control), experiment, same)?;
            plan.warnings.extend(warnings);
            plan.recorded = Some(b);
            plan
        }
        None => {
            let baseline = arm_plan(Arm::Baseline)?;
            build_warnings.extend(arms_configured_differently(&baseline, &experiment));
            let same = same_binaries(&baseline.tree, &experiment.tree)?;
            Plan::new(config, engines, workdir, Some(baseline), experiment, same)?
        }
    };
    plan.warnings.extend(build_warnings);
    plan.warnings.extend(warmups_differ(&plan));
    plan.warnings.extend(plan.config.procs_scaled.clone());
    plan.child_env = child_env;
    plan.simulation = SimulationPlan::new(valgrind, &plan.config, &plan.engines)?;
    plan.warnings.extend(env_warning);
    plan.preflight = Some(preflight);
    plan.warnings.extend(slo.warnings);
    (plan.slo, plan.slo_sources) = (slo.tps, slo.sources);
    Ok(plan)
}

/// The user knobs record `b` ran with: the control arm runs the recorded build as it was
/// recorded, with them.
fn recorded_user_knobs(b: &Baseline) -> Vec<fdb::Knob> {
    b.knobs
        .iter()
        .filter(|k| k.source == KnobSource::User)
        .cloned()
        .collect()
}

/// The warning for arms whose makos cut the warmup differently (one with
/// `--warmup_seconds`, one without: 8.0 against 7.x).
fn warmups_differ(plan: &Plan) -> Option<String> {
    let (b, e) = (plan.baseline.as_ref()?, &plan.experiment);
    (b.mako.warmup_seconds != e.mako.warmup_seconds && plan.config.workload.warmup_seconds > 0)
        .then(|| {
            format!(
                "the arms' makos cut the warmup differently (baseline FDB {}, experiment FDB \
                 {}): one counts the transactions after its --warmup_seconds, the other's \
                 window is the mean of its per-second samples, so part of a difference may \
                 be the method's",
                b.mako.release, e.mako.release
            )
        })
}

/// The environment fdbserver, fdbcli and mako get, built from the gate's (with FDB's TLS
/// variables for a `cluster` the gate did not start whose cluster file names TLS
/// coordinators), and the warning naming the FDB_* variables left out, if any, with what
/// to do instead (such a cluster's servers have knobs of their own).
fn child_env(cluster: &ClusterSource) -> (ChildEnv, Option<String>) {
    let tls = cluster.existing().is_some_and(|e| e.connection.tls());
    let env = ChildEnv::from_vars(std::env::vars_os(), tls);
    let fdb_vars: Vec<String> = env.fdb_removed().map(str::to_string).collect();
    let instead = match cluster {
        ClusterSource::Existing(_) => {
            "the testers are clients, and the cluster's servers have their own knobs; \
             FDB_TLS_* pass only with a cluster file of :tls coordinators"
        }
        ClusterSource::Own(_) | ClusterSource::Simulated => {
            "give knobs with --knob, --baseline-knob or --experiment-knob"
        }
    };
    let warning = (!fdb_vars.is_empty()).then(|| {
        format!(
            "{} set in the environment, not passed to fdbserver, fdbcli or mako (FDB 7.2+ \
             applies FDB_KNOB_* after the command line, which would override the arms' \
             knobs): {instead}",
            fdb_vars.join(", ")
        )
    });
    (env, warning)
}

/// The control arm of a release qualification must be the recorded build: its fdbserver
/// reports the record's source version. Errors: a [`UsageError`] naming both versions and
/// the remedies.
fn check_control(control: &ArmPlan, record: &Baseline) -> Result<(), UsageError> {
    let (ours, recorded) = (
        &control.version.source_version,
        &record.build.source_version,
    );
    if ours == recorded {
        // The same commit built another way (-O0, another compiler) is another build: the
        // gap would be blamed on the host.
        let differences = match (&record.build_config, &control.build_config) {
            (Some(r), Some(c)) => r.differences(c),
            _ => Vec::new(),
        };
        if differences.is_empty() {
            return Ok(());
        }
        return Err(UsageError(format!(
            "the control arm ({}) is the recorded source version but was configured \
             differently from the build baseline {} was recorded with (CMakeCache.txt, record \
             vs control: {}): give --baseline-build a tree configured like the recorded one",
            control.tree.root.display(),
            record.name,
            differences.join("; ")
        )));
    }
    Err(UsageError(format!(
        "the control arm ({}) is source version {ours}, but baseline {} was recorded from \
         {recorded}: give --baseline-build a tree of the recorded build, or let the gate build \
         it from --fdb-src (--baseline {recorded}); --no-control compares with the record \
         alone",
        control.tree.root.display(),
        record.name
    )))
}

/// Where an arm's tree comes from and the user knobs it runs with, before it is checked.
struct ArmSource {
    /// A tree that needs no build ([`Prepared::given_tree`]).
    given: Option<PathBuf>,
    /// How the gate built the arm's tree from `--fdb-src`.
    built: Option<Provenance>,
    /// [`Prepared::arm_knobs`].
    knobs: Vec<Knob>,
}

impl ArmSource {
    /// Both arms' sources, each arm's tree either given ([`Prepared::given_tree`]) or in
    /// `built`.
    fn of_arms(
        config: &BenchConfig,
        prepared: &Prepared,
        built: Vec<(Arm, Provenance)>,
    ) -> BTreeMap<Arm, ArmSource> {
        let mut built: BTreeMap<Arm, Provenance> = built.into_iter().collect();
        [Arm::Baseline, Arm::Experiment]
            .map(|arm| {
                let source = ArmSource {
                    given: prepared.given_tree(config, arm).map(Path::to_path_buf),
                    built: built.remove(&arm),
                    knobs: prepared.arm_knobs(config, arm).to_vec(),
                };
                (arm, source)
            })
            .into()
    }
}

/// The plan of one arm: its tree (given, or the one `source.built` says was built)
/// checked, its version and cmake record read. A tree that is not a Release build with mako
/// is refused, or with `--allow-non-release` adds to `warnings`.
fn arm_plan(
    config: &BenchConfig,
    arm: Arm,
    source: ArmSource,
    warnings: &mut Vec<String>,
) -> Result<ArmPlan> {
    let ArmSource {
        given,
        built: provenance,
        knobs,
    } = source;
    let dir = match (given, &provenance) {
        (Some(d), _) => d,
        (None, Some(p)) => p.build_dir.clone(),
        (None, None) => anyhow::bail!("the {arm} arm has no tree: it was neither given nor built"),
    };
    let needs_mako = config.workload.driver_kind().needs_mako();
    let tree = FdbTree::open_for(&dir, needs_mako)
        .with_context(|| format!("{} {} is not usable", config.tree_label(arm), dir.display()))?;
    let version = tree.version()?;
    let mako = tree.mako_caps(&version)?;
    let build_config = check_build_config(&tree, needs_mako, config.allow_non_release, warnings)?;
    let plan = ArmPlan {
        arm,
        tree,
        version,
        mako,
        build_config,
        provenance,
        knobs,
    };
    warnings.extend(check_release(config, &plan)?);
    Ok(plan)
}

/// Whether this arm's FDB release can run the planned trials (the support matrix of
/// `fdb::release`), before anything starts. Errors: a [`UsageError`] naming what the
/// release lacks, the first release that has it, and what to do: a release before
/// [`Release::OLDEST`], an engine the release has no name for, a workload of asynchronous
/// transactions for a mako without `--async_xacts` (7.1). The note for a mako without
/// `--warmup_seconds` (7.1-7.4), whose window is cut from its per-second samples.
fn check_release(config: &BenchConfig, arm: &ArmPlan) -> Result<Option<String>, UsageError> {
    let (caps, w) = (&arm.mako, &config.workload);
    let what = format!(
        "the {} tree {} is {}",
        arm.arm,
        arm.tree.root.display(),
        arm.version.release
    );
    if caps.release < Release::OLDEST {
        return Err(UsageError(format!(
            "{what}: the gate runs FDB 7.2 and later (it reads 7.1's reports, but 7.1's mako \
             cannot run its workloads; docs/fdb-releases.md)"
        )));
    }
    // The multitest driver was read against the tester and ReadWrite code of 7.2 to 8.0
    // (fdb::multitest) and run on 7.3 and 8.0; 7.1's is not known to match.
    let multitest = !w.driver_kind().needs_mako();
    if multitest && caps.release < Release::new(7, 2) {
        return Err(UsageError(format!(
            "{what}: the multitest driver runs FDB 7.2 and later (its output was checked \
             against 7.2 to 8.0's tester code); use a tree of FDB 7.2 or later"
        )));
    }
    if !caps.async_xacts && !multitest {
        return Err(UsageError(format!(
            "{what}: its mako has no --async_xacts (it came with FDB 7.2), and every workload \
             of the gate runs {} concurrent transactions per thread: use a tree of FDB 7.2 or \
             later",
            w.async_xacts
        )));
    }
    for engine in &config.engines {
        caps.release
            .engine_name(*engine)
            .map_err(|e| UsageError(format!("{what}: {e}; choose another --engine")))?;
    }
    if caps.release > Release::NEWEST {
        return Ok(Some(format!(
            "{what}, newer than the releases the gate was checked against ({} to {}): its \
             engine names and report fields are taken to be {}'s",
            Release::OLDEST,
            Release::NEWEST,
            Release::NEWEST
        )));
    }
    Ok((!caps.warmup_seconds && w.warmup_seconds > 0).then(|| {
        format!(
            "{what}: its mako has no --warmup_seconds (it came with FDB 8.0), so it runs all \
             {} s and its TPS is the mean of its per-second samples after the first {} \
             (8.0's counts the transactions after its warmup); its latency and error counts \
             include the warmup",
            w.seconds, w.warmup_seconds
        )
    }))
}

/// The warning for arms whose `CMakeCache.txt` differ in what changes the binaries.
fn arms_configured_differently(baseline: &ArmPlan, experiment: &ArmPlan) -> Option<String> {
    let (a, b) = (
        baseline.build_config.as_ref()?,
        experiment.build_config.as_ref()?,
    );
    let differences = a.differences(b);
    (!differences.is_empty()).then(|| {
        format!(
            "THE ARMS WERE CONFIGURED DIFFERENTLY (CMakeCache.txt, baseline vs experiment): \
             {}; the TPS change includes their effect, not only the code's",
            differences.join("; ")
        )
    })
}

/// The SLO floors of `engines` ([`slo::resolve`]: `--slo-tps`, this process's
/// environment, `<baselines>/slo.json`), warned of misspelled floor variables.
fn floors(config: &BenchConfig, engines: &[Engine], baselines: &Path) -> Result<slo::Floors> {
    let mut floors = slo::resolve(
        config.slo_tps,
        &config.workload.profile,
        engines,
        &|var: &str| std::env::var(var).ok(),
        &baselines.join("slo.json"),
    )?;
    let names = std::env::vars_os().map(|(k, _)| k.to_string_lossy().into_owned());
    floors.warnings.extend(slo::misspelled_vars(names));
    Ok(floors)
}

/// The engine of a cluster the gate did not start (read with `probe`) and its TPS floors.
/// Errors: the probe's, or a record (`--against-recorded`) of another engine.
fn existing_engine(
    config: &BenchConfig,
    experiment: &ArmPlan,
    env: &ChildEnv,
    workdir: &Workdir,
    probe: EngineProbe,
    record: Option<&Baseline>,
) -> Result<(Vec<Engine>, slo::Floors)> {
    let engine = probe(config, experiment, env, workdir)?;
    if let Some(b) = record.filter(|b| b.engine != engine) {
        return Err(UsageError(format!(
            "the cluster's storage engine is {engine}, and baseline {} was recorded on \
             {}: TPS of other engines do not compare; judge it against a record of this \
             cluster (`cargo xtask baseline record --from DIR` of a run on it)",
            b.name, b.engine
        ))
        .into());
    }
    let baselines = baseline::dir(config.baselines_dir.as_deref())?;
    let slo = floors(config, &[engine], &baselines)?;
    Ok((vec![engine], slo))
}

/// The plan of the experiment arm alone (no baseline arm: `--no-control`, or a cluster
/// the gate did not start), with a warning that says what a cluster the gate did not
/// start measures.
fn one_arm_plan(
    config: BenchConfig,
    engines: Vec<Engine>,
    workdir: Workdir,
    experiment: ArmPlan,
) -> Result<Plan> {
    let recorded = config.against.record().is_some();
    let warning = config
        .cluster
        .existing()
        .map(|e| existing_warning(e, recorded));
    let mut plan = Plan::new(config, engines, workdir, None, experiment, false)?;
    plan.warnings.extend(warning);
    Ok(plan)
}

/// What a run against a cluster the gate did not start measures, for the plan's warnings.
fn existing_warning(e: &ExistingCluster, recorded: bool) -> String {
    let verdict = if recorded {
        "one arm, judged against the record's runs of a cluster of the same class (checked \
         at each trial)"
    } else {
        "one arm, no baseline; the verdict is MEASURED (or SLO-VIOLATION below the TPS SLO)"
    };
    let testers = match e.remote_testers {
        0 => "this host's testers'".to_string(),
        n => format!("the testers' (this host's and {n} on other hosts)"),
    };
    format!(
        "EXISTING CLUSTER ({}, coordinators {}): {verdict}; the numbers are the cluster's \
         and {testers} together, and the cluster's shape is read from status json at each \
         trial",
        e.connection.description,
        e.connection.coordinators.join(",")
    )
}
