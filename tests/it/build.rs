//! Building arms from an FDB-shaped checkout: a tiny CMake project in a temp git repo whose
//! targets (fdbserver, fdbcli, mako with BUILD_MAKO, fdb_c) put the test double's binaries
//! under bin/ and lib/, built with the real cmake and ninja.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};

use crate::support::{code, text, Sandbox};

const CMAKE: &str = r#"cmake_minimum_required(VERSION 3.13)
project(fakefdb CXX)
option(BUILD_MAKO "Build mako" OFF)
set(DOUBLE_BIN "" CACHE PATH "the FDB test double's binaries")
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/bin ${CMAKE_BINARY_DIR}/lib)
# The source version is the checked-out commit, as FDB's configure finds it.
execute_process(COMMAND git rev-parse HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  OUTPUT_VARIABLE SOURCE_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
# The fake libfdb_c.so carries the double's behaviour (the gate copies only FDB's files).
configure_file(double.json ${CMAKE_BINARY_DIR}/lib/libfdb_c.so @ONLY)
foreach(p fdbserver fdbcli)
  add_custom_target(${p} COMMAND ${CMAKE_COMMAND} -E create_symlink ${DOUBLE_BIN}/${p} ${CMAKE_BINARY_DIR}/bin/${p})
endforeach()
if(BUILD_MAKO)
  add_custom_target(mako COMMAND ${CMAKE_COMMAND} -E create_symlink ${DOUBLE_BIN}/mako ${CMAKE_BINARY_DIR}/bin/mako)
endif()
add_custom_target(fdb_c COMMAND ${CMAKE_COMMAND} -E true)
# A source file both commits share: an incremental build does not compile it again. Its
# object sits where cmake puts a top-directory target's objects (CMakeFiles/<target>.dir).
set(SHARED_O ${CMAKE_BINARY_DIR}/CMakeFiles/shared.dir/shared.o)
add_custom_command(OUTPUT ${SHARED_O}
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/shared.cpp ${SHARED_O}
  DEPENDS ${CMAKE_SOURCE_DIR}/shared.cpp COMMENT "Compiling shared.cpp")
add_custom_target(shared DEPENDS ${SHARED_O})
add_dependencies(fdbserver shared)
"#;

/// `git -C repo args`, asserted to succeed; its stdout, trimmed.
pub(crate) fn git(repo: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A repo with two commits: HEAD~1 and HEAD differ in `version.txt` only, and their
/// binaries in the source version they report (their commit).
/// Fails the test when cmake or ninja is missing (CI installs them: `ci/setup.sh`).
pub(crate) fn checkout(s: &Sandbox) -> PathBuf {
    assert!(
        tools_present(),
        "cmake and ninja are needed: run ci/setup.sh"
    );
    let repo = s.dir.path().join("foundationdb");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.email", "t@example.invalid"]);
    git(&repo, &["config", "user.name", "t"]);
    std::fs::write(repo.join("CMakeLists.txt"), CMAKE).unwrap();
    std::fs::write(repo.join("shared.cpp"), "int shared() { return 1; }\n").unwrap();
    // Commits of identical content and time have identical hashes, and the build cache is
    // keyed by commit: a per-test file keeps each test's commits (and cache entries) apart.
    std::fs::write(repo.join("nonce"), s.dir.path().display().to_string()).unwrap();
    std::fs::write(repo.join("double.json"), behaviour(1000.0)).unwrap();
    for version in ["1", "2"] {
        std::fs::write(repo.join("version.txt"), version).unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", version]);
    }
    repo
}

/// The fixture's `double.json`: `tps`, and the commit as source version (at configure).
pub(crate) fn behaviour(tps: f64) -> String {
    json!({"tps": tps, "source_version": "@SOURCE_VERSION@"}).to_string()
}

fn rev(repo: &Path, spec: &str) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", spec])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

pub(crate) fn double_bin() -> String {
    format!(
        "--cmake-arg=-DDOUBLE_BIN={}",
        Path::new(env!("CARGO_BIN_EXE_fdbserver"))
            .parent()
            .unwrap()
            .display()
    )
}

/// The gate, with its build cache in the sandbox (`<CARGO_TARGET_DIR>/perfgate/fdb`), not
/// in the workspace's target dir.
fn gate(s: &Sandbox) -> Command {
    let mut cmd = crate::support::gate_cmd();
    cmd.env("CARGO_TARGET_DIR", s.dir.path().join("target"));
    cmd
}

fn bench(s: &Sandbox, repo: &Path, out: &str, extra: &[&str]) -> Output {
    gate(s)
        .args(["bench", "--fdb-src"])
        .arg(repo)
        .arg("--out")
        .arg(s.dir.path().join(out))
        .arg(double_bin())
        .args(crate::support::TINY)
        .args(["--trials", "2", "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .args(extra)
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap()
}

/// `cargo xtask build --fdb-src <repo> <revs> <double>`, as a command to run or spawn.
fn build_command(s: &Sandbox, repo: &Path, revs: &[&str]) -> Command {
    let mut cmd = gate(s);
    cmd.args(["build", "--fdb-src"])
        .arg(repo)
        .args(revs)
        .arg(double_bin());
    cmd
}

/// The trees `cargo xtask build` printed (`<arm>: <tree>` lines), baseline first.
fn trees(o: &Output) -> Vec<PathBuf> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| PathBuf::from(l.split_once(": ").unwrap().1))
        .collect()
}

/// [`build_command`], run to completion.
fn build(s: &Sandbox, repo: &Path, revs: &[&str]) -> Output {
    build_command(s, repo, revs).output().unwrap()
}

/// Writes the fixture's CMakeLists.txt with `from` replaced by `to`.
fn write_cmake(repo: &Path, from: &str, to: &str) {
    std::fs::write(repo.join("CMakeLists.txt"), CMAKE.replace(from, to)).unwrap();
}

fn meta(s: &Sandbox, out: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join(out).join("meta.json")).unwrap(),
    )
    .unwrap()
}

/// The provenance of the arms built from source, in arm order.
fn provenance(s: &Sandbox, out: &str) -> Value {
    let plan = &meta(s, out)["plan"];
    let arms = [&plan["baseline"], &plan["experiment"]];
    Value::Array(
        arms.iter()
            .map(|a| a["provenance"].clone())
            .filter(|p| !p.is_null())
            .collect(),
    )
}

fn tools_present() -> bool {
    ["cmake", "ninja"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn two_revisions_build_then_hit_the_cache_and_a_new_flag_rebuilds() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    let o = bench(
        &s,
        &repo,
        "first",
        &["--baseline", "HEAD~1", "--experiment", "HEAD"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let p = provenance(&s, "first");
    let log = |out: &str, arm: &str| {
        std::fs::read_to_string(s.dir.path().join(format!("{out}/build-{arm}.log"))).unwrap()
    };
    for arm in ["baseline", "experiment"] {
        assert!(
            log("first", arm).contains("Build files have been written"),
            "{}",
            log("first", arm)
        );
    }
    // The experiment is built where the baseline was: only what the commit changed is
    // built again, a file both share is not.
    assert!(
        log("first", "baseline").contains("Compiling shared.cpp"),
        "{}",
        log("first", "baseline")
    );
    assert!(
        !log("first", "experiment").contains("Compiling shared.cpp"),
        "{}",
        log("first", "experiment")
    );
    assert_eq!(
        (&p[0]["asked"], &p[1]["asked"]),
        (&json!("HEAD~1"), &json!("HEAD")),
        "{p}"
    );
    assert_eq!(p[0]["cache_hit"], false);
    let cache = s.dir.path().join("target/perfgate/fdb");
    assert!(
        Path::new(p[0]["build_dir"].as_str().unwrap()).starts_with(&cache),
        "the build cache is the test's own: {p}"
    );
    assert!(p[0]["cmake_args"]
        .as_array()
        .unwrap()
        .contains(&json!("-DBUILD_MAKO=ON")));
    let versions = |out: &str| {
        ["baseline", "experiment"]
            .map(|arm| meta(&s, out)["plan"][arm]["version"]["source_version"].clone())
    };
    // cmake's record of the compiler is copied into the revision's tree with its files.
    let compiler = &meta(&s, "first")["plan"]["baseline"]["build_config"]["cxx_compiler_version"];
    assert!(
        compiler.as_str().is_some_and(|c| c.contains('.')),
        "{compiler}"
    );
    assert_eq!(
        versions("first"),
        [json!(rev(&repo, "HEAD~1")), json!(rev(&repo, "HEAD"))]
    );

    let o = bench(
        &s,
        &repo,
        "second",
        &["--baseline", "HEAD~1", "--experiment", "HEAD"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let p = provenance(&s, "second");
    assert_eq!(
        (&p[0]["cache_hit"], &p[1]["cache_hit"]),
        (&json!(true), &json!(true)),
        "{p}"
    );
    // The baseline's tree was kept as built, not replaced by the experiment's build.
    assert_eq!(versions("second"), versions("first"));
    // A cache hit reports the time of the build that made the tree.
    let first = provenance(&s, "first");
    assert!(first[0]["build_s"].as_f64().unwrap() > 0.0, "{first}");
    // The same seconds, read back from the cache's record: equal to the last bit or two
    // of a float's text (1.662839936 came back as 1.6628399360000001).
    let (hit, built) = (
        p[0]["build_s"].as_f64().unwrap(),
        first[0]["build_s"].as_f64().unwrap(),
    );
    assert!((hit - built).abs() <= 1e-9 * built, "{p}");

    let o = bench(
        &s,
        &repo,
        "third",
        &[
            "--baseline",
            "HEAD~1",
            "--experiment",
            "HEAD",
            "--cmake-arg=-DSOMETHING=1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(provenance(&s, "third")[0]["cache_hit"], false);

    // cmake reads CXXFLAGS into a new cache, which the gate makes on every build: flags
    // in the environment make another build, not a hit on the one without them.
    let o = build_command(&s, &repo, &["--baseline", "HEAD~1", "--experiment", "HEAD"])
        .env("CXXFLAGS", "-DPERFGATE_FLAGS_TEST")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let tree = trees(&o).remove(0);
    assert_ne!(tree.to_str(), p[0]["build_dir"].as_str(), "{}", text(&o));
    let cmake_cache = std::fs::read_to_string(tree.join("CMakeCache.txt")).unwrap();
    assert!(
        cmake_cache.contains("CMAKE_CXX_FLAGS:STRING=-DPERFGATE_FLAGS_TEST"),
        "{cmake_cache}"
    );
    let stamp: Value =
        serde_json::from_str(&std::fs::read_to_string(tree.join("stamp.json")).unwrap()).unwrap();
    assert_eq!(
        stamp[0]["configure_env"]["CXXFLAGS"],
        json!("-DPERFGATE_FLAGS_TEST"),
        "{stamp}"
    );
}

#[test]
fn another_compiler_found_on_path_is_another_build() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    let run = |path: Option<&str>| {
        let mut cmd = build_command(&s, &repo, &["--baseline", "HEAD", "--experiment", "HEAD"]);
        cmd.env_remove("CXX").env_remove("CC");
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        let o = cmd.output().unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        o
    };
    let first = trees(&run(None));
    // A `c++` earlier on PATH, as a newly installed compiler or a switched alternative is:
    // cmake finds it when CXX is unset, so the cached build is not this one's.
    let real = which::which("c++").expect("a C++ compiler (ci/setup.sh)");
    let dir = s.dir.path().join("newer-compiler");
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("c++");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec {} \"$@\"\n", real.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    let second = trees(&run(Some(&path)));
    assert_ne!(first[0], second[0]);
    let stamp: Value =
        serde_json::from_str(&std::fs::read_to_string(second[0].join("stamp.json")).unwrap())
            .unwrap();
    let cxx = stamp[0]["compilers"]["CXX"].as_str().unwrap();
    let real_wrapper = std::fs::canonicalize(&wrapper).unwrap();
    assert!(
        cxx.starts_with(&format!("{}: ", real_wrapper.display())),
        "{stamp}"
    );
    let cmake_cache = std::fs::read_to_string(second[0].join("CMakeCache.txt")).unwrap();
    assert!(
        cmake_cache.contains(&format!(
            "CMAKE_CXX_COMPILER:FILEPATH={}",
            wrapper.display()
        )),
        "{cmake_cache}"
    );
    // The first compiler again: its cached build.
    let o = run(None);
    assert_eq!(trees(&o), first);
    assert!(text(&o).contains("cached"), "{}", text(&o));
}

#[test]
fn the_working_tree_is_the_default_experiment_and_a_debug_build_is_refused() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // An uncommitted change that makes the experiment 10% slower.
    std::fs::write(repo.join("double.json"), behaviour(900.0)).unwrap();
    let o = bench(&s, &repo, "dirty", &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let p = provenance(&s, "dirty");
    assert_eq!(
        (&p[1]["asked"], &p[1]["dirty"]),
        (&json!("working tree"), &json!(true)),
        "{p}"
    );
    assert!(p[1]["diff_hash"].is_string());
    // Built as a snapshot in the revisions' slot: only the changed file is built again.
    let log = std::fs::read_to_string(s.dir.path().join("dirty/build-experiment.log")).unwrap();
    assert!(!log.contains("Compiling shared.cpp"), "{log}");
    // The same uncommitted change again: nothing to build, and the checkout untouched
    // (its index too: the snapshot used a copy).
    let status = || {
        let o = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["--no-optional-locks", "status", "--porcelain"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let index = || std::fs::read(repo.join(".git/index")).unwrap();
    let (status_before, index_before) = (status(), index());
    std::fs::write(repo.join("untracked.txt"), "new file").unwrap();
    let o = bench(&s, &repo, "dirty-again", &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let again = provenance(&s, "dirty-again");
    assert_eq!(
        again[1]["cache_hit"], false,
        "an untracked file is a change"
    );
    std::fs::remove_file(repo.join("untracked.txt")).unwrap();
    let o = bench(&s, &repo, "dirty-third", &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let third = provenance(&s, "dirty-third");
    assert_eq!(
        (&third[1]["cache_hit"], &third[1]["diff_hash"]),
        (&json!(true), &p[1]["diff_hash"]),
        "{third}"
    );
    assert_eq!((status(), index()), (status_before, index_before));

    let o = bench(
        &s,
        &repo,
        "debug",
        &[
            "--baseline",
            "HEAD~1",
            "--cmake-arg=-DCMAKE_BUILD_TYPE=Debug",
        ],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    // Refused from the flag, before the hours of building both arms.
    assert!(
        text(&o).contains("-DCMAKE_BUILD_TYPE=Debug is not Release"),
        "{}",
        text(&o)
    );
    assert!(
        !s.dir.path().join("debug/build-baseline.log").exists(),
        "nothing was built"
    );
    // With --allow-non-release it builds, runs, and the tree's own cache is warned about.
    let o = bench(
        &s,
        &repo,
        "debug-allowed",
        &[
            "--baseline",
            "HEAD~1",
            "--cmake-arg=-DCMAKE_BUILD_TYPE=Debug",
            "--allow-non-release",
        ],
    );
    assert_ne!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("CMAKE_BUILD_TYPE is 'Debug'"),
        "{}",
        text(&o)
    );
}

#[test]
fn arms_of_the_same_commit_are_refused_before_anything_is_built() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // A clean working tree at the baseline's commit (a fresh clone on main, say).
    let o = bench(&s, &repo, "same", &["--baseline", "HEAD"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let head = rev(&repo, "HEAD");
    assert!(
        text(&o).contains(&format!("the same commit {}", &head[..12])),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("--allow-same"), "{}", text(&o));
    let cache = s.dir.path().join("target/perfgate/fdb");
    let slots: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        slots
            .iter()
            .all(|n| !n.to_string_lossy().starts_with("slot-")),
        "nothing is built: {slots:?}"
    );
}

#[test]
fn a_cluster_file_whose_coordinators_do_not_answer_is_refused_before_building() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // Nothing listens on the coordinator's port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = s.dir.path().join("down.cluster");
    std::fs::write(&file, format!("down:abc@127.0.0.1:{port}\n")).unwrap();
    let bench_against = |file: &Path| {
        gate(&s)
            .args(["bench", "--fdb-src"])
            .arg(&repo)
            .arg(double_bin())
            .args([
                "--experiment",
                "HEAD",
                "--profile",
                "point-read",
                "--cluster-file",
            ])
            .arg(file)
            .arg("--out")
            .arg(s.dir.path().join("down"))
            .env("WORKDIR", s.workdir.path())
            .output()
            .unwrap()
    };
    let o = bench_against(&file);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "none of the coordinators of --cluster-file {} (127.0.0.1:{port}) accepts a TCP \
             connection from this host (each tried within 1 s), so nothing was built",
            file.display()
        )),
        "{}",
        text(&o)
    );
    // A name that resolves nowhere (`.invalid` never does, RFC 2606).
    let nowhere = s.dir.path().join("nowhere.cluster");
    std::fs::write(&nowhere, "down:abc@fdb1.invalid:4500\n").unwrap();
    let o = bench_against(&nowhere);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("(fdb1.invalid:4500) resolves to an address from this host"),
        "{}",
        text(&o)
    );
    let slots: Vec<_> = std::fs::read_dir(s.dir.path().join("target/perfgate/fdb"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(slots.is_empty(), "nothing is built: {slots:?}");
}

#[test]
fn each_revision_is_configured_with_its_own_cache_defaults() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // HEAD adds an option whose default is ON and doubles the TPS; HEAD~1 had it OFF. The
    // slot configured for HEAD~1 must not hand HEAD its cached OFF.
    for default in ["OFF", "ON"] {
        let cmake = CMAKE.replace(
            "configure_file(double.json ${CMAKE_BINARY_DIR}/lib/libfdb_c.so @ONLY)",
            &format!(
                "option(FAST_PATH \"a faster path\" {default})\n\
                 if(FAST_PATH)\n\
                 file(WRITE ${{CMAKE_BINARY_DIR}}/lib/libfdb_c.so \"{{\\\"tps\\\": 2000, \\\"source_version\\\": \\\"${{SOURCE_VERSION}}\\\"}}\")\n\
                 else()\n\
                 file(WRITE ${{CMAKE_BINARY_DIR}}/lib/libfdb_c.so \"{{\\\"tps\\\": 1000, \\\"source_version\\\": \\\"${{SOURCE_VERSION}}\\\"}}\")\n\
                 endif()"
            ),
        );
        std::fs::write(repo.join("CMakeLists.txt"), cmake).unwrap();
        git(&repo, &["commit", "-q", "-am", default]);
    }
    let o = build(&s, &repo, &["--baseline", "HEAD~1", "--experiment", "HEAD"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trees: Vec<String> = trees(&o)
        .iter()
        .map(|tree| std::fs::read_to_string(tree.join("lib/libfdb_c.so")).unwrap())
        .collect();
    let tps: Vec<f64> = trees
        .iter()
        .map(|t| {
            serde_json::from_str::<Value>(t).unwrap()["tps"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(tps, [1000.0, 2000.0], "{trees:?}");
}

#[test]
fn a_shallow_checkout_builds_revisions_and_its_working_tree_incrementally() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // What CI checkouts are: git copies a shallow source instead of sharing its objects.
    let shallow = s.dir.path().join("shallow");
    let o = Command::new("git")
        .args(["clone", "-q", "--depth", "1"])
        .arg(format!("file://{}", repo.display()))
        .arg(&shallow)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(shallow.join("double.json"), behaviour(900.0)).unwrap();
    let o = build(&s, &shallow, &["--baseline", "HEAD"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trees = trees(&o);
    let tps = |tree: &Path| -> f64 {
        let text = std::fs::read_to_string(tree.join("lib/libfdb_c.so")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["tps"]
            .as_f64()
            .unwrap()
    };
    assert_eq!([tps(&trees[0]), tps(&trees[1])], [1000.0, 900.0]);
    let log = std::fs::read_to_string(trees[1].join("build.log")).unwrap();
    assert!(!log.contains("Compiling shared.cpp"), "{log}");
    // A commit older than its history: a usage error that says why.
    let o = build(&s, &shallow, &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("the checkout is shallow"), "{}", text(&o));
}

#[test]
fn a_file_the_build_did_not_replace_is_caught_not_cached() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // HEAD writes its libfdb_c.so elsewhere: the slot still holds HEAD~1's.
    write_cmake(&repo, "lib/libfdb_c.so @ONLY", "lib/moved.so @ONLY");
    git(&repo, &["commit", "-q", "-am", "moved"]);
    let o = build(&s, &repo, &["--baseline", "HEAD~1", "--experiment", "HEAD"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let head = rev(&repo, "HEAD");
    assert!(
        text(&o).contains(&format!("but commit {head} was built")),
        "{}",
        text(&o)
    );
    // Not recorded as built: the next run tries again instead of using it.
    let o = build(&s, &repo, &["--baseline", "HEAD", "--experiment", "HEAD"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("reports source version"), "{}", text(&o));
}

#[test]
fn compile_jobs_a_killed_gate_left_in_the_slot_are_killed_before_the_next_build() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    // A "compile job" that runs for 5 minutes and names the build dir, as compilers do.
    std::fs::write(repo.join("hang.py"), "import time\ntime.sleep(300)\n").unwrap();
    let hang = "python3 ${CMAKE_SOURCE_DIR}/hang.py ${CMAKE_BINARY_DIR}/job";
    write_cmake(&repo, "${CMAKE_COMMAND} -E true", hang);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "hangs"]);
    let jobs = || -> Vec<String> {
        let root = s.dir.path().display().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let raw = std::fs::read(e.path().join("cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
                (cmd.contains("hang.py") && cmd.contains(&root)).then_some(cmd)
            })
            .collect()
    };
    let mut gate_run = build_command(&s, &repo, &["--baseline", "HEAD", "--experiment", "HEAD"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while jobs().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    gate_run.kill().unwrap(); // SIGKILL: no teardown
    gate_run.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!jobs().is_empty(), "ninja's job outlives a killed gate");
    std::fs::write(repo.join("CMakeLists.txt"), CMAKE).unwrap();
    git(&repo, &["commit", "-q", "-am", "fixed"]);
    let o = build(&s, &repo, &["--baseline", "HEAD", "--experiment", "HEAD"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("left from an earlier build in the slot"),
        "{}",
        text(&o)
    );
    assert_eq!(jobs(), Vec::<String>::new());
}

/// A given tree that is no build tree is said first, before the missing checkout of the
/// arm to build (and so before any build of it): fixing the checkout alone would only lead
/// to the next error, hours later.
#[test]
fn a_given_tree_that_is_no_tree_is_said_before_the_other_arms_checkout() {
    let s = Sandbox::new();
    let nowhere = s.dir.path().join("nowhere");
    let empty = s.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for (tree, said) in [
        (s.dir.path().join("no-tree"), "does not exist"),
        (
            empty.clone(),
            "is no FDB build tree (neither bin/fdbserver nor build.ninja)",
        ),
    ] {
        let o = bench(
            &s,
            &nowhere,
            "no-tree",
            &["--baseline-build", tree.to_str().unwrap()],
        );
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains(&tree.display().to_string())
                && text(&o).contains(said)
                && !text(&o).contains("no FDB checkout"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn a_failing_build_shows_its_log_and_a_missing_checkout_or_cmake_is_named() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    write_cmake(&repo, "-E true", "-E false_no_such_command");
    let o = bench(&s, &repo, "broken", &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot build the experiment arm") && err.contains("ninja failed"),
        "{err}"
    );
    assert!(err.contains("build.log"), "{err}");

    // A build that hangs is cut at --timeout-build and reported as a TIMEOUT.
    write_cmake(&repo, "-E true", "-E sleep 300");
    let junit = s.dir.path().join("hang-junit.xml");
    let o = bench(
        &s,
        &repo,
        "hang",
        &[
            "--baseline",
            "HEAD~1",
            "--timeout-build",
            // Room for cmake's configure (compiler detection) on a loaded host.
            "30",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("TIMEOUT: ninja did not finish within 30 s"),
        "{}",
        text(&o)
    );
    let case = &crate::support::read_junit(&junit)[0]["cases"][0];
    assert_eq!(case["results"][0]["verdict"], "TIMEOUT", "{case}");

    let o = bench(&s, &s.dir.path().join("nowhere"), "nowhere", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("no FDB checkout: ")
            && text(&o).contains("--fdb-src")
            && text(&o).contains("give it with --fdb-src PATH")
            && text(&o).contains("--baseline-build and --experiment-build"),
        "{}",
        text(&o)
    );
    // The clone command names where to clone: the missing path itself, but never a file
    // (`git clone` onto a file fails).
    assert!(
        text(&o).contains(&format!(
            "git clone https://github.com/apple/foundationdb {}",
            s.dir.path().join("nowhere").display()
        )),
        "{}",
        text(&o)
    );
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = bench(&s, &file, "file", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("is a file, not a directory")
            && text(&o).contains(
                "clone one elsewhere (git clone https://github.com/apple/foundationdb DIR)"
            ),
        "{}",
        text(&o)
    );
    // `build` takes no prebuilt trees, so it does not suggest them.
    let o = gate(&s)
        .args(["build", "--fdb-src"])
        .arg(s.dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("no FDB checkout: ") && !text(&o).contains("--baseline-build"),
        "{}",
        text(&o)
    );

    // A PATH with git but no cmake.
    let bin = s.dir.path().join("pathbin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["git", "ninja", "cc", "c++", "tar"] {
        if let Ok(o) = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
        {
            let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !p.is_empty() {
                let _ = std::os::unix::fs::symlink(p, bin.join(tool));
            }
        }
    }
    let mut cmd = gate(&s);
    cmd.args(["build", "--fdb-src"])
        .arg(&repo)
        .env("PATH", &bin);
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("cmake is not installed: apt-get install cmake"),
        "{}",
        text(&o)
    );
    // A PATH without git: named before the first git command, not as "cannot find the
    // merge base of HEAD".
    let empty = s.dir.path().join("emptybin");
    std::fs::create_dir_all(&empty).unwrap();
    // With --baseline REV, git's absence must not read as "'REV' is not a revision"; with
    // no checkout either, only git's absence is said: advice to `git clone` needs git.
    let nowhere = s.dir.path().join("nowhere");
    let cases = [
        (&repo, &[][..]),
        (&repo, &["--baseline", "HEAD"][..]),
        (&nowhere, &[][..]),
    ];
    for (i, (src, extra)) in cases.iter().enumerate() {
        let o = gate(&s)
            .args(["bench", "--dry-run", "--fdb-src"])
            .arg(src)
            .arg("--out")
            .arg(s.dir.path().join(format!("nogit{i}")))
            .args(*extra)
            .env("WORKDIR", s.workdir.path())
            .env("PATH", &empty)
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{extra:?}: {}", text(&o));
        assert!(
            text(&o).contains("git is not installed: apt-get install git")
                && !text(&o).contains("merge base")
                && !text(&o).contains("not a revision")
                && !text(&o).contains("git clone"),
            "{extra:?}: {}",
            text(&o)
        );
    }
}

#[test]
fn bad_flags_are_refused_before_any_build() {
    let s = Sandbox::new();
    let repo = checkout(&s);
    let o = bench(&s, &repo, "typo", &["--against-recorded", "no-such-record"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("no-such-record"), "{}", text(&o));
    let busy = s.dir.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("earlier.txt"), "an earlier run").unwrap();
    let o = bench(&s, &repo, "busy", &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("is not an empty directory"),
        "{}",
        text(&o)
    );
    // Refused before the build: ninja would refuse a -j it reads as a negative C int only
    // after configure.
    for (flag, value, said) in [
        (
            "--build-jobs",
            "0",
            "--build-jobs 0: give at least 1 and at most 4096",
        ),
        (
            "--build-jobs",
            "4294967295",
            "--build-jobs 4294967295: give at least 1 and at most 4096",
        ),
        ("--timeout-build", "0", "--timeout-build must be at least 1"),
    ] {
        let o = bench(&s, &repo, "zero", &[flag, value]);
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(text(&o).contains(said), "{}", text(&o));
    }
    // A partial clone, whose missing objects the gate's clone could not read.
    let partial = s.dir.path().join("partial");
    let o = Command::new("git")
        .args(["clone", "-q", "--filter=blob:none"])
        .arg(format!("file://{}", repo.display()))
        .arg(&partial)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = bench(&s, &partial, "partial-out", &["--baseline", "HEAD~1"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("is a partial clone") && text(&o).contains("fetch --refetch"),
        "{}",
        text(&o)
    );
    // A data set no work dir holds (2 billion rows of 48 bytes, 96 GB before FDB's
    // overhead) is refused before the build too.
    let o = gate(&s)
        .args(["bench", "--fdb-src"])
        .arg(&repo)
        .arg("--out")
        .arg(s.dir.path().join("huge"))
        .arg(double_bin())
        .args(["--rows", "2000000000", "--keylen", "32", "--vallen", "16"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("a larger --workdir"), "{}", text(&o));
    assert!(
        !s.dir.path().join("target/perfgate/fdb").exists(),
        "nothing was exported or built"
    );
}

#[test]
fn a_knob_the_arms_source_never_names_is_refused_before_building() {
    // The built fdbserver would refuse it at the first trial, hours later.
    let s = Sandbox::new();
    let repo = checkout(&s);
    std::fs::create_dir_all(repo.join("flow")).unwrap();
    std::fs::write(
        repo.join("flow/Knobs.cpp"),
        "void init() {\n\tinit( PAGE_CACHE_4K,  2LL<<30 );\n}\n",
    )
    .unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "knobs"]);
    std::fs::write(repo.join("double.json"), behaviour(900.0)).unwrap();
    // HEAD~1 has no Knobs.cpp: the baseline arm cannot know the knob.
    let o = bench(
        &s,
        &repo,
        "knob-everywhere",
        &["--baseline", "HEAD~1", "--knob", "page_cache_4k=1048576"],
    );
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("the baseline arm's source (")
            && text(&o).contains(") names no knob page_cache_4k"),
        "{}",
        text(&o)
    );
    assert!(
        !s.dir.path().join("target/perfgate/fdb").exists()
            || std::fs::read_dir(s.dir.path().join("target/perfgate/fdb"))
                .unwrap()
                .next()
                .is_none(),
        "nothing was built"
    );
    // The experiment (the working tree, which has it) may take it.
    let o = bench(
        &s,
        &repo,
        "knob-experiment",
        &[
            "--baseline",
            "HEAD~1",
            "--experiment-knob",
            "page_cache_4k=1048576",
        ],
    );
    assert_ne!(code(&o), 64, "{}", text(&o));
}

#[test]
fn git_and_ninja_variables_of_the_users_shell_do_not_reach_the_build() {
    // An exported GIT_DIR points every git command at another repository.
    let s = Sandbox::new();
    let repo = checkout(&s);
    let other = s.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    let o = gate(&s)
        .args(["bench", "--fdb-src"])
        .arg(&repo)
        .arg("--out")
        .arg(s.dir.path().join("env"))
        .arg(double_bin())
        .args(crate::support::TINY)
        .args(["--trials", "1", "--baselines-dir"])
        .arg(s.dir.path().join("baselines"))
        .args(["--baseline", "HEAD~1", "--experiment", "HEAD"])
        .env("WORKDIR", s.workdir.path())
        .env("GIT_DIR", other.join(".git"))
        .env("NINJA_STATUS", "garbage ")
        .output()
        .unwrap();
    assert!(
        s.dir.path().join("env/trials.json").is_file(),
        "{}",
        text(&o)
    );
    // Whatever else of the kind this shell has (GIT_SSL_CAINFO on CI hosts) goes too.
    assert!(
        text(&o).contains("not passed to git, cmake and ninja: GIT_DIR, "),
        "{}",
        text(&o)
    );
    let p = provenance(&s, "env");
    let removed = p[0]["env_removed"].as_array().unwrap();
    for name in ["GIT_DIR", "NINJA_STATUS"] {
        assert!(removed.contains(&json!(name)), "{p}");
    }
    assert_eq!(p[0]["commit"], json!(rev(&repo, "HEAD~1")), "{p}");
}
