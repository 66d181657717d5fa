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

/// Module names a Python test run may import: every module of the standard library (Python
/// 3.11's `sys.stdlib_module_names`, with those 3.12 and 3.13 added), and the test runners' own.
/// A file or package of the repository with one of these names, at a place on `sys.path` (the
/// top, or `src/`), is loaded instead: an attacker's review exited 0 from a `bz2.py`, which
/// `unittest` imports through `shutil`, when the list named only the usual ones.
const SHADOWED_MODULES: &str = "\
    __future__ _abc _aix_support _android_support _apple_support _ast _asyncio _bisect _blake2 \
    _bootsubprocess _bz2 _codecs _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr \
    _codecs_tw _collections _collections_abc _colorize _compat_pickle _compression _contextvars \
    _crypt _csv _ctypes _curses _curses_panel _datetime _dbm _decimal _elementtree \
    _frozen_importlib _frozen_importlib_external _functools _gdbm _hashlib _heapq _imp \
    _interpchannels _interpqueues _interpreters _io _ios_support _json _locale _lsprof _lzma \
    _markupbase _md5 _msi _multibytecodec _multiprocessing _opcode _opcode_metadata _operator \
    _osx_support _overlapped _pickle _posixshmem _posixsubprocess _py_abc _pydatetime \
    _pydecimal _pyio _pylong _pyrepl _pytest _queue _random _scproxy _sha1 _sha256 _sha3 \
    _sha512 _signal _sitebuiltins _socket _sqlite3 _sre _ssl _stat _statistics _string \
    _strptime _struct _symtable _sysconfig _thread _threading_local _tkinter _tokenize \
    _tracemalloc _typing _uuid _warnings _weakref _weakrefset _winapi _wmi _zoneinfo abc aifc \
    antigravity argparse array ast asynchat asyncio asyncore atexit audioop base64 bdb binascii \
    bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop \
    collections colorsys compileall concurrent configparser contextlib contextvars copy copyreg \
    crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils doctest \
    email encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions \
    ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib heapq \
    hmac html http hypothesis idlelib imaplib imghdr imp importlib inspect io ipaddress \
    itertools json keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal math \
    mimetypes mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nose nose2 nt \
    ntpath nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle \
    pickletools pipes pkgutil platform plistlib pluggy poplib posix posixpath pprint profile \
    pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat pytest queue quopri random re \
    readline reprlib resource rlcompleter runpy sched secrets select selectors shelve shlex \
    shutil signal site sitecustomize smtpd smtplib sndhdr socket socketserver spwd sqlite3 \
    sre_compile sre_constants sre_parse ssl stat statistics string stringprep struct subprocess \
    sunau symtable sys sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap \
    this threading time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty \
    turtle turtledemo types typing unicodedata unittest urllib usercustomize uu uuid venv \
    warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp zipfile \
    zipimport zlib zoneinfo";

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
    // Bytecode Python loads in place of a source it may never compare it with (an unchecked hash
    // `.pyc`): an attacker's review passed a proof's test with one for the test's name.
    if lower.ends_with(".pyc")
        || lower.ends_with(".pyo")
        || path.split('/').any(|p| p == "__pycache__")
    {
        return Some(format!(
            "`{path}` is compiled Python, which a test run may load in place of its source"
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
    // A package, or a module Python imports: source, bytecode or a compiled extension
    // (`bz2.py`, `bz2.pyc`, `bz2.cpython-311-x86_64-linux-gnu.so`).
    let module = if within.contains('/') {
        first
    } else {
        let importable = [".py", ".pyc", ".pyw", ".so", ".pyd"]
            .iter()
            .any(|ending| first.ends_with(ending));
        importable.then(|| first.split('.').next())??
    };
    SHADOWED_MODULES.split_whitespace().find(|m| *m == module)
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
            // Modules `unittest` imports on its way (an attacker's review exited 0 from
            // `bz2.py`), compiled or not.
            "bz2.py",
            "lzma/__init__.py",
            "_compression.py",
            "src/bz2.pyc",
            "bz2.cpython-311-x86_64-linux-gnu.so",
            // Bytecode loaded in place of the test or the code it tests.
            "__pycache__/test_proof_median.cpython-311.pyc",
            "app/__pycache__/stats.cpython-312.pyc",
            "stats.pyc",
        ] {
            assert!(test_setup_reason(path).is_some(), "{path}");
        }
        for path in [
            "app/stats.py",
            "tests/test_stats.py",
            "app/unittest_helpers.py",
            "app/json/x.py",
            "stats.py",
            "bz2.txt",
        ] {
            assert_eq!(test_setup_reason(path), None, "{path}");
        }
    }
}
