//! Config stage, I/O shell: absolute TPS floors (SLOs) per engine and profile.
//!
//! Precedence, highest first: `--slo-tps` (all engines), `PERFGATE_SLO_TPS_<ENGINE>`
//! (`REDWOOD`, `ROCKSDB`, `SHARDED_ROCKSDB`; for a cluster the gate did not start also
//! `SSD_2`, `SSD_1`, `MEMORY`, `MEMORY_RADIXTREE`), then `baselines/slo.json` (engines
//! named as `--engine` and the run's table name them: `redwood`, `ssd-2`, `memory`, ...):
//!
//! ```json
//! { "schema_version": 1, "tps": { "quick": { "redwood": 1500.0 }, "standard": { ... } } }
//! ```
//!
//! The effective floors and where each came from are recorded in `meta.json`.

use std::{collections::BTreeMap, path::Path};

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{Engine, UsageError};

/// Floor per engine, TPS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SloTps {
    pub redwood: Option<f64>,
    pub rocksdb: Option<f64>,
    pub sharded_rocksdb: Option<f64>,
    /// The engines only read from a cluster the gate did not start (`--cluster-file`);
    /// absent from the `meta.json` of runs before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssd_2: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssd_1: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_radixtree: Option<f64>,
}

impl SloTps {
    /// No floor for any engine.
    pub const NONE: SloTps = SloTps {
        redwood: None,
        rocksdb: None,
        sharded_rocksdb: None,
        ssd_2: None,
        ssd_1: None,
        memory: None,
        memory_radixtree: None,
    };

    pub fn get(&self, engine: Engine) -> Option<f64> {
        *self.field(engine)
    }

    fn set(&mut self, engine: Engine, tps: f64) {
        *self.field_mut(engine) = Some(tps);
    }

    fn field(&self, engine: Engine) -> &Option<f64> {
        match engine {
            Engine::Redwood => &self.redwood,
            Engine::Rocksdb => &self.rocksdb,
            Engine::ShardedRocksdb => &self.sharded_rocksdb,
            Engine::Ssd2 => &self.ssd_2,
            Engine::Ssd1 => &self.ssd_1,
            Engine::Memory => &self.memory,
            Engine::MemoryRadixtree => &self.memory_radixtree,
        }
    }

    fn field_mut(&mut self, engine: Engine) -> &mut Option<f64> {
        match engine {
            Engine::Redwood => &mut self.redwood,
            Engine::Rocksdb => &mut self.rocksdb,
            Engine::ShardedRocksdb => &mut self.sharded_rocksdb,
            Engine::Ssd2 => &mut self.ssd_2,
            Engine::Ssd1 => &mut self.ssd_1,
            Engine::Memory => &mut self.memory,
            Engine::MemoryRadixtree => &mut self.memory_radixtree,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SloFile {
    schema_version: u32,
    /// profile -> engine -> floor, TPS. A profile or an engine named twice is an error
    /// (a JSON map keeps the last silently, which dropped floors).
    #[serde(deserialize_with = "unique_profiles")]
    tps: BTreeMap<String, EngineFloors>,
}

/// One profile's floors, TPS; an engine named twice is an error (serde refuses a struct
/// field given twice).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct EngineFloors {
    redwood: Option<f64>,
    rocksdb: Option<f64>,
    sharded_rocksdb: Option<f64>,
    ssd_2: Option<f64>,
    ssd_1: Option<f64>,
    memory: Option<f64>,
    memory_radixtree: Option<f64>,
}

impl EngineFloors {
    fn get(&self, engine: Engine) -> Option<f64> {
        let all = SloTps {
            redwood: self.redwood,
            rocksdb: self.rocksdb,
            sharded_rocksdb: self.sharded_rocksdb,
            ssd_2: self.ssd_2,
            ssd_1: self.ssd_1,
            memory: self.memory,
            memory_radixtree: self.memory_radixtree,
        };
        all.get(engine)
    }
}

/// A map of profile names that refuses a name given twice.
fn unique_profiles<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, EngineFloors>, D::Error> {
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = BTreeMap<String, EngineFloors>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of profile names to floors per engine")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((profile, floors)) = map.next_entry::<String, EngineFloors>()? {
                if out.contains_key(&profile) {
                    return Err(serde::de::Error::custom(format!(
                        "profile {profile:?} is given twice"
                    )));
                }
                out.insert(profile, floors);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique)
}

/// The environment variable that sets `engine`'s floor.
pub fn env_var(engine: Engine) -> String {
    format!(
        "PERFGATE_SLO_TPS_{}",
        engine.to_string().to_uppercase().replace('-', "_")
    )
}

/// Warnings for environment variables (`names`) that look like an SLO floor
/// (`PERFGATE_SLO_TPS...` in any case) but are not one the gate reads: a typo
/// (`PERFGATE_SLO_TPS_REDWOD`), another case (`perfgate_slo_tps_redwood`: variable names
/// are case-sensitive) or no engine at all (`PERFGATE_SLO_TPS`) would otherwise set no
/// floor, unsaid.
pub fn misspelled_vars<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Vec<String> {
    const PREFIX: &str = "PERFGATE_SLO_TPS";
    let known: Vec<String> = Engine::KNOWN.iter().map(|&e| env_var(e)).collect();
    let mut warnings = Vec::new();
    for name in names {
        let name = name.as_ref();
        let upper = name.to_ascii_uppercase();
        if !upper.starts_with(PREFIX) || known.iter().any(|k| k == name) {
            continue;
        }
        warnings.push(if known.contains(&upper) {
            format!(
                "{name} is not read, so it sets no floor: environment variable names are \
                 case-sensitive; name it {upper}"
            )
        } else if upper.trim_end_matches('_') == PREFIX {
            format!(
                "{name} names no storage engine, so it sets no floor: give --slo-tps TPS for \
                 every engine, or set one of {}",
                known.join(", ")
            )
        } else {
            format!(
                "{name} names no storage engine, so it sets no floor: the variables are {}",
                known.join(", ")
            )
        });
    }
    warnings
}

/// The floors of a run and where they came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Floors {
    pub tps: SloTps,
    /// One line per floor: the engine, the TPS and its source.
    pub sources: Vec<String>,
    /// The SLO file's profiles that no run of this name set can use (a typo such as
    /// `qiuck` sets no floor, silently, without this).
    pub warnings: Vec<String>,
}

/// The built-in profiles' names (`--profile`).
const BUILT_IN_PROFILES: [&str; 6] = ["quick", "standard", "scan", "point-read", "write", "mixed"];

/// `file`'s floors for `profile` (none when there is no file), and a warning per profile
/// of the file that is neither built in nor `profile`.
fn read_floors(file: &Path, profile: &str) -> Result<(BTreeMap<Engine, f64>, Vec<String>)> {
    let mut warnings = Vec::new();
    // Only a file that is not there is "no floors": a dangling link, a FIFO or an unreadable
    // file would silently drop every floor the team set.
    let absent =
        matches!(file.symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let from_file = if !absent {
        // The team's file: what is wrong with it is a usage error (64), as a bad
        // PERFGATE_SLO_TPS_* value is.
        let text = crate::input::read_trusted_text(file).map_err(|e| {
            UsageError(format!(
                "cannot read the SLO file {} (TPS floors per profile and engine): {e:#}; fix \
                 or remove it",
                file.display()
            ))
        })?;
        let f: SloFile = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "SLO file {} does not match the format: {e}",
                file.display()
            ))
        })?;
        if f.schema_version != 1 {
            return Err(UsageError(format!(
                "SLO file {} has schema_version {}; this perfgate reads 1",
                file.display(),
                f.schema_version
            ))
            .into());
        }
        for name in f.tps.keys() {
            if name != profile && !BUILT_IN_PROFILES.contains(&name.as_str()) {
                warnings.push(format!(
                    "the SLO file {} has floors for profile {name:?}, which is no built-in \
                     profile ({}) and not this run's ({profile:?}): a typo sets no floor; \
                     a --profile-file profile of that name uses them",
                    file.display(),
                    BUILT_IN_PROFILES.join(", ")
                ));
            }
        }
        f.tps
            .get(profile)
            .map(|floors| {
                Engine::KNOWN
                    .iter()
                    .filter_map(|&e| Some((e, floors.get(e)?)))
                    .collect::<BTreeMap<Engine, f64>>()
            })
            .unwrap_or_default()
    } else {
        BTreeMap::new()
    };
    Ok((from_file, warnings))
}

/// Resolves the floors of `engines` for `profile`: `flag` beats `env` beats `file` (read
/// if it exists), and warns of the file's profiles that are neither built in nor
/// `profile` (a user profile's, from `--profile-file`, is named in the warning too).
pub fn resolve(
    flag: Option<f64>,
    profile: &str,
    engines: &[Engine],
    env: &dyn Fn(&str) -> Option<String>,
    file: &Path,
) -> Result<Floors> {
    let mut slo = SloTps::default();
    let mut sources = Vec::new();
    let (from_file, mut warnings) = read_floors(file, profile)?;
    // Every engine's variable is checked, used or not: a typo in one is found on the
    // first run, not on the first run of that engine.
    let mut from_env = BTreeMap::new();
    for engine in Engine::KNOWN {
        let var = env_var(engine);
        if let Some(raw) = env(&var) {
            let tps: f64 = raw
                .trim()
                .parse()
                .ok()
                .filter(|t: &f64| t.is_finite() && *t > 0.0)
                .ok_or_else(|| UsageError(format!("{var}='{raw}' is not a positive TPS figure")))?;
            from_env.insert(engine, (tps, var));
        }
    }
    for &engine in engines {
        let chosen = if let Some(tps) = flag {
            Some((tps, "--slo-tps".to_string()))
        } else if let Some(chosen) = from_env.get(&engine) {
            Some(chosen.clone())
        } else {
            from_file
                .get(&engine)
                .map(|&tps| (tps, format!("{} ({profile})", file.display())))
        };
        if let Some((tps, source)) = chosen {
            if !(tps.is_finite() && tps > 0.0) {
                return Err(UsageError(format!(
                    "SLO for {engine} from {source} is {}, not a positive TPS figure",
                    fdb::compact(tps)
                ))
                .into());
            }
            slo.set(engine, tps);
            sources.push(format!("{engine}: {tps} TPS from {source}"));
        }
    }
    // A floor meant for this run that names another engine (an existing cluster's engine
    // is read, not chosen) would leave the run without one, unsaid.
    let unfloored: Vec<Engine> = engines
        .iter()
        .copied()
        .filter(|&e| slo.get(e).is_none())
        .collect();
    let elsewhere: Vec<&str> = from_env
        .iter()
        .filter(|(e, _)| !engines.contains(e))
        .map(|(_, (_, var))| var.as_str())
        .collect();
    if !unfloored.is_empty() && !elsewhere.is_empty() {
        let names: Vec<String> = unfloored.iter().map(|e| e.to_string()).collect();
        let vars: Vec<String> = unfloored.iter().map(|&e| env_var(e)).collect();
        warnings.push(format!(
            "{} set(s) a TPS floor for another engine than this run's, and {} has none: \
             this run is checked against no SLO; set {} for it",
            elsewhere.join(", "),
            names.join(", "),
            vars.join(", ")
        ));
    }
    Ok(Floors {
        tps: slo,
        sources,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    const FILE: &str =
        r#"{"schema_version": 1, "tps": {"quick": {"redwood": 1000.0, "rocksdb": 800.0}}}"#;

    #[test]
    fn flag_beats_environment_beats_file() {
        let f = file(FILE);
        let env = |v: &str| (v == "PERFGATE_SLO_TPS_ROCKSDB").then(|| "900".to_string());
        let engines = [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb];
        let Floors {
            tps: slo, sources, ..
        } = resolve(None, "quick", &engines, &env, f.path()).unwrap();
        assert_eq!(
            (slo.redwood, slo.rocksdb, slo.sharded_rocksdb),
            (Some(1000.0), Some(900.0), None)
        );
        assert!(
            sources[1].contains("from PERFGATE_SLO_TPS_ROCKSDB"),
            "{sources:?}"
        );
        let slo = resolve(Some(50.0), "quick", &engines, &env, f.path())
            .unwrap()
            .tps;
        assert_eq!(
            (slo.redwood, slo.rocksdb, slo.sharded_rocksdb),
            (Some(50.0), Some(50.0), Some(50.0))
        );
        // Another profile has no floors in the file.
        let slo = resolve(None, "standard", &engines, &|_| None, f.path())
            .unwrap()
            .tps;
        assert_eq!(slo, SloTps::default());
        assert_eq!(
            env_var(Engine::ShardedRocksdb),
            "PERFGATE_SLO_TPS_SHARDED_ROCKSDB"
        );
    }

    #[test]
    fn engines_read_from_an_existing_cluster_have_floors_by_their_fdb_names() {
        let f = file(r#"{"schema_version": 1, "tps": {"quick": {"ssd-2": 700.0, "memory": 5.0}}}"#);
        let env = |v: &str| (v == "PERFGATE_SLO_TPS_MEMORY").then(|| "600".to_string());
        let engines = [Engine::Ssd2, Engine::Memory, Engine::MemoryRadixtree];
        let floors = resolve(None, "quick", &engines, &env, f.path()).unwrap();
        let got: Vec<_> = engines.iter().map(|&e| floors.tps.get(e)).collect();
        assert_eq!(got, [Some(700.0), Some(600.0), None]);
        assert_eq!(env_var(Engine::Ssd2), "PERFGATE_SLO_TPS_SSD_2");
        assert_eq!(
            env_var(Engine::MemoryRadixtree),
            "PERFGATE_SLO_TPS_MEMORY_RADIXTREE"
        );
        // Absent from the meta.json of earlier runs, and not written when unset.
        let old: SloTps =
            serde_json::from_str(r#"{"redwood": 1.0, "rocksdb": null, "sharded_rocksdb": null}"#)
                .unwrap();
        assert_eq!(old.get(Engine::Memory), None);
        assert!(!serde_json::to_string(&old).unwrap().contains("memory"));
    }

    #[test]
    fn a_profile_no_run_can_use_is_named_in_a_warning() {
        // Floors under a typo ("qiuck") apply to nothing: said, not silently ignored.
        let f = file(
            r#"{"schema_version": 1, "tps": {"qiuck": {"redwood": 1000.0}, "scan": {"redwood": 5.0}, "mine": {"redwood": 7.0}}}"#,
        );
        let engines = [Engine::Redwood];
        let quick = resolve(None, "quick", &engines, &|_| None, f.path()).unwrap();
        assert_eq!(quick.tps, SloTps::default());
        assert_eq!(quick.warnings.len(), 2, "{:?}", quick.warnings);
        assert!(
            quick.warnings[0].contains("\"mine\"") && quick.warnings[1].contains("\"qiuck\""),
            "{:?}",
            quick.warnings
        );
        assert!(quick.warnings[1]
            .contains("no built-in profile (quick, standard, scan, point-read, write, mixed)"));
        // The run of the user profile "mine" uses its floors and warns of the typo only.
        let mine = resolve(None, "mine", &engines, &|_| None, f.path()).unwrap();
        assert_eq!(mine.tps.redwood, Some(7.0));
        assert_eq!(mine.warnings.len(), 1, "{:?}", mine.warnings);
    }

    #[test]
    fn another_engines_floor_is_checked_and_named_when_this_run_has_none() {
        // A memory cluster's run with only the redwood floor set has no SLO: said, and
        // a bad value of an unused variable is still refused.
        let env = |v: &str| (v == "PERFGATE_SLO_TPS_REDWOOD").then(|| "900".to_string());
        let none = Path::new("/nonexistent/slo.json");
        let memory = resolve(None, "quick", &[Engine::Memory], &env, none).unwrap();
        assert_eq!(memory.tps, SloTps::default());
        assert_eq!(memory.warnings.len(), 1, "{:?}", memory.warnings);
        assert!(
            memory.warnings[0].contains(
                "PERFGATE_SLO_TPS_REDWOOD set(s) a TPS floor for another engine than this \
                 run's, and memory has none"
            ) && memory.warnings[0].contains("set PERFGATE_SLO_TPS_MEMORY for it"),
            "{:?}",
            memory.warnings
        );
        // A run whose engines all have floors is not warned: CI may set every engine's.
        let both = |v: &str| v.starts_with("PERFGATE_SLO_TPS_").then(|| "5".to_string());
        let floored = resolve(None, "quick", &[Engine::Memory], &both, none).unwrap();
        assert!(floored.warnings.is_empty(), "{:?}", floored.warnings);
        let bad = |v: &str| (v == "PERFGATE_SLO_TPS_ROCKSDB").then(|| "-3".to_string());
        let err = resolve(None, "quick", &[Engine::Memory], &bad, none).unwrap_err();
        assert!(
            err.to_string().contains("PERFGATE_SLO_TPS_ROCKSDB='-3'"),
            "{err}"
        );
    }

    #[test]
    fn a_misspelled_floor_variable_is_named() {
        let names = [
            "PERFGATE_SLO_TPS_REDWOD",
            "PERFGATE_SLO_TPS_REDWOOD",
            "PATH",
        ];
        let w = misspelled_vars(names);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("PERFGATE_SLO_TPS_REDWOD names no storage engine")
                && w[0].contains("PERFGATE_SLO_TPS_SSD_2"),
            "{w:?}"
        );
        // Another case, or no engine, sets no floor either: each is named with its fix.
        let w = misspelled_vars([
            "perfgate_slo_tps_redwood",
            "Perfgate_Slo_Tps_Redwood",
            "PERFGATE_SLO_TPS",
            "PERFGATE_SLO_TPSX",
            "PERFGATE_SLOW",
        ]);
        assert_eq!(w.len(), 4, "{w:?}");
        for (w, name) in w[..2]
            .iter()
            .zip(["perfgate_slo_tps_redwood", "Perfgate_Slo_Tps_Redwood"])
        {
            assert!(
                w.starts_with(&format!("{name} is not read"))
                    && w.contains("case-sensitive; name it PERFGATE_SLO_TPS_REDWOOD"),
                "{w}"
            );
        }
        assert!(
            w[2].starts_with("PERFGATE_SLO_TPS names no storage engine")
                && w[2].contains("--slo-tps"),
            "{w:?}"
        );
        assert!(w[3].starts_with("PERFGATE_SLO_TPSX names no"), "{w:?}");
    }

    #[test]
    fn bad_values_and_files_are_errors_naming_them() {
        let f = file(FILE);
        let env = |_: &str| Some("fast".to_string());
        let err = resolve(None, "quick", &[Engine::Redwood], &env, f.path()).unwrap_err();
        assert!(
            err.to_string().contains("PERFGATE_SLO_TPS_REDWOOD='fast'"),
            "{err}"
        );
        let bad = file(r#"{"schema_version": 1, "tps": {"quick": {"redwod": 1.0}}}"#);
        let err = format!(
            "{:#}",
            resolve(None, "quick", &[Engine::Redwood], &|_| None, bad.path()).unwrap_err()
        );
        assert!(
            err.contains("does not match the format") && err.contains("redwod"),
            "{err}"
        );
        let missing = resolve(
            None,
            "quick",
            &[Engine::Redwood],
            &|_| None,
            Path::new("/nonexistent/slo.json"),
        );
        assert_eq!(missing.unwrap().tps, SloTps::default());
        // A floor or a profile given twice is refused: serde would keep the last silently
        // (floor 1 instead of 5000, or no floor at all).
        for (text, says) in [
            (
                r#"{"schema_version": 1, "tps": {"quick": {"redwood": 5000, "redwood": 1}}}"#,
                "duplicate field `redwood`",
            ),
            (
                r#"{"schema_version": 1, "tps": {"quick": {"redwood": 5000}, "quick": {}}}"#,
                "profile \"quick\" is given twice",
            ),
        ] {
            let f = file(text);
            let err = format!(
                "{:#}",
                resolve(None, "quick", &[Engine::Redwood], &|_| None, f.path()).unwrap_err()
            );
            assert!(err.contains(says), "{err}");
        }
        // A dangling link or a FIFO at slo.json is not "no file" (taken as none, every floor
        // would go silently): only a file that is not there is.
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("slo.json");
        std::os::unix::fs::symlink(dir.path().join("gone.json"), &link).unwrap();
        let fifo = dir.path().join("fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for (path, cause) in [(&link, "No such file"), (&fifo, "FIFO")] {
            let err = format!(
                "{:#}",
                resolve(None, "quick", &[Engine::Redwood], &|_| None, path).unwrap_err()
            );
            assert!(
                err.contains("cannot read the SLO file") && err.contains(cause),
                "{err}"
            );
        }
    }
}
