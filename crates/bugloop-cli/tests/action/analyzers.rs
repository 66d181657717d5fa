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

/// What a pull request's author can make the type checkers read: its TypeScript references and
/// imports a file outside the checkout by its absolute path, its `tsconfig.json` extends one and
/// maps an alias to it, each a canary the runner's user can read (as a key file on a self-hosted
/// runner would be). With a canary model key in the environment, no canary reaches the output,
/// the job summary, the SARIF file or any comment, run as root and as uid 65534; and tsc ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_requests_type_checked_code_reads_no_file_outside_the_checkout() {
    use std::os::unix::fs::PermissionsExt;
    for user in bugloop_testkit::users::scenario_users() {
        let outside = tempfile::tempdir().unwrap();
        let dir = outside.path();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let files = [
            ("app-key.d.ts", "declare const canary_dts_0451: number;\n"),
            ("secret.json", "{ \"canary-json-0451\": 1 }\n"),
            (
                "base.json",
                "{ \"compilerOptions\": { \"strict\": false, \"canaryCfg0451\": 1 } }\n",
            ),
        ];
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
            let mode = std::fs::Permissions::from_mode(0o644);
            std::fs::set_permissions(dir.join(name), mode).unwrap();
        }
        let dir = dir.display();
        let leak = format!(
            "/// <reference path=\"{dir}/app-key.d.ts\" />\n\
             import secret from \"{dir}/secret.json\";\n\
             import aliased from \"@leak/secret.json\";\n\
             export const n: string = secret;\n\
             export const m: string = aliased;\n\
             export const k: number = canary_dts_045;\n"
        );
        let tsconfig = format!(
            "{{ \"extends\": \"{dir}/base.json\", \"compilerOptions\": {{ \"paths\": \
             {{ \"@leak/*\": [\"{dir}/*\"] }} }} }}\n"
        );
        let fixture = PullRequestFixture::new(FixtureOptions {
            head_files: &[("leak.ts", &leak), ("tsconfig.json", &tsconfig)],
            ..FixtureOptions::default()
        })
        .await;
        let (run, output) = opened_with_tsc(user, &fixture, "canary-model-0451");
        assert_contains(&run.summary, "- `tsc`: 1 file(s)");
        let seen = everything_shown(&run, &output, &fixture);
        for canary in [
            "canary_dts_0451",
            "canary-json-0451",
            "canaryCfg0451",
            "canary-model-0451",
        ] {
            assert!(!seen.contains(canary), "{user:?} {canary}: {seen}");
        }
    }
}

/// The Action run as `user` on the pull request's opening, by a model with nothing to say whose
/// key is `model_key`, with tsc where the unprivileged user can run it (its own home has none).
fn opened_with_tsc(
    user: Option<u32>,
    fixture: &PullRequestFixture,
    model_key: &str,
) -> (super::Run, String) {
    use std::os::unix::fs::PermissionsExt;
    let scripts = tempfile::tempdir().unwrap();
    let model = script_file(scripts.path(), &review_lines(&[]));
    let tools = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(tools.path().join("bin")).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(installed_analyzers().join("bin/typescript"))
        .arg(tools.path().join("bin"))
        .status()
        .unwrap();
    assert!(copied.success(), "scripts/setup installs tsc");
    let tools_dir = tools.path().display().to_string();
    let env = [
        ("OPENAI_API_KEY", model_key),
        ("BUGLOOP_ANALYZERS_DIR", tools_dir.as_str()),
    ];
    super::opened_as(user, fixture, &env, &model)
}

/// Everything a run showed: its output, its job summary, its SARIF file and every comment.
fn everything_shown(run: &super::Run, output: &str, fixture: &PullRequestFixture) -> String {
    let sarif = std::fs::read_to_string(run.temp.path().join("bugloop.sarif")).unwrap();
    let comments: Vec<String> = fixture
        .finding_comments()
        .into_iter()
        .map(|c| c.body)
        .chain(fixture.bot_issue_comments().into_iter().map(|c| c.body))
        .collect();
    format!(
        "{output}\n{}\n{sarif}\n{}",
        run.summary,
        comments.join("\n")
    )
}

/// A pull request that renames an export breaks a file it does not edit: under the Action, as
/// root and as uid 65534, the importers' check finds the caller (in the summary comment, its line
/// not in the diff), while the renamed module also imports a canary outside the checkout that
/// nothing shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_requests_rename_is_found_where_it_breaks_and_nothing_outside_is_read() {
    use std::os::unix::fs::PermissionsExt;
    for user in bugloop_testkit::users::scenario_users() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let secret = outside.path().join("secret.json");
        std::fs::write(&secret, "{ \"canary-json-0452\": 1 }\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let renamed = format!(
            "import secret from \"{}\";\n\
             export const s: string = secret;\n\
             export function fetchUser(id: number): string {{\n  return `user ${{id}}`;\n}}\n",
            secret.display()
        );
        let fixture = PullRequestFixture::new(FixtureOptions {
            base_files: &[
                (
                    "src/user.ts",
                    "export function getUser(id: number): string {\n  return `user ${id}`;\n}\n",
                ),
                (
                    "src/app.ts",
                    "import { getUser } from './user';\n\nexport const first = getUser(1);\n",
                ),
            ],
            head_files: &[("src/user.ts", &renamed)],
            ..FixtureOptions::default()
        })
        .await;
        let (run, output) = opened_with_tsc(user, &fixture, "canary-model-0452");
        assert_contains(
            &run.summary,
            "1 file(s) importing the change checked: 1 diagnostic(s) new since the base",
        );
        let summary_comment: String = fixture
            .bot_issue_comments()
            .into_iter()
            .map(|c| c.body)
            .collect();
        assert_contains(&summary_comment, "src/app.ts");
        let seen = everything_shown(&run, &output, &fixture);
        for canary in ["canary-json-0452", "canary-model-0452"] {
            assert!(!seen.contains(canary), "{user:?} {canary}: {seen}");
        }
    }
}

/// Where `scripts/setup` installed the analyzers for this test run (as bugloop looks them up).
fn installed_analyzers() -> std::path::PathBuf {
    let from = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    from("BUGLOOP_ANALYZERS_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            from("XDG_DATA_HOME").map(|d| std::path::Path::new(&d).join("bugloop/analyzers"))
        })
        .unwrap_or_else(|| {
            std::path::Path::new(&from("HOME").unwrap()).join(".local/share/bugloop/analyzers")
        })
}
