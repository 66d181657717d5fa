//! bugloop's own rule set for Python (`bugloop-python`): bugs no well-kept analyzer has a rule
//! for, found in the syntax tree by a script of ours (`rules/bugloop_python.py`) that the
//! sandbox's system `python3` runs isolated (`-I`: nothing of the repository is imported in
//! place of the standard library) and that prints SARIF. It parses the code and never runs it.
//! Written by hand because no analyzer on the registries says these with certainty (ruff,
//! pylint and bandit have no rule for an index that reaches `len(seq)`), and a rule that is not
//! certain would be noise on every change.

use bugloop_domain::finding::Category;

use crate::hit::Hit;
use crate::weight::Weight;

/// The script, written to the analyzers' configuration directory (shown read-only).
pub(crate) const PYTHON_RULES_FILE: &str = "bugloop_python.py";
pub(crate) const PYTHON_RULES: &str = include_str!("../rules/bugloop_python.py");

/// The rule of a result saying a file was not checked (it cannot be read, decoded or parsed):
/// the file is listed as not checked, never passed over as clean.
pub(crate) const NOT_CHECKED_RULE: &str = "not-checked";

/// The system's interpreter: a `python3` found on `PATH` may be pyenv's shim or a virtualenv's,
/// which the sandbox, hiding the home directory, cannot run.
pub(crate) const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// The interpreter's arguments: the script in `config_dir` (as the sandbox shows it) on `files`.
pub(crate) fn python_args(files: &[String], config_dir: &str) -> Vec<String> {
    let mut args: Vec<String> = ["-I", "-S", "-B"].map(str::to_owned).into();
    args.push(format!("{config_dir}/{PYTHON_RULES_FILE}"));
    args.push("--".to_owned());
    args.extend(files.iter().cloned());
    args
}

/// Every rule of the set is a certain bug: an index past the end always raises when reached.
pub(crate) fn python_judge(hit: &Hit) -> Option<(Weight, Category)> {
    (hit.rule == "BLP001").then_some((Weight::Error, Category::Logic))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule set run as the sandbox runs it (without the sandbox: the script only parses) on
    /// `files` in `dir`: the hits, as bugloop reads them.
    fn run_rules(dir: &std::path::Path, files: &[&str]) -> Vec<Hit> {
        let config = tempfile::tempdir().unwrap();
        std::fs::write(config.path().join(PYTHON_RULES_FILE), PYTHON_RULES).unwrap();
        let files: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
        let args = python_args(&files, &config.path().display().to_string());
        let output = std::process::Command::new(SYSTEM_PYTHON)
            .args(&args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        crate::sarif::read(&output.stdout, dir).unwrap()
    }

    /// Every case file under `rules/cases`: the lines ending in `# BLP001` are reported, with a
    /// message naming the read, and no other line is.
    #[test]
    fn each_case_reports_exactly_its_marked_lines() {
        let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/cases");
        let mut names: Vec<String> = std::fs::read_dir(&cases)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py"))
            .collect();
        names.sort();
        assert!(!names.is_empty());
        for name in names {
            let text = std::fs::read_to_string(cases.join(&name)).unwrap();
            let marked: Vec<u32> = (1..)
                .zip(text.lines())
                .filter(|(_, line)| line.trim_end().ends_with("# BLP001"))
                .map(|(n, _)| n)
                .collect();
            let hits = run_rules(&cases, &[&name]);
            let lines: Vec<u32> = hits.iter().map(|h| h.line).collect();
            assert_eq!(lines, marked, "{name}: {hits:#?}");
            for hit in &hits {
                assert_eq!(hit.rule, "BLP001");
                assert_eq!(hit.file, name);
                assert!(hit.message.contains("IndexError"), "{}", hit.message);
                assert_eq!(python_judge(hit), Some((Weight::Error, Category::Logic)));
            }
        }
    }

    /// A file the rule cannot read, decode or parse is said not checked, with why, and never
    /// passed over (a way past the rule); what Python reads (a byte-order mark, a coding
    /// declaration, lines ended by a lone carriage return) is checked, its hits on the lines git
    /// counts.
    #[test]
    fn a_file_the_rule_cannot_read_is_said_not_checked() {
        let dir = tempfile::tempdir().unwrap();
        let write =
            |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        let bug = b"def f(xs):\n    return xs[len(xs)]\n";
        write("broken.py", b"def f(:\n");
        write("latin1.py", b"x = '\xe9'\n");
        write("nul.py", b"x = 1\0\n");
        write(
            "deep.py",
            format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000)).as_bytes(),
        );
        write("bom.py", &[b"\xef\xbb\xbf".as_slice(), bug].concat());
        write(
            "cookie.py",
            &[b"# -*- coding: latin-1 -*-\nx = '\xe9'\n".as_slice(), bug].concat(),
        );
        write("cr.py", &[b"a = 1\rb = 2\n".as_slice(), bug].concat());
        let names = [
            "broken.py",
            "latin1.py",
            "nul.py",
            "deep.py",
            "missing.py",
            "bom.py",
            "cookie.py",
            "cr.py",
        ];
        let hits = run_rules(dir.path(), &names);
        let found: Vec<(&str, &str, u32)> = hits
            .iter()
            .map(|h| (h.rule.as_str(), h.file.as_str(), h.line))
            .collect();
        assert_eq!(
            found,
            [
                (NOT_CHECKED_RULE, "broken.py", 0),
                (NOT_CHECKED_RULE, "latin1.py", 0),
                (NOT_CHECKED_RULE, "nul.py", 0),
                (NOT_CHECKED_RULE, "deep.py", 0),
                (NOT_CHECKED_RULE, "missing.py", 0),
                ("BLP001", "bom.py", 2),
                ("BLP001", "cookie.py", 4),
                ("BLP001", "cr.py", 3),
            ]
        );
        assert!(
            hits[0]
                .message
                .contains("cannot parse it (a syntax error at line 1)")
        );
        for hit in &hits[..5] {
            assert_eq!(python_judge(hit), None, "{hit:?}");
        }
    }

    /// The code a message quotes is one line of at most 60 characters, whatever the expression.
    #[test]
    fn a_message_quotes_code_briefly_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("f('{}\\n')", "x".repeat(10_000));
        let source = format!("def g(f):\n    return {long}[len(\n        {long})]\n");
        std::fs::write(dir.path().join("long.py"), source).unwrap();
        let hits = run_rules(dir.path(), &["long.py"]);
        assert_eq!(hits.len(), 1, "{hits:#?}");
        let message = &hits[0].message;
        assert!(message.len() < 400, "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert!(message.starts_with("`f('xxx"), "{message}");
        // Code quoted never closes the message's code span.
        std::fs::write(
            dir.path().join("tick.py"),
            "y = '`![i](x)`'[len('`![i](x)`')]\n",
        )
        .unwrap();
        let hits = run_rules(dir.path(), &["tick.py"]);
        assert_eq!(
            hits[0].message.matches('`').count(),
            4,
            "{}",
            hits[0].message
        );
    }
}
