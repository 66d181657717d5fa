//! The TypeScript compiler as an analyzer: `tsc` (TypeScript 7, one native binary with its
//! `lib.*.d.ts` beside it) type-checks the changed files and what they import, under a
//! configuration bugloop writes (its own options, and of the project's `tsconfig.json` only its
//! strictness and `paths`, `tsconfig.rs`), with every declaration file of the tree (`*.d.ts`:
//! a project's globals and module declarations) so a name the project declares is not taken for
//! a typo.
//!
//! tsc writes no SARIF nor JSON: its `--pretty false` lines (`file(line,col): error TS2322: ...`,
//! the format editors' problem matchers read) are its machine-readable output. Only codes that
//! are bugs count, from a list; what a missing dependency causes (`Cannot find module`, a
//! global of a runtime whose types are not installed, an implicit `any`) never does, because a
//! checkout under review has no `node_modules`.

use std::path::Path;

use bugloop_domain::finding::Category;
use serde_json::{Map, Value};

use crate::hit::{Hit, Level};
use crate::invocation::{Invocation, strings};
use crate::sarif::relative_path;
use crate::weight::Weight;

/// The compiler's options: modules resolved as a bundler does (what most projects use), every
/// import of a `.ts` or `.json` file allowed, JSX kept as it is (checked against bugloop's
/// stand-in for React's types), no type packages (a checkout has none), no output written.
fn options() -> Map<String, Value> {
    let options = serde_json::json!({
        "noEmit": true,
        "skipLibCheck": true,
        "target": "esnext",
        "module": "preserve",
        "moduleResolution": "bundler",
        "allowImportingTsExtensions": true,
        "resolveJsonModule": true,
        "jsx": "preserve",
        "types": [],
    });
    match options {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The most declaration files of the tree given along with the change's files.
const MAX_DECLARATIONS: usize = 400;

/// The file of bugloop's own declarations in its configuration directory ([`GLOBALS`]).
pub(crate) const GLOBALS_FILE: &str = "tsc-globals.d.ts";

/// bugloop's stand-ins for what a checkout without `node_modules` lacks: the JSX types of React
/// (without them every `key` on a component is "not a property" of its props), and Node's own
/// modules, each of any type (without them a class that extends `EventEmitter` has no `emit`:
/// a module tsc cannot find leaves a class extending its export without members). A module of
/// the project, relative or through `paths`, is never one of these names.
pub(crate) const GLOBALS: &str = "\
// bugloop's stand-in for React's JSX types (a checkout has no node_modules).
declare namespace JSX {
  interface IntrinsicAttributes { key?: any; ref?: any }
  interface IntrinsicClassAttributes<T> { ref?: any }
  interface IntrinsicElements { [name: string]: any }
}
// Node's own modules, of any type (a checkout has no @types/node).
declare module \"node:*\";
declare module \"assert\"; declare module \"assert/strict\"; declare module \"async_hooks\";
declare module \"buffer\"; declare module \"child_process\"; declare module \"cluster\";
declare module \"crypto\"; declare module \"dgram\"; declare module \"dns\";
declare module \"dns/promises\"; declare module \"events\"; declare module \"fs\";
declare module \"fs/promises\"; declare module \"http\"; declare module \"http2\";
declare module \"https\"; declare module \"inspector\"; declare module \"module\";
declare module \"net\"; declare module \"os\"; declare module \"path\";
declare module \"path/posix\"; declare module \"path/win32\"; declare module \"perf_hooks\";
declare module \"process\"; declare module \"querystring\"; declare module \"readline\";
declare module \"readline/promises\"; declare module \"stream\"; declare module \"stream/promises\";
declare module \"stream/web\"; declare module \"string_decoder\"; declare module \"timers\";
declare module \"timers/promises\"; declare module \"tls\"; declare module \"tty\";
declare module \"url\"; declare module \"util\"; declare module \"util/types\";
declare module \"v8\"; declare module \"vm\"; declare module \"worker_threads\";
declare module \"zlib\";
";

/// The globals of runtimes and test frameworks whose types come from packages a checkout does
/// not have (`@types/node`, `@types/jest`, ...): "Cannot find name" of one of them is no bug.
const RUNTIME_GLOBALS: &[&str] = &[
    "process",
    "require",
    "module",
    "exports",
    "__dirname",
    "__filename",
    "Buffer",
    "global",
    "setImmediate",
    "clearImmediate",
    "NodeJS",
    "describe",
    "it",
    "test",
    "expect",
    "jest",
    "vi",
    "beforeAll",
    "beforeEach",
    "afterAll",
    "afterEach",
    "suite",
    "context",
    "cy",
    "Cypress",
    "$",
    "jQuery",
    "chrome",
    "browser",
    "Deno",
    "Bun",
];

/// tsc on the changed files, under a configuration bugloop writes into its own directory:
/// [`options`], the project's strictness and `paths` ([`crate::tsconfig`]) or, without a
/// project configuration bugloop reads, strict checks; and the files, with bugloop's stand-in
/// declarations and the tree's own. A configuration that cannot be written is a file tsc says
/// is not there, and the files are not checked.
pub(crate) fn args(i: Invocation<'_>) -> Vec<String> {
    let mut options = options();
    // The files of one run share their configuration ([`crate::input::batches`]); one the
    // change edits, or that refers to one it applies, is not read.
    let (nearest, applied) = i
        .files
        .first()
        .map(|file| crate::tsconfig::config_for(i.workspace, file))
        .unwrap_or_default();
    let project = match i.edited.contains(&nearest) {
        true => None,
        false => crate::tsconfig::options_of(i.workspace, &applied, i.edited),
    };
    match project {
        Some(project) => options.extend(project),
        None => {
            options.insert("strict".to_owned(), Value::Bool(true));
        }
    }
    crate::workspaces::add_package_paths(i.workspace, &mut options);
    // As the sandbox shows it (its links resolved): tsc names a file relative to the directory
    // it runs in, which is the tree's real path.
    let root = i
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| i.workspace.to_path_buf())
        .display()
        .to_string();
    let mut files: Vec<String> = i.files.iter().map(|f| format!("{root}/{f}")).collect();
    files.push(format!("{}/{GLOBALS_FILE}", i.config_dir));
    for declaration in declarations(i.workspace) {
        let named = format!("{root}/{declaration}");
        if !files.contains(&named) {
            files.push(named);
        }
    }
    let config = serde_json::json!({ "compilerOptions": options, "files": files }).to_string();
    let path = format!("{}/tsconfig-{:016x}.json", i.config_dir, digest(&config));
    let _unwritten_is_said_by_tsc = std::fs::write(&path, config);
    strings(&["--project", &path, "--pretty", "false"])
}

/// A name for a configuration's text (the runs of one review differ in their files).
fn digest(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Whether a TypeScript file declares globals (`declare global { ... }`), read up to 256 KiB.
fn declares_globals(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(256 << 10).read_to_end(&mut head))
        .is_ok_and(|_| head.windows(14).any(|w| w == b"declare global"))
}

/// tsc as a user runs it on files, with its defaults: `bench detect`'s yardstick.
pub(crate) fn alone(i: Invocation<'_>) -> Vec<String> {
    let mut args: Vec<String> = ["--ignoreConfig", "--noEmit", "--pretty", "false"]
        .map(String::from)
        .to_vec();
    args.extend(i.files.iter().map(|f| format!("./{f}")));
    args
}

/// The tree's declarations: its declaration files (`*.d.ts`), and its other files that declare
/// globals (`declare global`), outside `node_modules` and hidden directories, sorted, at most
/// [`MAX_DECLARATIONS`]; never through a link.
fn declarations(workspace: &Path) -> Vec<String> {
    let mut found: Vec<String> = crate::tree::source_files(workspace)
        .filter(|(entry, name)| {
            name.ends_with(".d.ts") || (name.ends_with(".ts") && declares_globals(entry.path()))
        })
        .map(|(_, name)| name)
        .collect();
    found.sort();
    found.truncate(MAX_DECLARATIONS);
    found
}

/// tsc's `--pretty false` lines: `file(line,col): error TSnnnn: message`, a message going on in
/// the indented lines after it. A line is read as a diagnostic of a file it was `given` when it
/// starts with that file's name (the longest that fits): a name is the branch's to choose, and
/// one holding `(3,1): error TS2322: ` would otherwise place a diagnostic of its own wherever it
/// likes. A diagnostic of another file (one they import) is passed over. An error that names no
/// file (`error TS5023: Unknown compiler option`, a `lib` file missing), or a line that is none
/// of these, means the run checked nothing.
pub(crate) fn read(stdout: &[u8], root: &Path, given: &[String]) -> Result<Vec<Hit>, String> {
    let text = String::from_utf8_lossy(stdout);
    let mut names: Vec<&str> = given.iter().map(String::as_str).collect();
    names.sort_by_key(|name| std::cmp::Reverse(name.len()));
    let mut hits: Vec<Hit> = Vec::new();
    // Whether the last diagnostic was one of the given files' (its message goes on below).
    let mut last_ours = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = hits.last_mut().filter(|_| last_ours) {
                last.message.push(' ');
                last.message.push_str(line.trim());
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("error TS") {
            return Err(format!("tsc checked nothing: error TS{}", tail(rest)));
        }
        if let Some(rest) = configuration_error(line) {
            return Err(format!("tsc checked nothing: {}", tail(rest)));
        }
        let ours = names.iter().find_map(|name| {
            let rest = line.strip_prefix(name)?.strip_prefix('(')?;
            diagnostic(rest).map(|d| (*name, d))
        });
        last_ours = ours.is_some();
        match ours {
            Some((name, (row, level, rule, message))) => {
                hits.extend(relative_path(name, root).map(|file| Hit {
                    rule,
                    level,
                    message,
                    file,
                    line: row,
                    end_line: None,
                    url: None,
                    security: false,
                    why: None,
                }));
            }
            None if of_another_file(line) => {}
            None => return Err(format!("not tsc's diagnostics: {}", tail(line))),
        }
    }
    crate::unknown_bases::without_unknown_base_members(&mut hits, root);
    to_newline_lines(&mut hits, root);
    Ok(hits)
}

/// tsc counts a lone `\r`, U+2028 and U+2029 as line ends, bugloop (as git and the diff) only
/// `\n`: a hit in a file holding one is moved to the line it is on as bugloop counts, or a
/// branch's stray `\r` would put a finding on the line below.
fn to_newline_lines(hits: &mut [Hit], root: &Path) {
    let mut files: Vec<String> = hits.iter().map(|hit| hit.file.clone()).collect();
    files.sort();
    files.dedup();
    for file in files {
        let Some(text) = crate::tree::read_at_most(root, &file, crate::copy::MAX_SCRIPT_BYTES)
        else {
            continue;
        };
        let Some(starts) = newline_line_of_tsc_lines(&String::from_utf8_lossy(&text)) else {
            continue;
        };
        for hit in hits.iter_mut().filter(|hit| hit.file == file) {
            let index = usize::try_from(hit.line.saturating_sub(1)).unwrap_or(usize::MAX);
            if let Some(line) = starts.get(index) {
                hit.line = *line;
            }
        }
    }
}

/// For each line as tsc counts them, the line it starts on as `\n` counts them; `None` where
/// the two counts are the same.
fn newline_line_of_tsc_lines(text: &str) -> Option<Vec<u32>> {
    let odd = text.contains(['\u{2028}', '\u{2029}'])
        || text
            .match_indices('\r')
            .any(|(at, _)| !text[at + 1..].starts_with('\n'));
    if !odd {
        return None;
    }
    let mut starts = vec![1u32];
    let mut newline_line = 1u32;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                newline_line += 1;
                starts.push(newline_line);
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' | '\u{2028}' | '\u{2029}' => starts.push(newline_line),
            _ => {}
        }
    }
    Some(starts)
}

fn tail(text: &str) -> String {
    text.chars().take(300).collect()
}

/// What follows a file's name and `(`: `line,col): error TSnnnn: message`.
fn diagnostic(rest: &str) -> Option<(u32, Level, String, String)> {
    let (position, rest) = rest.split_once("): ")?;
    let (row, column) = position.split_once(',')?;
    let row: u32 = row.parse().ok()?;
    column.parse::<u32>().ok()?;
    let (level, rest) = rest.split_once(" TS")?;
    let (code, message) = rest.split_once(": ")?;
    if code.is_empty() || !code.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let level = match level {
        "error" => Level::Error,
        "warning" => Level::Warning,
        "message" | "suggestion" => Level::Note,
        _ => return None,
    };
    Some((row, level, format!("TS{code}"), message.to_owned()))
}

/// An error of the configuration bugloop wrote (TS5xxx, TS6xxx: an option it refuses, a file
/// of its list not found), which tsc says at the configuration's line: nothing was checked as
/// it should have been, whatever else it says. Only of bugloop's file: a branch's
/// `/// <reference path>` to a file that is not there is its own file's diagnostic (an attack
/// test's made tsc's whole run count as nothing checked).
fn configuration_error(line: &str) -> Option<&str> {
    let at = line.find("): error TS")?;
    let file = line[..at].rsplit_once('(')?.0;
    let name = file.rsplit('/').next().unwrap_or(file);
    let ours = name
        .strip_prefix("tsconfig-")
        .and_then(|rest| rest.strip_suffix(".json"))
        .is_some_and(|digest| digest.len() == 16 && digest.chars().all(|c| c.is_ascii_hexdigit()));
    if !ours {
        return None;
    }
    let rest = &line[at + 3..];
    let code: String = rest["error TS".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let code: u32 = code.parse().ok()?;
    (5000..7000).contains(&code).then_some(rest)
}

/// A diagnostic of a file tsc was not given (one the given files import, a library's).
fn of_another_file(line: &str) -> bool {
    line.match_indices('(')
        .any(|(at, _)| at > 0 && diagnostic(&line[at + 1..]).is_some())
}

/// Null and undefined where the code does not expect them (`strictNullChecks`): a likely bug,
/// and a project without strict checks writes such code on purpose.
const POSSIBLY_NULL: &[&str] = &[
    "TS2531", "TS2532", "TS2533", "TS2722", "TS18047", "TS18048", "TS18049",
];

/// Code the compiler proves wrong: a value of the wrong type, a call with the wrong arguments, a
/// property or export that does not exist, a name nowhere declared, a comparison or condition
/// whose result is fixed, a variable read before it is assigned, a constant assigned.
const WRONG: &[&str] = &[
    "TS2300", "TS2304", "TS2305", "TS2322", "TS2339", "TS2345", "TS2349", "TS2351", "TS2353",
    "TS2355", "TS2362", "TS2363", "TS2365", "TS2367", "TS2393", "TS2416", "TS2420", "TS2448",
    "TS2454", "TS2540", "TS2551", "TS2552", "TS2554", "TS2555", "TS2588", "TS2614", "TS2724",
    "TS2739", "TS2740", "TS2741", "TS2769", "TS2774", "TS2801", "TS2839", "TS2845", "TS2872",
    "TS2873",
];

/// Worth a model's look, not a finding on the compiler's word alone: a `catch` variable used
/// as an `Error` (`unknown` under strict checks), a comma whose left side does nothing, a `??`
/// whose right side never runs.
const MINOR: &[&str] = &["TS18046", "TS2695", "TS2869"];

pub(crate) fn judge(hit: &Hit) -> Option<(Weight, Category)> {
    let rule = hit.rule.as_str();
    // A member a bundler's types would declare (`import.meta.env`): their package is not here.
    if rule == "TS2339" && hit.message.contains("type 'ImportMeta'") {
        return None;
    }
    // A module of the project's own that is not there (`./utils/helpr`): the import fails when
    // it runs, unlike a package the checkout has not installed.
    if rule == "TS2307" && missing_own_module(&hit.message) {
        return Some((Weight::Error, Category::Logic));
    }
    // A runtime's or test framework's global (also where a local name looks like it: "Did you
    // mean 'processed'?").
    if matches!(rule, "TS2304" | "TS2552")
        && unknown_name(&hit.message).is_some_and(|name| RUNTIME_GLOBALS.contains(&name))
    {
        return None;
    }
    if POSSIBLY_NULL.contains(&rule) || (WRONG.contains(&rule) && about_null(&hit.message)) {
        return Some((Weight::Warning, Category::Logic));
    }
    if WRONG.contains(&rule) {
        return Some((Weight::Error, Category::Logic));
    }
    MINOR
        .contains(&rule)
        .then_some((Weight::Minor, Category::Logic))
}

/// Whether "Cannot find module 'x'" names a relative module of code (`./utils/helpr`, not a
/// stylesheet or an image, which a bundler brings and tsc cannot read).
fn missing_own_module(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("Cannot find module '") else {
        return false;
    };
    let Some((specifier, _)) = rest.split_once('\'') else {
        return false;
    };
    let relative = specifier.starts_with("./") || specifier.starts_with("../");
    let last = specifier.rsplit('/').next().unwrap_or(specifier);
    // `./user.service` is code; `./logo.svg` is not.
    let asset = last.rsplit_once('.').is_some_and(|(_, extension)| {
        matches!(
            extension.to_ascii_lowercase().as_str(),
            "css"
                | "scss"
                | "sass"
                | "less"
                | "styl"
                | "svg"
                | "png"
                | "jpg"
                | "jpeg"
                | "gif"
                | "webp"
                | "avif"
                | "ico"
                | "bmp"
                | "html"
                | "vue"
                | "svelte"
                | "astro"
                | "md"
                | "mdx"
                | "txt"
                | "woff"
                | "woff2"
                | "ttf"
                | "otf"
                | "eot"
                | "wasm"
                | "graphql"
                | "gql"
                | "yaml"
                | "yml"
                | "csv"
                | "mp3"
                | "mp4"
                | "webm"
                | "wav"
                | "glsl"
        )
    });
    relative && !asset
}

/// The name in "Cannot find name 'x'".
fn unknown_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Cannot find name '")?;
    rest.split_once('\'').map(|(name, _)| name)
}

/// A type error only strict null checks make (`string | undefined` to `string`).
fn about_null(message: &str) -> bool {
    // The first sentence: the lines after it explain, and may name `undefined` for another reason.
    let first = message.split(". ").next().unwrap_or(message);
    first.contains("'undefined'")
        || first.contains("'null'")
        || first.contains(" | undefined'")
        || first.contains(" | null'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Vec<Hit>, String> {
        let given = ["src/a.ts", "src/b (1).ts", "src/forge.ts"].map(String::from);
        read(text.as_bytes(), Path::new("/w"), &given)
    }

    #[test]
    fn a_line_tsc_counts_after_a_lone_cr_is_the_line_bugloop_counts() {
        assert_eq!(newline_line_of_tsc_lines("a\nb\r\nc\n"), None);
        // tsc's lines: "a", "b", "c", "d", "e"; bugloop's: "a\rb", "c\u{2028}d", "e".
        let starts = newline_line_of_tsc_lines("a\rb\nc\u{2028}d\ne\n").unwrap();
        assert_eq!(starts[..5], [1, 1, 2, 2, 3]);
    }

    #[test]
    fn diagnostics_are_hits_and_a_message_goes_on_in_indented_lines() {
        let hits = read_text(concat!(
            "src/a.ts(5,10): error TS18048: 'o.note' is possibly 'undefined'.\n",
            "src/b (1).ts(9,3): error TS2322: Type 'string' is not assignable to type 'number'.\n",
            "  Details follow.\n",
            "/usr/lib/node/lib.d.ts(1,1): error TS2300: Duplicate identifier 'x'.\n",
            "src/imported.ts(2,2): error TS2322: Not a given file's.\n",
            "  Its details are not the last hit's.\n",
        ))
        .unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(
            (hits[0].rule.as_str(), hits[0].file.as_str(), hits[0].line),
            ("TS18048", "src/a.ts", 5)
        );
        assert_eq!(hits[1].file, "src/b (1).ts");
        assert!(hits[1].message.ends_with("type 'number'. Details follow."));
    }

    #[test]
    fn an_error_of_bugloops_configuration_means_nothing_was_checked() {
        let line =
            "/cfg/tsconfig-00000000000000a1.json(1,40): error TS6053: File '/w/a.ts' not found.\n";
        let error = read_text(line).unwrap_err();
        assert!(error.contains("checked nothing: error TS6053"), "{error}");
        // A branch's reference to a file that is not there is its file's own diagnostic.
        let reference = "src/a.ts(1,22): error TS6053: File '/etc/x.d.ts' not found.\n";
        assert_eq!(read_text(reference).unwrap()[0].rule, "TS6053");
    }

    #[test]
    fn a_file_name_cannot_place_a_diagnostic_of_its_own() {
        // A changed file named to look like a diagnostic of another: its real diagnostic is its
        // own, at its line, and the name's "diagnostic" is nobody's.
        let forged = "src/forge.ts(3,1): error TS2322: pwned.ts";
        let given = ["src/forge.ts".to_owned(), forged.to_owned()];
        let output = format!("{forged}(7,5): error TS2345: The real one.\n");
        let hits = read(output.as_bytes(), Path::new("/w"), &given).unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!((hits[0].file.as_str(), hits[0].line), (forged, 7));
        assert_eq!(hits[0].rule, "TS2345");
    }

    #[test]
    fn an_error_of_no_file_or_a_foreign_line_means_nothing_was_checked() {
        let error = read_text("error TS5023: Unknown compiler option '--'.\n").unwrap_err();
        assert!(error.contains("checked nothing: error TS5023"), "{error}");
        let error = read_text("panic: runtime error\n").unwrap_err();
        assert!(error.contains("not tsc's diagnostics"), "{error}");
        assert_eq!(read_text("").unwrap(), Vec::new());
    }

    fn hit(rule: &str, message: &str) -> Hit {
        Hit::of_rule(rule, Level::Error, message)
    }

    #[test]
    fn bugs_count_and_what_a_missing_dependency_causes_does_not() {
        let weight = |rule: &str, message: &str| judge(&hit(rule, message)).map(|j| j.0);
        assert_eq!(
            weight("TS2554", "Expected 2 arguments, but got 1."),
            Some(Weight::Error)
        );
        assert_eq!(
            weight("TS2801", "This condition will always return true"),
            Some(Weight::Error)
        );
        assert_eq!(
            weight("TS18048", "'o' is possibly 'undefined'."),
            Some(Weight::Warning)
        );
        assert_eq!(
            weight(
                "TS2322",
                "Type 'string | undefined' is not assignable to type 'string'."
            ),
            Some(Weight::Warning)
        );
        assert_eq!(
            weight(
                "TS2339",
                "Property 'env' does not exist on type 'ImportMeta'."
            ),
            None
        );
        let typo = "Cannot find module './utils/helpr' or its corresponding type declarations.";
        assert_eq!(weight("TS2307", typo), Some(Weight::Error));
        let style = "Cannot find module './app.module.css' or its corresponding type declarations.";
        assert_eq!(weight("TS2307", style), None);
        let service = "Cannot find module './user.servce' or its corresponding type declarations.";
        assert_eq!(weight("TS2307", service), Some(Weight::Error));
        for dependency in [
            "TS2307", "TS2580", "TS2591", "TS2582", "TS7006", "TS7016", "TS1005",
        ] {
            assert_eq!(weight(dependency, "..."), None, "{dependency}");
        }
        assert_eq!(
            weight("TS18046", "'e' is of type 'unknown'."),
            Some(Weight::Minor)
        );
        // A runtime's or test framework's global, whatever a local name looks like; a typo of
        // a name the code has is a bug.
        assert_eq!(weight("TS2304", "Cannot find name 'expect'."), None);
        let near = "Cannot find name 'process'. Did you mean 'processed'?";
        assert_eq!(weight("TS2552", near), None);
        let typo = "Cannot find name 'totl'. Did you mean 'total'?";
        assert_eq!(weight("TS2552", typo), Some(Weight::Error));
    }

    #[test]
    fn the_changed_files_and_the_trees_declarations_are_checked_under_our_options() {
        let tree = tempfile::tempdir().unwrap();
        for file in [
            "src/global.d.ts",
            "node_modules/x/index.d.ts",
            ".hidden/a.d.ts",
            "a.ts",
        ] {
            let path = tree.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let augments = "export {};\ndeclare global {\n  interface Window { app: string }\n}\n";
        std::fs::write(tree.path().join("src/window.ts"), augments).unwrap();
        let project = "{ \"compilerOptions\": { \"strict\": false, \"noCheck\": true } }";
        std::fs::write(tree.path().join("tsconfig.json"), project).unwrap();
        let config_dir = tempfile::tempdir().unwrap();
        let run = |edited: &[String]| {
            let files = vec!["-a.ts".to_owned(), "src/global.d.ts".to_owned()];
            let args = args(Invocation {
                files: &files,
                config_dir: &config_dir.path().display().to_string(),
                workspace: tree.path(),
                edited,
            });
            assert_eq!(args[0], "--project");
            let text = std::fs::read_to_string(&args[1]).unwrap();
            serde_json::from_str::<Value>(&text).unwrap()
        };
        let config = run(&[]);
        let root = tree.path().display();
        let cfg = config_dir.path().display();
        assert_eq!(
            config["files"],
            serde_json::json!([
                format!("{root}/-a.ts"),
                format!("{root}/src/global.d.ts"),
                format!("{cfg}/tsc-globals.d.ts"),
                format!("{root}/src/window.ts"),
            ])
        );
        // The project's strictness, not its other options.
        assert_eq!(config["compilerOptions"]["strict"], Value::Bool(false));
        assert_eq!(config["compilerOptions"]["noCheck"], Value::Null);
        // A change to the project's configuration: bugloop's strict checks.
        let edited = run(&["tsconfig.json".to_owned()]);
        assert_eq!(edited["compilerOptions"]["strict"], Value::Bool(true));
    }
}
