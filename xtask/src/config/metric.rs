//! What the gate measures of a trial and can gate on: the [`Metric`]s, the process roles
//! whose CPU is accounted ([`CpuRole`]), and the set of gated metrics ([`MetricSet`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the kernel lists the hardware PMU's events, which [`Metric::InstructionsPerTxn`]
/// needs; absent on VMs without PMU passthrough (this project's 2-vCPU KVM host has only
/// software and tracepoint event sources).
pub const HARDWARE_PMU: &str = "/sys/bus/event_source/devices/cpu";

/// A group of processes whose CPU is accounted separately: one per fdbserver process
/// class of the cluster (`fdbserver -c`), and the client.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum CpuRole {
    /// The stateless fdbserver: coordinator, cluster controller, proxies, resolver.
    Stateless,
    /// The transaction log (tlog) fdbserver.
    Log,
    /// The storage server.
    Storage,
    /// mako, with every process it forks; or the multitest driver's testers and the
    /// multitest process.
    Client,
}

impl CpuRole {
    pub const ALL: [CpuRole; 4] = [
        CpuRole::Stateless,
        CpuRole::Log,
        CpuRole::Storage,
        CpuRole::Client,
    ];

    /// Lowercase name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CpuRole::Stateless => "stateless",
            CpuRole::Log => "log",
            CpuRole::Storage => "storage",
            CpuRole::Client => "client",
        }
    }
}

impl std::fmt::Display for CpuRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A per-trial value the judge compares between the arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// mako's post-warmup TPS (higher is better).
    Tps,
    /// mako's p99 transaction latency, microseconds (lower is better; warmup included).
    TxnLatencyP99,
    /// CPU microseconds per committed transaction of one role over the measurement
    /// window (lower is better): work, which contention for the host's cores moves less
    /// than it moves TPS.
    CpuPerTxn(CpuRole),
    /// The storage server's CPU per transaction divided by the client's (lower is
    /// better): the same work with the host's speed of the moment cancelled out. On a
    /// shared 2-core VM every role's CPU per transaction rose together by up to 20% in some
    /// trials (the CPU itself ran slower); mako's work per transaction is fixed by the
    /// workload and the client library, so a storage change moves only the numerator.
    /// A change to the client library moves it too.
    StorageCpuRatio,
    /// Instructions retired per committed transaction of one role over the measurement
    /// window (lower is better), where the host has a hardware PMU: work that the host's
    /// speed of the moment does not move at all (rustc-perf gates on `instructions:u` for
    /// this reason).
    InstructionsPerTxn(CpuRole),
    /// Instructions per committed transaction of the whole run, every role and the code
    /// no role owns (flow, fdbrpc, libraries) together: the simulation driver's
    /// (lower is better). A change in shared code shows here and in no role.
    TotalInstructionsPerTxn,
    /// A saturation sweep's knee (`--sweep`), TPS (higher is better): the highest target
    /// an arm followed (measured within 10% of it, not overdriven). One value per arm and
    /// run, not per trial: judged by `judge::knee`, whose REGRESSION also needs a paired
    /// test of the TPS at the steps above the lower knee.
    KneeTps,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 13] = [
        Metric::Tps,
        Metric::TxnLatencyP99,
        Metric::StorageCpuRatio,
        Metric::CpuPerTxn(CpuRole::Storage),
        Metric::CpuPerTxn(CpuRole::Log),
        Metric::CpuPerTxn(CpuRole::Stateless),
        Metric::CpuPerTxn(CpuRole::Client),
        Metric::InstructionsPerTxn(CpuRole::Storage),
        Metric::InstructionsPerTxn(CpuRole::Log),
        Metric::InstructionsPerTxn(CpuRole::Stateless),
        Metric::InstructionsPerTxn(CpuRole::Client),
        Metric::TotalInstructionsPerTxn,
        Metric::KneeTps,
    ];

    /// Name in JSON, JUnit test cases and `--gate`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::TxnLatencyP99 => "txn_latency_p99",
            Metric::CpuPerTxn(CpuRole::Storage) => "storage_cpu_us_per_txn",
            Metric::CpuPerTxn(CpuRole::Log) => "log_cpu_us_per_txn",
            Metric::CpuPerTxn(CpuRole::Stateless) => "stateless_cpu_us_per_txn",
            Metric::CpuPerTxn(CpuRole::Client) => "client_cpu_us_per_txn",
            Metric::StorageCpuRatio => "storage_to_client_cpu",
            Metric::InstructionsPerTxn(CpuRole::Storage) => "storage_instructions_per_txn",
            Metric::InstructionsPerTxn(CpuRole::Log) => "log_instructions_per_txn",
            Metric::InstructionsPerTxn(CpuRole::Stateless) => "stateless_instructions_per_txn",
            Metric::InstructionsPerTxn(CpuRole::Client) => "client_instructions_per_txn",
            Metric::TotalInstructionsPerTxn => "instructions_per_txn",
            Metric::KneeTps => "knee_tps",
        }
    }

    /// Words for messages.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Tps => "TPS",
            Metric::TxnLatencyP99 => "p99 transaction latency",
            Metric::CpuPerTxn(CpuRole::Storage) => "storage server CPU per transaction",
            Metric::CpuPerTxn(CpuRole::Log) => "tlog CPU per transaction",
            Metric::CpuPerTxn(CpuRole::Stateless) => "stateless server CPU per transaction",
            Metric::CpuPerTxn(CpuRole::Client) => "client (mako or testers) CPU per transaction",
            Metric::StorageCpuRatio => "storage server CPU relative to the client's",
            Metric::InstructionsPerTxn(CpuRole::Storage) => {
                "storage server instructions per transaction"
            }
            Metric::InstructionsPerTxn(CpuRole::Log) => "tlog instructions per transaction",
            Metric::InstructionsPerTxn(CpuRole::Stateless) => {
                "stateless server instructions per transaction"
            }
            Metric::InstructionsPerTxn(CpuRole::Client) => {
                "client (mako or testers) instructions per transaction"
            }
            Metric::TotalInstructionsPerTxn => "instructions per transaction, all code",
            Metric::KneeTps => "knee (the highest target TPS followed)",
        }
    }

    /// Short name with the unit, for tables: `TPS`, `p99 µs`, `storage µs/txn`.
    pub fn unit_label(self) -> &'static str {
        match self {
            Metric::Tps => "TPS",
            Metric::TxnLatencyP99 => "p99 µs",
            Metric::CpuPerTxn(CpuRole::Storage) => "storage CPU µs/txn",
            Metric::CpuPerTxn(CpuRole::Log) => "tlog CPU µs/txn",
            Metric::CpuPerTxn(CpuRole::Stateless) => "stateless CPU µs/txn",
            Metric::CpuPerTxn(CpuRole::Client) => "client CPU µs/txn",
            Metric::StorageCpuRatio => "storage/client CPU",
            Metric::InstructionsPerTxn(CpuRole::Storage) => "storage instr/txn",
            Metric::InstructionsPerTxn(CpuRole::Log) => "tlog instr/txn",
            Metric::InstructionsPerTxn(CpuRole::Stateless) => "stateless instr/txn",
            Metric::InstructionsPerTxn(CpuRole::Client) => "client instr/txn",
            Metric::TotalInstructionsPerTxn => "all instr/txn",
            Metric::KneeTps => "knee TPS",
        }
    }

    /// Whether a fall of the value is an improvement (latency, CPU per transaction).
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::Tps | Metric::KneeTps)
    }

    /// Which way the metric improves.
    pub fn direction(self) -> Direction {
        if self.lower_is_better() {
            Direction::LowerIsBetter
        } else {
            Direction::HigherIsBetter
        }
    }

    /// The unit of the metric's values, as history tools show it.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Tps | Metric::KneeTps => "TPS",
            Metric::TxnLatencyP99 => "µs",
            Metric::CpuPerTxn(_) => "CPU µs/txn",
            Metric::StorageCpuRatio => "ratio",
            Metric::InstructionsPerTxn(_) | Metric::TotalInstructionsPerTxn => "instructions/txn",
        }
    }

    /// The metric named `name` (see [`Metric::name`]).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    fn bit(self) -> u16 {
        1 << Metric::ALL
            .iter()
            .position(|m| *m == self)
            .expect("every metric is in ALL")
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let name = String::deserialize(d)?;
        Metric::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown metric {name:?}")))
    }
}

/// Which way a metric improves: TPS and the knee rise, latency and work per transaction
/// fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// A string, one of the metrics' names ([`Metric::name`]).
impl JsonSchema for Metric {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Metric".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
        schemars::json_schema!({
            "description": "A metric's name: what `--gate` takes and JUnit names its test case.",
            "type": "string",
            "enum": names,
        })
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The metrics that gate a run (in the Holm family, and in the exit status); the others
/// are judged and reported only. Serialized as a list of metric names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSet(u16);

impl MetricSet {
    /// TPS alone.
    pub const TPS: MetricSet = MetricSet(1);
    /// No metric.
    pub const NONE: MetricSet = MetricSet(0);

    /// This set with `m` added.
    pub fn with(self, m: Metric) -> MetricSet {
        MetricSet(self.0 | m.bit())
    }

    /// This set with every metric of `ms` added.
    pub fn with_all(self, ms: impl IntoIterator<Item = Metric>) -> MetricSet {
        ms.into_iter().fold(self, MetricSet::with)
    }

    /// The metrics of either set.
    pub fn union(self, other: MetricSet) -> MetricSet {
        MetricSet(self.0 | other.0)
    }

    pub fn contains(self, m: Metric) -> bool {
        self.0 & m.bit() != 0
    }

    /// The metrics in the set, in report order.
    pub fn iter(self) -> impl Iterator<Item = Metric> {
        Metric::ALL.into_iter().filter(move |m| self.contains(*m))
    }
}

impl FromIterator<Metric> for MetricSet {
    fn from_iter<I: IntoIterator<Item = Metric>>(iter: I) -> MetricSet {
        MetricSet(0).with_all(iter)
    }
}

impl Serialize for MetricSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for MetricSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MetricSet, D::Error> {
        Ok(Vec::<Metric>::deserialize(d)?.into_iter().collect())
    }
}

/// A list of metric names.
impl JsonSchema for MetricSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MetricSet".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "items": generator.subschema_for::<Metric>(),
            "uniqueItems": true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sets_keep_their_members() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        let set = MetricSet::TPS.with(Metric::CpuPerTxn(CpuRole::Storage));
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["tps","storage_cpu_us_per_txn"]"#);
        assert_eq!(serde_json::from_str::<MetricSet>(&json).unwrap(), set);
        assert!(!set.contains(Metric::TxnLatencyP99));
        assert!(serde_json::from_str::<MetricSet>(r#"["tpz"]"#).is_err());
    }
}
