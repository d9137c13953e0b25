//! Config stage: the load of the multitest driver, FDB's ReadWrite workload run by
//! `fdbserver -r multitest` on tester processes (`fdbserver -c test`), and its three
//! built-in loads (point read, write, mixed).
//!
//! Option names and defaults are ReadWrite's (`fdbserver/workloads/ReadWrite.cpp`,
//! `ReadWriteWorkload.h`; 7.x: `workloads/ReadWrite.actor.cpp`). The loads are those of
//! the reference qualification report of issue 17 (FDB 7.3.77, 16-byte keys, 100-byte
//! values, 60 s per run).

use serde::{Deserialize, Serialize};

use super::usage;
use crate::error::UsageError;

/// Upper bound of `--testers`: each is an fdbserver process on this host.
pub const MAX_TESTERS: u32 = 64;

/// Upper bound of `--actors-per-tester`: each is a concurrent transaction loop in the
/// tester; the reference report runs 64-256.
pub const MAX_ACTORS_PER_TESTER: u32 = 10_000;

/// Upper bound of `--target-tps`: more than any FDB cluster commits.
pub const MAX_TARGET_TPS: u64 = 100_000_000;

/// The shortest test the gate runs, seconds: on FDB 7.3 and later the testers stop about a
/// second before `testDuration` while ReadWrite's window is the middle 75%, so shorter
/// tests under-report TPS (3 s gave 0.72x of a met target on FDB 8.0).
pub const MIN_TEST_SECONDS: u64 = 10;

/// A trial whose measured TPS is below this share of the target did not follow it: the
/// cluster (or the testers' actors) saturated, and the TPS is their capacity.
pub const FOLLOWED_SHARE: f64 = 0.9;

/// The multitest driver's load: a transaction is type A with probability `1 - alpha`,
/// else type B, each with its point reads and writes; `target_tps` is paced over
/// `testers` x `actors_per_tester` transaction loops. Rows, key and value bytes and the
/// test's duration are the workload's (`Workload::rows`, `keylen`, `vallen`, `seconds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadWriteLoad {
    /// `transactionsPerSecond`: the whole test's target, TPS, split over the testers.
    pub target_tps: u64,
    /// Tester processes (`fdbserver -c test`) the gate starts.
    pub testers: u32,
    /// `actorCountPerTester`: concurrent transaction loops of each tester.
    pub actors_per_tester: u32,
    /// `readsPerTransactionA` / `writesPerTransactionA`.
    pub reads_a: u32,
    pub writes_a: u32,
    /// `readsPerTransactionB` / `writesPerTransactionB`.
    pub reads_b: u32,
    pub writes_b: u32,
    /// `alpha`: the probability of a type B transaction, 0 to 1.
    pub alpha: f64,
}

/// The built-in loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// One point read per transaction (A: 1 read; alpha 0).
    PointRead,
    /// One blind write per transaction (B: 1 write; alpha 1).
    Write,
    /// About 91% reads: A 10 reads, B 1 read and 9 writes, alpha 0.1 (ReadWrite's own
    /// defaults).
    Mixed,
}

impl ReadWriteLoad {
    /// A built-in load. The target, 100000 TPS, is beyond what a cluster on a small host
    /// takes, so the measured TPS is the cluster's capacity at 1 tester x 64 actors: what
    /// an A/B compares. A target it follows measures latency at that load instead.
    pub fn built_in(load: Load) -> ReadWriteLoad {
        let base = ReadWriteLoad {
            target_tps: 100_000,
            testers: 1,
            actors_per_tester: 64,
            reads_a: 10,
            writes_a: 0,
            reads_b: 1,
            writes_b: 9,
            alpha: 0.1,
        };
        match load {
            Load::PointRead => ReadWriteLoad {
                reads_a: 1,
                alpha: 0.0,
                ..base
            },
            Load::Write => ReadWriteLoad {
                reads_b: 0,
                writes_b: 1,
                alpha: 1.0,
                ..base
            },
            Load::Mixed => base,
        }
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        format!(
            "A {} reads {} writes, B {} reads {} writes, alpha {}; target {} TPS over {} \
             testers x {} actors",
            self.reads_a,
            self.writes_a,
            self.reads_b,
            self.writes_b,
            self.alpha,
            self.target_tps,
            self.testers,
            self.actors_per_tester
        )
    }

    /// Errors: a value ReadWrite would refuse or misread, or one that is a typo rather than
    /// a load; each names its flag or profile field.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.target_tps == 0 || self.target_tps > MAX_TARGET_TPS {
            return Err(usage(format!(
                "--target-tps {} must be between 1 and {MAX_TARGET_TPS} (the whole test's \
                 target, split over the testers)",
                self.target_tps
            )));
        }
        if self.testers == 0 || self.testers > MAX_TESTERS {
            return Err(usage(format!(
                "--testers {} must be between 1 and {MAX_TESTERS} (tester processes on this \
                 host)",
                self.testers
            )));
        }
        if self.actors_per_tester == 0 || self.actors_per_tester > MAX_ACTORS_PER_TESTER {
            return Err(usage(format!(
                "--actors-per-tester {} must be between 1 and {MAX_ACTORS_PER_TESTER}",
                self.actors_per_tester
            )));
        }
        if !(self.alpha.is_finite() && (0.0..=1.0).contains(&self.alpha)) {
            return Err(usage(format!(
                "profile field `alpha` {} is not a probability (0 to 1)",
                self.alpha
            )));
        }
        let ops_a = self.reads_a + self.writes_a;
        let ops_b = self.reads_b + self.writes_b;
        if (self.alpha < 1.0 && ops_a == 0) || (self.alpha > 0.0 && ops_b == 0) {
            return Err(usage(format!(
                "the load runs empty transactions: type A has {ops_a} operations and type B \
                 {ops_b}, with alpha {} (the probability of B); give the type that runs \
                 reads or writes (profile fields reads_a, writes_a, reads_b, writes_b)",
                self.alpha
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_loads_are_the_reference_reports() {
        let p = ReadWriteLoad::built_in(Load::PointRead);
        assert_eq!((p.reads_a, p.writes_a, p.alpha), (1, 0, 0.0));
        let w = ReadWriteLoad::built_in(Load::Write);
        assert_eq!((w.reads_b, w.writes_b, w.alpha), (0, 1, 1.0));
        let m = ReadWriteLoad::built_in(Load::Mixed);
        assert_eq!(
            (m.reads_a, m.writes_a, m.reads_b, m.writes_b, m.alpha),
            (10, 0, 1, 9, 0.1)
        );
        for l in [p, w, m] {
            l.validate().unwrap();
        }
    }

    #[test]
    fn values_readwrite_would_refuse_are_usage_errors_naming_the_flag() {
        let p = ReadWriteLoad::built_in(Load::PointRead);
        for (bad, flag) in [
            (
                ReadWriteLoad {
                    target_tps: 0,
                    ..p.clone()
                },
                "--target-tps 0",
            ),
            (
                ReadWriteLoad {
                    testers: 65,
                    ..p.clone()
                },
                "--testers 65",
            ),
            (
                ReadWriteLoad {
                    actors_per_tester: 0,
                    ..p.clone()
                },
                "--actors-per-tester 0",
            ),
            (
                ReadWriteLoad {
                    alpha: f64::NAN,
                    ..p.clone()
                },
                "`alpha` NaN",
            ),
            (
                ReadWriteLoad {
                    reads_a: 0,
                    ..p.clone()
                },
                "type A has 0 operations",
            ),
        ] {
            let err = bad.validate().unwrap_err();
            assert!(err.0.contains(flag), "{flag}: {err}");
        }
    }
}
