//! FoundationDB's own formats, as perfgate reads and writes them: what FDB and mako print,
//! take and name. Pure (no processes, no clock; callers read files and pass their text)
//! and independent of the gate, so that the parsers are tested on real FDB outputs
//! (`testdata/`, from `shared/fixtures/`) and fuzzed (`fuzz/`) on their own.
//!
//! Each module names the FDB source file its format comes from.

pub mod cmake;
pub mod engine;
pub mod knob;
pub mod mako;
pub mod release;
pub mod status;
pub mod trace;
pub mod version;

pub use engine::Engine;
pub use knob::{Knob, KnobSource};
pub use release::{MakoCaps, Release};
pub use version::FdbVersion;
