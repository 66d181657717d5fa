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

    /// What cannot be parsed (another Python's syntax, bytes that are not UTF-8, nesting deeper
    /// than the parser goes, a file that is not there) has no hits, and the others are read.
    #[test]
    fn a_file_that_cannot_be_parsed_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let write =
            |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        write("broken.py", b"def f(:\n");
        write("latin1.py", b"x = '\xe9'\n");
        write(
            "deep.py",
            format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000)).as_bytes(),
        );
        write("bug.py", b"def f(xs):\n    return xs[len(xs)]\n");
        let hits = run_rules(
            dir.path(),
            &["broken.py", "latin1.py", "deep.py", "missing.py", "bug.py"],
        );
        let found: Vec<(&str, u32)> = hits.iter().map(|h| (h.file.as_str(), h.line)).collect();
        assert_eq!(found, [("bug.py", 2)]);
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
    }
}
