//! The structured outputs of tools that write no SARIF: shellcheck's `json1`, cargo's JSON
//! messages (clippy) and `go vet -json`. Each is read with serde into [`Hit`]s; nothing is
//! parsed from text meant for people but the Go compiler's errors, which go vet writes only as
//! `file:line:column: message` lines (the form editors read).

use std::path::Path;

use serde::Deserialize;

use crate::hit::{Hit, Level};
use crate::sarif::relative_path;

/// How a tool's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SARIF 2.1.0 on standard output.
    Sarif,
    /// `shellcheck -f json1`.
    ShellcheckJson,
    /// cargo's `--message-format=json` lines.
    CargoJson,
    /// `go vet -json` (on standard error, after `# package` lines).
    GoVetJson,
    /// actionlint's `-format '{{json .}}'`.
    ActionlintJson,
    /// tsc's `--pretty false` lines.
    TscText,
}

impl Format {
    /// The hits in a run's output (`stdout`, `stderr`) on the files it was `given`; an error says
    /// why the output is not what the tool writes.
    pub(crate) fn read(
        self,
        stdout: &[u8],
        stderr: &[u8],
        root: &Path,
        given: &[String],
    ) -> Result<Vec<Hit>, String> {
        match self {
            Format::Sarif => crate::sarif::read(stdout, root),
            Format::ShellcheckJson => shellcheck(stdout, root),
            Format::CargoJson => cargo(stdout, root),
            Format::GoVetJson => go_vet(stderr, root),
            Format::ActionlintJson => actionlint(stdout, root),
            Format::TscText => crate::typescript::read(stdout, root, given),
        }
    }
}

#[derive(Debug, Deserialize)]
struct ShellcheckLog {
    comments: Vec<ShellcheckComment>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShellcheckComment {
    file: String,
    line: u32,
    end_line: Option<u32>,
    level: String,
    code: u32,
    message: String,
}

fn shellcheck(stdout: &[u8], root: &Path) -> Result<Vec<Hit>, String> {
    let log: ShellcheckLog = serde_json::from_slice(stdout)
        .map_err(|e| format!("not shellcheck's json1 output: {e}"))?;
    Ok(log
        .comments
        .into_iter()
        .filter_map(|c| {
            Some(Hit {
                rule: format!("SC{}", c.code),
                level: match c.level.as_str() {
                    "error" => Level::Error,
                    "warning" => Level::Warning,
                    _ => Level::Note,
                },
                url: Some(format!("https://www.shellcheck.net/wiki/SC{}", c.code)),
                file: relative_path(&c.file, root)?,
                line: c.line,
                end_line: c.end_line,
                message: c.message,
                security: false,
                why: None,
            })
        })
        .collect())
}

#[derive(Debug, Deserialize)]
struct CargoMessage {
    reason: String,
    #[serde(default)]
    message: Option<Diagnostic>,
    /// `build-finished`: whether the build succeeded.
    #[serde(default)]
    success: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Diagnostic {
    message: String,
    level: String,
    #[serde(default)]
    code: Option<DiagnosticCode>,
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Debug, Deserialize)]
struct DiagnosticCode {
    code: String,
}

#[derive(Debug, Deserialize)]
struct Span {
    file_name: String,
    line_start: u32,
    line_end: u32,
    is_primary: bool,
}

/// cargo's JSON lines: clippy's lints (`clippy::name`) and the compiler's errors (`E0308`);
/// other lines (artifacts, build scripts) are skipped, and a line that is not JSON ends the read
/// with an error only when nothing was read.
fn cargo(stdout: &[u8], root: &Path) -> Result<Vec<Hit>, String> {
    let text = String::from_utf8_lossy(stdout);
    let mut hits = Vec::new();
    let mut messages = 0;
    let mut failed = false;
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let Ok(message) = serde_json::from_str::<CargoMessage>(line) else {
            continue;
        };
        messages += 1;
        failed |= message.reason == "build-finished" && message.success == Some(false);
        let Some(diagnostic) = message
            .message
            .filter(|_| message.reason == "compiler-message")
        else {
            continue;
        };
        if let Some(hit) = cargo_hit(diagnostic, root) {
            hits.push(hit);
        }
    }
    if messages == 0 {
        return Err("cargo wrote no JSON message".to_owned());
    }
    // A build that failed without a compile error of the crate's (a build script, a missing
    // dependency) checked nothing: it did not run.
    if failed && !hits.iter().any(|h| h.level == Level::Error) {
        return Err("the build failed before clippy could check the crate".to_owned());
    }
    Ok(hits)
}

/// A lint or error code as rustc and clippy write them (`clippy::eq_op`, `E0308`,
/// `unused_must_use`): a proc macro can print any diagnostic, and its code is shown.
fn plausible_code(code: &str) -> bool {
    let name = code.strip_prefix("clippy::").unwrap_or(code);
    !name.is_empty()
        && name.len() <= 80
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        || (code.len() == 5
            && code.starts_with('E')
            && code[1..].chars().all(|c| c.is_ascii_digit()))
}

fn cargo_hit(diagnostic: Diagnostic, root: &Path) -> Option<Hit> {
    let code = diagnostic.code?.code;
    if !plausible_code(&code) {
        return None;
    }
    let span = diagnostic.spans.iter().find(|s| s.is_primary)?;
    let level = match diagnostic.level.as_str() {
        "error" => Level::Error,
        "warning" => Level::Warning,
        _ => return None,
    };
    let url = match code.strip_prefix("clippy::") {
        Some(lint) => format!("https://rust-lang.github.io/rust-clippy/master/index.html#{lint}"),
        None if code.starts_with('E') => {
            format!("https://doc.rust-lang.org/error_codes/{code}.html")
        }
        // A compiler lint: its entry in the listing of its default level.
        None => format!(
            "https://doc.rust-lang.org/rustc/lints/listing/{}-by-default.html#{}",
            if level == Level::Error {
                "deny"
            } else {
                "warn"
            },
            code.replace('_', "-")
        ),
    };
    Some(Hit {
        file: relative_path(&span.file_name, root)?,
        line: span.line_start,
        end_line: Some(span.line_end),
        rule: code,
        level,
        message: diagnostic.message,
        url: Some(url),
        security: false,
        why: None,
    })
}

#[derive(Debug, Deserialize)]
struct ActionlintError {
    message: String,
    filepath: String,
    line: u32,
    kind: String,
}

fn actionlint(stdout: &[u8], root: &Path) -> Result<Vec<Hit>, String> {
    let errors: Vec<ActionlintError> = serde_json::from_slice(stdout).map_err(|e| {
        format!(
            "not actionlint's JSON ({:?} error at line {}, column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })?;
    Ok(errors
        .into_iter()
        .filter_map(|e| {
            Some(Hit {
                file: relative_path(&e.filepath, root)?,
                line: e.line,
                end_line: None,
                url: Some(
                    "https://github.com/rhysd/actionlint/blob/main/docs/checks.md".to_owned(),
                ),
                level: Level::Error,
                message: e.message,
                rule: e.kind,
                security: false,
                why: None,
            })
        })
        .collect())
}

#[derive(Debug, Deserialize)]
struct GoVetHit {
    posn: String,
    message: String,
}

/// `go vet -json`: per package an object of analyzer -> hits (or an error), after a `# package`
/// line, on standard error; and where a package does not compile, the compiler's errors instead
/// (see [`compile_errors`]).
fn go_vet(stderr: &[u8], root: &Path) -> Result<Vec<Hit>, String> {
    let text = String::from_utf8_lossy(stderr);
    let (mut hits, json) = compile_errors(&text, root);
    for value in serde_json::Deserializer::from_str(&json).into_iter::<serde_json::Value>() {
        let value = value.map_err(|e| format!("not go vet's JSON output: {e}"))?;
        let Some(packages) = value.as_object() else {
            continue;
        };
        for analyzers in packages.values().filter_map(|v| v.as_object()) {
            for (analyzer, found) in analyzers {
                let Ok(found) = serde_json::from_value::<Vec<GoVetHit>>(found.clone()) else {
                    continue;
                };
                hits.extend(
                    found
                        .into_iter()
                        .filter_map(|f| go_vet_hit(analyzer, f, root)),
                );
            }
        }
    }
    Ok(hits)
}

/// The rule of a Go package that does not compile (a type or syntax error): go vet cannot vet
/// it, and says why.
pub(crate) const GO_COMPILE_RULE: &str = "compile";

/// The compiler's errors in go vet's output, as hits (`pkg/a.go:7:29: not enough arguments in
/// call to pricing.Total`, from the package's own compilation or, prefixed `vet: `, from vet's
/// type check of a package that imports one the change broke, its `have`/`want` lines indented
/// below it), and the rest of the output without them or the `# package` lines. A line that
/// names no file of the tree (outside it, or none there: a `//line` directive's, or a name
/// holding `: `) is left in the rest, which then cannot be read as JSON: the run is said not to
/// have checked its files, never taken as clean.
fn compile_errors(text: &str, root: &Path) -> (Vec<Hit>, String) {
    let mut hits: Vec<Hit> = Vec::new();
    let mut rest = String::new();
    let mut continues = false;
    for line in text.lines() {
        if continues && line.starts_with('\t') {
            if let Some(hit) = hits.last_mut() {
                hit.message.push_str("; ");
                hit.message.push_str(line.trim());
            }
            continue;
        }
        continues = false;
        if line.starts_with('#') {
            continue;
        }
        let error = line.strip_prefix("vet: ").unwrap_or(line);
        match compile_error(error, root) {
            Some(hit) => {
                hits.push(hit);
                continues = true;
            }
            None => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    // The compiler's last word on a file with many errors is not one of them.
    hits.retain(|hit| hit.message != "too many errors");
    (hits, rest)
}

fn compile_error(line: &str, root: &Path) -> Option<Hit> {
    // `file:line:column: message`. A file name may hold `: ` too, so each place the line could
    // split is tried: one that names a file of the tree is the error's; two are a name made to
    // look like another file's place, and the line is not read.
    let mut read = line
        .match_indices(": ")
        .filter_map(|(at, _)| place(&line[..at], root).map(|place| (place, &line[at + 2..])));
    let ((file, number), message) = read.next()?;
    if read.next().is_some() {
        return None;
    }
    Some(Hit::at(
        GO_COMPILE_RULE,
        Level::Error,
        (&file, number),
        message.trim().to_owned(),
    ))
}

/// `file:line:column` naming a Go file of the tree. A place that is no file of the tree (a
/// `//line` directive can name any) is not one: the output cannot be read, and the change's
/// files are said not checked.
fn place(position: &str, root: &Path) -> Option<(String, u32)> {
    let mut parts = position.rsplitn(3, ':');
    let _column: u32 = parts.next()?.parse().ok()?;
    let line: u32 = parts.next()?.parse().ok()?;
    let file = parts.next().filter(|file| file.ends_with(".go"))?;
    let file = relative_path(file, root)?;
    crate::tree::regular_file(root, &file)?;
    Some((file, line))
}

fn go_vet_hit(analyzer: &str, found: GoVetHit, root: &Path) -> Option<Hit> {
    // `file:line:column`; a file name may itself hold a colon, so split from the end.
    let mut parts = found.posn.rsplitn(3, ':');
    let _column = parts.next()?;
    let line: u32 = parts.next()?.parse().ok()?;
    let file = relative_path(parts.next()?, root)?;
    Some(Hit {
        rule: analyzer.to_owned(),
        level: Level::Warning,
        message: found.message,
        file,
        line,
        end_line: None,
        url: Some(format!(
            "https://pkg.go.dev/golang.org/x/tools/go/analysis/passes/{analyzer}"
        )),
        security: false,
        why: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shellcheck_comments_are_hits_with_their_wiki_page() {
        let out = br#"{"comments":[{"file":"a.sh","line":2,"endLine":2,"column":8,"endColumn":14,"level":"warning","code":2115,"message":"Use \"${var:?}\"","fix":null}]}"#;
        let hits = Format::ShellcheckJson
            .read(out, b"", Path::new("/w"), &[])
            .unwrap();
        assert_eq!(hits[0].rule, "SC2115");
        assert_eq!(
            hits[0].url.as_deref(),
            Some("https://www.shellcheck.net/wiki/SC2115")
        );
        assert_eq!(hits[0].level, Level::Warning);
    }

    #[test]
    fn cargo_lines_give_clippy_lints_and_compiler_errors() {
        let out = concat!(
            "{\"reason\":\"compiler-artifact\"}\n",
            "{\"reason\":\"compiler-message\",\"message\":{\"message\":\"this comparison is always false\",\"level\":\"error\",\"code\":{\"code\":\"clippy::absurd_extreme_comparisons\"},\"spans\":[{\"file_name\":\"src/lib.rs\",\"line_start\":4,\"line_end\":4,\"is_primary\":true}]}}\n",
            "{\"reason\":\"compiler-message\",\"message\":{\"message\":\"mismatched types\",\"level\":\"error\",\"code\":{\"code\":\"E0308\"},\"spans\":[{\"file_name\":\"/w/src/main.rs\",\"line_start\":9,\"line_end\":9,\"is_primary\":true}]}}\n",
            "{\"reason\":\"compiler-message\",\"message\":{\"message\":\"1 warning emitted\",\"level\":\"warning\",\"code\":null,\"spans\":[]}}\n",
            "   Compiling x v0.1.0\n"
        );
        let hits = Format::CargoJson
            .read(out.as_bytes(), b"", Path::new("/w"), &[])
            .unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(hits[0].rule, "clippy::absurd_extreme_comparisons");
        assert_eq!(hits[1].file, "src/main.rs");
        assert!(hits[1].url.as_deref().unwrap().ends_with("E0308.html"));
        assert!(
            Format::CargoJson
                .read(b"error: could not compile", b"", Path::new("/w"), &[])
                .is_err()
        );
    }

    #[test]
    fn actionlint_errors_are_hits_by_kind() {
        let out = br#"[{"message":"input fetch-dept is not defined","filepath":".github/workflows/ci.yml","line":9,"column":11,"kind":"action","snippet":"x","end_column":21}]"#;
        let hits = Format::ActionlintJson
            .read(out, b"", Path::new("/w"), &[])
            .unwrap();
        assert_eq!((hits[0].rule.as_str(), hits[0].line), ("action", 9));
        assert!(
            Format::ActionlintJson
                .read(b"[]", b"", Path::new("/w"), &[])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn go_vet_json_is_read_after_its_package_lines() {
        let err = b"# example.com/m\n{\n\t\"example.com/m\": {\n\t\t\"printf\": [\n\t\t\t{\"posn\": \"/w/main.go:7:2\", \"message\": \"fmt.Printf format %d has arg s of wrong type string\"}\n\t\t]\n\t}\n}\n";
        let hits = Format::GoVetJson
            .read(b"", err, Path::new("/w"), &[])
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].file.as_str(), hits[0].line), ("main.go", 7));
        assert_eq!(hits[0].rule, "printf");
    }

    #[test]
    fn go_compile_errors_are_hits_where_vet_could_not_vet() {
        // go 1.19: the changed package's own errors, then a package it broke (vet's type check).
        let tree = crate::tree::test_tree(&[
            ("orders/orders.go", "package orders\n"),
            ("tax/tax.go", "package tax\n"),
            ("tax/tax.go:1:1: x.go", "package tax\n"),
        ]);
        let root = tree.path();
        let err = format!(
            concat!(
                "# example.com/shop/pricing\n{{}}\n",
                "# example.com/shop/orders\n",
                "vet: orders/orders.go:7:29: not enough arguments in call to pricing.Total\n",
                "\thave (int, number)\n\twant (int, int, int)\n",
                "# example.com/shop/tax\n",
                "tax/tax.go:5:17: cannot use n (variable of type int) as type string in variable declaration\n",
                "{root}/tax/tax.go:6:20: undefined: undefinedThing\n",
                "tax/tax.go:9:1: too many errors\n",
            ),
            root = root.display()
        );
        let hits = Format::GoVetJson
            .read(b"", err.as_bytes(), root, &[])
            .unwrap();
        let found: Vec<(&str, u32, &str)> = hits
            .iter()
            .map(|h| (h.file.as_str(), h.line, h.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "orders/orders.go",
                    7,
                    "not enough arguments in call to pricing.Total; have (int, number); want (int, int, int)"
                ),
                (
                    "tax/tax.go",
                    5,
                    "cannot use n (variable of type int) as type string in variable declaration"
                ),
                ("tax/tax.go", 6, "undefined: undefinedThing"),
            ]
        );
        assert!(
            hits.iter()
                .all(|h| h.rule == GO_COMPILE_RULE && h.level == Level::Error)
        );
        // A failure that names no file of the tree is not a clean run: outside it, none there
        // (a `//line` directive's), or a name holding `: ` read at its first.
        for unread in [
            "go: updates to go.mod needed\n",
            "vet: /elsewhere/x.go:1:1: undefined: y\n",
            "zz_gen.go:1:1: cannot use \"\" (untyped string constant) as int value\n",
            // A file named to look like another's place: which is meant cannot be told.
            "tax/tax.go:1:1: x.go:3:1: undefined: y\n",
        ] {
            assert!(
                Format::GoVetJson
                    .read(b"", unread.as_bytes(), root, &[])
                    .is_err(),
                "{unread}"
            );
        }
    }
}
