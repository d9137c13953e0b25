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

use crate::error::UsageError;

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
    let meta = cargo_metadata::MetadataCommand::new()
        .no_deps()
        .exec()
        .context("cannot find the cargo workspace and target dir (cargo metadata)")?;
    Ok(DIRS.get_or_init(|| CargoDirs {
        workspace_root: meta.workspace_root.into_std_path_buf(),
        target_dir: meta.target_directory.into_std_path_buf(),
    }))
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

/// A UTC time for directory names, `2026-11-30T141138Z` (no `:`, which some tools and
/// filesystems refuse).
pub fn dir_stamp(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace(':', "")
}

/// The results dir: `--out`, else `<cargo target dir>/perfgate/<UTC time>-<pid>`. It must
/// not hold an earlier run's results.
pub fn results_dir(explicit: Option<&Path>, junit: Option<&Path>) -> Result<PathBuf> {
    let dir = match explicit {
        Some(d) => d.to_path_buf(),
        None => {
            let target = target_dir().context("pass --out DIR")?;
            let stamp = dir_stamp(SystemTime::now());
            target
                .join("perfgate")
                .join(format!("{stamp}-{}", std::process::id()))
        }
    };
    check_results_dir(&dir, junit)?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create results dir {}", dir.display()))?;
    // Absolute: mako and fdbserver run in other directories and get paths inside it.
    std::fs::canonicalize(&dir).with_context(|| format!("cannot resolve {}", dir.display()))
}

/// A results dir must be missing or empty: results are never mixed with an earlier run's.
/// The way to the `--junit` file is not counted: `--junit <out>/ci/junit.xml` creates its
/// directory first, and a run that failed before its first trial leaves only that file.
pub fn check_results_dir(dir: &Path, junit: Option<&Path>) -> Result<()> {
    if !dir.exists() {
        // It will be created: its nearest existing ancestor must be a directory.
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
        }
        return Ok(());
    }
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let junit = junit.map(abs);
    let occupied = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().any(|e| {
            !junit
                .as_ref()
                .is_some_and(|j| j.starts_with(abs(&e.path())))
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

/// Fails early, before hours of trials, when `path` could not be written at the end.
pub fn check_writable_file(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // `--junit <out>/junit.xml` is the natural spelling: its directory may not exist yet.
    let created = std::fs::create_dir_all(parent);
    let ok = created.is_ok()
        && !path.is_dir()
        && nix::unistd::access(parent, nix::unistd::AccessFlags::W_OK).is_ok();
    if !ok {
        let why = match created {
            Err(e) => format!("cannot create {}: {e}", parent.display()),
            Ok(()) if path.is_dir() => "the path is a directory".to_string(),
            Ok(()) => format!("{} is not writable", parent.display()),
        };
        return Err(UsageError(format!(
            "--junit {}: {why}; give a file path in a writable directory",
            path.display()
        ))
        .into());
    }
    Ok(())
}

/// `v` as pretty JSON with a final newline: how every JSON file of the gate looks.
pub fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).expect("plain data serializes") + "\n"
}

/// Creates `path` with `text`; fails if anything is there already, a symlink included
/// (`O_CREAT | O_EXCL`): for files the user names, which the gate never replaces.
pub fn create_new(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees
/// half a file.
pub fn write(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}
