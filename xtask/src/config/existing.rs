//! Config stage: a cluster the gate did not start (`--cluster-file`), such as a multi-host
//! qualification cluster. The gate starts only tester processes (`fdbserver -c test`) and
//! the multitest coordinator against it; its servers, knobs, engine and shape are the
//! cluster's own, read from `status json` at each trial (`fdb::status::ClusterStatus`).

use std::path::{Path, PathBuf};

use fdb::cluster_file::ConnectionString;
use serde::Serialize;

use super::{topology::Topology, usage, BenchConfig};
use crate::{cli::BenchArgs, error::UsageError};

/// Upper bound of `--remote-testers`.
pub const MAX_REMOTE_TESTERS: u32 = 1000;

/// A cluster the gate did not start.
#[derive(Debug, Clone, Serialize)]
pub struct ExistingCluster {
    /// The user's cluster file as given: read once here, never written (each trial's
    /// processes get a copy of its connection string, which FDB may rewrite when
    /// coordinators change).
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub path: PathBuf,
    /// The connection string in it.
    pub connection: ConnectionString,
    /// Testers started on other hosts that the multitest waits for beside the gate's own.
    pub remote_testers: u32,
}

impl ExistingCluster {
    /// The existing cluster `--cluster-file` names, if any, checked against the rest of
    /// the run `c`: a multitest workload, one arm, and none of the flags that configure
    /// servers the gate does not start. Errors: a [`UsageError`] naming the flag or what
    /// is wrong with the file.
    pub fn resolve(a: &BenchArgs, c: &BenchConfig) -> Result<Option<ExistingCluster>, UsageError> {
        let Some(path) = &a.cluster_file else {
            if a.remote_testers > 0 {
                return Err(usage(format!(
                    "--remote-testers {} needs --cluster-file: testers on other hosts join \
                     a cluster the gate did not start; the gate's own cluster runs on \
                     loopback, where no other host reaches it",
                    a.remote_testers
                )));
            }
            return Ok(None);
        };
        refuse_server_flags(a, c)?;
        if a.remote_testers > MAX_REMOTE_TESTERS {
            return Err(usage(format!(
                "--remote-testers {} is more than {MAX_REMOTE_TESTERS}",
                a.remote_testers
            )));
        }
        let connection = read(path)?;
        if connection.tls() {
            check_tls(
                path,
                &|name| std::env::var_os(name),
                Path::new(TLS_DEFAULT_DIR),
            )?;
        }
        Ok(Some(ExistingCluster {
            path: path.clone(),
            connection,
            remote_testers: a.remote_testers,
        }))
    }
}

/// The file's connection string, read as FDB reads it (bytes; a comment may hold any).
/// Errors: unreadable (a link is not followed), or not a connection string FDB takes.
fn read(path: &Path) -> Result<ConnectionString, UsageError> {
    let bytes = crate::input::read_trusted(path).map_err(|e| {
        usage(format!(
            "--cluster-file {}: cannot read it: {e}; give the cluster file of a running \
             cluster (e.g. /etc/foundationdb/fdb.cluster)",
            path.display()
        ))
    })?;
    ConnectionString::parse_bytes(&bytes).map_err(|e| {
        usage(format!(
            "--cluster-file {}: not a cluster file FDB takes: {e}",
            path.display()
        ))
    })
}

/// Where FDB looks for `cert.pem` and `key.pem` when no variable names them
/// (`platform::getDefaultConfigPath`, `flow/Platform.cpp`).
const TLS_DEFAULT_DIR: &str = "/etc/foundationdb";

/// A cluster reached over TLS needs the client's certificate and key, from
/// `FDB_TLS_CERTIFICATE_FILE` and `FDB_TLS_KEY_FILE` or `cert.pem` and `key.pem` in
/// `default_dir` (`TLSConfig::getCertificatePathSync`, `flow/TLSConfig.cpp`); `var` reads
/// the gate's environment. Without them every connection fails and `available` would only
/// time out. Errors: a [`UsageError`] naming what is missing and the variables.
fn check_tls(
    path: &Path,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    default_dir: &Path,
) -> Result<(), UsageError> {
    let missing: Vec<&str> = [
        ("FDB_TLS_CERTIFICATE_FILE", "cert.pem"),
        ("FDB_TLS_KEY_FILE", "key.pem"),
    ]
    .into_iter()
    .filter(|(name, file)| var(name).is_none() && !default_dir.join(file).is_file())
    .map(|(name, _)| name)
    .collect();
    // A variable set must name a file: fdbcli aborts on every call otherwise.
    for (name, what) in [
        ("FDB_TLS_CERTIFICATE_FILE", "certificate"),
        ("FDB_TLS_KEY_FILE", "key"),
        ("FDB_TLS_CA_FILE", "CA bundle"),
    ] {
        if let Some(file) = var(name).filter(|f| !Path::new(f).is_file()) {
            return Err(usage(format!(
                "--cluster-file {}: its coordinators are reached over TLS, and {name}={} \
                 names no file the testers and fdbcli can read: give the path of the \
                 cluster's client {what}",
                path.display(),
                Path::new(&file).display(),
            )));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "--cluster-file {}: its coordinators are reached over TLS (`:tls`), and the testers \
         and fdbcli have no {}: set {} (and FDB_TLS_CA_FILE, FDB_TLS_VERIFY_PEERS as the \
         cluster needs; the gate passes FDB_TLS_* to them), or put cert.pem and key.pem in \
         {}",
        path.display(),
        match missing.as_slice() {
            [_, _] => "certificate or key",
            ["FDB_TLS_KEY_FILE"] => "key",
            _ => "certificate",
        },
        missing.join(" and "),
        default_dir.display()
    )))
}

/// Refuses the topology flags (`topology` as they give it, unchecked) with --cluster-file:
/// the cluster's shape is its own. Called before the topology is checked, whose errors
/// would name --hosts.
pub fn refuse_topology(a: &BenchArgs, topology: &Topology) -> Result<(), UsageError> {
    if a.cluster_file.is_some() && !topology.is_default() {
        return Err(usage(
            "the cluster topology flags (--hosts, --redundancy, --logs and the like) do not \
             go with --cluster-file: the cluster's shape is its own; status json records it",
        ));
    }
    Ok(())
}

/// Refuses what configures servers or a second arm: against a cluster the gate did not
/// start, those are the cluster's (or there is none).
fn refuse_server_flags(a: &BenchArgs, c: &BenchConfig) -> Result<(), UsageError> {
    let r = &a.run;
    let refused = [
        (c.workload.driver_kind().needs_mako(), "a mako profile", "mako's build phase clears and loads the key space from one client; use a multitest profile (point-read, write, mixed)"),
        (a.source.baseline.is_some(), "--baseline", "one arm runs: the cluster is the baseline's and the experiment's alike"),
        (!r.knobs.is_empty() || !r.baseline_knobs.is_empty() || !r.experiment_knobs.is_empty(), "--knob, --baseline-knob and --experiment-knob", "server knobs are the cluster's own configuration (the testers are clients)"),
        (!r.engines.is_empty(), "--engine", "the storage engine is the one the cluster was configured with; status json records it"),
        (r.pin, "--pin", "the storage servers are not the gate's to pin"),
        (r.require_cpu_bound, "--require-cpu-bound", "the storage servers' CPU is not the gate's to measure"),
        (c.schedule.budget().is_some(), "--trials auto", "one arm has no pairs to look at; give --trials N"),
    ];
    match refused.iter().find(|(given, ..)| *given) {
        Some((_, flag, why)) => {
            let verb = if flag.contains(" and ") || flag.ends_with("flags") {
                "do"
            } else {
                "does"
            };
            Err(usage(format!(
                "{flag} {verb} not go with --cluster-file: {why}"
            )))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_coordinators_need_a_certificate_and_key_from_the_environment_or_fdbs_dir() {
        let dir = tempfile::tempdir().unwrap();
        let file = Path::new("qual.cluster");
        let none = |_: &str| None;
        let e = check_tls(file, &none, dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(
                "have no certificate or key: set FDB_TLS_CERTIFICATE_FILE and FDB_TLS_KEY_FILE"
            ),
            "{e}"
        );
        let cert = dir.path().join("client-cert.pem");
        std::fs::write(&cert, "").unwrap();
        let cert_only =
            |n: &str| (n == "FDB_TLS_CERTIFICATE_FILE").then(|| cert.clone().into_os_string());
        let e = check_tls(file, &cert_only, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("have no key: set FDB_TLS_KEY_FILE ("), "{e}");
        // A variable that names no file (or is empty) is refused, naming it.
        let nowhere = |n: &str| (n == "FDB_TLS_KEY_FILE").then(|| "/nonexistent/k.pem".into());
        let e = check_tls(file, &nowhere, dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("FDB_TLS_KEY_FILE=/nonexistent/k.pem names no file"),
            "{e}"
        );
        let empty = |n: &str| (n == "FDB_TLS_CERTIFICATE_FILE").then(|| "".into());
        let e = check_tls(file, &empty, dir.path()).unwrap_err().to_string();
        assert!(e.contains("FDB_TLS_CERTIFICATE_FILE= names no file"), "{e}");
        // FDB's default files stand in for the variables.
        std::fs::write(dir.path().join("key.pem"), "").unwrap();
        check_tls(file, &cert_only, dir.path()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), "").unwrap();
        check_tls(file, &none, dir.path()).unwrap();
    }
}
