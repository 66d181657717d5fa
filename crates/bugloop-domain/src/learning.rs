//! The learning record (bugloop-architecture.md, "learning loop: track success rate per error
//! pattern, skip known-unfixable patterns"): for an issue bugloop filed from error reports, how
//! often issues of the same pattern were taken, solved and escalated, read from their solve
//! records. A pattern is the error's fingerprint (the same error) or its class (the same kind of
//! error, `MemoryError` or `java.net.ConnectException`, wherever it happens). A pattern escalated
//! `solve.skip_after_escalations` times, more often than it was solved, is not auto-solved
//! again: the issue goes to a person at once, with the history.
//!
//! The pattern is read from hidden lines bugloop writes at the very end of the issues it files
//! (the body quotes the report, whose lines may be anything, these markers' text included, so
//! only the end counts), and only on issues bugloop filed.

use serde::Serialize;

use crate::solve::SolveState;

const FINGERPRINT_PREFIX: &str = "<!-- bugloop:fingerprint ";
const CLASS_PREFIX: &str = "<!-- bugloop:error-class ";
const SUFFIX: &str = " -->";

/// The hidden line an issue filed from reports carries: how the issue of a fingerprint is found
/// again (the fingerprint is hex, so nothing in it ends the comment).
pub fn fingerprint_marker(fingerprint: &str) -> String {
    format!("{FINGERPRINT_PREFIX}{fingerprint}{SUFFIX}")
}

/// The hidden line naming an issue's error class, written just before its fingerprint's.
pub fn class_marker(class: &str) -> String {
    format!("{CLASS_PREFIX}{class}{SUFFIX}")
}

/// Kinds too general to be a pattern: what the intake says when the report names no type, and
/// the root types every error has.
const TOO_GENERAL: &[&str] = &[
    "error",
    "panic",
    "Error",
    "Exception",
    "BaseException",
    "Throwable",
    "RuntimeError",
    "java.lang.Exception",
    "java.lang.RuntimeException",
    "java.lang.Throwable",
    "java.lang.Error",
];

const MAX_CLASS_CHARS: usize = 120;

/// The class of an error of `kind` (the exception's type), when the type says something: a
/// name of letters, digits and `_ . $ :` (a report's text cannot end the hidden line), and not
/// one of the root types.
pub fn error_class(kind: &str) -> Option<String> {
    let kind = kind.trim();
    let named = !kind.is_empty()
        && kind.chars().count() <= MAX_CLASS_CHARS
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | ':'));
    (named && !TOO_GENERAL.contains(&kind)).then(|| kind.to_owned())
}

/// What an issue is an instance of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pattern {
    pub fingerprint: String,
    pub class: Option<String>,
}

impl Pattern {
    /// The pattern in the last lines of `text` (an issue's body without the forge's own
    /// trailer): the fingerprint's line last, the class's line just before it when there is
    /// one.
    pub fn at_end(text: &str) -> Option<Pattern> {
        let mut lines = text.trim_end().lines().rev();
        let fingerprint = lines
            .next()?
            .strip_prefix(FINGERPRINT_PREFIX)?
            .strip_suffix(SUFFIX)?;
        if fingerprint.is_empty() || !fingerprint.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let class = lines
            .next()
            .and_then(|l| l.strip_prefix(CLASS_PREFIX)?.strip_suffix(SUFFIX))
            .and_then(error_class);
        Some(Pattern {
            fingerprint: fingerprint.to_owned(),
            class,
        })
    }

    /// Whether an issue of `other` counts for this pattern's fingerprint, its class, or both.
    pub fn shares(&self, other: &Pattern) -> (bool, bool) {
        let class = self.class.is_some() && self.class == other.class;
        (self.fingerprint == other.fingerprint, class)
    }
}

/// What issues of a pattern went through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// The issues counted, newest first.
    pub issues: Vec<u64>,
    /// Times an issue was taken to be solved.
    pub attempts: u32,
    /// Solutions merged and not reverted by a regression.
    pub successes: u32,
    /// Times bugloop gave an issue to a person after trying and reproducing the error (not the
    /// times it skipped one, nor tries whose error was never reproduced).
    pub escalations: u32,
}

/// One step of an issue's record, as the tally reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub from: Option<SolveState>,
    pub to: SolveState,
    /// An escalation after the solver reproduced the error (its test failed where solving
    /// started), or a regression its solution's test proved: only those count, since a made-up
    /// report escalates and reopens too.
    pub reproduced: bool,
}

impl Tally {
    /// Counts issue `number`, whose record is `steps`.
    pub fn add(&mut self, number: u64, steps: impl IntoIterator<Item = Step>) {
        let (mut merged, mut regressed) = (0u32, 0u32);
        for step in steps {
            match step.to {
                SolveState::Assigned => self.attempts += 1,
                // A skip goes from OPEN straight to a person: nothing was tried. An error the
                // solver never reproduced may never have happened (a report anyone could write).
                SolveState::Escalated if step.from != Some(SolveState::Open) && step.reproduced => {
                    self.escalations += 1;
                }
                SolveState::Merged => merged += 1,
                // Only a regression the solution's own test proved takes a success away.
                SolveState::Regressed if step.reproduced => regressed += 1,
                _ => {}
            }
        }
        self.successes += merged.saturating_sub(regressed);
        self.issues.push(number);
    }

    /// Whether the pattern is given up on: escalated at least `threshold` times (0: never) and
    /// more often than it was solved.
    pub fn gives_up(&self, threshold: u32) -> bool {
        threshold > 0 && self.escalations >= threshold && self.escalations > self.successes
    }
}

/// An issue's learning record: its fingerprint's tally, and its class's when it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Learning {
    pub pattern: Pattern,
    pub fingerprint: Tally,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Tally>,
}

impl Learning {
    /// The record of `pattern` from `issues` (each with its pattern and its record, newest
    /// first), the issue itself among them.
    pub fn of<S>(pattern: &Pattern, issues: &[(u64, Pattern, S)]) -> Learning
    where
        S: Clone + IntoIterator<Item = Step>,
    {
        let mut fingerprint = Tally::default();
        let mut class = pattern.class.as_ref().map(|_| Tally::default());
        for (number, other, steps) in issues {
            let (same_error, same_class) = pattern.shares(other);
            if same_error {
                fingerprint.add(*number, steps.clone());
            }
            if same_class && let Some(class) = &mut class {
                class.add(*number, steps.clone());
            }
        }
        Learning {
            pattern: pattern.clone(),
            fingerprint,
            class,
        }
    }

    /// Why the issue is not auto-solved, if it is not: the pattern that was given up on.
    pub fn gives_up(&self, threshold: u32) -> Option<String> {
        let said = |what: &str, tally: &Tally| {
            format!(
                "{what}: escalated {} time{}, solved {} time{} \
                 (solve.skip_after_escalations: {threshold})",
                tally.escalations,
                if tally.escalations == 1 { "" } else { "s" },
                tally.successes,
                if tally.successes == 1 { "" } else { "s" },
            )
        };
        if self.fingerprint.gives_up(threshold) {
            return Some(said("this error", &self.fingerprint));
        }
        match (&self.class, &self.pattern.class) {
            (Some(tally), Some(name)) if tally.gives_up(threshold) => Some(said(
                &format!(
                    "errors of the class {name} ({} issue{})",
                    tally.issues.len(),
                    if tally.issues.len() == 1 { "" } else { "s" }
                ),
                tally,
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use SolveState::*;

    fn steps(path: &[(Option<SolveState>, SolveState)]) -> Vec<Step> {
        path.iter()
            .map(|&(from, to)| Step {
                from,
                to,
                reproduced: true,
            })
            .collect()
    }

    fn pattern(fingerprint: &str, class: Option<&str>) -> Pattern {
        Pattern {
            fingerprint: fingerprint.to_owned(),
            class: class.map(str::to_owned),
        }
    }

    #[test]
    fn only_the_last_lines_name_the_pattern() {
        let body = format!(
            "quoted: {}\n\n{}\n{}\n",
            fingerprint_marker("ffff"),
            class_marker("KeyError"),
            fingerprint_marker("00aa")
        );
        assert_eq!(
            Pattern::at_end(&body),
            Some(pattern("00aa", Some("KeyError")))
        );
        // A report's lines after the marker: not bugloop's trailer.
        assert_eq!(Pattern::at_end(&format!("{body}more\n")), None);
        assert_eq!(
            Pattern::at_end(&fingerprint_marker("abc")),
            Some(pattern("abc", None))
        );
        assert_eq!(Pattern::at_end(&fingerprint_marker("no -->x")), None);
        assert_eq!(
            Pattern::at_end(&format!(
                "{}\n{}",
                class_marker("Exception"),
                fingerprint_marker("ab")
            )),
            Some(pattern("ab", None))
        );
    }

    #[test]
    fn a_class_is_a_specific_type_with_nothing_that_ends_a_comment() {
        assert_eq!(error_class("KeyError").as_deref(), Some("KeyError"));
        assert_eq!(
            error_class("java.net.ConnectException").as_deref(),
            Some("java.net.ConnectException")
        );
        assert_eq!(error_class("error"), None);
        assert_eq!(error_class("panic"), None);
        assert_eq!(error_class("Exception"), None);
        assert_eq!(error_class("Key Error"), None);
        assert_eq!(error_class("X-->"), None);
        assert_eq!(error_class(&"A".repeat(121)), None);
    }

    #[test]
    fn a_pattern_escalated_often_and_rarely_solved_is_given_up() {
        let mine = pattern("01", Some("MemoryError"));
        let escalated = steps(&[
            (None, Open),
            (Some(Open), Assigned),
            (Some(Assigned), Solving),
            (Some(Solving), Escalated),
        ]);
        let solved = steps(&[(None, Open), (Some(Open), Assigned), (Some(Merged), Merged)]);
        let skipped = steps(&[(None, Open), (Some(Open), Escalated)]);
        let issues = vec![
            (9, mine.clone(), skipped),
            (7, pattern("02", Some("MemoryError")), escalated.clone()),
            (5, pattern("03", Some("MemoryError")), escalated.clone()),
            (4, pattern("04", Some("KeyError")), escalated.clone()),
            (3, pattern("05", Some("MemoryError")), solved.clone()),
        ];
        let learning = Learning::of(&mine, &issues);
        assert_eq!(learning.fingerprint.issues, vec![9]);
        assert_eq!(learning.fingerprint.escalations, 0);
        let class = learning.class.clone().unwrap();
        assert_eq!(class.issues, vec![9, 7, 5, 3]);
        assert_eq!(
            (class.attempts, class.successes, class.escalations),
            (3, 1, 2)
        );
        assert!(learning.gives_up(2).unwrap().contains("MemoryError"));
        assert_eq!(learning.gives_up(3), None);
        assert_eq!(learning.gives_up(0), None);
        // Solved as often as escalated: worth trying.
        let even = vec![
            (7, pattern("02", Some("MemoryError")), escalated),
            (3, pattern("05", Some("MemoryError")), solved.clone()),
            (2, pattern("06", Some("MemoryError")), solved),
        ];
        assert_eq!(Learning::of(&mine, &even).gives_up(1), None);
    }

    #[test]
    fn a_merge_a_regression_took_back_is_no_success() {
        let mut tally = Tally::default();
        tally.add(
            1,
            steps(&[
                (Some(Ready), Merged),
                (Some(Merged), Regressed),
                (Some(Regressed), Escalated),
            ]),
        );
        assert_eq!((tally.successes, tally.escalations), (0, 1));
    }

    #[test]
    fn escalations_of_errors_never_reproduced_do_not_count() {
        let mine = pattern("01", Some("IndexError"));
        let made_up: Vec<Step> = steps(&[
            (None, Open),
            (Some(Open), Assigned),
            (Some(Assigned), Solving),
            (Some(Solving), Escalated),
        ])
        .into_iter()
        .map(|step| Step {
            reproduced: false,
            ..step
        })
        .collect();
        let issues: Vec<(u64, Pattern, Vec<Step>)> = (2..6)
            .map(|n| {
                (
                    n,
                    pattern(&format!("0{n}"), Some("IndexError")),
                    made_up.clone(),
                )
            })
            .collect();
        let learning = Learning::of(&mine, &issues);
        assert_eq!(learning.class.unwrap().escalations, 0);
    }
}
