//! The coverage a coverage run printed, in percent, from the summaries of the common tools:
//! coverage.py and cargo-llvm-cov (`TOTAL ... 84%`, its last percent), `go test -cover` and
//! `go tool cover -func` (`coverage: 75.0% of statements`, `total: (statements) 75.0%`),
//! Istanbul's text summary (`Lines : 85.71% ( 6/7 )`), Jest's and nyc's table (`All files |
//! ... | 85.71 | ...`, its `% Lines` column) and lcov (`lines......: 80.0% (8 of 10 lines)`).
//! The last summary line in the output counts (a run that prints per-package lines ends with
//! its total). Nothing recognised: `None`, never a guess.

use std::sync::LazyLock;

use regex::Regex;

static PERCENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(\d{1,3}(?:\.\d+)?)\s?%").ok());
static GO_PACKAGE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"coverage: (\d{1,3}(?:\.\d+)?)% of statements").ok());

/// The coverage `output` reports, as a percentage from 0 to 100.
pub fn coverage_percent(output: &str) -> Option<f64> {
    output.lines().rev().find_map(line_percent)
}

fn last_percent(line: &str) -> Option<f64> {
    PERCENT
        .as_ref()?
        .captures_iter(line)
        .last()
        .and_then(|c| c[1].parse().ok())
}

fn line_percent(line: &str) -> Option<f64> {
    let trimmed = line.trim();
    let found = if trimmed.starts_with("TOTAL") || trimmed.starts_with("total:") {
        last_percent(trimmed)
    } else if let Some(c) = GO_PACKAGE.as_ref().and_then(|p| p.captures(trimmed)) {
        c[1].parse().ok()
    } else if let Some(rest) = trimmed.strip_prefix("Lines") {
        rest.trim_start()
            .strip_prefix(':')
            .and_then(|rest| PERCENT.as_ref()?.captures(rest))
            .and_then(|c| c[1].parse().ok())
    } else if trimmed.starts_with("lines.") {
        last_percent(trimmed.split('(').next().unwrap_or(trimmed))
    } else if trimmed.starts_with("All files") && trimmed.contains('|') {
        // `All files | % Stmts | % Branch | % Funcs | % Lines | Uncovered`.
        trimmed
            .split('|')
            .nth(4)
            .and_then(|cell| cell.trim().parse().ok())
    } else {
        None
    };
    found.filter(|p: &f64| (0.0..=100.0).contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tools_summary_is_read_and_anything_else_is_not() {
        for (output, expected) in [
            (
                "Name       Stmts   Miss  Cover\n------\nstats.py      10      2    80%\n------\nTOTAL         10      2    80%\n",
                Some(80.0),
            ),
            (
                "Filename  Regions  Missed Regions  Cover  Functions  Missed Functions  Executed  Lines  Missed Lines  Cover\nTOTAL  20  2  90.00%  5  0  100.00%  40  4  90.00%\n",
                Some(90.0),
            ),
            (
                "ok  \tacme/app\t0.01s\tcoverage: 75.0% of statements\n",
                Some(75.0),
            ),
            (
                "acme/app/a.go:3:\tF\t100.0%\ntotal:\t\t\t(statements)\t62.5%\n",
                Some(62.5),
            ),
            (
                "=============================== Coverage summary ===============================\nStatements   : 80% ( 8/10 )\nBranches     : 50% ( 1/2 )\nFunctions    : 100% ( 2/2 )\nLines        : 85.71% ( 6/7 )\n",
                Some(85.71),
            ),
            (
                "----------|---------|----------|---------|---------|\nFile      | % Stmts | % Branch | % Funcs | % Lines |\nAll files |   83.33 |       50 |     100 |   85.71 |\n cart.js  |   83.33 |       50 |     100 |   85.71 | 4\n",
                Some(85.71),
            ),
            (
                "Summary coverage rate:\n  lines......: 80.0% (8 of 10 lines)\n  functions..: 100.0% (2 of 2 functions)\n",
                Some(80.0),
            ),
            ("14 passed in 0.2s\n", None),
            ("TOTAL  10  2  180%\n", None),
            ("", None),
        ] {
            assert_eq!(coverage_percent(output), expected, "{output}");
        }
    }
}
