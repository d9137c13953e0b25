//! Records the gate's own git commit for `meta.json` (`PERFGATE_GIT_COMMIT`): the commit,
//! with `-dirty` when the checkout had changes when the gate was built, or `unknown` when
//! it was not built from a git checkout (or git is missing).

use std::process::Command;

fn main() {
    // Cargo reruns this when the checked-out commit or the index moves; the gate's own
    // sources changing rebuild the crate anyway, and the dirty mark with it.
    for path in ["../.git/HEAD", "../.git/index", "../.git/refs", "src"] {
        println!("cargo:rerun-if-changed={path}");
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // Only the gate's own checkout: unpacked inside another repository, git would answer
    // with that repository's commit.
    let own = git(&["rev-parse", "--show-toplevel"]).is_some_and(|top| {
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        match (std::fs::canonicalize(top), std::fs::canonicalize(workspace)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    });
    let commit = match git(&["rev-parse", "HEAD"]).filter(|_| own) {
        Some(c) if c.len() == 40 => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}-dirty")
            } else {
                c
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=PERFGATE_GIT_COMMIT={commit}");
}
