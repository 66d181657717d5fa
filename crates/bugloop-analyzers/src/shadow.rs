//! Files a change adds that change what a module is, for Python and for the type checkers: a
//! module named as one of the standard library's where Python imports first (the repository's
//! root, `src/`), and a stub (`.pyi`) of one of the project's own modules. Neither is a bug a
//! tool reports, and both hide bugs from ty: an attacker's review added `typing.py` and a lying
//! `lib.pyi`, and ty no longer saw a wrong call. Each is a candidate of the tool `bugloop`.

use std::path::Path;

use bugloop_diff::{ChangeKind, Diff, FileDiff, LineKind};
use bugloop_domain::finding::Category;

use crate::hit::{Candidate, Hit, Level};
use crate::weight::Weight;

/// Standard library modules a project's own file is most often named as (not `test` or `code`,
/// which name a project's own files far more often than they are imported).
const STANDARD_LIBRARY: &[&str] = &[
    "abc",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "builtins",
    "calendar",
    "collections",
    "concurrent",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "ctypes",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "errno",
    "fnmatch",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "multiprocessing",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "platform",
    "pprint",
    "queue",
    "random",
    "re",
    "secrets",
    "select",
    "shlex",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "ssl",
    "stat",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "sys",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "tokenize",
    "traceback",
    "types",
    "typing",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "weakref",
    "xml",
    "zipfile",
    "zlib",
    "zoneinfo",
];

/// The candidates for the files `diff` adds (or, for a stub, edits) under `workspace`, and for
/// the declarations of the project's own modules by their `paths` alias.
pub(crate) fn shadows_added(diff: &Diff, workspace: &Path) -> Vec<Candidate> {
    let mut found = own_aliases_declared(diff, workspace);
    found.extend(shadowing_files(diff, workspace));
    found
}

/// An added `declare module "@app/db"` in TypeScript whose name the project's `paths` map to its
/// own code: tsc believes the declaration over the module (an attacker's review hid a wrong
/// call behind one typed `any`). A relative name (`"./money"`) is a suppression already.
fn own_aliases_declared(diff: &Diff, workspace: &Path) -> Vec<Candidate> {
    let typescript = |path: &str| {
        [".ts", ".tsx", ".mts", ".cts"]
            .iter()
            .any(|e| path.ends_with(e))
    };
    if !diff.files.iter().any(|f| typescript(f.path())) {
        return Vec::new();
    }
    let patterns = crate::tsconfig::path_patterns(workspace);
    let mut found = Vec::new();
    for (file, number, text) in crate::scope::added_lines(diff).filter(|(f, _, _)| typescript(f)) {
        let Some(name) = declared_module(text) else {
            continue;
        };
        if patterns
            .iter()
            .any(|pattern| matches_pattern(pattern, name))
        {
            let message = format!(
                "This change declares the module `{name}`, which the project's tsconfig `paths` \
                 map to its own code: tsc believes the declaration over the module's code, so a \
                 wrong type in it hides every wrong call into the module; import the module's \
                 own types instead"
            );
            found.push(candidate_at(file, number, text, message));
        }
    }
    found
}

/// The name of `declare module "x"` on a line.
fn declared_module(text: &str) -> Option<&str> {
    let rest = text.trim_start();
    let rest = rest.strip_prefix("export ").unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix("declare")?.trim_start();
    let rest = rest.strip_prefix("module")?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &rest[1..];
    rest.split_once(quote).map(|(name, _)| name)
}

/// Whether a `paths` pattern (`@app/*`, `@db`) takes the module name.
fn matches_pattern(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            name.len() >= prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        }
        None => pattern == name,
    }
}

/// A module named as the standard library's, or a stub of an own module, that `diff` adds.
fn shadowing_files(diff: &Diff, workspace: &Path) -> Vec<Candidate> {
    diff.files
        .iter()
        .filter(|file| file.change != ChangeKind::Deleted && !file.binary)
        .filter_map(|file| {
            let path = file.path();
            let new_name = matches!(
                file.change,
                ChangeKind::Added | ChangeKind::Renamed | ChangeKind::Copied
            );
            let message = if new_name {
                standard_module(path).map(|module| {
                    format!(
                        "This change adds `{path}` where Python imports first: code run from here \
                         imports it instead of the standard library's `{module}`, and ty reads it \
                         in its place, so no call into `{module}` is checked against the \
                         standard library: rename it"
                    )
                })
            } else {
                None
            };
            let message = message.or_else(|| {
                own_module_of_stub(path, workspace).map(|module| {
                    format!(
                        "This change writes `{path}`, a stub of the project's own module \
                         `{module}`: type checkers believe the stub over the module's code, so a \
                         wrong signature in it hides every wrong call into the module; say why \
                         the module needs one, or type the module itself"
                    )
                })
            })?;
            Some(candidate(file, message))
        })
        .collect()
}

/// The standard library module a file at a root Python imports from would shadow (the tree's
/// root, `src/` and `python/`, which ty takes for roots of the project's code).
fn standard_module(path: &str) -> Option<&'static str> {
    let under_root = ["src/", "python/"]
        .iter()
        .find_map(|root| path.strip_prefix(root))
        .unwrap_or(path);
    let module = under_root
        .strip_suffix("/__init__.py")
        .or_else(|| under_root.strip_suffix(".py"))
        .filter(|m| !m.contains('/'))?;
    STANDARD_LIBRARY
        .iter()
        .find(|known| **known == module)
        .copied()
}

/// The project's own module (`lib.py`, `pkg/__init__.py`) a stub beside it describes; for a
/// stub package (`helper/__init__.pyi`), also the module it stands before (`helper.py`).
fn own_module_of_stub(path: &str, workspace: &Path) -> Option<String> {
    let stem = path.strip_suffix(".pyi")?;
    let package = stem
        .strip_suffix("/__init__")
        .map(|dir| format!("{dir}.py"));
    [Some(format!("{stem}.py")), package]
        .into_iter()
        .flatten()
        .find(|module| crate::tree::regular_file(workspace, module).is_some())
}

/// At the file's first added line, quoting it.
fn candidate(file: &FileDiff, message: String) -> Candidate {
    let first = file
        .hunks
        .iter()
        .flat_map(|h| &h.lines)
        .find(|l| l.kind == LineKind::Added);
    let line = first.and_then(|l| l.new_line).unwrap_or(1);
    let text = first.map(|l| l.text.as_str()).unwrap_or_default();
    candidate_at(file.path(), line, text, message)
}

fn candidate_at(file: &str, line: u32, text: &str, message: String) -> Candidate {
    Candidate::said(
        "bugloop",
        Hit::at("shadowing", Level::Warning, (file, line), message),
        (Weight::Warning, Category::Reliability),
        crate::keys::safe_evidence(text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_of_an_own_module_by_its_alias_is_said_and_a_packages_is_not() {
        let tree = tempfile::tempdir().unwrap();
        let config = "{ \"compilerOptions\": { \"paths\": { \"@app/*\": [\"src/*\"] } } }";
        std::fs::write(tree.path().join("tsconfig.json"), config).unwrap();
        let lines = [
            "declare module \"@app/db\" { export const find: any }",
            "declare module 'express' {",
            "export declare module '@app/cart';",
        ];
        let found = shadows_added(
            &crate::scope::adding("types/shim.d.ts", &lines),
            tree.path(),
        );
        let said: Vec<u32> = found.iter().map(|c| c.hit.line).collect();
        assert_eq!(said, [1, 3], "{found:?}");
        assert!(
            found[0]
                .hit
                .message
                .contains("declares the module `@app/db`")
        );
    }

    #[test]
    fn a_standard_modules_name_at_a_root_and_a_stub_of_an_own_module_are_said() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("lib.py"), "def add(a, b): ...\n").unwrap();
        let mut diff = crate::scope::adding("typing.py", &["def cast(t, v): ..."]);
        for (path, line) in [
            ("lib.pyi", "def add(a, b) -> object: ..."),
            ("src/re/__init__.py", "match = None"),
            ("lib/__init__.pyi", "def add(a, b) -> object: ..."),
            ("python/os.py", "def getenv(k) -> str: ..."),
            ("pkg/typing.py", "x = 1"),
            ("other.pyi", "x: int"),
            ("test.py", "x = 1"),
        ] {
            diff.files.extend(crate::scope::adding(path, &[line]).files);
        }
        let found = shadows_added(&diff, tree.path());
        let said: Vec<(&str, &str)> = found
            .iter()
            .map(|c| (c.hit.file.as_str(), c.hit.message.as_str()))
            .collect();
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(
            said[0]
                .1
                .contains("instead of the standard library's `typing`")
        );
        assert_eq!(said[1].0, "lib.pyi");
        assert!(
            said[1]
                .1
                .contains("stub of the project's own module `lib.py`")
        );
        assert!(said[2].1.contains("standard library's `re`"));
        let package = "`lib/__init__.pyi`, a stub of the project's own module `lib.py`";
        assert!(said[3].1.contains(package), "{}", said[3].1);
        assert!(said[4].1.contains("standard library's `os`"));
        assert_eq!(found[0].evidence, "def cast(t, v): ...");
    }
}
