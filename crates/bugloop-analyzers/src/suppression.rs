//! Suppressions a change adds (`# noqa`, `# nosec`, `eslint-disable`, `#[allow(...)]`, ...):
//! a tool that honours one reports nothing on that line, so only bugloop can say that the
//! change silenced a check. Each is a candidate naming what it silences.

use bugloop_diff::{Diff, LineKind};
use bugloop_domain::finding::Category;

use crate::hit::{Candidate, Hit, Level};
use crate::scope::added_lines;
use crate::weight::Weight;

/// A suppression's marker, whose check it silences, and whether that check is about security.
pub(crate) struct Marker {
    text: &'static str,
    /// A pattern where the words may vary (`# hadolint global ignore=`, `# shellcheck
    /// source=x disable=`); otherwise `text` itself is looked for.
    pattern: Option<&'static str>,
    silences: &'static str,
    security: bool,
}

const MARKERS: &[Marker] = &[
    Marker {
        text: "#[cfg_attr(..., allow(",
        pattern: Some(r"cfg_attr\([^\n]*?\b(?:allow|expect)\("),
        silences: "the Rust compiler's or clippy's lints",
        security: false,
    },
    Marker {
        text: "# noqa",
        pattern: None,
        silences: "ruff's or flake8's checks",
        security: false,
    },
    Marker {
        text: "# nosec",
        pattern: None,
        silences: "bandit's security checks",
        security: true,
    },
    Marker {
        text: "# type: ignore",
        // `#type:ignore` silences as much: an attacker's review hid a wrong call behind
        // `#ty:ignore` when only the spaced form was looked for.
        pattern: Some(r"#\s*type:\s*ignore"),
        silences: "the type checker",
        security: false,
    },
    Marker {
        text: "# pyright: ignore",
        pattern: None,
        silences: "the type checker",
        security: false,
    },
    Marker {
        text: "# ty: ignore",
        pattern: Some(r"#\s*ty:\s*ignore"),
        silences: "ty's type checks",
        security: false,
    },
    Marker {
        text: "pylint: disable",
        pattern: None,
        silences: "pylint's checks",
        security: false,
    },
    Marker {
        text: "eslint-disable",
        pattern: None,
        silences: "eslint's rules",
        security: false,
    },
    Marker {
        text: "biome-ignore",
        pattern: None,
        silences: "biome's rules",
        security: false,
    },
    Marker {
        text: "oxlint-disable",
        pattern: None,
        silences: "oxlint's rules",
        security: false,
    },
    Marker {
        text: "@ts-ignore",
        pattern: None,
        silences: "the TypeScript compiler's errors",
        security: false,
    },
    Marker {
        text: "@ts-expect-error",
        pattern: None,
        silences: "the TypeScript compiler's errors",
        security: false,
    },
    Marker {
        text: "@ts-nocheck",
        pattern: None,
        silences: "the TypeScript compiler's errors",
        security: false,
    },
    Marker {
        text: "#[allow(",
        pattern: None,
        silences: "the Rust compiler's or clippy's lints",
        security: false,
    },
    Marker {
        text: "#![allow(",
        pattern: None,
        silences: "the Rust compiler's or clippy's lints",
        security: false,
    },
    Marker {
        text: "#[expect(",
        pattern: None,
        silences: "the Rust compiler's or clippy's lints",
        security: false,
    },
    Marker {
        text: "shellcheck disable=",
        pattern: Some(r"shellcheck\b[^\n]*?\bdisable\s*="),
        silences: "shellcheck's checks",
        security: false,
    },
    Marker {
        text: "hadolint ignore=",
        pattern: Some(r"hadolint\s+(?:global\s+)?ignore\s*="),
        silences: "hadolint's checks",
        security: false,
    },
    Marker {
        text: "zizmor: ignore",
        pattern: None,
        silences: "zizmor's security audits",
        security: true,
    },
    Marker {
        text: "nolint",
        pattern: None,
        silences: "Go linters",
        security: false,
    },
    Marker {
        text: "NOSONAR",
        pattern: None,
        silences: "SonarQube's checks",
        security: false,
    },
    Marker {
        text: "gitleaks:allow",
        pattern: None,
        silences: "the secrets scanner",
        security: true,
    },
    Marker {
        text: "pragma: allowlist secret",
        pattern: None,
        silences: "the secrets scanner",
        security: true,
    },
];

/// Rules whose silencing is about security, whatever the marker: bandit-derived `S` codes.
fn silences_security(codes: &str) -> bool {
    codes
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|code| {
            code.len() >= 4
                && code.starts_with('S')
                && code[1..].chars().all(|c| c.is_ascii_digit())
        })
        || codes.contains("security")
}

/// A lint allowed for a whole crate in a `Cargo.toml` (`[lints.rust] unused_must_use =
/// "allow"`, `eq_op = { level = "allow", priority = 1 }`): cargo passes it to the compiler,
/// where it silences the rule for every file.
const CARGO_LINT: Marker = Marker {
    text: "[lints] ... = \"allow\"",
    pattern: Some(r#"^\s*"?[A-Za-z_][\w:-]*"?\s*=\s*(?:"allow"|\{[^}]*\blevel\s*=\s*"allow")"#),
    silences: "the Rust compiler's or clippy's lints, for the whole crate",
    security: false,
};

/// A declaration of the project's own module (`declare module "./money" { ... }`): tsc believes
/// it over the module's code, so an `any` it declares hides every wrong call into the module.
/// Packages are declared so every day (`declare module "express"`); the project's own modules
/// have their code. An attacker's review hid a wrong call that way, the review complete.
const OWN_MODULE_DECLARED: Marker = Marker {
    text: "declare module",
    pattern: Some(r#"^\s*(?:export\s+)?declare\s+module\s+["'](\.{1,2}/[^"']*)["']"#),
    silences: "the TypeScript compiler's checks of calls into that module of the project, in every file: it believes this declaration over the module's code",
    security: false,
};

/// Code guarded so that type checkers skip it while Python runs it: `if not TYPE_CHECKING:`,
/// and any use of the constant but the plain `if TYPE_CHECKING:` of imports for annotations
/// (`TYPE_CHECKING is False`, an alias of it, a `while`, a conditional expression), and the
/// `else:` of a plain one.
const TYPE_CHECKING_GUARD: Marker = Marker {
    text: "TYPE_CHECKING",
    pattern: None,
    silences: "every type checker, which never reads what it guards and Python runs",
    security: false,
};

/// An added line that uses `TYPE_CHECKING` otherwise than `if TYPE_CHECKING:` or its import.
fn type_checking_guard(file: &str, text: &str) -> Option<(&'static Marker, String)> {
    if !file.ends_with(".py") && !file.ends_with(".pyi") || !text.contains("TYPE_CHECKING") {
        return None;
    }
    let code = text.split('#').next().unwrap_or(text).trim();
    let plain_if = matches!(code, "if TYPE_CHECKING:" | "if typing.TYPE_CHECKING:");
    let plain_import =
        (code.starts_with("from ") || code.starts_with("import ")) && !code.contains(" as ");
    (!plain_if && !plain_import && code.contains("TYPE_CHECKING"))
        .then(|| (&TYPE_CHECKING_GUARD, String::new()))
}

/// Every suppression on a line the change adds, and every added line a suppression the change
/// keeps on the line above silences, as a candidate of the tool `bugloop`.
pub fn suppressions_added(diff: &Diff) -> Vec<Candidate> {
    let mut found: Vec<Candidate> = added_lines(diff)
        .filter_map(|(file, number, text)| {
            suppression(text)
                .or_else(|| cargo_lint_allowed(file, text))
                .or_else(|| own_module_declared(file, text))
                .or_else(|| type_checking_guard(file, text))
                .map(|silenced| candidate_for(file, number, text, silenced, Said::Added))
        })
        .collect();
    found.extend(under_a_kept_suppression(diff));
    found
}

/// Markers that silence the line after their own.
const NEXT_LINE: &[&str] = &[
    "@ts-ignore",
    "@ts-expect-error",
    "eslint-disable-next-line",
    "biome-ignore",
    "oxlint-disable-next-line",
    "# shellcheck disable=",
    "# hadolint ignore=",
    "# pylint: disable-next",
    "NOLINTNEXTLINE",
];

/// An added line under a line the change keeps whose suppression silences the next line of
/// code (`// @ts-ignore` above a line the change rewrites, blank and comment lines between
/// them, as tsc skips them), or in the `else:` of an `if TYPE_CHECKING:` the change keeps: the
/// checks of the new code are off, and an attacker's review hid a type error under one the base
/// had. Said once at the first such added line of each.
fn under_a_kept_suppression(diff: &Diff) -> Vec<Candidate> {
    let mut found = Vec::new();
    for file in &diff.files {
        for hunk in &file.hunks {
            // The kept suppression waiting for its line of code, and the indentation of a kept
            // `else:` of `if TYPE_CHECKING:` whose block the lines are in.
            let mut pending: Option<(&'static Marker, String)> = None;
            let mut unchecked_block: Option<usize> = None;
            let mut type_checking_if: Option<usize> = None;
            for line in hunk.lines.iter().filter(|l| l.kind != LineKind::Removed) {
                let text = line.text.trim();
                let indent = line.text.len() - line.text.trim_start().len();
                let comment = ["//", "/*", "*", "#"].iter().any(|c| text.starts_with(c));
                let marker = NEXT_LINE.iter().any(|m| text.contains(m));
                // tsc, shellcheck and hadolint look past blank lines and comments for the
                // line a directive silences.
                if text.is_empty() || (comment && !marker) {
                    continue;
                }
                if unchecked_block.is_some_and(|block| indent <= block) {
                    unchecked_block = None;
                }
                let silenced = match (line.kind, &pending, unchecked_block) {
                    (LineKind::Added, Some(kept), _) => Some((kept.clone(), Said::KeptAbove)),
                    (LineKind::Added, None, Some(_)) => {
                        unchecked_block = None;
                        Some((
                            (&TYPE_CHECKING_GUARD, String::new()),
                            Said::InTypeCheckingElse,
                        ))
                    }
                    _ => None,
                };
                if let (Some((silenced, said)), Some(number)) = (silenced, line.new_line) {
                    found.push(candidate_for(
                        file.path(),
                        number,
                        &line.text,
                        silenced,
                        said,
                    ));
                }
                pending = match line.kind {
                    LineKind::Context if marker => suppression_marker(text),
                    _ => None,
                };
                if matches!(text, "if TYPE_CHECKING:" | "if typing.TYPE_CHECKING:") {
                    type_checking_if = Some(indent);
                } else if text == "else:" {
                    unchecked_block = type_checking_if.filter(|at| *at == indent);
                } else if type_checking_if.is_some_and(|at| indent <= at) {
                    type_checking_if = None;
                }
            }
        }
    }
    found
}

/// An added line of a `Cargo.toml` that allows a lint: the lint's name.
fn cargo_lint_allowed(file: &str, text: &str) -> Option<(&'static Marker, String)> {
    let manifest = file == "Cargo.toml" || file.ends_with("/Cargo.toml");
    if !manifest || find(&CARGO_LINT, text).is_none() {
        return None;
    }
    let name = text.split('=').next()?.trim().trim_matches('"');
    Some((&CARGO_LINT, crate::keys::mask_keys(name)))
}

/// An added line of a TypeScript file that declares one of the project's own modules: its path.
fn own_module_declared(file: &str, text: &str) -> Option<(&'static Marker, String)> {
    let typescript = [".ts", ".tsx", ".mts", ".cts"]
        .iter()
        .any(|end| file.ends_with(end));
    let (start, end) = find(&OWN_MODULE_DECLARED, text).filter(|_| typescript)?;
    let declared = text[start..end].trim_end_matches(['"', '\'']);
    let path = declared.rsplit(['"', '\'']).next().unwrap_or_default();
    Some((&OWN_MODULE_DECLARED, crate::keys::mask_keys(path)))
}

/// What a line's suppression silences: the marker and the codes written after it; nothing for
/// a `# noqa` that silences only codes bugloop's ruff rule set does not count.
/// Of the line's markers, the first that silences something bugloop counts: after a `# noqa`
/// of uncounted codes, a `# ty: ignore` on the same line is still said (an attacker's review
/// hid one behind `# noqa # ty: ignore`).
fn suppression(text: &str) -> Option<(&'static Marker, String)> {
    markers_on(text).into_iter().find(|(marker, codes)| {
        let ruff_codes: Vec<&str> = codes
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|c| !c.is_empty())
            .collect();
        let only_uncounted = marker.text == "# noqa"
            && !ruff_codes.is_empty()
            && ruff_codes
                .iter()
                .all(|code| !crate::builtin::ruff_counts(code));
        !only_uncounted
    })
}

/// Where `marker` is on `text`: its start and end.
fn find(marker: &Marker, text: &str) -> Option<(usize, usize)> {
    match marker.pattern {
        Some(pattern) => {
            static COMPILED: std::sync::OnceLock<
                std::sync::Mutex<std::collections::HashMap<&'static str, regex::Regex>>,
            > = std::sync::OnceLock::new();
            let cache = COMPILED.get_or_init(Default::default);
            let mut cache = cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !cache.contains_key(pattern) {
                cache.insert(pattern, regex::Regex::new(pattern).ok()?);
            }
            let found = cache.get(pattern)?.find(text)?;
            Some((found.start(), found.end()))
        }
        None => text
            .find(marker.text)
            .map(|at| (at, at + marker.text.len())),
    }
}

/// The first marker on a line and its codes.
pub(crate) fn suppression_marker(text: &str) -> Option<(&'static Marker, String)> {
    markers_on(text).into_iter().next()
}

/// Every marker on a line, in their order, each with the codes written after it (up to the
/// next comment: `# noqa: F401 # ty: ignore` names F401 for the first).
fn markers_on(text: &str) -> Vec<(&'static Marker, String)> {
    let mut found: Vec<(&'static Marker, (usize, usize))> = MARKERS
        .iter()
        .filter_map(|m| find(m, text).map(|place| (m, place)))
        .collect();
    found.sort_by_key(|(_, (start, _))| *start);
    found
        .into_iter()
        .map(|(marker, (_, end))| (marker, codes_after(&text[end..])))
        .collect()
}

fn codes_after(rest: &str) -> String {
    let codes: String = rest
        .trim_start_matches([':', '=', ' ', '-', '['])
        .split(" #")
        .next()
        .unwrap_or_default()
        .split("*/")
        .next()
        .unwrap_or_default()
        .split("-->")
        .next()
        .unwrap_or_default()
        .trim()
        .trim_end_matches([')', ']', ' '])
        .chars()
        .take(120)
        .collect();
    crate::keys::mask_keys(&codes)
}

/// Where a suppression is: on the line the change adds, kept on the line above it, or kept as the
/// `if TYPE_CHECKING:` whose `else:` the line is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    Added,
    KeptAbove,
    /// In the `else:` of an `if TYPE_CHECKING:` the change keeps.
    InTypeCheckingElse,
    /// Under a suppression the change keeps on `line` that reaches the whole file, or (`range`)
    /// down to its end marker ([`crate::file_wide`]).
    KeptForMore {
        line: u32,
        range: bool,
    },
}

pub(crate) fn candidate_for(
    file: &str,
    line: u32,
    text: &str,
    (marker, codes): (&Marker, String),
    said: Said,
) -> Candidate {
    // `@ts-nocheck` reaches the whole file, `if not TYPE_CHECKING:` its block.
    let reach = match (marker.text, said) {
        (_, Said::KeptForMore { .. }) => "",
        ("@ts-nocheck", _) => " in this whole file",
        ("TYPE_CHECKING", _) => " in the code it guards",
        _ => " on this line",
    };
    let what = if codes.is_empty() {
        format!("every check of {}{reach}", marker.silences)
    } else {
        format!("{codes} ({})", marker.silences)
    };
    let security = marker.security || silences_security(&codes);
    let message = match said {
        Said::Added => format!(
            "This change adds `{}`, which silences {what}: say why the check is wrong here, or fix what it reports",
            shown(marker.text)
        ),
        Said::InTypeCheckingElse => format!(
            "This line the change writes is in the `else:` of an `if TYPE_CHECKING:` the change keeps, which silences {what}: move it out of the `else:`, or say why no type checker needs to read it"
        ),
        Said::KeptAbove => format!(
            "This line the change writes is under `{}` on the line above, which the change keeps and which silences {what}: say why the check is wrong for the new code, or remove it",
            shown(marker.text)
        ),
        Said::KeptForMore { line, range } => format!(
            "This line the change writes is under `{}` on line {line}, which the change keeps and which silences {what} {}: say why the check is wrong for the new code, or remove it",
            shown(marker.text),
            if range {
                "down to its end marker"
            } else {
                "in the whole file"
            }
        ),
    };
    let mut hit = Hit::at("suppression", Level::Warning, (file, line), message);
    hit.security = security;
    let category = if security {
        Category::Security
    } else {
        Category::Maintainability
    };
    Candidate::said(
        "bugloop",
        hit,
        (Weight::Warning, category),
        crate::keys::safe_evidence(text),
    )
}

/// A marker as a reader knows it: an attribute's parentheses and bracket closed around `…`
/// (`#[cfg_attr(..., allow(…))]`), a comment's `# ` left out.
fn shown(marker: &str) -> String {
    let text = marker.trim_start_matches("# ");
    if !text.ends_with('(') {
        return text.to_owned();
    }
    let open = text
        .matches('(')
        .count()
        .saturating_sub(text.matches(')').count());
    let bracket = if text.starts_with("#[") || text.starts_with("#![") {
        "]"
    } else {
        ""
    };
    format!("{text}…{}{bracket}", ")".repeat(open))
}

/// A suppression on a line a tool still reports (bugloop runs the tools ignoring them where it
/// can) is said on that hit's finding rather than as a second finding at the same place.
pub(crate) fn fold_into_hits(candidates: &mut Vec<Candidate>) {
    let (suppressions, mut rest): (Vec<Candidate>, Vec<Candidate>) = candidates
        .drain(..)
        .partition(|c| c.tool == "bugloop" && c.hit.rule == "suppression");
    for suppression in suppressions {
        let hits = rest
            .iter_mut()
            .filter(|c| c.hit.file == suppression.hit.file && c.hit.line == suppression.hit.line);
        let mut folded = false;
        for hit in hits {
            hit.note = Some(format!(
                "The change also silences the check here: {}",
                suppression.hit.message
            ));
            folded = true;
        }
        if !folded {
            rest.push(suppression);
        }
    }
    *candidates = rest;
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scope::adding as added;

    #[test]
    fn each_kind_of_suppression_is_named_with_what_it_silences() {
        let diff = added(
            "app.py",
            &[
                "q = \"SELECT \" + name  # noqa: S608",
                "x = 1",
                "subprocess.call(cmd, shell=True)  # nosec",
                "y = f()  # type: ignore[attr-defined]",
            ],
        );
        let found = suppressions_added(&diff);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].hit.line, 1);
        assert!(
            found[0].hit.message.contains("S608"),
            "{}",
            found[0].hit.message
        );
        assert_eq!(found[0].category, Category::Security);
        assert_eq!(found[1].hit.line, 3);
        assert!(found[1].hit.message.contains("bandit"));
        assert_eq!(found[2].category, Category::Maintainability);
        assert_eq!(found[0].evidence, "q = \"SELECT \" + name  # noqa: S608");
    }

    #[test]
    fn other_languages_are_read_too() {
        for (path, line, named) in [
            ("a.js", "// eslint-disable-next-line no-eval", "no-eval"),
            (
                "a.rs",
                "#[allow(clippy::absurd_extreme_comparisons)]",
                "clippy::absurd_extreme_comparisons",
            ),
            ("a.sh", "# shellcheck disable=SC2086", "SC2086"),
            ("a.go", "x := f() //nolint:errcheck", "errcheck"),
            ("Dockerfile", "# hadolint global ignore=DL4006", "DL4006"),
            (
                "a.sh",
                "# shellcheck source=/dev/null disable=SC2115",
                "SC2115",
            ),
            (
                "b.rs",
                "#[cfg_attr(all(), allow(clippy::eq_op))]",
                "clippy::eq_op",
            ),
            // Unspaced and tabbed forms silence as much; a rule in brackets is named plainly.
            (
                "a.py",
                "x = f(1)  #ty:ignore[missing-argument]",
                "silences missing-argument (",
            ),
            ("a.py", "x = f(1)  #\tty:\tignore", "ty's type checks"),
            ("a.py", "x = f(1)  #type:ignore", "the type checker"),
            ("a.py", "if not TYPE_CHECKING:", "in the code it guards"),
            (
                "a.py",
                "while TYPE_CHECKING is False:",
                "in the code it guards",
            ),
            (
                "a.py",
                "from typing import TYPE_CHECKING as TC",
                "never reads what it guards",
            ),
            (
                "a.py",
                "x = f(1)  # noqa: F401 # ty: ignore",
                "ty's type checks",
            ),
        ] {
            let found = suppressions_added(&added(path, &[line]));
            assert_eq!(found.len(), 1, "{line}");
            assert!(
                found[0].hit.message.contains(named),
                "{}",
                found[0].hit.message
            );
        }
    }

    /// A lint allowed for the whole crate in a `Cargo.toml`'s `[lints]` is a suppression too;
    /// a dependency's version is not, nor the same words in another file.
    #[test]
    fn a_lint_allowed_in_a_manifest_is_a_suppression() {
        for (line, named) in [
            ("unused_must_use = \"allow\"", "unused_must_use"),
            ("eq_op = { level = \"allow\", priority = 1 }", "eq_op"),
            ("\"clippy::eq_op\" = \"allow\"", "clippy::eq_op"),
        ] {
            let found = suppressions_added(&added("crates/a/Cargo.toml", &[line]));
            assert_eq!(found.len(), 1, "{line}");
            let message = &found[0].hit.message;
            assert!(message.contains(named), "{message}");
            assert!(message.contains("for the whole crate"), "{message}");
        }
        let dependency = added("Cargo.toml", &["serde = \"1\"", "mode = \"deny\""]);
        assert!(suppressions_added(&dependency).is_empty());
        assert!(suppressions_added(&added("policy.toml", &["x = \"allow\""])).is_empty());
    }

    #[test]
    fn a_declaration_of_the_projects_own_module_is_one_and_a_packages_is_not() {
        let lines = [
            "declare module './money' {",
            "export declare module \"../lib/cart\" { export const x: any }",
            "declare module 'express' {",
            "// @ts-nocheck",
        ];
        let found = suppressions_added(&added("src/0.d.ts", &lines));
        let said: Vec<(u32, &str)> = found
            .iter()
            .map(|c| (c.hit.line, c.hit.message.as_str()))
            .collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].1.contains("silences ./money (") && said[0].1.contains("believes"));
        assert!(
            said[1].1.contains("silences ../lib/cart ("),
            "{}",
            said[1].1
        );
        assert_eq!(said[2].0, 4);
        assert!(said[2].1.contains("in this whole file"), "{}", said[2].1);
        // Only in TypeScript.
        assert!(suppressions_added(&added("notes.md", &lines[..1])).is_empty());
    }

    #[test]
    fn an_added_line_under_a_kept_next_line_suppression_is_said() {
        let diff = bugloop_diff::parse(
            "diff --git a/a.ts b/a.ts\n--- a/a.ts\n+++ b/a.ts\n@@ -1,4 +1,4 @@\n \
             const a = 1;\n // @ts-ignore\n-const total: number = sum(items);\n\
             +const total: number = \"all\";\n // @ts-ignore\n const kept = old;\n",
        );
        let found = suppressions_added(&diff);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].hit.line, 3);
        assert!(
            found[0]
                .hit
                .message
                .starts_with("This line the change writes is under `@ts-ignore`"),
            "{}",
            found[0].hit.message
        );
        assert_eq!(found[0].evidence, "const total: number = \"all\";");
    }

    #[test]
    fn type_checking_for_imports_is_no_suppression() {
        let lines = [
            "from typing import TYPE_CHECKING",
            "if TYPE_CHECKING:",
            "    from app.models import User",
        ];
        assert!(suppressions_added(&added("a.py", &lines)).is_empty());
    }

    #[test]
    fn a_kept_directive_reaches_past_blank_lines_and_comments_and_an_else_is_unchecked() {
        let diff = bugloop_diff::parse(
            "diff --git a/a.ts b/a.ts\n--- a/a.ts\n+++ b/a.ts\n@@ -1,4 +1,5 @@\n \
             // @ts-ignore\n \n // why\n-const a = f();\n+const a: number = \"x\";\n+const b = 2;\n\
             diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,5 @@\n \
             if TYPE_CHECKING:\n     pass\n else:\n-    x = 1\n+    x = len(5)\n+    y = 2\n z = 3\n",
        );
        let found = suppressions_added(&diff);
        let places: Vec<(&str, u32)> = found
            .iter()
            .map(|c| (c.hit.file.as_str(), c.hit.line))
            .collect();
        assert_eq!(places, [("a.ts", 4), ("m.py", 4)]);
        assert!(
            found[1]
                .hit
                .message
                .contains("in the `else:` of an `if TYPE_CHECKING:`")
        );
    }

    /// The attribute is shown closed, its lints without the attribute's brackets.
    #[test]
    fn an_attributes_suppression_reads_as_written() {
        let found = suppressions_added(&added(
            "lib.rs",
            &["#![cfg_attr(all(), expect(clippy::eq_op, unused_must_use))]"],
        ));
        let message = &found[0].hit.message;
        assert!(
            message.contains("`#[cfg_attr(..., allow(…))]`"),
            "{message}"
        );
        assert!(
            message.contains("clippy::eq_op, unused_must_use (the"),
            "{message}"
        );
        assert!(shown("#[allow(") == "#[allow(…)]");
        assert!(shown("# noqa") == "noqa");
    }

    #[test]
    fn a_noqa_of_rules_bugloop_does_not_count_says_nothing() {
        let diff = added(
            "pkg/__init__.py",
            &[
                "from .api import get  # noqa: F401",
                "x = 1  # noqa: E501, S608",
            ],
        );
        let found = suppressions_added(&diff);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].hit.line, 2);
    }

    #[test]
    fn removed_and_context_lines_are_not_the_changes() {
        let diff = bugloop_diff::parse(
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1  # noqa\n-y = 2  # noqa\n+y = 3\n",
        );
        assert!(suppressions_added(&diff).is_empty());
    }
}
