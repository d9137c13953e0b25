//! Whether a cluster still answers while a workload driver runs longer than it should: a
//! frozen cluster (its processes stopped with SIGSTOP, its host hung) keeps its ports
//! open, so neither a dead server ([`Cluster::check_alive`]) nor a refused connection
//! ([`Cluster::check_coordinators`]) shows it, and mako or the multitest waits for it until
//! its phase's bound: 15 minutes for `mako --mode build` by default.

use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::cluster::Cluster;
use crate::process::PhaseError;

/// Most time between two questions to the cluster, and so the most a frozen cluster adds
/// past when the driver should have ended, twice over.
pub const STALL_PROBE_EVERY: Duration = Duration::from_secs(30);

/// Asks the cluster (`status json`) from a due time on, every `every`, whether its database
/// is available; two answers in a row that it is not end the phase: a cluster that froze
/// answers nothing, and fdbcli then reports no quorum of coordinators reachable (real 8.0,
/// `fdb/testdata/status-json-frozen-coordinator-8.0.json`, after 5 s).
pub struct StallWatch {
    /// The driver, for the message (`mako --mode run`).
    what: &'static str,
    started: Instant,
    /// When to ask next.
    next: Instant,
    every: Duration,
    /// The expected run time, for the message; `None`: no expected end (the load phase).
    expected: Option<Duration>,
    /// What the last unanswered question saw, when the one before it was unanswered too.
    missed: Option<String>,
}

impl StallWatch {
    /// A watch over `what`, started at `started`, whose phase allows `slack` past
    /// `expected` (the driver's run time, `None` for a load: then `slack` is the whole
    /// bound): it asks every quarter of `slack`, at least [`STALL_PROBE_MIN`] and at most
    /// [`STALL_PROBE_EVERY`], from `expected` plus that on.
    pub fn new(
        what: &'static str,
        started: Instant,
        expected: Option<Duration>,
        slack: Duration,
    ) -> StallWatch {
        let every = interval(slack);
        StallWatch {
            what,
            started,
            next: started + expected.unwrap_or_default() + every,
            every,
            expected,
            missed: None,
        }
    }

    /// From now on the driver is expected to end `expected` after `from` (the multitest
    /// once its test started), with `slack` past it: the next question waits until then
    /// plus the interval.
    pub fn expect_end(&mut self, from: Instant, expected: Duration, slack: Duration) {
        self.every = interval(slack);
        self.expected = Some(from.duration_since(self.started) + expected);
        self.next = self.next.max(from + expected + self.every);
    }

    /// Asks the cluster when due. Errors: the second unanswered question in a row, saying
    /// how long the driver ran and what `status json` saw.
    pub fn check(&mut self, cluster: &Cluster) -> Result<(), PhaseError> {
        let now = Instant::now();
        if now < self.next {
            return Ok(());
        }
        // Two questions and their answers take at most 3 intervals of a slack of 4.
        let ask = (self.every / 2).max(STALL_ASK_MIN);
        let seen = cluster.unanswered(ask)?;
        self.next = Instant::now() + self.every;
        let seen = match (seen, self.missed.take()) {
            (Some(seen), Some(_)) => seen,
            (seen, _) => {
                self.missed = seen;
                return Ok(());
            }
        };
        let ran = self.started.elapsed().as_secs();
        let past = match self.expected {
            Some(e) => format!(
                ", {} s past its expected end",
                ran.saturating_sub(e.as_secs())
            ),
            None => String::new(),
        };
        Err(anyhow!(
            "the cluster stopped answering: {} has run {ran} s{past}, and status json found \
             no available database twice, {} s apart ({seen}; the answer is in \
             status-probe.json): its processes may be stopped (SIGSTOP) or its host hung, \
             and {} would wait for it until its bound; check the cluster with `fdbcli \
             status`",
            self.what,
            self.every.as_secs(),
            self.what
        )
        .into())
    }

    /// `e` with what the last question saw when the phase ran out of time after an
    /// unanswered one: a longer bound would not help a cluster that stopped.
    pub fn explain(&self, e: PhaseError) -> PhaseError {
        match (e, &self.missed) {
            (PhaseError::Timeout(bound, said), Some(seen)) => {
                let sep = if said.is_empty() { "" } else { "; " };
                PhaseError::Timeout(
                    bound,
                    format!(
                        "{said}{sep}the cluster did not answer the last status json ({seen}, \
                         kept as status-probe.json): it may have stopped, and then a longer \
                         bound would not help"
                    ),
                )
            }
            (e, _) => e,
        }
    }
}

/// Least time between two questions, and least bound of one: a loaded host's fdbcli may
/// take seconds to answer a healthy cluster.
const STALL_PROBE_MIN: Duration = Duration::from_secs(5);
const STALL_ASK_MIN: Duration = Duration::from_secs(3);

/// A quarter of `slack`, within [`STALL_PROBE_MIN`] and [`STALL_PROBE_EVERY`].
fn interval(slack: Duration) -> Duration {
    (slack / 4).clamp(STALL_PROBE_MIN, STALL_PROBE_EVERY)
}
