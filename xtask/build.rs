//! Keeps the gate's own commit (`src/version.rs`, from the git-version crate) to the gate's
//! own checkout. git-version's macro runs `git describe` while rustc compiles the gate;
//! rustc's environment, and so git's, gets `GIT_CEILING_DIRECTORIES` set to the directory
//! above the workspace, so that git looks for a repository no higher than the workspace:
//! a gate unpacked inside another repository says "commit unknown" instead of naming
//! that repository's commit.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let workspace = std::fs::canonicalize(Path::new(&manifest).join(".."));
    if let Some(above) = workspace.ok().as_deref().and_then(Path::parent) {
        println!(
            "cargo:rustc-env=GIT_CEILING_DIRECTORIES={}",
            above.display()
        );
    }
}
