//! A task: what it asks of the model (prompts, tools, stages, an answer's shape, limits), and
//! how its stages are asked.

use std::sync::Arc;

use bugloop_llm::{JsonSchemaFormat, Message};
use bugloop_tools::{Tool, Toolset};

/// What a task asks of the model.
pub struct Task {
    /// Short name for transcripts and run ids (`review`, `fix`, ...).
    pub name: String,
    pub system: String,
    pub messages: Vec<Message>,
    /// The tools it may use; `None` for a task without tools.
    pub toolset: Option<Toolset>,
    /// Tools of the task itself (such as its submit tool).
    pub extra_tools: Vec<Box<dyn Tool>>,
    /// Calling this tool ends the task (or the current stage); its arguments are the result.
    pub submit_tool: Option<String>,
    /// Further stages of the same session (the reviewer's passes): each time the submit tool is
    /// called, the next of these is sent as a user message and the session goes on with all its
    /// context. The task ends with the submission after the last one.
    pub follow_ups: Vec<String>,
    /// How the stages are asked.
    pub stages: Stages,
    /// With [`Stages::UpFrontThenAtOnce`]: the conversation a stage left is asked in, in place
    /// of a copy of the one so far, for a stage that needs less than all of it.
    pub open_stage: Option<OpenStage>,
    /// The answer's schema when the task runs without tools (or the model cannot call them).
    pub answer_schema: Option<JsonSchemaFormat>,
    pub max_turns: u32,
    /// Output cap per model call.
    pub max_tokens: Option<u32>,
}

impl Task {
    /// A task of one message and nothing else: no tools, one stage, one turn, no output cap.
    /// A caller states what its task has beyond that.
    pub fn new(name: impl Into<String>, system: impl Into<String>, message: Message) -> Task {
        Task {
            name: name.into(),
            system: system.into(),
            messages: vec![message],
            toolset: None,
            extra_tools: Vec::new(),
            submit_tool: None,
            follow_ups: Vec::new(),
            stages: Stages::OneByOne,
            open_stage: None,
            answer_schema: None,
            max_turns: 1,
            max_tokens: None,
        }
    }
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name)
            .field("toolset", &self.toolset)
            .finish_non_exhaustive()
    }
}

/// Given a stage's number (the first message's stage is 1, each follow-up the next), the
/// messages to ask it from in a conversation of its own, or `None` to ask it in a copy of the
/// conversation so far. Called when the stages left are asked at once, so it sees what the
/// stages before reported.
pub type OpenStage = Arc<dyn Fn(usize) -> Option<Vec<Message>> + Send + Sync>;

/// How a task's stages ([`Task::follow_ups`]) are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stages {
    /// One after another: each follow-up is sent after the previous stage's submission.
    #[default]
    OneByOne,
    /// The first message already holds every stage's instructions: the model may finish several
    /// stages in one turn (a submission each), and a follow-up is sent only when a turn ends
    /// with stages left, for the next of them.
    UpFront,
    /// As [`Stages::UpFront`], and the stages left when a turn ends do not depend on each
    /// other: each is asked at the same time, in a copy of the conversation of its own, so a
    /// model that answers one stage per turn costs two round trips, not one per stage.
    UpFrontThenAtOnce,
}
