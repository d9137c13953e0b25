//! `fdbserver --version`: which FDB release and commit a binary is.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// What `fdbserver --version` prints (`fdbserver/fdbserver.actor.cpp`, `printVersion`):
///
/// ```text
/// FoundationDB 8.0 (v8.0.0)
/// source version c0c44752df676e4a2d532b5cdb4bf96728a30b78
/// protocol fdb00b080000000
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FdbVersion {
    /// First line, e.g. `FoundationDB 8.0 (v8.0.0)`.
    pub release: String,
    /// Git commit the binary was built from: two arms with the same one (and the same
    /// knobs) are not an A/B. Empty for a binary built from a source tree without git
    /// (FDB then prints an empty `source version ` line).
    pub source_version: String,
    /// Protocol version, e.g. `fdb00b080000000`.
    pub protocol: String,
}

impl FdbVersion {
    /// Parses `fdbserver --version`'s output.
    ///
    /// Errors: the first line is not `FoundationDB ...`, a `source version` or `protocol`
    /// line is missing, or a field holds a control character (which would reach the
    /// terminal and every report); the output is quoted escaped, its first 300 characters.
    pub fn parse(text: &str) -> Result<FdbVersion> {
        let quoted = || format!("{:?}", text.chars().take(300).collect::<String>());
        let checked = |what: &str, value: &str| -> Result<String> {
            if value.chars().any(crate::unsafe_in_text) {
                bail!(
                    "the {what} holds control characters, which no fdbserver prints: {}",
                    quoted()
                );
            }
            Ok(value.to_string())
        };
        let release = checked("first line", text.lines().next().unwrap_or("").trim())?;
        // The key is matched before the line is trimmed: FDB built from a source tree
        // without git prints `source version ` with nothing after it, which trimmed first
        // would be no such line.
        let field = |key: &str| -> Result<String> {
            let value = text
                .lines()
                .find_map(|l| {
                    let rest = l.trim_start().strip_prefix(key.trim_end())?;
                    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
                })
                .map(str::trim)
                .with_context(|| format!("no '{key}' line in {}", quoted()))?;
            checked(&format!("'{key}' line"), value)
        };
        if !release.starts_with("FoundationDB") {
            bail!("first line is not 'FoundationDB <version>' in {}", quoted());
        }
        Ok(FdbVersion {
            release,
            source_version: field("source version ")?,
            protocol: field("protocol ")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../testdata/fdbserver-version.txt");

    #[test]
    fn parses_real_fdbserver_version() {
        let v = FdbVersion::parse(FIXTURE).unwrap();
        assert_eq!(v.release, "FoundationDB 8.0 (v8.0.0)");
        assert_eq!(v.source_version, "c0c44752df676e4a2d532b5cdb4bf96728a30b78");
        assert_eq!(v.protocol, "fdb00b080000000");
    }

    #[test]
    fn an_empty_source_version_is_read_as_empty_not_as_a_missing_line() {
        // What FDB built from a source tree without git prints: the key, a space, nothing.
        let text = FIXTURE.replace("c0c44752df676e4a2d532b5cdb4bf96728a30b78", "");
        assert!(text.contains("\nsource version \n"), "{text}");
        let v = FdbVersion::parse(&text).unwrap();
        assert_eq!(v.source_version, "");
        assert_eq!(v.protocol, "fdb00b080000000");
        // A line that merely starts like the key is not it.
        let text = FIXTURE.replace("source version ", "source versions ");
        let e = FdbVersion::parse(&text).unwrap_err().to_string();
        assert!(e.contains("no 'source version ' line"), "{e}");
    }

    #[test]
    fn rejects_other_programs_output() {
        let bidi = FIXTURE.replacen("FoundationDB 8.0", "FoundationDB 8.0\u{202e}", 1);
        assert!(FdbVersion::parse(&bidi).is_err());
        assert!(FdbVersion::parse("mako 1.0\n").is_err());
        assert!(FdbVersion::parse("FoundationDB 8.0\nprotocol x\n").is_err());
    }

    #[test]
    fn control_characters_are_refused_and_quoted_escaped() {
        // An escape sequence in a fake fdbserver's version would reach the terminal and
        // report.html as it is.
        let text = FIXTURE.replace("FoundationDB 8.0", "FoundationDB 8.0\x1b[2J\x07");
        let e = FdbVersion::parse(&text).unwrap_err().to_string();
        assert!(e.contains("the first line holds control characters"), "{e}");
        assert!(e.contains("\\u{1b}[2J\\u{7}") && !e.contains('\x1b'), "{e}");
        let text = FIXTURE.replace("source version c0c4", "source version \x1bc0c4");
        let e = FdbVersion::parse(&text).unwrap_err().to_string();
        assert!(e.contains("'source version ' line holds control"), "{e}");
    }
}
