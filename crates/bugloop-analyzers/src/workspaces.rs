//! A monorepo's own packages: `import { x } from "@acme/core"` names a package of
//! the tree (a workspace of the root `package.json`'s `workspaces`, or of
//! `pnpm-workspace.yaml`'s `packages`), which an install links into `node_modules`. A checkout
//! has no `node_modules`, so each is given to tsc as a `paths` alias of its source entry: a
//! change to `@acme/core` is then checked against the apps that import it, as a relative
//! import would be.
//!
//! The same holds of a Python workspace (uv's `[tool.uv.workspace]`): `from acme_core import x`
//! names a member's module under its `src`, which ty is given as a search path.
//!
//! Read as the tree's other files are (regular files, no link, bounded sizes); a package's
//! entry leads only to a file of the tree. A name the project's own `paths` map is the
//! project's.

use std::path::{Path, PathBuf};

use globset::{GlobSet, GlobSetBuilder};
use serde_json::{Map, Value};

/// The largest manifest read: as large as a checker's copy of the tree takes. A larger one
/// declares no package, and the files importing it are said to no longer find it.
const MAX_MANIFEST: u64 = 2 << 20;
/// Most packages made aliases (a tree of a thousand `package.json` files is not read whole).
const MAX_PACKAGES: usize = 5_000;
/// Most subpaths of one package's `exports` read.
const MAX_SUBPATHS: usize = 100;
/// Most `package.json` files looked at for a workspace.
const MAX_MANIFESTS: usize = 20_000;

/// Where a built entry's source is: `dist/index.js` was built from `src/index.ts`.
const BUILT: &[&str] = &[
    "dist", "build", "lib", "out", "esm", "cjs", "types", "es", "module",
];
const SOURCE_ENDINGS: &[&str] = &[".ts", ".tsx", ".mts", ".cts"];
/// A conditional export's conditions, in the order a type checker reading sources wants them.
const CONDITIONS: &[&str] = &[
    "types",
    "typescript",
    "source",
    "development",
    "import",
    "module",
    "browser",
    "node",
    "default",
    "require",
];

/// Adds the tree's workspace packages to the `paths` of tsc's `options` (absolute targets,
/// as [`crate::tsconfig::options_at`] gives the project's): each package's name as its
/// source entry, and `name/*` as what is under its `src` and its directory. A name the
/// project's `paths` already map is left as the project has it.
pub(crate) fn add_package_paths(workspace: &Path, options: &mut Map<String, Value>) {
    let packages = packages(workspace);
    if packages.is_empty() {
        return;
    }
    let paths = options
        .entry("paths")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(paths) = paths else {
        return;
    };
    let absolute = |relative: &str| Value::String(workspace.join(relative).display().to_string());
    for package in packages {
        let under = |sub: &str| crate::tree::in_dir(&package.dir, sub);
        let mut aliases = vec![(
            format!("{}/*", package.name),
            vec![absolute(&under("src/*")), absolute(&under("*"))],
        )];
        if let Some(entry) = &package.entry {
            aliases.push((package.name.clone(), vec![absolute(entry)]));
        }
        for (subpath, source) in &package.subpaths {
            aliases.push((
                format!("{}/{subpath}", package.name),
                vec![absolute(source)],
            ));
        }
        for (pattern, targets) in aliases {
            paths
                .entry(pattern)
                .or_insert_with(|| Value::Array(targets));
        }
    }
}

/// What links each package of the workspace at `workspace` into the `node_modules` of a copy
/// of it (which holds no `node_modules` of the branch's) as an install would, for a tool that
/// resolves packages only there (biome): a `package.json` (its path, its content) whose `types`
/// is the package's source entry. A name npm would not install is passed over.
pub(crate) fn package_links(workspace: &Path) -> Vec<(String, Vec<u8>)> {
    let mut links = Vec::new();
    for package in packages(workspace) {
        let Some(entry) = &package.entry else {
            continue;
        };
        if !installable(&package.name) {
            continue;
        }
        let up = "../".repeat(1 + package.name.split('/').count());
        let manifest = serde_json::json!({ "name": package.name, "types": format!("{up}{entry}") });
        links.push((
            format!("node_modules/{}/package.json", package.name),
            manifest.to_string().into_bytes(),
        ));
    }
    links
}

/// Whether npm installs a package of this name (`name` or `@scope/name`, of letters, digits,
/// `-`, `.`, `_` and `~`, not starting with `.` or `_`).
fn installable(name: &str) -> bool {
    let part = |part: &str| {
        !part.is_empty()
            && !part.starts_with(['.', '_'])
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~'))
    };
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, name)| part(scope) && part(name)),
        None => part(name),
    }
}

/// The files the workspace's packages resolve to by their names (entries and subpath
/// exports), from the root.
pub(crate) fn entry_files(workspace: &Path) -> std::collections::BTreeSet<String> {
    packages(workspace)
        .into_iter()
        .flat_map(|package| {
            let subpaths = package.subpaths.into_iter().map(|(_, source)| source);
            package.entry.into_iter().chain(subpaths)
        })
        .filter(|file| !file.contains('*'))
        .collect()
}

/// A package of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Package {
    name: String,
    /// Its directory from the root (`packages/core`).
    dir: String,
    /// The file of the tree its name resolves to, from the root, where one is found.
    entry: Option<String>,
    /// Its subpaths its `exports` name one by one (`./money`), each with the file of the tree it
    /// resolves to.
    subpaths: Vec<(String, String)>,
}

/// The workspace's packages, by their directories' order, at most [`MAX_PACKAGES`]. A name two
/// packages claim is neither's (an install refuses it): a package of the branch's named as
/// another is not taken for it.
fn packages(workspace: &Path) -> Vec<Package> {
    let patterns = member_patterns(workspace);
    let Some(members) = glob_set(&patterns) else {
        return Vec::new();
    };
    let excluded = glob_set(&negated(&patterns));
    let found: Vec<Package> = member_dirs(workspace, "package.json", &members, excluded.as_ref())
        .into_iter()
        .filter_map(|dir| package(workspace, dir))
        .take(MAX_PACKAGES)
        .collect();
    let claimed = |name: &str| found.iter().filter(|p| p.name == name).count();
    found
        .iter()
        .filter(|package| claimed(&package.name) == 1)
        .cloned()
        .collect()
}

/// The names of the base's workspace packages that the tree at head does not resolve to one
/// package: where the change edits what declares the workspace (the root `package.json`,
/// `pnpm-workspace.yaml`) or a package's manifest, whose base versions `at_base` holds (`None`:
/// not at the base). Their importers are what a broken workspace breaks, so they are checked.
pub(crate) fn names_lost(
    workspace: &Path,
    at_base: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Vec<String> {
    if at_base.is_empty() {
        return Vec::new();
    }
    let read = |name: &str| match at_base.get(name) {
        Some(content) => content.clone(),
        None => crate::tree::read_at_most(workspace, name, MAX_MANIFEST),
    };
    let patterns = patterns_of(
        read("package.json").as_deref(),
        read("pnpm-workspace.yaml").as_deref(),
    );
    let Some(members) = glob_set(&patterns) else {
        return Vec::new();
    };
    let excluded = glob_set(&negated(&patterns));
    let mut dirs = member_dirs(workspace, "package.json", &members, excluded.as_ref());
    dirs.extend(
        at_base
            .keys()
            .filter_map(|name| name.strip_suffix("/package.json"))
            .filter(|dir| members.is_match(dir))
            .map(str::to_owned),
    );
    dirs.sort();
    dirs.dedup();
    let at_head: Vec<String> = packages(workspace).into_iter().map(|p| p.name).collect();
    dirs.iter()
        .take(MAX_PACKAGES)
        .filter_map(|dir| {
            let bytes = read(&format!("{dir}/package.json"))?;
            let manifest: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
            let name = manifest.get("name")?.as_str()?.trim().to_owned();
            (!name.is_empty() && !at_head.contains(&name)).then_some(name)
        })
        .collect()
}

/// The directories below the root holding a `manifest` that `members` match and `excluded`
/// does not, in the walk's order (outside `node_modules` and hidden directories).
fn member_dirs(
    workspace: &Path,
    manifest: &str,
    members: &GlobSet,
    excluded: Option<&GlobSet>,
) -> Vec<String> {
    let ending = format!("/{manifest}");
    crate::tree::source_files(workspace)
        .map(|(_, name)| name)
        .filter(|name| name.ends_with(&ending))
        .take(MAX_MANIFESTS)
        .filter_map(|name| name.strip_suffix(&ending).map(str::to_owned))
        .filter(|dir| members.is_match(dir) && !excluded.is_some_and(|set| set.is_match(dir)))
        .collect()
}

/// The patterns of the directories the root declares as its JavaScript workspace's packages.
fn member_patterns(workspace: &Path) -> Vec<String> {
    patterns_of(
        crate::tree::read_at_most(workspace, "package.json", MAX_MANIFEST).as_deref(),
        crate::tree::read_at_most(workspace, "pnpm-workspace.yaml", MAX_MANIFEST).as_deref(),
    )
}

/// The patterns a root `package.json` (`workspaces`) and a `pnpm-workspace.yaml` (`packages`)
/// declare, from their bytes.
fn patterns_of(root_manifest: Option<&[u8]>, pnpm: Option<&[u8]>) -> Vec<String> {
    let mut patterns: Vec<String> = Vec::new();
    let root = root_manifest.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
    if let Some(Value::Object(root)) = root {
        let listed = match root.get("workspaces") {
            Some(Value::Array(list)) => Some(list),
            Some(Value::Object(object)) => object.get("packages").and_then(Value::as_array),
            _ => None,
        };
        patterns.extend(
            listed
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
    }
    patterns.extend(pnpm.map(pnpm_patterns).unwrap_or_default());
    patterns
}

/// Directory patterns as one set (negated ones, and those leading out of the tree, left out);
/// `None` where none is left.
/// The patterns a list excludes (`!**/test/**`), without their `!`.
fn negated(patterns: &[String]) -> Vec<String> {
    patterns
        .iter()
        .filter_map(|p| p.trim().strip_prefix('!').map(str::to_owned))
        .collect()
}

fn glob_set(patterns: &[String]) -> Option<GlobSet> {
    let mut set = GlobSetBuilder::new();
    let mut any = false;
    for pattern in patterns {
        let pattern = pattern
            .trim()
            .trim_start_matches("./")
            .trim_end_matches('/');
        if pattern.is_empty() || pattern.starts_with('!') || pattern.contains("..") {
            continue;
        }
        let Ok(glob) = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
        else {
            continue;
        };
        set.add(glob);
        any = true;
    }
    any.then(|| set.build().ok()).flatten()
}

/// The import roots of a Python workspace's members (uv's `[tool.uv.workspace]` `members`,
/// less its `exclude`, each a directory with a `pyproject.toml`): the member's `src` where it
/// has one, else its directory; absolute, at most [`MAX_PACKAGES`]. An install puts them on
/// the path; a checkout has no environment, so ty is told of them.
pub(crate) fn python_roots(workspace: &Path) -> Vec<PathBuf> {
    let Some(uv) = crate::tree::read_at_most(workspace, "pyproject.toml", MAX_MANIFEST)
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
        .and_then(|doc| {
            let workspace = doc.get("tool")?.get("uv")?.get("workspace")?;
            Some((
                strings(workspace.get("members")),
                strings(workspace.get("exclude")),
            ))
        })
    else {
        return Vec::new();
    };
    let (members, excluded) = uv;
    let Some(members) = glob_set(&members) else {
        return Vec::new();
    };
    let excluded = glob_set(&excluded);
    member_dirs(workspace, "pyproject.toml", &members, excluded.as_ref())
        .into_iter()
        .take(MAX_PACKAGES)
        .map(|dir| {
            let src = workspace.join(&dir).join("src");
            match std::fs::symlink_metadata(&src) {
                Ok(meta) if meta.is_dir() => src,
                _ => workspace.join(dir),
            }
        })
        .collect()
}

/// A TOML array's strings.
fn strings(item: Option<&toml_edit::Item>) -> Vec<String> {
    item.and_then(toml_edit::Item::as_array)
        .into_iter()
        .flatten()
        .filter_map(|value| value.as_str().map(str::to_owned))
        .collect()
}

/// `pnpm-workspace.yaml`'s `packages`, from its bytes: its `packages:` key at the start of a
/// line, and the list under it (`  - "apps/*"`) or after it (`["apps/*"]`). Read by lines, not
/// by a YAML parser: a document nested a hundred thousand deep took a parser 40 s to refuse,
/// and the list is all that is read of it.
fn pnpm_patterns(text: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let unquoted = |item: &str| {
        let item = item.split(" #").next().unwrap_or_default().trim();
        item.trim_matches(['"', '\'']).to_owned()
    };
    let mut lines = text.lines();
    let Some(rest) = lines.find_map(|line| line.strip_prefix("packages:")) else {
        return Vec::new();
    };
    let rest = rest.split(" #").next().unwrap_or_default().trim();
    if let Some(flow) = rest.strip_prefix('[') {
        let flow = flow.split(']').next().unwrap_or_default();
        return flow
            .split(',')
            .map(unquoted)
            .filter(|p| !p.is_empty())
            .collect();
    }
    lines
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .take_while(|line| line.starts_with([' ', '\t', '-']))
        .filter_map(|line| line.trim_start().strip_prefix('-'))
        .map(unquoted)
        .filter(|p| !p.is_empty())
        .collect()
}

/// What a change to a package's manifest (`package.json`, edited, renamed or deleted) may take
/// from the files that import the package: its name where the change renames it (what importers
/// still name no longer resolves), and its entry (a file, from the root) where the change edits
/// what names the entry.
pub(crate) fn manifests_changed(
    workspace: &Path,
    diff: &bugloop_diff::Diff,
) -> (Vec<String>, Vec<String>) {
    use bugloop_diff::{ChangeKind, LineKind};
    let (mut names, mut entries) = (Vec::new(), Vec::new());
    for file in &diff.files {
        let Some(old) = file.old_path.as_deref() else {
            continue;
        };
        if matches!(file.change, ChangeKind::Added | ChangeKind::Copied)
            || !(old == "package.json" || old.ends_with("/package.json"))
        {
            continue;
        }
        let lines = || file.hunks.iter().flat_map(|h| &h.lines);
        let names_of = |kind: LineKind| -> Vec<String> {
            lines()
                .filter(|l| l.kind == kind)
                .filter_map(|l| manifest_name(&l.text))
                .collect()
        };
        let kept = names_of(LineKind::Added);
        names.extend(
            names_of(LineKind::Removed)
                .into_iter()
                .filter(|name| !kept.contains(name)),
        );
        let entry_touched = lines().filter(|l| l.kind != LineKind::Context).any(|l| {
            [
                "\"main\"",
                "\"module\"",
                "\"types\"",
                "\"typings\"",
                "\"source\"",
                "\"exports\"",
                "\"./",
            ]
            .iter()
            .any(|key| l.text.contains(key))
        });
        let dir = file
            .new_path
            .as_deref()
            .and_then(|p| p.strip_suffix("package.json"));
        if let (true, Some(dir)) = (entry_touched, dir) {
            let dir = dir.trim_end_matches('/').to_owned();
            if let Some(entry) = package(workspace, dir).and_then(|p| p.entry) {
                entries.push(entry);
            }
        }
    }
    (names, entries)
}

/// The name a manifest's line gives (`"name": "@acme/core",`, also within a one-line
/// manifest).
fn manifest_name(line: &str) -> Option<String> {
    line.match_indices("\"name\"").find_map(|(at, key)| {
        let rest = line[at + key.len()..].trim_start().strip_prefix(':')?;
        let (name, _) = rest.trim_start().strip_prefix('"')?.split_once('"')?;
        (!name.is_empty()).then(|| name.to_owned())
    })
}

/// A manifest of the tree, as a JSON object.
fn manifest(workspace: &Path, name: &str) -> Option<Map<String, Value>> {
    let bytes = crate::tree::read_at_most(workspace, name, MAX_MANIFEST)?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(object) => Some(object),
        _ => None,
    }
}

/// The package in `dir`, where its manifest names it.
fn package(workspace: &Path, dir: String) -> Option<Package> {
    let manifest = manifest(workspace, &format!("{dir}/package.json"))?;
    let name = manifest.get("name")?.as_str()?.trim();
    if name.is_empty() || name.contains('*') || name.len() > 214 {
        return None;
    }
    let entry = entries(&manifest)
        .iter()
        .find_map(|written| source_of(workspace, &dir, written))
        .or_else(|| {
            ["src/index", "index"].iter().find_map(|stem| {
                SOURCE_ENDINGS
                    .iter()
                    .map(|ending| crate::tree::in_dir(&dir, &format!("{stem}{ending}")))
                    .find(|path| crate::tree::regular_file(workspace, path).is_some())
            })
        });
    let subpaths = match manifest.get("exports") {
        Some(Value::Object(exports)) => exports
            .iter()
            .filter(|(key, _)| key.starts_with("./") && key.matches('*').count() <= 1)
            .take(MAX_SUBPATHS)
            .filter_map(|(key, target)| {
                let mut written = Vec::new();
                conditional(target, 0, &mut written);
                let source = match key.contains('*') {
                    false => written.iter().find_map(|w| source_of(workspace, &dir, w)),
                    true => written.iter().find_map(|w| source_pattern(&dir, w)),
                }?;
                Some((key.trim_start_matches("./").to_owned(), source))
            })
            .collect(),
        _ => Vec::new(),
    };
    Some(Package {
        name: name.to_owned(),
        dir,
        entry,
        subpaths,
    })
}

/// What a manifest says its main entry is, most telling first: `exports`' `.` (by
/// [`CONDITIONS`]), then `types`, `typings`, `source`, `module`, `main`.
fn entries(manifest: &Map<String, Value>) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(exports) = manifest.get("exports") {
        let main = match exports {
            Value::Object(map) if map.keys().any(|k| k.starts_with('.')) => map.get("."),
            other => Some(other),
        };
        if let Some(main) = main {
            conditional(main, 0, &mut found);
        }
    }
    for key in ["types", "typings", "source", "module", "main"] {
        if let Some(Value::String(path)) = manifest.get(key) {
            found.push(path.clone());
        }
    }
    found
}

/// The paths of a conditional export, by [`CONDITIONS`], nested at most a few deep.
fn conditional(value: &Value, depth: usize, found: &mut Vec<String>) {
    match value {
        Value::String(path) => found.push(path.clone()),
        Value::Array(list) if depth < 4 => {
            for item in list {
                conditional(item, depth + 1, found);
            }
        }
        Value::Object(map) if depth < 4 => {
            for condition in CONDITIONS {
                if let Some(inner) = map.get(*condition) {
                    conditional(inner, depth + 1, found);
                }
            }
        }
        _ => {}
    }
}

/// The TypeScript source of the entry `written` in the package at `dir`: itself where it is a
/// source file of the tree, else the same module under `src` of a build directory (`dist/x.js`
/// is `src/x.ts`) or beside it; `None` where none is a regular file of the tree.
fn source_of(workspace: &Path, dir: &str, written: &str) -> Option<String> {
    let relative = written.trim_start_matches("./");
    if relative.is_empty() || relative.starts_with('/') || relative.contains('*') {
        return None;
    }
    if relative.split('/').any(|part| part == "..") {
        return None;
    }
    let stem = [".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx"]
        .iter()
        .chain(SOURCE_ENDINGS)
        .find_map(|ending| relative.strip_suffix(ending))
        .unwrap_or(relative);
    let mut stems = vec![stem.to_owned()];
    // `dist/esm/index` and `lib/index` were built from `src/index`.
    let parts: Vec<&str> = stem.split('/').collect();
    let built = parts.iter().take_while(|part| BUILT.contains(part)).count();
    if built > 0 && built < parts.len() {
        stems.push(format!("src/{}", parts[built..].join("/")));
        stems.push(parts[built..].join("/"));
    }
    let exists = |path: &String| crate::tree::regular_file(workspace, path).is_some();
    let own = crate::tree::in_dir(dir, relative);
    let is_source = SOURCE_ENDINGS.iter().any(|e| relative.ends_with(e));
    if is_source && !relative.ends_with(".d.ts") && exists(&own) {
        return Some(own);
    }
    stems.iter().find_map(|stem| {
        SOURCE_ENDINGS
            .iter()
            .map(|ending| crate::tree::in_dir(dir, &format!("{stem}{ending}")))
            .chain([crate::tree::in_dir(dir, &format!("{stem}/index.ts"))])
            .find(exists)
    })
}

/// The TypeScript source a wildcard export's target `written` (`./dist/*.js`, `./src/*.ts`)
/// names in the package at `dir`, as a `paths` target with its `*` (`dir/src/*`).
fn source_pattern(dir: &str, written: &str) -> Option<String> {
    let relative = written.trim_start_matches("./");
    let escapes = relative.starts_with('/') || relative.split('/').any(|part| part == "..");
    if escapes || relative.matches('*').count() != 1 {
        return None;
    }
    let stem = [".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx"]
        .iter()
        .find_map(|ending| relative.strip_suffix(ending))
        .unwrap_or(relative);
    let parts: Vec<&str> = stem.split('/').collect();
    let built = parts.iter().take_while(|part| BUILT.contains(part)).count();
    let source = match built {
        0 => stem.to_owned(),
        _ => format!("src/{}", parts[built..].join("/")),
    };
    Some(crate::tree::in_dir(dir, &source))
}

#[cfg(test)]
mod tests;
