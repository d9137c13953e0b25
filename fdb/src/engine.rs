//! FDB storage engines.

use std::fmt;

use serde::{Deserialize, Serialize};

/// FDB storage engine. The `configure new single <type>` names come from
/// `fdbclient/ManagementAPI.actor.cpp` (configuration parsing) in the FDB repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    Redwood,
    Rocksdb,
    ShardedRocksdb,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb];

    /// The storage engine name `fdbcli configure` takes.
    pub fn fdb_name(self) -> &'static str {
        match self {
            Engine::Redwood => "ssd-redwood-1",
            Engine::Rocksdb => "ssd-rocksdb-v1",
            Engine::ShardedRocksdb => "ssd-sharded-rocksdb",
        }
    }

    /// Whether the engine is RocksDB-based (needs the RocksDB direct-I/O knobs on tmpfs).
    pub fn is_rocksdb(self) -> bool {
        matches!(self, Engine::Rocksdb | Engine::ShardedRocksdb)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Redwood => "redwood",
            Engine::Rocksdb => "rocksdb",
            Engine::ShardedRocksdb => "sharded-rocksdb",
        })
    }
}
