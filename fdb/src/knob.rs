//! fdbserver knobs (`--knob_<name>=<value>`) and the ones a RAM disk needs.

use serde::{Deserialize, Serialize};

use crate::engine::Engine;

/// An fdbserver knob, passed as `--knob_<name>=<value>`. The name is normalized to
/// lowercase with `_` (fdbserver accepts `-` too: `flow/Knobs.cpp`, `Knobs::setKnob`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knob {
    pub name: String,
    pub value: String,
    /// Who asked for it: `user` or `auto` (added by the gate, e.g. for tmpfs).
    pub source: KnobSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnobSource {
    User,
    Auto,
}

impl Knob {
    /// Parses `NAME=VALUE` as given to `--knob`; accepts `knob_NAME` and `--knob_NAME` too.
    ///
    /// Errors: a sentence naming `flag`, the input and the expected form.
    pub fn parse_user(raw: &str, flag: &str) -> Result<Knob, String> {
        let bad = |why: &str| {
            format!(
                "invalid {flag} '{raw}': {why}; expected NAME=VALUE, \
                 e.g. {flag} page_cache_4k=2147483648"
            )
        };
        let (name, value) = raw.split_once('=').ok_or_else(|| bad("no '='"))?;
        // Lowered first: `KNOB_PAGE_CACHE_4K` is `page_cache_4k` too.
        let name = name
            .trim_start_matches("--")
            .to_ascii_lowercase()
            .replace('-', "_");
        let name = name.strip_prefix("knob_").unwrap_or(&name).to_string();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("the name must be letters, digits and '_'"));
        }
        if value.is_empty() || value.chars().any(char::is_whitespace) {
            return Err(bad("the value must be non-empty and without spaces"));
        }
        if let Some(why) = unfit(&name, value) {
            return Err(format!("{flag} {raw} is refused: {why}"));
        }
        Ok(Knob {
            name,
            value: value.to_string(),
            source: KnobSource::User,
        })
    }

    pub fn auto(name: &str, value: &str) -> Knob {
        Knob {
            name: name.to_string(),
            value: value.to_string(),
            source: KnobSource::Auto,
        }
    }

    /// The fdbserver argument, `--knob_<name>=<value>`.
    pub fn arg(&self) -> String {
        format!("--knob_{}={}", self.name, self.value)
    }
}

/// Highest `min_trace_severity` the gate can run with: SevInfo (10, the default outside
/// simulation, `flow/Knobs.cpp`). Events below the knob are not logged (`flow/Trace.cpp`),
/// and `status json` is built from the servers' SevInfo events
/// (`fdbserver/clustercontroller/Status.cpp`).
pub const MAX_TRACE_SEVERITY: i64 = 10;

/// Why the gate cannot run with knob `name` = `value`, `None` when it can. A knob that
/// hides what the gate reads would not fail: it would wait a whole bound for an answer
/// that never comes. Real 8.0, `--knob_min_trace_severity=40`: `status json` stays
/// `status_incomplete` ("Recovery Status unavailable.") with the database
/// `available: false` in the client's view, and refused knobs (SevWarnAlways events)
/// would go unseen too.
fn unfit(name: &str, value: &str) -> Option<String> {
    let severity = match name {
        "min_trace_severity" => stoi(value)?,
        _ => return None,
    };
    (severity > MAX_TRACE_SEVERITY).then(|| {
        format!(
            "fdbservers then log no events below severity {severity}, and status json, \
             which the gate waits on, is built from their SevInfo ({MAX_TRACE_SEVERITY}) \
             events: it would stay incomplete (status_incomplete) and the database never \
             read as available; give a value of {MAX_TRACE_SEVERITY} or less, or leave the \
             knob out"
        )
    })
}

/// An int knob's value as fdbserver reads it: `std::stoi(value, &n, 0)`
/// (`flow/Knobs.cpp`), so a sign, then `0x`/`0X` hex, a leading `0` octal, else decimal;
/// `None` when fdbserver would refuse it (it then says so itself).
fn stoi(value: &str) -> Option<i64> {
    let (negative, digits) = match value.as_bytes().first()? {
        b'-' => (true, &value[1..]),
        b'+' => (false, &value[1..]),
        _ => (false, value),
    };
    let lower = digits.to_ascii_lowercase();
    let parsed = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse::<i64>()
    };
    parsed.ok().map(|v| if negative { -v } else { v })
}

/// The knobs a trial's fdbservers get: on tmpfs the ones it needs, then the user's (which
/// win over them and over earlier user knobs of the same name).
///
/// tmpfs rejects `O_DIRECT`: FDB's kernel AIO path opens data files with it
/// (`fdbrpc/AsyncFileKAIO.actor.h`), so `disable_posix_kernel_aio=1` is needed, and
/// RocksDB's direct reads and flush/compaction writes must be off
/// (`fdbserver/RocksDBKnobs`/`ServerKnobs.cpp`: `ROCKSDB_USE_DIRECT_READS`,
/// `ROCKSDB_USE_DIRECT_IO_FLUSH_COMPACTION`).
pub fn effective_knobs(user: &[Knob], engine: Engine, tmpfs: bool) -> Vec<Knob> {
    let mut knobs: Vec<Knob> = Vec::new();
    if tmpfs {
        knobs.push(Knob::auto("disable_posix_kernel_aio", "1"));
        if engine.is_rocksdb() {
            knobs.push(Knob::auto("rocksdb_use_direct_reads", "false"));
            knobs.push(Knob::auto(
                "rocksdb_use_direct_io_flush_compaction",
                "false",
            ));
        }
    }
    for k in user {
        knobs.retain(|old| old.name != k.name);
        knobs.push(k.clone());
    }
    knobs
}

/// The knobs a tester (`fdbserver -c test`) of a cluster the gate did not start gets: on
/// tmpfs `disable_posix_kernel_aio=1`, as its data dir is on the work dir (see
/// [`effective_knobs`]). The cluster's servers have their own knobs, the gate's none.
pub fn tester_knobs(tmpfs: bool) -> Vec<Knob> {
    if tmpfs {
        vec![Knob::auto("disable_posix_kernel_aio", "1")]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(k: &[Knob]) -> Vec<String> {
        k.iter().map(Knob::arg).collect()
    }

    #[test]
    fn tmpfs_adds_the_aio_knob_and_rocksdb_the_direct_io_knobs() {
        assert_eq!(
            names(&effective_knobs(&[], Engine::Redwood, true)),
            ["--knob_disable_posix_kernel_aio=1"]
        );
        assert_eq!(
            names(&effective_knobs(&[], Engine::ShardedRocksdb, true)),
            [
                "--knob_disable_posix_kernel_aio=1",
                "--knob_rocksdb_use_direct_reads=false",
                "--knob_rocksdb_use_direct_io_flush_compaction=false"
            ]
        );
        assert!(effective_knobs(&[], Engine::Rocksdb, false).is_empty());
        assert_eq!(
            names(&tester_knobs(true)),
            ["--knob_disable_posix_kernel_aio=1"]
        );
        assert!(tester_knobs(false).is_empty());
    }

    #[test]
    fn a_knob_that_hides_the_events_status_json_reads_is_refused() {
        // Status json is built from the servers' SevInfo events: min_trace_severity=40
        // drops them, and status stays status_incomplete for the whole bound.
        let err = Knob::parse_user("MIN_TRACE_SEVERITY=40", "--experiment-knob").unwrap_err();
        assert!(
            err.starts_with("--experiment-knob MIN_TRACE_SEVERITY=40 is refused")
                && err.contains("status_incomplete")
                && err.contains("10 or less"),
            "{err}"
        );
        for fine in [
            "min_trace_severity=10",
            "min_trace_severity=5",
            "page_cache_4k=40",
        ] {
            assert!(Knob::parse_user(fine, "--knob").is_ok(), "{fine}");
        }
        // fdbserver reads int knobs with stoi base 0: 0x28 is 40, 012 is 10.
        for hidden in ["0x28", "0X28", "+40", "050"] {
            let raw = format!("min_trace_severity={hidden}");
            assert!(Knob::parse_user(&raw, "--knob").is_err(), "{raw}");
        }
        assert!(Knob::parse_user("min_trace_severity=012", "--knob").is_ok());
    }

    #[test]
    fn every_spelling_of_the_prefix_names_the_same_knob() {
        // The knob_ prefix is dropped in any case and spelling, or KNOB_PAGE_CACHE_4K
        // would be read as a knob named knob_page_cache_4k.
        for raw in [
            "page_cache_4k=1",
            "knob_page_cache_4k=1",
            "--knob_page_cache_4k=1",
            "KNOB_PAGE_CACHE_4K=1",
            "--KNOB-PAGE-CACHE-4K=1",
        ] {
            assert_eq!(
                Knob::parse_user(raw, "--knob").unwrap().name,
                "page_cache_4k",
                "{raw}"
            );
        }
    }

    #[test]
    fn a_user_knob_replaces_the_automatic_one_of_the_same_name() {
        let user = [
            Knob::parse_user("disable_posix_kernel_aio=0", "--knob").unwrap(),
            Knob::parse_user("page_cache_4k=1", "--knob").unwrap(),
            Knob::parse_user("page_cache_4k=2", "--knob").unwrap(),
        ];
        let k = effective_knobs(&user, Engine::Redwood, true);
        assert_eq!(
            names(&k),
            [
                "--knob_disable_posix_kernel_aio=0",
                "--knob_page_cache_4k=2"
            ]
        );
        assert!(k.iter().all(|k| k.source == KnobSource::User));
    }
}
