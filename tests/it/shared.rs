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
    // In a PID namespace of its own the doctor is pid 1, so the name its probe uses,
    // `.perfgate-doctor-<pid>`, is known to the attacker (as any pid is, by trying them
    // all), in the work dir and in the current directory.
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
    // The probe says it could not run rather than timing another file.
    assert!(text(&o).contains(name), "{}", text(&o));
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
