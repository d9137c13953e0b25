//! FDB's deterministic simulator, `fdbserver -r simulation -f SPEC -s SEED -b off`, run under
//! Valgrind's cachegrind to count the instructions a whole simulated cluster executes: the
//! spec the gate writes ([`SimulationSpec`]), what the simulator prints ([`read_run`]),
//! cachegrind's output file ([`parse_cachegrind`]) and the attribution of its functions to
//! the cluster's roles ([`role_of_file`]).
//!
//! Pure: callers read the files and pass their text. Sources, FDB 8.0 (main): the spec's
//! `[configuration]` keys `fdbserver/SimulatedCluster.cpp` (`TestConfig::readFromConfig`),
//! the storage engine numbers `fdbserver/core/include/fdbserver/core/FDBSimulationPolicy.h`
//! (`SimulationStorageEngine`), the run's last lines `fdbserver/fdbserver.cpp` and
//! `flow/DeterministicRandom.cpp` (`Unseed: N`, the determinism check: the same binary and
//! seed print the same unseed), ReadWrite's counters `fdbserver/workloads/ReadWrite.cpp`.
//! Seen on real runs (`testdata/simulation/`, FDB 8.0, Valgrind 3.19):
//! - the simulator runs the whole cluster and the workload's clients in one process, and
//!   writes `simfdb/` and its trace files into its working directory;
//! - `config = 'single'` alone still lets it choose 5 commit proxies and 6 resolvers on 3
//!   machines; the counts and `datacenters = 1` below fix one of each;
//! - the test's metrics come as multitest's do (`Metric (client, index): NAME, VALUE, ...`),
//!   one set per simulated client (8 with this spec), after a `ChangeConfig` test with no
//!   metrics;
//! - about a quarter of the instructions have no symbol at all (`fn=???`), and glibc's,
//!   libstdc++'s unwinder and flow's memory-tracker sampling another tenth: shared work no
//!   role owns.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{multitest::ReadWriteSpec, Engine};

/// The simulator's `storageEngineType` of `engine` (`SimulationStorageEngine`).
pub fn storage_engine_type(engine: Engine) -> Result<u8> {
    Ok(match engine {
        Engine::Ssd2 => 0,
        Engine::Memory => 1,
        Engine::MemoryRadixtree => 2,
        Engine::Redwood => 3,
        Engine::Rocksdb => 4,
        Engine::ShardedRocksdb => 5,
        Engine::Ssd1 => bail!("FDB's simulator has no ssd-1 storage engine"),
    })
}

/// A simulation test: a fixed, fault-free cluster of one storage engine (single
/// replication, one coordinator, one tlog, one commit proxy, GRV proxy and resolver, no
/// buggify, fault injection, testing storage server or simulated HTTP server) running one
/// ReadWrite test that counts every transaction of the test (`discardEdgeMeasurements =
/// false`), so that instructions per committed transaction cover the whole test.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulationSpec<'a> {
    pub engine: Engine,
    pub test: &'a ReadWriteSpec,
}

impl SimulationSpec<'_> {
    /// The spec as TOML for `fdbserver -r simulation -f FILE.toml`. Errors: an engine the
    /// simulator does not have, or a ReadWrite value FDB would refuse.
    pub fn to_toml(&self) -> Result<String> {
        let engine = storage_engine_type(self.engine)?;
        let test = self.test.to_toml()?;
        // ReadWrite's window, the middle 75% by default, would leave the edges' work
        // without their transactions.
        let test = test.replacen(
            "    testName = 'ReadWrite'\n",
            "    testName = 'ReadWrite'\n    discardEdgeMeasurements = false\n",
            1,
        );
        Ok(format!(
            "[configuration]\nconfig = 'single'\nstorageEngineType = {engine}\nbuggify = false\n\
             faultInjection = false\ndisableTss = true\ndisableHostname = true\n\
             generateFearless = false\nsimHTTPServerEnabled = false\ndatacenters = 1\n\
             machineCount = 1\nprocessesPerMachine = 1\ncoordinators = 1\n\
             desiredTLogCount = 1\ncommitProxyCount = 1\ngrvProxyCount = 1\nresolverCount = 1\n\n\
             {test}"
        ))
    }
}

/// What one simulation printed on stdout: the determinism check's unseed and the test's
/// counts, summed over the simulated clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulationResult {
    /// `Unseed: N`: equal for two runs of the same binary and seed when the run was
    /// deterministic; a change that alters the simulated path (timing, messages) alters it.
    pub unseed: u64,
    /// Committed (or, read-only, completed) transactions of the whole test:
    /// `ReadWrite.A Transactions` + `ReadWrite.B Transactions` over the clients.
    pub transactions: f64,
    /// `ReadWrite.Retries` over the clients: attempts retried (conflicts, too old).
    pub retries: f64,
    /// Simulated clients that reported the test's metrics.
    pub clients: usize,
    /// Simulated seconds of the whole run (`Elapsed: S simsec, ...`), when printed.
    pub simulated_s: Option<f64>,
}

/// The ReadWrite test titled `title` of a simulation's stdout. Errors, each saying what
/// happened: no unseed (the run did not finish), a failed test (`N tests passed; M tests
/// failed.` with M > 0 or no such line), no metrics of that test, or no transaction.
pub fn read_run(stdout: &str, title: &str) -> Result<SimulationResult> {
    let out = crate::multitest::parse_stdout(stdout)?;
    let unseed = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Unseed: "))
        .context("the simulation printed no 'Unseed: N' line: it did not finish")?;
    let unseed: u64 = unseed
        .trim()
        .parse()
        .with_context(|| format!("unseed {unseed:?} is not a number"))?;
    match (out.passed, out.failed) {
        (Some(p), Some(f)) if f > 0 || p == 0 => {
            bail!("the simulation's test failed: it printed {p} tests passed and {f} failed")
        }
        (Some(_), Some(_)) => {}
        _ => bail!(
            "the simulation printed no 'N tests passed; M tests failed.' line: its test did \
             not finish"
        ),
    }
    let Some(test) = out.tests.iter().find(|t| t.title == title) else {
        bail!("the simulation printed no metrics of test {title}");
    };
    let clients: Vec<_> = test.testers.iter().filter(|t| !t.is_empty()).collect();
    let sum = |name: &str| -> Result<f64> {
        clients
            .iter()
            .map(|t| {
                t.get(&format!("ReadWrite.{name}"))
                    .copied()
                    .with_context(|| format!("a client of test {title} did not report '{name}'"))
            })
            .sum()
    };
    let transactions = sum("A Transactions")? + sum("B Transactions")?;
    if !(transactions.is_finite() && transactions >= 1.0) {
        bail!(
            "test {title} committed no transaction ({} over {} clients)",
            crate::compact(transactions),
            clients.len()
        );
    }
    let simulated_s = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Elapsed: "))
        .and_then(|r| r.split_once(" simsec"))
        .and_then(|(s, _)| s.trim().parse().ok());
    Ok(SimulationResult {
        unseed,
        transactions,
        retries: sum("Retries")?,
        clients: clients.len(),
        simulated_s,
    })
}

/// Instructions (cachegrind's `Ir`) of one function, summed over the source files its
/// instructions came from (inlined code names the header it was written in).
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCost {
    /// The function as cachegrind names it (`fn=`, demangled; `???` without a symbol).
    pub function: String,
    /// Where the function is defined, as far as the debug information tells: the source
    /// file (`.cpp`, `.cc`, `.c`) that holds most of its instructions, else the file that
    /// holds most; `???` when unknown.
    pub file: String,
    pub ir: u64,
}

/// A cachegrind output file (`--tool=cachegrind`, any cache simulation): instructions per
/// function, and the whole run's.
#[derive(Debug, Clone, PartialEq)]
pub struct Cachegrind {
    /// `cmd:`: the command that ran.
    pub command: String,
    /// The whole run's instructions (`summary:`).
    pub total_ir: u64,
    /// Every function that executed an instruction, the most expensive first.
    pub functions: Vec<FunctionCost>,
}

/// Bound on a cost line's numbers: more instructions than a run executes in years.
const MAX_COST: u64 = 1 << 60;

/// Parses a cachegrind output file (format: `docs/cg-manual` of Valgrind, "Cachegrind
/// Output File Format": `desc:`/`cmd:`/`events:` headers, `fl=` and `fn=` lines that set
/// the file and function, `LINE COUNT...` cost lines in `events:` order, `summary:`).
/// Errors: no `events:` line with `Ir`, a cost line before `fl=`/`fn=` or that does not
/// read, no `summary:`, or a summary that is not the sum of the cost lines (a truncated
/// or altered file).
pub fn parse_cachegrind(text: &str) -> Result<Cachegrind> {
    let mut ir_column = None;
    let (mut command, mut summary) = (String::new(), None);
    let (mut file, mut function): (Option<&str>, Option<&str>) = (None, None);
    let mut costs: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut total: u64 = 0;
    for (n, line) in text.lines().enumerate() {
        let at = || format!("cachegrind line {}: {}", n + 1, quoted_start(line));
        if let Some(events) = line.strip_prefix("events:") {
            ir_column = Some(
                events
                    .split_whitespace()
                    .position(|e| e == "Ir")
                    .with_context(|| format!("{}: no Ir event", at()))?,
            );
        } else if let Some(c) = line.strip_prefix("cmd:") {
            command = c.trim().to_string();
        } else if let Some(f) = line.strip_prefix("fl=") {
            file = Some(f);
        } else if let Some(f) = line.strip_prefix("fn=") {
            function = Some(f);
        } else if let Some(s) = line.strip_prefix("summary:") {
            let col = ir_column.with_context(|| format!("{}: before events:", at()))?;
            let v = s.split_whitespace().nth(col).unwrap_or("");
            summary = Some(v.parse::<u64>().with_context(at)?);
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            let col = ir_column.with_context(|| format!("{}: cost before events:", at()))?;
            let (Some(fl), Some(f)) = (file, function) else {
                bail!("{}: cost line before fl= and fn=", at());
            };
            let mut fields = line.split_whitespace();
            fields.next();
            // A missing trailing count is 0 (the format drops trailing zeros).
            let v = match fields.nth(col) {
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|v| *v < MAX_COST)
                    .with_context(at)?,
                None => 0,
            };
            *costs.entry((fl, f)).or_default() += v;
            total = total
                .checked_add(v)
                .filter(|t| *t < MAX_COST)
                .with_context(at)?;
        } else if line.starts_with("desc:") || line.starts_with("positions:") || line.is_empty() {
        } else {
            bail!("{}: not a cachegrind line", at());
        }
    }
    let Some(summary) = summary else {
        bail!("the cachegrind file has no summary: line: it is incomplete");
    };
    if summary != total {
        bail!(
            "the cachegrind file's summary says {summary} instructions, its cost lines add up \
             to {total}: it is truncated or altered"
        );
    }
    Ok(Cachegrind {
        command,
        total_ir: summary,
        functions: by_function(&costs),
    })
}

/// Longest part of a line a message quotes.
const QUOTED_CHARS: usize = 120;

/// The start of `line` quoted for a message, cut after [`QUOTED_CHARS`] characters (a
/// line of a damaged file may be megabytes long).
fn quoted_start(line: &str) -> String {
    match line.char_indices().nth(QUOTED_CHARS) {
        Some((i, _)) => format!("{:?}... ({} more bytes)", &line[..i], line.len() - i),
        None => format!("{line:?}"),
    }
}

/// Costs per (file, function) summed per function, each with its defining file.
fn by_function(costs: &BTreeMap<(&str, &str), u64>) -> Vec<FunctionCost> {
    let mut per_fn: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for (&(file, function), &ir) in costs {
        per_fn.entry(function).or_default().push((file, ir));
    }
    let mut out: Vec<FunctionCost> = per_fn
        .into_iter()
        .map(|(function, files)| {
            let source = |f: &str| [".cpp", ".cc", ".c"].iter().any(|e| f.ends_with(e));
            let most = |only_sources: bool| {
                files
                    .iter()
                    .filter(|(f, _)| !only_sources || source(f))
                    .max_by_key(|(f, ir)| (*ir, std::cmp::Reverse(*f)))
                    .map(|(f, _)| *f)
            };
            FunctionCost {
                function: function.to_string(),
                file: most(true).or(most(false)).unwrap_or("???").to_string(),
                ir: files.iter().map(|(_, ir)| ir).sum(),
            }
        })
        .filter(|f| f.ir > 0)
        .collect();
    out.sort_by(|a, b| b.ir.cmp(&a.ir).then_with(|| a.function.cmp(&b.function)));
    out
}

/// The part of a simulated cluster a function's work belongs to, from its defining file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SimRole {
    /// The storage server and its storage engines (Redwood, RocksDB, SQLite, memory).
    Storage,
    /// The transaction log and the log system.
    Log,
    /// Commit and GRV proxies, resolver, master (sequencer), cluster controller,
    /// coordinators, ratekeeper, data distribution.
    Stateless,
    /// The client library and the workload (ReadWrite, the tester).
    Client,
    /// Everything else: flow, fdbrpc (the simulated network), the simulator, glibc,
    /// libstdc++ and code without symbols.
    Shared,
}

impl SimRole {
    pub const ALL: [SimRole; 5] = [
        SimRole::Storage,
        SimRole::Log,
        SimRole::Stateless,
        SimRole::Client,
        SimRole::Shared,
    ];

    /// Lowercase name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            SimRole::Storage => "storage",
            SimRole::Log => "log",
            SimRole::Stateless => "stateless",
            SimRole::Client => "client",
            SimRole::Shared => "shared",
        }
    }

    /// The role named `name` ([`SimRole::as_str`]).
    pub fn from_name(name: &str) -> Option<SimRole> {
        SimRole::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// The role of a function defined in `file` (a path as the debug information gives it,
/// absolute or relative): by the FDB directory it is in (8.0 keeps each role's sources in
/// `fdbserver/<role>/`) or, in the flat `fdbserver/` of 7.x, by the file's name
/// (`storageserver.actor.cpp`, `TLogServer.actor.cpp`, ...). The last `fdbserver`,
/// `fdbclient`, `bindings`, `flow` or `fdbrpc` component of the path decides, so where the
/// checkout lives does not.
pub fn role_of_file(file: &str) -> SimRole {
    let parts: Vec<&str> = file.split('/').collect();
    let Some(top) = parts
        .iter()
        .rposition(|p| ["fdbserver", "fdbclient", "bindings", "flow", "fdbrpc"].contains(p))
    else {
        return SimRole::Shared;
    };
    let rest = &parts[top + 1..];
    let name = rest.last().copied().unwrap_or("");
    match parts[top] {
        "fdbclient" | "bindings" => return SimRole::Client,
        "flow" | "fdbrpc" => return SimRole::Shared,
        _ => {}
    }
    let dir = if rest.len() > 1 { rest[0] } else { "" };
    let by_dir = match dir {
        "storageserver" | "kvstore" => Some(SimRole::Storage),
        "tlog" | "logsystem" | "logrouter" => Some(SimRole::Log),
        "commitproxy" | "grvproxy" | "resolver" | "sequencer" | "clustercontroller"
        | "coordinator" | "ratekeeper" | "datadistributor" => Some(SimRole::Stateless),
        "workloads" | "tester" => Some(SimRole::Client),
        _ => None,
    };
    if let Some(role) = by_dir {
        return role;
    }
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
    if starts(&[
        "storageserver",
        "StorageServer",
        "VersionedBTree",
        "KeyValueStore",
        "DeltaTree",
        "IPager",
        "Redwood",
        "StorageMetrics",
    ]) {
        SimRole::Storage
    } else if starts(&[
        "TLogServer",
        "OldTLogServer",
        "LogSystem",
        "TagPartitionedLogSystem",
        "LogRouter",
    ]) {
        SimRole::Log
    } else if starts(&[
        "CommitProxyServer",
        "GrvProxyServer",
        "Resolver",
        "masterserver",
        "ClusterController",
        "Coordination",
        "Ratekeeper",
        "DataDistribution",
    ]) {
        SimRole::Stateless
    } else if starts(&["tester"]) {
        SimRole::Client
    } else {
        SimRole::Shared
    }
}

/// Instructions per role of a cachegrind run, every role present (0 when none).
pub fn ir_by_role(run: &Cachegrind) -> BTreeMap<SimRole, u64> {
    let mut out: BTreeMap<SimRole, u64> = SimRole::ALL.iter().map(|r| (*r, 0)).collect();
    for f in &run.functions {
        *out.entry(role_of_file(&f.file)).or_default() += f.ir;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: &str = include_str!("../testdata/simulation/stdout-seed1.txt");
    const CACHEGRIND: &str = include_str!("../testdata/simulation/cachegrind-excerpt.out");

    #[test]
    fn a_real_simulation_stdout_gives_its_unseed_and_transactions() {
        let r = read_run(STDOUT, "PerfgateReadWrite").unwrap();
        assert_eq!(r.unseed, 88057);
        assert_eq!(r.clients, 5);
        // A Transactions of the five clients: 474 + 488 + 459 + ...
        assert!(r.transactions > 2000.0 && r.transactions < 3000.0, "{r:?}");
        assert!(r.retries > 3000.0, "{r:?}");
        assert_eq!(r.simulated_s, Some(24.883535));
        let err = read_run(STDOUT, "Other").unwrap_err();
        assert!(
            format!("{err:#}").contains("no metrics of test Other"),
            "{err:#}"
        );
    }

    #[test]
    fn a_simulation_that_did_not_finish_or_failed_says_so() {
        let cut = &STDOUT[..STDOUT.find("Unseed").unwrap()];
        let err = read_run(cut, "PerfgateReadWrite").unwrap_err();
        assert!(
            format!("{err:#}").contains("no 'Unseed: N' line"),
            "{err:#}"
        );
        let failed = STDOUT.replace(
            "1 tests passed; 0 tests failed.",
            "0 tests passed; 1 tests failed.",
        );
        let err = read_run(&failed, "PerfgateReadWrite").unwrap_err();
        assert!(
            format!("{err:#}").contains("0 tests passed and 1 failed"),
            "{err:#}"
        );
        let no_count = STDOUT.replace("1 tests passed; 0 tests failed.", "");
        let err = read_run(&no_count, "PerfgateReadWrite").unwrap_err();
        assert!(
            format!("{err:#}").contains("its test did not finish"),
            "{err:#}"
        );
    }

    #[test]
    fn a_real_cachegrind_file_gives_instructions_per_function_and_role() {
        let run = parse_cachegrind(CACHEGRIND).unwrap();
        assert!(run.command.contains("-r simulation"), "{}", run.command);
        assert_eq!(
            run.functions.iter().map(|f| f.ir).sum::<u64>(),
            run.total_ir
        );
        let get_value = run
            .functions
            .iter()
            .find(|f| f.function.starts_with("getValueQ("))
            .expect("the storage server's point read is in the excerpt");
        assert!(get_value
            .file
            .ends_with("fdbserver/storageserver/storageserver.cpp"));
        let roles = ir_by_role(&run);
        assert!(roles[&SimRole::Storage] >= get_value.ir);
        assert!(roles[&SimRole::Shared] > roles[&SimRole::Storage]);
        assert_eq!(roles.values().sum::<u64>(), run.total_ir);
    }

    #[test]
    fn a_truncated_or_foreign_cachegrind_file_is_refused() {
        let cut = &CACHEGRIND[..CACHEGRIND.find("summary:").unwrap()];
        let err = parse_cachegrind(cut).unwrap_err();
        assert!(format!("{err:#}").contains("no summary"), "{err:#}");
        let err = parse_cachegrind(&(cut.to_string() + "summary: 1\n")).unwrap_err();
        assert!(format!("{err:#}").contains("add up"), "{err:#}");
        let err = parse_cachegrind("events: Ir\n12 3\nsummary: 3\n").unwrap_err();
        assert!(format!("{err:#}").contains("before fl= and fn="), "{err:#}");
        let err = parse_cachegrind("events: Dr\nsummary: 3\n").unwrap_err();
        assert!(format!("{err:#}").contains("no Ir event"), "{err:#}");
        // A damaged line of megabytes is quoted by its start.
        let long = format!("events: Ir\n{}\n", "x".repeat(3 << 20));
        let err = format!("{:#}", parse_cachegrind(&long).unwrap_err());
        assert!(
            err.len() < 300 && err.contains("more bytes"),
            "{}",
            &err[..300.min(err.len())]
        );
    }

    #[test]
    fn a_function_is_defined_in_its_source_file_not_the_headers_inlined_into_it() {
        let text = "events: Ir\nfl=/src/flow/include/flow/Arena.h\nfn=getValueQ(x)\n1 90\n\
                    fl=/src/fdbserver/storageserver/storageserver.cpp\nfn=getValueQ(x)\n2 10\n\
                    fl=/src/flow/Net2.cpp\nfn=run()\n3 5\nsummary: 105\n";
        let run = parse_cachegrind(text).unwrap();
        assert_eq!(run.functions[0].ir, 100);
        assert_eq!(
            run.functions[0].file,
            "/src/fdbserver/storageserver/storageserver.cpp"
        );
        assert_eq!(role_of_file(&run.functions[0].file), SimRole::Storage);
        assert_eq!(role_of_file(&run.functions[1].file), SimRole::Shared);
    }

    #[test]
    fn roles_come_from_8_0_directories_and_7_x_file_names() {
        for (file, role) in [
            (
                "/w/foundationdb/fdbserver/kvstore/VersionedBTree.cpp",
                SimRole::Storage,
            ),
            ("./fdbserver/tlog/TLogServer.cpp", SimRole::Log),
            (
                "/b/fdbserver/commitproxy/CommitProxyServer.cpp",
                SimRole::Stateless,
            ),
            ("/b/fdbserver/workloads/ReadWrite.cpp", SimRole::Client),
            ("/b/fdbclient/NativeAPI.cpp", SimRole::Client),
            ("/b/fdbrpc/sim2.cpp", SimRole::Shared),
            ("/b/fdbserver/SimulatedCluster.cpp", SimRole::Shared),
            ("/b/fdbserver/storageserver.actor.g.cpp", SimRole::Storage),
            ("/b/fdbserver/TLogServer.actor.cpp", SimRole::Log),
            ("/b/fdbserver/masterserver.actor.cpp", SimRole::Stateless),
            // A checkout under a directory named like a role's is read from its own tree.
            ("/home/flow/fdbserver/storageserver/x.cpp", SimRole::Storage),
            ("./malloc/./malloc/malloc.c", SimRole::Shared),
            ("???", SimRole::Shared),
        ] {
            assert_eq!(role_of_file(file), role, "{file}");
        }
        for r in SimRole::ALL {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(SimRole::from_name(r.as_str()), Some(r));
        }
    }

    #[test]
    fn the_spec_fixes_the_cluster_and_counts_the_whole_test() {
        let test = ReadWriteSpec {
            title: "perfgate-sim".into(),
            duration_s: 5.0,
            target_tps: 1000.0,
            actors_per_tester: 10,
            node_count: 20000,
            key_bytes: 16,
            value_bytes: 100,
            reads_a: 18,
            writes_a: 2,
            reads_b: 0,
            writes_b: 0,
            alpha: 0.0,
            clear_after_test: false,
        };
        let toml = SimulationSpec {
            engine: Engine::Redwood,
            test: &test,
        }
        .to_toml()
        .unwrap();
        for line in [
            "storageEngineType = 3",
            "buggify = false",
            "faultInjection = false",
            "resolverCount = 1",
            "discardEdgeMeasurements = false",
            "nodeCount = 20000",
        ] {
            assert!(toml.lines().any(|l| l.trim() == line), "{line} in\n{toml}");
        }
        assert!(SimulationSpec {
            engine: Engine::Ssd1,
            test: &test
        }
        .to_toml()
        .is_err());
    }
}
