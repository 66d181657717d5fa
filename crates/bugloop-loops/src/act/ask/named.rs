//! What a question names, read for a model that cannot call tools: the files it names, read as
//! `read_file` reads them (bugloop makes the calls the model cannot), confined the same way.

use bugloop_tools::{Registry, ToolContext, Toolset};

/// The most names of a question looked up: each is a walk of the repository.
const MAX_NAMES: usize = 8;

/// The most files a name without `/` stands for (found at any depth).
const MAX_FILES_A_NAME: usize = 3;

/// The most of one file kept: more than any model without tools is shown.
const MAX_KEPT_CHARS: usize = 40_000;

/// The files a question names, each as `read_file` numbered it.
pub(super) struct Named {
    files: Vec<(String, String)>,
}

/// The code a model is shown, and the paths it came from.
pub(super) struct Shown {
    pub code: String,
    pub paths: Vec<String>,
}

impl Shown {
    /// What the model saw, for the one who asked.
    pub fn said(&self) -> String {
        match self.paths.as_slice() {
            [] => "no code (the question names no file it has)".to_owned(),
            paths => paths
                .iter()
                .map(|path| code_span(path))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

impl Named {
    /// The files the question names, read within the workspace of `context`. A name without
    /// `/` is looked up as the `glob` tool does, by file name at any depth; a binary file, or one
    /// `read_file` refuses, is left out.
    pub async fn read(context: &ToolContext, question: &str) -> Named {
        let tools = Registry::new(Toolset::Read);
        let call = |name: &'static str, arguments: serde_json::Value| {
            let tools = &tools;
            async move { tools.call(context, name, &arguments.to_string()).await.ok() }
        };
        let mut named = Named { files: Vec::new() };
        for name in file_names(question) {
            let paths: Vec<String> = if name.contains('/') {
                vec![name]
            } else {
                call("glob", serde_json::json!({"pattern": name}))
                    .await
                    .filter(|found| !found.starts_with("no files match"))
                    .map(|found| {
                        found
                            .lines()
                            .filter(|line| !line.starts_with("[..."))
                            .take(MAX_FILES_A_NAME)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for path in paths {
                if named.files.iter().any(|(known, _)| *known == path) {
                    continue;
                }
                let text = call("read_file", serde_json::json!({"path": path})).await;
                if let Some(text) = text.filter(|text| is_numbered(text)) {
                    let (kept, _) = crate::context::cut(&text, MAX_KEPT_CHARS);
                    named.files.push((path, kept));
                }
            }
        }
        named
    }

    /// The files' code within `budget` characters, headers included, in the order the question
    /// names them: a file that does not fit whole is cut (to no less than 100 characters of its
    /// code), and those after it are left out. Never longer than `budget`, so showing it again
    /// within half its length shows less.
    pub fn within(&self, budget: usize) -> Shown {
        let mut shown = Shown {
            code: String::new(),
            paths: Vec::new(),
        };
        for (path, text) in &self.files {
            let (open, close) = (format!("### {path}\n\n```\n"), "```\n\n");
            let room = budget.saturating_sub(shown.code.len() + open.len() + close.len());
            if room < 100 {
                break;
            }
            let (text, _) = crate::context::cut(text, room);
            shown.code.push_str(&open);
            shown.code.push_str(&text);
            shown.code.push_str(close);
            shown.paths.push(path.clone());
        }
        shown
    }
}

/// `read_file`'s answer is the file's lines, numbered (or that it is empty), not a notice that
/// the file is binary or has no such lines.
fn is_numbered(text: &str) -> bool {
    text == "(empty file)\n"
        || text.split_once('\t').is_some_and(|(number, _)| {
            let number = number.trim_start();
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
        })
}

/// `path` as inline code, whatever backticks it holds.
fn code_span(path: &str) -> String {
    let longest = path.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if path.starts_with('`') || path.ends_with('`') {
        " "
    } else {
        ""
    };
    format!(
        "{ticks}{pad}{}{pad}{ticks}",
        bugloop_domain::markdown::inline(path)
    )
}

/// The words of a question that look like a file's name or path (`orders.py`, `src/lib.rs`),
/// without the quotes and punctuation around them and written one way (`./a//b.py` is
/// `a/b.py`); never a glob; the first [`MAX_NAMES`], once each.
fn file_names(question: &str) -> Vec<String> {
    let words = words(question)
        .into_iter()
        .map(|word| word.trim_matches(|c: char| "`'\"()[]<>,;:!?".contains(c)))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| !word.contains(['*', '?', '[', ']', '{', '}']))
        .map(|word| {
            word.split('/')
                .filter(|part| !part.is_empty() && *part != ".")
                .collect::<Vec<_>>()
                .join("/")
        })
        .filter(|word| {
            let name = word.rsplit('/').next().unwrap_or(word);
            name.rsplit_once('.').is_some_and(|(stem, extension)| {
                !stem.is_empty()
                    && (1..=6).contains(&extension.len())
                    && extension.chars().all(|c| c.is_ascii_alphanumeric())
                    && extension.chars().any(|c| c.is_ascii_alphabetic())
            })
        });
    let mut names: Vec<String> = Vec::new();
    for word in words {
        if !names.contains(&word) {
            names.push(word);
        }
        if names.len() == MAX_NAMES {
            break;
        }
    }
    names
}

/// The question's words, a span in backticks or double quotes one word (a name with a space in
/// it: `` `my file.py` ``), in the order they stand.
fn words(question: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut rest = question.trim_start();
    while let Some(first) = rest.chars().next() {
        let quoted = ['`', '"']
            .contains(&first)
            .then(|| rest[1..].find(first))
            .flatten();
        let end = match quoted {
            Some(close) => {
                words.push(&rest[1..=close]);
                close + 2
            }
            None => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                words.push(&rest[..end]);
                end
            }
        };
        rest = rest[end..].trim_start();
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_of_a_question_are_its_file_names_once_each_never_a_glob() {
        assert_eq!(
            file_names(
                "Why does `shop/orders.py` call db.py, (db.py), ./db.py and *.py? See \
                 ./shop//orders.py and orders.py."
            ),
            ["shop/orders.py", "db.py", "orders.py"]
        );
        let many: String = (0..100).map(|i| format!("f{i}.py ")).collect();
        assert_eq!(file_names(&many).len(), MAX_NAMES);
        assert!(file_names("what is 3.5 times e? Is it done...").is_empty());
        assert_eq!(
            file_names("Is `my file.py` like \"old one.py\" and a.py? \"Unclosed b.py"),
            ["my file.py", "old one.py", "a.py", "b.py"]
        );
    }

    #[test]
    fn what_is_shown_never_exceeds_its_budget_so_halving_it_ends() {
        let long = format!("{}/Rates.py", "d".repeat(290));
        let named = Named {
            files: vec![
                (long, "     1\tx = 1\n".repeat(400)),
                ("b.py".to_owned(), "     1\ty = 2\n".repeat(400)),
            ],
        };
        let mut budget = 6_000;
        let mut rounds = 0;
        loop {
            let shown = named.within(budget);
            assert!(
                shown.code.len() <= budget,
                "{} > {budget}",
                shown.code.len()
            );
            if shown.code.is_empty() {
                break;
            }
            budget = shown.code.len() / 2;
            rounds += 1;
            assert!(rounds < 20, "halving did not end");
        }
    }

    #[test]
    fn only_numbered_lines_are_code_and_a_path_is_said_as_code_whatever_it_holds() {
        assert!(is_numbered("     1\tx = 1\n"));
        assert!(is_numbered("(empty file)\n"));
        assert!(!is_numbered(
            "blob.bin is a binary file (12 bytes); not shown"
        ));
        assert!(!is_numbered(
            "a.py has 3 lines; there is nothing from line 9 on\n"
        ));
        assert_eq!(code_span("a.py"), "`a.py`");
        assert_eq!(code_span("a`b.py"), "``a`b.py``");
        assert_eq!(code_span("`a.py"), "`` `a.py ``");
    }
}
