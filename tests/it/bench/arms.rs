//! The two build trees, checked before any trial and against each other: missing trees
//! or mako, A/A runs, non-release builds, arms configured differently.

use serde_json::json;

use crate::support::{code, read_junit, text, Sandbox};

#[test]
fn missing_mako_is_a_clear_error_before_any_trial() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::remove_file(b.join("bin/mako")).unwrap();
    let junit = s.dir.path().join("junit.xml");
    let o = s.bench(&a, &b, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the experiment build tree"), "{err}");
    assert!(err.contains("is not usable"), "{err}");
    // CI still gets a JUnit file, with the error in it.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<error message="ERROR: "#) && xml.contains("bin/mako is missing"),
        "{xml}"
    );
    let case = &read_junit(&junit)[0]["cases"][0];
    assert_eq!(case["results"][0]["kind"], "Error", "{case}");
    assert_eq!(case["results"][0]["verdict"], "ERROR");
    assert!(err.contains("bin/mako is missing"), "{err}");
    assert!(err.contains("-DBUILD_MAKO=ON"), "{err}");
    assert!(
        !s.out().exists(),
        "no results dir for a run that never started"
    );
}

#[test]
fn same_build_and_knobs_is_refused_unless_allow_same() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({}));
    let o = s.bench(&a, &a, &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--allow-same"),
        "{}",
        text(&o)
    );
    // A knob A/B on one build is a real A/B.
    let o = s.bench(&a, &a, &["--experiment-knob", "page_cache_4k=1"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.read_trials();
    assert_eq!(trials[1]["arm"], "experiment");
    assert!(trials[1]["knobs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == "page_cache_4k"));
}

#[test]
fn aa_run_with_allow_same_is_measured() {
    let s = Sandbox::new();
    let a = s.tree("a", json!({"noise_pct": 1.0}));
    let o = s.bench(&a, &a, &["--allow-same"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn a_debug_or_instrumented_tree_is_refused_unless_allowed() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    std::fs::write(
        b.join("CMakeCache.txt"),
        "CMAKE_BUILD_TYPE:STRING=Debug\nBUILD_MAKO:BOOL=ON\nUSE_TSAN:BOOL=ON\n",
    )
    .unwrap();
    let o = s.bench(&a, &b, &["--trials", "2"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CMAKE_BUILD_TYPE is 'Debug'") && err.contains("USE_TSAN"),
        "{err}"
    );
    assert!(err.contains("--allow-non-release"), "{err}");
    let o = s.bench(&a, &b, &["--trials", "2", "--allow-non-release"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let w = &s.read_json("summary.json")["warnings"];
    assert!(
        w[0].as_str().unwrap().starts_with("NOT A RELEASE BUILD"),
        "{w}"
    );
    assert_eq!(
        s.read_json("meta.json")["plan"]["experiment"]["build_config"]["build_type"],
        "Debug"
    );
}

#[test]
fn arms_built_with_other_compilers_are_measured_with_a_warning_naming_the_difference() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    for (tree, compiler) in [(&a, "/usr/bin/clang++-19"), (&b, "/usr/bin/g++")] {
        std::fs::write(
            tree.join("CMakeCache.txt"),
            format!(
                "CMAKE_BUILD_TYPE:STRING=Release\nBUILD_MAKO:BOOL=ON\n\
                 CMAKE_CXX_COMPILER:STRING={compiler}\nUSE_JEMALLOC:BOOL=ON\n"
            ),
        )
        .unwrap();
    }
    let junit = s.dir.path().join("gate.xml");
    let o = s.bench(
        &a,
        &b,
        &["--trials", "2", "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    // In CI the JUnit file is what is read: the warning is in it.
    let case = &read_junit(&junit)[0]["cases"][0];
    assert!(
        case["system_out"]
            .as_str()
            .unwrap()
            .contains("THE ARMS WERE CONFIGURED DIFFERENTLY"),
        "{case}"
    );
    let warnings = s.read_json("summary.json")["warnings"].clone();
    let w = warnings
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with("THE ARMS WERE CONFIGURED DIFFERENTLY"))
        .unwrap_or_else(|| panic!("{warnings}"));
    assert!(
        w.contains("CMAKE_CXX_COMPILER: '/usr/bin/clang++-19' vs '/usr/bin/g++'")
            && !w.contains("USE_JEMALLOC"),
        "{w}"
    );
    assert!(text(&o).contains("CONFIGURED DIFFERENTLY"), "{}", text(&o));
}

#[test]
fn two_missing_build_trees_are_named_together_as_a_usage_error() {
    let s = Sandbox::new();
    let (a, b) = (s.dir.path().join("no-a"), s.dir.path().join("no-b"));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the baseline build tree") && err.contains("the experiment build tree"),
        "{err}"
    );
    assert!(err.contains("no-a does not exist") && err.contains("no-b does not exist"));
}

#[test]
fn a_source_flag_no_arm_is_built_with_is_refused_not_ignored() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    for (extra, said) in [
        (
            &["--baseline", "HEAD~1"][..],
            "--baseline HEAD~1 is not used: the baseline arm is not built from source",
        ),
        (
            &["--experiment", "HEAD"][..],
            "--experiment HEAD is not used: the experiment arm is not built from source",
        ),
        (
            &["--fdb-src", "/nowhere"][..],
            "--fdb-src is not used: no arm is built from source",
        ),
        (
            &["--build-jobs", "4"][..],
            "--build-jobs is not used: no arm is built from source",
        ),
    ] {
        let o = s.bench_in("refused", &a, &b, extra);
        assert_eq!(code(&o), 64, "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(said), "{extra:?}: {}", text(&o));
        assert!(!s.dir.path().join("refused").exists());
    }
    // FDB_SRC is for every run: set beside two trees, it is not refused.
    let o = s
        .bench_command(&a, &b, &["--dry-run"])
        .env("FDB_SRC", "/nowhere")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
}
