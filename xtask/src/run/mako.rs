//! Run stage: mako's driver. `mako --mode build` loads the rows, `mako --mode run` runs
//! the load for `--seconds`; its text and JSON reports become the trial's [`MakoReport`].
//!
//! mako links `libfdb_c.so` without an rpath and aborts in `_dl_fini` at exit after
//! writing its report (`bindings/c/test/mako/mako.cpp`): it runs with the tree's `lib/`
//! as `LD_LIBRARY_PATH`, and a complete report, not its exit status, is success.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Result};
use fdb::mako::{last_sample_tps, MakoReport, TextSummary};

use super::{
    cluster::Cluster,
    context::Progress,
    driver::{timed, Driver, Failure, Trial},
    monitor::Monitor,
    reaper::{record_mako, remove_mako_leftovers},
    stall::StallWatch,
};
use crate::{
    config::Workload,
    contain::{outside, outside_as_named, private_dirs, MakoNames},
    process::{excerpt, output_note, read_output, Child, PhaseError},
    results::trial::{Phase, RoleCpu, TrialRecord},
};

/// mako's driver: its build phase, then its run.
pub(super) struct Mako;

impl Driver for Mako {
    fn run(
        &self,
        t: &Trial,
        cluster: &mut Cluster,
        monitor: &mut Monitor,
        record: &mut TrialRecord,
    ) -> Result<(), Failure> {
        let built = timed(record, Phase::MakoBuild, || build(t, cluster, monitor));
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        built?;
        let ran = timed(record, Phase::MakoRun, || run(t, cluster, monitor));
        record.workdir_peak_bytes = Some(monitor.peak_growth_bytes);
        let (report, role_cpu, started) = ran?;
        record.run_started_unix_s = started;
        record.run_with_partner = t.with_partner.get();
        if let Some(note) = report.one_valued_latency() {
            tracing::info!("trial {}: {note}", t.planned.index);
        }
        let w = t.ctx.workload;
        let validity = report
            .validity()
            .and_then(|()| report.window_matches(w.seconds as f64, w.warmup_seconds as f64))
            .and_then(|()| t.record_cpu(record, role_cpu));
        record.report = Some(report);
        validity.map_err(|e| Failure {
            phase: Phase::MakoRun,
            error: anyhow!(e).into(),
        })
    }
}

/// A mako command in `mode` with the environment mako needs (it links `libfdb_c.so`
/// without an rpath, and `LD_BIND_NOW` makes a missing symbol fail at start, not
/// mid-run) and the data set's shape, which build and run must agree on.
fn command(t: &Trial, cluster: &Cluster, mode: &str) -> Command {
    let (tree, w) = (&t.arm.tree, t.ctx.workload);
    let mako = tree
        .mako
        .as_ref()
        .expect("a mako workload's trees are opened with mako");
    // Every path through `outside`: in a mount namespace of mako's own, the host's
    // /dev/shm and /tmp (where the work dir, results or tree may be) are covered.
    use std::os::unix::process::CommandExt as _;
    let mut cmd = Command::new(outside(mako));
    cmd.arg0(outside_as_named(mako));
    match t.ctx.mako_names {
        // SAFETY: private_dirs makes only system calls (unshare, mount) on literals.
        MakoNames::Private => unsafe {
            cmd.pre_exec(|| private_dirs().map_err(std::io::Error::from));
        },
        MakoNames::Claimed { .. } => claim_shared_names(&mut cmd),
    }
    t.ctx.env.apply(&mut cmd);
    cmd.env("LD_LIBRARY_PATH", outside(&tree.lib_dir))
        .env("TMPDIR", outside(t.ctx.run_workdir))
        .env("LD_BIND_NOW", "1")
        // Set before the mount namespace is made: the work dir as the gate sees it.
        .current_dir(&t.work)
        .arg("--cluster")
        .arg(outside(&cluster.cluster_file))
        .args(["--mode", mode])
        .args(["--rows", &w.rows.to_string()])
        .args(["--keylen", &w.keylen.to_string()])
        .args(["--vallen", &w.vallen.to_string()]);
    cmd
}

/// `mako --mode build` within `--timeout-mako-build`: the data set, complete (no error,
/// no timeout counted). Artifacts: `mako-build.txt`/`.err`.
fn build(t: &Trial, cluster: &Cluster, monitor: &mut Monitor) -> Result<(), PhaseError> {
    let (ctx, arm, artifacts) = (t.ctx, t.arm, &t.artifacts);
    let w = ctx.workload;
    let cmd = || {
        let mut cmd = command(t, cluster, "build");
        cmd.args(["-p", &w.build_procs.to_string()]);
        cmd
    };
    let (out, err) = (
        artifacts.join("mako-build.txt"),
        artifacts.join("mako-build.err"),
    );
    let started = Instant::now();
    let mut child = spawn_claiming(&err, || {
        Child::spawn_on("mako --mode build", cmd(), &out, &err, ctx.other_cpus())
    })?;
    let claimed = claimed_names(t, child.pid());
    let bound = ctx.bounds.mako_build;
    let mut stall = StallWatch::new("mako --mode build", started, None, bound);
    let status = child.wait_until(started + bound, bound, || {
        monitor.tick();
        cluster.check_alive()?;
        stall.check(cluster)
    });
    if claimed {
        remove_mako_leftovers(child.pid());
    }
    let status = status.map_err(|e| stall.explain(e))?;
    let text = read_output(&out)?;
    // mako aborts in _dl_fini after its report, so the exit status says little: a
    // complete report is success.
    let summary = TextSummary::parse(&text).map_err(|e| {
        anyhow!(
            "mako --mode build ended ({status}) without a complete report: {}; see {}; {}",
            excerpt(&format!("{e:#}"), 10),
            out.display(),
            output_note("stderr", &err, 5)
        )
    })?;
    let timeouts = match summary.total_timeouts {
        Some(n) => n,
        None if !arm.mako.counts_timeouts => 0,
        None => {
            return Err(anyhow!(
                "mako --mode build printed no 'Total Timeouts:' line, which mako of FDB {} \
                 prints: the report is incomplete; see {}",
                arm.mako.release,
                out.display()
            )
            .into())
        }
    };
    if summary.total_errors > 0 || timeouts > 0 {
        return Err(anyhow!(
            "mako --mode build counted {} errors and {timeouts} timeouts: the data set is \
             incomplete; see {}",
            summary.total_errors,
            out.display()
        )
        .into());
    }
    Ok(())
}

/// mako's status: the phase (warmup or measuring) and the current TPS from its
/// per-second lines in `out`.
fn status(elapsed: Duration, w: &Workload, out: &Path) -> String {
    let phase = if elapsed < Duration::from_secs(w.warmup_seconds) {
        "warmup"
    } else if elapsed < Duration::from_secs(w.seconds) {
        "measuring"
    } else {
        "its window is over"
    };
    // Cosmetic: a report not readable yet shows the phase alone.
    let text = read_output(out).unwrap_or_default();
    match last_sample_tps(&text) {
        Some(tps) => format!("{phase}, {tps:.0} TPS"),
        None => phase.to_string(),
    }
}

/// `mako --mode run` within `--seconds` + `--timeout-mako-run-grace`, every role's CPU
/// sampled over its window; its report, the roles' CPU and when the run started (Unix
/// seconds, `None` with a clock before 1970). Artifacts: `mako-run.txt`/`.err`, `mako.json` and, where mako has it,
/// `mako-sketch.json`.
fn run(
    t: &Trial,
    cluster: &Cluster,
    monitor: &mut Monitor,
) -> Result<(MakoReport, Option<RoleCpu>, Option<f64>), PhaseError> {
    let (ctx, arm, artifacts) = (t.ctx, t.arm, &t.artifacts);
    let w = ctx.workload;
    let (out, err) = (
        artifacts.join("mako-run.txt"),
        artifacts.join("mako-run.err"),
    );
    let json = artifacts.join("mako.json");
    t.meet();
    let started = Instant::now();
    // A clock set before 1970 records no start (the trial then pairs by its run only).
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64());
    let mut child = spawn_claiming(&err, || {
        let cmd = run_command(t, cluster, &json);
        Child::spawn_on("mako --mode run", cmd, &out, &err, ctx.other_cpus())
    })?;
    let claimed = claimed_names(t, child.pid());
    let bound = Duration::from_secs(w.seconds) + ctx.bounds.mako_run_grace;
    // Every role's CPU over the measurement window: from the end of the warmup (counted
    // from mako's start) to the last sample while every mako process still ran.
    let servers = cluster.server_pids();
    let client = child.pid();
    let warmup = Duration::from_secs(w.warmup_seconds);
    let mut progress = Progress::new(ctx.progress, "mako run", w.seconds);
    let expected = Some(Duration::from_secs(w.seconds));
    let grace = ctx.bounds.mako_run_grace;
    let mut stall = StallWatch::new("mako --mode run", started, expected, grace);
    let status = child.wait_until(started + bound, bound, || {
        monitor.tick();
        if started.elapsed() >= warmup {
            monitor.start_cpu_window(&servers, Some(client));
        }
        let elapsed = started.elapsed();
        progress.update(Some(elapsed), || status(elapsed, w, &out));
        cluster.check_alive()?;
        stall.check(cluster)
    });
    progress.finish();
    if claimed {
        remove_mako_leftovers(child.pid());
    }
    let status = status.map_err(|e| stall.explain(e))?;
    let cpu = monitor.trial_cpu(t.planned.index);
    let report = (|| -> Result<MakoReport> {
        let text = read_output(&out)?;
        let json_text = read_output(&json)?;
        let report = MakoReport::parse(
            &text,
            &out.display().to_string(),
            &json_text,
            &json.display().to_string(),
            arm.mako.format(),
        )?;
        if arm.mako.warmup_seconds {
            return Ok(report);
        }
        // No --warmup_seconds: the window is the samples after the warmup's seconds.
        report.measured_after(w.warmup_seconds as f64)
    })()
    .map_err(|e| {
        anyhow!(
            "mako --mode run ended ({status}) without a usable report: {}; {}",
            excerpt(&format!("{e:#}"), 10),
            output_note("stderr", &err, 5)
        )
    })?;
    Ok((report, cpu, started_unix_s))
}

/// `mako --mode run` as this arm's mako takes it (`ArmPlan::mako`): `--async_xacts`,
/// `--warmup_seconds` and `--stats_export_path` only where it has them (the plan refused
/// a workload a mako cannot run); without `--warmup_seconds` it runs the whole
/// `--seconds` and the window is cut from its samples.
fn run_command(t: &Trial, cluster: &Cluster, json: &Path) -> Command {
    let (w, caps) = (t.ctx.workload, &t.arm.mako);
    let mut cmd = command(t, cluster, "run");
    cmd.args(["-p", &w.procs.to_string()])
        .args(["-t", &w.threads.to_string()]);
    if caps.async_xacts {
        cmd.args(["--async_xacts", &w.async_xacts.to_string()]);
    }
    cmd.args(["-x", &w.transaction]);
    if caps.warmup_seconds {
        cmd.args(["--warmup_seconds", &w.warmup_seconds.to_string()]);
    }
    cmd.args(["--seconds", &w.seconds.to_string()])
        // Both take an optional argument (getopt `optional_argument` in mako.cpp): only
        // the `=` form is unambiguous (and the only one 7.1/7.2's mako reads).
        // OS strings: a results dir whose name is not UTF-8 is still the same path.
        .arg(flag_path("--json_report=", &outside(json)));
    if caps.stats_export_path {
        cmd.arg(flag_path(
            "--stats_export_path=",
            &outside(&t.artifacts.join("mako-sketch.json")),
        ));
    }
    cmd
}

/// `--flag=PATH` as one argument, keeping the path's bytes (not `display()`'s lossy text).
fn flag_path(flag: &str, path: &Path) -> std::ffi::OsString {
    let mut arg = std::ffi::OsString::from(flag);
    arg.push(path);
    arg
}

/// Whether mako `pid` runs on the host's `/dev/shm` and `/tmp`, its names claimed there:
/// then recorded in the run dir, so that a reaper removes what a killed mako leaves. In a
/// mount namespace of its own they go with it, and the host's names of that pid are
/// another PID namespace's.
fn claimed_names(t: &Trial, pid: u32) -> bool {
    let claimed = matches!(t.ctx.mako_names, MakoNames::Claimed { .. });
    if claimed {
        record_mako(t.ctx.run_workdir, pid);
    }
    claimed
}

/// Where mako keeps files named after its pid: POSIX shared memory `/dev/shm/mako<pid>` (its
/// statistics, which its report is made from) and the sample directory `/tmp/makoTemp<pid>`
/// (`bindings/c/test/mako/mako.cpp`: `shm_open` with `O_CREAT` and no `O_EXCL`, `mkdir`
/// taking `EEXIST` as success, then files written in it through any link).
const MAKO_SHM: &[u8] = b"/dev/shm/mako";
const MAKO_TEMP: &[u8] = b"/tmp/makoTemp";

/// Makes mako's process create its files in shared directories ([`MAKO_SHM`],
/// [`MAKO_TEMP`]) itself, exclusively, between fork and exec, when its pid is known and
/// before mako runs: mako would use whatever another user planted at those names (a file
/// of theirs it maps, so they could read and change the statistics its report is made
/// of; a link to a directory it then writes its samples into as root). A name already
/// there, whoever's (another PID namespace's mako of the same pid is root's too), keeps
/// mako from starting under that pid: its spawn fails with `EEXIST` and its stderr file
/// says which name ([`spawn_claiming`] forks again).
fn claim_shared_names(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure makes only async-signal-safe system calls (getpid, open, mkdir,
    // lstat, write, close) on paths built in stack buffers: nothing is allocated.
    unsafe {
        cmd.pre_exec(|| {
            let pid = nix::unistd::getpid().as_raw() as u32;
            claim(MAKO_SHM, MAKO_TEMP, pid).map_err(|e| std::io::Error::from_raw_os_error(e as i32))
        });
    }
}

/// Forks of mako a phase tries before it gives up on mako's names: each fork has a pid of
/// its own, so a name left by another user's mako of the same pid, or planted for one
/// pid, is passed by the next.
const SPAWN_TRIES: u32 = 8;

/// Runs `spawn` (a mako [`Child::spawn_on`] with [`claim_shared_names`]) again while
/// mako's names for the new process' pid are held, at most [`SPAWN_TRIES`] times.
/// Errors: `spawn`'s; when every fork found its names held, that, with the reason mako's
/// stderr file `err` holds.
fn spawn_claiming(err: &Path, mut spawn: impl FnMut() -> Result<Child>) -> Result<Child> {
    let held = |e: &anyhow::Error| {
        e.root_cause()
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.raw_os_error() == Some(nix::libc::EEXIST))
    };
    for _ in 1..SPAWN_TRIES {
        match spawn() {
            Err(e) if held(&e) => continue,
            started => return started,
        }
    }
    spawn().map_err(|e| {
        if !held(&e) {
            return e;
        }
        e.context(format!(
            "{SPAWN_TRIES} forks of mako, each with a pid of its own, found the names mako \
             would use taken; {}",
            output_note("stderr", err, 3)
        ))
    })
}

/// [`claim_shared_names`]' work for pid `pid`, the names being `shm<pid>` (a file, mode
/// 0600) and `temp<pid>` (a directory, mode 0755), both new. Errors: `EEXIST` for a name
/// already there (said on stderr), or the system call's own error.
fn claim(shm: &[u8], temp: &[u8], pid: u32) -> Result<(), nix::errno::Errno> {
    use nix::{fcntl::OFlag, sys::stat::Mode};
    let mut buf = [0u8; 256];
    let path = named(&mut buf, shm, pid)?;
    let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_RDWR;
    match nix::fcntl::open(
        path,
        flags | OFlag::O_CLOEXEC,
        Mode::S_IRUSR | Mode::S_IWUSR,
    ) {
        Ok(fd) => drop(fd),
        Err(nix::errno::Errno::EEXIST) => return Err(taken(path)),
        Err(e) => return Err(e),
    }
    let mut buf = [0u8; 256];
    let dir = named(&mut buf, temp, pid)?;
    let claimed = match nix::unistd::mkdir(dir, Mode::from_bits_truncate(0o755)) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EEXIST) => Err(taken(dir)),
        Err(e) => Err(e),
    };
    // A mako that does not start leaves no file: the reaper knows only started makos.
    if claimed.is_err() {
        let _ = nix::unistd::unlink(path);
    }
    claimed
}

/// `prefix` and `pid` in decimal as a C string in `buf`. Errors: `ENAMETOOLONG`.
fn named<'a>(
    buf: &'a mut [u8; 256],
    prefix: &[u8],
    pid: u32,
) -> Result<&'a std::ffi::CStr, nix::errno::Errno> {
    let mut digits = [0u8; 10];
    let (mut n, mut i) = (pid, digits.len());
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = prefix.len() + digits.len() - i;
    if len + 1 > buf.len() {
        return Err(nix::errno::Errno::ENAMETOOLONG);
    }
    buf[..prefix.len()].copy_from_slice(prefix);
    buf[prefix.len()..len].copy_from_slice(&digits[i..]);
    buf[len] = 0;
    std::ffi::CStr::from_bytes_with_nul(&buf[..=len]).map_err(|_| nix::errno::Errno::EINVAL)
}

/// Says on stderr that `path` is taken, and returns `EEXIST`.
fn taken(path: &std::ffi::CStr) -> nix::errno::Errno {
    // SAFETY: descriptor 2 is the child's stderr, open for the whole of this call.
    let stderr = unsafe { std::os::fd::BorrowedFd::borrow_raw(2) };
    for part in [
        b"perfgate: mako not started under this pid: ".as_slice(),
        path.to_bytes(),
        b" is already there (another PID namespace's mako of the same pid, a leftover or a \
plant): mako would use it, as it neither creates it exclusively nor refuses a link\n",
    ] {
        let _ = nix::unistd::write(stderr, part);
    }
    nix::errno::Errno::EEXIST
}

#[cfg(test)]
mod claim_tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::*;

    /// A 1777 directory like /dev/shm and /tmp, its prefixes for `claim`.
    fn shared() -> (tempfile::TempDir, Vec<u8>, Vec<u8>) {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let base = d.path().as_os_str().as_encoded_bytes().to_vec();
        let mut shm = base.clone();
        shm.extend_from_slice(b"/mako");
        let mut temp = base;
        temp.extend_from_slice(b"/makoTemp");
        (d, shm, temp)
    }

    #[test]
    fn mako_names_are_created_by_the_gate_before_mako_and_held_names_refused() {
        let (d, shm, temp) = shared();
        // Nothing there: both created, this user's, private.
        claim(&shm, &temp, 4242).unwrap();
        let f = std::fs::symlink_metadata(d.path().join("mako4242")).unwrap();
        assert!(
            f.is_file() && f.mode() & 0o777 == 0o600 && f.uid() == nix::unistd::geteuid().as_raw()
        );
        assert!(std::fs::symlink_metadata(d.path().join("makoTemp4242"))
            .unwrap()
            .is_dir());
        // Already there, even as this user's own (another PID namespace's mako of the
        // same pid): refused.
        assert_eq!(claim(&shm, &temp, 4242), Err(nix::errno::Errno::EEXIST));
        // Planted: a link to a file of root's, a hard link, a link to a directory, a file
        // of another user's. Each refused, and the victim untouched.
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("mako1")).unwrap();
        std::fs::hard_link(&victim, d.path().join("mako2")).unwrap();
        std::fs::write(d.path().join("mako3"), "").unwrap();
        std::os::unix::fs::chown(d.path().join("mako3"), Some(65534), Some(65534)).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join("makoTemp4")).unwrap();
        for pid in [1, 2, 3, 4] {
            assert_eq!(
                claim(&shm, &temp, pid),
                Err(nix::errno::Errno::EEXIST),
                "{pid}"
            );
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        // The file a refused pid's claim created is removed again.
        assert!(!d.path().join("mako4").exists());
        assert_eq!(
            named(&mut [0; 256], b"/tmp/makoTemp", u32::MAX)
                .unwrap()
                .to_bytes(),
            b"/tmp/makoTemp4294967295"
        );
        assert_eq!(
            named(&mut [0; 256], &[b'x'; 250], 1234567),
            Err(nix::errno::Errno::ENAMETOOLONG)
        );
    }

    /// A spawn refused for held names (`EEXIST` from the child's claim) is tried again
    /// with a new fork; every fork refused is an error with mako's reason; any other
    /// failure is not retried.
    #[test]
    fn a_mako_whose_names_are_held_is_forked_again_and_gives_up_saying_why() {
        let d = tempfile::tempdir().unwrap();
        let err = d.path().join("mako-run.err");
        std::fs::write(
            &err,
            "perfgate: mako not started: /tmp/makoTemp7 is already there\n",
        )
        .unwrap();
        let held = || {
            anyhow!(std::io::Error::from_raw_os_error(nix::libc::EEXIST))
                .context("cannot start mako")
        };
        let start = || {
            Child::spawn(
                "true",
                Command::new("true"),
                &d.path().join("o"),
                &d.path().join("e"),
            )
        };
        let mut forks = 0;
        let mut child = spawn_claiming(&err, || {
            forks += 1;
            if forks < 3 {
                Err(held())
            } else {
                start()
            }
        })
        .unwrap();
        assert_eq!(forks, 3);
        child
            .wait_until(
                Instant::now() + Duration::from_secs(60),
                Duration::from_secs(60),
                || Ok(()),
            )
            .unwrap();
        let mut forks = 0;
        let e = spawn_claiming(&err, || {
            forks += 1;
            Err(held())
        })
        .err()
        .unwrap();
        assert_eq!(forks, SPAWN_TRIES);
        let text = format!("{e:#}");
        assert!(text.contains("/tmp/makoTemp7 is already there"), "{text}");
        assert!(
            text.contains(&format!("{SPAWN_TRIES} forks of mako")),
            "{text}"
        );
        let mut forks = 0;
        let e = spawn_claiming(&err, || {
            forks += 1;
            Err(anyhow!(std::io::Error::from_raw_os_error(
                nix::libc::ENOENT
            )))
        })
        .err()
        .unwrap();
        assert_eq!(forks, 1);
        assert!(!format!("{e:#}").contains("forks of mako"));
    }
}
