//! FDB storage engines.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// FDB storage engine of the storage servers. The gate configures the first three
/// (`Release::engine_name` gives the name `fdbcli configure` takes in each release); the
/// others are read from a cluster the gate did not start ([`Engine::from_status`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    Redwood,
    Rocksdb,
    ShardedRocksdb,
    /// The SQLite B-tree, `ssd-2` (`ssd` in `fdbcli configure`).
    #[serde(rename = "ssd-2")]
    Ssd2,
    /// The SQLite B-tree of before FDB 6, `ssd-1`.
    #[serde(rename = "ssd-1")]
    Ssd1,
    /// The in-memory engine, `memory` (`memory-1`/`memory-2` name its tlog engine too).
    Memory,
    /// The in-memory radix tree, `memory-radixtree` (`memory-radixtree-beta` before 8.0).
    MemoryRadixtree,
}

impl Engine {
    /// The engines the gate configures (`--engine all`).
    pub const ALL: [Engine; 3] = [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb];

    /// Every engine, those only read from a cluster's `status json` too.
    pub const KNOWN: [Engine; 7] = [
        Engine::Redwood,
        Engine::Rocksdb,
        Engine::ShardedRocksdb,
        Engine::Ssd2,
        Engine::Ssd1,
        Engine::Memory,
        Engine::MemoryRadixtree,
    ];

    /// Whether the engine is RocksDB-based (needs the RocksDB direct-I/O knobs on tmpfs).
    pub fn is_rocksdb(self) -> bool {
        matches!(self, Engine::Rocksdb | Engine::ShardedRocksdb)
    }

    /// The engine `status json` names in `cluster.configuration.storage_engine`, or `None`
    /// for a name of no storage engine (`none`, `unknown`, `custom`). FDB 7.3 and 8.0
    /// write the storage servers' store type (`KeyValueStoreType::getStoreTypeStr`,
    /// `fdbclient/FDBTypes.cpp`: `ssd-1`, `ssd-2`, `ssd-redwood-1`, `ssd-rocksdb-v1`,
    /// `ssd-sharded-rocksdb`, `memory`, `memory-radixtree`, 7.3's
    /// `memory-radixtree-beta`); older releases named the storage and tlog engines
    /// together (`memory-1`, `memory-2`, `ssd-redwood-1-experimental`), taken too.
    pub fn from_status(name: &str) -> Option<Engine> {
        Some(match name {
            "ssd-redwood-1" | "ssd-redwood-1-experimental" | "redwood" => Engine::Redwood,
            "ssd-rocksdb-v1" => Engine::Rocksdb,
            "ssd-sharded-rocksdb" => Engine::ShardedRocksdb,
            "ssd-2" | "ssd" => Engine::Ssd2,
            "ssd-1" => Engine::Ssd1,
            "memory" | "memory-1" | "memory-2" => Engine::Memory,
            "memory-radixtree" | "memory-radixtree-beta" => Engine::MemoryRadixtree,
            _ => return None,
        })
    }

    /// Whether the gate can configure it on a cluster it starts (`--engine`).
    pub fn configurable(self) -> bool {
        Engine::ALL.contains(&self)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Redwood => "redwood",
            Engine::Rocksdb => "rocksdb",
            Engine::ShardedRocksdb => "sharded-rocksdb",
            Engine::Ssd2 => "ssd-2",
            Engine::Ssd1 => "ssd-1",
            Engine::Memory => "memory",
            Engine::MemoryRadixtree => "memory-radixtree",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_map_to_engines_and_display_round_trips_through_serde() {
        // Every name getStoreTypeStr writes in 7.3 and 8.0 (fdbclient/FDBTypes.cpp).
        for (name, engine) in [
            ("ssd-1", Engine::Ssd1),
            ("ssd-2", Engine::Ssd2),
            ("ssd-redwood-1", Engine::Redwood),
            ("ssd-rocksdb-v1", Engine::Rocksdb),
            ("ssd-sharded-rocksdb", Engine::ShardedRocksdb),
            ("memory", Engine::Memory),
            ("memory-radixtree", Engine::MemoryRadixtree),
            ("memory-radixtree-beta", Engine::MemoryRadixtree),
        ] {
            assert_eq!(Engine::from_status(name), Some(engine), "{name}");
        }
        for name in ["none", "unknown", "custom", ""] {
            assert_eq!(Engine::from_status(name), None, "{name}");
        }
        for e in Engine::KNOWN {
            let json = serde_json::to_string(&e).unwrap();
            assert_eq!(json, format!("\"{e}\""));
            assert_eq!(serde_json::from_str::<Engine>(&json).unwrap(), e);
        }
        assert!(Engine::ALL.iter().all(|e| e.configurable()));
        assert!(!Engine::Memory.configurable());
    }
}
