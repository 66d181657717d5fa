//! Which of the change's files an analyzer is given: those its globs match, regular files at
//! head reached through no symlink, whatever their size. A bundle that costs a tool more than
//! the sandbox gives it (its time limit, its memory) stops it, and the review names the file it
//! could not check and is incomplete: a size limit here would be a way past the analyzers (a
//! file padded over it, unread by the model where it is build output).

use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::Choice;
use crate::builtin::BuiltIn;
use crate::scope::ChangedLines;
pub(crate) use crate::tree::regular_file;

/// The changed files an analyzer reads: those matching its globs, regular files at head; for
/// a tool that checks a project, only those in one ([`project_dir`]).
pub(crate) fn files_for(choice: &Choice, changed: &ChangedLines, workspace: &Path) -> Vec<String> {
    let in_a_project = |file: &str| match choice {
        Choice::BuiltIn(tool) if tool.project.is_some() => {
            project_dir(workspace, tool, file).is_some()
        }
        _ => true,
    };
    let globs: Vec<String> = match choice {
        Choice::BuiltIn(tool) => tool.files.iter().map(|g| (*g).to_owned()).collect(),
        Choice::Custom(custom) if custom.files.is_empty() => vec!["**".to_owned()],
        Choice::Custom(custom) => custom.files.clone(),
    };
    let Some(set) = glob_set(&globs) else {
        return Vec::new();
    };
    let interpreters = match choice {
        Choice::BuiltIn(tool) => tool.interpreters,
        Choice::Custom(_) => &[],
    };
    // A tool is given names as text: the name itself, not its quoted form (a tab in a name).
    changed
        .files()
        .filter_map(bugloop_domain::paths::text_name)
        .filter(|f| in_a_project(f))
        .filter(|f| {
            if set.is_match(f) {
                return regular_file(workspace, f).is_some();
            }
            // Only a name no built-in claims by its ending is looked into (`bin/deploy`,
            // `deploy.prod`), and only for a tool that reads scripts: a change of thousands of
            // source files is not read twice over.
            !interpreters.is_empty()
                && !claimed_by_a_built_in(f)
                && regular_file(workspace, f).is_some_and(|path| script_for(&path, interpreters))
        })
        .collect()
}

/// The files of the change a compiler's checker (it checks a whole project) applies to: each
/// of its sources the change edits, adds, renames or deletes (a change that only takes a
/// function away breaks its callers), and the project's manifests (`Cargo.toml`, `go.mod`:
/// a crate or module renamed there breaks its users); only those in a project
/// ([`project_dir`]).
pub(crate) fn project_files(
    tool: &BuiltIn,
    diff: &bugloop_diff::Diff,
    workspace: &Path,
) -> Vec<String> {
    let Some(project) = tool.project else {
        return Vec::new();
    };
    let globs: Vec<String> = tool.files.iter().map(|g| (*g).to_owned()).collect();
    let Some(set) = glob_set(&globs) else {
        return Vec::new();
    };
    diff.files
        .iter()
        .filter_map(|file| file.new_path.as_deref().or(file.old_path.as_deref()))
        .filter_map(bugloop_domain::paths::text_name)
        .filter(|path| set.is_match(path) || path.rsplit('/').next() == Some(project))
        .filter(|path| project_dir(workspace, tool, path).is_some())
        .collect()
}

/// The directory (from the root; `""` for the root) of the project a compiler's checker
/// compiles `file` in: the one holding the project's manifest as a regular file of the tree.
/// For cargo, the outermost such directory above the file (a workspace's root compiles its
/// members, and what a change to one breaks in another); for go, the nearest (a module nested
/// in another is a module of its own, which `./...` above it does not reach), or the Go
/// workspace (`go.work`) at or above it, whose modules are vetted together. `None` outside
/// any project, or for a tool that checks none.
pub(crate) fn project_dir(workspace: &Path, tool: &BuiltIn, file: &str) -> Option<String> {
    match tool.name {
        "go-vet" => crate::compilers::go_project_dir(workspace, file),
        _ => crate::tree::manifest_dir(workspace, tool.project?, file),
    }
}

/// Most files, and bytes of their names, given to one run of a tool: a change of thousands of
/// files (or of very long names) would pass the system's limit on a command's arguments.
const MAX_FILES_PER_RUN: usize = 200;
const MAX_NAME_BYTES_PER_RUN: usize = 64 << 10;
/// The bytes of names given to one run of a tool that reads the whole project each time
/// (Linux takes 2 MiB of arguments and environment together).
const MAX_NAME_BYTES_PER_PROJECT_RUN: usize = 1 << 20;

/// The runs a tool needs for `files`: one for a tool that reads no file names, one a project
/// for a tool that checks a project ([`project_dir`]), else batches within the
/// limits.
pub(crate) fn batches(choice: &Choice, files: &[String], workspace: &Path) -> Vec<Vec<String>> {
    if let Choice::BuiltIn(tool) = choice
        && (tool.project.is_some() || tool.name == "tsc")
    {
        // tsc applies the nearest `tsconfig.json` to a file: one configuration a run.
        let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for file in files {
            let dir = match tool.project {
                Some(_) => project_dir(workspace, tool, file).unwrap_or_default(),
                None => crate::tsconfig::config_for(workspace, file).1,
            };
            groups.entry(dir).or_default().push(file.clone());
        }
        return match tool.project {
            Some(_) => groups.into_values().collect(),
            None => groups
                .into_values()
                .flat_map(|group| within_limits(&group, MAX_FILES_PER_RUN, MAX_NAME_BYTES_PER_RUN))
                .collect(),
        };
    }
    // biome indexes the whole project on every run (its rules on promises need the types of
    // what a module imports): as few runs as the system's limits allow, each name one
    // argument, rather than one a 200 files.
    let (max_files, max_bytes) = match choice {
        Choice::BuiltIn(tool) if tool.name == "biome" => {
            (usize::MAX, MAX_NAME_BYTES_PER_PROJECT_RUN)
        }
        _ => (MAX_FILES_PER_RUN, MAX_NAME_BYTES_PER_RUN),
    };
    let one_run = match choice {
        Choice::BuiltIn(_) => false,
        Choice::Custom(custom) => custom
            .command
            .as_ref()
            .is_none_or(|argv| !argv.iter().any(|a| a == "{files}")),
    };
    if one_run {
        return vec![files.to_vec()];
    }
    within_limits(files, max_files, max_bytes)
}

/// `files` in runs of at most `max_files` files and `max_bytes` of names.
fn within_limits(files: &[String], max_files: usize, max_bytes: usize) -> Vec<Vec<String>> {
    let mut batches: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for file in files {
        let full = batches
            .last()
            .is_none_or(|b| b.len() >= max_files || bytes + file.len() + 1 > max_bytes);
        if full {
            batches.push(Vec::new());
            bytes = 0;
        }
        bytes += file.len() + 1;
        if let Some(batch) = batches.last_mut() {
            batch.push(file.clone());
        }
    }
    batches
}

/// Whether some built-in analyzer reads `file` by its name (`*.py`, `*.js`, `Dockerfile`, ...):
/// what its ending says it is, a shebang does not change.
fn claimed_by_a_built_in(file: &str) -> bool {
    static CLAIMED: std::sync::OnceLock<Option<GlobSet>> = std::sync::OnceLock::new();
    CLAIMED
        .get_or_init(|| {
            let globs: Vec<String> = crate::builtin::BUILT_IN
                .iter()
                .flat_map(|tool| tool.files.iter().map(|g| (*g).to_owned()))
                .collect();
            glob_set(&globs)
        })
        .as_ref()
        .is_some_and(|set| set.is_match(file))
}

/// Whether the file at `path` is a script of one of `interpreters`: its first line is a shebang
/// naming one (`#!/bin/sh`, `#!/usr/bin/env python3`, `#!/usr/bin/env -S bash -e`).
fn script_for(path: &Path, interpreters: &[&str]) -> bool {
    let mut head = [0u8; 256];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut head))
        .unwrap_or(0);
    let head = &head[..read];
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let Some(command) = line.strip_prefix(b"#!") else {
        return false;
    };
    names_an_interpreter(&String::from_utf8_lossy(command), interpreters)
}

/// Whether a shebang's command runs one of `interpreters`: any of its words, as a program's name
/// without its directory, quotes or version (`python3.12` is `python`), the value of an option
/// written on to it (`-Sbash`, `-iSbash`, `--split-string=bash`) taken alone. A wrapper
/// (`nice bash`, `env -S -u HOME bash`) runs the shell after it, so any word counts.
fn names_an_interpreter(command: &str, interpreters: &[&str]) -> bool {
    command.split_whitespace().any(|word| {
        let word = word.rsplit('=').next().unwrap_or(word);
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let word = match word.strip_prefix('-') {
            Some(options) => match options.find('S') {
                Some(at) => &options[at + 1..],
                None => return false,
            },
            None => word,
        };
        let name = word.rsplit('/').next().unwrap_or(word);
        let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        interpreters.contains(&name)
    })
}

pub(crate) fn glob_set(globs: &[String]) -> Option<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        // `**/x` also matches `x` at the root; a glob that does not parse matches nothing.
        builder.add(Glob::new(glob).ok()?);
        if let Some(rest) = glob.strip_prefix("**/") {
            builder.add(Glob::new(rest).ok()?);
        }
    }
    builder.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_files_are_given_in_batches_a_project_at_once() {
        let ruff = Choice::BuiltIn(crate::built_in("ruff").unwrap());
        let clippy = Choice::BuiltIn(crate::built_in("clippy").unwrap());
        let tree =
            crate::tree::test_tree(&[("Cargo.toml", ""), ("a/go.mod", ""), ("b/go.mod", "")]);
        let root = tree.path();
        let files: Vec<String> = (0..450).map(|i| format!("pkg/m{i}.py")).collect();
        let sizes: Vec<usize> = batches(&ruff, &files, root).iter().map(Vec::len).collect();
        assert_eq!(sizes, [200, 200, 50]);
        assert_eq!(batches(&clippy, &files, root).len(), 1);
        // One run a project.
        let go = Choice::BuiltIn(crate::built_in("go-vet").unwrap());
        let modules: Vec<String> = ["a/x.go", "b/y.go", "a/z/w.go"].map(String::from).to_vec();
        assert_eq!(
            batches(&go, &modules, root),
            [vec!["a/x.go", "a/z/w.go"], vec!["b/y.go"]]
        );
        let biome = Choice::BuiltIn(crate::built_in("biome").unwrap());
        let scripts: Vec<String> = (0..5_000).map(|i| format!("src/m{i}.ts")).collect();
        assert_eq!(batches(&biome, &scripts, root).len(), 1);
        let long: Vec<String> = (0..100)
            .map(|i| format!("{}{i}.py", "d/".repeat(1000)))
            .collect();
        let batched = batches(&ruff, &long, root);
        assert!(batched.len() > 1 && batched.iter().all(|b| b.iter().map(|f| f.len() + 1).sum::<usize>() <= MAX_NAME_BYTES_PER_RUN));
        assert_eq!(batched.iter().map(Vec::len).sum::<usize>(), 100);
    }

    #[test]
    fn a_projects_directory_is_cargos_outermost_and_gos_nearest_or_its_workspace() {
        let dir = crate::tree::test_tree(&[
            ("Cargo.toml", "[workspace]"),
            ("crates/a/Cargo.toml", ""),
            ("crates/a/src/lib.rs", ""),
            ("svc/go.mod", ""),
            ("svc/tools/go.mod", ""),
            ("mods/go.work", ""),
            ("mods/core/go.mod", ""),
            ("web/x.ts", ""),
        ]);
        let tool = |name| crate::builtin::built_in(name).unwrap();
        let at = |name, file| project_dir(dir.path(), tool(name), file);
        assert_eq!(at("clippy", "crates/a/src/lib.rs").as_deref(), Some(""));
        assert_eq!(at("go-vet", "svc/main.go").as_deref(), Some("svc"));
        assert_eq!(
            at("go-vet", "svc/tools/gen.go").as_deref(),
            Some("svc/tools")
        );
        assert_eq!(at("go-vet", "mods/core/x/y.go").as_deref(), Some("mods"));
        assert_eq!(at("go-vet", "web/x.go"), None);
        assert_eq!(at("go-vet", "svc/go.mod").as_deref(), Some("svc"));
        assert_eq!(at("ruff", "svc/a.py"), None);
    }

    #[test]
    fn a_shebang_names_its_interpreter_however_env_or_a_wrapper_is_written() {
        let known = &["python", "bash", "sh"];
        for command in [
            "/bin/sh",
            "/bin/bash -e",
            " /usr/bin/env python3",
            "/usr/bin/env python3.12\r",
            "/usr/bin/env -S bash -eu",
            "/usr/bin/env -Sbash -e",
            "/usr/bin/env -iSbash",
            "/usr/bin/env --split-string=bash",
            "/usr/bin/env -S \"bash\" -e",
            "/usr/bin/env -S -u HOME bash",
            "/usr/bin/env -S nice bash",
            "/usr/bin/nice bash",
            "/usr/bin/setsid bash",
        ] {
            assert!(names_an_interpreter(command, known), "{command:?}");
        }
        for command in [
            "/usr/bin/env",
            "",
            "/usr/bin/env zsh",
            "/usr/bin/env LC_ALL=C perl",
        ] {
            assert!(!names_an_interpreter(command, known), "{command:?}");
        }
    }

    #[test]
    fn a_script_is_known_by_its_shebang() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let shells = &["sh", "bash"];
        assert!(script_for(
            &write("deploy", "#!/bin/bash\nrm -rf $X/\n"),
            shells
        ));
        assert!(script_for(&write("run", "#!/usr/bin/env sh\n"), shells));
        assert!(script_for(&write("deploy.prod", "#!/bin/sh\n"), shells));
        // Another interpreter, no shebang, or a shebang not on the first line.
        assert!(!script_for(&write("tool", "#!/usr/bin/env zsh\n"), shells));
        assert!(!script_for(&write("notes", "rm -rf $X/\n"), shells));
        assert!(!script_for(&write("later", "\n#!/bin/sh\n"), shells));
    }

    /// A name a built-in reads by its ending is that tool's whatever its first line says.
    #[test]
    fn what_a_name_says_comes_before_a_shebang() {
        for claimed in ["a.py", "web/x.js", "Dockerfile", "src/lib.rs", "run.sh"] {
            assert!(claimed_by_a_built_in(claimed), "{claimed}");
        }
        for free in ["bin/deploy", "bin/deploy.prod", "bin/deploy.", "README"] {
            assert!(!claimed_by_a_built_in(free), "{free}");
        }
    }
}
