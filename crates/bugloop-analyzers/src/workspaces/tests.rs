//! The workspace packages read from manifests: entries, subpaths, pnpm's list, uv's members,
//! the links biome is given, and what a change to them takes away.

use super::*;

use crate::tree::test_tree as tree;

fn paths_of(workspace: &Path) -> Value {
    let mut options = Map::new();
    add_package_paths(workspace, &mut options);
    let root = format!("{}/", workspace.display());
    let text = Value::Object(options).to_string().replace(&root, "");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn each_workspace_package_is_its_source_entry() {
    let dir = tree(&[
        (
            "package.json",
            r#"{ "private": true, "workspaces": ["packages/**", "!packages/skip", "!**/test/**", "apps/web"] }"#,
        ),
        (
            "packages/core/package.json",
            r#"{ "name": "@acme/core", "main": "src/index.ts" }"#,
        ),
        ("packages/core/src/index.ts", "export const a = 1;"),
        ("packages/skip/package.json", r#"{ "name": "skipped" }"#),
        (
            "packages/core/test/fixture/package.json",
            r#"{ "name": "@acme/core" }"#,
        ),
        (
            "packages/ui/package.json",
            r#"{ "name": "@acme/ui", "main": "dist/index.js", "types": "dist/index.d.ts" }"#,
        ),
        ("packages/ui/src/index.tsx", "export const b = 1;"),
        (
            "packages/util/package.json",
            r#"{ "name": "util-x", "exports": { ".": { "import": "./build/esm/main.mjs" }, "./fmt": { "types": "./build/types/format/index.d.ts" }, "./lib/*": "./dist/*.js", "./up/*": "../*.js" } }"#,
        ),
        ("packages/util/src/main.ts", "export const c = 1;"),
        ("packages/util/src/format/index.ts", ""),
        ("apps/web/package.json", r#"{ "name": "web" }"#),
        ("apps/other/package.json", r#"{ "name": "other" }"#),
        (
            "packages/core/node_modules/x/package.json",
            r#"{ "name": "x" }"#,
        ),
    ]);
    let paths = paths_of(dir.path());
    let expected = serde_json::json!({ "paths": {
        "@acme/core": ["packages/core/src/index.ts"],
        "@acme/core/*": ["packages/core/src/*", "packages/core/*"],
        "@acme/ui": ["packages/ui/src/index.tsx"],
        "@acme/ui/*": ["packages/ui/src/*", "packages/ui/*"],
        "util-x": ["packages/util/src/main.ts"],
        "util-x/fmt": ["packages/util/src/format/index.ts"],
        "util-x/lib/*": ["packages/util/src/*"],
        "util-x/*": ["packages/util/src/*", "packages/util/*"],
        "web/*": ["apps/web/src/*", "apps/web/*"],
    }});
    assert_eq!(paths, expected);
}

#[test]
fn pnpm_workspaces_count_and_the_projects_own_paths_win() {
    let dir = tree(&[
        ("pnpm-workspace.yaml", "packages:\n  - 'libs/**'\n"),
        ("libs/a/b/package.json", r#"{ "name": "ab" }"#),
        ("libs/a/b/index.ts", ""),
    ]);
    let mut options = Map::new();
    options.insert(
        "paths".to_owned(),
        serde_json::json!({ "ab": ["/elsewhere"] }),
    );
    add_package_paths(dir.path(), &mut options);
    assert_eq!(options["paths"]["ab"], serde_json::json!(["/elsewhere"]));
    assert!(options["paths"]["ab/*"].is_array());
}

#[test]
fn a_uv_workspaces_members_are_searched_from_their_src() {
    let dir = tree(&[
        (
            "pyproject.toml",
            "[project]\nname = \"acme\"\n\n[tool.uv.workspace]\n\
             members = [\"packages/*\", \"../*\"]\nexclude = [\"packages/old\"]\n",
        ),
        ("packages/core/pyproject.toml", ""),
        ("packages/core/src/acme_core/__init__.py", ""),
        ("packages/flat/pyproject.toml", ""),
        ("packages/flat/flat/__init__.py", ""),
        ("packages/old/pyproject.toml", ""),
        ("packages/none/setup.py", ""),
    ]);
    let mut roots = python_roots(dir.path());
    roots.sort();
    let root = dir.path();
    assert_eq!(
        roots,
        [root.join("packages/core/src"), root.join("packages/flat")]
    );
    let plain = tree(&[("pyproject.toml", "[project]\nname = \"x\"\n")]);
    assert!(python_roots(plain.path()).is_empty());
}

#[test]
fn a_manifest_change_affects_the_name_it_takes_away_and_the_entry_it_moves() {
    let dir = tree(&[
        ("package.json", r#"{ "workspaces": ["pk/*"] }"#),
        (
            "pk/a/package.json",
            "{\n  \"name\": \"@x/b\",\n  \"main\": \"src/b.ts\"\n}\n",
        ),
        ("pk/a/src/b.ts", ""),
    ]);
    let diff = bugloop_diff::parse(
        "diff --git a/pk/a/package.json b/pk/a/package.json\n--- a/pk/a/package.json\n\
         +++ b/pk/a/package.json\n@@ -1,4 +1,4 @@\n {\n-  \"name\": \"@x/a\",\n\
         -  \"main\": \"src/a.ts\"\n+  \"name\": \"@x/b\",\n+  \"main\": \"src/b.ts\"\n }\n",
    );
    let (names, entries) = manifests_changed(dir.path(), &diff);
    assert_eq!(
        (names, entries),
        (vec!["@x/a".to_owned()], vec!["pk/a/src/b.ts".to_owned()])
    );
    let bump = bugloop_diff::parse(
        "diff --git a/pk/a/package.json b/pk/a/package.json\n--- a/pk/a/package.json\n\
         +++ b/pk/a/package.json\n@@ -1,3 +1,3 @@\n {\n-  \"version\": \"1.0.0\"\n\
         +  \"version\": \"1.0.1\"\n }\n",
    );
    assert_eq!(manifests_changed(dir.path(), &bump), (vec![], vec![]));
}

#[test]
fn packages_are_linked_as_an_install_would_and_odd_names_are_not() {
    let dir = tree(&[
        ("package.json", r#"{ "workspaces": ["pk/*"] }"#),
        (
            "pk/a/package.json",
            r#"{ "name": "@x/a", "main": "dist/index.js" }"#,
        ),
        ("pk/a/src/index.ts", ""),
        ("pk/b/package.json", r#"{ "name": "b" }"#),
        ("pk/b/index.ts", ""),
        ("pk/c/package.json", r#"{ "name": "../../c" }"#),
        ("pk/c/index.ts", ""),
        ("pk/d/package.json", r#"{ "name": "@x/../../d" }"#),
        ("pk/d/index.ts", ""),
    ]);
    for (path, content) in package_links(dir.path()) {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(
        read("node_modules/@x/a/package.json"),
        r#"{"name":"@x/a","types":"../../../pk/a/src/index.ts"}"#
    );
    assert_eq!(
        read("node_modules/b/package.json"),
        r#"{"name":"b","types":"../../pk/b/index.ts"}"#
    );
    let names = |sub: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names("node_modules"), ["@x", "b"]);
    assert_eq!(names("node_modules/@x"), ["a"]);
    assert_eq!(names(""), ["node_modules", "package.json", "pk"]);
}

#[test]
fn pnpms_list_is_read_by_lines_whatever_else_the_file_holds() {
    let block = "# the workspace\npackages:\n  # apps\n  - 'apps/*'\n  - \"packages/**\" # all\n  - libs/x\n\ncatalog:\n  react: ^18\n  - not/this\n";
    assert_eq!(
        pnpm_patterns(block.as_bytes()),
        ["apps/*", "packages/**", "libs/x"]
    );
    let flow = "packages: ['a/*', \"b/*\"]\n";
    assert_eq!(pnpm_patterns(flow.as_bytes()), ["a/*", "b/*"]);
    let deep = format!(
        "packages:\n  - p/*\nx: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(pnpm_patterns(deep.as_bytes()), ["p/*"]);
    assert!(pnpm_patterns(b"catalog:\n  - x\n").is_empty());
}

#[test]
fn nothing_leads_out_of_the_tree_or_comes_of_a_tree_without_workspaces() {
    let dir = tree(&[
        (
            "package.json",
            r#"{ "workspaces": ["../*", "/etc", "pk/*"] }"#,
        ),
        (
            "pk/a/package.json",
            r#"{ "name": "a", "main": "../../../etc/passwd.ts" }"#,
        ),
        ("pk/b/package.json", "not json"),
    ]);
    let paths = paths_of(dir.path());
    assert_eq!(
        paths,
        serde_json::json!({ "paths": { "a/*": ["pk/a/src/*", "pk/a/*"] } })
    );
    let plain = tree(&[
        ("package.json", r#"{ "name": "app" }"#),
        ("x/package.json", "{}"),
    ]);
    assert_eq!(paths_of(plain.path()), serde_json::json!({}));
}
