//! ty, Astral's type checker for Python (one static binary, beside ruff): what ruff cannot see
//! without types. A match that may be `None` used as a match, a call with an argument missing or
//! of the wrong type, an attribute or imported name that does not exist, a coroutine never
//! awaited. It runs with bugloop's `ty.toml` (`--config-file`, so neither `ty.toml` nor
//! `pyproject.toml` of the branch is read) and writes SARIF. Only rules that are bugs count;
//! what a missing dependency causes never does, because a checkout under review has no
//! installed packages (their imports are unresolved, their values of unknown type).

use bugloop_domain::finding::Category;

use crate::hit::Hit;
use crate::invocation::{Invocation, strings, with_files};
use crate::weight::Weight;

/// bugloop's `ty.toml`: `# type: ignore` hides nothing (ty's own `# ty: ignore[rule]` still
/// does, and bugloop says each one a change adds), and code for every platform is checked (by
/// default ty skips what `sys.platform == "win32"` guards on Linux, and an attacker's review hid
/// a Windows-only bug there).
pub(crate) const CONFIG: &str = "[analysis]\nrespect-type-ignore-comments = false\n\n\
                                 [environment]\npython-platform = \"all\"\n";

pub(crate) fn args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "check",
        "--output-format",
        "sarif",
        "--no-progress",
        "--color",
        "never",
        "--exit-zero",
        "--config-file",
    ]);
    args.push(format!("{}/ty.toml", i.config_dir));
    for root in crate::workspaces::python_roots(i.workspace) {
        args.push("--extra-search-path".to_owned());
        args.push(root.display().to_string());
    }
    with_files(args, i.files)
}

/// ty as a user runs it on files, with its defaults: `bench detect`'s yardstick.
pub(crate) fn alone(i: Invocation<'_>) -> Vec<String> {
    let args = strings(&["check", "--output-format", "sarif", "--exit-zero"]);
    with_files(args, i.files)
}

/// Code ty proves wrong: a call that does not fit what it calls, an attribute, a module's
/// member or a key that does not exist, a value used as what it is not (called, iterated,
/// indexed, awaited, added), an assignment or a `return` of the wrong type.
const WRONG: &[&str] = &[
    "missing-argument",
    "unknown-argument",
    "too-many-positional-arguments",
    "parameter-already-assigned",
    "positional-only-parameter-as-kwarg",
    "invalid-argument-type",
    "no-matching-overload",
    "missing-attribute",
    "missing-module-member",
    "missing-typed-dict-key",
    "invalid-typed-dict-key",
    "unknown-typed-dict-constructor-key",
    "not-callable",
    "not-iterable",
    "not-subscriptable",
    "index-out-of-bounds",
    "zero-stepsize-in-slice",
    "unsupported-operator",
    "unsupported-bool-conversion",
    "invalid-await",
    "invalid-assignment",
    "invalid-explicit-return",
    "invalid-implicit-return",
    "invalid-context-manager",
    "invalid-raise",
    "invalid-exception-caught",
    "abstract-class-instantiation",
    "abstract-method-call",
];

/// A likely bug: a value that may be `None` used as if it were not (its union's other member),
/// a coroutine never awaited, a function tested for truth where its result was meant.
const LIKELY: &[&str] = &[
    "missing-union-attribute",
    "unused-awaitable",
    "redundant-condition",
];

pub(crate) fn judge(hit: &Hit) -> Option<(Weight, Category)> {
    let rule = hit.rule.as_str();
    if (WRONG.contains(&rule) || LIKELY.contains(&rule)) && unsure(&hit.message) {
        return Some((Weight::Minor, Category::Logic));
    }
    // `None`, or a union with it (`Customer | None`): only strict checking of optional values
    // says so, and a project may know better.
    let about_none = hit.message.contains("None");
    if LIKELY.contains(&rule) || (WRONG.contains(&rule) && about_none) {
        // An always-true `if` that is not a function's missing call is style.
        if rule == "redundant-condition" && !hit.message.contains("call") {
            return None;
        }
        let category = if rule == "unused-awaitable" {
            Category::Reliability
        } else {
            Category::Logic
        };
        return Some((Weight::Warning, category));
    }
    WRONG
        .contains(&rule)
        .then_some((Weight::Error, Category::Logic))
}

/// What ty says where untyped, dynamic code leaves it guessing, which an evaluation on such code
/// found wrong every time: a union that holds what ty could not type (`Unknown`), an attribute
/// set on a function (`functools.wraps`'s wrapper), a module's function replaced (a monkeypatch).
/// Not a union that starts with `None`: an attribute first set to `None` in `__init__` reads so,
/// and so does an optional value annotated `None | str`, which an attacker's review used to
/// hide a bug below the threshold.
fn unsure(message: &str) -> bool {
    message.contains("| Unknown")
        || message.contains("`Unknown |")
        || message.contains("`_Wrapped[")
        || (message.contains("to attribute `") && message.contains("of type `def "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hit::Level;

    #[test]
    fn bugs_count_and_what_a_missing_package_or_ruff_says_does_not() {
        let (error, warning, minor) = (
            Some(Weight::Error),
            Some(Weight::Warning),
            Some(Weight::Minor),
        );
        for (rule, message, weight) in [
            (
                "missing-argument",
                "No argument provided for required parameter `currency`",
                error,
            ),
            (
                "missing-union-attribute",
                "Attribute `group` is not defined on `None` in union `Match[str] | None`",
                warning,
            ),
            (
                "not-subscriptable",
                "Cannot subscript object of type `None` with no `__getitem__` method",
                warning,
            ),
            (
                "redundant-condition",
                "Function `parse` is always truthy: Did you mean to call this function?",
                warning,
            ),
            ("redundant-condition", "Condition is always true", None),
            // `None` in a union is about None too.
            (
                "invalid-assignment",
                "Object of type `Customer | None` is not assignable to `Customer`",
                warning,
            ),
            (
                "missing-union-attribute",
                "Attribute `upper` is not defined on `None` in union `None | str`",
                warning,
            ),
            // Where ty guesses in untyped code, below the threshold.
            (
                "unsupported-operator",
                "Operator `+` is not supported between `bytes | Unknown` and `int`",
                minor,
            ),
            (
                "missing-attribute",
                "Object of type `_Wrapped[(x), int]` has no attribute `calls`",
                minor,
            ),
            // An unresolved import is a package not installed here; an undefined name is
            // ruff's F821 already.
            (
                "import-not-found",
                "Cannot resolve imported module `requests`",
                None,
            ),
            (
                "unresolved-reference",
                "Name `x` used when not defined",
                None,
            ),
            (
                "unused-ignore-comment",
                "Unused blanket `type: ignore` directive",
                None,
            ),
        ] {
            let hit = Hit::of_rule(rule, Level::Error, message);
            assert_eq!(judge(&hit).map(|j| j.0), weight, "{rule}: {message}");
        }
    }

    #[test]
    fn the_branchs_configuration_is_set_aside_for_ours() {
        let files = vec!["-a.py".to_owned()];
        let args = args(Invocation {
            files: &files,
            config_dir: "/cfg",
            workspace: std::path::Path::new("/w"),
            edited: &[],
        });
        let at = args.iter().position(|a| a == "--config-file").unwrap();
        assert_eq!(args[at + 1], "/cfg/ty.toml");
        assert_eq!(args[args.len() - 2..], ["--", "-a.py"]);
    }
}
