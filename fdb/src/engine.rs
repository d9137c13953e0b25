//! FDB storage engines.

use std::fmt;

use serde::{Deserialize, Serialize};

/// FDB storage engine; `Release::engine_name` gives the name `fdbcli configure` takes in
/// each release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    Redwood,
    Rocksdb,
    ShardedRocksdb,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Redwood, Engine::Rocksdb, Engine::ShardedRocksdb];

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
