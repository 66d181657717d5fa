//! Reading SARIF 2.1.0: the few fields a hit needs (rule, level, message, the first physical
//! location, the rule's help link and security tag). Written by hand because those ten fields
//! are all bugloop reads; the generated SARIF crates model the whole standard.

use std::path::Path;

use serde::Deserialize;

use crate::hit::{Hit, Level};

#[derive(Debug, Deserialize)]
struct Log {
    #[serde(default)]
    runs: Vec<Run>,
}

#[derive(Debug, Deserialize)]
struct Run {
    #[serde(default)]
    tool: Option<Tool>,
    #[serde(default)]
    results: Vec<SarifResult>,
}

#[derive(Debug, Deserialize)]
struct Tool {
    driver: Driver,
}

#[derive(Debug, Deserialize)]
struct Driver {
    #[serde(default)]
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    #[serde(default)]
    help_uri: Option<String>,
    #[serde(default)]
    full_description: Option<Message>,
    #[serde(default)]
    properties: Option<Properties>,
}

#[derive(Debug, Default, Deserialize)]
struct Properties {
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    #[serde(default)]
    rule_id: Option<String>,
    #[serde(default)]
    rule_index: Option<usize>,
    #[serde(default)]
    level: Option<String>,
    message: Message,
    #[serde(default)]
    locations: Vec<Location>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    markdown: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    #[serde(default)]
    physical_location: Option<PhysicalLocation>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(default)]
    region: Option<Region>,
}

#[derive(Debug, Deserialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    #[serde(default)]
    start_line: Option<u32>,
    #[serde(default)]
    end_line: Option<u32>,
}

/// The hits of a SARIF log, their paths made relative to `root` (the directory the tool ran in,
/// as the sandbox shows it); a hit with no line, or outside `root`, is left out.
pub(crate) fn read(bytes: &[u8], root: &Path) -> Result<Vec<Hit>, String> {
    // The error's kind and place only: its text may quote the file, which another step or a
    // branch wrote.
    let log: Log = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "not SARIF ({:?} error at line {}, column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })?;
    let mut hits = Vec::new();
    for run in log.runs {
        let rules = run.tool.map(|t| t.driver.rules).unwrap_or_default();
        for result in run.results {
            if let Some(hit) = hit_of(result, &rules, root) {
                hits.push(hit);
            }
        }
    }
    Ok(hits)
}

fn hit_of(result: SarifResult, rules: &[Rule], root: &Path) -> Option<Hit> {
    let rule = result
        .rule_id
        .as_deref()
        .and_then(|id| rules.iter().find(|r| r.id == id))
        .or_else(|| result.rule_index.and_then(|i| rules.get(i)));
    let rule_id = result
        .rule_id
        .clone()
        .or_else(|| rule.map(|r| r.id.clone()))?;
    let location = result
        .locations
        .into_iter()
        .find_map(|l| l.physical_location)?;
    // A result about a whole file has no region: line 0, never a finding on an added line, but
    // read (a tool saying it did not check the file, see `run::says_not_checked`).
    let (line, end_line) = location.region.map_or((Some(0), None), |region| {
        (region.start_line, region.end_line)
    });
    let line = line?;
    let file = relative_path(&location.artifact_location.uri, root)?;
    let message = result
        .message
        .text
        .or(result.message.markdown)
        .unwrap_or_default();
    Some(Hit {
        rule: rule_id,
        level: Level::from_sarif(result.level.as_deref()),
        message,
        file,
        line,
        end_line,
        url: rule.and_then(|r| r.help_uri.clone()),
        security: rule
            .and_then(|r| r.properties.as_ref())
            .is_some_and(|p| p.tags.iter().any(|t| t.eq_ignore_ascii_case("security"))),
        why: rule.and_then(why_of),
    })
}

/// Most characters of a rule's explanation a finding repeats.
const MAX_WHY_CHARS: usize = 600;

/// The "Why is this bad?" section of a rule's full description (ruff documents every rule so),
/// as one paragraph: its first sentences within [`MAX_WHY_CHARS`]. `None` for a rule whose
/// description has no such section (a summary of the rule says no more than its message).
fn why_of(rule: &Rule) -> Option<String> {
    let description = rule.full_description.as_ref()?;
    let text = description
        .text
        .as_deref()
        .or(description.markdown.as_deref())?;
    let (_, after) = text.split_once("## Why is this bad?")?;
    let section = after.split("\n#").next().unwrap_or(after);
    let paragraph = section.split_whitespace().collect::<Vec<_>>().join(" ");
    if paragraph.is_empty() {
        return None;
    }
    if paragraph.chars().count() <= MAX_WHY_CHARS {
        return Some(paragraph);
    }
    // Whole sentences that fit, else the cut text.
    let cut: String = paragraph.chars().take(MAX_WHY_CHARS).collect();
    Some(match cut.rfind(". ") {
        Some(end) => cut[..=end].to_owned(),
        None => format!("{cut}…"),
    })
}

/// A SARIF artifact's URI as a path relative to `root`: `file://` URIs and absolute paths must
/// lie under it; a relative URI is relative to it already. `..` is refused either way.
pub(crate) fn relative_path(uri: &str, root: &Path) -> Option<String> {
    let path = if uri.starts_with("file:") {
        url::Url::parse(uri).ok()?.to_file_path().ok()?
    } else {
        Path::new(uri).to_path_buf()
    };
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?.to_path_buf()
    } else if path.starts_with("..") {
        return None;
    } else {
        under_root(&path, root)
    };
    let relative = relative.strip_prefix("./").unwrap_or(&relative);
    let text = relative.to_str()?;
    let safe = !text.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    // Named as the diff names it: a tab or line break in a name in git's quoted form.
    safe.then(|| bugloop_domain::paths::display_path(text.as_bytes()))
}

/// A relative path as a tool wrote it: relative to the directory it ran in, or to a repository
/// root it found above it (zizmor names files from the nearest directory holding a `.git`,
/// which for a task tree inside a repository's `.git` is the repository itself). The shortest
/// reading that lands inside `root` wins.
fn under_root(path: &Path, root: &Path) -> std::path::PathBuf {
    root.ancestors()
        .skip(1)
        .map(|ancestor| ancestor.join(path))
        .find_map(|joined| {
            joined
                .strip_prefix(root)
                .ok()
                .filter(|rest| !rest.as_os_str().is_empty())
                .map(Path::to_path_buf)
        })
        .filter(|_| !root.join(path).exists())
        .unwrap_or_else(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_read_with_their_rules_pages_and_relative_paths() {
        let log = br#"{"runs":[{"tool":{"driver":{"name":"t","rules":[
            {"id":"S608","helpUri":"https://docs/s608","properties":{"tags":["security"]}}]}},
          "results":[
            {"ruleId":"S608","level":"error","message":{"text":"sql"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"file:///w/ork/a%20b.py"},
               "region":{"startLine":3,"endLine":4}}}]},
            {"ruleIndex":0,"message":{"text":"relative"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/x.py"},
               "region":{"startLine":1}}}]},
            {"ruleId":"X","message":{"text":"outside"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"/etc/passwd"},
               "region":{"startLine":1}}}]},
            {"ruleId":"X","message":{"text":"escapes"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"../x.py"},
               "region":{"startLine":1}}}]},
            {"ruleId":"X","message":{"text":"no line"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.py"}}}]},
            {"ruleId":"X","message":{"text":"no start"},
             "locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.py"},
               "region":{"endLine":2}}}]}
          ]}]}"#;
        let hits = read(log, Path::new("/w/ork")).unwrap();
        assert_eq!(hits.len(), 3, "{hits:?}");
        // About the whole file (no region): line 0, which no added line is.
        assert_eq!((hits[2].file.as_str(), hits[2].line), ("a.py", 0));
        assert_eq!(hits[0].file, "a b.py");
        assert_eq!((hits[0].line, hits[0].end_line), (3, Some(4)));
        assert_eq!(hits[0].level, Level::Error);
        assert_eq!(hits[0].url.as_deref(), Some("https://docs/s608"));
        assert!(hits[0].security);
        assert_eq!(hits[1].rule, "S608");
        assert_eq!(hits[1].file, "src/x.py");
        assert_eq!(hits[1].level, Level::Warning);
    }

    #[test]
    fn a_rules_why_is_read_from_its_documentation() {
        let rule = |description: &str| Rule {
            id: "S602".to_owned(),
            help_uri: None,
            full_description: Some(Message {
                text: Some(description.to_owned()),
                markdown: None,
            }),
            properties: None,
        };
        let ruff = "## What it does\nChecks for a shell.\n\n## Why is this bad?\nStarting a \
                    subprocess with a shell can allow attackers\nto run commands.\n\n## \
                    Example\n```python\nrun(\"ls\", shell=True)\n```\n";
        assert_eq!(
            why_of(&rule(ruff)).as_deref(),
            Some("Starting a subprocess with a shell can allow attackers to run commands.")
        );
        assert_eq!(why_of(&rule("Disallow constant conditions")), None);
        let long = format!("## Why is this bad?\n{}", "A sentence. ".repeat(100));
        let cut = why_of(&rule(&long)).unwrap();
        assert!(cut.len() <= MAX_WHY_CHARS && cut.ends_with('.'), "{cut}");
    }

    #[test]
    fn a_path_relative_to_a_repository_above_the_tree_is_read_as_the_trees() {
        let root = Path::new("/repo/.git/bugloop/tasks/review-1/tree");
        assert_eq!(
            relative_path(
                ".git/bugloop/tasks/review-1/tree/.github/workflows/ci.yml",
                root
            )
            .as_deref(),
            Some(".github/workflows/ci.yml")
        );
        assert_eq!(relative_path("src/a.py", root).as_deref(), Some("src/a.py"));
        assert_eq!(relative_path("../x.py", root), None);
    }

    #[test]
    fn what_is_not_sarif_is_said() {
        assert!(
            read(b"no json", Path::new("/w"))
                .unwrap_err()
                .starts_with("not SARIF")
        );
        assert!(read(b"{}", Path::new("/w")).unwrap().is_empty());
    }
}
