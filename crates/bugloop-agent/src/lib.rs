//! bugloop's agent runtime. A [`Task`] (prompts, a toolset, an optional submit tool or answer
//! schema) runs as a turn loop: the model is asked, the tools it calls are executed in order and
//! their results fed back, until it answers, calls the submit tool, reaches the turn limit, or a
//! budget stops it. Models without tool calling get the task as one structured answer. Every run
//! writes a transcript.
//!
//! **Never:** panic, create task trees, commit, or talk to a forge: the loop that owns a task gives
//! it a `ToolContext` on a `TaskTree` and decides what happens to the result. Requests only ever
//! append within a conversation, and a stage opened in one of its own starts from the same system
//! prompt and tools, so providers' prefix caches apply.

mod task;
pub mod transcript;

pub use crate::task::{OpenStage, Stages, Task};

use std::path::PathBuf;
use std::sync::Arc;

use bugloop_llm::structured::{StructuredError, complete_json};
use bugloop_llm::{
    ChatRequest, ChatResponse, JsonSchemaFormat, LlmError, Message, Provider, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};
use bugloop_tools::{Registry, ToolContext, ToolError};

use crate::transcript::{Event, Transcript};

/// How a task ended when it ended well.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model answered in text.
    Answer(String),
    /// The model called the submit tool with these arguments.
    Submitted(serde_json::Value),
    /// The tool-less structured answer.
    Structured(serde_json::Value),
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the task did not finish within {0} turns")]
    TurnLimit(u32),
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error(transparent)]
    Structured(#[from] StructuredError),
    #[error("tool {tool} aborted the task: {message}")]
    ToolAbort { tool: String, message: String },
    #[error("the task needs tools or an answer schema; {0}")]
    Misconfigured(String),
}

impl AgentError {
    /// What may be published: a model error's kind and status ([`LlmError::public`]), never
    /// a provider's message or a configuration's details; the whole error is in the run's
    /// transcript.
    pub fn public(&self) -> String {
        match self {
            AgentError::Model(error) | AgentError::Structured(StructuredError::Llm(error)) => {
                error.public()
            }
            // bugloop's own words (a tool's refusal says why and what setting changes it).
            AgentError::TurnLimit(_) | AgentError::Structured(_) | AgentError::ToolAbort { .. } => {
                self.to_string()
            }
            AgentError::Misconfigured(_) => "the task was misconfigured".to_owned(),
        }
    }
}

/// The result of a run: how it ended, what it used, where its transcript is.
#[derive(Debug)]
pub struct Run {
    pub id: String,
    pub outcome: Result<Outcome, AgentError>,
    pub turns: u32,
    pub usage: Usage,
    pub transcript: PathBuf,
    /// Said when the structured answer was cut off and only its complete entries were kept.
    pub salvaged: Option<String>,
}

/// What one run is asked: the parts of its [`Task`] the turns read, borrowed.
struct Asked<'a> {
    system: &'a str,
    submit_tool: Option<&'a str>,
    follow_ups: &'a [String],
    stages: Stages,
    open_stage: Option<&'a OpenStage>,
    answer_schema: Option<&'a JsonSchemaFormat>,
    max_turns: u32,
    max_tokens: Option<u32>,
}

/// What a run accumulates while it goes; [`Run`] reports it at the end.
struct RunProgress {
    transcript: Transcript,
    usage: Usage,
    turns: u32,
    salvaged: Option<String>,
}

/// The conversation stage `number` (instructions `stage`) is asked in when the stages left are
/// asked at once, and how the transcript says it: its own, when the task opens one for it, else
/// a copy of the conversation so far with the stage's instructions.
fn stage_conversation(
    asked: &Asked<'_>,
    messages: &[Message],
    stage: String,
    number: usize,
) -> (Vec<Message>, String) {
    match asked.open_stage.and_then(|open| open(number)) {
        Some(opened) => {
            let shown: Vec<&str> = opened.iter().map(|m| m.content.as_str()).collect();
            let how = format!("in a conversation of its own: {}", shown.join("\n\n"));
            (opened, how)
        }
        None => {
            let mut copy = messages.to_vec();
            copy.push(Message::user(stage.clone()));
            (copy, stage)
        }
    }
}

/// What a call of the submit tool came to.
enum Submission {
    /// The task's result: the submission of its only stage, or of its last (with the call's id).
    Final(serde_json::Value, String),
    /// A stage's submission was recorded; these are the next stage's instructions.
    NextStage(String),
    /// The submission was refused; the model was told why.
    Refused,
}

/// One turn's calls are run against this: the tools, the turn's number, and where each call
/// and its result are written.
struct Turn<'a> {
    registry: &'a Registry,
    number: u32,
    transcript: &'a mut Transcript,
    messages: &'a mut Vec<Message>,
}

impl Turn<'_> {
    /// Writes `call` and its result to the transcript; the call's id.
    fn record(&mut self, call: ToolCall, ok: bool, result: String) -> String {
        record_call(self.transcript, self.number, call, ok, result)
    }

    /// The task's end by a tool's abort, written to the transcript.
    fn aborted(&mut self, call: ToolCall, message: String) -> AgentError {
        aborted(self.transcript, self.number, call, message)
    }

    /// Gives the model the result of its call `id`.
    fn answer(&mut self, id: String, text: impl Into<String>) {
        self.messages.push(Message::tool_result(id, text));
    }
}

/// What a turn's calls came to.
enum TurnEnd {
    /// The task's result.
    Final(serde_json::Value),
    /// The run goes on: with the next stage's instructions when a stage was submitted, and with
    /// a last submission held back when one was.
    Next {
        stage: Option<String>,
        held: Option<serde_json::Value>,
    },
}

/// What a last submission's call is answered when calls before it in its turn were refused:
/// the model would otherwise never see their errors (a finding refused for its line would be
/// lost without a trace). Submitting again, or answering without a call, ends the task.
fn held_back(refused: usize) -> String {
    format!(
        "not final yet: {refused} call(s) of this turn were refused (their errors are above). \
         Make them again corrected, then submit again; or submit again as it is."
    )
}

/// The tools as the model is told of them.
fn tool_definitions(registry: &Registry) -> Vec<ToolDefinition> {
    registry
        .definitions()
        .into_iter()
        .map(|(name, description, parameters)| ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters,
        })
        .collect()
}

/// Runs tasks with one model and one workspace.
pub struct Agent {
    provider: Arc<dyn Provider>,
    context: ToolContext,
    runs_dir: PathBuf,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field("runs_dir", &self.runs_dir)
            .finish()
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn run_id(task: &str) -> String {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S");
    let safe: String = task
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{stamp}-{safe}-{:04x}", fastrand::u16(..))
}

/// A tool that aborted the task: the call is recorded as failed, and the task ends with the
/// tool's reason.
fn aborted(transcript: &mut Transcript, turn: u32, call: ToolCall, message: String) -> AgentError {
    let tool = call.name.clone();
    record_call(transcript, turn, call, false, message.clone());
    AgentError::ToolAbort { tool, message }
}

/// Records `call` in the transcript, with whether it went through and what came of it: the
/// call's id, which the answer to the model is given under.
fn record_call(
    transcript: &mut Transcript,
    turn: u32,
    call: ToolCall,
    ok: bool,
    result: String,
) -> String {
    transcript.write(&Event::Tool {
        turn,
        id: call.id.clone(),
        name: call.name,
        arguments: call.arguments,
        ok,
        result,
    });
    call.id
}

/// The transcript's last event: how the run ended (a label and the answer, submission or
/// error), and what it spent; when a budget stopped it, the budget's own count of the spending,
/// which is what the budget was checked against.
fn end_event(outcome: &Result<Outcome, AgentError>, usage: Usage) -> Event {
    let (label, detail) = match outcome {
        Ok(Outcome::Answer(text)) => ("answered", text.clone()),
        Ok(Outcome::Submitted(value)) | Ok(Outcome::Structured(value)) => {
            ("submitted", value.to_string())
        }
        Err(AgentError::TurnLimit(_)) => (
            "turn limit",
            outcome
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ),
        Err(AgentError::Model(LlmError::Budget(exceeded))) => {
            ("budget exhausted", exceeded.to_string())
        }
        Err(error) => ("error", error.to_string()),
    };
    let spent = match outcome {
        Err(AgentError::Model(LlmError::Budget(exceeded))) => {
            serde_json::to_value(&exceeded.spent).ok()
        }
        _ => serde_json::to_value(usage).ok(),
    };
    Event::End {
        outcome: label.to_owned(),
        detail,
        usage: spent,
        at: now(),
    }
}

impl Agent {
    /// `provider` should be metered (`bugloop_llm::Metered`) so budgets stop the run.
    pub fn new(
        provider: Arc<dyn Provider>,
        context: ToolContext,
        runs_dir: impl Into<PathBuf>,
    ) -> Self {
        Agent {
            provider,
            context,
            runs_dir: runs_dir.into(),
        }
    }

    pub fn context(&self) -> &ToolContext {
        &self.context
    }

    pub async fn run(&self, task: Task) -> Run {
        let id = run_id(&task.name);
        let mut transcript = Transcript::create(&self.runs_dir, &id);
        let mut registry = match task.toolset {
            Some(toolset) => Registry::new(toolset),
            None => Registry::empty(),
        };
        let Task {
            name,
            system,
            messages,
            extra_tools,
            submit_tool,
            follow_ups,
            stages,
            open_stage,
            answer_schema,
            max_turns,
            max_tokens,
            ..
        } = task;
        for tool in extra_tools {
            registry.add(tool);
        }
        transcript.write(&self.start_event(&id, name, &registry, &system, &messages));
        let asked = Asked {
            system: &system,
            submit_tool: submit_tool.as_deref(),
            follow_ups: &follow_ups,
            stages,
            open_stage: open_stage.as_ref(),
            answer_schema: answer_schema.as_ref(),
            max_turns,
            max_tokens,
        };
        let mut progress = RunProgress {
            transcript,
            usage: Usage::default(),
            turns: 0,
            salvaged: None,
        };
        let use_tools = !registry.names().is_empty() && self.provider.capabilities().tools;
        let outcome = if use_tools {
            self.turn_loop(&registry, &asked, messages, &mut progress)
                .await
        } else {
            self.structured(&asked, messages, &mut progress).await
        };
        let RunProgress {
            mut transcript,
            usage,
            turns,
            salvaged,
        } = progress;
        transcript.write(&end_event(&outcome, usage));
        Run {
            id,
            outcome,
            turns,
            usage,
            transcript: transcript.path().to_path_buf(),
            salvaged,
        }
    }

    /// The transcript's first event: what was asked of which model with which tools, so a run
    /// can be read back (and summarised) from its transcript alone.
    fn start_event(
        &self,
        id: &str,
        name: String,
        registry: &Registry,
        system: &str,
        messages: &[Message],
    ) -> Event {
        Event::Start {
            run: id.to_owned(),
            task: name,
            model: self.provider.name().to_owned(),
            tools: registry.names().iter().map(|n| (*n).to_owned()).collect(),
            at: now(),
            system: system.to_owned(),
            messages: messages
                .iter()
                .filter_map(|m| serde_json::to_value(m).ok())
                .collect(),
        }
    }

    /// The tool-calling run: `messages` is the conversation so far, and grows turn by turn.
    async fn turn_loop(
        &self,
        registry: &Registry,
        asked: &Asked<'_>,
        mut messages: Vec<Message>,
        progress: &mut RunProgress,
    ) -> Result<Outcome, AgentError> {
        let tools = tool_definitions(registry);
        let mut reminded = false;
        let mut follow_ups = asked.follow_ups.iter().cloned();
        // A last submission held back for the model to see the errors of its turn.
        let mut held: Option<serde_json::Value> = None;
        while progress.turns < asked.max_turns {
            progress.turns += 1;
            let turn = progress.turns;
            let response = self.ask(asked, &messages, &tools, progress).await?;
            let transcript = &mut progress.transcript;
            let calls = response.message.tool_calls.clone();
            messages.push(response.message.clone());
            if calls.is_empty() {
                if let Some(value) = held {
                    return Ok(Outcome::Submitted(value));
                }
                match asked.submit_tool {
                    // The task ends only through its submit tool: remind the model once.
                    Some(submit) if !reminded => {
                        reminded = true;
                        let text =
                            format!("Finish by calling the `{submit}` tool with your result.");
                        transcript.write(&Event::Note { text: text.clone() });
                        messages.push(Message::user(text));
                        continue;
                    }
                    _ => return Ok(Outcome::Answer(response.message.content)),
                }
            }
            let mut this_turn = Turn {
                registry,
                number: turn,
                transcript,
                messages: &mut messages,
            };
            let (next_stage, held_now) = match self
                .run_calls(asked, calls, &mut this_turn, &mut follow_ups)
                .await?
            {
                TurnEnd::Final(value) => return Ok(Outcome::Submitted(value)),
                TurnEnd::Next { stage, held } => (stage, held),
            };
            if next_stage.is_some() {
                reminded = false;
            }
            held = held_now.or(held);
            // The next stage's instructions come after every call of the turn has its result.
            if let Some(next) = next_stage {
                if asked.stages == Stages::UpFrontThenAtOnce {
                    let left = std::iter::once(next).chain(follow_ups).collect();
                    return self
                        .at_once(registry, asked, &messages, left, progress)
                        .await;
                }
                transcript.write(&Event::Note { text: next.clone() });
                messages.push(Message::user(next));
            }
        }
        match held {
            Some(value) => Ok(Outcome::Submitted(value)),
            None => Err(AgentError::TurnLimit(asked.max_turns)),
        }
    }

    /// A turn's calls, in order: each tool's result (or error) goes back to the model; a stage's
    /// submission ends the stage (later calls of the turn belong to none when stages come one
    /// by one); the last stage's ends the task, unless a call before it in the turn was refused
    /// and turns are left: then it is held back and the model told so.
    async fn run_calls(
        &self,
        asked: &Asked<'_>,
        calls: Vec<ToolCall>,
        turn: &mut Turn<'_>,
        follow_ups: &mut impl Iterator<Item = String>,
    ) -> Result<TurnEnd, AgentError> {
        let mut stage = None;
        let mut held = None;
        let mut refused = 0;
        for call in calls {
            if stage.is_some() && asked.stages == Stages::OneByOne {
                // The stage was submitted: later calls of the same turn belong to no stage
                // (the model has not seen the next stage's instructions yet).
                let text = "error: ignored, the stage was already submitted in this turn";
                turn.messages.push(Message::tool_result(call.id, text));
                continue;
            }
            if Some(call.name.as_str()) != asked.submit_tool {
                if !self.call_tool(call, turn).await? {
                    refused += 1;
                }
                continue;
            }
            match self.submit(call, turn, follow_ups).await? {
                Submission::Final(value, _) if refused == 0 || turn.number >= asked.max_turns => {
                    return Ok(TurnEnd::Final(value));
                }
                Submission::Final(value, id) => {
                    turn.messages
                        .push(Message::tool_result(id, held_back(refused)));
                    held = Some(value);
                }
                Submission::NextStage(next) => stage = Some(next),
                Submission::Refused => {}
            }
        }
        Ok(TurnEnd::Next { stage, held })
    }

    /// The stages `left`, each asked at the same time in its own copy of `messages` (the
    /// conversation so far, so a model's cached prefix serves them all) and ended by its own
    /// submission. Their turns, usage and transcript events add up to the run's, in stage
    /// order; the turn budget left is each one's. The task ends with the last stage's
    /// submission, or with the first stage that failed or answered without submitting.
    async fn at_once(
        &self,
        registry: &Registry,
        asked: &Asked<'_>,
        messages: &[Message],
        left: Vec<String>,
        progress: &mut RunProgress,
    ) -> Result<Outcome, AgentError> {
        let one = Asked {
            system: asked.system,
            submit_tool: asked.submit_tool,
            follow_ups: &[],
            stages: Stages::UpFront,
            open_stage: None,
            answer_schema: asked.answer_schema,
            max_turns: asked.max_turns,
            max_tokens: asked.max_tokens,
        };
        let count = left.len();
        // The stages left are the last ones: the first message's is 1, each follow-up the next.
        let first_left = asked.follow_ups.len() + 2 - count;
        let started = progress.turns;
        let branches = left.into_iter().enumerate().map(|(index, stage)| {
            let one = &one;
            let (messages, how) = stage_conversation(asked, messages, stage, first_left + index);
            let mut branch = RunProgress {
                transcript: Transcript::held(progress.transcript.path()),
                usage: Usage::default(),
                turns: started,
                salvaged: None,
            };
            branch.transcript.write(&Event::Note {
                text: format!(
                    "asked at the same time as the other {} stage(s) left ({} of {count}): {how}",
                    count - 1,
                    index + 1
                ),
            });
            async move {
                let outcome = Box::pin(self.turn_loop(registry, one, messages, &mut branch)).await;
                (outcome, branch)
            }
        });
        let mut ended = Vec::new();
        for (outcome, mut branch) in futures_util::future::join_all(branches).await {
            for event in branch.transcript.take_held() {
                progress.transcript.write(&event);
            }
            progress.usage.add(branch.usage);
            progress.turns += branch.turns - started;
            ended.push(outcome);
        }
        // A failure says most, then a stage left unsubmitted, then the last submission.
        let mut outcome = None;
        for result in ended {
            outcome = match (outcome, result) {
                (Some(Err(error)), _) | (_, Err(error)) => Some(Err(error)),
                (Some(Ok(Outcome::Answer(text))), _) | (_, Ok(Outcome::Answer(text))) => {
                    Some(Ok(Outcome::Answer(text)))
                }
                (_, last) => Some(last),
            };
        }
        outcome.unwrap_or(Err(AgentError::TurnLimit(asked.max_turns)))
    }

    /// Asks the model for the next turn (`progress.turns`) and records its answer and usage.
    async fn ask(
        &self,
        asked: &Asked<'_>,
        messages: &[Message],
        tools: &[ToolDefinition],
        progress: &mut RunProgress,
    ) -> Result<ChatResponse, AgentError> {
        let request = ChatRequest {
            system: Some(asked.system.to_owned()),
            messages: messages.to_vec(),
            tools: tools.to_vec(),
            tool_choice: ToolChoice::Auto,
            max_tokens: asked.max_tokens,
            ..ChatRequest::default()
        };
        let response = self.provider.chat(&request, None).await?;
        progress.usage.add(response.usage);
        progress
            .transcript
            .write(&Event::response(progress.turns, &response));
        Ok(response)
    }

    /// A call of the submit tool: the submission is checked, recorded in the transcript, and
    /// either ends the task, ends a stage (the model is told it was recorded), or goes back to
    /// the model as an error. A tool's abort ends the task.
    async fn submit(
        &self,
        call: ToolCall,
        turn: &mut Turn<'_>,
        follow_ups: &mut impl Iterator<Item = String>,
    ) -> Result<Submission, AgentError> {
        match self.check_submission(turn.registry, &call).await {
            Err(ToolError::Abort(message)) => Err(turn.aborted(call, message)),
            Ok(value) => {
                let next = follow_ups.next();
                let id = turn.record(call, true, "submitted".into());
                let Some(next) = next else {
                    return Ok(Submission::Final(value, id));
                };
                turn.answer(id, "recorded");
                Ok(Submission::NextStage(next))
            }
            Err(ToolError::Model(message)) => {
                let id = turn.record(call, false, message.clone());
                turn.answer(id, format!("error: {message}"));
                Ok(Submission::Refused)
            }
        }
    }

    /// The submit tool's arguments as JSON. A registered submit tool checks the submission
    /// first (its errors go back to the model like any tool's).
    async fn check_submission(
        &self,
        registry: &Registry,
        call: &ToolCall,
    ) -> Result<serde_json::Value, ToolError> {
        let checked = if registry.get(&call.name).is_some() {
            registry
                .call(&self.context, &call.name, &call.arguments)
                .await
                .map(|_| ())
        } else {
            Ok(())
        };
        match checked {
            Ok(()) => call
                .parse_arguments()
                .map_err(|e| ToolError::Model(format!("the arguments are not valid JSON: {e}"))),
            Err(error) => Err(error),
        }
    }

    /// Any other tool's call: its result (or error) goes back to the model; its abort ends the
    /// task. Whether the call was done (not refused).
    async fn call_tool(&self, call: ToolCall, turn: &mut Turn<'_>) -> Result<bool, AgentError> {
        let result = turn
            .registry
            .call(&self.context, &call.name, &call.arguments)
            .await;
        let (ok, text) = match result {
            Ok(text) => (true, text),
            Err(ToolError::Model(message)) => (false, format!("error: {message}")),
            Err(ToolError::Abort(message)) => return Err(turn.aborted(call, message)),
        };
        let id = turn.record(call, ok, text.clone());
        turn.answer(id, text);
        Ok(ok)
    }

    /// The tool-less run: one structured answer of the task's schema.
    async fn structured(
        &self,
        asked: &Asked<'_>,
        messages: Vec<Message>,
        progress: &mut RunProgress,
    ) -> Result<Outcome, AgentError> {
        let RunProgress {
            transcript,
            usage,
            turns,
            salvaged,
        } = progress;
        let Some(schema) = asked.answer_schema.cloned() else {
            return Err(AgentError::Misconfigured(format!(
                "{} cannot call tools and the task has no answer schema",
                self.provider.name()
            )));
        };
        let request = ChatRequest {
            system: Some(asked.system.to_owned()),
            messages,
            max_tokens: asked.max_tokens,
            ..ChatRequest::default()
        };
        let result = complete_json(self.provider.as_ref(), request, schema, None).await;
        if let Ok(structured) = &result {
            for response in &structured.responses {
                *turns += 1;
                usage.add(response.usage);
                transcript.write(&Event::response(*turns, response));
            }
            if let Some(note) = &structured.salvaged {
                transcript.write(&Event::Note { text: note.clone() });
                *salvaged = Some(note.clone());
            }
        }
        match result {
            Ok(structured) => Ok(Outcome::Structured(structured.value)),
            Err(StructuredError::Llm(error)) => Err(AgentError::Model(error)),
            Err(error) => Err(AgentError::Structured(error)),
        }
    }
}
