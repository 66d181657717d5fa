//! Checks two tools both make. Where both ran and both report the same defect, the review
//! publishes it once: the more specific tool's hit, saying the other reports it too. Where only
//! one ran, its hit stands alone.

use crate::hit::{Candidate, Hit};

/// What actionlint says of an untrusted expression in an inline script, after the quoted
/// expression.
const UNTRUSTED: &str = "\" is potentially untrusted. avoid using it directly in inline scripts.";

/// The expression actionlint's untrusted-input check quotes, when `message` is that check's
/// and nothing else's (another of its expression checks may quote text that says the words).
pub(crate) fn untrusted_expression(message: &str) -> Option<&str> {
    let rest = message.strip_prefix('"')?;
    let (expression, _) = rest.split_once(UNTRUSTED)?;
    let a_context_path = !expression.is_empty()
        && expression
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.*[]'".contains(&b));
    a_context_path.then_some(expression)
}

/// actionlint's words for an `if:` that is always true (text around its `${{ }}`), zizmor's
/// unsound-condition audit.
const ALWAYS_TRUE: &str = "is always evaluated to true because extra characters are around ${{ }}";

/// Drops each actionlint hit that a zizmor hit reports too, and says so on zizmor's hit: an
/// untrusted expression in an inline script that zizmor's template-injection audit finds in the
/// same step's script, and an always-true `if:` that its unsound-condition audit finds on the
/// same line. `text` reads a file at head.
pub(crate) fn fold_overlaps(
    candidates: &mut Vec<Candidate>,
    text: impl Fn(&str) -> Option<String>,
) {
    let mut folded = Vec::new();
    for (index, covered) in candidates.iter().enumerate() {
        if covered.tool != "actionlint" {
            continue;
        }
        let same_defect: Box<dyn Fn(&Candidate) -> bool> =
            match untrusted_expression(&covered.hit.message) {
                Some(expression) if covered.hit.rule == "expression" => {
                    // Moved to the expression's line already (see [`to_the_expression`]), or at
                    // `run:`.
                    let at = covered.hit.line;
                    let script = text(&covered.hit.file)
                        .and_then(|t| script_lines(&t, at))
                        .unwrap_or(at..=at);
                    let expression = as_path(expression);
                    Box::new(move |k: &Candidate| {
                        k.hit.rule == "zizmor/template-injection"
                            && script.contains(&k.hit.line)
                            && as_path(&k.evidence).contains(&expression)
                    })
                }
                _ if covered.hit.rule == "if-cond" && covered.hit.message.contains(ALWAYS_TRUE) => {
                    let at = covered.hit.line;
                    Box::new(move |k: &Candidate| {
                        k.hit.rule == "zizmor/unsound-condition" && k.hit.line == at
                    })
                }
                _ => continue,
            };
        let kept = candidates.iter().position(|k| {
            k.tool == "zizmor"
                && k.hit.file == covered.hit.file
                // Never folded into a hit weighed lower: the defect would be published weaker
                // than one tool says it is, or fall under the threshold.
                && k.score >= covered.score
                && same_defect(k)
        });
        if let Some(kept) = kept {
            folded.push((index, kept));
        }
    }
    for &(covered, kept) in &folded {
        let Some(covered) = candidates.get(covered) else {
            continue;
        };
        let mut also = format!(
            "{} reports it too ({}: {})",
            covered.tool,
            covered.hit.rule,
            crate::keys::mask_keys(&covered.hit.message)
        );
        // What was said on the folded hit (the change also silenced a check there) stays said.
        if let Some(note) = &covered.note {
            also = format!("{note}\n\n{also}");
        }
        if let Some(kept) = candidates.get_mut(kept) {
            kept.note = Some(match kept.note.take() {
                Some(earlier) => format!("{earlier}\n\n{also}"),
                None => also,
            });
        }
    }
    let mut index = 0;
    candidates.retain(|_| {
        index += 1;
        !folded.iter().any(|(covered, _)| *covered == index - 1)
    });
}

/// actionlint places an untrusted expression in a block script (`run: |`) at the `run:` key:
/// the hit is moved to the script's line that holds the expression, so a change that adds it
/// to an existing step is heard (the key's line is not the change's) and its place is the
/// expression's. `text` reads a file at head.
pub(crate) fn to_the_expression(hit: &mut Hit, text: impl Fn(&str) -> Option<String>) {
    let Some(expression) = untrusted_expression(&hit.message).map(as_path) else {
        return;
    };
    let Some(text) = text(&hit.file) else {
        return;
    };
    let Some(script) = script_lines(&text, hit.line) else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    let found: Vec<u32> = script
        .filter(|line| {
            usize::try_from(*line)
                .ok()
                .and_then(|line| lines.get(line.checked_sub(1)?))
                .is_some_and(|l| as_path(l).contains(&expression))
        })
        .collect();
    // Every line of the script that holds it: the one a change added is the one heard.
    let mut lines_holding = found.into_iter();
    if let Some(first) = lines_holding.next() {
        let last = lines_holding.last().unwrap_or(first);
        hit.line = first;
        hit.end_line = (last > first).then_some(last);
    }
}

/// The lines of the inline script actionlint placed a hit at: line `at` itself when it holds
/// the script (`run: echo ...`), else the block scalar it opens (`run: |`), the lines indented
/// deeper than its key.
fn script_lines(text: &str, at: u32) -> Option<std::ops::RangeInclusive<u32>> {
    let lines: Vec<&str> = text.lines().collect();
    let index = usize::try_from(at).ok()?.checked_sub(1)?;
    let line = lines.get(index)?;
    let key_at = line.len() - line.trim_start_matches([' ', '-']).len();
    // A step's shell script, or actions/github-script's JavaScript.
    let keyed = line.get(key_at..)?;
    let value = keyed
        .strip_prefix("run:")
        .or_else(|| keyed.strip_prefix("script:"))?
        .trim();
    let value = value.split(" #").next().unwrap_or(value).trim();
    if !value.starts_with(['|', '>']) {
        return Some(at..=at);
    }
    let key = key_at;
    let below = lines
        .iter()
        .skip(index + 1)
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key)
        .count();
    let last = at.saturating_add(u32::try_from(below).ok()?);
    Some(at.saturating_add(1)..=last)
}

/// Text without white space and with property lookups as paths: how `${{ a['b'] }}` and
/// `${{a.b}}` are the same expression (actionlint quotes the second form).
fn as_path(text: &str) -> String {
    let named = squeezed(text).replace("['", ".").replace("']", "");
    // An index is any element to actionlint: `commits[0].message` is its `commits.*.message`.
    let mut path = String::with_capacity(named.len());
    let mut rest = named.as_str();
    while let Some(open) = rest.find('[') {
        let (before, after) = rest.split_at(open);
        path.push_str(before);
        match after[1..].find(']') {
            Some(close) if close > 0 && after[1..=close].bytes().all(|b| b.is_ascii_digit()) => {
                path.push_str(".*");
                rest = &after[close + 2..];
            }
            _ => {
                path.push('[');
                rest = &after[1..];
            }
        }
    }
    path.push_str(rest);
    path
}

/// Text without its white space (how `${{ a.b }}` and `${{a.b}}` are the same expression).
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::Category;
    use bugloop_domain::score::Score;

    use super::*;
    use crate::hit::Level;

    const WORKFLOW: &str = "on: pull_request_target
jobs:
  greet:
    runs-on: ubuntu-latest
    steps:
      - name: a
        run: echo \"title ${{ github.event.issue.title }}\" # zizmor: ignore[template-injection]
      - name: b
        run: |
          echo hello
          echo \"again ${{github.event.issue.title}}\"
      - name: c
        run: echo done
";

    fn hit(tool: &str, rule: &str, line: u32, message: &str, score: u8) -> Candidate {
        let evidence = WORKFLOW.lines().nth(line as usize - 1).unwrap().to_owned();
        Candidate {
            tool: tool.to_owned(),
            hit: Hit {
                rule: rule.to_owned(),
                level: Level::Error,
                message: message.to_owned(),
                file: ".github/workflows/greet.yml".to_owned(),
                line,
                end_line: None,
                url: None,
                security: true,
                why: None,
            },
            score: Score::new(score).unwrap(),
            category: Category::Security,
            evidence,
            note: None,
            unedited: false,
            also_at: Vec::new(),
        }
    }

    const UNTRUSTED_TITLE: &str = "\"github.event.issue.title\" is potentially untrusted. avoid using it directly in inline scripts. instead, pass it through an environment variable.";

    fn actionlint(line: u32) -> Candidate {
        hit("actionlint", "expression", line, UNTRUSTED_TITLE, 7)
    }

    fn zizmor(line: u32, score: u8) -> Candidate {
        hit(
            "zizmor",
            "zizmor/template-injection",
            line,
            "code injection via template expansion",
            score,
        )
    }

    fn folded(mut found: Vec<Candidate>) -> Vec<Candidate> {
        fold_overlaps(&mut found, |_| Some(WORKFLOW.to_owned()));
        found
    }

    fn places(found: &[Candidate]) -> Vec<(&str, u32)> {
        found
            .iter()
            .map(|c| (c.tool.as_str(), c.hit.line))
            .collect()
    }

    #[test]
    fn actionlints_untrusted_input_is_zizmors_template_injection_once() {
        // actionlint at the block's `run: |`, zizmor at the expression's line in it.
        let found = folded(vec![actionlint(9), zizmor(11, 8)]);
        assert_eq!(places(&found), [("zizmor", 11)]);
        let note = found[0].note.as_deref().unwrap();
        assert!(
            note.starts_with("actionlint reports it too (expression: "),
            "{note}"
        );
    }

    #[test]
    fn another_steps_injection_or_a_weaker_hit_is_never_folded_away() {
        // Step a's injection (zizmor told to ignore it) is not step b's.
        let mut silenced = actionlint(7);
        silenced.note = Some("The change also silences the check here".to_owned());
        let found = folded(vec![silenced, actionlint(9), zizmor(11, 8)]);
        assert_eq!(places(&found), [("actionlint", 7), ("zizmor", 11)]);
        assert_eq!(
            found[0].note.as_deref(),
            Some("The change also silences the check here")
        );
        // zizmor weighs it lower (a note): actionlint's error stands.
        assert_eq!(places(&folded(vec![actionlint(9), zizmor(11, 4)])).len(), 2);
        // zizmor did not run: actionlint's hit stands.
        assert_eq!(places(&folded(vec![actionlint(9)])), [("actionlint", 9)]);
    }

    #[test]
    fn only_actionlints_own_words_name_an_untrusted_expression() {
        assert_eq!(
            untrusted_expression(UNTRUSTED_TITLE),
            Some("github.event.issue.title")
        );
        assert_eq!(
            untrusted_expression(
                "\"github.event['pull_request']['title']\" is potentially untrusted. avoid using it directly in inline scripts. x"
            ),
            Some("github.event['pull_request']['title']")
        );
        // Another expression check whose quoted text says the words.
        for other in [
            "format string \"{0} is potentially untrusted. avoid using it directly in inline scripts.\" does not contain placeholder {1}",
            "property \"titel\" is not defined",
            "\"a b\" is potentially untrusted. avoid using it directly in inline scripts.",
        ] {
            assert_eq!(untrusted_expression(other), None, "{other}");
        }
        let mut typed = actionlint(9);
        typed.hit.message = "property \"title\" is not defined in object type".to_owned();
        assert_eq!(places(&folded(vec![typed, zizmor(11, 8)])).len(), 2);
    }

    #[test]
    fn a_block_scripts_hit_moves_to_its_expressions_line() {
        let mut block = actionlint(9).hit;
        to_the_expression(&mut block, |_| Some(WORKFLOW.to_owned()));
        assert_eq!(block.line, 11);
        let mut inline = actionlint(7).hit;
        to_the_expression(&mut inline, |_| Some(WORKFLOW.to_owned()));
        assert_eq!(inline.line, 7);
        // Moved there, it is still zizmor's finding once.
        let mut moved = actionlint(9);
        moved.hit = block;
        assert_eq!(
            places(&folded(vec![moved, zizmor(11, 8)])),
            [("zizmor", 11)]
        );
    }

    #[test]
    fn an_always_true_condition_is_zizmors_unsound_condition_once() {
        let said = "if: condition \"${{ github.event_name == 'push' }} && false\" is always evaluated to true because extra characters are around ${{ }}";
        let if_cond = hit("actionlint", "if-cond", 9, said, 7);
        let unsound = hit(
            "zizmor",
            "zizmor/unsound-condition",
            9,
            "unsound conditional expression",
            8,
        );
        assert_eq!(
            places(&folded(vec![if_cond.clone(), unsound.clone()])),
            [("zizmor", 9)]
        );
        // On another line, another condition.
        let mut elsewhere = unsound;
        elsewhere.hit.line = 10;
        assert_eq!(places(&folded(vec![if_cond, elsewhere])).len(), 2);
    }

    #[test]
    fn a_lookup_written_with_brackets_is_the_same_expression() {
        assert_eq!(
            as_path("echo \"${{ github.event['issue']['title'] }}\""),
            as_path("echo \"${{github.event.issue.title}}\"")
        );
        assert!(
            as_path("echo \"${{ github.event.commits[0].message }}\"")
                .contains(&as_path("github.event.commits.*.message"))
        );
        assert_eq!(as_path("a[x]b[]c[1"), "a[x]b[]c[1");
    }

    #[test]
    fn a_github_script_block_and_a_repeated_expression() {
        let workflow = "steps:\n  - uses: actions/github-script@v7\n    with:\n      script: |\n        const t = '${{ github.event.issue.title }}'\n        log(t)\n        const u = '${{ github.event.issue.title }}'\n";
        let mut hit = actionlint(4).hit;
        to_the_expression(&mut hit, |_| Some(workflow.to_owned()));
        // Both lines that hold it: whichever a change added is heard.
        assert_eq!((hit.line, hit.end_line), (5, Some(7)));
    }

    #[test]
    fn the_script_of_a_run_line_is_itself_or_its_block() {
        assert_eq!(script_lines(WORKFLOW, 7), Some(7..=7));
        assert_eq!(script_lines(WORKFLOW, 9), Some(10..=11));
        assert_eq!(script_lines(WORKFLOW, 6), None);
    }
}
