//! The one way the gate creates, writes and removes files, below every stage.
//!
//! The gate runs as root on shared hosts and works in world-writable places (`/dev/shm`,
//! `/tmp`, a RAM disk others use), where another user can plant a link, a FIFO or a
//! directory of theirs at any name the gate will use. Everything it changes on disk is
//! therefore done beneath a [`Root`]: a directory opened once as a descriptor and proven
//! safe before use. A root, and every directory on the way to it, is owned by root or by
//! the gate's user and is not writable by anyone else unless it is sticky (like `/tmp`,
//! where others may add entries but not rename or remove ours); the root itself is never
//! reached through a link in its last component. Beneath a root every operation resolves
//! relative to the root's descriptor (`cap-std`: `openat2` with `RESOLVE_BENEATH` where
//! the kernel has it, else a walk with `O_NOFOLLOW` at each step), files are created
//! exclusively or replaced by a rename of a file the gate just created, and an entry of a
//! sticky root is opened or removed only when it is a real file or directory of a trusted
//! owner (in a sticky directory nobody else can swap it afterwards).
//!
//! `cap-std` rather than `openat2` by hand: it is the maintained crate for exactly this
//! (descriptor-relative resolution that never leaves its directory, a fallback for
//! kernels without `openat2`, link-safe `remove_dir_all`), and what it leaves open (a link
//! beneath a root that points elsewhere beneath it) cannot be planted by another user in
//! a root whose directories only trusted users can write.
//!
//! `tests/it/layout.rs` fails on a raw `std::fs` create, write, rename or remove anywhere
//! else in the gate.

use std::{
    io::Write as _,
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    path::{Component, Path, PathBuf},
};

use anyhow::{Context, Result};
use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::{ambient_authority, fs::Dir};

use crate::error::UsageError;

/// A directory the gate may change: opened as a descriptor, and proven to be owned by
/// root or the gate's user and not writable by others unless sticky, as is every
/// directory on its way from `/`. Paths given to its methods are relative to it, have no
/// `..`, and never leave it.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    path: PathBuf,
    sticky: bool,
}

/// What [`untrusted`] reads of a directory: its owner, group and mode (`st_mode`, type
/// bits included).
struct Owner {
    uid: u32,
    gid: u32,
    mode: u32,
}

impl Owner {
    fn of(meta: &std::fs::Metadata) -> Owner {
        Owner {
            uid: meta.uid(),
            gid: meta.gid(),
            mode: meta.mode(),
        }
    }
}

/// Why a directory cannot be a [`Root`], or `None` when it can: `meta` is the directory's
/// own metadata (not a link's).
fn untrusted(meta: &Owner) -> Option<String> {
    let me = nix::unistd::geteuid().as_raw();
    let mode = meta.mode;
    if mode & nix::libc::S_IFMT != nix::libc::S_IFDIR {
        return Some("it is not a directory".into());
    }
    if !crate::input::trusted_owner(meta.uid) {
        return Some(format!(
            "it is owned by uid {}, neither root nor this user (uid {me}), who could \
             redirect what the gate writes there",
            meta.uid
        ));
    }
    if crate::input::others_may_write(mode, meta.gid) && mode & 0o1000 == 0 {
        return Some(format!(
            "it is writable by other users (mode {:o}) and not sticky, so they could \
             replace what the gate puts there",
            mode & 0o7777
        ));
    }
    None
}

/// The refusal of `path` (the value of `what`, e.g. `--out`) for `why`.
fn refuse(what: &str, path: &Path, why: &str) -> anyhow::Error {
    UsageError(format!(
        "{what} {}: {why}; give a directory of your own (owned by root or by you, not \
         writable by others unless sticky, reached without a symbolic link)",
        path.display()
    ))
    .into()
}

/// Why the entry `meta` (at `at`, the last one of a path when `last`) makes a path
/// untrusted, or `None`: a directory by [`untrusted`]'s rules; a file by the same owner and
/// write bits, its type aside.
fn entry_untrusted(meta: &std::fs::Metadata, at: &Path, last: bool) -> Option<String> {
    let mut owner = Owner::of(meta);
    if !meta.is_dir() {
        owner.mode = (owner.mode & 0o7777) | nix::libc::S_IFDIR;
    }
    let why = untrusted(&owner)?;
    Some(if last {
        why
    } else {
        format!("{} on its way: {why}", at.display())
    })
}

/// Resolves `path` one component at a time from `/`, as the kernel does, checking every
/// directory passed through and every link followed: a directory must pass [`untrusted`],
/// a link must be root's or this user's (it lies in a trusted directory, so nobody else
/// can replace it). `follow_last`: a link as the last component is followed (what the gate
/// runs) or refused (a directory it writes into). Returns the path without links, or why
/// another user could redirect it; errors when a component cannot be read.
fn resolve(path: &Path, follow_last: bool) -> Result<std::result::Result<PathBuf, String>> {
    let abs =
        std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let parts = |p: &Path| -> Vec<std::ffi::OsString> {
        p.components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect()
    };
    let mut todo = parts(&abs);
    let mut real = PathBuf::from("/");
    let root_meta = std::fs::symlink_metadata(&real)?;
    if let Some(why) = entry_untrusted(&root_meta, &real, todo.is_empty()) {
        return Ok(Err(why));
    }
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&part);
        let meta = std::fs::symlink_metadata(&next)
            .with_context(|| format!("cannot inspect {}", next.display()))?;
        let last = todo.is_empty();
        if meta.is_symlink() {
            if last && !follow_last {
                return Ok(Err("it is a symbolic link".into()));
            }
            if !crate::input::trusted_owner(meta.uid()) {
                return Ok(Err(format!(
                    "{} on its way is a symbolic link of uid {}, who could point it anywhere",
                    next.display(),
                    meta.uid()
                )));
            }
            links += 1;
            anyhow::ensure!(links <= 40, "too many links resolving {}", path.display());
            let target = std::fs::read_link(&next)?;
            if target.is_absolute() {
                real = PathBuf::from("/");
            }
            todo.extend(parts(&target));
            continue;
        }
        if let Some(why) = entry_untrusted(&meta, &next, last) {
            return Ok(Err(why));
        }
        real = next;
    }
    Ok(Ok(real))
}

/// Errors unless `path` (a file or directory, its links followed) and every directory and
/// link on its way are owned by root or this user and writable by nobody else (sticky
/// directories on the way excepted): for what the gate reads or runs rather than writes,
/// such as the binaries of a build tree a record names. Returns the path without links,
/// which is the one to use (no other user can change what it names). Errors: a
/// [`UsageError`] naming `what`.
pub fn check_trusted(what: &str, path: &Path) -> Result<PathBuf> {
    resolve(path, true)?
        .map_err(|why| UsageError(format!("{what} {}: {why}", path.display())).into())
}

/// [`check_trusted`] for a directory whose every file the gate takes as written by a
/// trusted user (results, records, a build tree): it must not be shared either, sticky or
/// not, as anyone may put files into a sticky directory. Errors: a [`UsageError`] naming
/// `what`.
pub fn check_private(what: &str, path: &Path) -> Result<PathBuf> {
    let real = check_trusted(what, path)?;
    let meta = std::fs::metadata(&real)
        .with_context(|| format!("cannot inspect {what} {}", path.display()))?;
    match shared(&Owner::of(&meta)) {
        Some(why) => Err(UsageError(format!("{what} {}: {why}", path.display())).into()),
        None => Ok(real),
    }
}

/// Why a directory others may add files to (sticky or not) cannot hold what the gate
/// takes as its own, or `None`.
fn shared(meta: &Owner) -> Option<String> {
    crate::input::others_may_write(meta.mode, meta.gid).then(|| {
        format!(
            "it is writable by other users (mode {:o}), who could put files of theirs there \
             (sticky or not); give a directory only you (or root) can write",
            meta.mode & 0o7777
        )
    })
}

/// `rel` as a path beneath a root: relative, no `..`, not empty.
fn beneath(rel: &Path) -> Result<&Path> {
    let ok = !rel.as_os_str().is_empty()
        && rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    anyhow::ensure!(
        ok,
        "{} is not a path beneath a directory of the gate's (relative, without ..)",
        rel.display()
    );
    Ok(rel)
}

impl Root {
    /// Opens the existing directory `path` as a root. `what` names it in errors (`--out`,
    /// `work dir`). Errors: a [`UsageError`] when it is a link, not a directory, or it or a
    /// directory on its way is owned by another user or writable by others and not
    /// sticky; an I/O error when it cannot be opened.
    pub fn open(what: &str, path: &Path) -> Result<Root> {
        let real = resolve(path, false)
            .with_context(|| format!("cannot open {what} {}", path.display()))?
            .map_err(|why| refuse(what, path, &why))?;
        let dir = Dir::open_ambient_dir(&real, ambient_authority())
            .with_context(|| format!("cannot open {what} {}", path.display()))?;
        Self::checked(what, dir, real)
    }

    /// A root of `dir` (opened from `path`) once its own metadata, read from the
    /// descriptor, passes: what was opened is what was checked, whatever moved since.
    fn checked(what: &str, dir: Dir, path: PathBuf) -> Result<Root> {
        use std::os::fd::AsFd as _;
        let st = nix::sys::stat::fstat(dir.as_fd())
            .with_context(|| format!("cannot inspect {}", path.display()))?;
        let owner = Owner {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode,
        };
        if let Some(why) = untrusted(&owner) {
            return Err(refuse(what, &path, &why));
        }
        let sticky = owner.mode & 0o1000 != 0;
        Ok(Root { dir, path, sticky })
    }

    /// [`Root::open`] of a directory whose files the gate takes as its own (a results
    /// dir): not writable by other users even when sticky. Errors as [`Root::open`].
    pub fn open_private(what: &str, path: &Path) -> Result<Root> {
        use std::os::fd::AsFd as _;
        let root = Self::open(what, path)?;
        let st = nix::sys::stat::fstat(root.dir.as_fd())
            .with_context(|| format!("cannot inspect {}", path.display()))?;
        let owner = Owner {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode,
        };
        match shared(&owner) {
            Some(why) => Err(UsageError(format!("{what} {}: {why}", path.display())).into()),
            None => Ok(root),
        }
    }

    /// Opens `path` as a root, creating it (and missing directories above it, each
    /// checked as it would be opened) with `mode` when missing. Errors as [`Root::open`].
    pub fn create(what: &str, path: &Path, mode: u32) -> Result<Root> {
        let abs = std::path::absolute(path)
            .with_context(|| format!("cannot resolve {what} {}", path.display()))?;
        if std::fs::symlink_metadata(&abs).is_ok() {
            return Self::open(what, &abs);
        }
        let Some(parent) = abs.parent() else {
            return Self::open(what, &abs);
        };
        let name = abs
            .file_name()
            .context("a directory to create has a name")?;
        let up = Self::create(what, parent, mode)?;
        up.create_dir(name, mode)
    }

    /// The root's absolute path without links, for children (servers, mako) that take
    /// paths, and for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `rel` beneath the root, as a path.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    /// Errors unless the entry `rel` (which must exist) of a sticky root is a real file or directory of a
    /// trusted owner (others may have planted anything there); beneath a root that is not
    /// sticky, only trusted users could have put it there.
    pub fn check_entry(&self, rel: &Path) -> Result<()> {
        if !self.sticky {
            return Ok(());
        }
        let meta = self
            .dir
            .symlink_metadata(rel)
            .with_context(|| format!("cannot inspect {}", self.join(rel).display()))?;
        let me = nix::unistd::geteuid().as_raw();
        use cap_std::fs::MetadataExt as _;
        let owner_ok = meta.uid() == 0 || meta.uid() == me;
        let kind_ok = meta.is_dir() || meta.is_file();
        anyhow::ensure!(
            owner_ok && kind_ok,
            "{} is not the gate's: another user's file, a link or a special file is there \
             (left alone)",
            self.join(rel).display()
        );
        Ok(())
    }

    /// Opens the existing directory `rel` as a root of its own. Errors: it is a link, not
    /// a directory, or not trusted ([`Root::open`]'s rules).
    pub fn dir(&self, rel: impl AsRef<Path>) -> Result<Root> {
        let rel = beneath(rel.as_ref())?;
        let path = self.join(rel);
        self.check_entry(rel)?;
        let dir = self
            .dir
            .open_dir_nofollow(rel)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Self::checked("directory", dir, path)
    }

    /// Creates the directory `rel` (and missing ones on its way) with `mode` unless it is
    /// there, and opens it as a root.
    pub fn create_dir(&self, rel: impl AsRef<Path>, mode: u32) -> Result<Root> {
        let rel = beneath(rel.as_ref())?;
        let mut so_far = PathBuf::new();
        for part in rel.components() {
            so_far.push(part);
            let mut builder = cap_std::fs::DirBuilder::new();
            cap_std::fs::DirBuilderExt::mode(&mut builder, mode);
            match self.dir.create_dir_with(&so_far, &builder) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                other => other
                    .with_context(|| format!("cannot create {}", self.join(&so_far).display()))?,
            }
        }
        self.dir(rel)
    }

    /// Creates the directory `name` with `mode` only if nothing is there (`mkdirat`
    /// fails on anything planted), and opens it: `None` when the name is taken.
    pub fn create_dir_new(&self, name: impl AsRef<Path>, mode: u32) -> Result<Option<Root>> {
        let name = beneath(name.as_ref())?;
        let mut builder = cap_std::fs::DirBuilder::new();
        cap_std::fs::DirBuilderExt::mode(&mut builder, mode);
        match self.dir.create_dir_with(name, &builder) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
            Err(e) => {
                Err(e).with_context(|| format!("cannot create {}", self.join(name).display()))
            }
            Ok(()) => self.dir(name).map(Some),
        }
    }

    fn open_with(&self, rel: &Path, opts: &mut cap_std::fs::OpenOptions) -> Result<std::fs::File> {
        let rel = beneath(rel)?;
        opts.follow(FollowSymlinks::No);
        let file = self
            .dir
            .open_with(rel, opts)
            .with_context(|| format!("cannot create {}", self.join(rel).display()))?;
        Ok(file.into_std())
    }

    /// Creates the file `rel` for writing; fails if anything is there (`O_EXCL`).
    pub fn create_new(&self, rel: impl AsRef<Path>) -> Result<std::fs::File> {
        self.open_with(
            rel.as_ref(),
            cap_std::fs::OpenOptions::new().write(true).create_new(true),
        )
    }

    /// Opens the regular file `rel` for appending (and reading), creating it when
    /// missing; a link or special file there is refused (`O_NOFOLLOW`, and a check of
    /// what was opened).
    pub fn append(&self, rel: impl AsRef<Path>) -> Result<std::fs::File> {
        self.open_regular(
            rel.as_ref(),
            cap_std::fs::OpenOptions::new().read(true).append(true),
        )
    }

    /// Creates the regular file `rel` for writing, or empties the one there (a child's
    /// output file); a link or special file there is refused.
    pub fn create_file(&self, rel: impl AsRef<Path>) -> Result<std::fs::File> {
        self.open_regular(
            rel.as_ref(),
            cap_std::fs::OpenOptions::new().write(true).truncate(true),
        )
    }

    fn open_regular(
        &self,
        rel: &Path,
        opts: &mut cap_std::fs::OpenOptions,
    ) -> Result<std::fs::File> {
        if self.dir.symlink_metadata(rel).is_ok() {
            self.check_entry(rel)?;
        }
        opts.create(true);
        // Not blocked by a FIFO planted at the name.
        cap_std::fs::OpenOptionsExt::custom_flags(opts, nix::libc::O_NONBLOCK);
        let file = self.open_with(rel, opts)?;
        let meta = file.metadata()?;
        anyhow::ensure!(
            meta.is_file(),
            "cannot write {}: it is not a regular file (the gate writes only regular files)",
            self.join(rel).display()
        );
        Ok(file)
    }

    /// Writes `bytes` to the file `rel` through a temporary file and a rename, so a reader
    /// never sees half a file. Replaces a regular file and nothing else: a link, device,
    /// FIFO or directory at `rel` is refused and left as it was.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        let rel = beneath(rel.as_ref())?;
        let path = self.join(rel);
        if self.dir.symlink_metadata(rel).is_ok() {
            // The root's directories are trusted: its path names what its descriptor does.
            if let Some(kind) = not_a_regular_file(&path) {
                anyhow::bail!(
                    "cannot write {}: {kind} is there, and the gate writes only regular \
                     files (choose another path)",
                    path.display()
                );
            }
            self.check_entry(rel)?;
        }
        let (parent, name) = match (rel.parent(), rel.file_name()) {
            (Some(p), Some(n)) if !p.as_os_str().is_empty() => (Some(self.dir(p)?), n),
            (_, Some(n)) => (None, n),
            _ => anyhow::bail!("{} names no file", path.display()),
        };
        let dir = parent.as_ref().unwrap_or(self);
        let mut tmp = cap_tempfile::TempFile::new(&dir.dir)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mode = 0o666 & !umask();
        tmp.as_file()
            .set_permissions(cap_std::fs::Permissions::from_std(
                std::fs::Permissions::from_mode(mode),
            ))
            .and_then(|()| tmp.as_file_mut().write_all(bytes))
            .and_then(|()| tmp.replace(name))
            .map_err(|e| io_context(e, &path))
    }

    /// Removes the file (or link) `rel`; a missing one is not an error.
    pub fn remove_file(&self, rel: impl AsRef<Path>) -> Result<()> {
        let rel = beneath(rel.as_ref())?;
        if self.dir.symlink_metadata(rel).is_err() {
            return Ok(());
        }
        self.check_entry(rel)?;
        self.dir
            .remove_file_or_symlink(rel)
            .with_context(|| format!("cannot remove {}", self.join(rel).display()))
    }

    /// Removes the directory `rel` and everything in it, never following a link inside
    /// it; a missing one is not an error.
    pub fn remove_dir_all(&self, rel: impl AsRef<Path>) -> Result<()> {
        let rel = beneath(rel.as_ref())?;
        match self.dir.symlink_metadata(rel) {
            Err(_) => return Ok(()),
            Ok(m) if m.is_symlink() => return self.remove_file(rel),
            Ok(_) => {}
        }
        self.check_entry(rel)?;
        self.dir
            .remove_dir_all(rel)
            .with_context(|| format!("cannot remove {}", self.join(rel).display()))
    }

    /// Removes the empty directory `rel`; `false` when it is not empty or missing.
    pub fn remove_dir(&self, rel: impl AsRef<Path>) -> bool {
        beneath(rel.as_ref())
            .is_ok_and(|rel| self.check_entry(rel).is_ok() && self.dir.remove_dir(rel).is_ok())
    }
}

/// The process's umask, read without changing it for good (there is no getter).
fn umask() -> u32 {
    use nix::sys::stat::{umask, Mode};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
}

/// What is at `path` if it is there and not a regular file (not following a symlink):
/// "a symlink", "a directory", "a FIFO", "a device", "a socket"; `None` for a regular file
/// or nothing.
pub fn not_a_regular_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = std::fs::symlink_metadata(path).ok()?.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_symlink() {
        "a symlink"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "a socket"
    })
}

/// An I/O error writing `path`, with a hint when the filesystem is full.
fn io_context(e: std::io::Error, path: &Path) -> anyhow::Error {
    use std::io::ErrorKind::{QuotaExceeded, StorageFull};
    let hint = if matches!(e.kind(), StorageFull | QuotaExceeded) {
        format!(
            " (the filesystem of {} is full, or the user's quota is spent: free space there, \
             or give a path on another filesystem; what was written before is kept)",
            path.parent().unwrap_or(path).display()
        )
    } else {
        String::new()
    };
    anyhow::Error::new(e).context(format!("cannot write {}{hint}", path.display()))
}

/// The root that holds the file `path` (its directory, `.` for a bare name) and the
/// file's name: for the path-taking helpers below.
fn root_of(what: &str, path: &Path) -> Result<(Root, PathBuf)> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok((Root::open(what, dir)?, PathBuf::from(name)))
}

/// Writes `text` to `path` atomically ([`Root::write`] in its directory, which must be a
/// root). `what` names the directory in a refusal.
pub fn write(what: &str, path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    let (root, name) = root_of(what, path)?;
    root.write(name, text.as_ref())
}

/// Creates `path` with `text`; fails if anything is there ([`Root::create_new`]).
pub fn create_new(what: &str, path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    let (root, name) = root_of(what, path)?;
    root.create_new(&name)?
        .write_all(text.as_ref())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Opens `path` for appending ([`Root::append`]).
pub fn append(what: &str, path: &Path) -> Result<std::fs::File> {
    let (root, name) = root_of(what, path)?;
    root.append(name)
}

/// Creates or empties the regular file `path` ([`Root::create_file`]).
pub fn create(what: &str, path: &Path) -> Result<std::fs::File> {
    let (root, name) = root_of(what, path)?;
    root.create_file(name)
}

/// Creates the directory `path` and missing ones above it, or opens it ([`Root::create`]).
pub fn create_dir_all(what: &str, path: &Path) -> Result<Root> {
    Root::create(what, path, 0o755)
}

/// Copies the regular file `from` (opened as any input: [`crate::input::open`]) to `to`
/// ([`Root::create_file`]), keeping its permission bits (an executable stays one). Returns the
/// bytes copied.
pub fn copy(what: &str, from: &Path, to: &Path) -> Result<u64> {
    let mut src =
        crate::input::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut dst = create(what, to)?;
    let bytes = std::io::copy(&mut src, &mut dst)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    let mode = src.metadata()?.permissions().mode() & 0o777;
    dst.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(bytes)
}

/// Removes the file `path` if it is there ([`Root::remove_file`]).
pub fn remove_file(what: &str, path: &Path) -> Result<()> {
    let (root, name) = root_of(what, path)?;
    root.remove_file(name)
}

/// Removes the directory `path` and all in it if it is there ([`Root::remove_dir_all`]).
pub fn remove_dir_all(what: &str, path: &Path) -> Result<()> {
    let (root, name) = root_of(what, path)?;
    root.remove_dir_all(name)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{symlink, PermissionsExt as _};

    use super::*;

    const NOBODY: u32 = 65534;

    /// A fresh directory with `mode` (the tests run as root, as the gate does in CI).
    fn dir_with(parent: &Path, name: &str, mode: u32) -> PathBuf {
        let d = parent.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    }

    fn give_to_nobody(p: &Path) {
        std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }

    fn refusal(r: Result<Root>) -> String {
        let e = r.unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some(), "{e:#}");
        e.to_string()
    }

    #[test]
    fn a_root_is_refused_when_another_user_could_redirect_it() {
        let tmp = tempfile::tempdir().unwrap();
        let theirs = dir_with(tmp.path(), "theirs", 0o755);
        give_to_nobody(&theirs);
        let e = refusal(Root::open("--out", &theirs));
        assert!(
            e.starts_with("--out ") && e.contains("owned by uid 65534"),
            "{e}"
        );
        // Ours, but inside theirs: they can rename it and put a link in its place.
        let inside = dir_with(&theirs, "ours", 0o755);
        let e = refusal(Root::open("--workdir", &inside));
        assert!(e.contains("on its way") && e.contains("65534"), "{e}");
        let open = dir_with(tmp.path(), "open", 0o777);
        assert!(refusal(Root::open("--out", &open)).contains("mode 777"));
        let link = tmp.path().join("link");
        symlink(tmp.path(), &link).unwrap();
        assert!(refusal(Root::open("--out", &link)).contains("symbolic link"));
        // A sticky shared directory (like /tmp or /dev/shm) and our own are roots.
        let shared = dir_with(tmp.path(), "shm", 0o1777);
        assert!(Root::open("work dir", &shared).unwrap().sticky);
        assert!(!Root::open("--out", tmp.path()).unwrap().sticky);
        // Creating below theirs is refused before anything is made.
        let e = refusal(Root::create("--out", &theirs.join("new/out"), 0o755));
        assert!(e.contains("65534"), "{e}");
        assert!(!theirs.join("new").exists());
        let made = Root::create("--out", &tmp.path().join("a/b"), 0o755).unwrap();
        assert!(made.path().ends_with("a/b") && made.path().is_dir());
    }

    #[test]
    fn a_link_of_another_user_anywhere_on_the_way_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = dir_with(tmp.path(), "shm", 0o1777);
        let mine = dir_with(tmp.path(), "mine", 0o755);
        std::fs::create_dir(mine.join("sub")).unwrap();
        std::fs::write(mine.join("sub/j.xml"), "keep").unwrap();
        // Their link, two levels above the last component, to a directory of root's
        // that has the right names in it.
        let theirs = shared.join("link");
        symlink(&mine, &theirs).unwrap();
        give_to_nobody(&theirs);
        let e = refusal(Root::open("--out", &theirs.join("sub")));
        assert!(e.contains("symbolic link of uid 65534"), "{e}");
        assert!(refusal(Root::create("--out", &theirs.join("sub/new"), 0o755)).contains("65534"));
        assert!(!mine.join("sub/new").exists());
        assert!(write("--junit", &theirs.join("sub/j.xml"), "x").is_err());
        assert_eq!(
            std::fs::read_to_string(mine.join("sub/j.xml")).unwrap(),
            "keep"
        );
        // What the gate runs: a binary reached through their link is refused too.
        let e = check_trusted("the tree", &theirs.join("sub/j.xml")).unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some() && e.to_string().contains("65534"));
        // The same link made by root is followed, and the real path is what is used.
        let ours = shared.join("ours");
        symlink(&mine, &ours).unwrap();
        let real = std::fs::canonicalize(&mine).unwrap();
        assert_eq!(
            check_trusted("the tree", &ours.join("sub/j.xml")).unwrap(),
            real.join("sub/j.xml")
        );
        assert_eq!(
            Root::open("--out", &ours.join("sub")).unwrap().path(),
            real.join("sub")
        );
        assert_eq!(
            check_trusted("x", &ours.join("sub/../sub")).unwrap(),
            real.join("sub")
        );
    }

    #[test]
    fn nothing_planted_in_a_shared_directory_is_written_through_or_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = dir_with(tmp.path(), "shm", 0o1777);
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let root = Root::open("work dir", &shared).unwrap();
        // Their link at a name the gate uses, and their own file.
        let link = shared.join("probe");
        symlink(&victim, &link).unwrap();
        give_to_nobody(&link);
        let theirs = shared.join("their-file");
        std::fs::write(&theirs, "theirs").unwrap();
        give_to_nobody(&theirs);
        assert!(root.create_new("probe").is_err());
        assert!(root.write("probe", b"x").is_err());
        assert!(root.append("probe").is_err());
        assert!(root.remove_file("probe").is_err());
        assert!(root.remove_file("their-file").is_err());
        assert!(root.remove_dir_all("their-file").is_err());
        assert!(root.dir("probe").is_err());
        assert!(root.create_dir_new("probe", 0o700).unwrap().is_none());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs");
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        // Their directory is not a root of ours either.
        let their_dir = dir_with(&shared, "perfgate-1-cafe", 0o700);
        give_to_nobody(&their_dir);
        assert!(root.dir("perfgate-1-cafe").is_err());
        assert!(root.remove_dir_all("perfgate-1-cafe").is_err());
        assert!(their_dir.is_dir());
        // What the gate made there is its own.
        let run = root
            .create_dir_new("perfgate-2-beef", 0o700)
            .unwrap()
            .unwrap();
        run.write("f", b"1").unwrap();
        root.remove_dir_all("perfgate-2-beef").unwrap();
        assert!(!shared.join("perfgate-2-beef").exists());
    }

    #[test]
    fn writes_replace_regular_files_only_and_removal_never_follows_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::open("--out", tmp.path()).unwrap();
        root.write("a.json", b"one").unwrap();
        root.write("a.json", b"two").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("a.json")).unwrap(), b"two");
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("v"), "keep").unwrap();
        symlink(victim.path().join("v"), tmp.path().join("l.xml")).unwrap();
        nix::unistd::mkfifo(&tmp.path().join("f.xml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        for (name, kind) in [("l.xml", "a symlink"), ("f.xml", "a FIFO")] {
            let e = root.write(name, b"x").unwrap_err().to_string();
            assert!(e.contains(kind), "{e}");
        }
        assert!(root.append("f.xml").is_err(), "a FIFO is not appended to");
        // A directory holding a link to elsewhere: the link goes, its target stays.
        let sub = root.create_dir("trials/01", 0o755).unwrap();
        symlink(victim.path(), sub.join("away")).unwrap();
        root.remove_dir_all("trials").unwrap();
        assert_eq!(
            std::fs::read_to_string(victim.path().join("v")).unwrap(),
            "keep"
        );
        // Nothing escapes the root by its spelling.
        for bad in ["../x", "/etc/x", ""] {
            assert!(root.write(bad, b"x").is_err(), "{bad}");
        }
        // Files are created as a plain create would make them, not 0600.
        let mode = std::fs::metadata(tmp.path().join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o666 & !umask());
    }
}
