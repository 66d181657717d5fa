//! The compilers' own checkers as analyzers: clippy (with the compiler's lints that are bugs)
//! and go vet. Each checks a whole project, compiling it: only ever in the sandbox, offline.

use bugloop_domain::finding::Category;

use crate::hit::{Hit, Level};
use crate::invocation::{Invocation, strings};
use crate::weight::Weight;

/// The compiler's own lints that are bugs, not style: a comparison with NaN that is always
/// false, a function that can only call itself, a literal that overflows its type, ... (some
/// were clippy's correctness lints before they moved into the compiler).
const RUSTC_BUG_LINTS: &[&str] = &[
    "invalid_nan_comparisons",
    "unconditional_recursion",
    "overflowing_literals",
    "arithmetic_overflow",
    "unconditional_panic",
    "unused_comparisons",
    "invalid_value",
    "let_underscore_lock",
    "dropping_references",
    "forgetting_references",
    "invalid_from_utf8",
    "useless_ptr_null_checks",
    "dangling_pointers_from_temporaries",
    "ambiguous_wide_pointer_comparisons",
];

/// clippy: its `correctness` (deny) and `suspicious` (warn) groups, the compiler's errors,
/// `unused_must_use` and the compiler's lints that are bugs; everything else allowed. Compiles the crate: build scripts and proc macros
/// run, so only ever in the sandbox, offline, with the target directory in its private `/tmp`.
const CLIPPY_LINTS: &[&str] = &[
    "-A",
    "clippy::all",
    "-D",
    "clippy::correctness",
    "-W",
    "clippy::suspicious",
];

pub(crate) fn clippy_args(_: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "clippy",
        "--offline",
        "--quiet",
        "--all-targets",
        "--message-format=json",
        "--",
    ]);
    args.extend(strings(CLIPPY_LINTS));
    args
}

pub(crate) fn clippy_judge(hit: &Hit) -> Option<(Weight, Category)> {
    let rule = hit.rule.as_str();
    let compile_error = rule.len() == 5
        && rule.starts_with('E')
        && rule.chars().skip(1).all(|c| c.is_ascii_digit());
    if compile_error {
        return Some((Weight::Critical, Category::Logic));
    }
    match (rule, hit.level) {
        ("unused_must_use", _) => Some((Weight::Warning, Category::Reliability)),
        _ if RUSTC_BUG_LINTS.contains(&rule) => Some((Weight::Warning, Category::Logic)),
        (_, Level::Error) if rule.starts_with("clippy::") => Some((Weight::Error, Category::Logic)),
        (_, Level::Warning) if rule.starts_with("clippy::") => {
            Some((Weight::Warning, Category::Logic))
        }
        _ => None,
    }
}

/// go vet on the module's packages (`./...`), or in a Go workspace on those of each module it
/// uses (`./core/...`: `./...` names no module there).
pub(crate) fn go_vet_args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&["vet", "-json"]);
    let dir = i
        .files
        .first()
        .and_then(|file| go_project_dir(i.workspace, file))
        .unwrap_or_default();
    let work = crate::tree::in_dir(&dir, "go.work");
    let uses = crate::tree::read_at_most(i.workspace, &work, 1 << 20)
        .map(|text| go_work_uses(&String::from_utf8_lossy(&text)))
        .unwrap_or_default();
    if uses.is_empty() {
        args.push("./...".to_owned());
    }
    args.extend(uses.into_iter().map(|dir| match dir.as_str() {
        "." => "./...".to_owned(),
        dir => format!("./{dir}/..."),
    }));
    args
}

/// Where go vet runs for `file`: the nearest module above it (`go.mod`), or the Go workspace
/// (`go.work`) at or above that module, whose modules are vetted together.
pub(crate) fn go_project_dir(workspace: &std::path::Path, file: &str) -> Option<String> {
    let dir = crate::tree::manifest_dir(workspace, "go.mod", file)?;
    let module = crate::tree::in_dir(&dir, "go.mod");
    Some(crate::tree::manifest_dir(workspace, "go.work", &module).unwrap_or(dir))
}

/// The module directories a `go.work` uses (`use ./core`, or a `use ( ... )` block), those
/// within its directory only.
fn go_work_uses(text: &str) -> Vec<String> {
    let mut uses = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let named = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line
        } else if let Some(rest) = line.strip_prefix("use") {
            let rest = rest.trim();
            if rest == "(" {
                in_block = true;
                continue;
            }
            rest
        } else {
            continue;
        };
        let dir = named.trim_matches(['"', '`']).trim_start_matches("./");
        let dir = if dir.is_empty() {
            "."
        } else {
            dir.trim_end_matches('/')
        };
        let inside = std::path::Path::new(dir).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !named.is_empty() && inside && !uses.iter().any(|u| u == dir) {
            uses.push(dir.to_owned());
        }
    }
    uses
}

/// Whether the Go module at `dir` (from the root) is in a Go workspace: a `go.work` in it or in
/// a directory above it within the tree, which go finds and uses.
pub(crate) fn in_go_workspace(workspace: &std::path::Path, dir: &str) -> bool {
    let mut dir = dir;
    loop {
        let path = crate::tree::in_dir(dir, "go.work");
        if std::fs::symlink_metadata(workspace.join(&path)).is_ok() {
            return true;
        }
        match dir.rsplit_once('/') {
            Some((up, _)) => dir = up,
            None if dir.is_empty() => return false,
            None => dir = "",
        }
    }
}

/// go vet's analyzers at warning; a package that does not compile, as clippy's compile errors.
pub(crate) fn go_vet_judge(hit: &Hit) -> Option<(Weight, Category)> {
    if hit.rule == crate::formats::GO_COMPILE_RULE {
        return Some((Weight::Critical, Category::Logic));
    }
    Some((Weight::Warning, Category::Logic))
}

pub(crate) fn clippy_alone(_: Invocation<'_>) -> Vec<String> {
    strings(&[
        "clippy",
        "--offline",
        "--quiet",
        "--all-targets",
        "--message-format=json",
    ])
}

/// An added line of a `.go` file that moves the compiler's positions (`//line file:1`, or
/// `/*line file:1*/`): with one, go vet's compile errors name places of the branch's choosing,
/// in files it does not edit or in none, so they are not read (its files are said not checked).
pub(crate) fn go_line_directive(diff: &bugloop_diff::Diff) -> Option<String> {
    added_line(diff, ".go", |text| {
        text.starts_with("//line ") || text.contains("/*line ")
    })
}

/// An added line of a `.rs` file that has the compiler build code of another file in the
/// change's own module (`include!`, `#[path = ...]`), or say words of the change's choosing as
/// its error (`#[diagnostic::on_unimplemented]`): with one, a compile error outside the change's
/// lines may be its own, written to look like another file's, so none is attributed to it.
pub(crate) fn rust_places_moved(diff: &bugloop_diff::Diff) -> Option<String> {
    added_line(diff, ".rs", |text| {
        text.contains("include!") || text.contains("#[path") || text.contains("diagnostic::")
    })
}

/// `file:line` of the first line added to a file ending `ending` that `matches`.
fn added_line(
    diff: &bugloop_diff::Diff,
    ending: &str,
    matches: impl Fn(&str) -> bool,
) -> Option<String> {
    diff.files
        .iter()
        .filter(|file| {
            file.new_path
                .as_deref()
                .is_some_and(|p| p.ends_with(ending))
        })
        .find_map(|file| {
            let line = file
                .hunks
                .iter()
                .flat_map(|hunk| &hunk.lines)
                .filter(|line| line.kind == bugloop_diff::LineKind::Added)
                .find(|line| matches(line.text.trim_start()))?;
            Some(format!(
                "{}:{}",
                file.path(),
                line.new_line.unwrap_or_default()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_go_work_uses_the_modules_it_names_within_its_directory() {
        let work = "go 1.21\n\nuse ./core // shared\nuse (\n\t./app\n\t\"./tools/gen\"\n\t../outside\n\t/abs\n\t.\n)\nreplace x => ../y\n";
        assert_eq!(go_work_uses(work), ["core", "app", "tools/gen", "."]);
        assert!(go_work_uses("go 1.21\n").is_empty());
    }
}
