//! Results, on disk: the results directory, atomic writes of its files, pretty JSON, and
//! the cargo dirs results and baselines live under by default. Every file the gate
//! writes goes through [`write`].

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
    time::SystemTime,
};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::{config::Copies, error::UsageError};

/// The workspace root and the cargo target dir, from `cargo metadata` (looked up once).
struct CargoDirs {
    workspace_root: PathBuf,
    target_dir: PathBuf,
}

fn cargo_dirs() -> Result<&'static CargoDirs> {
    static DIRS: OnceLock<CargoDirs> = OnceLock::new();
    if let Some(d) = DIRS.get() {
        return Ok(d);
    }
    // The gate's own workspace, wherever it is started from: a CI job runs it from the
    // FDB checkout (`cargo run --manifest-path`, or a built binary), which has no
    // Cargo.toml. A binary moved off the machine it was built on looks from the current
    // directory up.
    let own = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"));
    let mut metadata = cargo_metadata::MetadataCommand::new();
    metadata.no_deps();
    if own.is_file() {
        metadata.manifest_path(own);
    }
    let mut cargo = metadata.cargo_command();
    // cargo and rustup read configuration (`.cargo/config.toml`, `rust-toolchain.toml`,
    // which names the cargo that runs) from the directory they start in and every one
    // above it: started as root in a directory others can write, they would run another
    // user's program. They start in the gate's workspace; a moved binary's only in a
    // directory no other user can write into, up to `/`.
    match own.parent().filter(|_| own.is_file()) {
        Some(dir) => {
            cargo.current_dir(dir);
        }
        None => refuse_shared_cwd()?,
    }
    // Bounded like every child: cargo may wait on a lock another cargo holds.
    let what = "cargo metadata --no-deps";
    let meta = crate::process::run_bounded(what, cargo, std::time::Duration::from_secs(120))
        .and_then(|o| o.stdout_if_success(what))
        .and_then(|json| Ok(cargo_metadata::MetadataCommand::parse(json)?))
        .context("cannot find the cargo workspace and target dir (cargo metadata)")?;
    Ok(DIRS.get_or_init(|| CargoDirs {
        workspace_root: meta.workspace_root.into_std_path_buf(),
        target_dir: meta.target_directory.into_std_path_buf(),
    }))
}

/// Errors unless the current directory and each above it are writable by their owner
/// alone (root or this user): cargo would read another user's configuration there.
fn refuse_shared_cwd() -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for dir in cwd.ancestors() {
        let m = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if m.mode() & 0o022 != 0 || !crate::input::trusted_owner(m.uid()) {
            return Err(UsageError(format!(
                "this gate binary is away from its source tree, so it runs `cargo metadata` \
                 to find the workspace, and cargo reads configuration from the current \
                 directory and those above it: {} is {}, so another user could make it run \
                 their program; run the gate from a directory only you can write",
                dir.display(),
                if m.mode() & 0o022 != 0 {
                    "writable by other users"
                } else {
                    "another user's"
                }
            ))
            .into());
        }
    }
    Ok(())
}

/// The cargo target dir (`CARGO_TARGET_DIR` moves it): home of the build cache and the
/// default results dirs.
pub fn target_dir() -> Result<PathBuf> {
    Ok(cargo_dirs()?.target_dir.clone())
}

/// The workspace root (where `Cargo.toml` is): home of `baselines/`.
pub fn workspace_root() -> Result<PathBuf> {
    Ok(cargo_dirs()?.workspace_root.clone())
}

/// The FDB checkout used when neither `--fdb-src` nor `FDB_SRC` names one: `foundationdb`
/// beside the gate's workspace, wherever the gate was started from; `None` when the
/// workspace is not known.
pub fn default_fdb_src() -> Option<PathBuf> {
    Some(workspace_root().ok()?.parent()?.join("foundationdb"))
}

/// A UTC time for directory names, `2026-11-30T141138Z` (no `:`, which some tools and
/// filesystems refuse).
pub fn dir_stamp(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace(':', "")
}

/// The results dir: `--out`, else `<cargo target dir>/perfgate/<UTC time>-<pid>`. It must
/// not hold an earlier run's results.
pub fn results_dir(explicit: Option<&Path>, copies: Copies) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => {
            let target = target_dir().map_err(|e| {
                UsageError(format!(
                    "no default results dir outside a cargo workspace ({e:#}): pass --out DIR"
                ))
            })?;
            let stamp = dir_stamp(SystemTime::now());
            target
                .join("perfgate")
                .join(format!("{stamp}-{}", std::process::id()))
        }
    };
    check_results_dir(&dir, copies)?;
    // Absolute and without links: mako and fdbserver run in other directories and get
    // paths inside it.
    Ok(crate::files::Root::create("--out", &dir, 0o755)?
        .path()
        .to_path_buf())
}

/// A results dir must be missing or empty: results are never mixed with an earlier run's.
/// The way to the `--junit` and `--export-markdown` files is not counted: `--junit
/// <out>/ci/junit.xml` creates its directory first, and a run that failed before its first
/// trial leaves only that file.
pub fn check_results_dir(dir: &Path, copies: Copies) -> Result<()> {
    if !dir.exists() && dir.symlink_metadata().is_ok() {
        return Err(UsageError(format!(
            "results dir {} is a symbolic link to something missing; choose another --out, \
             or create the directory it points to",
            dir.display()
        ))
        .into());
    }
    if !dir.exists() {
        // It will be created: its nearest existing ancestor must be a directory the gate
        // may create in.
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(a) = abs.ancestors().skip(1).find(|a| a.exists()) {
            if !a.is_dir() {
                return Err(UsageError(format!(
                    "results dir {}: {} is not a directory; choose another --out",
                    dir.display(),
                    a.display()
                ))
                .into());
            }
            crate::files::Root::open("--out", a)?;
        }
        return Ok(());
    }
    crate::files::Root::open_private("--out", dir)?;
    let copies: Vec<PathBuf> = copies
        .each()
        .into_iter()
        .map(|(_, p)| resolved(p))
        .collect();
    let occupied = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().any(|e| {
            let entry = resolved(&e.path());
            !copies.iter().any(|c| c.starts_with(&entry))
        }),
        Err(_) => true,
    };
    if occupied {
        return Err(UsageError(format!(
            "results dir {} is not an empty directory; choose another --out (results are \
             never mixed with an earlier run's)",
            dir.display()
        ))
        .into());
    }
    Ok(())
}

/// The directory of a results dir that holds each trial's files (`trials/<name>/`).
pub const TRIALS_DIR: &str = "trials";

/// The files a run writes at the top of its results dir; `junit.xml` is left out, since a
/// `--junit` there gets the same verdicts.
pub const RUN_FILES: [&str; 8] = [
    "meta.json",
    "calibration.json",
    "trials.json",
    "summary.json",
    "summary.md",
    "report.html",
    "results.tsv",
    "run.log",
];

/// `path` with its directory resolved through links (`canonicalize`) as far as it exists
/// and lexically beyond (`.` and `..`), the file name kept. Two spellings of one file
/// resolve alike.
pub fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let parts: Vec<Component> = abs.components().collect();
    // The deepest existing directory above the file, through its links; the rest, which
    // does not exist yet, lexically (so `out/sub/../trials/x` is in trials/).
    let Some((base, k)) = (1..parts.len()).rev().find_map(|k| {
        let prefix: PathBuf = parts[..k].iter().collect();
        std::fs::canonicalize(prefix).ok().map(|real| (real, k))
    }) else {
        return abs;
    };
    let mut out = base;
    for part in &parts[k..] {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// Refuses a copy (`flag`'s file) that is one of the files the run writes into `out`, by
/// any spelling, links included: a `--junit` over `meta.json` would leave a run that
/// cannot be judged again, Markdown or JSON over `junit.xml` a broken one (a `--junit`
/// there gets the same verdicts, and is fine). Errors: a [`UsageError`] naming the file.
pub fn check_copy_apart(flag: &str, out: &Path, copy: &Path) -> Result<()> {
    let (also, hint): (&[&str], &str) = match flag {
        "--junit" => (&[], " (junit.xml in --out is fine)"),
        _ => (&["junit.xml"], ""),
    };
    copy_apart(flag, out, copy, also, hint)
}

fn copy_apart(flag: &str, out: &Path, copy: &Path, also: &[&str], hint: &str) -> Result<()> {
    let (out, target) = (resolved(&out.join("x")), resolved(copy));
    let out = out.parent().unwrap_or(&out);
    // The trials' own files (mako.json, traces) are the run's evidence.
    if target.starts_with(out.join(TRIALS_DIR)) {
        return Err(UsageError(format!(
            "{flag} {} is inside the run's {TRIALS_DIR}/ directory, whose files the trials \
             write: give a path outside it{hint}",
            copy.display()
        ))
        .into());
    }
    if target.parent() == Some(out)
        && RUN_FILES
            .iter()
            .chain(also)
            .any(|f| target.file_name() == Some(f.as_ref()))
    {
        return Err(UsageError(format!(
            "{flag} {} is the run's own {}: give another path{hint}",
            copy.display(),
            target.file_name().unwrap_or_default().to_string_lossy()
        ))
        .into());
    }
    Ok(())
}

/// Checks every copy before any work (hours of building and trials come before they are
/// written): apart from the run's own files in `out`, when `out` is known
/// ([`check_copy_apart`]), writable ([`check_writable_file`]), and no two the same file.
pub fn check_copies(copies: &Copies, out: Option<&Path>) -> Result<()> {
    let each = copies.each();
    for (k, (flag, path)) in each.iter().enumerate() {
        if let Some(out) = out {
            check_copy_apart(flag, out, path)?;
        }
        check_writable_file(flag, path)?;
        if let Some((other, _)) = each[..k]
            .iter()
            .find(|(_, p)| resolved(p) == resolved(path))
        {
            return Err(UsageError(format!(
                "{flag} {} is also the file of {other}: give each copy a file of its own",
                path.display()
            ))
            .into());
        }
    }
    Ok(())
}

/// Fails early, before hours of trials, when `path` (the value of `flag`, e.g.
/// `--junit`) could not be written at the end: its directory must exist or be creatable
/// (`--junit <out>/ci/junit.xml` is the natural spelling, so missing directories are
/// created) and be writable, and anything already at `path` must be a regular file
/// ([`write`] refuses the rest).
pub fn check_writable_file(flag: &str, path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let why = if let Some(kind) = crate::files::not_a_regular_file(path) {
        Some(format!("{kind} is there, not a regular file"))
    } else if let Err(e) = crate::files::Root::create(flag, parent, 0o755).and_then(|root| {
        // In a shared (sticky) directory, a file there must be root's or ours: root
        // writing another user's file would make it root's and split its hard links.
        match path.file_name() {
            Some(name) if path.symlink_metadata().is_ok() => root.check_entry(name.as_ref()),
            _ => Ok(()),
        }
    }) {
        return Err(match e.downcast::<UsageError>() {
            Ok(refused) => refused.into(),
            Err(e) => UsageError(format!(
                "{flag} {}: {e:#}; give a file path in a writable directory of your own",
                path.display(),
            ))
            .into(),
        });
    } else if nix::unistd::access(parent, nix::unistd::AccessFlags::W_OK).is_err() {
        Some(format!("{} is not writable", parent.display()))
    } else {
        None
    };
    match why {
        Some(why) => Err(UsageError(format!(
            "{flag} {}: {why}; give a file path in a writable directory",
            path.display()
        ))
        .into()),
        None => Ok(()),
    }
}

/// `v` as pretty JSON with a final newline: how every JSON file of the gate looks. What
/// serde_json leaves raw of the text it copies from inputs (DEL, C1 controls,
/// bidirectional overrides: a hostname, an error message) is written as `\uXXXX`
/// ([`crate::process::json_printable`]), so that a `cat` of `meta.json` or `trials.json`
/// shows it as text; the value read back is the same.
pub fn json<T: Serialize>(v: &T) -> String {
    crate::process::json_printable(&serde_json::to_string_pretty(v).expect("plain data serializes"))
        + "\n"
}

/// Creates `path` with `text`; fails if anything is there already, a symlink included
/// (`O_CREAT | O_EXCL`): for files the user names, which the gate never replaces.
pub fn create_new(path: &Path, text: &str) -> Result<()> {
    crate::files::create_new("directory", path, text)
}

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees
/// half a file ([`crate::files::Root::write`]): a symlink, device, FIFO or directory at
/// `path` is refused (the gate runs as root in shared directories, where `--junit
/// /dev/stdout` or a planted link must not turn into a replaced node), and so is a
/// directory another user could redirect.
pub fn write(path: &Path, text: &str) -> Result<()> {
    crate::files::write("directory", path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_files_write_what_terminals_act_on_as_escapes_and_read_back_the_same() {
        let value = serde_json::json!({"hostname": "vm\u{9b}2J\u{202e}\u{7f}", "n": 1});
        let text = json(&value);
        assert!(text.contains(r"vm\u009b2J\u202e\u007f"), "{text}");
        assert!(!text
            .chars()
            .any(|c| crate::process::unsafe_in_text(c) && c != '\n'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }

    #[test]
    fn copies_spelled_with_dot_dot_are_where_they_land() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let real = std::fs::canonicalize(dir.path()).unwrap();
        // `..` is resolved: these land in trials/, or outside it, whatever their spelling.
        assert_eq!(
            resolved(&out.join("sub/../trials/x.xml")),
            real.join("out/trials/x.xml")
        );
        assert_eq!(
            resolved(&out.join("trials/../junit.xml")),
            real.join("out/junit.xml")
        );
        for copy in ["sub/../trials/x.xml", "./trials/y/../x.md"] {
            let err = check_copy_apart("--junit", &out, &out.join(copy)).unwrap_err();
            assert!(
                format!("{err}").contains("inside the run's trials/"),
                "{err}"
            );
        }
        assert!(check_copy_apart("--junit", &out, &out.join("trials/../junit.xml")).is_ok());
        assert!(check_copy_apart("--junit", &out.join("y/.."), &out.join("trials/j.xml")).is_err());
    }

    #[test]
    fn write_replaces_only_regular_files_and_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        // A new file, then a regular file replaced.
        write(&path, "one").unwrap();
        write(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        // A link planted at the old predictable temp name is not written through.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("junit.tmp")).unwrap();
        write(&path, "three").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
        // Nothing is left behind but what was there and the file.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["junit.tmp", "junit.xml", "victim"]);
        // A symlink, a FIFO (standing in for /dev/stdout or a device) or a directory at
        // the path is refused and left as it was.
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let fifo = dir.path().join("fifo.xml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for (p, kind) in [
            (&link, "a symlink"),
            (&fifo, "a FIFO"),
            (&dir.path().to_path_buf(), "a directory"),
        ] {
            let e = write(p, "x").unwrap_err().to_string();
            assert!(e.contains(kind) && e.contains("regular files"), "{e}");
            let e = check_writable_file("--junit", p).unwrap_err().to_string();
            assert!(e.starts_with("--junit ") && e.contains(kind), "{e}");
        }
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // The flag named is the one given.
        let e = check_writable_file("--write-profile", &fifo)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--write-profile "), "{e}");
        check_writable_file("--junit", &dir.path().join("new/junit.xml")).unwrap();
    }
}
