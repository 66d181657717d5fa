//! The Action on a pull request whose change an analyzer catches: the hit is a line comment
//! naming the tool and its rule, and a SARIF result under the tool's rule with its page.

use bugloop_github_sim::fixture::{FixtureOptions, PullRequestFixture, review_lines, script_file};
use bugloop_testkit::assert_contains;
use bugloop_testkit::json::entry_where;
use serde_json::Value;

use super::text;

const FIND: &str = "def find(conn, name):\n    return conn.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\").fetchall()\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyzers_hit_is_a_line_comment_and_a_sarif_result_under_its_rule() {
    let fixture = PullRequestFixture::new(FixtureOptions {
        base_config: Some("review:\n  analyzer_findings: publish\n"),
        head_files: &[("app.py", FIND)],
        ..FixtureOptions::default()
    })
    .await;
    let scripts = tempfile::tempdir().unwrap();
    let model = script_file(scripts.path(), &review_lines(&[]));
    let (run, _) = super::opened_as(None, &fixture, &[], &model);
    let comments = fixture.finding_comments();
    let sql = comments
        .iter()
        .find(|c| c.path == "app.py")
        .unwrap_or_else(|| panic!("{comments:#?}\n{}", text(&run.output)));
    assert_eq!(sql.line, Some(2), "{sql:#?}");
    assert!(
        sql.body.contains(
            "Found by ruff [`S608`](https://docs.astral.sh/ruff/rules/hardcoded-sql-expression)."
        ),
        "{}",
        sql.body
    );
    let sarif_path = run.temp.path().join("bugloop.sarif");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    let run0 = &sarif["runs"][0];
    let result = entry_where(&run0["results"], "ruleId", "ruff/S608");
    let rule = &run0["tool"]["driver"]["rules"][result["ruleIndex"].as_u64().unwrap() as usize];
    assert_eq!(rule["id"], "ruff/S608");
    assert_eq!(
        rule["helpUri"],
        "https://docs.astral.sh/ruff/rules/hardcoded-sql-expression"
    );
    assert_eq!(rule["properties"]["tags"][0], "security");
    // The job summary and the summary comment say which analyzers ran.
    assert_contains(&run.summary, "### Analyzers");
    assert_contains(&run.summary, "- `ruff`: 1 file(s)");
    let summary = fixture.bot_issue_comments();
    assert!(
        summary.iter().any(|c| c.body.contains("#### Analyzers")),
        "{summary:#?}"
    );
}
