//! What a file imports, read from its text as a type checker would resolve it: TypeScript's
//! specifiers (relative, through the project's `paths`, or as written) and Python's `import`
//! and `from ... import` lines; never run, a name matched loosely being only a file more to check.

use std::path::Path;

/// A module a file imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Import {
    /// A path from the root: a relative import, or an alias the project's `paths` resolve.
    Path(String),
    /// As written (a package, or a module found from a path root): matched by its ending.
    Named(String),
}

/// A module's path without its ending (`src/user.service`), and a package's entry as its
/// directory (`src/services/index.ts` and `app/__init__.py` are `src/services` and `app`).
pub(crate) fn module_key(path: &str) -> String {
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

/// How much of a file is read for its imports.
pub(crate) const HEAD_BYTES: u64 = 64 << 10;

pub(crate) fn read_head(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(HEAD_BYTES).read_to_end(&mut head))
        .ok()?;
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The modules a TypeScript file imports or re-exports (each specifier, [`specifiers`]),
/// relative ones resolved from the file's directory, without their ending.
pub(crate) fn typescript_imports(file: &str, text: &str, aliases: &Aliases) -> Vec<Import> {
    imports_on(file, text.lines(), aliases)
}

/// The modules a TypeScript file re-exports (`export { x } from "./a"`, `export * from "./b"`,
/// also over several lines): what it passes on to the files that import it.
pub(crate) fn typescript_reexports(file: &str, text: &str, aliases: &Aliases) -> Vec<Import> {
    let mut in_export = false;
    let lines = text.lines().filter(|line| {
        let line = line.trim_start();
        let starts = line.starts_with("export ") || line.starts_with("export{");
        let has_from = line.contains("from");
        let reexport = (starts || in_export) && has_from;
        in_export = (starts && line.contains('{') && !has_from) || (in_export && !has_from);
        reexport
    });
    imports_on(file, lines, aliases)
}

/// The modules `lines` of `file` import, as [`typescript_imports`] reads them.
fn imports_on<'t>(
    file: &str,
    lines: impl Iterator<Item = &'t str>,
    aliases: &Aliases,
) -> Vec<Import> {
    let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
    let key = |path: &str| module_key(&without_script_ending(path));
    let mut found = Vec::new();
    for line in lines {
        for specifier in specifiers(line) {
            let relative = specifier.starts_with("./")
                || specifier.starts_with("../")
                || specifier == "."
                || specifier == "..";
            if relative {
                found.extend(join(dir, specifier).map(|path| Import::Path(key(&path))));
                continue;
            }
            let targets = aliases.resolve(dir, specifier);
            if targets.is_empty() {
                found.push(Import::Named(key(specifier)));
            }
            found.extend(targets.iter().map(|path| Import::Path(key(path))));
        }
    }
    found
}

/// The project's `paths` (from each unchanged `tsconfig.json` of the tree, [`crate::tsconfig`],
/// the nearest above a file applying to it) and its workspace packages' names
/// ([`crate::workspaces`]): each pattern's text before and after its `*`, and its targets from
/// the root.
#[derive(Debug, Default)]
pub(crate) struct Aliases(Vec<(String, Vec<Pattern>)>);

type Pattern = (String, String, Vec<String>);

/// Most configurations read for their `paths`.
const MAX_CONFIGS: usize = 200;

impl Aliases {
    /// The aliases of `workspace`'s configurations but those whose chain the change edits
    /// (`edited`), and of its workspace packages.
    pub(crate) fn of(workspace: &Path, edited: &[String]) -> Aliases {
        let mut dirs: Vec<String> = crate::tree::source_files(workspace)
            .map(|(_, name)| name)
            .filter_map(|name| match name.strip_suffix("tsconfig.json") {
                Some("") => Some(String::new()),
                Some(dir) => dir.strip_suffix('/').map(str::to_owned),
                None => None,
            })
            .take(MAX_CONFIGS)
            .collect();
        if !dirs.contains(&String::new()) {
            dirs.push(String::new());
        }
        // The deepest first: the first that holds a file is its nearest.
        let depth = |dir: &String| match dir.as_str() {
            "" => 0,
            dir => 1 + dir.matches('/').count(),
        };
        dirs.sort_by_key(|dir| std::cmp::Reverse(depth(dir)));
        let root = format!("{}/", workspace.display());
        // The workspace's packages, read once: where a configuration maps a name, its own.
        let mut packaged = serde_json::Map::new();
        crate::workspaces::add_package_paths(workspace, &mut packaged);
        let packages = patterns_of(&packaged, &root);
        Aliases(
            dirs.into_iter()
                .map(|dir| {
                    // The configuration's own paths, then those of what it refers to.
                    let config = crate::tree::in_dir(&dir, "tsconfig.json");
                    let referenced = match edited.contains(&config) {
                        true => Vec::new(),
                        false => crate::tsconfig::references(workspace, &config),
                    };
                    let mut patterns = Vec::new();
                    for name in std::iter::once(&config).chain(referenced.iter().map(|(n, _)| n)) {
                        let options = crate::tsconfig::options_of(workspace, name, edited);
                        for pattern in patterns_of(&options.unwrap_or_default(), &root) {
                            if !patterns
                                .iter()
                                .any(|(b, a, _): &Pattern| (b, a) == (&pattern.0, &pattern.1))
                            {
                                patterns.push(pattern);
                            }
                        }
                    }
                    let own: Vec<(String, String)> = patterns
                        .iter()
                        .map(|(b, a, _)| (b.clone(), a.clone()))
                        .collect();
                    patterns.extend(
                        packages
                            .iter()
                            .filter(|(b, a, _)| !own.contains(&(b.clone(), a.clone())))
                            .cloned(),
                    );
                    (dir, patterns)
                })
                .collect(),
        )
    }

    /// The paths from the root a specifier written in a file of `dir` may name through the
    /// aliases of its nearest configuration.
    fn resolve(&self, dir: &str, specifier: &str) -> Vec<String> {
        let Some((_, patterns)) = self.0.iter().find(|(config, _)| {
            config.is_empty()
                || dir == config
                || dir
                    .strip_prefix(config.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        }) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (before, after, targets) in patterns {
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

/// The `paths` of tsc's `options` as patterns, their targets from the root.
fn patterns_of(options: &serde_json::Map<String, serde_json::Value>, root: &str) -> Vec<Pattern> {
    let Some(paths) = options.get("paths").and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    paths
        .iter()
        .map(|(pattern, targets)| {
            let (before, after) = pattern.split_once('*').unwrap_or((pattern, ""));
            let targets = targets
                .as_array()
                .map(|t| t.iter().filter_map(|t| t.as_str()).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|target| target.strip_prefix(root).map(str::to_owned))
                .collect();
            (before.to_owned(), after.to_owned(), targets)
        })
        .collect()
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
pub(crate) fn python_imports(file: &str, text: &str) -> Vec<Import> {
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

    #[test]
    fn a_modules_reexports_are_its_export_from_lines_over_several_lines_too() {
        let text = "import { a } from './a';\nexport { b } from './b';\nexport {\n  c,\n  d as e,\n} from './c';\nexport * from \"./d\";\nexport const f = 1;\nimport {\n  g,\n} from './g';\n";
        let found = typescript_reexports("src/x.ts", text, &Aliases::default());
        let paths: Vec<Import> = ["src/b", "src/c", "src/d"]
            .iter()
            .map(|p| Import::Path((*p).to_owned()))
            .collect();
        assert_eq!(found, paths);
    }
}
