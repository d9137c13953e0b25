//! The code's shape as tests (as rust-analyzer's tidy tests guard its rules): data flows one
//! way through the gate's stages, the files of a stage import each other one way, and FDB's
//! formats never import the gate.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The gate's stages in pipeline order: a module may import from its own stage and from
/// earlier ones, never from a later one. `version` (the gate's own identity), `error`,
/// `input`, `files`, `process` and `contain` (a run's cgroup) are below every stage; `cli`
/// (clap's structs) is read only by `config` (which validates it) and `cmd`.
const STAGES: [&str; 15] = [
    "version", "error", "input", "files", "process", "contain", "cli", "config", "results",
    "build", "plan", "run", "judge", "report", "cmd",
];

/// Who may import `cli`.
const CLI_READERS: [&str; 2] = ["config", "cmd"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of `src` without comments (line comments and doc comments), so that a path
/// named in prose is not taken for an import.
fn code(src: &str) -> String {
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module of the crate a piece of code names as `crate::<module>`,
/// including those inside `use crate::{a::.., b::{..}}` groups.
fn crate_modules(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items at depth 0 of the group: the first segment after each ',' or '{'.
            let (mut depth, mut start) = (0usize, true);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        start = false;
                        if depth == 0 {
                            found.push(ident(&group[k..]));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The stage of a file under `xtask/src`: its folder, or the file's stem at the top.
fn stage_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// Every import of a later stage, or of `cli` outside its readers, as `file: imports X`.
fn stage_violations(src: &Path) -> Vec<String> {
    let rank = |s: &str| STAGES.iter().position(|x| *x == s);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let stage = stage_of(src, &file);
        // main.rs and lib.rs sit above every stage.
        let Some(own) = rank(&stage) else { continue };
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for module in crate_modules(&text) {
            let Some(theirs) = rank(&module) else {
                bad.push(format!(
                    "{}: names crate::{module}, which is no stage",
                    file.display()
                ));
                continue;
            };
            let cli_misuse = module == "cli" && !CLI_READERS.contains(&stage.as_str());
            if (theirs > own || cli_misuse) && module != stage {
                bad.push(format!(
                    "{}: stage `{stage}` imports crate::{module} (a later stage, or cli \
                     outside config and cmd)",
                    file.display()
                ));
            }
        }
    }
    bad.dedup();
    bad
}

#[test]
fn no_stage_imports_a_later_stage() {
    let src = root().join("xtask/src");
    let bad = stage_violations(&src);
    assert!(
        bad.is_empty(),
        "imports against the pipeline:\n{}",
        bad.join("\n")
    );
    // Every stage is a folder or a file of xtask/src, and every one of those is a stage
    // (a new top-level module must take its place in STAGES).
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let name = entry
            .file_name()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        assert!(
            STAGES.contains(&name.as_str()) || ["main", "lib"].contains(&name.as_str()),
            "xtask/src/{name} is not in the stage order of tests/it/layout.rs"
        );
    }
}

#[test]
fn the_rule_finds_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let judge = dir.path().join("judge");
    std::fs::create_dir_all(&judge).unwrap();
    std::fs::write(
        judge.join("mod.rs"),
        "// crate::report is named in prose only\nuse crate::{\n    config::Arm,\n    \
         report::{html, write},\n};\nfn f() { crate::run::go(); crate::judge::x(); }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("plan.rs"), "use crate::cli::BenchArgs;\n").unwrap();
    let bad = stage_violations(dir.path());
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].contains("stage `judge` imports crate::report"),
        "{bad:?}"
    );
    assert!(
        bad[1].contains("stage `plan` imports crate::cli"),
        "{bad:?}"
    );
    assert_eq!(
        crate_modules("use crate::{a::{b, c}, d};\ncrate::e::f"),
        ["a", "d", "e"]
    );
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path `code` names after `prefix` (`super::`, `crate::`), as its segments, with
/// `use` groups expanded: `super::{a::{b, c as d}, e::*}` names `[a, b]`, `[a, c]` and `[e]`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        // `super::` inside `super::super::` or a longer name is no path of its own.
        if code[..i].ends_with(is_ident) || code[..i].ends_with("::") {
            continue;
        }
        let mut rest = &code[i + prefix.len()..];
        read_path(&mut rest, Vec::new(), &mut out);
    }
    out
}

/// Reads one path (segments joined by `::`, and `{..}` groups) from the start of `rest`,
/// after the segments `base`, and pushes each whole path it names to `out`.
fn read_path(rest: &mut &str, mut base: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        *rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            *rest = group;
            loop {
                *rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix(',') {
                    *rest = after;
                } else if let Some(after) = rest.strip_prefix('}') {
                    *rest = after;
                    return;
                } else if rest.is_empty() {
                    return;
                } else {
                    read_path(rest, base.clone(), out);
                    // Past what the item leaves (` as name`, `*`), to the next ',' or '}'.
                    let end = rest.find([',', '}']).unwrap_or(rest.len());
                    *rest = &rest[end..];
                }
            }
        }
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            if !base.is_empty() {
                out.push(base);
            }
            return;
        }
        base.push(rest[..len].to_string());
        *rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(after) => *rest = after,
            None => {
                out.push(base);
                return;
            }
        }
    }
}

/// Which files of `folder` each file names (`super::b`, or `crate::<own>::b` where `own`
/// are the segments that lead from the crate to the folder): file stem to stems. The
/// folder's `mod.rs` or `lib.rs` declares the others and is left out, and so is a file's
/// test module (`super::` there is the file itself).
fn sibling_imports(folder: &Path, own: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let stems: BTreeSet<String> = std::fs::read_dir(folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|s| s != "mod" && s != "lib")
        .collect();
    let mut imports = BTreeMap::new();
    for stem in &stems {
        let text = std::fs::read_to_string(folder.join(format!("{stem}.rs"))).unwrap();
        let text = code(&text);
        let lines: Vec<&str> = text
            .lines()
            .take_while(|l| {
                let l = l.trim_start();
                !(l.starts_with("mod tests") || l.starts_with("pub(crate) mod tests"))
            })
            .collect();
        let text = lines.join("\n");
        let from_super = paths_after(&text, "super::");
        let from_crate = paths_after(&text, "crate::")
            .into_iter()
            .filter(|p| p.len() > own.len() && p.iter().zip(own).all(|(a, b)| a == b))
            .map(|p| p[own.len()..].to_vec());
        let named: BTreeSet<String> = from_super
            .into_iter()
            .chain(from_crate)
            .filter_map(|p| p.first().cloned())
            .filter(|m| m != stem && stems.contains(m))
            .collect();
        imports.insert(stem.clone(), named);
    }
    imports
}

/// Every import cycle among the files of `folder` (see [`sibling_imports`]), each once,
/// from its first file in name order: `folder: a -> b -> a`.
fn import_cycles(folder: &Path, own: &[&str]) -> Vec<String> {
    let imports = sibling_imports(folder, own);
    let mut cycles = Vec::new();
    for start in imports.keys() {
        // Paths from `start` through files after it in name order, so that a cycle is
        // found from its first file only.
        let mut paths = vec![vec![start.clone()]];
        while let Some(path) = paths.pop() {
            for next in &imports[path.last().unwrap()] {
                if next == start {
                    cycles.push(format!(
                        "{}: {} -> {start}",
                        folder.display(),
                        path.join(" -> ")
                    ));
                } else if next > start && !path.contains(next) {
                    paths.push([path.clone(), vec![next.clone()]].concat());
                }
            }
        }
    }
    cycles.sort();
    cycles
}

#[test]
fn no_two_files_of_a_stage_import_each_other() {
    let src = root().join("xtask/src");
    let mut cycles = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        if entry.path().is_dir() {
            let stage = entry.file_name().to_string_lossy().into_owned();
            cycles.extend(import_cycles(&entry.path(), &[stage.as_str()]));
        }
    }
    cycles.extend(import_cycles(&root().join("fdb/src"), &[]));
    assert!(
        cycles.is_empty(),
        "files that import each other (move what both need to a file both import):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_rule_finds_an_import_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    for (file, text) in [
        ("mod.rs", "pub mod a;\nuse a::x;\nuse b::y;\n"),
        ("a.rs", "use super::{b::X, c as d, f::h};\n"),
        ("b.rs", "fn g() { crate::run::a::go(); }\n"),
        ("c.rs", "use crate::{config::Arm, run::{d::{Y, Z}}};\n"),
        ("d.rs", "use super::e::*;\nuse super::Runner;\n"),
        // Neither prose nor another stage's file of the same name is an import.
        (
            "e.rs",
            "// super::d in prose\nuse crate::run::c;\nuse crate::report::a;\n",
        ),
        // Nor is what a test module names.
        (
            "f.rs",
            "pub fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::run::a::x;\n}\n",
        ),
    ] {
        std::fs::write(run.join(file), text).unwrap();
    }
    assert_eq!(
        import_cycles(&run, &["run"]),
        [
            format!("{}: a -> b -> a", run.display()),
            format!("{}: c -> d -> e -> c", run.display()),
        ]
    );
    assert_eq!(
        paths_after(
            "use super::{a::{b, c as d}, e::*, self};\nsuper::super::x; super::f::g()",
            "super::"
        ),
        [
            vec!["a", "b"],
            vec!["a", "c"],
            vec!["e"],
            vec!["self"],
            vec!["super", "x"],
            vec!["f", "g"]
        ]
    );
}

#[test]
fn fdb_formats_import_nothing_of_the_gate() {
    let manifest = std::fs::read_to_string(root().join("fdb/Cargo.toml")).unwrap();
    assert!(
        !manifest.contains("xtask"),
        "fdb/Cargo.toml depends on the gate"
    );
    let mut files = Vec::new();
    rust_files(&root().join("fdb/src"), &mut files);
    for f in files {
        let text = code(&std::fs::read_to_string(&f).unwrap());
        assert!(!text.contains("xtask"), "{} names the gate", f.display());
    }
}

/// Longest function body the gate and FDB's formats may have, lines (signature to closing
/// brace): short enough to read whole (TigerBeetle's limit is 70).
const MAX_FUNCTION_LINES: usize = 80;

/// Every function of `src` longer than [`MAX_FUNCTION_LINES`], as `file: name (N lines)`.
/// A function starts at a line `fn name` (after `pub`, at any indentation) and ends at
/// the first line that is its indentation and `}`; test modules (`mod tests`) are skipped.
fn long_functions(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("mod tests") || trimmed.starts_with("pub(crate) mod tests") {
                break;
            }
            let sig = trimmed
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            let Some(name) = sig.strip_prefix("fn ") else {
                continue;
            };
            let indent = &line[..line.len() - trimmed.len()];
            let end = lines[i + 1..]
                .iter()
                .position(|l| *l == format!("{indent}}}"))
                .map_or(lines.len() - i, |k| k + 2);
            if end > MAX_FUNCTION_LINES {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                long.push(format!("{}: {name} ({end} lines)", file.display()));
            }
        }
    }
    long
}

#[test]
fn no_function_of_the_gate_is_longer_than_the_limit() {
    let mut long = long_functions(&root().join("xtask/src"));
    long.extend(long_functions(&root().join("fdb/src")));
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them by what they do):\n{}",
        long.join("\n")
    );
    // The rule itself: a function one line over the limit is found.
    let dir = tempfile::tempdir().unwrap();
    let body = "    x();\n".repeat(MAX_FUNCTION_LINES - 1);
    std::fs::write(
        dir.path().join("a.rs"),
        format!("pub fn big() {{\n{body}}}\nfn small() {{\n}}\n"),
    )
    .unwrap();
    assert_eq!(
        long_functions(dir.path()),
        [format!(
            "{}: big ({} lines)",
            dir.path().join("a.rs").display(),
            MAX_FUNCTION_LINES + 1
        )]
    );
}

/// Calls that change the filesystem, which the gate makes only through its files layer
/// (`xtask/src/files.rs`): a raw one in a shared directory could follow a planted link.
const RAW_FS_CALLS: [&str; 13] = [
    "std::fs::write(",
    "std::fs::remove_file(",
    "std::fs::remove_dir_all(",
    "std::fs::remove_dir(",
    "std::fs::rename(",
    "std::fs::create_dir_all(",
    "std::fs::create_dir(",
    "std::fs::copy(",
    "std::fs::hard_link(",
    "std::fs::set_permissions(",
    "std::fs::DirBuilder",
    "File::create(",
    "OpenOptions::new()",
];

/// The raw calls allowed outside the layer, each by the file and a piece of its line:
/// opens for reading only, and a write into the kernel's `/proc`. `contain.rs` works only
/// in the cgroup2 filesystem, which the kernel keeps and only root changes.
const RAW_FS_ALLOWED: [(&str, &str); 3] = [
    ("input.rs", "let file = std::fs::OpenOptions::new()"),
    ("reaper.rs", "let file = std::fs::OpenOptions::new()"),
    ("reaper.rs", "std::fs::write(\"/proc/self/oom_score_adj\""),
];

/// `file: line` for every raw filesystem change in the gate's code outside its tests
/// (everything from `#[cfg(test)]` on) and outside the files layer.
fn raw_fs_calls(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        if file
            .file_name()
            .is_some_and(|n| n == "files.rs" || n == "contain.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let short = file.file_name().unwrap().to_string_lossy().into_owned();
        for (n, line) in code(text).lines().enumerate() {
            let allowed = RAW_FS_ALLOWED
                .iter()
                .any(|(f, piece)| *f == short && line.contains(piece));
            let imports = line.contains("use std::fs::{") || line.contains("use std::fs::");
            let raw = RAW_FS_CALLS.iter().any(|c| line.contains(c))
                || (imports
                    && ["write", "remove_", "rename", "create_dir", "copy"]
                        .iter()
                        .any(|c| line.contains(c)));
            if raw && !allowed {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_gate_changes_files_only_through_its_files_layer() {
    let raw = raw_fs_calls(&root().join("xtask/src"));
    assert!(
        raw.is_empty(),
        "raw filesystem changes outside xtask/src/files.rs (use crate::files: it never \
         follows a link it did not make):\n{}",
        raw.join("\n")
    );
    // The rule itself: a raw write is found, the same call in a test module is not.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.rs"),
        "fn f() {\n    std::fs::write(p, \"x\").unwrap();\n}\n#[cfg(test)]\nmod tests {\n    \
         fn g() { std::fs::remove_file(p); }\n}\n",
    )
    .unwrap();
    let found = raw_fs_calls(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with("a.rs:2: std::fs::write(p, \"x\").unwrap();"),
        "{found:?}"
    );
}
