//! Config stage: the shape of the cluster a trial starts. On one machine a "host" is a
//! loopback address of its own (127.0.0.1, 127.0.0.2, ...) whose processes share a
//! machine and zone locality (`--locality-machineid`, `--locality-zoneid`), so a
//! redundancy mode really places replicas on different "hosts". The default is the
//! upstream loopback cluster: one host, one stateless, one log and one storage process,
//! `single` redundancy.

use serde::{Deserialize, Serialize};

use super::usage;
use crate::error::UsageError;

/// Upper bound of `--hosts` (loopback addresses 127.0.0.1 to 127.0.0.N).
pub const MAX_HOSTS: u32 = 16;

/// Upper bound of the processes of one class on one host.
pub const MAX_PER_HOST: u32 = 32;

/// FDB's redundancy modes (`configure new <mode>`, `fdbclient/ManagementAPI.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Redundancy {
    /// One replica.
    Single,
    /// Two replicas, on different zones.
    Double,
    /// Three replicas, on different zones.
    Triple,
}

impl From<crate::cli::RedundancyArg> for Redundancy {
    fn from(r: crate::cli::RedundancyArg) -> Redundancy {
        use crate::cli::RedundancyArg as R;
        match r {
            R::Single => Redundancy::Single,
            R::Double => Redundancy::Double,
            R::Triple => Redundancy::Triple,
        }
    }
}

impl Redundancy {
    /// Replicas of each key, hence the distinct zones (hosts) with storage needed.
    pub fn replicas(self) -> u32 {
        match self {
            Redundancy::Single => 1,
            Redundancy::Double => 2,
            Redundancy::Triple => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Redundancy::Single => "single",
            Redundancy::Double => "double",
            Redundancy::Triple => "triple",
        }
    }
}

/// The cluster of a trial: processes per class on each host, the redundancy mode, the
/// coordinators, and the roles' counts `configure` asks for (`None`: FDB's default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Hosts: loopback addresses 127.0.0.1 to 127.0.0.N, one zone each.
    pub hosts: u32,
    /// Processes of class `stateless`, `log` and `storage` on each host.
    pub stateless_per_host: u32,
    pub logs_per_host: u32,
    pub storage_per_host: u32,
    pub redundancy: Redundancy,
    /// Coordinators: the first stateless process of the first N hosts.
    pub coordinators: u32,
    /// `configure`'s `logs=`, `commit_proxies=`, `grv_proxies=`, `resolvers=`.
    pub logs: Option<u32>,
    pub commit_proxies: Option<u32>,
    pub grv_proxies: Option<u32>,
    pub resolvers: Option<u32>,
}

impl Default for Topology {
    fn default() -> Topology {
        Topology::LOOPBACK
    }
}

impl Topology {
    /// The upstream loopback cluster, the default: one host, one stateless, one log and
    /// one storage process, `single` redundancy, FDB's default role counts.
    pub const LOOPBACK: Topology = Topology {
        hosts: 1,
        stateless_per_host: 1,
        logs_per_host: 1,
        storage_per_host: 1,
        redundancy: Redundancy::Single,
        coordinators: 1,
        logs: None,
        commit_proxies: None,
        grv_proxies: None,
        resolvers: None,
    };

    /// fdbserver processes of the cluster: every host's stateless, log and storage ones.
    pub fn servers(&self) -> u32 {
        self.hosts * (self.stateless_per_host + self.logs_per_host + self.storage_per_host)
    }

    /// The upstream loopback cluster (one host, 1/1/1, single)?
    pub fn is_default(&self) -> bool {
        *self == Topology::default()
    }

    /// `configure new <redundancy> <engine name> [logs=N ...]`'s words after `new`.
    pub fn configure_args(&self, engine_name: &str) -> String {
        let mut s = format!("{} {engine_name}", self.redundancy.as_str());
        for (key, v) in [
            ("logs", self.logs),
            ("commit_proxies", self.commit_proxies),
            ("grv_proxies", self.grv_proxies),
            ("resolvers", self.resolvers),
        ] {
            if let Some(v) = v {
                s += &format!(" {key}={v}");
            }
        }
        s
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} host(s) x ({} stateless, {} log, {} storage), {} redundancy, {} \
             coordinator(s)",
            self.hosts,
            self.stateless_per_host,
            self.logs_per_host,
            self.storage_per_host,
            self.redundancy.as_str(),
            self.coordinators
        );
        let counts = self.configure_args("");
        let counts = counts.split_whitespace().skip(1).collect::<Vec<_>>();
        if !counts.is_empty() {
            s += &format!(", {}", counts.join(" "));
        }
        s
    }

    /// The bench flags that give this shape, e.g. `--hosts 3 --redundancy double
    /// --coordinators 3`; "" for the default cluster.
    pub fn flags(&self) -> String {
        let d = Topology::default();
        let mut f = Vec::new();
        for (flag, v, dv) in [
            ("--hosts", self.hosts, d.hosts),
            (
                "--stateless-per-host",
                self.stateless_per_host,
                d.stateless_per_host,
            ),
            ("--logs-per-host", self.logs_per_host, d.logs_per_host),
            (
                "--storage-per-host",
                self.storage_per_host,
                d.storage_per_host,
            ),
        ] {
            if v != dv {
                f.push(format!("{flag} {v}"));
            }
        }
        if self.redundancy != d.redundancy {
            f.push(format!("--redundancy {}", self.redundancy.as_str()));
        }
        if self.coordinators != d.coordinators {
            f.push(format!("--coordinators {}", self.coordinators));
        }
        for (flag, v) in [
            ("--logs", self.logs),
            ("--commit-proxies", self.commit_proxies),
            ("--grv-proxies", self.grv_proxies),
            ("--resolvers", self.resolvers),
        ] {
            if let Some(v) = v {
                f.push(format!("{flag} {v}"));
            }
        }
        f.join(" ")
    }

    /// Errors, naming the flag: a count out of range, a redundancy mode that needs more
    /// hosts with storage than there are, more coordinators than stateless processes, or
    /// more logs than log processes.
    pub fn validate(&self) -> Result<(), UsageError> {
        if !(1..=MAX_HOSTS).contains(&self.hosts) {
            return Err(usage(format!(
                "--hosts {} must be between 1 and {MAX_HOSTS} (loopback addresses 127.0.0.1 \
                 to 127.0.0.N)",
                self.hosts
            )));
        }
        for (flag, v, least) in [
            ("--stateless-per-host", self.stateless_per_host, 1),
            ("--logs-per-host", self.logs_per_host, 1),
            ("--storage-per-host", self.storage_per_host, 1),
        ] {
            if !(least..=MAX_PER_HOST).contains(&v) {
                return Err(usage(format!(
                    "{flag} {v} must be between {least} and {MAX_PER_HOST}"
                )));
            }
        }
        let replicas = self.redundancy.replicas();
        if self.hosts < replicas {
            return Err(usage(format!(
                "--redundancy {} keeps {replicas} replicas on different zones, and --hosts {} \
                 gives {} zone(s): give --hosts {replicas} or more",
                self.redundancy.as_str(),
                self.hosts,
                self.hosts
            )));
        }
        if self.coordinators == 0 || self.coordinators > self.hosts {
            return Err(usage(format!(
                "--coordinators {} must be between 1 and --hosts {} (one per host, its first \
                 stateless process)",
                self.coordinators, self.hosts
            )));
        }
        let log_processes = self.hosts * self.logs_per_host;
        for (flag, v, most) in [
            ("--logs", self.logs, log_processes),
            (
                "--commit-proxies",
                self.commit_proxies,
                MAX_PER_HOST * MAX_HOSTS,
            ),
            ("--grv-proxies", self.grv_proxies, MAX_PER_HOST * MAX_HOSTS),
            ("--resolvers", self.resolvers, MAX_PER_HOST * MAX_HOSTS),
        ] {
            if let Some(v) = v.filter(|v| *v == 0 || *v > most) {
                return Err(usage(format!(
                    "{flag} {v} must be between 1 and {most}{}",
                    if flag == "--logs" {
                        " (the log processes: --hosts x --logs-per-host)"
                    } else {
                        ""
                    }
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three_double() -> Topology {
        Topology {
            hosts: 3,
            redundancy: Redundancy::Double,
            coordinators: 3,
            logs: Some(2),
            commit_proxies: Some(1),
            grv_proxies: Some(1),
            resolvers: Some(1),
            ..Topology::default()
        }
    }

    #[test]
    fn the_configure_command_names_the_mode_engine_and_counts() {
        assert_eq!(
            Topology::default().configure_args("ssd-redwood-1"),
            "single ssd-redwood-1"
        );
        assert_eq!(
            three_double().configure_args("memory"),
            "double memory logs=2 commit_proxies=1 grv_proxies=1 resolvers=1"
        );
        three_double().validate().unwrap();
        assert_eq!(Topology::default().flags(), "");
        assert_eq!(
            three_double().flags(),
            "--hosts 3 --redundancy double --coordinators 3 --logs 2 --commit-proxies 1 \
             --grv-proxies 1 --resolvers 1"
        );
        assert!(three_double()
            .summary()
            .contains("double redundancy, 3 coordinator(s), logs=2"));
    }

    #[test]
    fn shapes_fdb_could_not_place_are_usage_errors_naming_the_flag() {
        for (t, want) in [
            (
                Topology {
                    hosts: 2,
                    redundancy: Redundancy::Triple,
                    ..Topology::default()
                },
                "--redundancy triple keeps 3 replicas",
            ),
            (
                Topology {
                    coordinators: 2,
                    ..Topology::default()
                },
                "--coordinators 2 must be between 1 and --hosts 1",
            ),
            (
                Topology {
                    logs: Some(2),
                    ..Topology::default()
                },
                "--logs 2 must be between 1 and 1",
            ),
            (
                Topology {
                    hosts: 17,
                    ..Topology::default()
                },
                "--hosts 17",
            ),
            (
                Topology {
                    storage_per_host: 0,
                    ..Topology::default()
                },
                "--storage-per-host 0",
            ),
        ] {
            let err = t.validate().unwrap_err();
            assert!(err.0.contains(want), "{want}: {err}");
        }
    }
}
