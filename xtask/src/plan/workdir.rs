//! Plan stage, I/O shell: choose the work directory (RAM disk) the clusters run on.
//!
//! The data directory should be on tmpfs so that the storage server's CPU, not fsync
//! latency, bounds TPS (`contrib/mako_storage_bench.sh` uses `/mnt/ram`). tmpfs is
//! recognized by `statfs(2)`'s `f_type` (TMPFS_MAGIC), never by a path's name.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::sys::statfs::{statfs, TMPFS_MAGIC};
use serde::Serialize;

use crate::error::UsageError;

/// The chosen work directory and what its filesystem is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workdir {
    /// Directory under which each run makes its own subdirectory.
    #[serde(serialize_with = "crate::config::path_json::lossy")]
    pub path: PathBuf,
    /// Whether the filesystem is tmpfs (RAM disk).
    pub tmpfs: bool,
    /// Filesystem type from `statfs`: a name for the common ones (tmpfs, ext4, xfs, btrfs,
    /// overlay, nfs), else its magic number in hex.
    pub fs_type: String,
    /// Free space available to us, in bytes, when the run started.
    pub free_bytes: u64,
    /// Size of the filesystem, in bytes.
    pub total_bytes: u64,
    /// How it was chosen: `--workdir`, `/mnt/ram`, or `largest tmpfs mount`.
    pub chosen_by: String,
}

impl Workdir {
    /// `tmpfs` or `NOT tmpfs`, for reports.
    pub fn kind(&self) -> &'static str {
        if self.tmpfs {
            "tmpfs"
        } else {
            "NOT tmpfs"
        }
    }
}

/// Reads the filesystem facts of `path` (which must exist).
pub fn inspect(path: &Path, chosen_by: &str) -> Result<Workdir> {
    let st = statfs(path).with_context(|| format!("cannot statfs work dir {}", path.display()))?;
    let block = st.block_size() as u64;
    Ok(Workdir {
        path: path.to_path_buf(),
        tmpfs: st.filesystem_type() == TMPFS_MAGIC,
        fs_type: fs_name(st.filesystem_type().0 as i64),
        free_bytes: st.blocks_available() as u64 * block,
        total_bytes: st.blocks() as u64 * block,
        chosen_by: chosen_by.to_string(),
    })
}

/// A readable name for a `statfs` `f_type` (linux/magic.h).
fn fs_name(magic: i64) -> String {
    match magic {
        0x0102_1994 => "tmpfs".into(),
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlay".into(),
        0x6969 => "nfs".into(),
        other => format!("{other:#x}"),
    }
}

/// Chooses the work dir: `explicit` when given (created if missing), else `/mnt/ram` when
/// writable, else the writable tmpfs mount (from `/proc/self/mounts`, checked by statfs)
/// with the most free space. Errors when nothing usable exists, naming `--workdir`.
pub fn choose(explicit: Option<&Path>) -> Result<Workdir> {
    if let Some(path) = explicit {
        if path.exists() && !path.is_dir() {
            return Err(UsageError(format!(
                "work dir {} (--workdir, PERFGATE_WORKDIR or WORKDIR) is not a directory",
                path.display()
            ))
            .into());
        }
        if !path.exists() {
            // One level only: a typo must not grow a tree of directories on the wrong disk.
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if parent.is_some_and(|p| !p.is_dir()) {
                return Err(UsageError(format!(
                    "work dir {} (--workdir, PERFGATE_WORKDIR or WORKDIR) does not exist, nor does its parent: \
                     create it, e.g. mount a RAM disk there (`mount -t tmpfs -o size=8g tmpfs \
                     DIR`)",
                    path.display()
                ))
                .into());
            }
        }
        let what = "work dir (--workdir, PERFGATE_WORKDIR or WORKDIR)";
        // Created only when missing; another user's directory, or one reached through a
        // link, is refused: root would run clusters and delete files where they point.
        let root = crate::files::Root::create(what, path, 0o755)?;
        ensure_writable(root.path())?;
        let path = root.path().to_path_buf();
        return inspect(&path, "--workdir, PERFGATE_WORKDIR or WORKDIR");
    }
    let ram = Path::new("/mnt/ram");
    if ram.is_dir() && trusted(ram) && ensure_writable(ram).is_ok() {
        return inspect(ram, "/mnt/ram");
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let best = tmpfs_mount_points(&mounts)
        .into_iter()
        .filter(|p| trusted(p) && ensure_writable(p).is_ok())
        .filter_map(|p| inspect(&p, "largest tmpfs mount").ok())
        .filter(|w| w.tmpfs)
        .max_by_key(|w| w.free_bytes);
    best.context(
        "no RAM disk found: /mnt/ram is missing or read-only and no writable tmpfs is mounted; \
         mount one (e.g. `mount -t tmpfs -o size=8g tmpfs /mnt/ram`) or name a directory \
         with --workdir (a disk-backed one gives disk-bound, invalid TPS)",
    )
}

/// Whether the gate may work in `dir`: a directory of root's or this user's, not
/// writable by others unless sticky ([`crate::files::Root`]); a mount point of another
/// user's is not chosen.
fn trusted(dir: &Path) -> bool {
    crate::files::Root::open("work dir", dir).is_ok()
}

/// Mount points whose type is tmpfs in a `/proc/self/mounts` text (octal escapes decoded).
fn tmpfs_mount_points(mounts: &str) -> Vec<PathBuf> {
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_dev, point, fstype) = (fields.next()?, fields.next()?, fields.next()?);
            (fstype == "tmpfs").then(|| PathBuf::from(unescape_mount_point(point)))
        })
        .collect()
}

/// `/proc/mounts` writes space, tab, newline and backslash as `\040`-style octal.
fn unescape_mount_point(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn ensure_writable(dir: &Path) -> Result<()> {
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .with_context(|| format!("work dir {} is not writable", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_work_dir_is_a_directory_and_grows_one_level_at_most() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = choose(Some(&file)).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        assert!(err.to_string().contains("is not a directory"), "{err:#}");
        let deep = t.path().join("a/b");
        let err = choose(Some(&deep)).unwrap_err();
        assert!(err.to_string().contains("nor does its parent"), "{err:#}");
        assert!(!t.path().join("a").exists(), "nothing was created");
        let one = t.path().join("ram");
        assert_eq!(
            choose(Some(&one)).unwrap().path,
            one.canonicalize().unwrap()
        );
    }

    #[test]
    fn tmpfs_mount_points_come_from_the_type_column() {
        let mounts = "\
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
/dev/vda / ext4 rw,relatime 0 0
none /mnt/my\\040ram tmpfs rw 0 0
tmpfs-look-alike /data ext4 rw 0 0
";
        assert_eq!(
            tmpfs_mount_points(mounts),
            [PathBuf::from("/dev/shm"), PathBuf::from("/mnt/my ram")]
        );
    }

    #[test]
    fn statfs_tells_tmpfs_from_disk() {
        // /dev/shm is tmpfs on Linux hosts with POSIX shared memory; a temp dir under the
        // target dir is on the build disk. Skip the tmpfs half where /dev/shm is absent.
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let w = inspect(disk.path(), "test").unwrap();
        assert!(!w.tmpfs || w.fs_type == "tmpfs");
        if Path::new("/dev/shm").is_dir() {
            let shm = inspect(Path::new("/dev/shm"), "test").unwrap();
            assert!(shm.tmpfs && shm.fs_type == "tmpfs", "{shm:?}");
            assert!(shm.total_bytes > 0);
        }
    }
}
