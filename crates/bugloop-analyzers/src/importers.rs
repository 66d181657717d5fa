//! The files a change may break without editing them: the tree's files that import a module the
//! change edits, renames or deletes (directly, or through a package's `index.ts` or
//! `__init__.py` that imports it). Read from their import lines as text, never run; a name
//! matched loosely is only a file more for the type checker, which then says whether it broke.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use bugloop_diff::{ChangeKind, Diff};
use serde::Serialize;

use crate::imports::{
    Aliases, Import, module_key, python_imports, read_head, typescript_imports,
    typescript_reexports,
};

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
    /// A compiler's checker: the whole project was compiled again, at head and at the base,
    /// because its run reported a compile error off the change's lines (`files` is empty).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub whole_project: bool,
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
            Language::TypeScript => {
                [
                    ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".json",
                ]
                .iter()
                .any(|ending| name.ends_with(ending))
                    || name == "pnpm-workspace.yaml"
            }
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

/// How much of all files is read for their imports at most: a tree of thousands of large
/// files is not read whole on every review.
const MAX_READ_BYTES: u64 = 128 << 20;

/// The tree's files of `language` (touched by the change or not) that import a module it
/// edits, renames or deletes, sorted, at most [`MAX_IMPORTERS`]; read as regular files reached
/// through no link, outside `node_modules` and hidden directories.
#[cfg(test)]
pub(crate) fn importers(workspace: &Path, diff: &Diff, language: Language) -> Importers {
    importers_within(
        workspace,
        diff,
        language,
        (MAX_READ, MAX_READ_BYTES),
        Vec::new(),
    )
}

/// [`importers`], and those of the base's workspace packages the tree at head no longer
/// resolves ([`crate::workspaces::names_lost`], from the base's versions of the manifests the
/// change edits, `at_base`): a change that breaks what declares the workspace breaks them.
pub(crate) fn importers_of_change(
    workspace: &Path,
    diff: &Diff,
    language: Language,
    at_base: &BTreeMap<String, Option<Vec<u8>>>,
) -> Importers {
    let lost = match language {
        Language::TypeScript => crate::workspaces::names_lost(workspace, at_base),
        Language::Python => Vec::new(),
    };
    importers_within(workspace, diff, language, (MAX_READ, MAX_READ_BYTES), lost)
}

/// [`importers`], reading at most `limits` (files, bytes) of the tree, the package names `lost`
/// among what the change affects.
fn importers_within(
    workspace: &Path,
    diff: &Diff,
    language: Language,
    limits: (usize, u64),
    lost: Vec<String>,
) -> Importers {
    // The modules whose old interface the change may take away: edited, renamed or deleted.
    let changed: Vec<&str> = diff
        .files
        .iter()
        .filter(|f| f.change != ChangeKind::Added && f.change != ChangeKind::Copied)
        .filter_map(|f| f.old_path.as_deref())
        .filter(|path| language.is_module(path))
        .collect();
    // A package's manifest the change edits: a name it renames, an entry it moves.
    let (names, entries) = match language {
        Language::TypeScript => crate::workspaces::manifests_changed(workspace, diff),
        Language::Python => (Vec::new(), Vec::new()),
    };
    if changed.is_empty() && names.is_empty() && entries.is_empty() && lost.is_empty() {
        return Importers::default();
    }
    let mut affected: BTreeSet<String> = changed.iter().map(|p| module_key(p)).collect();
    affected.extend(names);
    affected.extend(lost);
    affected.extend(entries.iter().map(|entry| module_key(entry)));
    let removed = removed_names(diff, language);
    // A configuration the change edits maps nothing: its base's is what the copy checks under.
    let edited: Vec<String> = diff
        .files
        .iter()
        .flat_map(|f| [&f.old_path, &f.new_path])
        .flatten()
        .cloned()
        .collect();
    let aliases = match language {
        Language::TypeScript => Aliases::of(workspace, &edited),
        Language::Python => Aliases::default(),
    };
    let (imports, incomplete) = imports_of_tree(workspace, language, &aliases, &removed, limits);
    // A workspace package's entry passes on what it imports whatever its name (`src/main.ts`).
    let named_entries = match language {
        Language::TypeScript => crate::workspaces::entry_files(workspace),
        Language::Python => BTreeSet::new(),
    };
    through_package_entries(&mut affected, &imports, language, &named_entries);
    // A file the change touches is one too: a comment added at its end, or its mode changed,
    // does not mend its use of the old name (its lines the change adds are the tool's own run's).
    let mut found: Vec<((Strength, bool), &String)> = imports
        .iter()
        .filter(|(file, _)| language.is_module(file))
        .filter_map(|(file, scanned)| {
            let (imported, names_removed) = (&scanned.imported, &scanned.names_removed);
            let strongest = imported
                .iter()
                .filter_map(|i| matches(i, &affected, language))
                .max()?;
            Some(((strongest, *names_removed), file))
        })
        .collect();
    // Over the limit, the files whose imports name the change for certain come first (a
    // package named like a changed module does not push them out), and of those the ones that
    // use a name the change takes away.
    found.sort_by(|(a, x), (b, y)| b.cmp(a).then(x.cmp(y)));
    let total = found.len();
    let mut files: Vec<String> = found
        .into_iter()
        .take(MAX_IMPORTERS)
        .map(|(_, file)| file.clone())
        .collect();
    files.sort();
    Importers {
        files,
        total,
        incomplete,
    }
}

/// Adds to `affected` the package entries (`index.ts`, `__init__.py`) that import an affected
/// module, which pass it on to whoever imports the package: each round looks only for entries
/// importing what the last one added, at most [`MAX_BARREL_DEPTH`] rounds and [`MAX_AFFECTED`]
/// modules (a branch that adds a chain of a thousand entries does not make the scan take
/// hours).
fn through_package_entries(
    affected: &mut BTreeSet<String>,
    imports: &BTreeMap<String, Scanned>,
    language: Language,
    named_entries: &BTreeSet<String>,
) {
    // A package's entry passes on all it imports; any other module what it re-exports.
    let entries: Vec<(&String, &Vec<Import>)> = imports
        .iter()
        .filter_map(|(file, scanned)| {
            if is_package_entry(file) || named_entries.contains(file) {
                Some((file, &scanned.imported))
            } else {
                (!scanned.reexported.is_empty()).then_some((file, &scanned.reexported))
            }
        })
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
}

/// The names on the lines the change takes out of its modules of `language` that its added
/// lines there do not have again (a function renamed, a parameter dropped): an importer that
/// uses one is the likeliest to break.
fn removed_names(diff: &Diff, language: Language) -> BTreeSet<String> {
    let mut removed = BTreeSet::new();
    for file in diff
        .files
        .iter()
        .filter(|f| f.old_path.as_deref().is_some_and(|p| language.is_module(p)))
    {
        let lines = || file.hunks.iter().flat_map(|h| &h.lines);
        let kept: BTreeSet<&str> = lines()
            .filter(|l| l.kind == bugloop_diff::LineKind::Added)
            .flat_map(|l| words(&l.text))
            .collect();
        removed.extend(
            lines()
                .filter(|l| l.kind == bugloop_diff::LineKind::Removed)
                .flat_map(|l| words(&l.text))
                .filter(|word| word.len() >= 3 && !kept.contains(word))
                .map(str::to_owned),
        );
    }
    removed
}

/// The words of `text` that could be names.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|word| word.chars().next().is_some_and(|c| !c.is_ascii_digit()))
}

/// The files importing a change that are checked, and how many import it in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Importers {
    pub files: Vec<String>,
    pub total: usize,
    /// The tree has more source files than are read for their imports: some importers may not
    /// have been found.
    pub incomplete: bool,
}

/// How surely an import names an affected module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// By its ending alone (`@/user`, a Python module from a path root of a parent package).
    Loose,
    /// The same path, or a name that ends with the module's path.
    Sure,
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
                let aliased = ["@/", "~/", "#", "$"].iter().any(|p| name.starts_with(p))
                    && name
                        .split_once('/')
                        .is_some_and(|(_, rest)| ends(module, rest));
                // A module of a package the change renames (`@acme/core/money`).
                let of_package = name
                    .strip_prefix(module.as_str())
                    .is_some_and(|rest| rest.starts_with('/'));
                aliased || of_package
            }
        };
        if loose {
            strength = Some(Strength::Loose);
        }
    }
    strength
}

/// Each file of the tree in `language` (by what the checker reads as modules) with the modules
/// it imports, as paths from the root where they are relative, as written otherwise, and
/// whether its text names one of `removed` (as a word); and whether the tree held more than
/// `limits` (files, bytes) let be read.
fn imports_of_tree(
    workspace: &Path,
    language: Language,
    aliases: &Aliases,
    removed: &BTreeSet<String>,
    (max_files, max_bytes): (usize, u64),
) -> (BTreeMap<String, Scanned>, bool) {
    let names = crate::tree::source_files(workspace)
        .map(|(_, name)| name)
        .filter(|name| language.is_module(name) || name.ends_with(".d.ts"));
    let (mut read, mut files) = (0u64, 0usize);
    let mut imports = BTreeMap::new();
    for file in names {
        files += 1;
        if read > max_bytes || files > max_files {
            return (imports, true);
        }
        let Some(text) = read_head(&workspace.join(&file)) else {
            continue;
        };
        read += text.len() as u64;
        let (imported, reexported) = match language {
            Language::TypeScript => (
                typescript_imports(&file, &text, aliases),
                typescript_reexports(&file, &text, aliases),
            ),
            Language::Python => (python_imports(&file, &text), Vec::new()),
        };
        let names_removed = words(&text).any(|word| removed.contains(word));
        imports.insert(
            file,
            Scanned {
                imported,
                reexported,
                names_removed,
            },
        );
    }
    (imports, false)
}

/// What the scan read of a file: what it imports, what of that it re-exports, and whether it
/// names one of the names the change takes away.
#[derive(Debug)]
struct Scanned {
    imported: Vec<Import>,
    reexported: Vec<Import>,
    names_removed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tree::test_tree as tree;

    fn owned_tree(files: &[(String, String)]) -> tempfile::TempDir {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str()))
            .collect();
        tree(&files)
    }

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
        let dir = owned_tree(&files);
        let found = importers(dir.path(), &editing("src/user.ts"), Language::TypeScript);
        assert_eq!(found.files.len(), MAX_IMPORTERS);
        assert_eq!(found.total, MAX_IMPORTERS + 6);
        assert!(found.files.contains(&"z/sure.ts".to_owned()));
    }

    /// Of many sure importers, the ones that use a name the change takes away are checked.
    #[test]
    fn over_the_limit_importers_using_a_removed_name_come_first() {
        let mut files: Vec<(String, String)> = (0..MAX_IMPORTERS + 5)
            .map(|i| {
                (
                    format!("a/api{i:03}.ts"),
                    "import { get } from '../http';\n".to_owned(),
                )
            })
            .collect();
        files.push((
            "z/cart.ts".into(),
            "import { post } from '../http';\n".into(),
        ));
        files.push((
            "http.ts".into(),
            "export const get = 1;\nexport const send = 2;\n".into(),
        ));
        let dir = owned_tree(&files);
        let renamed = bugloop_diff::parse(
            "diff --git a/http.ts b/http.ts\n--- a/http.ts\n+++ b/http.ts\n@@ -1,2 +1,2 @@\n export const get = 1;\n-export const post = 2;\n+export const send = 2;\n",
        );
        let found = importers(dir.path(), &renamed, Language::TypeScript);
        assert_eq!(found.total, MAX_IMPORTERS + 6);
        assert!(found.files.contains(&"z/cart.ts".to_owned()), "{found:?}");
    }

    /// A tree with more source files than are read says so: a branch that adds thousands of
    /// files before an importer cannot make it look as if nothing imports the change.
    #[test]
    fn a_tree_larger_than_is_read_is_said() {
        let dir = tree(&[
            ("a.ts", "export const x = 1;\n"),
            ("b.ts", "export const y = 2;\n"),
            ("c.ts", "import { x } from './a';\n"),
        ]);
        let whole = importers(dir.path(), &editing("a.ts"), Language::TypeScript);
        assert_eq!((whole.files.len(), whole.incomplete), (1, false));
        let part = importers_within(
            dir.path(),
            &editing("a.ts"),
            Language::TypeScript,
            (2, 1 << 20),
            Vec::new(),
        );
        assert!(part.incomplete, "{part:?}");
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
        let dir = owned_tree(&files);
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
