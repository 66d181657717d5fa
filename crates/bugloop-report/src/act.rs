//! What acting on a comment or a command did (`bugloop fix`, `do`, `comment`): the action chosen,
//! how it was chosen, the Build run and its landing, the answer, and the findings resolved.

use serde::Serialize;

use crate::build::{BuildResult, Landing};

/// What a comment asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action", content = "ids")]
pub enum Intent {
    /// Fix these open findings.
    Fix(Vec<String>),
    /// Make another change.
    Do,
    /// Answer (a question, or anything that is not a request).
    Think,
    /// Nothing to do (approval, thanks).
    Acknowledge,
}

/// How the action was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum ChosenBy {
    /// A command named it (`bugloop fix`, `bugloop do`).
    Command,
    /// The comment was recognised without a model.
    Rules,
    /// The model classified the comment.
    Model,
}

impl ChosenBy {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What an action did, for the caller to show.
#[derive(Debug, Clone, Serialize)]
pub struct ActReport {
    pub action: Intent,
    pub chosen_by: ChosenBy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// The answer (think) or the summary posted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub resolved: Vec<String>,
    /// One line for people.
    pub message: String,
}

impl ActReport {
    /// A report of `action` that built nothing, landed nothing and resolved nothing: `message`
    /// says what came of it.
    pub fn nothing_built(action: Intent, chosen_by: ChosenBy, message: impl Into<String>) -> Self {
        ActReport {
            action,
            chosen_by,
            build: None,
            landing: None,
            answer: None,
            resolved: Vec::new(),
            message: message.into(),
        }
    }
}
