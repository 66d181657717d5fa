//! Which files are tests, and which files a test run loads besides the test (its setup): a
//! solve's reproduction test is the test files its solution adds or changes, and a change that
//! touches a test's setup can make any test pass, so a passing proof on it proves nothing.

/// Whether `path` (relative, `/`-separated) is a test by the usual conventions: under `tests/`,
/// `test/`, `__tests__/` or `src/test/`; `test_*.py`, `*_test.py`, `*_test.go`, `*.test.js`,
/// `*.spec.ts` and their kin, `*Test.java`, `*Tests.cs`, `*_spec.rb`.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_test_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|part| matches!(part, "tests" | "test" | "__tests__" | "spec" | "testing"));
    let stem = name.split('.').next().unwrap_or(name);
    in_test_dir
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("_spec.rb")
        || name.contains(".test.")
        || name.contains(".spec.")
        || ((stem.len() > 5 && (stem.ends_with("Test") || stem.ends_with("Tests")))
            && (name.ends_with(".java") || name.ends_with(".kt") || name.ends_with(".cs")))
}

/// Module names a Python test run imports from the standard library or its runner: a file or
/// package of the repository with one of these names, at a place on `sys.path` (the top, or
/// `src/`), is loaded instead.
const SHADOWED_MODULES: &[&str] = &[
    "unittest",
    "pytest",
    "_pytest",
    "pluggy",
    "doctest",
    "nose",
    "nose2",
    "hypothesis",
    "os",
    "sys",
    "io",
    "re",
    "json",
    "importlib",
    "builtins",
    "site",
    "types",
    "typing",
    "collections",
    "functools",
    "itertools",
    "inspect",
    "traceback",
    "warnings",
    "logging",
    "pathlib",
    "shutil",
    "subprocess",
    "tempfile",
    "time",
    "random",
    "math",
    "string",
    "copy",
    "abc",
    "enum",
    "contextlib",
    "dataclasses",
    "signal",
    "threading",
    "socket",
    "argparse",
    "encodings",
    "codecs",
    "locale",
    "operator",
    "weakref",
    "gc",
    "atexit",
    "textwrap",
    "difflib",
    "pprint",
    "fnmatch",
    "glob",
    "stat",
    "posixpath",
    "genericpath",
    "linecache",
    "tokenize",
    "token",
    "heapq",
    "gettext",
    "ast",
    "dis",
    "opcode",
    "keyword",
    "reprlib",
    "numbers",
    "decimal",
    "datetime",
    "bisect",
    "struct",
    "errno",
    "platform",
    "sysconfig",
    "runpy",
    "pkgutil",
    "queue",
    "selectors",
    "shlex",
    "pdb",
    "cmd",
    "code",
    "codeop",
    "mock",
    "coverage",
    "pytest_cov",
    "xdist",
];

/// Files a test run reads as configuration or runs as code besides the tests.
const SETUP_FILES: &[&str] = &[
    "conftest.py",
    "sitecustomize.py",
    "usercustomize.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "setup.py",
    "noxfile.py",
    "package.json",
    ".mocharc.js",
    ".mocharc.cjs",
    ".mocharc.json",
    ".mocharc.yml",
    ".babelrc",
    "babel.config.js",
    "tsconfig.json",
    ".npmrc",
    ".pytest.ini",
    "pytest.toml",
    ".python-version",
    "babel.config.json",
    "babel.config.cjs",
    "babel.config.mjs",
    ".babelrc.js",
    ".babelrc.json",
    ".babelrc.cjs",
    ".babelrc.mjs",
    ".swcrc",
    "jsconfig.json",
    ".mocharc.yaml",
    ".mocharc.jsonc",
    ".mocharc.mjs",
    "build.rs",
    "Cargo.toml",
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain",
    "rust-toolchain.toml",
    "go.mod",
    "go.work",
    "Makefile",
];

/// Why a change to `path` can change what a test run does besides the tests themselves: a
/// test runner's configuration, code every run loads (`conftest.py`, `sitecustomize.py`, `.pth`
/// files, `build.rs`), or a module that shadows a standard or test-runner module (`unittest/`,
/// `pytest.py`). `None` for anything else.
pub fn test_setup_reason(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    if SETUP_FILES.contains(&name) || SETUP_FILES.contains(&path) {
        return Some(format!(
            "`{path}` configures or runs code in every test run"
        ));
    }
    if lower.ends_with(".pth") {
        return Some(format!(
            "`{path}` is a `.pth` file, which Python runs at start-up"
        ));
    }
    if [
        "jest.config.",
        "jest.setup.",
        "vitest.config.",
        "vite.config.",
        "karma.conf.",
        "playwright.config.",
        "setuptests.",
    ]
    .iter()
    .any(|prefix| lower.starts_with(prefix))
        || path.starts_with("node_modules/")
        || path.contains("/node_modules/")
        || path.starts_with("vendor/")
    {
        return Some(format!(
            "`{path}` configures or is loaded by the test runner"
        ));
    }
    shadowed_module(path).map(|module| {
        format!("`{path}` shadows the module `{module}` that tests and their runner import")
    })
}

/// The standard or runner module `path` would be imported as, if it shadows one: a `.py` file
/// or a package directory at the top of the repository or of `src/`.
fn shadowed_module(path: &str) -> Option<&'static str> {
    let within = path.strip_prefix("src/").unwrap_or(path);
    let first = within.split('/').next().unwrap_or(within);
    let module = if within.contains('/') {
        first
    } else {
        first.strip_suffix(".py")?
    };
    SHADOWED_MODULES.iter().copied().find(|m| *m == module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_by_their_conventions() {
        for path in [
            "tests/test_stats.py",
            "test_stats.py",
            "app/stats_test.py",
            "pkg/stats_test.go",
            "web/cart.test.js",
            "web/__tests__/cart.js",
            "src/cart.spec.ts",
            "src/test/java/com/acme/CartTest.java",
            "spec/cart_spec.rb",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "stats.py",
            "app/testimony.py",
            "tests",
            "contest.py",
            "src/Test.java",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
    }

    #[test]
    fn what_a_test_run_loads_besides_the_tests() {
        for path in [
            "unittest/__init__.py",
            "unittest.py",
            "src/pytest.py",
            "json/__init__.py",
            "conftest.py",
            "tests/conftest.py",
            "sitecustomize.py",
            "lib/evil.pth",
            "pyproject.toml",
            "package.json",
            "jest.config.js",
            "build.rs",
            "node_modules/left-pad/index.js",
            "heapq.py",
            ".pytest.ini",
            "rust-toolchain.toml",
            "src/setupTests.js",
            "vendor/github.com/x/y.go",
        ] {
            assert!(test_setup_reason(path).is_some(), "{path}");
        }
        for path in [
            "app/stats.py",
            "tests/test_stats.py",
            "app/unittest_helpers.py",
            "app/json/x.py",
        ] {
            assert_eq!(test_setup_reason(path), None, "{path}");
        }
    }
}
