//! Reading files the gate did not write, below every stage: profiles, SLO and baseline
//! files, saved runs, build trees (`CMakeCache.txt`, binaries) and children's output.
//!
//! Any of them may be a FIFO (an open blocks until a writer comes, ignoring signals), a
//! device such as `/dev/zero` (endless) or far larger than any real one. Every read here
//! opens with `O_NONBLOCK`, so it never blocks, checks on the open descriptor that the file
//! is a regular file, and refuses one larger than [`MAX_BYTES`] before reading it. Symbolic
//! links the user gave are followed (a baseline may be a link to another); the check is on
//! what they lead to.

use std::{
    fs::File,
    io::Read,
    os::unix::fs::{FileTypeExt, OpenOptionsExt},
    path::Path,
};

/// The largest file the gate reads whole, bytes (64 MiB): a results dir's `trials.json` of
/// 10,000 trials or a `CMakeCache.txt` is a few MiB at most.
pub const MAX_BYTES: u64 = 64 << 20;

/// Opens `path` for reading, never blocking, and only when it is a regular file.
///
/// Errors (`std::io::Error`, kind `InvalidInput` for the last two): it cannot be opened,
/// or it is a directory, FIFO, socket or device (the message names which).
pub fn open(path: &Path) -> std::io::Result<File> {
    open_flags(path, nix::fcntl::OFlag::O_NONBLOCK)
}

/// [`open`] refusing a symbolic link as the last component (`O_NOFOLLOW`): for a file
/// the gate wrote itself (a saved run's `trials.json`), which is never a link, so that
/// another user's link there cannot make root read a file only root may read.
pub fn open_no_link(path: &Path) -> std::io::Result<File> {
    open_flags(
        path,
        nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW,
    )
}

fn open_flags(path: &Path, flags: nix::fcntl::OFlag) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file", kind_of(kind)),
    ))
}

/// What a file that is not a regular one is, for messages: "a directory", "a FIFO (named
/// pipe)", "a character device", "a dangling symbolic link" (from `symlink_metadata`)...
pub fn kind_of(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_symlink() {
        "a dangling symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The whole contents of the regular file `path` ([`open`]), at most [`MAX_BYTES`].
///
/// Errors: those of [`open`], a read error, or a file larger than [`MAX_BYTES`] (kind
/// `InvalidInput`, with its size).
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    read_file(open(path)?)
}

fn read_file(file: File) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    if len > MAX_BYTES {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // A file that grows while read stops at the cap rather than at memory's end.
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
///
/// Errors: those of [`read`], or bytes that are not UTF-8 (kind `InvalidData`, with the
/// offset of the first bad byte).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    utf8(read(path)?)
}

/// [`read_text`] of a file the gate wrote itself (a saved run's files): not a link
/// ([`open_no_link`]), and of a trusted owner ([`read_trusted_text`]).
///
/// Errors: those of [`read_trusted_text`].
pub fn read_own_text(path: &Path) -> std::io::Result<String> {
    trusted_text(open_no_link(path)?)
}

/// [`read_text`] of a file the gate takes as its user's word (a record, `slo.json`): owned
/// by root or this user and writable by nobody else, as what the gate writes is, its
/// links followed. Another user's file (a sticky directory lets anyone add one) could
/// forge a run's trials, a record or a floor.
///
/// Errors: those of [`read_text`]; kind `PermissionDenied` for a file of another user's
/// or one others may write (the message says which).
pub fn read_trusted_text(path: &Path) -> std::io::Result<String> {
    trusted_text(open(path)?)
}

/// [`read`] of a file the gate takes as its user's word, as [`read_trusted_text`] checks
/// it (a cluster file). Errors: those of [`read_trusted_text`] but UTF-8.
pub fn read_trusted(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = open(path)?;
    refuse_untrusted(&file)?;
    read_file(file)
}

fn trusted_text(file: File) -> std::io::Result<String> {
    refuse_untrusted(&file)?;
    utf8(read_file(file)?)
}

/// Whether `uid` is one the gate trusts: root, or the user it runs as.
pub fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Whether users other than the owner may write a file or directory of `mode` and group
/// `gid`: it is world-writable, or group-writable by a group neither root's nor the
/// gate's.
pub fn others_may_write(mode: u32, gid: u32) -> bool {
    let foreign_group = gid != 0 && gid != nix::unistd::getegid().as_raw();
    mode & 0o002 != 0 || (mode & 0o020 != 0 && foreign_group)
}

/// Errors (`PermissionDenied`) unless `file` is root's or this user's and writable by
/// nobody else.
fn refuse_untrusted(file: &File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = file.metadata()?;
    let why = if !trusted_owner(meta.uid()) {
        Some(format!(
            "it is owned by uid {}, neither root nor this user",
            meta.uid()
        ))
    } else if others_may_write(meta.mode(), meta.gid()) {
        Some(format!(
            "it is writable by other users (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    };
    if let Some(why) = why {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{why}, who could have written what it says; it is not read"),
        ));
    }
    Ok(())
}

fn utf8(bytes: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {} is not valid)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_large(len: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "it holds {len} bytes or more, more than the {} MiB the gate reads",
            MAX_BYTES >> 20
        ),
    )
}

/// An inclusive range of TCP ports (`--port-range LOW-HIGH`) the gate's servers and
/// testers listen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl PortRange {
    /// Parses `LOW-HIGH`. Errors, said as a fix: not two numbers, LOW above HIGH, LOW
    /// below 1024 (privileged ports), or a bound beyond 65535.
    pub fn parse(text: &str) -> Result<PortRange, String> {
        let bad = || format!("{text:?} is not a port range LOW-HIGH such as 40000-40999");
        let (low, high) = text.split_once('-').ok_or_else(bad)?;
        let port = |p: &str| p.trim().parse::<u16>().map_err(|_| bad());
        let (low, high) = (port(low)?, port(high)?);
        if low > high {
            return Err(format!("--port-range {text}: LOW is above HIGH"));
        }
        if low < 1024 {
            return Err(format!(
                "--port-range {text}: ports below 1024 are privileged; give a range above"
            ));
        }
        Ok(PortRange { low, high })
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("profile.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read(&fifo).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn a_device_and_a_directory_are_refused() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path()).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_file_beyond_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("trials.json");
        File::create(&big).unwrap().set_len(MAX_BYTES + 1).unwrap();
        let e = read(&big).unwrap_err();
        assert!(e.to_string().contains("64 MiB"), "{e}");
    }

    #[test]
    fn a_link_to_a_regular_file_is_read_and_bad_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.json");
        std::fs::write(&file, b"{}\xff").unwrap();
        let link = dir.path().join("latest.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read(&link).unwrap(), b"{}\xff");
        let e = read_text(&link).unwrap_err();
        assert!(e.to_string().contains("byte 2"), "{e}");
    }

    #[test]
    fn port_ranges_parse_or_say_how_to_fix_them() {
        assert_eq!(
            PortRange::parse("40000-40999"),
            Ok(PortRange {
                low: 40000,
                high: 40999
            })
        );
        assert_eq!(
            PortRange::parse("40000-40999").unwrap().to_string(),
            "40000-40999"
        );
        for (bad, says) in [
            ("40000", "is not a port range LOW-HIGH such as 40000-40999"),
            ("4x-5", "is not a port range"),
            ("40000-70000", "is not a port range"),
            ("5000-4000", "LOW is above HIGH"),
            ("80-2000", "ports below 1024 are privileged"),
        ] {
            let err = PortRange::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
