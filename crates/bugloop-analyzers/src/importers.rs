//! The files a change may break without editing them: the tree's files that import a module the
//! change edits, renames or deletes (directly, or through a package's `index.ts` or
//! `__init__.py` that imports it). Read from their import lines as text, never run; a name
//! matched loosely is only a file more for the type checker, which then says whether it broke.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use bugloop_diff::{ChangeKind, Diff};
use serde::Serialize;

/// The code at the change's base, file by file: how bugloop reads the base commit.
pub trait BaseTree: std::fmt::Debug + Sync {
    /// `path` (as the diff names it) as the base commit has it, when it is at most `max` bytes.
    fn file(&self, path: &str, max: u64) -> BaseFile;
}

/// A file of the base commit as [`BaseTree`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseFile {
    Content(Vec<u8>),
    /// Larger than was asked for: not read.
    Larger,
    /// Not there, or git could not read it.
    Unreadable,
}

/// What checking the files that import the change came to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportersChecked {
    /// The files importing a module the change edits that were checked.
    pub files: Vec<String>,
    /// Files importing it that were not checked, over the limit ([`MAX_IMPORTERS`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub left_out: usize,
    /// Diagnostics in them that count and that the tool did not report at the base.
    pub broken: usize,
    /// Why they could not be compared with the base (the change's own files were still
    /// checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_checked: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The languages whose type checker is also run on a change's importers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    TypeScript,
    Python,
}

impl Language {
    /// The language a built-in type checker checks.
    pub(crate) fn checked_by(tool: &str) -> Option<Language> {
        match tool {
            "tsc" => Some(Language::TypeScript),
            "ty" => Some(Language::Python),
            _ => None,
        }
    }

    /// Whether `path` is a module of this language the checker is given.
    pub(crate) fn is_module(self, path: &str) -> bool {
        match self {
            Language::TypeScript => {
                [".ts", ".tsx", ".mts", ".cts"]
                    .iter()
                    .any(|ending| path.ends_with(ending))
                    && !path.ends_with(".d.ts")
            }
            Language::Python => path.ends_with(".py") || path.ends_with(".pyi"),
        }
    }

    /// Whether the checker reads `path` when it checks a module (a module, a declaration, the
    /// configuration and data it resolves): what a copy of the tree must hold.
    pub(crate) fn reads(self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        match self {
            Language::TypeScript => [
                ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".json",
            ]
            .iter()
            .any(|ending| name.ends_with(ending)),
            Language::Python => {
                [".py", ".pyi", ".toml", ".cfg"]
                    .iter()
                    .any(|ending| name.ends_with(ending))
                    || name == "py.typed"
            }
        }
    }
}

/// Most importers checked for one change: a change to a module everything imports checks a
/// sample, not the whole tree.
pub(crate) const MAX_IMPORTERS: usize = 100;

/// How many package entries deep a module is followed, and how many modules at most.
const MAX_BARREL_DEPTH: usize = 8;
const MAX_AFFECTED: usize = 200;

/// Most files of the tree read for their imports.
const MAX_READ: usize = 20_000;

/// How much of a file is read for its imports, and of all files at most: a tree of thousands
/// of large files is not read whole on every review.
const HEAD_BYTES: u64 = 64 << 10;
const MAX_READ_BYTES: u64 = 128 << 20;

/// The tree's files of `language` (touched by the change or not) that import a module it
/// edits, renames or deletes, sorted, at most [`MAX_IMPORTERS`]; read as regular files reached
/// through no link, outside `node_modules` and hidden directories.
pub(crate) fn importers(workspace: &Path, diff: &Diff, language: Language) -> Importers {
    // The modules whose old interface the change may take away: edited, renamed or deleted.
    let changed: Vec<&str> = diff
        .files
        .iter()
        .filter(|f| f.change != ChangeKind::Added && f.change != ChangeKind::Copied)
        .filter_map(|f| f.old_path.as_deref())
        .filter(|path| language.is_module(path))
        .collect();
    if changed.is_empty() {
        return Importers::default();
    }
    let mut affected: BTreeSet<String> = changed.iter().map(|p| module_key(p)).collect();
    let imports = imports_of_tree(workspace, language);
    // A package's entry (`index.ts`, `__init__.py`) that imports an affected module passes it
    // on to whoever imports the package: each round looks only for entries importing what the
    // last one added, at most [`MAX_BARREL_DEPTH`] rounds and [`MAX_AFFECTED`] modules (a branch
    // that adds a chain of a thousand entries does not make the scan take hours).
    let entries: Vec<(&String, &Vec<Import>)> = imports
        .iter()
        .filter(|(file, _)| is_package_entry(file))
        .collect();
    let mut last: BTreeSet<String> = affected.clone();
    for _ in 0..MAX_BARREL_DEPTH {
        let more: BTreeSet<String> = entries
            .iter()
            .map(|(file, imported)| (module_key(file), imported))
            .filter(|(key, _)| !affected.contains(key))
            .filter(|(_, imported)| {
                imported
                    .iter()
                    .any(|i| matches(i, &last, language).is_some())
            })
            .map(|(key, _)| key)
            .take(MAX_AFFECTED.saturating_sub(affected.len()))
            .collect();
        if more.is_empty() {
            break;
        }
        affected.extend(more.iter().cloned());
        last = more;
    }
    // A file the change touches is one too: a comment added at its end, or its mode changed,
    // does not mend its use of the old name (its lines the change adds are the tool's own run's).
    let mut found: Vec<(Strength, &String)> = imports
        .iter()
        .filter(|(file, _)| language.is_module(file))
        .filter_map(|(file, imported)| {
            let strongest = imported
                .iter()
                .filter_map(|i| matches(i, &affected, language))
                .max()?;
            Some((strongest, file))
        })
        .collect();
    // Over the limit, the files whose imports name the change for certain come first (a
    // package named like a changed module does not push them out).
    found.sort_by(|(a, x), (b, y)| b.cmp(a).then(x.cmp(y)));
    let total = found.len();
    let mut files: Vec<String> = found
        .into_iter()
        .take(MAX_IMPORTERS)
        .map(|(_, file)| file.clone())
        .collect();
    files.sort();
    Importers { files, total }
}

/// The files importing a change that are checked, and how many import it in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Importers {
    pub files: Vec<String>,
    pub total: usize,
}

/// A module a file imports.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Import {
    /// A path from the root: a relative import, or an alias the project's `paths` resolve.
    Path(String),
    /// As written (a package, or a module found from a path root): matched by its ending.
    Named(String),
}

/// How surely an import names an affected module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// By its ending alone (`@/user`, a Python module from a path root of a parent package).
    Loose,
    /// The same path, or a name that ends with the module's path.
    Sure,
}

/// A module's path without its ending (`src/user.service`), and a package's entry as its
/// directory (`src/services/index.ts` and `app/__init__.py` are `src/services` and `app`).
fn module_key(path: &str) -> String {
    let (dir, name) = match path.rsplit_once('/') {
        Some((dir, name)) => (Some(dir), name),
        None => (None, path),
    };
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let stem = stem.strip_suffix(".d").unwrap_or(stem);
    match (dir, stem) {
        (Some(dir), "index" | "__init__") => dir.to_owned(),
        (None, "index" | "__init__") => String::new(),
        (Some(dir), stem) => format!("{dir}/{stem}"),
        (None, stem) => stem.to_owned(),
    }
}

fn is_package_entry(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with("index.") || name.starts_with("__init__.")
}

/// Whether, and how surely, an import names one of the `affected` modules: the same path; a
/// name that ends with a module's path (a Python module found from a path root, a TypeScript
/// `baseUrl` import); more loosely, an alias of a form no package has (`@/user`, `~/user`,
/// `#user`) by what follows its first part, or a Python name a module's path ends with.
fn matches(import: &Import, affected: &BTreeSet<String>, language: Language) -> Option<Strength> {
    // A path that is `tail`, or ends with `/` and `tail` (no string is made for a comparison:
    // this runs for every import of the tree against every affected module).
    let ends = |module: &str, tail: &str| {
        !tail.is_empty()
            && (module == tail
                || module
                    .strip_suffix(tail)
                    .is_some_and(|head| head.ends_with('/')))
    };
    let name = match import {
        Import::Path(path) => return affected.contains(path).then_some(Strength::Sure),
        Import::Named(name) => name.as_str(),
    };
    let mut strength = None;
    for module in affected.iter().filter(|m| !m.is_empty()) {
        if ends(module, name) {
            return Some(Strength::Sure);
        }
        let loose = match language {
            Language::Python => ends(name, module),
            Language::TypeScript => {
                ["@/", "~/", "#", "$"].iter().any(|p| name.starts_with(p))
                    && name
                        .split_once('/')
                        .is_some_and(|(_, rest)| ends(module, rest))
            }
        };
        if loose {
            strength = Some(Strength::Loose);
        }
    }
    strength
}

/// Each file of the tree in `language` (by what the checker reads as modules) with the modules
/// it imports, as paths from the root where they are relative, as written otherwise.
fn imports_of_tree(workspace: &Path, language: Language) -> BTreeMap<String, Vec<Import>> {
    let aliases = match language {
        Language::TypeScript => Aliases::of(workspace),
        Language::Python => Aliases::default(),
    };
    let names = crate::tree::source_files(workspace)
        .map(|(_, name)| name)
        .filter(|name| language.is_module(name) || name.ends_with(".d.ts"))
        .take(MAX_READ);
    let mut read = 0u64;
    let mut imports = BTreeMap::new();
    for file in names {
        if read > MAX_READ_BYTES {
            break;
        }
        let Some(text) = read_head(&workspace.join(&file)) else {
            continue;
        };
        read += text.len() as u64;
        let imported = match language {
            Language::TypeScript => typescript_imports(&file, &text, &aliases),
            Language::Python => python_imports(&file, &text),
        };
        imports.insert(file, imported);
    }
    imports
}

fn read_head(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(HEAD_BYTES).read_to_end(&mut head))
        .ok()?;
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The modules a TypeScript file imports or re-exports (each specifier, [`specifiers`]),
/// relative ones resolved from the file's directory, without their ending.
fn typescript_imports(file: &str, text: &str, aliases: &Aliases) -> Vec<Import> {
    let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
    let key = |path: &str| module_key(&without_script_ending(path));
    let mut found = Vec::new();
    for line in text.lines() {
        for specifier in specifiers(line) {
            let relative = specifier.starts_with("./")
                || specifier.starts_with("../")
                || specifier == "."
                || specifier == "..";
            if relative {
                found.extend(join(dir, specifier).map(|path| Import::Path(key(&path))));
                continue;
            }
            let targets = aliases.resolve(specifier);
            if targets.is_empty() {
                found.push(Import::Named(key(specifier)));
            }
            found.extend(targets.iter().map(|path| Import::Path(key(path))));
        }
    }
    found
}

/// The project's `paths` (from its unchanged `tsconfig.json`, [`crate::tsconfig`]): each
/// pattern's text before and after its `*`, and its targets from the root.
#[derive(Debug, Default)]
struct Aliases(Vec<(String, String, Vec<String>)>);

impl Aliases {
    fn of(workspace: &Path) -> Aliases {
        let Some(options) = crate::tsconfig::project_options(workspace, &[]) else {
            return Aliases::default();
        };
        let Some(paths) = options.get("paths").and_then(|p| p.as_object()) else {
            return Aliases::default();
        };
        let root = format!("{}/", workspace.display());
        Aliases(
            paths
                .iter()
                .map(|(pattern, targets)| {
                    let (before, after) = pattern.split_once('*').unwrap_or((pattern, ""));
                    let targets = targets
                        .as_array()
                        .map(|t| t.iter().filter_map(|t| t.as_str()).collect::<Vec<_>>())
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|target| target.strip_prefix(&root).map(str::to_owned))
                        .collect();
                    (before.to_owned(), after.to_owned(), targets)
                })
                .collect(),
        )
    }

    /// The paths from the root a specifier may name through the aliases.
    fn resolve(&self, specifier: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (before, after, targets) in &self.0 {
            let Some(star) = specifier
                .strip_prefix(before.as_str())
                .and_then(|rest| rest.strip_suffix(after.as_str()))
            else {
                continue;
            };
            // A pattern without `*` names only itself.
            if !star.is_empty() && !targets.iter().any(|t| t.contains('*')) {
                continue;
            }
            found.extend(targets.iter().map(|target| target.replacen('*', star, 1)));
        }
        found
    }
}

/// A specifier's ending as TypeScript writes it for a module (`./user.js` is `./user.ts`).
fn without_script_ending(specifier: &str) -> String {
    for ending in [".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"] {
        if let Some(stem) = specifier.strip_suffix(ending) {
            return format!("{stem}.x");
        }
    }
    // Without an ending: `module_key` takes off what follows the last dot, so one is added.
    format!("{specifier}.x")
}

/// The module specifiers of a line of code: the strings quoted with `'`, `"` or `` ` `` right
/// after `from`, `import`, `import(` or `require(`.
fn specifiers(code: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = code[at..].find(['\'', '"', '`']).map(|s| s + at) {
        let quote = &code[start..=start];
        let Some(end) = code[start + 1..].find(quote).map(|e| e + start + 1) else {
            break;
        };
        let before = code[..start].trim_end();
        let names_a_module = ["from", "import", "import(", "require("]
            .iter()
            .any(|word| {
                before.strip_suffix(word).is_some_and(|rest| {
                    !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.')
                })
            });
        if names_a_module {
            found.push(&code[start + 1..end]);
        }
        at = end + 1;
    }
    found
}

/// `relative` (`../x/y`) from `dir`, as a path from the root; `None` above the root.
fn join(dir: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The modules a Python file imports, as paths (`app/services/user`): `import a.b` names
/// `a/b`; `from a import b, c` names `a`, `a/b` and `a/c`; a relative `from .x import y` is
/// resolved from the file's package.
fn python_imports(file: &str, text: &str) -> Vec<Import> {
    let package = file.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let code = line.split('#').next().unwrap_or("").trim();
        if let Some(names) = code.strip_prefix("import ") {
            for name in names.split(',') {
                let module = name.split_whitespace().next().unwrap_or("");
                found.push(Import::Named(module.replace('.', "/")));
            }
            continue;
        }
        let Some(rest) = code.strip_prefix("from ") else {
            continue;
        };
        let Some((from, names)) = rest.split_once(" import") else {
            continue;
        };
        let mut names = names.to_owned();
        // `from x import (\n  a,\n  b,\n)`
        if names.contains('(') && !names.contains(')') {
            for more in lines.by_ref() {
                names.push(' ');
                names.push_str(more.split('#').next().unwrap_or(""));
                if more.contains(')') {
                    break;
                }
            }
        }
        let from = from.trim();
        let Some(module) = python_from(package, from) else {
            continue;
        };
        // `from .x import y` names a path from the root; `from a.b import c` a module found
        // from a path root (the root, `src/`, ...).
        let import = |name: String| {
            if from.starts_with('.') {
                Import::Path(name)
            } else {
                Import::Named(name)
            }
        };
        for name in names
            .split([',', '(', ')', ' ', '\t'])
            .filter(|n| !n.is_empty() && *n != "as")
        {
            if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                found.push(import(if module.is_empty() {
                    name.to_owned()
                } else {
                    format!("{module}/{name}")
                }));
            }
        }
        found.push(import(module));
    }
    found
}

/// The module of `from X import` in a file of `package`: `.x` is `package/x`, `..x` the
/// parent's `x`, an absolute `a.b` is `a/b`.
fn python_from(package: &str, from: &str) -> Option<String> {
    let dots = from.chars().take_while(|c| *c == '.').count();
    let name = from[dots..].replace('.', "/");
    if dots == 0 {
        return Some(name);
    }
    let mut parts: Vec<&str> = package.split('/').filter(|p| !p.is_empty()).collect();
    for _ in 1..dots {
        parts.pop()?;
    }
    if !name.is_empty() {
        parts.push(&name);
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tree::test_tree as tree;

    fn editing(path: &str) -> Diff {
        bugloop_diff::parse(format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
        ))
    }

    #[test]
    fn module_keys_drop_the_ending_and_name_a_package_by_its_directory() {
        assert_eq!(module_key("src/user.service.ts"), "src/user.service");
        assert_eq!(module_key("src/services/index.ts"), "src/services");
        assert_eq!(module_key("types.d.ts"), "types");
        assert_eq!(module_key("app/__init__.py"), "app");
        assert_eq!(module_key("app/models.py"), "app/models");
        assert_eq!(module_key("index.ts"), "");
    }

    #[test]
    fn typescript_importers_by_relative_path_alias_and_barrel() {
        let dir = tree(&[
            ("src/user.ts", "export function getUser() {}\n"),
            ("src/app.ts", "import { getUser } from './user';\n"),
            (
                "src/deep/page.tsx",
                "import { getUser } from \"../user.js\";\n",
            ),
            ("src/aliased.ts", "import { getUser } from '@/user';\n"),
            (
                "src/other.ts",
                "import { x } from './users';\nexport const s = 'user';\nfrom('./user');\n",
            ),
            ("src/services/index.ts", "export * from '../user';\n"),
            (
                "src/via-barrel.ts",
                "import { getUser } from './services';\n",
            ),
            ("node_modules/p/index.ts", "import '../../src/user';\n"),
            ("src/lazy.ts", "const m = await import('./user');\n"),
            ("src/services/own.ts", "import { getUser } from '.';\n"),
            ("src/services/deep/up.ts", "import { getUser } from '..';\n"),
        ]);
        let found = importers(dir.path(), &editing("src/user.ts"), Language::TypeScript).files;
        assert_eq!(
            found,
            [
                "src/aliased.ts",
                "src/app.ts",
                "src/deep/page.tsx",
                "src/lazy.ts",
                "src/services/deep/up.ts",
                "src/services/index.ts",
                "src/services/own.ts",
                "src/via-barrel.ts"
            ]
        );
    }

    #[test]
    fn python_importers_by_absolute_relative_and_package_imports() {
        let dir = tree(&[
            ("app/__init__.py", "from .models import User\n"),
            ("app/models.py", "class User: ...\n"),
            ("app/views.py", "from .models import User\n"),
            ("app/api/routes.py", "from ..models import User\n"),
            ("scripts/run.py", "import app.models as m\n"),
            ("scripts/pkg.py", "from app import models\n"),
            ("scripts/via_init.py", "from app import User\n"),
            (
                "scripts/multi.py",
                "from app.models import (\n    User,\n)\n",
            ),
            (
                "scripts/unrelated.py",
                "import modelsx\n# from app.models import User\n",
            ),
        ]);
        let found = importers(dir.path(), &editing("app/models.py"), Language::Python).files;
        assert_eq!(
            found,
            [
                "app/__init__.py",
                "app/api/routes.py",
                "app/views.py",
                "scripts/multi.py",
                "scripts/pkg.py",
                "scripts/run.py",
                "scripts/via_init.py"
            ]
        );
    }

    /// The project's `paths` name a module for certain; a package whose name ends like a
    /// changed module's path (`@apollo/client`, `src/api/client.ts`) names nothing.
    #[test]
    fn aliases_resolve_through_the_projects_paths_and_packages_are_not_modules() {
        let dir = tree(&[
            (
                "tsconfig.json",
                r#"{ "compilerOptions": { "paths": {
                    "@acme/core": ["packages/core/src/index.ts"],
                    "@acme/core/*": ["packages/core/src/*"] } } }"#,
            ),
            ("packages/core/src/index.ts", "export * from './models';\n"),
            (
                "packages/core/src/models.ts",
                "export interface User { id: string }\n",
            ),
            ("apps/web/a.ts", "import { User } from '@acme/core';\n"),
            (
                "apps/web/b.ts",
                "import type { User } from '@acme/core/models';\n",
            ),
            ("src/api/client.ts", "export const client = 1;\n"),
            (
                "src/ui/c.ts",
                "import { ApolloClient } from '@apollo/client';\n",
            ),
        ]);
        let found = importers(
            dir.path(),
            &editing("packages/core/src/models.ts"),
            Language::TypeScript,
        );
        assert_eq!(
            found.files,
            [
                "apps/web/a.ts",
                "apps/web/b.ts",
                "packages/core/src/index.ts"
            ]
        );
        let client = importers(
            dir.path(),
            &editing("src/api/client.ts"),
            Language::TypeScript,
        );
        assert_eq!(client, Importers::default());
    }

    /// Over the limit, the files that import the change for certain are the ones checked, and
    /// the others are counted.
    #[test]
    fn over_the_limit_sure_importers_come_first() {
        let mut files: Vec<(String, String)> = (0..MAX_IMPORTERS + 5)
            .map(|i| {
                (
                    format!("a/loose{i:03}.ts"),
                    "import { x } from '@/user';\n".to_owned(),
                )
            })
            .collect();
        files.push((
            "z/sure.ts".into(),
            "import { x } from '../src/user';\n".into(),
        ));
        files.push(("src/user.ts".into(), "export const x = 1;\n".into()));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let dir = tree(&files);
        let found = importers(dir.path(), &editing("src/user.ts"), Language::TypeScript);
        assert_eq!(found.files.len(), MAX_IMPORTERS);
        assert_eq!(found.total, MAX_IMPORTERS + 6);
        assert!(found.files.contains(&"z/sure.ts".to_owned()));
    }

    /// A chain of package entries, each re-exporting the next, is followed eight deep: a branch
    /// that adds a thousand of them does not make the scan take hours.
    #[test]
    fn package_entries_are_followed_only_so_deep() {
        let mut files: Vec<(String, String)> = (0..12)
            .map(|k| {
                let next = if k == 0 {
                    "../../money".to_owned()
                } else {
                    format!("../c{}", k - 1)
                };
                (
                    format!("chain/c{k}/index.ts"),
                    format!("export * from '{next}';\n"),
                )
            })
            .collect();
        files.push(("money.ts".into(), "export const cents = 1;\n".into()));
        files.push((
            "near.ts".into(),
            "import { cents } from './chain/c6';\n".into(),
        ));
        files.push((
            "far.ts".into(),
            "import { cents } from './chain/c11';\n".into(),
        ));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        let dir = tree(&files);
        let found = importers(dir.path(), &editing("money.ts"), Language::TypeScript).files;
        assert!(found.contains(&"near.ts".to_owned()), "{found:?}");
        assert!(!found.contains(&"far.ts".to_owned()), "{found:?}");
    }

    #[test]
    fn an_added_file_or_another_language_has_no_importers() {
        let dir = tree(&[
            ("a.py", "import b\n"),
            ("b.py", "x = 1\n"),
            ("c.ts", "import './d';\n"),
        ]);
        let added = bugloop_diff::parse(
            "diff --git a/b.py b/b.py\nnew file mode 100644\n--- /dev/null\n+++ b/b.py\n@@ -0,0 +1 @@\n+x = 1\n",
        );
        assert!(
            importers(dir.path(), &added, Language::Python)
                .files
                .is_empty()
        );
        assert!(
            importers(dir.path(), &editing("d.ts"), Language::Python)
                .files
                .is_empty()
        );
    }

    #[test]
    fn a_deleted_or_renamed_module_is_one_whose_importers_may_break() {
        let dir = tree(&[("main.py", "from util import f\n"), ("helpers.py", "")]);
        let renamed = bugloop_diff::parse(
            "diff --git a/util.py b/helpers.py\nsimilarity index 100%\nrename from util.py\nrename to helpers.py\n",
        );
        assert_eq!(
            importers(dir.path(), &renamed, Language::Python).files,
            ["main.py"]
        );
    }
}
