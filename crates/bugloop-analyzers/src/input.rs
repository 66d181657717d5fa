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

/// The changed files an analyzer reads: those matching its globs, regular files at head; none
/// when it checks a project and there is none (clippy without a `Cargo.toml` at the root).
pub(crate) fn files_for(choice: &Choice, changed: &ChangedLines, workspace: &Path) -> Vec<String> {
    if let Choice::BuiltIn(BuiltIn {
        project: Some(project),
        ..
    }) = choice
        && regular_file(workspace, project).is_none()
    {
        return Vec::new();
    }
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
/// a crate or module renamed there breaks its users); none without the project at the root.
pub(crate) fn project_files(
    tool: &BuiltIn,
    diff: &bugloop_diff::Diff,
    workspace: &Path,
) -> Vec<String> {
    let Some(project) = tool.project else {
        return Vec::new();
    };
    if regular_file(workspace, project).is_none() {
        return Vec::new();
    }
    let globs: Vec<String> = tool.files.iter().map(|g| (*g).to_owned()).collect();
    let Some(set) = glob_set(&globs) else {
        return Vec::new();
    };
    diff.files
        .iter()
        .filter_map(|file| file.new_path.as_deref().or(file.old_path.as_deref()))
        .filter_map(bugloop_domain::paths::text_name)
        .filter(|path| set.is_match(path) || path.rsplit('/').next() == Some(project))
        .collect()
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
