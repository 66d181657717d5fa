//! Where a configuration key is in the file that set it: the line and column an error names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::{ALIASES, ConfigError, KeyPath, Origin, SourceText, ValueSource};

/// The 1-based line of a key in YAML text (else of its nearest enclosing key there) and that
/// line's text.
pub(super) fn line_of(text: &str, key: &[String]) -> (Option<usize>, Option<String>) {
    match locate_leaf(text, key) {
        Some((line, _)) => (
            Some(line),
            text.lines().nth(line - 1).map(|l| l.trim_end().to_owned()),
        ),
        None => (None, None),
    }
}

/// Points a validation error (`Origin::Value`, a key path like `fix.verify_commands[1]`) at the
/// file, line and column, or the variable, its value came from.
pub(super) fn locate_error(
    error: ConfigError,
    sources_of: &BTreeMap<KeyPath, ValueSource>,
    texts: &[(&SourceText, ValueSource)],
) -> ConfigError {
    let ConfigError::Invalid {
        origin: Origin::Value,
        path,
        message,
    } = error
    else {
        return error;
    };
    let (dotted, index) = match path.strip_suffix(']').and_then(|p| p.rsplit_once('[')) {
        Some((key, index)) => (key.to_owned(), index.parse::<usize>().ok()),
        None => (path.clone(), None),
    };
    // The key's own path (its elements), and the source of its value.
    let found = sources_of.iter().find_map(|(leaf, source)| {
        (1..=leaf.0.len())
            .map(|n| &leaf.0[..n])
            .find(|prefix| prefix.join(".") == dotted)
            .map(|prefix| (prefix.to_vec(), source))
    });
    let origin = match found {
        Some((_, ValueSource::Env(var))) => Origin::Env { var: var.clone() },
        Some((key, source)) => texts
            .iter()
            .find(|(_, of)| of == source)
            .and_then(|(text, _)| {
                let (line, column) = locate(&text.text, &key, index)?;
                Some(Origin::File {
                    path: PathBuf::from(&text.label),
                    line,
                    column,
                })
            })
            .unwrap_or(Origin::Value),
        None => Origin::Value,
    };
    ConfigError::Invalid {
        origin,
        path,
        message,
    }
}

/// The line and column of a key in YAML text, else of the nearest enclosing key that is there.
pub(super) fn locate_leaf(text: &str, key: &[String]) -> Option<(usize, usize)> {
    (1..=key.len())
        .rev()
        .find_map(|n| locate(text, &key[..n], None))
}

/// The 1-based line and column of a key path in YAML text (aliases included), and of its
/// `index`-th list item when given and written one per line; found by walking its keys in order
/// (good enough for pointing at a value).
pub(crate) fn locate(text: &str, key: &[String], index: Option<usize>) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = None;
    let mut from = 0;
    let mut min_indent = 0;
    for name in key {
        let names: Vec<&str> = std::iter::once(name.as_str())
            .chain(
                ALIASES
                    .iter()
                    .filter(|(_, canonical)| canonical == name)
                    .map(|(alias, _)| *alias),
            )
            .collect();
        let (i, indent) = lines.iter().enumerate().skip(from).find_map(|(i, line)| {
            let indent = line.len() - line.trim_start().len();
            let body = line.trim_start().trim_start_matches("- ");
            let matches = names.iter().any(|name| {
                body.starts_with(&format!("{name}:"))
                    || body.starts_with(&format!("\"{name}\":"))
                    || body.starts_with(&format!("'{name}':"))
            });
            (matches && indent >= min_indent).then_some((i, indent))
        })?;
        found = Some((i + 1, indent + 1));
        from = i + 1;
        min_indent = indent + 1;
    }
    let Some(index) = index else {
        return found;
    };
    let (line, column) = found?;
    // Items one per line (`- x`) after the key, at the indentation of the first one.
    let mut items = lines
        .iter()
        .enumerate()
        .skip(line)
        .take_while(|(_, l)| {
            let indent = l.len() - l.trim_start().len();
            l.trim().is_empty() || l.trim_start().starts_with('#') || indent + 1 >= column
        })
        .filter(|(_, l)| l.trim_start().starts_with('-'));
    let Some((first, first_line)) = items.next() else {
        return found;
    };
    let item_indent = first_line.len() - first_line.trim_start().len();
    std::iter::once((first, first_line))
        .chain(items)
        .filter(|(_, l)| l.len() - l.trim_start().len() == item_indent)
        .nth(index)
        .map(|(i, _)| (i + 1, item_indent + 1))
        .or(found)
}
