//! The gate's own identity, below every stage: its version and the git commit it was built
//! from, as `--version` prints them and `meta.json`, `report.html` and baseline records
//! keep them. The commit comes from `git describe` at compile time (the git-version crate;
//! `build.rs` keeps git to the gate's own checkout); without git or a checkout the build
//! still succeeds, and says so.

use std::sync::LazyLock;

use git_version::git_version;

/// The commit abbreviated as `git rev-parse --short` does, with `-modified` when tracked
/// files differed from it; empty when unknown. `--exclude=*`: the commit even where a tag
/// names it. Recomputed whenever the gate is compiled, and git-version recompiles it when
/// HEAD or the index moves.
const DESCRIBED: &str = git_version!(
    args = ["--always", "--dirty=-modified", "--exclude=*"],
    fallback = ""
);

/// The commit whole (40 hex digits), `-dirty` when tracked files differed from it, or
/// `unknown`: `meta.json`'s `gate_commit` and baseline records' (as they were written
/// before this module).
pub const COMMIT: &str = git_version!(
    args = ["--always", "--abbrev=40", "--dirty=-dirty", "--exclude=*"],
    fallback = "unknown"
);

/// The gate's version and commit, e.g. `0.1.0 (13c4e73, modified)` or
/// `0.1.0 (commit unknown)`: what `--version` and `report.html` show.
pub static LINE: LazyLock<String> = LazyLock::new(|| line(env!("CARGO_PKG_VERSION"), DESCRIBED));

/// `version` and the commit of `described` (`git describe`'s output with
/// `--dirty=-modified`, or empty when unknown).
fn line(version: &str, described: &str) -> String {
    match described.strip_suffix("-modified") {
        _ if described.is_empty() => format!("{version} (commit unknown)"),
        Some(commit) => format!("{version} ({commit}, modified)"),
        None => format!("{version} ({described})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_commit_and_a_modified_tree() {
        assert_eq!(line("0.1.0", "13c4e73"), "0.1.0 (13c4e73)");
        assert_eq!(
            line("0.1.0", "13c4e73-modified"),
            "0.1.0 (13c4e73, modified)"
        );
        assert_eq!(line("0.1.0", ""), "0.1.0 (commit unknown)");
        // What this build knows: a commit, whole and abbreviated alike, or neither.
        let whole = COMMIT.trim_end_matches("-dirty");
        if COMMIT == "unknown" {
            assert_eq!(*LINE, line(env!("CARGO_PKG_VERSION"), ""));
        } else {
            let short = DESCRIBED.trim_end_matches("-modified");
            assert!(
                whole.len() == 40 && whole.starts_with(short),
                "{COMMIT} {DESCRIBED}"
            );
            assert_eq!(COMMIT.ends_with("-dirty"), DESCRIBED.ends_with("-modified"));
        }
    }
}
