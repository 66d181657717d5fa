//! What tsc takes from the project's own `tsconfig.json` (the nearest above a file, as tsc and
//! editors apply it): how strict its checks are (a project without `strict` writes code that
//! strict checks call wrong), and its `paths` (`@/lib/money` is the project's own module, whose
//! types find bugs, not an unknown package). Nothing else:
//! the rest is bugloop's (modules, output, `types`), so an option TypeScript 7 removed
//! (`baseUrl`, `moduleResolution: node`) stops nothing.
//!
//! A branch must not loosen the checks of its own code: when the change edits any file of the
//! configuration's chain (`tsconfig.json` and what it `extends`), none of it is read, and the
//! strict defaults apply. Every file is read as the tree's files are (no link followed, at most
//! 1 MiB); an `extends` of a package (not in a checkout) or leading out of the tree is passed
//! over.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

/// The options of the project bugloop keeps: the strictness of its checks.
const KEPT: &[&str] = &[
    "strict",
    "strictNullChecks",
    "strictFunctionTypes",
    "strictBindCallApply",
    "noImplicitThis",
    "useUnknownInCatchVariables",
    "exactOptionalPropertyTypes",
    "noUncheckedIndexedAccess",
    "experimentalDecorators",
    "useDefineForClassFields",
];

/// The most configuration files one chain reads.
const MAX_CHAIN: usize = 8;
const MAX_SIZE: u64 = 1 << 20;

/// The options bugloop keeps (absolute `paths` among them) of the configuration `config` (its
/// name from the root) and what it extends, or `None` where there is none or the change edits
/// its chain.
pub(crate) fn options_of(
    workspace: &Path,
    config: &str,
    edited: &[String],
) -> Option<Map<String, Value>> {
    let mut chain = Vec::new();
    if !config.is_empty() {
        load(workspace, config, &mut chain);
    }
    if chain.is_empty() || chain.iter().any(|(name, _)| edited.contains(name)) {
        return None;
    }
    // From the farthest base to the project's own file: a later file's option wins.
    let mut kept = Map::new();
    let mut paths: Option<(String, Map<String, Value>)> = None;
    let mut base_url: Option<PathBuf> = None;
    for (name, config) in chain.iter().rev() {
        let Some(options) = config.get("compilerOptions").and_then(Value::as_object) else {
            continue;
        };
        for key in KEPT {
            if let Some(value) = options.get(*key).filter(|v| v.is_boolean()) {
                kept.insert((*key).to_owned(), value.clone());
            }
        }
        if let Some(url) = options.get("baseUrl").and_then(Value::as_str) {
            base_url = inside(workspace, &dir_of(name), url);
        }
        if let Some(map) = options.get("paths").and_then(Value::as_object) {
            paths = Some((name.clone(), map.clone()));
        }
    }
    if let Some((name, map)) = paths {
        // Relative to `baseUrl` where one is set, else to the file that declares them.
        let base = base_url.unwrap_or_else(|| workspace.join(dir_of(&name)));
        kept.insert(
            "paths".to_owned(),
            Value::Object(absolute(workspace, &base, &map)),
        );
    }
    Some(kept)
}

/// The configuration tsc and editors apply to `file`, as names from the root: the nearest
/// `tsconfig.json` above it (a web app's in `web/` beside a backend at the root), and the one it
/// applies, which is itself or, where it refers to others (`references`, as a Vite app's does),
/// the one whose `include` holds the file (`tsconfig.app.json` for `src/`). Empty where there
/// is none.
pub(crate) fn config_for(workspace: &Path, file: &str) -> (String, String) {
    let Some(nearest) = std::iter::once("")
        .chain(file.match_indices('/').map(|(at, _)| &file[..at]))
        .rev()
        .map(|dir| crate::tree::in_dir(dir, "tsconfig.json"))
        .find(|name| crate::tree::regular_file(workspace, name).is_some())
    else {
        return (String::new(), String::new());
    };
    let applied = references(workspace, &nearest)
        .into_iter()
        .find(|(name, config)| includes(config, &dir_of(name), file))
        .map_or_else(|| nearest.clone(), |(name, _)| name);
    (nearest, applied)
}

/// The configurations `config` refers to (`references`), each as a name from the root and read,
/// within the tree; at most a few.
pub(crate) fn references(workspace: &Path, config: &str) -> Vec<(String, Value)> {
    let Some(read_config) = read(workspace, config) else {
        return Vec::new();
    };
    let Some(list) = read_config.get("references").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .take(MAX_CHAIN)
        .filter_map(|reference| reference.get("path")?.as_str())
        .filter_map(|path| {
            let full = inside(workspace, &dir_of(config), path)?;
            let mut name = full.strip_prefix(workspace).ok()?.to_str()?.to_owned();
            if !name.ends_with(".json") {
                name = crate::tree::in_dir(&name, "tsconfig.json");
            }
            let referenced = read(workspace, &name)?;
            Some((name, referenced))
        })
        .collect()
}

/// Whether a configuration in `dir` takes `file` in: its `include` (a directory takes in what
/// is below it; `*` and `**` as tsc reads them), or its `files`, or, with neither, all below it.
fn includes(config: &Value, dir: &str, file: &str) -> bool {
    let relative = match dir {
        "" => file,
        dir => match file
            .strip_prefix(dir)
            .and_then(|rest| rest.strip_prefix('/'))
        {
            Some(relative) => relative,
            None => return false,
        },
    };
    let listed = |key: &str| -> Option<Vec<String>> {
        let list = config.get(key)?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_owned())
                .collect(),
        )
    };
    let files = listed("files");
    let Some(include) = listed("include") else {
        return files.is_none_or(|files| files.iter().any(|f| f == relative));
    };
    files.is_some_and(|files| files.iter().any(|f| f == relative))
        || include.iter().any(|pattern| {
            if pattern.contains(['*', '?']) {
                globset::GlobBuilder::new(pattern)
                    .literal_separator(true)
                    .build()
                    .is_ok_and(|glob| glob.compile_matcher().is_match(relative))
            } else {
                relative == pattern
                    || relative
                        .strip_prefix(pattern.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }
        })
}

/// The module patterns the project's `paths` name (`@app/*`), from its configuration chain as
/// the tree holds it: what the project's own code is imported as.
pub(crate) fn path_patterns(workspace: &Path) -> Vec<String> {
    let mut chain = Vec::new();
    load(workspace, "tsconfig.json", &mut chain);
    chain
        .iter()
        .filter_map(|(_, config)| config.get("compilerOptions")?.get("paths")?.as_object())
        .flat_map(|paths| paths.keys().cloned())
        .collect()
}

/// `name` (relative to the tree) and what it extends, the project's own file first.
fn load(workspace: &Path, name: &str, chain: &mut Vec<(String, Value)>) {
    if chain.len() >= MAX_CHAIN || chain.iter().any(|(seen, _)| seen == name) {
        return;
    }
    let Some(config) = read(workspace, name) else {
        return;
    };
    let extends: Vec<String> = match config.get("extends") {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    chain.push((name.to_owned(), config));
    // Bases are pushed last first, each before its own bases: the chain read backwards applies
    // them in their order (a later base's options win), each after what it extends.
    for base in extends.iter().rev() {
        if !(base.starts_with("./") || base.starts_with("../")) {
            continue;
        }
        let Some(path) = inside(workspace, &dir_of(name), base) else {
            continue;
        };
        let Ok(relative) = path.strip_prefix(workspace) else {
            continue;
        };
        let mut relative = relative.to_string_lossy().into_owned();
        if !relative.ends_with(".json") {
            relative.push_str(".json");
        }
        load(workspace, &relative, chain);
    }
}

/// A configuration file of the tree, JSON with comments and trailing commas.
fn read(workspace: &Path, name: &str) -> Option<Value> {
    let path = crate::tree::regular_file(workspace, name)?;
    if std::fs::metadata(&path).ok()?.len() > MAX_SIZE {
        return None;
    }
    let mut text = std::fs::read_to_string(path).ok()?;
    json_strip_comments::strip(&mut text).ok()?;
    serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object)
}

fn dir_of(name: &str) -> String {
    Path::new(name)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `relative` from the tree's directory `dir`, made absolute without the file system's help;
/// `None` when it leads out of the tree.
fn inside(workspace: &Path, dir: &str, relative: &str) -> Option<PathBuf> {
    let mut path = workspace.join(dir);
    for part in Path::new(relative).components() {
        match part {
            Component::Normal(part) => path.push(part),
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    path.starts_with(workspace).then_some(path)
}

/// `paths` with every target made absolute from `base`, those leading out of the tree left out.
fn absolute(workspace: &Path, base: &Path, paths: &Map<String, Value>) -> Map<String, Value> {
    let Ok(base) = base.strip_prefix(workspace) else {
        return Map::new();
    };
    let base = base.to_string_lossy();
    paths
        .iter()
        .filter_map(|(pattern, targets)| {
            let targets: Vec<Value> = targets
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|target| inside(workspace, &base, target))
                .map(|path| Value::String(path.to_string_lossy().into_owned()))
                .collect();
            (!targets.is_empty()).then(|| (pattern.clone(), Value::Array(targets)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tree::test_tree as tree;

    #[test]
    fn strictness_and_paths_come_from_the_chain_and_the_rest_does_not() {
        let dir = tree(&[
            (
                "tsconfig.json",
                "{\n  // the app\n  \"extends\": [\"@tsconfig/node20\", \"./configs/base\"],\n  \
                 \"compilerOptions\": { \"strict\": false, \"noCheck\": true, \"paths\": \
                 { \"@/*\": [\"src/*\"], \"out/*\": [\"../../etc/*\"] }, },\n}\n",
            ),
            (
                "configs/base.json",
                "{ \"compilerOptions\": { \"strict\": true, \"exactOptionalPropertyTypes\": true, \
                 \"baseUrl\": \"..\" } }",
            ),
        ]);
        let options = options_of(dir.path(), "tsconfig.json", &[]).unwrap();
        assert_eq!(options["strict"], Value::Bool(false));
        assert_eq!(options["exactOptionalPropertyTypes"], Value::Bool(true));
        assert!(!options.contains_key("noCheck"));
        let src = dir.path().join("src/*").display().to_string();
        assert_eq!(options["paths"], serde_json::json!({ "@/*": [src] }));
    }

    #[test]
    fn a_files_configuration_is_the_nearest_above_it_or_the_one_it_refers_to() {
        let dir = tree(&[
            ("tsconfig.json", "{}"),
            (
                "web/tsconfig.json",
                r#"{ "compilerOptions": { "strict": false } }"#,
            ),
            ("web/src/a/b.ts", ""),
            (
                "vite/tsconfig.json",
                r#"{ "files": [], "references": [{ "path": "./tsconfig.app.json" }, { "path": "./tsconfig.node.json" }, { "path": "../../out" }] }"#,
            ),
            (
                "vite/tsconfig.app.json",
                r#"{ "include": ["src"], "compilerOptions": { "strict": true } }"#,
            ),
            (
                "vite/tsconfig.node.json",
                r#"{ "include": ["vite.config.ts", "scripts/**/*.mts"] }"#,
            ),
        ]);
        let at = |file| config_for(dir.path(), file);
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            at("web/src/a/b.ts"),
            pair("web/tsconfig.json", "web/tsconfig.json")
        );
        assert_eq!(at("api/x.ts"), pair("tsconfig.json", "tsconfig.json"));
        assert_eq!(
            at("vite/src/App.tsx"),
            pair("vite/tsconfig.json", "vite/tsconfig.app.json")
        );
        assert_eq!(
            at("vite/vite.config.ts"),
            pair("vite/tsconfig.json", "vite/tsconfig.node.json")
        );
        assert_eq!(
            at("vite/scripts/x/gen.mts"),
            pair("vite/tsconfig.json", "vite/tsconfig.node.json")
        );
        assert_eq!(
            at("vite/other.ts"),
            pair("vite/tsconfig.json", "vite/tsconfig.json")
        );
        let web = options_of(dir.path(), "web/tsconfig.json", &[]).unwrap();
        assert_eq!(web["strict"], Value::Bool(false));
        let edited = ["web/tsconfig.json".to_owned()];
        assert_eq!(options_of(dir.path(), "web/tsconfig.json", &edited), None);
        let none = tree(&[("a.ts", "")]);
        assert_eq!(config_for(none.path(), "a.ts"), pair("", ""));
    }

    #[test]
    fn a_change_to_the_chain_or_no_configuration_leaves_the_defaults() {
        let dir = tree(&[
            ("tsconfig.json", "{ \"extends\": \"./base.json\" }"),
            (
                "base.json",
                "{ \"compilerOptions\": { \"strict\": false } }",
            ),
        ]);
        assert!(options_of(dir.path(), "tsconfig.json", &[]).is_some());
        assert_eq!(
            options_of(dir.path(), "tsconfig.json", &["base.json".to_owned()]),
            None
        );
        assert_eq!(
            options_of(dir.path(), "tsconfig.json", &["tsconfig.json".to_owned()]),
            None
        );
        let empty = tree(&[("src/a.ts", "")]);
        assert_eq!(options_of(empty.path(), "tsconfig.json", &[]), None);
        // A link is not read.
        let linked = tree(&[(
            "real.json",
            "{ \"compilerOptions\": { \"strict\": false } }",
        )]);
        std::os::unix::fs::symlink(
            linked.path().join("real.json"),
            linked.path().join("tsconfig.json"),
        )
        .unwrap();
        assert_eq!(options_of(linked.path(), "tsconfig.json", &[]), None);
    }
}
