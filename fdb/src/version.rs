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
    /// knobs) are not an A/B.
    pub source_version: String,
    /// Protocol version, e.g. `fdb00b080000000`.
    pub protocol: String,
}

impl FdbVersion {
    pub fn parse(text: &str) -> Result<FdbVersion> {
        let release = text.lines().next().unwrap_or("").trim().to_string();
        let field = |key: &str| -> Result<String> {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(key))
                .map(|v| v.trim().to_string())
                .with_context(|| format!("no '{key}' line in:\n{text}"))
        };
        if !release.starts_with("FoundationDB") {
            bail!("first line is not 'FoundationDB <version>' in:\n{text}");
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
    fn rejects_other_programs_output() {
        assert!(FdbVersion::parse("mako 1.0\n").is_err());
        assert!(FdbVersion::parse("FoundationDB 8.0\nprotocol x\n").is_err());
    }
}
