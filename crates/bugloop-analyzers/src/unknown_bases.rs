//! A class that extends what a package exports (`React.Component`, TypeORM's `BaseEntity`,
//! Node's `EventEmitter` from a package) has no members for tsc when the package is not
//! installed, as in a checkout: every `this.setState` or `this.save` would be "does not exist on
//! type". Those are dropped, where the file imports the base from a package tsc says it cannot
//! find; what a class declares itself, or inherits from the project's code, is still checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::hit::Hit;

/// A file read for its imports and classes is at most this large.
const MAX_READ: u64 = 4 << 20;

/// `hits` without TS2339 on a class that extends a name imported from a package tsc could not
/// find.
pub(crate) fn without_unknown_base_members(hits: &mut Vec<Hit>, root: &Path) {
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for hit in hits.iter().filter(|hit| hit.rule == "TS2307") {
        if let Some(package) = missing_package(&hit.message) {
            missing
                .entry(hit.file.clone())
                .or_default()
                .insert(package.to_owned());
        }
    }
    let mut classes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, packages) in &missing {
        let Some(text) = crate::tree::read_at_most(root, file, MAX_READ) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let imported = imported_from(&text, packages);
        classes.insert(file.clone(), extending(&text, &imported));
    }
    hits.retain(|hit| {
        let Some(of) = classes.get(&hit.file) else {
            return true;
        };
        hit.rule != "TS2339" || !of.iter().any(|class| on_type(&hit.message, class))
    });
}

/// The package of `Cannot find module 'react' or its ...`: a name that is not a path.
fn missing_package(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Cannot find module '")?;
    let name = &rest[..rest.find('\'')?];
    (!name.starts_with('.') && !name.starts_with('/')).then_some(name)
}

/// Every name an `import ... from '<package>'` of `packages` binds (default, named, namespace).
fn imported_from(text: &str, packages: &BTreeSet<String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for package in packages {
        for quote in ['\'', '"'] {
            let from = format!("from {quote}{package}{quote}");
            let mut searched = 0;
            while let Some(at) = text[searched..].find(&from).map(|at| at + searched) {
                searched = at + from.len();
                let Some(start) = text[..at].rfind("import") else {
                    continue;
                };
                let clause = &text[start + "import".len()..at];
                names.extend(
                    clause
                        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                        .filter(|word| !word.is_empty() && !matches!(*word, "as" | "type"))
                        .map(str::to_owned),
                );
            }
        }
    }
    names
}

/// The classes of `text` that extend one of `imported` (`extends Base`, `extends React.Component`).
fn extending(text: &str, imported: &BTreeSet<String>) -> BTreeSet<String> {
    let mut classes = BTreeSet::new();
    let identifier = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect()
    };
    let mut searched = 0;
    while let Some(at) = text[searched..].find("class ").map(|at| at + searched) {
        searched = at + "class ".len();
        let name = identifier(text[searched..].trim_start());
        if name.is_empty() {
            continue;
        }
        // The declaration's head, up to its body.
        let head_end = text[searched..]
            .find('{')
            .map_or(text.len(), |end| end + searched);
        let head = &text[searched..head_end];
        let Some(base) = head
            .split_once(" extends ")
            .map(|(_, base)| base.trim_start())
        else {
            continue;
        };
        if imported.contains(&identifier(base)) {
            classes.insert(name);
        }
    }
    classes
}

/// Whether tsc's message is about a member of `class`'s instances or of the class itself.
fn on_type(message: &str, class: &str) -> bool {
    message.ends_with(&format!("on type '{class}'."))
        || message.ends_with(&format!("on type 'typeof {class}'."))
        || message.contains(&format!("on type '{class}<"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts2339(file: &str, class: &str, member: &str) -> Hit {
        Hit::at(
            "TS2339",
            crate::hit::Level::Error,
            (file, 9),
            format!("Property '{member}' does not exist on type '{class}'."),
        )
    }

    #[test]
    fn members_of_a_class_extending_a_missing_package_are_not_said() {
        let tree = crate::tree::test_tree(&[(
            "r.tsx",
            "import React from \"react\";\nimport {\n  BaseEntity,\n  Entity,\n} from 'typeorm';\nimport { Local } from \"./local\";\n\n\
             export class Hello extends React.Component<Props> {}\nexport class User extends BaseEntity {}\nexport class Mine extends Local {}\nclass Plain {}\n",
        )]);
        let missing = |package: &str| {
            Hit::at(
                "TS2307",
                crate::hit::Level::Error,
                ("r.tsx", 1),
                format!("Cannot find module '{package}' or its corresponding type declarations."),
            )
        };
        let mut hits = vec![
            missing("react"),
            missing("typeorm"),
            ts2339("r.tsx", "Hello", "setState"),
            ts2339("r.tsx", "User", "save"),
            ts2339("r.tsx", "Mine", "nope"),
            ts2339("r.tsx", "Plain", "nope"),
        ];
        without_unknown_base_members(&mut hits, tree.path());
        let kept: Vec<(&str, &str)> = hits
            .iter()
            .map(|h| (h.rule.as_str(), h.message.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "TS2307",
                    "Cannot find module 'react' or its corresponding type declarations."
                ),
                (
                    "TS2307",
                    "Cannot find module 'typeorm' or its corresponding type declarations."
                ),
                ("TS2339", "Property 'nope' does not exist on type 'Mine'."),
                ("TS2339", "Property 'nope' does not exist on type 'Plain'."),
            ]
        );
    }
}
