//! `fdbcli --exec "status json"`: the part of FDB's machine-readable status the gate
//! reads.

use std::collections::{BTreeMap, BTreeSet};

/// `client.database_status` of a `status json` answer (`fdbclient/StatusClient.actor.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DatabaseStatus {
    pub available: bool,
    pub healthy: bool,
}

/// Reads `client.database_status` from `status json` output; `None` when fdbcli printed
/// nothing or something else (as it does before the database exists).
pub fn parse_database_status(text: &str) -> Option<DatabaseStatus> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let s = v.get("client")?.get("database_status")?;
    Some(DatabaseStatus {
        available: s.get("available")?.as_bool()?,
        healthy: s.get("healthy").and_then(|h| h.as_bool()).unwrap_or(false),
    })
}

/// `cluster.recovery_state.name` of a `status json` answer, e.g. "fully_recovered", or
/// "all_logs_recruited" while a recovery is still under way (`RecoveryState` names,
/// `fdbserver/clustercontroller/Status.cpp`); `None` when the answer has none.
pub fn parse_recovery_state(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let name = v.get("cluster")?.get("recovery_state")?.get("name")?;
    Some(name.as_str()?.to_string())
}

/// Addresses (`IP:PORT`) of the tester-class processes (`class_type` "test") a `status
/// json` answer lists, sorted; empty when it lists none or is not JSON.
pub fn tester_addresses(text: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let mut found: Vec<String> = v["cluster"]["processes"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
        .filter(|p| p["class_type"] == "test")
        .filter_map(|p| p["address"].as_str().map(str::to_string))
        .collect();
    found.sort();
    found
}

/// A `status json` answer with the value of every `--tls-password`/`--tls_password` in
/// the processes' `command_line` (`cluster.processes.*.command_line`, where fdbmonitor
/// puts a `tls_password` of foundationdb.conf) replaced by "(not recorded)"; `None` when
/// there is none to mask. The gate keeps answers in its results, which are shared.
pub fn mask_secrets(text: &str) -> Option<String> {
    if !text.contains("tls-password") && !text.contains("tls_password") {
        return None;
    }
    let mut v: serde_json::Value = serde_json::from_str(text).ok()?;
    let processes = v
        .get_mut("cluster")?
        .get_mut("processes")?
        .as_object_mut()?;
    for p in processes.values_mut() {
        if let Some(line) = p.get_mut("command_line") {
            if let Some(masked) = line.as_str().map(mask_command_line) {
                *line = serde_json::Value::String(masked);
            }
        }
    }
    Some(serde_json::to_string_pretty(&v).ok()? + "\n")
}

/// `line` with the value of `--tls-password` (or `--tls_password`, `=VALUE` or the next
/// word) masked.
fn mask_command_line(line: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut mask_next = false;
    for word in line.split(' ') {
        let flag = word.trim_start_matches('-').replace('_', "-");
        if mask_next {
            out.push("(not recorded)".into());
            mask_next = false;
        } else if let Some((name, _)) = word
            .split_once('=')
            .filter(|_| flag.starts_with("tls-password="))
        {
            out.push(format!("{name}=(not recorded)"));
        } else {
            mask_next = flag == "tls-password";
            out.push(word.to_string());
        }
    }
    out.join(" ")
}

/// The first line of fdbcli's stderr that reports a TLS failure (a certificate, key or
/// CA file it cannot read, a wrong password: "ERROR: TLS error (2107)", "Error reading TLS
/// Certificate"), which no wait mends.
pub fn tls_failure(stderr: &str) -> Option<&str> {
    stderr.lines().find(|l| l.contains("TLS")).map(str::trim)
}

/// The recovery state of a cluster that has finished recovering.
pub const FULLY_RECOVERED: &str = "fully_recovered";

/// The recovery state of a cluster whose coordinators have no record of a database: none
/// was ever created with `configure new` (or the cluster file names other coordinators).
/// `RecoveryStatus::configuration_never_created`, `fdbserver/clustercontroller/Status.cpp`;
/// the cluster controller then also says "unreadable_configuration". Its `status json`
/// answers only after its 5 s transaction and commit probes time out (15.1 s on a real
/// 8.0 one-process cluster here), `testdata/status-json-never-configured-8.0.json` (that
/// real answer, captured with `fdbcli --exec "status json"` before `configure new`).
pub const CONFIGURATION_NEVER_CREATED: &str = "configuration_never_created";

/// What `status json` says of a cluster as a whole: its version, shape and health. The
/// gate records it for a cluster it did not start (`--cluster-file`), whose numbers are
/// only comparable with another run's on a cluster of the same [`ClusterStatus::class`].
/// Fields from `fdbclient/Schemas.cpp` (`statusSchema`) of 7.3 and 8.0, read from real
/// answers of both (`testdata/status-json-*.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterStatus {
    /// The processes' FDB versions (`cluster.processes.*.version`), distinct, sorted.
    pub versions: Vec<String>,
    /// `cluster.protocol_version`, hex.
    pub protocol_version: Option<String>,
    /// `cluster.configuration.redundancy_mode`, e.g. "double".
    pub redundancy_mode: String,
    /// `cluster.configuration.storage_engine`, e.g. "ssd-redwood-1".
    pub storage_engine: String,
    /// `cluster.configuration` role counts: `logs`, `commit_proxies`, `grv_proxies`,
    /// `resolvers` (absent where the release has no such field), `coordinators_count`.
    pub logs: Option<u64>,
    pub commit_proxies: Option<u64>,
    pub grv_proxies: Option<u64>,
    pub resolvers: Option<u64>,
    pub coordinators: Option<u64>,
    /// Processes per `class_type` (storage, log, stateless, transaction, unset, test, ...).
    pub processes_by_class: std::collections::BTreeMap<String, u64>,
    /// Distinct machines of the cluster's servers (testers not counted): a process's
    /// `locality.machineid`, else its address's IP.
    pub machines: u64,
    /// `client.database_status`.
    pub database: DatabaseStatus,
    /// `cluster.recovery_state.name`, e.g. "fully_recovered".
    pub recovery_state: Option<String>,
    /// `cluster.generation`, the recovery count (`fdbserver/clustercontroller/Status.cpp`):
    /// it grows at every recovery (2 right after `configure new`; 4
    /// after the one server of a cluster was killed and restarted, on 8.0 here), so two
    /// answers with different generations span a recovery.
    pub generation: Option<u64>,
    /// The engines the storage servers run (`cluster.processes.*.roles[]` of role
    /// "storage": `storage_metadata.storage_engine`), distinct, sorted, without "unknown"
    /// (what 8.0 says of a new redwood server and of sharded-rocksdb). During a storage
    /// migration (`configure <engine>` with `storage_migration_type=gradual`) they differ
    /// from `storage_engine`, the configured one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage_server_engines: Vec<String>,
}

impl ClusterStatus {
    /// Reads a `status json` answer. Errors: not JSON, or no `cluster.configuration` with
    /// a redundancy mode and storage engine (an unconfigured cluster's answer), or no
    /// process, or no `client.database_status`: each named.
    pub fn parse(text: &str) -> Result<ClusterStatus, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("status json is not JSON: {e}"))?;
        let database = parse_database_status(text)
            .ok_or("status json has no client.database_status.available")?;
        let cluster = v.get("cluster").ok_or("status json has no `cluster`")?;
        let config = cluster
            .get("configuration")
            .ok_or("status json has no cluster.configuration: the database is not configured")?;
        let text_of = |k: &str| config.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let count = |k: &str| config.get(k).and_then(serde_json::Value::as_u64);
        let processes: Vec<&serde_json::Value> = cluster
            .get("processes")
            .and_then(|p| p.as_object())
            .map(|p| p.values().collect())
            .unwrap_or_default();
        if processes.is_empty() {
            return Err("status json lists no process (cluster.processes)".into());
        }
        let versions = versions(&processes);
        let storage_server_engines = storage_server_engines(&processes);
        let processes_by_class = processes_by_class(&processes);
        let machines = machines(&processes);
        Ok(ClusterStatus {
            versions,
            protocol_version: cluster
                .get("protocol_version")
                .and_then(|x| x.as_str())
                .map(str::to_string),
            redundancy_mode: text_of("redundancy_mode")
                .ok_or("status json has no cluster.configuration.redundancy_mode")?,
            storage_engine: text_of("storage_engine")
                .ok_or("status json has no cluster.configuration.storage_engine")?,
            logs: count("logs"),
            commit_proxies: count("commit_proxies"),
            grv_proxies: count("grv_proxies"),
            resolvers: count("resolvers"),
            coordinators: count("coordinators_count"),
            processes_by_class,
            machines,
            database,
            recovery_state: text_at(cluster, &["recovery_state", "name"]),
            generation: cluster
                .get("generation")
                .and_then(serde_json::Value::as_u64),
            storage_server_engines,
        })
    }

    /// The storage engine the cluster runs: the configured one
    /// (`cluster.configuration.storage_engine`, read by [`crate::Engine::from_status`])
    /// when every storage server runs it too. Errors, saying why its TPS is not one
    /// known engine's: storage servers run another engine (a storage migration under
    /// way, or one that never ends, as `gradual` on a one-process cluster); the
    /// configured name is none the gate knows (`none`: a database never configured).
    pub fn engine(&self) -> Result<crate::Engine, String> {
        if let Some(why) = self.engine_mismatch() {
            return Err(why);
        }
        crate::Engine::from_status(&self.storage_engine).ok_or_else(|| {
            format!(
                "its status json names storage engine {:?}, none the gate knows ({}); \
                 `none` is a database never configured (`fdbcli --exec 'configure new \
                 single ssd-redwood-1'` makes one)",
                self.storage_engine,
                crate::Engine::KNOWN.map(|e| e.to_string()).join(", ")
            )
        })
    }

    /// When storage servers run another engine than the configured one: why its TPS is
    /// not the configured engine's. Engine names are compared as
    /// [`crate::Engine::from_status`] reads them.
    fn engine_mismatch(&self) -> Option<String> {
        let configured = crate::Engine::from_status(&self.storage_engine);
        let others: Vec<&str> = self
            .storage_server_engines
            .iter()
            .filter(|e| crate::Engine::from_status(e) != configured || configured.is_none())
            .map(String::as_str)
            .collect();
        (!others.is_empty()).then(|| {
            format!(
                "the cluster is configured for {} but storage servers run {} (status json \
                 storage_metadata.storage_engine): a storage engine migration is under way, \
                 and the TPS would be the old engine's; run once every storage server runs \
                 {}",
                self.storage_engine,
                others.join(", "),
                self.storage_engine
            )
        })
    }

    /// The cluster's class for people and records: its versions, redundancy, engine,
    /// machines and processes per class, e.g. "FDB 8.0.0, double ssd-redwood-1, 3
    /// machines: 3 log, 3 stateless, 3 storage". Tester-class processes are not the
    /// cluster's: they come and go with each test (`machines` counts their hosts only
    /// where a server runs too).
    pub fn class(&self) -> String {
        let classes: Vec<String> = self
            .processes_by_class
            .iter()
            .filter(|(c, _)| c.as_str() != "test")
            .map(|(c, n)| format!("{n} {c}"))
            .collect();
        format!(
            "FDB {}, {} {}, {} machine(s): {}",
            self.versions.join("/"),
            self.redundancy_mode,
            self.storage_engine,
            self.machines,
            classes.join(", ")
        )
    }
}

/// The string at `path` (keys from `v` down) of a `status json` value, when there is one.
fn text_at(v: &serde_json::Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(|x| x.as_str())
        .map(str::to_string)
}

/// The FDB versions of `processes` (`version`), distinct, sorted.
fn versions(processes: &[&serde_json::Value]) -> Vec<String> {
    let mut versions: Vec<String> = processes
        .iter()
        .filter_map(|p| text_at(p, &["version"]))
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// The engines the storage servers among `processes` run (`roles[]` of role "storage":
/// `storage_metadata.storage_engine`), distinct, sorted, without "unknown".
fn storage_server_engines(processes: &[&serde_json::Value]) -> Vec<String> {
    let mut engines: Vec<String> = processes
        .iter()
        .flat_map(|p| {
            p.get("roles")
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
        })
        .filter(|r| r.get("role").and_then(|x| x.as_str()) == Some("storage"))
        .filter_map(|r| text_at(r, &["storage_metadata", "storage_engine"]))
        .filter(|e| e != "unknown")
        .collect();
    engines.sort();
    engines.dedup();
    engines
}

/// How many of `processes` are of each `class_type` ("unset" for one without).
fn processes_by_class(processes: &[&serde_json::Value]) -> BTreeMap<String, u64> {
    let mut by_class = BTreeMap::new();
    for p in processes {
        let class = text_at(p, &["class_type"]).unwrap_or_else(|| "unset".into());
        *by_class.entry(class).or_insert(0) += 1;
    }
    by_class
}

/// The distinct machines of `processes` but the testers (`class_type` "test"): a process's
/// `locality.machineid`, else its address's IP; one with neither counts as one machine.
fn machines(processes: &[&serde_json::Value]) -> u64 {
    let mut machines = BTreeSet::new();
    for p in processes {
        if text_at(p, &["class_type"]).as_deref() == Some("test") {
            continue;
        }
        let ip = text_at(p, &["address"]).map(|a| {
            a.rsplit_once(':')
                .map_or(a.clone(), |(ip, _)| ip.to_string())
        });
        machines.insert(text_at(p, &["locality", "machineid"]).or(ip));
    }
    machines.len() as u64
}

/// What fdbcli prints on stderr while a command has waited 5 s (7 s for some) and goes on
/// waiting (`timeWarning`, `fdbcli/fdbcli.cpp`): progress, never a cause. A never-created
/// database's `status json` prints it before its answer.
pub const LONG_DELAY_WARNING: &str = "WARNING: Long delay (Ctrl-C to interrupt)";

/// fdbcli's stderr when a process of the cluster speaks another protocol
/// (`fdbcli/StatusCommand.cpp`); its `status json` then finds
/// no coordinator reachable (`testdata/fdbcli-incompatible-stderr.txt`, a 7.3 fdbcli against
/// an 8.0 cluster).
pub const INCOMPATIBLE_WARNING: &str = "is incompatible with this version of fdbcli";

/// What the client saw when `status json` shows no available database: its messages and
/// its coordinators (`client.messages`, `client.coordinators` of
/// `fdbclient/StatusClient.actor.cpp`), read from real answers: an unreachable quorum
/// (`testdata/status-json-quorum-not-reachable-7.3-cli.json`) and a coordinator that leads
/// to no cluster controller, as with a wrong ID (`testdata/status-json-no-cluster-controller.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientView {
    /// `client.messages`: (name, description), e.g. ("quorum_not_reachable", "Unable to
    /// reach a quorum of coordinators.").
    pub messages: Vec<(String, String)>,
    /// Coordinators the client could not reach, as `IP:PORT`.
    pub unreachable: Vec<String>,
    /// Coordinators that answered, with the protocol they gave (hex), if any.
    pub reachable: Vec<(String, Option<String>)>,
    /// fdbcli warned on stderr that a process speaks another protocol
    /// ([`INCOMPATIBLE_WARNING`]).
    pub incompatible: bool,
    /// `cluster.messages`, each "description (name: reason; ...)": what the cluster
    /// controller could not say, e.g. `status_incomplete` with "Recovery Status
    /// unavailable." when the servers log no SevInfo events
    /// (`testdata/status-json-incomplete-min-trace-severity-8.0.json`).
    pub cluster_messages: Vec<String>,
}

impl ClientView {
    /// Reads `client.messages` and `client.coordinators` from a `status json` answer and
    /// fdbcli's `stderr`; empty fields where the answer is not JSON or lacks them.
    pub fn parse(text: &str, stderr: &str) -> ClientView {
        let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        let client = &v["client"];
        let text_of = |x: &serde_json::Value, k: &str| x[k].as_str().unwrap_or("").to_string();
        let messages = client["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| (text_of(m, "name"), text_of(m, "description")))
                    .collect()
            })
            .unwrap_or_default();
        let cluster_messages = v["cluster"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let reasons: Vec<&str> = m["reasons"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["description"].as_str())
                    .map(str::trim)
                    .collect();
                let name = text_of(m, "name");
                let name = match reasons.is_empty() {
                    true => name,
                    false => format!("{name}: {}", reasons.join(" ")),
                };
                format!("{} ({name})", text_of(m, "description").trim())
            })
            .collect();
        let mut view = ClientView {
            messages,
            incompatible: stderr.contains(INCOMPATIBLE_WARNING),
            cluster_messages,
            ..ClientView::default()
        };
        let coordinators = client["coordinators"]["coordinators"].as_array();
        for c in coordinators.into_iter().flatten() {
            let address = text_of(c, "address");
            match c["reachable"].as_bool() {
                Some(true) => view
                    .reachable
                    .push((address, c["protocol"].as_str().map(str::to_string))),
                _ => view.unreachable.push(address),
            }
        }
        view
    }

    /// The messages alone, for people: "description (name)", joined by "; ".
    pub fn messages_described(&self) -> String {
        self.messages
            .iter()
            .map(|(name, description)| format!("{} ({name})", description.trim()))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Whether fewer than a majority of the coordinators the client knows answered, some
    /// did: FDB needs a majority (`fdbclient/MonitorLeader.cpp`), so the cluster is
    /// unusable though a coordinator runs.
    pub fn minority_reachable(&self) -> bool {
        let total = self.reachable.len() + self.unreachable.len();
        !self.reachable.is_empty() && self.reachable.len() * 2 <= total
    }

    /// One line for people: the messages, which coordinators were (not) reachable, and the
    /// incompatibility warning; empty when there is nothing to say.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .messages
            .iter()
            .map(|(name, description)| format!("{} ({name})", description.trim()))
            .collect();
        if !self.unreachable.is_empty() {
            parts.push(format!(
                "coordinator(s) not reachable: {}",
                self.unreachable.join(", ")
            ));
        }
        if !self.reachable.is_empty() {
            let answered: Vec<String> = self
                .reachable
                .iter()
                .map(|(a, p)| match p {
                    Some(p) => format!("{a} (protocol {p})"),
                    None => a.clone(),
                })
                .collect();
            parts.push(format!("coordinator(s) reachable: {}", answered.join(", ")));
        }
        if self.incompatible {
            parts.push(
                "fdbcli warns that a process of the cluster is incompatible with its release"
                    .into(),
            );
        }
        if !self.cluster_messages.is_empty() {
            parts.push(format!(
                "the cluster says: {}",
                self.cluster_messages.join("; ")
            ));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_clusters_version_shape_and_health_are_read_from_8_0_and_7_3() {
        // A 3-"host" double-redundancy 8.0 cluster the gate started (`--hosts 3
        // --redundancy double --coordinators 3`), right after configure.
        let s = ClusterStatus::parse(include_str!(
            "../testdata/status-json-3-hosts-double-8.0.json"
        ))
        .unwrap();
        assert_eq!(
            s.class(),
            "FDB 8.0.0, double ssd-redwood-1, 3 machine(s): 3 log, 3 stateless, 3 storage"
        );
        assert_eq!(
            (s.logs, s.coordinators, s.protocol_version.as_deref()),
            (Some(2), Some(3), Some("fdb00b080000000"))
        );
        assert!(s.database.available && !s.database.healthy);
        assert_eq!(s.recovery_state.as_deref(), Some("fully_recovered"));
        assert_eq!(s.generation, Some(2));
        // A single-server 8.0 cluster a few seconds after its server was killed and
        // restarted: available, but still recovering (about 3 s more here).
        let recovering = include_str!("../testdata/status-json-recovering-8.0.json");
        // Captured from an ssd-2 cluster configured to ssd-redwood-1 with
        // storage_migration_type=gradual; its one storage server never migrated.
        let migrating = ClusterStatus::parse(include_str!(
            "../testdata/status-json-migrating-ssd2-to-redwood-8.0.json"
        ))
        .unwrap();
        assert_eq!(migrating.storage_engine, "ssd-redwood-1");
        assert_eq!(migrating.storage_server_engines, ["ssd-2"]);
        let why = migrating.engine().unwrap_err();
        assert!(
            why.contains("configured for ssd-redwood-1 but storage servers run ssd-2"),
            "{why}"
        );
        // A new redwood server says "unknown": no mismatch.
        let fresh =
            ClusterStatus::parse(include_str!("../testdata/status-json-available.json")).unwrap();
        assert!(fresh.storage_server_engines.is_empty());
        assert_eq!(fresh.engine(), Ok(crate::Engine::Redwood));
        // A cluster whose database was never created.
        let never = include_str!("../testdata/status-json-never-configured-8.0.json");
        assert_eq!(
            parse_recovery_state(never).as_deref(),
            Some(CONFIGURATION_NEVER_CREATED)
        );
        assert_eq!(
            parse_database_status(never).map(|d| d.available),
            Some(false)
        );
        assert_eq!(
            parse_recovery_state(recovering).as_deref(),
            Some("all_logs_recruited")
        );
        assert!(parse_database_status(recovering).unwrap().available);
        assert_eq!(
            ClusterStatus::parse(recovering).unwrap().generation,
            Some(4)
        );
        assert_eq!(parse_recovery_state("{}"), None);
        // 7.3.79, the default 1/1/1 cluster; 7.3 names its proxies' counts too.
        let s = ClusterStatus::parse(include_str!("../testdata/status-json-7.3.json")).unwrap();
        assert_eq!(
            s.class(),
            "FDB 7.3.79, single ssd-redwood-1, 1 machine(s): 1 log, 1 stateless, 1 storage"
        );
        assert_eq!(
            (s.commit_proxies, s.grv_proxies, s.resolvers),
            (Some(3), Some(1), Some(1))
        );
    }

    #[test]
    fn a_tls_password_on_a_command_line_is_masked() {
        let text = include_str!("../testdata/status-json-available.json");
        assert_eq!(mask_secrets(text), None);
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        let p = v["cluster"]["processes"].as_object_mut().unwrap();
        let first = p.values_mut().next().unwrap();
        first["command_line"] = serde_json::json!(
            "/usr/sbin/fdbserver --tls-password SEKRIT --public_address=auto:4500 --tls_password=SEKRIT2"
        );
        let masked = mask_secrets(&v.to_string()).unwrap();
        assert!(!masked.contains("SEKRIT"), "{masked}");
        assert!(masked.contains(
            "--tls-password (not recorded) --public_address=auto:4500 --tls_password=(not recorded)"
        ));
        assert_eq!(
            tls_failure("WARNING: x\nERROR: TLS error (2107)\n"),
            Some("ERROR: TLS error (2107)")
        );
        assert_eq!(tls_failure("WARNING: x\n"), None);
    }

    #[test]
    fn testers_are_not_part_of_the_clusters_class() {
        let text = include_str!("../testdata/status-json-available.json");
        let before = ClusterStatus::parse(text).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["cluster"]["processes"]["t1"] = serde_json::json!({
            "address": "10.9.9.9:4600", "class_type": "test", "version": "8.0.0"
        });
        let with_tester = ClusterStatus::parse(&v.to_string()).unwrap();
        assert_eq!(with_tester.processes_by_class["test"], 1);
        assert_eq!(with_tester.class(), before.class());
        assert_eq!(with_tester.machines, before.machines);
        assert_eq!(tester_addresses(&v.to_string()), ["10.9.9.9:4600"]);
        assert!(tester_addresses(text).is_empty());
    }

    #[test]
    fn an_unconfigured_or_foreign_answer_is_refused_with_what_is_missing() {
        for (text, says) in [
            ("", "not JSON"),
            ("{\"client\": {}}", "no client.database_status"),
            (
                "{\"client\": {\"database_status\": {\"available\": false}}, \"cluster\": {}}",
                "the database is not configured",
            ),
            (
                "{\"client\": {\"database_status\": {\"available\": true}}, \"cluster\": \
                 {\"configuration\": {\"redundancy_mode\": \"single\", \
                 \"storage_engine\": \"ssd-2\"}, \"processes\": {}}}",
                "lists no process",
            ),
        ] {
            let e = ClusterStatus::parse(text).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn status_right_after_configure_is_available_but_not_healthy() {
        let s = parse_database_status(include_str!("../testdata/status-json-available.json"));
        assert_eq!(
            s,
            Some(DatabaseStatus {
                available: true,
                healthy: false
            })
        );
    }

    #[test]
    fn empty_status_of_an_unconfigured_cluster_is_not_available() {
        // fdbcli printed nothing before configure (fixture status-json-unconfigured.json).
        assert_eq!(parse_database_status(""), None);
        assert_eq!(parse_database_status("{\"client\": {}}"), None);
    }

    #[test]
    fn why_a_cluster_is_not_available_is_read_from_what_the_client_saw() {
        // A 7.3 fdbcli against an 8.0 cluster: no coordinator answers it, and it warns.
        let v = ClientView::parse(
            include_str!("../testdata/status-json-quorum-not-reachable-7.3-cli.json"),
            include_str!("../testdata/fdbcli-incompatible-stderr.txt"),
        );
        assert!(v.incompatible && !v.minority_reachable());
        assert_eq!(v.unreachable, ["127.0.0.1:4711"]);
        assert_eq!(
            v.describe(),
            "Unable to reach a quorum of coordinators. (quorum_not_reachable); coordinator(s) \
             not reachable: 127.0.0.1:4711; fdbcli warns that a process of the cluster is \
             incompatible with its release"
        );
        // A wrong ID: the coordinator answers, and leads to no cluster controller.
        let v = ClientView::parse(
            include_str!("../testdata/status-json-no-cluster-controller.json"),
            "",
        );
        assert!(!v.incompatible && v.unreachable.is_empty());
        assert_eq!(
            v.reachable,
            [(
                "127.0.0.1:4711".to_string(),
                Some("0fdb00b080000000".to_string())
            )]
        );
        assert_eq!(v.messages[0].0, "no_cluster_controller");
        assert!(!v.minority_reachable());
        // 1 of 3 coordinators running (8.0): it answers, but a majority is needed.
        let v = ClientView::parse(
            include_str!("../testdata/status-json-1-of-3-coordinators-8.0.json"),
            "",
        );
        assert!(v.minority_reachable());
        assert_eq!((v.reachable.len(), v.unreachable.len()), (1, 2), "{v:?}");
        assert_eq!(
            v.messages_described(),
            "Unable to reach a quorum of coordinators. (quorum_not_reachable)"
        );
        // Nothing to say of an empty answer (fdbcli printed nothing).
        assert_eq!(ClientView::parse("", "").describe(), "");
        // Servers with min_trace_severity=40 (real 8.0): the coordinator answers,
        // the database is not available to the client, and the cluster says why.
        let v = ClientView::parse(
            include_str!("../testdata/status-json-incomplete-min-trace-severity-8.0.json"),
            "",
        );
        assert_eq!(
            v.cluster_messages,
            [
                "Unable to retrieve all status information. (status_incomplete: Cannot retrieve \
              all process status information. Recovery Status unavailable. Unknown cache \
              statistics. Unknown mutations, conflicts, and transactions state. Unknown \
              performance state.)"
            ]
        );
        assert!(v
            .describe()
            .contains("; the cluster says: Unable to retrieve all status"));
    }
}
