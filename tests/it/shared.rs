//! Root in shared directories: another user (uid 65534, `nobody`) plants links and
//! directories where the gate works, and nothing outside the run is touched. The tests run
//! as root, as the gate does on CI hosts.

use std::{
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
};

use serde_json::json;

use crate::support::{code, gate_cmd, text, Sandbox};

const NOBODY: u32 = 65534;

/// A directory `name` in `parent` with `mode`, owned by `uid`.
fn dir_of(parent: &Path, name: &str, mode: u32, uid: u32) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::lchown(&d, Some(uid), Some(uid)).unwrap();
    d
}

/// A link `at` to `to`, planted by `nobody`.
fn planted_link(to: &Path, at: &Path) {
    std::os::unix::fs::symlink(to, at).unwrap();
    std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// A root-owned file only root may read, holding `keep`: what a link must not reach.
fn victim(dir: &Path) -> PathBuf {
    let v = dir.join("victim");
    std::fs::write(&v, "keep").unwrap();
    std::fs::set_permissions(&v, std::fs::Permissions::from_mode(0o600)).unwrap();
    v
}

#[test]
fn doctors_fsync_probe_never_writes_through_a_link_planted_at_its_name() {
    let s = Sandbox::new();
    let shared = dir_of(s.dir.path(), "shm", 0o1777, 0);
    let victim = victim(s.dir.path());
    // In a PID namespace of its own the doctor is pid 1: a probe named after its pid,
    // `.perfgate-doctor-<pid>`, would be known to the attacker (as any pid is, by trying
    // them all), in the work dir and in the current directory.
    let name = ".perfgate-doctor-1";
    planted_link(&victim, &shared.join(name));
    let here = dir_of(s.dir.path(), "here", 0o1777, 0);
    planted_link(&victim, &here.join(name));
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(crate::support::xtask())
        .args(["doctor", "--workdir"])
        .arg(&shared)
        .current_dir(&here)
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "keep",
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::metadata(&victim).unwrap().len(), 4);
    assert!(shared.join(name).symlink_metadata().unwrap().is_symlink());
    // Nor can a planted name fail the probe: it times a file of its own, named at random,
    // and leaves nothing behind.
    let probe = text(&o)
        .lines()
        .find(|l| l.contains("fsync latency"))
        .unwrap_or_default()
        .to_string();
    assert!(
        !probe.is_empty() && !probe.contains("FAIL") && !probe.contains("cannot"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_dir(&shared).unwrap().count(),
        1,
        "{}",
        text(&o)
    );
}

#[test]
fn a_work_dir_of_another_user_or_reached_through_a_link_is_refused() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let theirs = dir_of(s.dir.path(), "theirs", 0o755, NOBODY);
    let elsewhere = dir_of(s.dir.path(), "etc", 0o755, 0);
    let link = s.dir.path().join("link");
    planted_link(&elsewhere, &link);
    for (workdir, why) in [(&theirs, "owned by uid 65534"), (&link, "symbolic link")] {
        let out = s.dir.path().join(format!("out-{why}").replace(' ', "-"));
        let o = s
            .bench_command_out(&a, &b, &out, &["--workdir", workdir.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains("work dir") && text(&o).contains(why),
            "{}",
            text(&o)
        );
        // Nothing ran there.
        for d in [&theirs, &elsewhere] {
            assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{}", d.display());
        }
    }
}

#[test]
fn an_out_or_a_copy_another_user_could_redirect_is_refused_before_any_work() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let theirs = dir_of(s.dir.path(), "theirs", 0o755, NOBODY);
    let o = s.bench_command_out(&a, &b, &theirs, &[]).output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--out") && text(&o).contains("65534"),
        "{}",
        text(&o)
    );
    let o = s
        .bench_command_out(&a, &b, &theirs.join("out"), &[])
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    // A --junit onto another user's file in a shared (sticky) directory: root would make
    // it its own and split its hard link.
    let shared = dir_of(s.dir.path(), "tmp", 0o1777, 0);
    let their_file = shared.join("junit.xml");
    std::fs::write(&their_file, "theirs").unwrap();
    std::os::unix::fs::lchown(&their_file, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::hard_link(&their_file, shared.join("second-name")).unwrap();
    let o = s.bench(&a, &b, &["--junit", their_file.to_str().unwrap()]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("--junit"), "{}", text(&o));
    let meta = std::fs::metadata(&their_file).unwrap();
    assert_eq!((meta.uid(), meta.nlink()), (NOBODY, 2));
    assert_eq!(std::fs::read_to_string(&their_file).unwrap(), "theirs");
    assert!(!s.out().exists(), "refused before the results dir was made");
    let o = gate_cmd()
        .arg("doctor")
        .arg("--workdir")
        .arg(&theirs)
        .output()
        .unwrap();
    assert_ne!(code(&o), 0, "{}", text(&o));
}

#[test]
fn baselines_another_user_could_write_are_not_read() {
    // Records name trees the gate runs and floors it gates on.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let theirs = dir_of(s.dir.path(), "theirs", 0o755, NOBODY);
    std::fs::write(
        theirs.join("slo.json"),
        r#"{"schema_version":1,"tps":{"quick":{"redwood":99999.0}}}"#,
    )
    .unwrap();
    let o = gate_cmd()
        .args(["bench", "--baseline-build"])
        .arg(&a)
        .arg("--experiment-build")
        .arg(&b)
        .arg("--out")
        .arg(s.out())
        .args(crate::support::TINY)
        .arg("--baselines-dir")
        .arg(&theirs)
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--baselines-dir") && text(&o).contains("65534"),
        "{}",
        text(&o)
    );
    let o = gate_cmd()
        .args(["baseline", "list", "--baselines-dir"])
        .arg(&theirs)
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
}

#[test]
fn compare_never_reads_a_saved_runs_file_through_a_link() {
    // Another user's link in a saved run to a file only root may read: a parse error
    // would echo what it holds.
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let secret = s.dir.path().join("secret");
    std::fs::write(
        &secret,
        r#"{"schema_version": "SECRET-VALUE", "trials": []}"#,
    )
    .unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let trials = s.out().join("trials.json");
    std::fs::remove_file(&trials).unwrap();
    planted_link(&secret, &trials);
    let o = crate::support::compare_only(&s.out());
    assert_ne!(code(&o), 0, "{}", text(&o));
    assert!(!text(&o).contains("SECRET"), "{}", text(&o));
    assert!(text(&o).contains("trials.json"), "{}", text(&o));
}

/// A sticky directory lets anyone add files: as `--out` or `--baselines-dir` it would hold
/// another user's `summary.json`, `junit.xml`, `trials.json`, `slo.json` or records, which
/// the gate would leave as its results or read as its own.
#[test]
fn a_sticky_out_or_baselines_dir_and_files_of_another_user_are_refused() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let sticky = dir_of(s.dir.path(), "sticky", 0o1777, 0);
    let o = s.bench_command_out(&a, &b, &sticky, &[]).output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--out") && text(&o).contains("writable by other users"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_dir(&sticky).unwrap().count(), 0);
    let baselines = dir_of(s.dir.path(), "shared-baselines", 0o1777, 0);
    let o = gate_cmd()
        .args(["baseline", "list", "--baselines-dir"])
        .arg(&baselines)
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--baselines-dir") && text(&o).contains("writable by other users"),
        "{}",
        text(&o)
    );
    // A saved run whose trials.json another user replaced (forged TPS): not read.
    let o = s.bench(&a, &b, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let trials = s.out().join("trials.json");
    let forged = std::fs::read_to_string(&trials).unwrap();
    std::fs::remove_file(&trials).unwrap();
    std::fs::write(&trials, forged).unwrap();
    std::os::unix::fs::lchown(&trials, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = crate::support::compare_only(&s.out());
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(
        text(&o).contains("trials.json") && text(&o).contains("owned by uid 65534"),
        "{}",
        text(&o)
    );
    // A saved run in a directory anyone may add files to: refused whatever its files.
    std::os::unix::fs::lchown(&trials, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(s.out(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = crate::support::compare_only(&s.out());
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("saved run") && text(&o).contains("writable by other users"),
        "{}",
        text(&o)
    );
}

/// Trees named by flags are run as the gate's user, as a record's are: another user's
/// tree, or a binary of theirs linked into a tree of ours, is refused before anything runs.
#[test]
fn a_build_tree_another_user_could_change_is_not_run() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let theirs = dir_of(s.dir.path(), "theirs", 0o755, NOBODY);
    let tree = theirs.join("tree");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&b)
        .arg(&tree)
        .status()
        .unwrap();
    assert!(status.success());
    let marker = s.dir.path().join("ran-as-root");
    let script = theirs.join("fdbserver");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nid -u > {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::lchown(&script, Some(NOBODY), Some(NOBODY)).unwrap();
    // A tree of ours whose fdbserver is their script.
    let ours = s.tree(
        "ours",
        json!({"source_version": "0000000000000000000000000000000000000003"}),
    );
    std::fs::remove_file(ours.join("bin/fdbserver")).unwrap();
    std::os::unix::fs::symlink(&script, ours.join("bin/fdbserver")).unwrap();
    for experiment in [&tree, &ours] {
        let o = s.bench_command(&a, experiment, &[]).output().unwrap();
        assert_eq!(code(&o), 64, "{}", text(&o));
        assert!(
            text(&o).contains("FDB build tree") && text(&o).contains("65534"),
            "{}",
            text(&o)
        );
        assert!(!marker.exists(), "{}", text(&o));
    }
    // A tree of ours with a sticky lib/: anyone may add a library there, which mako (its
    // LD_LIBRARY_PATH) would load.
    let sticky_lib = s.tree(
        "sticky-lib",
        json!({"source_version": "0000000000000000000000000000000000000004"}),
    );
    std::fs::set_permissions(
        sticky_lib.join("lib"),
        std::fs::Permissions::from_mode(0o1777),
    )
    .unwrap();
    let o = s.bench_command(&a, &sticky_lib, &[]).output().unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("/lib") && text(&o).contains("writable by other users"),
        "{}",
        text(&o)
    );
    // A profile file of another user's: its values would be the workload.
    let profile = s.dir.path().join("their-profile.json");
    std::fs::write(
        &profile,
        r#"{"name": "theirs", "base": "quick", "rows": 100}"#,
    )
    .unwrap();
    std::os::unix::fs::lchown(&profile, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = s
        .bench_command(&a, &b, &["--profile-file", profile.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(text(&o).contains("owned by uid 65534"), "{}", text(&o));
}

/// cargo and rustup read configuration from the directory they start in and those above
/// it (`rust-toolchain.toml` names the cargo that runs): the gate's `cargo metadata` must
/// not start in the caller's directory, which may be one anyone can write to.
#[test]
fn cargo_is_never_started_in_a_directory_another_user_could_write() {
    let s = Sandbox::new();
    let shared = dir_of(s.dir.path(), "shared", 0o1777, 0);
    let here = dir_of(&shared, "here", 0o755, 0);
    let marker = s.dir.path().join("their-cargo-ran");
    let toolchain = dir_of(&shared, "tc", 0o755, NOBODY);
    std::fs::create_dir(toolchain.join("bin")).unwrap();
    for tool in ["cargo", "rustc"] {
        let script = toolchain.join("bin").join(tool);
        std::fs::write(
            &script,
            format!("#!/bin/sh\nid -u > {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let planted = shared.join("rust-toolchain.toml");
    std::fs::write(
        &planted,
        format!("[toolchain]\npath = \"{}\"\n", toolchain.display()),
    )
    .unwrap();
    std::fs::create_dir(shared.join(".cargo")).unwrap();
    let target = shared.join("their-target");
    std::fs::write(
        shared.join(".cargo/config.toml"),
        format!("[build]\ntarget-dir = \"{}\"\n", target.display()),
    )
    .unwrap();
    let o = gate_cmd()
        .args(["baseline", "list"])
        .current_dir(&here)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .unwrap();
    assert!(!marker.exists(), "{}", text(&o));
    assert!(!target.exists(), "{}", text(&o));
}

/// A umask of 000 (a CI container's default) makes nothing of the gate's writable by
/// others, and does not make the gate refuse its own temporary directories.
#[test]
fn under_umask_000_the_gate_runs_and_its_files_stay_private() {
    use std::os::unix::process::CommandExt as _;
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let junit = s.dir.path().join("junit.xml");
    let mut cmd = s.bench_command(&a, &b, &["--junit", junit.to_str().unwrap()]);
    // SAFETY: umask(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::stat::umask(nix::sys::stat::Mode::empty());
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let mut checked = 0;
    for path in std::iter::once(junit).chain(
        std::fs::read_dir(s.out())
            .unwrap()
            .flatten()
            .map(|e| e.path()),
    ) {
        let mode = std::fs::symlink_metadata(&path).unwrap().mode();
        assert_eq!(mode & 0o022, 0, "{} mode {mode:o}", path.display());
        checked += 1;
    }
    assert!(checked > 5);
}

/// cmake runs the checkout's CMakeLists.txt and git its hooks as the gate's user: another
/// user's `--fdb-src` is refused before git or cmake runs there, whatever git's own
/// `safe.directory` allows.
#[test]
fn an_fdb_checkout_another_user_could_change_is_not_built() {
    let s = Sandbox::new();
    let theirs = dir_of(s.dir.path(), "fdbsrc", 0o755, NOBODY);
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&theirs)
        .status()
        .unwrap();
    assert!(init.success());
    let o = gate_cmd()
        .args(["build", "--fdb-src"])
        .arg(&theirs)
        .args(["--baseline", "HEAD", "--experiment", "HEAD"])
        .env("WORKDIR", s.workdir.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(
        text(&o).contains("--fdb-src") && text(&o).contains("65534"),
        "{}",
        text(&o)
    );
}

/// Programs the gate and its children start by name are searched for on PATH: an entry
/// another user can fill (theirs, or relative, as an empty one is the current directory)
/// is left out with a warning, and their `valgrind` never runs as root.
#[test]
fn a_program_on_a_path_entry_another_user_could_fill_is_never_run() {
    let s = Sandbox::new();
    let (a, b) = s.ab(json!({}), json!({}));
    let shared = dir_of(s.dir.path(), "shared", 0o1777, 0);
    let theirs = dir_of(&shared, "bin", 0o755, NOBODY);
    let marker = shared.join("ran-as");
    let script = theirs.join("valgrind");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nid -u > {}\nexec {} \"$@\"\n",
            marker.display(),
            env!("CARGO_BIN_EXE_valgrind")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::lchown(&script, Some(NOBODY), Some(NOBODY)).unwrap();
    let doubles = crate::bench::valgrind_dir(&s);
    let rest = std::env::var("PATH").unwrap_or_default();
    for (path, cwd) in [
        (
            format!("{}:{}:{rest}", theirs.display(), doubles.display()),
            s.dir.path(),
        ),
        (format!(":{}:{rest}", doubles.display()), theirs.as_path()),
    ] {
        let _ = std::fs::remove_dir_all(s.out());
        let sim = ["--profile", "sim-g18ui"];
        let mut cmd = s.bench_command_with(&a, &b, &s.out(), &sim, &["--trials", "1"]);
        cmd.env("PATH", &path).current_dir(cwd);
        let o = cmd.output().unwrap();
        let t = text(&o);
        assert_eq!(code(&o), 0, "{t}");
        assert!(!marker.exists(), "another user's valgrind ran: {t}");
        assert!(t.contains("is not searched"), "{t}");
        assert!(t.contains("valgrind-3.19.0"), "the double ran: {t}");
    }
}
