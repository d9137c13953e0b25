//! The environment of every fdbserver, fdbcli and mako of a run: built on purpose from an
//! allow list, not inherited from whoever started the gate.
//!
//! FDB reads a great deal from its environment: `FDB_KNOB_<name>` server and client knobs
//! (FDB 7.2+ applies them after the command line, apple/foundationdb PR 7765, so an
//! exported knob silently overrides an A/B's `--knob_<name>` and the run measures an A/A),
//! `FDB_NETWORK_OPTION_*` client network options (`fdbclient/NativeAPI.actor.cpp`),
//! `FDB_CLUSTER_FILE`, trace and TLS settings (`FDB_TLS_*`); the loader and allocator read
//! `LD_PRELOAD`, `LD_LIBRARY_PATH`, `MALLOC_*`, `GLIBC_TUNABLES`. None of it reaches a
//! child: the gate passes what it sets itself and the variables below, and records the
//! names it did not pass (not their values, which may hold secrets) in `meta.json`.

use std::collections::BTreeMap;
use std::ffi::OsString;

use serde::Serialize;

/// Variables every child gets from the gate's environment when set: where programs are,
/// the user, locale and time zone. Nothing in them changes what FDB or mako measure.
pub const PASSED: [&str; 7] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"];

/// The environment of a run's children.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChildEnv {
    /// Variables passed, by name, with their values (lossy where not UTF-8).
    #[serde(serialize_with = "lossy_values")]
    pub passed: BTreeMap<String, OsString>,
    /// Names of the gate's variables that were not passed, sorted.
    pub removed: Vec<String>,
}

/// Values as text, but a password's (`FDB_TLS_PASSWORD`), which the plan does not record.
fn lossy_values<S: serde::Serializer>(
    values: &BTreeMap<String, OsString>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(values.iter().map(|(k, v)| {
        let v = if k.contains("PASSWORD") {
            "(not recorded)".into()
        } else {
            v.to_string_lossy()
        };
        (k, v)
    }))
}

/// FDB's TLS variables' prefix (`flow/TLSConfig.cpp`: certificate, key, CA, password,
/// peer verification): a client of a TLS cluster needs them, and they change nothing the
/// servers measure.
pub const TLS_PREFIX: &str = "FDB_TLS_";

impl ChildEnv {
    /// From the gate's variables (`std::env::vars_os()`): [`PASSED`] and `LC_*` pass, and
    /// [`TLS_PREFIX`]`*` when `tls` (a cluster reached over TLS); every other name is
    /// removed. A name that is not UTF-8 is removed, shown lossily.
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>, tls: bool) -> ChildEnv {
        let mut env = ChildEnv::default();
        for (name, value) in vars {
            match name.into_string() {
                Ok(n)
                    if PASSED.contains(&n.as_str())
                        || n.starts_with("LC_")
                        || (tls && n.starts_with(TLS_PREFIX)) =>
                {
                    env.passed.insert(n, value);
                }
                Ok(n) => env.removed.push(n),
                Err(n) => env.removed.push(n.to_string_lossy().into_owned()),
            }
        }
        env.removed.sort();
        env
    }

    /// Gives `cmd` exactly this environment (the variables the gate sets on a command
    /// itself, such as mako's `LD_LIBRARY_PATH`, are set after this).
    pub fn apply(&self, cmd: &mut std::process::Command) {
        cmd.env_clear().envs(&self.passed);
    }

    /// Removed variables FDB itself reads (`FDB_*`, but `FDB_SRC`, the gate's own
    /// `--fdb-src`): each a warning, since the user probably meant it to apply.
    pub fn fdb_removed(&self) -> impl Iterator<Item = &str> {
        self.removed
            .iter()
            .map(String::as_str)
            .filter(|n| n.starts_with("FDB_") && *n != "FDB_SRC")
    }

    /// One line for the plan: what passes (and, when the workload runs `mako`, the tree's
    /// `lib/` it gets as `LD_LIBRARY_PATH`), and what does not that could change a run
    /// (FDB's, the loader's and the allocator's variables), with a count of the rest.
    pub fn summary(&self, mako: bool) -> String {
        let passed: Vec<&str> = self.passed.keys().map(String::as_str).collect();
        let telling = |n: &&str| {
            ["FDB_", "LD_", "MALLOC_", "GLIBC_", "JE_", "TCMALLOC_"]
                .iter()
                .any(|p| n.starts_with(p))
        };
        let named: Vec<&str> = self
            .removed
            .iter()
            .map(String::as_str)
            .filter(telling)
            .collect();
        let others = self.removed.len() - named.len();
        let lib = match mako {
            true => " (and mako the tree's lib/ as LD_LIBRARY_PATH)",
            false => "",
        };
        format!(
            "children get {} only{lib}; not passed from the gate's environment: \
             {}{others} other variable(s)",
            if passed.is_empty() {
                "nothing".to_string()
            } else {
                passed.join(", ")
            },
            if named.is_empty() {
                String::new()
            } else {
                format!("{}, ", named.join(", "))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_allow_list_passes_and_fdb_variables_are_named() {
        let env = ChildEnv::from_vars(
            vars(&[
                ("PATH", "/usr/bin"),
                ("LC_ALL", "C.UTF-8"),
                ("FDB_KNOB_page_cache_4k", "1048576"),
                ("FDB_NETWORK_OPTION_TRACE_ENABLE", "/tmp"),
                ("LD_PRELOAD", "/lib/libjemalloc.so"),
                ("AWS_SECRET_ACCESS_KEY", "hunter2"),
                ("FDB_SRC", "/src/foundationdb"),
                ("FDB_TLS_CERTIFICATE_FILE", "/etc/fdb/cert.pem"),
            ]),
            false,
        );
        assert_eq!(
            env.passed.keys().collect::<Vec<_>>(),
            ["LC_ALL", "PATH"],
            "{env:?}"
        );
        assert_eq!(
            env.fdb_removed().collect::<Vec<_>>(),
            [
                "FDB_KNOB_page_cache_4k",
                "FDB_NETWORK_OPTION_TRACE_ENABLE",
                "FDB_TLS_CERTIFICATE_FILE"
            ]
        );
        assert!(!env.summary(false).contains("LD_LIBRARY_PATH"));
        assert_eq!(
            env.summary(true),
            "children get LC_ALL, PATH only (and mako the tree's lib/ as LD_LIBRARY_PATH); not \
             passed from the gate's environment: FDB_KNOB_page_cache_4k, \
             FDB_NETWORK_OPTION_TRACE_ENABLE, FDB_SRC, FDB_TLS_CERTIFICATE_FILE, LD_PRELOAD, 1 \
             other variable(s)"
        );
        // Names are recorded, values of removed variables are not.
        let json = serde_json::to_string(&env).unwrap();
        assert!(
            json.contains("AWS_SECRET_ACCESS_KEY") && !json.contains("hunter2"),
            "{json}"
        );
        // A child gets exactly the passed variables.
        let mut cmd = std::process::Command::new("env");
        env.apply(&mut cmd);
        let out = cmd.output().unwrap();
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        assert_eq!(lines, ["LC_ALL=C.UTF-8", "PATH=/usr/bin"]);
    }

    #[test]
    fn a_tls_clusters_variables_pass_and_its_password_is_not_recorded() {
        let env = ChildEnv::from_vars(
            vars(&[
                ("PATH", "/usr/bin"),
                ("FDB_TLS_CERTIFICATE_FILE", "/etc/fdb/cert.pem"),
                ("FDB_TLS_PASSWORD", "hunter2"),
                ("FDB_KNOB_page_cache_4k", "1048576"),
            ]),
            true,
        );
        assert_eq!(
            env.passed.keys().collect::<Vec<_>>(),
            ["FDB_TLS_CERTIFICATE_FILE", "FDB_TLS_PASSWORD", "PATH"]
        );
        assert_eq!(
            env.fdb_removed().collect::<Vec<_>>(),
            ["FDB_KNOB_page_cache_4k"]
        );
        let json = serde_json::to_string(&env).unwrap();
        assert!(
            json.contains("/etc/fdb/cert.pem") && !json.contains("hunter2"),
            "{json}"
        );
    }
}
