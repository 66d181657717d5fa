//! biome for JavaScript and TypeScript: its recommended correctness, suspicious and security
//! rules and two on promises, run in a copy of the tree's scripts with bugloop's own
//! `biome.json` at its root (its rules on promises infer types across the files a module
//! imports, which biome does only for the project its configuration roots), and its safe fixes.

use bugloop_domain::finding::Category;

use crate::hit::{Hit, Level};
use crate::invocation::{Invocation, strings, with_files};
use crate::weight::Weight;

/// biome: the recommended rules of its `correctness`, `suspicious` and `security` groups,
/// whatever the repository's `biome.json` says (bugloop's own configuration file). Not `--only`
/// of a group: that also turns on the group's rules biome does not recommend, such as
/// `noNodejsModules` and `noUnusedFunctionParameters`, which flag correct code.
const BIOME_GROUPS: &[&str] = &["lint/correctness/", "lint/suspicious/", "lint/security/"];

pub(crate) fn biome_args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "lint",
        "--reporter=sarif",
        "--max-diagnostics=none",
        "--no-errors-on-unmatched",
        // Its default (1 MiB) skips a larger file with only a warning of its own: a bundle or
        // a long module would go unchecked without a word in the review.
        "--files-max-size=16777216",
    ]);
    // Its configuration is bugloop's, at the root of the copy it runs in
    // ([`crate::scripts::run_in_copy`]).
    args.push(format!("--config-path={}", i.workspace.display()));
    with_files(args, i.files)
}

pub(crate) fn biome_fix(rule: &str, i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&["lint", "--write", "--no-errors-on-unmatched"]);
    args.push(format!("--config-path={}", i.config_dir));
    // SARIF names a rule `lint/suspicious/noDoubleEquals`; `--only` takes `suspicious/noDoubleEquals`.
    args.push(format!("--only={}", rule.trim_start_matches("lint/")));
    with_files(args, i.files)
}

/// biome's recommended rules about style or tidiness rather than wrong results (an `any`, an
/// unused name, an empty interface, `hasOwnProperty`): below the threshold, for a model to weigh.
/// An evaluation on realistic TypeScript found them the most of its noise, and
/// `noUnusedFunctionParameters` wrong on decorated parameters that are used.
const BIOME_MINOR: &[&str] = &[
    "lint/suspicious/noExplicitAny",
    "lint/suspicious/noEmptyInterface",
    "lint/suspicious/noConfusingVoidType",
    "lint/suspicious/noImplicitAnyLet",
    "lint/suspicious/noArrayIndexKey",
    "lint/suspicious/noPrototypeBuiltins",
    "lint/correctness/noUnusedFunctionParameters",
    "lint/correctness/noUnusedPrivateClassMembers",
    "lint/correctness/noUnusedVariables",
    "lint/correctness/noUnusedImports",
];

/// biome's rules on promises, from its `nursery` group (they infer types across the files a
/// module imports): a promise neither awaited, returned, collected nor given a `catch` (its
/// rejection is lost, and what follows runs before it), and one where a condition or a
/// callback that returns nothing is expected (`forEach(async ...)` waits for nothing).
/// bugloop's configuration turns on these two of the group only.
const BIOME_PROMISES: &[&str] = &[
    "lint/nursery/noFloatingPromises",
    "lint/nursery/noMisusedPromises",
];

pub(crate) fn biome_judge(hit: &Hit) -> Option<(Weight, Category)> {
    if BIOME_PROMISES.contains(&hit.rule.as_str()) {
        return Some((Weight::Warning, Category::Reliability));
    }
    if !BIOME_GROUPS.iter().any(|group| hit.rule.starts_with(group)) {
        return None;
    }
    match hit.rule.as_str() {
        // bugloop says each `@ts-ignore` a change adds itself (a suppression).
        "lint/suspicious/noTsIgnore" => return None,
        // A `forEach` callback that returns a value does no harm; a `map` one that returns
        // nothing does.
        "lint/suspicious/useIterableCallbackReturn"
            if hit.message.contains("should not return") =>
        {
            return Some((Weight::Minor, Category::Maintainability));
        }
        // Shadowing `escape` or `name` is tidiness; shadowing `undefined` or `NaN` changes
        // what the code compares with.
        "lint/suspicious/noShadowRestrictedNames"
            if !["undefined", "NaN", "Infinity", "eval", "arguments"]
                .iter()
                .any(|name| hit.message.contains(&format!("\"{name}\""))) =>
        {
            return Some((Weight::Minor, Category::Maintainability));
        }
        rule if BIOME_MINOR.contains(&rule) => {
            return Some((Weight::Minor, Category::Maintainability));
        }
        _ => {}
    }
    let category = if hit.rule.starts_with("lint/security/") {
        Category::Security
    } else {
        Category::Logic
    };
    // `eval` runs what it is given: critical, as ruff's S307.
    if hit.rule == "lint/security/noGlobalEval" {
        return Some((Weight::Critical, category));
    }
    match hit.level {
        Level::Error => Some((Weight::Error, category)),
        Level::Warning => Some((Weight::Warning, category)),
        Level::Note => None,
    }
}

pub(crate) fn biome_alone(i: Invocation<'_>) -> Vec<String> {
    let args = strings(&[
        "lint",
        "--reporter=sarif",
        "--max-diagnostics=none",
        "--no-errors-on-unmatched",
        "--files-max-size=16777216",
    ]);
    with_files(args, i.files)
}
