//! What a change is, as git and the forges describe it: the conversation it belongs to, its
//! files, which change to select locally and where its new side is.

use serde::Serialize;

/// The conversation a change's comments belong to (a pull request, an issue, a local branch).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ChangeKey(pub String);

impl std::fmt::Display for ChangeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What happened to a file in a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
    /// Type changes and anything else the forge reports.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedFile {
    pub path: String,
    /// The path before a rename or copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_path: Option<String>,
    pub status: FileStatus,
}

/// Which change to review.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Selection {
    /// The current branch against its merge base with the default branch.
    #[default]
    Branch,
    /// `base..head` (merge base of the two); either may be left to its default.
    Range {
        base: Option<String>,
        head: Option<String>,
    },
    /// What is staged, against HEAD.
    Staged,
    /// Every uncommitted change (staged, unstaged and untracked files), against HEAD.
    Working,
}

/// Where the change's new side is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "commit")]
pub enum HeadState {
    Commit(String),
    /// The index (staged changes) on top of the current HEAD.
    Index,
    /// The working tree as it is.
    WorkingTree,
}

impl HeadState {
    /// How a review names it: the commit, or `index` / `working-tree`.
    pub fn name(&self) -> String {
        match self {
            HeadState::Commit(sha) => sha.clone(),
            HeadState::Index => "index".to_owned(),
            HeadState::WorkingTree => "working-tree".to_owned(),
        }
    }
}

/// A selected change.
#[derive(Debug, Clone, Serialize)]
pub struct SelectedChange {
    /// The conversation this change's findings belong to.
    pub key: ChangeKey,
    /// For humans: `feature against main (merge base 1a2b3c4)`.
    pub description: String,
    pub base: String,
    pub head: HeadState,
    /// HEAD's commit when the change is staged or in the working tree (`None` without commits).
    pub head_commit: Option<String>,
    #[serde(skip)]
    pub diff: Vec<u8>,
}
