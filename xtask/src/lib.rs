//! perfgate: a throughput regression gate for FoundationDB, run as `cargo xtask`.
//!
//! Pipeline (one module per stage): flags -> config -> plan (workdir, fdbtree) -> execute
//! (cluster, supervise) -> analyze -> judge -> report; `bench` wires them together.
//! A library so that the binary (`main.rs`) and the parser fuzz targets (`fuzz/`) share it.

pub mod analyze;
pub mod baseline;
pub mod bench;
pub mod build;
pub mod calibrate;
pub mod cluster;
pub mod compare;
pub mod config;
pub mod doctor;
pub mod execute;
pub mod fdbtree;
pub mod flags;
pub mod host;
pub mod html;
pub mod judge;
pub mod monitor;
pub mod plan;
pub mod preflight;
pub mod report;
pub mod saved;
pub mod sequential;
pub mod slo;
pub mod stats;
pub mod supervise;
pub mod workdir;
