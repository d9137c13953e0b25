//! What each FDB release's tools take and print, as far as the gate uses them: the support
//! matrix of FDB 7.1 to 8.0.
//!
//! Read from FDB's sources at tags 7.1.67, 7.2.9, 7.3.79, 7.4.6 and main (8.0.0,
//! c0c44752df): `bindings/c/test/mako/mako.c` (7.1) and `mako.cpp` (7.2+), `usage()` and
//! the report printers; `fdbclient/ManagementAPI.actor.cpp` for the storage engine names.
//! Each release's `--help`, text and JSON report and `fdbserver --version` are in
//! `testdata/releases/`.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::{mako::Format, Engine, FdbVersion};

/// An FDB release line, e.g. 7.3, from `fdbserver --version`'s first line
/// (`FoundationDB 7.3 (v7.3.79)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Release {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Release {
    /// The oldest release the gate reads: 7.1, whose mako (`mako.c`) is the first with
    /// `--json_report`.
    pub const OLDEST: Release = Release::new(7, 1);

    /// The newest release whose sources the matrix was read from: 8.0 (main).
    pub const NEWEST: Release = Release::new(8, 0);

    pub const fn new(major: u32, minor: u32) -> Release {
        Release { major, minor }
    }

    /// The release of a binary. Errors: the first line does not read
    /// `FoundationDB <major>.<minor> ...`.
    pub fn of(version: &FdbVersion) -> Result<Release> {
        let line = &version.release;
        let number = line
            .strip_prefix("FoundationDB ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("");
        let parsed = number
            .split_once('.')
            .and_then(|(a, b)| Some(Release::new(a.parse().ok()?, b.parse().ok()?)));
        match parsed {
            Some(r) => Ok(r),
            None => bail!(
                "fdbserver --version's first line {line:?} does not read 'FoundationDB \
                 <major>.<minor> (v<version>)'"
            ),
        }
    }

    /// The name `fdbcli configure new single` takes for `engine` in this release, or why
    /// there is none: `ssd-redwood-1` from 7.3 (`ssd-redwood-1-experimental` before, and
    /// still in 7.3 as an alias), `ssd-sharded-rocksdb` from 7.2, `ssd-rocksdb-v1` in all.
    pub fn engine_name(self, engine: Engine) -> Result<&'static str, String> {
        match engine {
            Engine::Redwood if self >= Release::new(7, 3) => Ok("ssd-redwood-1"),
            Engine::Redwood => Ok("ssd-redwood-1-experimental"),
            Engine::Rocksdb => Ok("ssd-rocksdb-v1"),
            Engine::ShardedRocksdb if self >= Release::new(7, 2) => Ok("ssd-sharded-rocksdb"),
            Engine::ShardedRocksdb => Err(format!(
                "FDB {self} has no sharded-rocksdb storage engine (ssd-sharded-rocksdb came \
                 with FDB 7.2)"
            )),
            other => Err(format!(
                "the gate configures redwood, rocksdb and sharded-rocksdb; {other} is only \
                 read from a cluster it did not start (--cluster-file)"
            )),
        }
    }
}

/// What one build's mako takes and prints, from its release and its `--help` (a build
/// may carry a backported option). Recorded with every run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MakoCaps {
    /// The release of the tree (its fdbserver's).
    pub release: Release,
    /// `--warmup_seconds` (FDB 8.0, apple/foundationdb PR 12920), and with it the reports'
    /// `Run Duration`/`Warmup Duration` (`runDuration`/`warmupDuration`).
    pub warmup_seconds: bool,
    /// `--async_xacts` (FDB 7.2).
    pub async_xacts: bool,
    /// `--stats_export_path` that writes where it is told: from 7.3 (7.2's copies the next
    /// argument instead of its own, `mako.cpp` `ARG_EXPORT_PATH`).
    pub stats_export_path: bool,
    /// Timeouts counted (`Total Timeouts`, `totalTimeouts`; FDB 7.3, PR 8718); before,
    /// mako had no transaction timeouts to count.
    pub counts_timeouts: bool,
}

impl MakoCaps {
    /// The capabilities of a mako of `release` that printed `help` for `--help`.
    pub fn read(release: Release, help: &str) -> MakoCaps {
        let has = |option: &str| {
            help.lines().any(|l| {
                l.split_whitespace()
                    .any(|w| w.split('=').next() == Some(option))
            })
        };
        MakoCaps {
            release,
            warmup_seconds: has("--warmup_seconds"),
            async_xacts: has("--async_xacts"),
            stats_export_path: has("--stats_export_path") && release >= Release::new(7, 3),
            counts_timeouts: release >= Release::new(7, 3),
        }
    }

    /// The fields this mako's reports carry.
    pub fn format(&self) -> Format {
        Format {
            warmup_fields: self.warmup_seconds,
            timeouts: self.counts_timeouts,
        }
    }

    /// Errors: `help` is not a mako usage text (it lists none of `--mode`, `--rows`,
    /// `--transaction`): the file is not mako, or it failed before printing its usage.
    pub fn check_help(help: &str) -> Result<()> {
        let listed = |o: &str| help.contains(o);
        if !(listed("--mode") && listed("--rows") && listed("--transaction")) {
            bail!(
                "its --help lists none of mako's --mode, --rows, --transaction: {:?}",
                help.chars().take(300).collect::<String>()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/testdata/releases/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    const RELEASES: [&str; 5] = ["7.1", "7.2", "7.3", "7.4", "8.0"];

    fn caps(release: &str) -> MakoCaps {
        let version = FdbVersion::parse(&fixture(&format!("fdbserver-version-{release}.txt")))
            .unwrap_or_else(|e| panic!("{release}: {e:#}"));
        let help = fixture(&format!("mako-help-{release}.txt"));
        MakoCaps::check_help(&help).unwrap();
        MakoCaps::read(Release::of(&version).unwrap(), &help)
    }

    #[test]
    fn each_releases_mako_as_its_sources_say() {
        // (warmup_seconds, async_xacts, stats_export_path, counts_timeouts)
        let expected = [
            (false, false, false, false),
            (false, true, false, false),
            (false, true, true, true),
            (false, true, true, true),
            (true, true, true, true),
        ];
        for (release, want) in RELEASES.into_iter().zip(expected) {
            let c = caps(release);
            assert_eq!(c.release.to_string(), release);
            assert_eq!(
                (
                    c.warmup_seconds,
                    c.async_xacts,
                    c.stats_export_path,
                    c.counts_timeouts
                ),
                want,
                "{release}"
            );
        }
    }

    #[test]
    fn engine_names_follow_the_release() {
        let name = |r: &str, e| caps(r).release.engine_name(e);
        assert_eq!(
            name("7.1", Engine::Redwood),
            Ok("ssd-redwood-1-experimental")
        );
        assert_eq!(
            name("7.2", Engine::Redwood),
            Ok("ssd-redwood-1-experimental")
        );
        assert_eq!(name("7.3", Engine::Redwood), Ok("ssd-redwood-1"));
        assert_eq!(name("8.0", Engine::Redwood), Ok("ssd-redwood-1"));
        assert!(name("7.1", Engine::ShardedRocksdb)
            .unwrap_err()
            .contains("came with FDB 7.2"));
        assert_eq!(
            name("7.2", Engine::ShardedRocksdb),
            Ok("ssd-sharded-rocksdb")
        );
        for r in RELEASES {
            assert_eq!(name(r, Engine::Rocksdb), Ok("ssd-rocksdb-v1"));
        }
    }

    #[test]
    fn a_release_is_read_from_the_first_line_only() {
        let v = |line: &str| FdbVersion {
            release: line.into(),
            source_version: "x".into(),
            protocol: "y".into(),
        };
        assert_eq!(
            Release::of(&v("FoundationDB 7.3 (v7.3.79)")).unwrap(),
            Release::new(7, 3)
        );
        assert_eq!(
            Release::of(&v("FoundationDB 10.12 (v10.12.0)")).unwrap(),
            Release::new(10, 12)
        );
        assert!(Release::new(7, 10) > Release::new(7, 4));
        for bad in [
            "FoundationDB",
            "FoundationDB x.y",
            "FoundationDB 7",
            "Foo 7.3",
        ] {
            assert!(Release::of(&v(bad)).is_err(), "{bad}");
        }
        assert!(MakoCaps::check_help("Usage: fdbserver [OPTIONS]").is_err());
    }
}
