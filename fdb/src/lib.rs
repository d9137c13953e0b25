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
pub mod simulation;
pub mod status;
pub mod trace;
pub mod version;

pub use engine::Engine;
pub use knob::{Knob, KnobSource};
pub use release::{MakoCaps, Release};
pub use version::FdbVersion;

/// A number read from a file, for a message: in exponent form when its plain form would be
/// long (a TPS of 5e-324 printed 324 digits, 1e308 309), else as Rust prints it.
pub fn compact(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-6..1e12).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_from_files_print_short_whatever_their_size() {
        // A TPS of 5e-324 printed in plain notation has 324 digits.
        assert_eq!(compact(5e-324), "5e-324");
        assert_eq!(compact(1e308), "1e308");
        assert_eq!(compact(-2.5e13), "-2.5e13");
        for (v, plain) in [
            (0.0, "0"),
            (1234.5, "1234.5"),
            (0.25, "0.25"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(compact(v), plain);
        }
    }
}
