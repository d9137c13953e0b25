//! Run stage: what every trial of a run shares ([`TrialContext`]), and how a driver's run
//! (mako's or the multitest's) shows how far it is ([`Progress`]).

use std::{
    path::Path,
    time::{Duration, Instant},
};

use crate::{
    config::{ClusterSource, PhaseBounds, Workload},
    input::PortRange,
    plan::{env::ChildEnv, pinning::Pinning},
};

/// What every trial of a run shares (a duet's trial: with its own CPUs and the meeting
/// of its pair).
#[derive(Clone)]
pub struct TrialContext<'a> {
    pub workload: &'a Workload,
    /// The cluster the trials run against: one each starts, or one the gate did not start
    /// (`--cluster-file`: no servers, no configure).
    pub cluster: &'a ClusterSource,
    pub bounds: &'a PhaseBounds,
    /// This run's directory on the work dir (RAM disk).
    pub run_workdir: &'a Path,
    pub results_dir: &'a Path,
    /// A trial whose storage server was not CPU-bound is an error (`--require-cpu-bound`).
    pub require_cpu_bound: bool,
    /// Probe the host's speed before and after each trial (`super::probe`).
    pub host_probe: bool,
    /// Show a progress bar during mako's run (hidden anyway when stderr is no terminal).
    pub progress: bool,
    /// The record the run is judged against, when it holds a cluster class
    /// (`Baseline::cluster`): each trial's cluster must be of that class.
    pub recorded_cluster: Option<(&'a str, &'a str)>,
    /// CPUs of the storage server and of everything else, when pinned.
    pub pinning: Option<&'a Pinning>,
    /// The environment of every server, fdbcli and mako ([`ChildEnv`]).
    pub env: &'a ChildEnv,
    /// Where servers' and testers' ports come from (`--port-range`).
    pub ports: Option<PortRange>,
    /// What the simulation driver's trials run (Valgrind, seeds, specs).
    pub simulation: Option<&'a crate::plan::simulation::SimulationPlan>,
    /// Where mako's files named after its pid are made.
    pub mako_names: &'a crate::contain::MakoNames,
    /// Where the trials of a duet wait for each other before their measured run.
    pub meeting: Option<&'a Meeting>,
}

/// Why a party of a [`Meeting`] did not come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absent {
    /// It failed before its run, and left.
    Failed,
    /// It was not ready within the bound (or the run was interrupted).
    Late,
}

/// Where the trials that run at once (a duet's two) wait for each other before their
/// measured run, so that both measure the same seconds of the host: each either arrives
/// ([`Meeting::meet`]) or, failed before, leaves ([`Meeting::leave`]).
#[derive(Debug)]
pub struct Meeting {
    parties: usize,
    /// How many arrived, and how many left without arriving.
    state: std::sync::Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

impl Meeting {
    /// A meeting of `parties` trials.
    pub fn new(parties: usize) -> Meeting {
        Meeting {
            parties,
            state: std::sync::Mutex::new((0, 0)),
            changed: std::sync::Condvar::new(),
        }
    }

    /// Arrives and waits, at most `bound`, until every other party arrived or left.
    /// Returns whether all arrived, else why not (the caller runs without one of them).
    pub fn meet(&self, bound: Duration) -> Result<(), Absent> {
        let deadline = Instant::now() + bound;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        self.changed.notify_all();
        while state.0 + state.1 < self.parties {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || crate::process::interrupted() {
                return Err(Absent::Late);
            }
            // Woken by the others, or each second to see an interrupt.
            let wait = left.min(Duration::from_secs(1));
            state = self
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        match state.0 == self.parties {
            true => Ok(()),
            false => Err(Absent::Failed),
        }
    }

    /// Says that a party will not arrive (its trial failed before its run).
    pub fn leave(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 += 1;
        self.changed.notify_all();
    }
}

impl TrialContext<'_> {
    /// The CPUs of everything but the storage server, when pinned.
    pub(super) fn other_cpus(&self) -> Option<&[usize]> {
        self.pinning.map(|p| p.others.as_slice())
    }
}

/// How often a run without a terminal says how far it is.
const QUIET_LINE_EVERY: Duration = Duration::from_secs(60);

/// The progress of a driver's run over its `--seconds`, updated each second: a bar on a
/// terminal (time left and a status); without one (CI logs) and unless `--quiet`, a line
/// each [`QUIET_LINE_EVERY`], so a job log never goes minutes without a sign of life.
pub(super) struct Progress {
    bar: indicatif::ProgressBar,
    /// Lines without a terminal (not `--quiet`).
    lines: bool,
    what: &'static str,
    seconds: u64,
    last_update: Instant,
    last_line: Instant,
}

impl Progress {
    /// A progress over `seconds` of `what` (`mako run`, `multitest`); the bar only when
    /// `wanted` and stderr is a terminal.
    pub(super) fn new(wanted: bool, what: &'static str, seconds: u64) -> Progress {
        let bar = if wanted {
            let bar = indicatif::ProgressBar::new(seconds);
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "  {what} {{bar:30}} {{pos}}/{{len}} s, {{msg}}"
                ))
                .expect("valid template"),
            );
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        Progress {
            bar,
            lines: wanted,
            what,
            seconds,
            last_update: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// At most once a second: `elapsed` into the run (`None`: it has not started, as a
    /// multitest's test while its rows load), and the status `status()` gives.
    pub(super) fn update(&mut self, elapsed: Option<Duration>, status: impl FnOnce() -> String) {
        if self.last_update.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_update = Instant::now();
        let status = match elapsed {
            Some(e) => format!("{}, {}", time_left(e.as_secs(), self.seconds), status()),
            None => status(),
        };
        let elapsed = elapsed.unwrap_or_default();
        if self.bar.is_hidden() && self.lines && self.last_line.elapsed() >= QUIET_LINE_EVERY {
            self.last_line = Instant::now();
            tracing::info!(
                "  {} {} s of {} s, {status}",
                self.what,
                elapsed.as_secs(),
                self.seconds
            );
        }
        // The message first, so that no frame shows the new position with the old time
        // left; past its end the bar stays full, and the message says by how much.
        self.bar.set_message(status);
        self.bar.set_position(elapsed.as_secs().min(self.seconds));
    }

    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// What is left of a run of `seconds` after `elapsed` seconds, or how far past its end it
/// is: the time is the run's own, not an estimate from its rate (which, for a multitest
/// still loading, said "57s left" at 1 of 20 s).
fn time_left(elapsed: u64, seconds: u64) -> String {
    match seconds.checked_sub(elapsed) {
        Some(left) => format!("{left} s left"),
        None => format!(
            "{} s past its end (waiting for the driver to finish)",
            elapsed - seconds
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_runs_own_and_past_its_end_says_by_how_much() {
        assert_eq!(time_left(1, 20), "19 s left");
        assert_eq!(time_left(20, 20), "0 s left");
        // Past its end the bar says by how much and why, not "21/20 s": a frozen cluster's
        // test must not run on unsaid.
        assert_eq!(
            time_left(95, 20),
            "75 s past its end (waiting for the driver to finish)"
        );
    }

    /// Parties meet when all arrived; one that left frees the others at once, and an
    /// absent one that never says so holds them only for the bound.
    #[test]
    fn a_meeting_ends_when_every_party_arrived_or_left() {
        let m = Meeting::new(2);
        std::thread::scope(|s| {
            let other = s.spawn(|| m.meet(Duration::from_secs(600)));
            assert_eq!(m.meet(Duration::from_secs(600)), Ok(()));
            assert_eq!(other.join().unwrap(), Ok(()));
        });
        let m = Meeting::new(2);
        m.leave();
        assert_eq!(m.meet(Duration::from_secs(600)), Err(Absent::Failed));
        let m = Meeting::new(2);
        assert_eq!(m.meet(Duration::ZERO), Err(Absent::Late));
    }
}
