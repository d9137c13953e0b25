//! FoundationDB's own formats, as perfgate reads and writes them: what FDB and mako print,
//! take and name. Pure (no processes, no clock; callers read files and pass their text)
//! and independent of the gate, so that the parsers are tested on real FDB outputs
//! (`testdata/`, from `shared/fixtures/`) and fuzzed (`fuzz/`) on their own.
//!
//! Each module names the FDB source file its format comes from.

pub mod cluster_file;
pub mod cmake;
pub mod engine;
pub mod knob;
pub mod mako;
pub mod multitest;
pub mod release;
pub mod status;
pub mod trace;
pub mod version;

pub use engine::Engine;
pub use knob::{Knob, KnobSource};
pub use release::{MakoCaps, Release};
pub use version::FdbVersion;

/// Whether a character would make text copied from FDB's tools say something else where
/// it lands: C0 and C1 controls (tab and newline included; callers keep those they allow),
/// U+FFFE and U+FFFF (not XML 1.0), and the bidirectional overrides and isolates
/// (U+202A-U+202E, U+2066-U+2069), which make a terminal or browser show text reordered.
pub fn unsafe_in_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{fffe}' | '\u{ffff}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}
