//! `fdbcli --exec "status json"`: the part of FDB's machine-readable status the gate
//! reads.

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
    /// Distinct machines: a process's `locality.machineid`, else its address's IP.
    pub machines: u64,
    /// `client.database_status`.
    pub database: DatabaseStatus,
    /// `cluster.recovery_state.name`, e.g. "fully_recovered".
    pub recovery_state: Option<String>,
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
        let field = |p: &serde_json::Value, path: &[&str]| {
            path.iter()
                .try_fold(p, |v, k| v.get(k))
                .and_then(|x| x.as_str())
                .map(str::to_string)
        };
        let mut versions: Vec<String> = processes
            .iter()
            .filter_map(|p| field(p, &["version"]))
            .collect();
        versions.sort();
        versions.dedup();
        let mut processes_by_class = std::collections::BTreeMap::new();
        let mut machines = std::collections::BTreeSet::new();
        for p in &processes {
            let class = field(p, &["class_type"]).unwrap_or_else(|| "unset".into());
            *processes_by_class.entry(class).or_insert(0) += 1;
            let ip = field(p, &["address"]).map(|a| {
                a.rsplit_once(':')
                    .map_or(a.clone(), |(ip, _)| ip.to_string())
            });
            machines.insert(field(p, &["locality", "machineid"]).or(ip));
        }
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
            machines: machines.len() as u64,
            database,
            recovery_state: field(cluster, &["recovery_state", "name"]),
        })
    }

    /// The cluster's class for people and records: its versions, redundancy, engine,
    /// machines and processes per class, e.g. "FDB 8.0.0, double ssd-redwood-1, 3
    /// machines: 3 log, 3 stateless, 3 storage".
    pub fn class(&self) -> String {
        let classes: Vec<String> = self
            .processes_by_class
            .iter()
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
}
