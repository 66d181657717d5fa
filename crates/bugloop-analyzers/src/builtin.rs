//! The built-in analyzers: for each, the files it reads, how it runs with bugloop's own rule set
//! (never the repository's configuration: `--isolated`, `--norc`, `--no-config` or a
//! configuration file of bugloop's), how its output is read, which of its rules count as bugs
//! and at which score, and its own fix where it has one. `docs/analyzers.md` documents each
//! rule set; the table here is the one truth.

use bugloop_domain::finding::Category;

use crate::formats::Format;
use crate::hit::{Hit, Level};
use crate::invocation::{Invocation, strings, with_files};
use crate::own;
use crate::weight::{Weight, is_test_file};

/// What bugloop's rule set makes of a hit: its weight and category, or nothing (a style rule).
pub(crate) type Judge = fn(&Hit) -> Option<(Weight, Category)>;

/// One built-in analyzer.
#[derive(Debug)]
pub struct BuiltIn {
    pub name: &'static str,
    /// The program, looked up in bugloop's analyzers directory, then on `PATH`; or, named by its
    /// absolute path, that file (the system's `python3` for bugloop's own rules).
    pub program: &'static str,
    /// Globs of the files it reads; it runs only when the change touches one.
    pub files: &'static [&'static str],
    /// The interpreters whose scripts it also reads when their name has no extension (`bin/deploy`
    /// starting `#!/usr/bin/env bash`): named without path or version (`python`, `bash`).
    pub interpreters: &'static [&'static str],
    /// It checks a whole project found by this file at the workspace's root (`Cargo.toml`),
    /// not files one by one.
    pub project: Option<&'static str>,
    /// The rule set, for `docs/analyzers.md` and `bugloop doctor`.
    pub rule_set: &'static str,
    /// Arguments that print its version.
    pub version_args: &'static [&'static str],
    /// Where it comes from, for a user who does not have it.
    pub install: &'static str,
    /// Files at the root that decide how the tool runs and that bugloop cannot set aside (cargo
    /// reads `.cargo/config.toml`: aliases, rustflags such as `--cap-lints=allow`): when the
    /// change edits one, the tool does not run under configuration the change wrote.
    pub unsafe_config: &'static [&'static str],
    pub(crate) format: Format,
    pub(crate) args: fn(Invocation<'_>) -> Vec<String>,
    /// The tool run alone, as a user would with its defaults: the yardstick `bench detect`
    /// measures bugloop against.
    pub(crate) alone: fn(Invocation<'_>) -> Vec<String>,
    pub(crate) judge: Judge,
    /// Its own fix for one rule on some files, when it has one.
    pub(crate) fix: Option<fn(&str, Invocation<'_>) -> Vec<String>>,
}

impl PartialEq for BuiltIn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for BuiltIn {}

impl BuiltIn {
    /// Whether the tool can fix hits of its own.
    pub fn fixes(&self) -> bool {
        self.fix.is_some()
    }
}

/// The built-in analyzer called `name`.
pub fn built_in(name: &str) -> Option<&'static BuiltIn> {
    BUILT_IN.iter().find(|b| b.name == name)
}

/// ruff: pyflakes (`F`), bugbear (`B`), the bandit-derived security rules (`S`), pylint's errors
/// and warnings (`PLE`, `PLW`), syntax errors (`E9`) and a file opened outside `with`
/// (`SIM115`, below the threshold: a model weighs it, as a `try`/`finally` that closes it is
/// flagged too); minus rules that flag safe or stylistic code (unused imports, star imports,
/// asserts, `subprocess` with a list, `random`).
const RUFF_SELECT: &str = "F,B,S,PLE,PLW,E9,SIM115";
const RUFF_IGNORE: &str =
    "F401,F403,F405,F541,S101,S311,S603,S607,B008,B905,PLW0602,PLW0603,PLW2901";

fn ruff_args(i: Invocation<'_>) -> Vec<String> {
    let args = strings(&[
        "check",
        "--isolated",
        "--no-cache",
        "--ignore-noqa",
        "--exit-zero",
        "--output-format",
        "sarif",
        "--select",
        RUFF_SELECT,
        "--ignore",
        RUFF_IGNORE,
    ]);
    with_files(args, i.files)
}

fn ruff_fix(rule: &str, i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "check",
        "--isolated",
        "--no-cache",
        "--fix",
        "--exit-zero",
        "--select",
    ]);
    args.push(rule.to_owned());
    with_files(args, i.files)
}

/// bugbear's rules about style or debugging comfort rather than wrong results: below the
/// threshold.
const BUGBEAR_MINOR: &[&str] = &["B007", "B009", "B010", "B019", "B027", "B028", "B904"];

fn ruff_judge(hit: &Hit) -> Option<(Weight, Category)> {
    let rule = hit.rule.as_str();
    // A resource left open: worth a model's look, not a finding on the tool's word alone.
    if rule == "SIM115" {
        return Some((Weight::Minor, Category::Reliability));
    }
    if rule.starts_with('S') && is_test_file(&hit.file) {
        return Some((Weight::Minor, Category::Security));
    }
    Some(match rule {
        // SQL from strings, eval/exec, a shell with input, unsafe deserialization.
        "S608" | "S307" | "S102" | "S602" | "S605" | "S301" | "S506" => {
            (Weight::Critical, Category::Security)
        }
        // An exception swallowed (`except: pass`, `continue`): lost errors, not an attack.
        "S110" | "S112" => (Weight::Warning, Category::Reliability),
        _ if rule.starts_with('S') => (Weight::Error, Category::Security),
        // Names that do not exist, `is` with a literal, redefinitions.
        "F821" | "F822" | "F823" | "F632" | "F811" => (Weight::Critical, Category::Logic),
        // A syntax error: ruff 0.8 and later name it `invalid-syntax`, with no code.
        "invalid-syntax" => (Weight::Error, Category::Logic),
        _ if rule.starts_with("E9") || rule.starts_with("F7") || rule.starts_with("PLE") => {
            (Weight::Error, Category::Logic)
        }
        "F841" => (Weight::Minor, Category::Maintainability),
        _ if BUGBEAR_MINOR.contains(&rule) => (Weight::Minor, Category::Maintainability),
        _ if rule.starts_with('B') || rule.starts_with('F') => (Weight::Warning, Category::Logic),
        _ if rule.starts_with("PLW") => (Weight::Minor, Category::Logic),
        _ => return None,
    })
}

/// Whether bugloop's ruff rule set counts `code` (a `# noqa` silencing only codes it does not
/// count, such as an unused import re-exported on purpose, silences nothing bugloop would say).
pub(crate) fn ruff_counts(code: &str) -> bool {
    let ignored = RUFF_IGNORE.split(',').any(|i| i == code);
    let selected = RUFF_SELECT
        .split(',')
        .any(|prefix| code.starts_with(prefix));
    let hit = Hit::of_rule(code, Level::Error, "");
    selected && !ignored && ruff_judge(&hit).is_some_and(|(weight, _)| weight != Weight::Minor)
}

fn shellcheck_args(i: Invocation<'_>) -> Vec<String> {
    with_files(
        strings(&["--norc", "--format=json1", "--severity=warning"]),
        i.files,
    )
}

/// shellcheck: by level, but SC2148 (no shebang), which it calls an error: a file of functions
/// that scripts source has none, and a missing one is no bug of the code.
fn shellcheck_judge(hit: &Hit) -> Option<(Weight, Category)> {
    match hit.rule.as_str() {
        "SC2148" => None,
        // An `rm -rf` of `$dir/*` that an empty variable turns into `/*`, of a system
        // directory: what it loses is not a wrong result but the machine's files.
        "SC2115" | "SC2114" => Some((Weight::Error, Category::DataIntegrity)),
        _ => by_level(hit),
    }
}

fn by_level(hit: &Hit) -> Option<(Weight, Category)> {
    match hit.level {
        Level::Error => Some((Weight::Error, Category::Logic)),
        Level::Warning => Some((Weight::Warning, Category::Logic)),
        Level::Note => None,
    }
}

/// hadolint: its errors and warnings, minus the ones about pinning package versions and image
/// tags, image size and layering (reproducibility and style, not bugs).
const HADOLINT_IGNORED: &[&str] = &[
    "DL3006", "DL3007", "DL3008", "DL3013", "DL3015", "DL3016", "DL3018", "DL3028", "DL3033",
    "DL3037", "DL3041", "DL3042", "DL3059",
];

fn hadolint_args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&["--no-fail", "--format", "sarif", "--config"]);
    args.push(format!("{}/hadolint.yaml", i.config_dir));
    with_files(args, i.files)
}

fn hadolint_judge(hit: &Hit) -> Option<(Weight, Category)> {
    if HADOLINT_IGNORED.contains(&hit.rule.as_str()) {
        return None;
    }
    // Shell form of CMD and ENTRYPOINT (signals reach the shell, not the program): worth a
    // look, and hadolint says the same of a shell-form HEALTHCHECK, which is how one is written.
    if hit.rule == "DL3025" {
        return Some((Weight::Minor, Category::Reliability));
    }
    match hit.level {
        Level::Error => Some((Weight::Error, Category::Reliability)),
        Level::Warning => Some((Weight::Warning, Category::Reliability)),
        Level::Note => None,
    }
}

/// actionlint: every check but the shell and Python ones (shellcheck runs on its own), with
/// bugloop's empty configuration instead of the repository's `.github/actionlint.yaml`.
fn actionlint_args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "-format",
        "{{json .}}",
        "-no-color",
        "-shellcheck=",
        "-pyflakes=",
        "-config-file",
    ]);
    args.push(format!("{}/actionlint.yaml", i.config_dir));
    with_files(args, i.files)
}

fn actionlint_alone(i: Invocation<'_>) -> Vec<String> {
    with_files(
        strings(&[
            "-format",
            "{{json .}}",
            "-no-color",
            "-shellcheck=",
            "-pyflakes=",
        ]),
        i.files,
    )
}

/// A deprecation or an unknown runner label is a chore, not a bug: below the threshold.
fn actionlint_judge(hit: &Hit) -> Option<(Weight, Category)> {
    if hit.rule == "runner-label" || hit.message.contains("deprecated") {
        return Some((Weight::Minor, Category::Maintainability));
    }
    // An untrusted expression in an inline script is an injection (zizmor's template-injection).
    let category = if matches!(hit.rule.as_str(), "credentials" | "permissions")
        || crate::overlap::untrusted_expression(&hit.message).is_some()
    {
        Category::Security
    } else {
        Category::Logic
    };
    Some((Weight::Error, category))
}

fn zizmor_args(i: Invocation<'_>) -> Vec<String> {
    let mut args = strings(&[
        "--offline",
        "--no-config",
        "--no-progress",
        "--format",
        "sarif",
    ]);
    args.extend(i.files.iter().cloned());
    args
}

fn zizmor_judge(hit: &Hit) -> Option<(Weight, Category)> {
    Some(match hit.level {
        Level::Error => (Weight::Critical, Category::Security),
        Level::Warning => (Weight::Warning, Category::Security),
        Level::Note => (Weight::Minor, Category::Security),
    })
}

const SETUP: &str = "scripts/setup installs the pinned analyzers; bugloop doctor lists them";

fn ruff_alone(i: Invocation<'_>) -> Vec<String> {
    let args = strings(&[
        "check",
        "--isolated",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "sarif",
    ]);
    with_files(args, i.files)
}

fn shellcheck_alone(i: Invocation<'_>) -> Vec<String> {
    with_files(strings(&["--norc", "--format=json1"]), i.files)
}

fn hadolint_alone(i: Invocation<'_>) -> Vec<String> {
    with_files(strings(&["--no-fail", "--format", "sarif"]), i.files)
}

fn bugloop_python_args(i: Invocation<'_>) -> Vec<String> {
    own::python_args(i.files, i.config_dir)
}

/// Every built-in analyzer, in the order they are listed.
pub static BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "ruff",
        program: "ruff",
        files: &["**/*.py", "**/*.pyi"],
        interpreters: &["python", "pypy"],
        project: None,
        rule_set: "pyflakes (F), bugbear (B), bandit's security rules (S), pylint errors and warnings (PLE, PLW), syntax errors (E9), a file opened outside `with` (SIM115, minor); not F401, F403, F405, F541, S101, S311, S603, S607, B008, B905, PLW0602, PLW0603, PLW2901",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::Sarif,
        args: ruff_args,
        alone: ruff_alone,
        judge: ruff_judge,
        fix: Some(ruff_fix),
    },
    BuiltIn {
        name: "ty",
        program: "ty",
        files: &["**/*.py", "**/*.pyi"],
        interpreters: &["python", "pypy"],
        project: None,
        rule_set: "its rules that are bugs: calls that do not fit (arguments missing, unknown, of the wrong type), attributes and imported names that do not exist, values used as what they are not, assignments and returns of the wrong type; a value that may be None used as if it were not, a coroutine never awaited, a function tested where its call was meant (warnings); nothing a missing package causes, nor undefined names (ruff's F821)",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::Sarif,
        args: crate::ty::args,
        alone: crate::ty::alone,
        judge: crate::ty::judge,
        fix: None,
    },
    BuiltIn {
        name: "shellcheck",
        program: "shellcheck",
        files: &["**/*.sh", "**/*.bash"],
        // The shells shellcheck knows; it refuses a zsh or fish script.
        interpreters: &["sh", "bash", "dash", "ksh", "mksh"],
        project: None,
        rule_set: "every check at warning or error (not info or style) but SC2148 (no shebang)",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::ShellcheckJson,
        args: shellcheck_args,
        alone: shellcheck_alone,
        judge: shellcheck_judge,
        fix: None,
    },
    BuiltIn {
        name: "actionlint",
        program: "actionlint",
        files: &[".github/workflows/*.yml", ".github/workflows/*.yaml"],
        interpreters: &[],
        project: None,
        rule_set: "every check but shellcheck's and pyflakes' (expressions and their types, action inputs, job needs, matrices, events, globs, credentials, permissions); deprecations and runner labels below the threshold",
        version_args: &["-version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::ActionlintJson,
        args: actionlint_args,
        alone: actionlint_alone,
        judge: actionlint_judge,
        fix: None,
    },
    BuiltIn {
        name: "zizmor",
        program: "zizmor",
        files: &[
            ".github/workflows/*.yml",
            ".github/workflows/*.yaml",
            "**/action.yml",
            "**/action.yaml",
        ],
        interpreters: &[],
        project: None,
        rule_set: "every offline audit (template injection, dangerous triggers, credential persistence, unpinned actions, ...)",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::Sarif,
        args: zizmor_args,
        alone: zizmor_args,
        judge: zizmor_judge,
        fix: None,
    },
    BuiltIn {
        name: "hadolint",
        program: "hadolint",
        files: &[
            "**/Dockerfile",
            "**/Dockerfile.*",
            "**/*.Dockerfile",
            "**/Containerfile",
        ],
        interpreters: &[],
        project: None,
        rule_set: "errors and warnings, with its embedded shellcheck; not the rules on pinning versions and tags, layers and image size (DL3006-8, DL3013, DL3015, DL3016, DL3018, DL3028, DL3033, DL3037, DL3041, DL3042, DL3059)",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::Sarif,
        args: hadolint_args,
        alone: hadolint_alone,
        judge: hadolint_judge,
        fix: None,
    },
    BuiltIn {
        name: "biome",
        program: "biome",
        files: &[
            "**/*.js", "**/*.jsx", "**/*.mjs", "**/*.cjs", "**/*.ts", "**/*.tsx", "**/*.mts",
            "**/*.cts",
        ],
        interpreters: &[],
        project: None,
        rule_set: "the recommended rules of the correctness, suspicious and security groups (errors and warnings), and a promise left floating or misused (noFloatingPromises, noMisusedPromises)",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::Sarif,
        args: crate::biome::biome_args,
        alone: crate::biome::biome_alone,
        judge: crate::biome::biome_judge,
        fix: Some(crate::biome::biome_fix),
    },
    BuiltIn {
        name: "tsc",
        program: "typescript/tsc",
        files: &["**/*.ts", "**/*.tsx", "**/*.mts", "**/*.cts"],
        interpreters: &[],
        project: None,
        rule_set: "TypeScript's strict type checks that are bugs: wrong types, arguments, properties and exports, undeclared names, fixed comparisons and conditions, use before assignment; possibly null or undefined values below errors; nothing a missing dependency causes",
        version_args: &["--version"],
        install: SETUP,
        unsafe_config: &[],
        format: Format::TscText,
        args: crate::typescript::args,
        alone: crate::typescript::alone,
        judge: crate::typescript::judge,
        fix: None,
    },
    BuiltIn {
        name: "clippy",
        program: "cargo",
        files: &["**/*.rs"],
        interpreters: &[],
        project: Some("Cargo.toml"),
        rule_set: "compile errors, clippy's correctness and suspicious groups, unused_must_use and the compiler's lints that are bugs (invalid_nan_comparisons, unconditional_recursion, overflowing_literals, ...)",
        version_args: &["clippy", "--version"],
        install: "it comes with the Rust toolchain: rustup component add clippy",
        unsafe_config: &[
            ".cargo/config",
            ".cargo/config.toml",
            "rust-toolchain",
            "rust-toolchain.toml",
        ],
        format: Format::CargoJson,
        args: crate::compilers::clippy_args,
        alone: crate::compilers::clippy_alone,
        judge: crate::compilers::clippy_judge,
        // No fix of clippy's: `cargo clippy --fix` compiles the crate with write access to the
        // tree, so a branch's build script could write anything into the fix's commit.
        fix: None,
    },
    BuiltIn {
        name: "go-vet",
        program: "go",
        files: &["**/*.go"],
        interpreters: &[],
        project: Some("go.mod"),
        rule_set: "every analyzer of go vet",
        version_args: &["version"],
        install: "it comes with the Go toolchain",
        unsafe_config: &["go.work"],
        format: Format::GoVetJson,
        args: crate::compilers::go_vet_args,
        alone: crate::compilers::go_vet_args,
        judge: crate::compilers::go_vet_judge,
        fix: None,
    },
    BuiltIn {
        name: "bugloop-python",
        program: own::SYSTEM_PYTHON,
        files: &["**/*.py"],
        interpreters: &["python", "pypy"],
        project: None,
        rule_set: "bugloop's own rules in the syntax tree: BLP001 index-past-end (a sequence read at len(seq), as `seq[len(seq)]` or through an index that `range(..., len(seq) + 1)` runs to)",
        version_args: &["--version"],
        install: "the system's Python 3 (apt-get install python3)",
        unsafe_config: &[],
        format: Format::Sarif,
        args: bugloop_python_args,
        alone: bugloop_python_args,
        judge: own::python_judge,
        fix: None,
    },
];

/// bugloop's configuration files for the tools that read one (written to a directory the
/// sandbox shows read-only): name and content.
pub(crate) fn config_files() -> Vec<(&'static str, String)> {
    vec![
        ("actionlint.yaml", "{}\n".to_owned()),
        (
            "hadolint.yaml",
            format!("ignored: [{}]\n", HADOLINT_IGNORED.join(", ")),
        ),
        (
            "biome.json",
            concat!(
                "{\n  \"linter\": { \"enabled\": true, \"rules\": { \"preset\": \"recommended\",\n",
                "    \"nursery\": { \"noFloatingPromises\": \"warn\", \"noMisusedPromises\": \"warn\" } } },\n",
                "  \"formatter\": { \"enabled\": false },\n  \"assist\": { \"enabled\": false },\n",
                "  \"vcs\": { \"enabled\": false },\n  \"files\": { \"ignoreUnknown\": true }\n}\n"
            )
            .to_owned(),
        ),
        ("ty.toml", crate::ty::CONFIG.to_owned()),
        (
            crate::typescript::GLOBALS_FILE,
            crate::typescript::GLOBALS.to_owned(),
        ),
        (own::PYTHON_RULES_FILE, own::PYTHON_RULES.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::biome::{biome_args, biome_judge};
    use crate::compilers::clippy_judge;

    fn hit(rule: &str, level: Level) -> Hit {
        Hit::of_rule(rule, level, "")
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in BUILT_IN.iter().enumerate() {
            assert!(
                BUILT_IN[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
    }

    #[test]
    fn rule_sets_weigh_bugs_and_leave_style_out() {
        assert_eq!(
            ruff_judge(&hit("S608", Level::Error)),
            Some((Weight::Critical, Category::Security))
        );
        assert_eq!(
            ruff_judge(&hit("F821", Level::Error)).map(|j| j.0),
            Some(Weight::Critical)
        );
        assert_eq!(ruff_judge(&hit("E501", Level::Error)), None);
        assert_eq!(
            ruff_judge(&hit("B028", Level::Error)).map(|j| j.0),
            Some(Weight::Minor)
        );
        let mut in_a_test = hit("S301", Level::Error);
        in_a_test.file = "tests/test_requests.py".into();
        assert_eq!(ruff_judge(&in_a_test).map(|j| j.0), Some(Weight::Minor));
        assert!(ruff_counts("S608") && ruff_counts("F821"));
        assert!(!ruff_counts("F401") && !ruff_counts("E501") && !ruff_counts("B028"));
        assert_eq!(hadolint_judge(&hit("DL3008", Level::Warning)), None);
        assert_eq!(
            hadolint_judge(&hit("DL4006", Level::Warning)).map(|j| j.0),
            Some(Weight::Warning)
        );
        assert_eq!(
            clippy_judge(&hit("E0308", Level::Error)).map(|j| j.0),
            Some(Weight::Critical)
        );
        assert_eq!(clippy_judge(&hit("dead_code", Level::Warning)), None);
        // The compiler's lints that are bugs count; its style lints do not.
        for bug in ["invalid_nan_comparisons", "unconditional_recursion"] {
            assert_eq!(
                clippy_judge(&hit(bug, Level::Warning)),
                Some((Weight::Warning, Category::Logic)),
                "{bug}"
            );
        }
        assert_eq!(clippy_judge(&hit("non_snake_case", Level::Warning)), None);
        assert_eq!(
            biome_judge(&hit("lint/security/noGlobalEval", Level::Error)).map(|j| j.1),
            Some(Category::Security)
        );
        assert_eq!(by_level(&hit("SC2086", Level::Note)), None);
        // Weighed by what they cost, not the tool's level.
        assert_eq!(
            biome_judge(&hit("lint/security/noGlobalEval", Level::Error)).map(|j| j.0),
            Some(Weight::Critical)
        );
        // Tidiness below the threshold; a suppression is bugloop's own to say.
        let minor = Some(Weight::Minor);
        let any = hit("lint/suspicious/noExplicitAny", Level::Error);
        assert_eq!(biome_judge(&any).map(|j| j.0), minor);
        assert_eq!(
            biome_judge(&hit("lint/suspicious/noTsIgnore", Level::Error)),
            None
        );
        let mut returns = hit("lint/suspicious/useIterableCallbackReturn", Level::Error);
        returns.message = "This callback passed to forEach() should not return a value.".into();
        assert_eq!(biome_judge(&returns).map(|j| j.0), minor);
        returns.message = "This callback passed to map() should always return a value.".into();
        assert_eq!(biome_judge(&returns).map(|j| j.0), Some(Weight::Error));
        let mut shadow = hit("lint/suspicious/noShadowRestrictedNames", Level::Error);
        shadow.message = "Do not shadow the global \"escape\" property.".into();
        assert_eq!(biome_judge(&shadow).map(|j| j.0), minor);
        shadow.message = "Do not shadow the global \"undefined\" property.".into();
        assert_eq!(biome_judge(&shadow).map(|j| j.0), Some(Weight::Error));
        assert_eq!(
            shellcheck_judge(&hit("SC2115", Level::Warning)),
            Some((Weight::Error, Category::DataIntegrity))
        );
        assert_eq!(
            ruff_judge(&hit("S110", Level::Error)),
            Some((Weight::Warning, Category::Reliability))
        );
        // Not a bandit rule for starting with S; below the threshold, for a model to weigh,
        // and a `# noqa` of it silences nothing bugloop would publish.
        assert_eq!(
            ruff_judge(&hit("SIM115", Level::Error)),
            Some((Weight::Minor, Category::Reliability))
        );
        assert!(!ruff_counts("SIM115"));
        assert_eq!(
            hadolint_judge(&hit("DL3025", Level::Warning)).map(|j| j.0),
            Some(Weight::Minor)
        );
    }

    #[test]
    fn the_repositorys_configuration_is_never_read() {
        let files = vec!["a".to_owned()];
        let i = Invocation {
            files: &files,
            config_dir: "/cfg",
            workspace: std::path::Path::new("/w"),
            edited: &[],
        };
        assert!(ruff_args(i).contains(&"--isolated".to_owned()));
        assert!(shellcheck_args(i).contains(&"--norc".to_owned()));
        assert!(zizmor_args(i).contains(&"--no-config".to_owned()));
        assert!(hadolint_args(i).contains(&"/cfg/hadolint.yaml".to_owned()));
        // biome's is bugloop's, written at the root of the copy it runs in (the workspace
        // it is given), where the branch's own is not copied.
        assert!(biome_args(i).contains(&"--config-path=/w".to_owned()));
        assert_eq!(biome_judge(&hit("lint/style/useConst", Level::Error)), None);
    }
}
