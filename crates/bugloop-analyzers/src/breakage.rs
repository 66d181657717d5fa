//! A change that breaks a file it does not edit: a function renamed, a parameter added, an
//! export deleted, while a caller elsewhere still uses the old one. The type checker (tsc, ty)
//! is run on the tree's files that import the change ([`crate::importers`]) in a copy of the
//! tree at head, and, where it reports anything there that counts, again in the same copy with
//! the change's files put back as the base commit has them. What it reports at head and not at
//! the base is what the change broke: the code's old debt in those files is never a finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use bugloop_diff::ChangeKind;

use crate::copy::{Copied, copy_tree, inside, write_file};
use crate::hit::{Candidate, Hit};
use crate::importers::{BaseFile, BaseTree, ImportersChecked, Language, importers_of_change};
use crate::run::{Request, execute, plan};
use crate::scope::ChangedLines;
use crate::weight::Weight;
use crate::{BuiltIn, Choice};

/// Places named after the first in a finding's note.
const MAX_PLACES_NAMED: usize = 5;

/// The type checker `tool` on the files importing the change: what it says is broken there, as
/// candidates (one a diagnostic, its other places named in its note), and what was checked.
/// `None` where it does not apply: not a type checker, no base to compare with, no importer.
pub(crate) async fn check_importers<'t>(
    request: &Request<'_>,
    tool: &'t BuiltIn,
    choice: &Choice,
    config_dir: &Path,
) -> Option<(&'t str, (ImportersChecked, Vec<Candidate>))> {
    let language = Language::checked_by(tool.name)?;
    let base = request.base.filter(|_| !request.alone)?;
    // Reading the tree is file work: off the task that also waits on the model and the tools.
    let (workspace, diff) = (request.workspace.to_path_buf(), request.diff.clone());
    let at_base = manifests_at_base(request.diff, base);
    let found = tokio::task::spawn_blocking(move || {
        importers_of_change(&workspace, &diff, language, &at_base)
    })
    .await
    .unwrap_or_default();
    // Some importers may not have been found: not "nothing imports the change", which would
    // resolve its findings in the files it broke.
    let unread = found.incomplete.then(|| {
        "the tree has more source files than are read for their imports: some importers may \
         not have been found"
            .to_owned()
    });
    if found.files.is_empty() {
        let checked = ImportersChecked {
            not_checked: Some(unread?),
            ..ImportersChecked::default()
        };
        return Some((tool.name, (checked, Vec::new())));
    }
    let files = found.files;
    let mut checked = ImportersChecked {
        files: files.clone(),
        left_out: found.total - files.len(),
        ..ImportersChecked::default()
    };
    match broken(
        request,
        base,
        (choice, Copied::Read(language)),
        &files,
        config_dir,
    )
    .await
    {
        Ok(hits) => {
            checked.broken = hits.len();
            Some((
                tool.name,
                (checked, candidates(request.workspace, tool.name, hits)),
            ))
        }
        Err(reason) => {
            checked.not_checked = Some(reason);
            Some((tool.name, (checked, Vec::new())))
        }
    }
}

/// The base's versions of what declares a JavaScript workspace that the change edits (the
/// root `package.json` and `pnpm-workspace.yaml`, a package's `package.json`): `None` for one
/// the base does not have, or not read.
fn manifests_at_base(
    diff: &bugloop_diff::Diff,
    base: &dyn BaseTree,
) -> BTreeMap<String, Option<Vec<u8>>> {
    let declares = |path: &str| {
        path == "package.json" || path == "pnpm-workspace.yaml" || path.ends_with("/package.json")
    };
    let mut at_base = BTreeMap::new();
    for old in diff.files.iter().filter_map(|f| f.old_path.as_deref()) {
        if declares(old) {
            let content = match base.file(old, 2 << 20) {
                BaseFile::Content(content) => Some(content),
                BaseFile::Larger | BaseFile::Unreadable => None,
            };
            at_base.insert(old.to_owned(), content);
        }
    }
    // One the change adds was not at the base (a file that became a link is the base's still).
    for new in diff.files.iter().filter_map(|f| f.new_path.as_deref()) {
        if declares(new) {
            at_base.entry(new.to_owned()).or_insert(None);
        }
    }
    at_base
}

/// A compiler's checker (`tool` checks a whole project) whose run on the change reported a
/// compile error off the change's lines: the errors new since the base, as candidates, and
/// what was checked. `None` where there is no base to compare with.
pub(crate) async fn check_project<'t>(
    request: &Request<'_>,
    tool: &'t BuiltIn,
    choice: &Choice,
    files: &[String],
    config_dir: &Path,
) -> Option<(&'t str, (ImportersChecked, Vec<Candidate>))> {
    let base = request.base.filter(|_| !request.alone)?;
    let copied = Copied::Project {
        skipped: if tool.name == "clippy" {
            &["target"]
        } else {
            &[]
        },
    };
    let mut checked = ImportersChecked {
        whole_project: true,
        ..ImportersChecked::default()
    };
    if tool.name == "clippy"
        && let Some(place) = crate::compilers::rust_places_moved(request.diff)
    {
        checked.not_checked = Some(format!(
            "the change adds include!, #[path] or a diagnostic attribute ({place}), with which \
             its own compile error can be shown in another file, in words of its choosing"
        ));
        return Some((tool.name, (checked, Vec::new())));
    }
    let candidates = match broken(request, base, (choice, copied), files, config_dir).await {
        Ok(hits) => {
            checked.broken = hits.len();
            candidates(request.workspace, tool.name, hits)
        }
        Err(reason) => {
            checked.not_checked = Some(reason);
            Vec::new()
        }
    };
    Some((tool.name, (checked, candidates)))
}

/// Which of the checker's diagnostics count: a type checker's at warning and above; a
/// compiler's compile errors only (a lint in code the change does not edit is the code's own,
/// and would have the project compiled twice more on every review).
fn counts(copied: Copied, weight: Weight) -> bool {
    match copied {
        Copied::Project { .. } => weight == Weight::Critical,
        Copied::Read(_) | Copied::Scripts => weight.score() >= Weight::Warning.score(),
    }
}

/// The diagnostics that count in `files` at head, off the lines the change adds (those are the
/// tool's own run's), and that the base does not have, weighed.
async fn broken(
    request: &Request<'_>,
    base: &dyn BaseTree,
    (choice, copied): (&Choice, Copied),
    files: &[String],
    config_dir: &Path,
) -> Result<Vec<Weighed>, String> {
    // A tool that cannot run here (not installed) is said before the tree is copied for it.
    plan(request, choice, files, config_dir).map_err(|f| f.reason())?;
    let copy = bugloop_sandbox::owner::temp_dir("importers")
        .map_err(|e| format!("cannot copy the tree: {e}"))?;
    let view = copy.path().join("tree");
    let (workspace, into) = (request.workspace.to_path_buf(), view.clone());
    let too_large = tokio::task::spawn_blocking(move || copy_tree(&workspace, &into, copied))
        .await
        .map_err(|e| format!("cannot copy the tree: {e}"))??;
    // The project's TypeScript configuration as the base has it, in both runs: one the change
    // edits is not read (it could loosen the checks), and without the base's the project's
    // `paths` would be lost and its aliased importers go unchecked.
    let configured = base_configuration(&view, request.diff, base)?;
    let request = &Request {
        diff: &configured,
        ..request.clone()
    };
    let added = ChangedLines::of(request.diff);
    let counted: Vec<Weighed> = run_in(request, &view, choice, files, config_dir)
        .await?
        .into_iter()
        .filter(|(hit, _)| added.first_added(&hit.file, hit.line, hit.line).is_none())
        .filter_map(|(hit, judge)| {
            let (weight, category) = judge(&hit).or_else(|| module_lost(&hit))?;
            counts(copied, weight).then_some((hit, weight, category))
        })
        .collect();
    if counted.is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = Lines::default();
    let at_head: Vec<Key> = counted
        .iter()
        .map(|(hit, _, _)| lines.key(&view, &hit.file, hit))
        .collect();
    to_base(&view, request.diff, base, (copied, &too_large))?;
    let mut lines = Lines::default();
    let base_files: Vec<String> = files
        .iter()
        .filter_map(|f| at_base(request.diff, f))
        .collect();
    let mut at_base: BTreeMap<Key, usize> = BTreeMap::new();
    for (hit, _) in run_in(request, &view, choice, &base_files, config_dir).await? {
        let Some(head_name) = at_head_path(request.diff, &hit.file) else {
            continue;
        };
        let mut key = lines.key(&view, &hit.file, &hit);
        key.0 = head_name;
        *at_base.entry(key).or_default() += 1;
    }
    let shown = format!("{}/", view.display());
    Ok(counted
        .into_iter()
        .zip(at_head)
        .filter(|(_, key)| match at_base.get_mut(key) {
            // As many of it as the base had are the base's (a second one is new).
            Some(left) if *left > 0 => {
                *left -= 1;
                false
            }
            _ => true,
        })
        .map(|((mut hit, weight, category), _)| {
            hit.message = hit.message.replace(&shown, "");
            (hit, weight, category)
        })
        .collect())
}

/// A hit that counts, with its weight.
type Weighed = (Hit, Weight, bugloop_domain::finding::Category);

/// Puts the base's versions of the TypeScript configuration files the change edits into the
/// copy (taking out one it adds), and returns the change without them: what the copy's runs are
/// told the change edits.
fn base_configuration(
    view: &Path,
    diff: &bugloop_diff::Diff,
    base: &dyn BaseTree,
) -> Result<bugloop_diff::Diff, String> {
    let is_configuration = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        (name.starts_with("tsconfig") || name.starts_with("jsconfig")) && name.ends_with(".json")
    };
    let mut rest = diff.clone();
    rest.files.retain(|file| {
        ![&file.old_path, &file.new_path]
            .into_iter()
            .flatten()
            .any(|path| is_configuration(path))
    });
    let edited = diff.files.iter().filter(|file| !rest.files.contains(file));
    for file in edited {
        if let Some(new) = file.new_path.as_deref().and_then(|p| inside(view, p)) {
            let _absent_is_what_is_wanted = std::fs::remove_file(new);
        }
        let Some(old) = file.old_path.as_deref() else {
            continue;
        };
        if let BaseFile::Content(content) =
            base.file(old, Copied::Read(Language::TypeScript).max_file())
        {
            let name = bugloop_domain::paths::text_name(old)
                .ok_or_else(|| format!("cannot name {old} in a copy of the tree"))?;
            write_file(view, &name, &content)?;
        }
    }
    Ok(rest)
}

/// What makes a diagnostic the same at head and at the base: its file (by its name at head),
/// the text of its line (lines move when the file is edited elsewhere) and its rule. Not its
/// message, which may print a type the change widened harmlessly (a `tls` field added to an
/// object the line already misused).
type Key = (String, String, String);

/// The lines of the copy's files, read once each.
#[derive(Default)]
struct Lines(BTreeMap<String, Vec<String>>);

impl Lines {
    fn key(&mut self, view: &Path, file: &str, hit: &Hit) -> Key {
        let lines = self.0.entry(file.to_owned()).or_insert_with(|| {
            inside(view, file)
                .and_then(|path| std::fs::read(path).ok())
                .map(|text| {
                    String::from_utf8_lossy(&text)
                        .lines()
                        .map(|line| line.trim().to_owned())
                        .collect()
                })
                .unwrap_or_default()
        });
        let text = usize::try_from(hit.line)
            .ok()
            .and_then(|line| lines.get(line.checked_sub(1)?))
            .cloned()
            .unwrap_or_default();
        (file.to_owned(), text, hit.rule.clone())
    }
}

/// The name at the base of a file named `path` at head: its old name where the change renamed
/// it; none where the change added it.
fn at_base(diff: &bugloop_diff::Diff, path: &str) -> Option<String> {
    match diff
        .files
        .iter()
        .find(|f| f.new_path.as_deref() == Some(path))
    {
        Some(file) if matches!(file.change, ChangeKind::Added | ChangeKind::Copied) => None,
        Some(file) => file.old_path.clone(),
        None => Some(path.to_owned()),
    }
}

/// The name at head of a file named `path` at the base; none where the change deleted it.
fn at_head_path(diff: &bugloop_diff::Diff, path: &str) -> Option<String> {
    match diff
        .files
        .iter()
        .find(|f| f.old_path.as_deref() == Some(path))
    {
        Some(file) if file.change == ChangeKind::Copied => Some(path.to_owned()),
        Some(file) => file.new_path.clone(),
        None => Some(path.to_owned()),
    }
}

/// A module an importer names that is not there: for a review of the change's own files, most
/// often a package the checkout has not installed, and passed over; here, where the base had
/// it, the change renamed or deleted it.
fn module_lost(hit: &Hit) -> Option<(Weight, bugloop_domain::finding::Category)> {
    matches!(hit.rule.as_str(), "TS2307" | "import-not-found")
        .then_some((Weight::Error, bugloop_domain::finding::Category::Logic))
}

type Judged = Vec<(
    Hit,
    fn(&Hit) -> Option<(Weight, bugloop_domain::finding::Category)>,
)>;

/// The tool on `files` in the tree at `view`, in the sandbox as every analyzer runs.
async fn run_in(
    request: &Request<'_>,
    view: &Path,
    choice: &Choice,
    files: &[String],
    config_dir: &Path,
) -> Result<Judged, String> {
    let mut sandbox = request.sandbox.clone();
    sandbox.workspace = view.to_path_buf();
    sandbox.workspace_baseline = std::sync::Arc::default();
    let in_view = Request {
        workspace: view,
        sandbox,
        ..request.clone()
    };
    // One run a project, or a TypeScript configuration, as on the change's own files.
    let mut judged = Vec::new();
    for batch in crate::input::batches(choice, files, view) {
        let plan = plan(&in_view, choice, &batch, config_dir).map_err(|f| f.reason())?;
        let (mut hits, judge) = execute(&in_view, plan).await.map_err(|f| f.reason())?;
        crate::hit::said_once(&mut hits);
        judged.extend(hits.into_iter().map(|hit| (hit, judge)));
    }
    Ok(judged)
}

/// Puts the change's files in `view` back as the base has them: what the change added or
/// renamed to is taken out, what it edited, deleted or renamed from is the base's.
fn to_base(
    view: &Path,
    diff: &bugloop_diff::Diff,
    base: &dyn BaseTree,
    (copied, too_large): (Copied, &BTreeSet<String>),
) -> Result<(), String> {
    // Every file the change wrote is taken out before any of the base's is put back: a file
    // the change made a link is two entries of the diff, deleted and added, at one path.
    for new in diff.files.iter().filter_map(|f| f.new_path.as_deref()) {
        if let Some(new) = inside(view, new) {
            match std::fs::remove_file(&new) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot put the base back: {e}"));
                }
                _ => {}
            }
        }
    }
    for file in &diff.files {
        let Some(old) = file.old_path.as_deref().filter(|p| copied.holds(p)) else {
            continue;
        };
        // Left out of the copy at head for its size (a generated module that grew): left out
        // at the base too, or its importers would find it only there. Not a package's manifest:
        // one the change grew past what is read no longer declares its package at head, which
        // its importers then do not find (a 10 MB `package.json` hid a break).
        let manifest = old == "package.json" || old.ends_with("/package.json");
        if !manifest
            && file
                .new_path
                .as_deref()
                .is_some_and(|new| too_large.contains(new))
        {
            continue;
        }
        // A file larger than the copy takes is in neither copy, at head or at the base.
        let content = match base.file(old, copied.max_file()) {
            BaseFile::Content(content) => content,
            BaseFile::Larger => continue,
            BaseFile::Unreadable => return Err(format!("cannot read {old} as the base has it")),
        };
        let name = bugloop_domain::paths::text_name(old)
            .ok_or_else(|| format!("cannot name {old} in a copy of the tree"))?;
        write_file(view, &name, &content)?;
    }
    Ok(())
}

/// A diagnostic's message without the module paths it quotes, which differ from importer to
/// importer for one cause: a TypeScript specifier (`'"./user"'`, `'"../user"'`) is left out, a
/// Python module is named by its last part (`orders.services`, `...services`).
fn cause(message: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(start) = rest.find(['\'', '"', '`']) {
        let quote = &rest[start..=start];
        let Some(end) = rest[start + 1..].find(quote).map(|e| e + start + 1) else {
            break;
        };
        let quoted = &rest[start + 1..end];
        out.push_str(&rest[..start]);
        let path = quoted.trim_matches(['"', '\'', '`']);
        let dotted = quote == "`"
            && path.contains('.')
            && path
                .chars()
                .all(|c| c == '.' || c == '_' || c.is_alphanumeric());
        if dotted {
            out.push_str(path.rsplit('.').next().unwrap_or(path));
        } else if path.contains('/') || path.starts_with('.') {
            out.push('…');
        } else {
            out.push_str(&rest[start..=end]);
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// One candidate a diagnostic: the first place it is at, its others named in its note.
fn candidates(workspace: &Path, tool: &str, mut hits: Vec<Weighed>) -> Vec<Candidate> {
    // In the order of their places, so a cause's finding stays where it was while its places
    // stay broken.
    hits.sort_by(|(a, _, _), (b, _, _)| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let mut found: Vec<Candidate> = Vec::new();
    for (hit, weight, category) in hits {
        // By its message alone: ty names one missing name by two rules (`missing-attribute`
        // where the module is imported, `missing-module-member` where the name is).
        if let Some(first) = found
            .iter_mut()
            .find(|c| cause(&c.hit.message) == cause(&hit.message))
        {
            let place = (hit.file, hit.line);
            if place != (first.hit.file.clone(), first.hit.line) && !first.also_at.contains(&place)
            {
                first.also_at.push(place);
            }
            continue;
        }
        let Some(evidence) = crate::candidate::evidence_at(workspace, &hit.file, hit.line) else {
            continue;
        };
        let mut candidate = Candidate::said(tool, hit, (weight, category), evidence);
        candidate.unedited = true;
        found.push(candidate);
    }
    for candidate in &mut found {
        if candidate.also_at.is_empty() {
            continue;
        }
        let named: Vec<String> = candidate
            .also_at
            .iter()
            .take(MAX_PLACES_NAMED)
            .map(|(file, line)| format!("{file}:{line}"))
            .collect();
        let more = candidate.also_at.len().saturating_sub(MAX_PLACES_NAMED);
        let more = if more > 0 {
            format!(" and {more} more places")
        } else {
            String::new()
        };
        candidate.add_note(format!(
            "{} reports the same at {}{more}.",
            candidate.tool,
            named.join(", ")
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cause_is_one_message_whatever_path_names_its_module() {
        assert_eq!(
            cause("Module '\"./user\"' has no exported member 'getUser'."),
            cause("Module '\"../user\"' has no exported member 'getUser'.")
        );
        assert_ne!(
            cause("Module '\"./user\"' has no exported member 'getUser'."),
            cause("Module '\"./user\"' has no exported member 'getUsers'.")
        );
        // A Python module however it is named, by any rule of ty's.
        assert_eq!(
            cause("Module `.prices` has no member `discount`"),
            cause("Module `shop.prices` has no member `discount`")
        );
        assert_eq!(
            cause("Cannot resolve imported module `...services`"),
            cause("Cannot resolve imported module `orders.services`")
        );
        assert_ne!(
            cause("Module `shop.prices` has no member `discount`"),
            cause("Module `shop.prices` has no member `discounts`")
        );
    }

    #[test]
    fn one_missing_name_is_one_finding_whichever_rule_ty_names_it_by() {
        let tree = crate::tree::test_tree(&[
            ("views.py", "from orders.services import total\n"),
            (
                "admin.py",
                "from orders import services\n\nx = services.total(1)\n",
            ),
            ("jobs.py", "from ..services import total\n"),
        ]);
        let hit = |file: &str, line: u32, rule: &str, module: &str| {
            (
                Hit::at(
                    rule,
                    crate::hit::Level::Error,
                    (file, line),
                    format!("Module `{module}` has no member `total`"),
                ),
                Weight::Error,
                bugloop_domain::finding::Category::Logic,
            )
        };
        let found = candidates(
            tree.path(),
            "ty",
            vec![
                hit("views.py", 1, "missing-module-member", "orders.services"),
                hit("admin.py", 3, "missing-attribute", "orders.services"),
                hit("jobs.py", 1, "missing-module-member", "..services"),
            ],
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            (found[0].hit.file.as_str(), found[0].also_at.len()),
            ("admin.py", 2)
        );
    }
}
