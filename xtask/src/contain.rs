//! Containment, below every stage beside `process`: where cgroup v2 is writable, every
//! process of a run goes into a cgroup of the run's own, and `cgroup.kill` ends them all,
//! whatever they did to leave their process group (`setsid`, a double fork). Where it is
//! not, the run falls back to process groups, the parent-death signal and the gate as
//! subreaper (`process`). Which one a run used is chosen once, with the plan, and
//! recorded in `meta.json`.

use std::{
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::error::UsageError;

/// Chooses the containment: unset or `auto` (a cgroup where the host allows one, else
/// process groups), `cgroup` (a cgroup or a usage error saying why not) or
/// `process-groups` (the fallback, forced: how a test or a host without cgroup v2 runs).
pub const CONTAINMENT_ENV: &str = "PERFGATE_CONTAINMENT";

/// Prefix of the cgroup of a run (and of the gate's probe), `perfgate-<pid>-<nonce>`.
const CGROUP_PREFIX: &str = "perfgate-";

/// How the processes of a run are kept from outliving it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Containment {
    /// A cgroup v2 of the run's own, made under `parent` (the gate's own cgroup), holds
    /// every process the run starts; `cgroup.kill` ends them all after each trial, at
    /// the run's end and in the reaper.
    Cgroup {
        /// The cgroup directory the run's cgroup is made in.
        parent: PathBuf,
    },
    /// Process groups, the parent-death signal and the gate as subreaper only: a process
    /// that leaves its group and its parent (`setsid -f`) is ended after its trial, but
    /// one that does so after the gate and its reaper were killed is not.
    ProcessGroups {
        /// Why no cgroup is used (a forced fallback, no cgroup2 mount, not writable...).
        why: String,
    },
}

impl Containment {
    /// The containment this host allows, as [`CONTAINMENT_ENV`] asks. Errors: the
    /// variable has another value, or is `cgroup` where no cgroup can be made (a
    /// [`UsageError`] naming why).
    pub fn for_host() -> Result<Containment, UsageError> {
        let asked = std::env::var(CONTAINMENT_ENV).unwrap_or_default();
        match asked.as_str() {
            "" | "auto" => Ok(Containment::probe()),
            "process-groups" => Ok(Containment::ProcessGroups {
                why: format!("{CONTAINMENT_ENV}=process-groups"),
            }),
            "cgroup" => match Containment::probe() {
                c @ Containment::Cgroup { .. } => Ok(c),
                Containment::ProcessGroups { why } => Err(UsageError(format!(
                    "{CONTAINMENT_ENV}=cgroup, but no cgroup can be made here: {why}; unset \
                     it (or set process-groups) to run with process groups only"
                ))),
            },
            other => Err(UsageError(format!(
                "{CONTAINMENT_ENV} is '{}': it takes auto, cgroup or process-groups",
                crate::process::clean_text(other, 100, &[])
            ))),
        }
    }

    /// A cgroup under the gate's own when one can be made there (tried: a probe cgroup is
    /// made and removed), else process groups and why.
    fn probe() -> Containment {
        match own_cgroup().and_then(|dir| try_cgroup(&dir).map(|()| dir)) {
            Ok(parent) => Containment::Cgroup { parent },
            Err(why) => Containment::ProcessGroups { why },
        }
    }
}

/// Where mako makes the files it names after its pid, `/dev/shm/mako<pid>` (its statistics)
/// and `/tmp/makoTemp<pid>` (its samples), which it opens without `O_EXCL` and through
/// links (`bindings/c/test/mako/mako.cpp`): anything another user put at a name is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MakoNames {
    /// mako runs in a mount namespace of its own with an empty tmpfs on `/dev/shm` and on
    /// `/tmp` ([`private_dirs`]): no other process can put anything there, and both go
    /// with mako's last process. Its paths reach the gate's files through [`outside`].
    Private,
    /// On the host's `/dev/shm` and `/tmp`: both names are made exclusively between fork
    /// and exec, and a mako whose names are taken is not started (`run::mako`).
    Claimed {
        /// Why no mount namespace is used.
        why: String,
    },
}

impl MakoNames {
    /// [`MakoNames::Private`] where a child can make the mount namespace (tried: `true`
    /// run in one, which needs `CAP_SYS_ADMIN`), else claimed and why; claimed too with
    /// [`CONTAINMENT_ENV`] `process-groups`, the fallback forced.
    pub fn for_host() -> MakoNames {
        use std::os::unix::process::CommandExt as _;
        if std::env::var(CONTAINMENT_ENV).is_ok_and(|v| v == "process-groups") {
            return MakoNames::Claimed {
                why: format!("{CONTAINMENT_ENV}=process-groups"),
            };
        }
        if outside_root().is_none() {
            return MakoNames::Claimed {
                why: "/proc/self/fd is not there to reach the gate's files from another mount \
                      namespace"
                    .into(),
            };
        }
        let mut probe = std::process::Command::new("true");
        // SAFETY: private_dirs makes only system calls (unshare, mount) on string literals.
        unsafe {
            probe.pre_exec(|| private_dirs().map_err(std::io::Error::from));
        }
        match probe.stderr(std::process::Stdio::null()).status() {
            Ok(s) if s.success() => MakoNames::Private,
            Ok(s) => MakoNames::Claimed {
                why: format!("`true` in a mount namespace of its own ended {s}"),
            },
            Err(e) => MakoNames::Claimed {
                why: format!("no mount namespace with a tmpfs of its own can be made: {e}"),
            },
        }
    }
}

/// In a child between fork and exec: a mount namespace of its own, no mount of which
/// propagates back, with an empty tmpfs (mode 1777, as the host's) on `/dev/shm` and
/// `/tmp`. Errors: the system call's (`EPERM` without `CAP_SYS_ADMIN`).
pub fn private_dirs() -> nix::Result<()> {
    use nix::mount::{mount, MsFlags};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)?;
    for dir in ["/dev/shm", "/tmp"] {
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(Some("tmpfs"), dir, Some("tmpfs"), flags, Some("mode=1777"))?;
    }
    Ok(())
}

/// The gate's root directory, open (`O_PATH`) without close-on-exec so that every child
/// has it: from a mount namespace of the child's own, `/proc/self/fd/<it>` leads through
/// the gate's mounts. `None` where it cannot be opened or `/proc/self/fd` is missing.
fn outside_root() -> Option<&'static str> {
    static ROOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        use nix::fcntl::OFlag;
        let fd = nix::fcntl::open(
            "/",
            OFlag::O_PATH | OFlag::O_DIRECTORY,
            nix::sys::stat::Mode::empty(),
        )
        .ok()?;
        let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
        let prefix = format!("/proc/self/fd/{fd}");
        Path::new(&prefix).join("proc").is_dir().then_some(prefix)
    })
    .as_deref()
}

/// `path` (absolute) as a child in a mount namespace of its own ([`MakoNames::Private`])
/// reaches what the gate reaches there, under `/dev/shm` and `/tmp` too: through the
/// gate's root directory, `/proc/self/fd/<fd>/<path>`, its links resolved first by the
/// gate (an absolute link would be followed in the child's namespace, where `/dev/shm`
/// and `/tmp` are others); a file not there yet by its directory. `path` itself where
/// that root is not available.
pub fn outside(path: &Path) -> PathBuf {
    let real = std::fs::canonicalize(path)
        .ok()
        .or_else(|| {
            let dir = std::fs::canonicalize(path.parent()?).ok()?;
            Some(dir.join(path.file_name()?))
        })
        .unwrap_or_else(|| path.to_path_buf());
    outside_as_named(&real)
}

/// [`outside`] without resolving links: the name a program is started by (its
/// `argv[0]`), which says where it was found.
pub fn outside_as_named(path: &Path) -> PathBuf {
    match outside_root() {
        Some(root) => {
            let mut through = std::ffi::OsString::from(root);
            through.push(path.as_os_str());
            PathBuf::from(through)
        }
        None => path.to_path_buf(),
    }
}

/// The gate's own cgroup v2 directory: its path in `/proc/self/cgroup` (`0::<path>`)
/// under the mount point of the cgroup2 file system in `/proc/self/mountinfo` (at
/// `/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a host with v1 controllers too).
fn own_cgroup() -> Result<PathBuf, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("the gate is in no cgroup v2 (/proc/self/cgroup has no 0:: line)")?;
    let mounts = procfs::process::Process::myself()
        .and_then(|p| p.mountinfo())
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mount = mounts
        .iter()
        .find(|m| m.fs_type == "cgroup2")
        .ok_or("no cgroup2 file system is mounted")?;
    // The mount may show a subtree (its root): the gate's cgroup is found beneath it.
    let below = Path::new(own)
        .strip_prefix(&mount.root)
        .map_err(|_| format!("the gate's cgroup {own} is not under the cgroup2 mount"))?;
    Ok(mount.mount_point.join(below))
}

/// Makes and removes a probe cgroup under `dir`, which must have `cgroup.kill` (Linux
/// 5.14); errors say why not.
fn try_cgroup(dir: &Path) -> Result<(), String> {
    // Unique per call: plans made at once in one process (tests) must not share a probe.
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!("{CGROUP_PREFIX}probe-{}-{n}", std::process::id()));
    std::fs::create_dir(&probe)
        .map_err(|e| format!("cannot make a cgroup in {}: {e}", dir.display()))?;
    let kill = probe.join("cgroup.kill").exists();
    let _ = std::fs::remove_dir(&probe);
    if kill {
        Ok(())
    } else {
        Err("the kernel has no cgroup.kill (Linux 5.14 or newer has)".into())
    }
}

/// A run's cgroup: made when the run starts, ended (every process in it killed) and
/// removed when dropped.
#[derive(Debug)]
pub struct RunCgroup {
    /// The cgroup's directory.
    pub path: PathBuf,
    /// Its `cgroup.procs`, open for writing: a child writes `0` into it between fork and
    /// exec to join the cgroup (`process::contain_children_in`).
    procs: Arc<OwnedFd>,
}

impl RunCgroup {
    /// Makes the cgroup `name` under `parent` (`name` starts with `perfgate-`). Errors:
    /// it exists already or cannot be made or opened.
    pub fn create(parent: &Path, name: &str) -> Result<RunCgroup> {
        let path = parent.join(name);
        std::fs::create_dir(&path)
            .with_context(|| format!("cannot make the run's cgroup {}", path.display()))?;
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(path.join("cgroup.procs"))
            .with_context(|| format!("cannot open {}/cgroup.procs", path.display()))?;
        Ok(RunCgroup {
            path,
            procs: Arc::new(procs.into()),
        })
    }

    /// The cgroup's `cgroup.procs`, open for writing.
    pub fn procs(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.procs)
    }

    /// From now on until it is dropped, every child `process::Child` starts joins this
    /// cgroup.
    pub fn contain_children(&self) {
        crate::process::contain_children_in(Some(self.procs()));
    }

    /// Kills every process in the cgroup ([`end_cgroup`]), which stays for more.
    pub fn end_all(&self) -> Vec<(u32, String)> {
        end_cgroup(&self.path)
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        crate::process::contain_children_in(None);
        end_cgroup(&self.path);
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// How long [`end_cgroup`] waits for the killed processes to be gone (the kernel kills
/// them at once; their exit takes milliseconds, more for one in uninterruptible I/O).
const KILL_WAIT: Duration = Duration::from_secs(10);

/// Kills every process in the cgroup `path` with `cgroup.kill` and waits (at most
/// [`KILL_WAIT`]) until `cgroup.events` says it is empty. Returns what was in it, as
/// `(pid, command line)`; nothing when it cannot be read (gone, or not a cgroup).
pub fn end_cgroup(path: &Path) -> Vec<(u32, String)> {
    let members: Vec<(u32, String)> = std::fs::read_to_string(path.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .map(|pid: u32| (pid, crate::process::command_line_of(pid)))
        .collect();
    if members.is_empty() {
        return members;
    }
    let _ = std::fs::write(path.join("cgroup.kill"), "1");
    let deadline = Instant::now() + KILL_WAIT;
    while populated(path) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    members
}

/// Whether the cgroup `path` still holds a process (`populated 1` in `cgroup.events`).
fn populated(path: &Path) -> bool {
    std::fs::read_to_string(path.join("cgroup.events"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "populated 1"))
}

/// Whether `path` is provably a run's cgroup, which a dead gate's reaper or the next gate
/// may end and remove: a directory of the cgroup2 file system named `perfgate-*`, not a
/// link. A path read back from a run dir is checked with this first.
pub fn is_run_cgroup(path: &Path) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(CGROUP_PREFIX));
    let dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir());
    let cgroup2 = nix::sys::statfs::statfs(path)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC);
    named && dir && cgroup2
}

/// Ends a dead gate's cgroup `path` and removes it, if it is provably a run's
/// ([`is_run_cgroup`]); what was in it, as `(pid, command line)`.
pub fn end_dead_runs_cgroup(path: &Path) -> Vec<(u32, String)> {
    if !is_run_cgroup(path) {
        return Vec::new();
    }
    let killed = end_cgroup(path);
    let _ = std::fs::remove_dir(path);
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This host's cgroup parent, or `None` (then the test has nothing to check).
    fn parent() -> Option<PathBuf> {
        match Containment::probe() {
            Containment::Cgroup { parent } => Some(parent),
            Containment::ProcessGroups { why } => {
                eprintln!("no cgroup here: {why}");
                None
            }
        }
    }

    #[test]
    fn cgroup_kill_ends_a_process_that_left_its_group_and_its_parent() {
        let Some(parent) = parent() else { return };
        let name = format!("perfgate-test-{}", std::process::id());
        let cgroup = RunCgroup::create(&parent, &name).unwrap();
        assert!(is_run_cgroup(&cgroup.path));
        // A setsid'ed double fork: its parent is gone, its group and session are its own.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg(r#"setsid -f sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 300' "$0""#)
            .arg(&pidfile);
        crate::process::join_cgroup(&mut cmd, cgroup.procs());
        assert!(cmd.status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pidfile.exists() {
            assert!(Instant::now() < deadline, "the escapee never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(crate::process::process_running(pid));
        let ended = cgroup.end_all();
        assert!(ended.iter().any(|(p, _)| *p == pid), "{ended:?}");
        assert!(!populated(&cgroup.path));
        let path = cgroup.path.clone();
        drop(cgroup);
        assert!(!path.exists(), "the run's cgroup is removed");
    }

    #[test]
    fn only_a_run_cgroup_is_ended() {
        let dir = tempfile::tempdir().unwrap();
        // A directory named like one, not in cgroup2: a path planted in a run dir.
        let fake = dir.path().join("perfgate-1-fake");
        std::fs::create_dir(&fake).unwrap();
        std::fs::write(fake.join("cgroup.procs"), "1\n").unwrap();
        assert!(!is_run_cgroup(&fake));
        assert!(end_dead_runs_cgroup(&fake).is_empty());
        assert!(fake.join("cgroup.procs").exists());
        if let Some(parent) = parent() {
            // The gate's own cgroup is not a run's, whatever it holds.
            assert!(!is_run_cgroup(&parent));
        }
    }
}
