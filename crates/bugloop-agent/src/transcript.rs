//! Run transcripts: one JSONL file per run under `<git dir>/bugloop/runs/`, written as the run
//! goes (a run killed half way leaves what happened until then), and read back by `bugloop runs`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Start {
        run: String,
        task: String,
        model: String,
        tools: Vec<String>,
        at: String,
        system: String,
        messages: Vec<serde_json::Value>,
    },
    Response {
        turn: u32,
        content: String,
        tool_calls: Vec<serde_json::Value>,
        finish: String,
        input_tokens: u64,
        output_tokens: u64,
        cached_input_tokens: u64,
    },
    Tool {
        turn: u32,
        id: String,
        name: String,
        arguments: String,
        ok: bool,
        result: String,
    },
    Note {
        text: String,
    },
    End {
        outcome: String,
        detail: String,
        usage: Option<serde_json::Value>,
        at: String,
    },
}

impl Event {
    /// The model's answer of turn `turn`, with its tool calls and usage.
    pub fn response(turn: u32, response: &bugloop_llm::ChatResponse) -> Event {
        Event::Response {
            turn,
            content: response.message.content.clone(),
            tool_calls: response
                .message
                .tool_calls
                .iter()
                .filter_map(|c| serde_json::to_value(c).ok())
                .collect(),
            finish: format!("{:?}", response.finish),
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
            cached_input_tokens: response.usage.cached_input_tokens,
        }
    }
}

#[derive(Debug)]
pub struct Transcript {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// Events kept to be written later by the transcript at `path` (see [`Transcript::held`]).
    held: Option<Vec<Event>>,
}

impl Transcript {
    /// Creates `<dir>/<run>.jsonl`. A transcript that cannot be written does not stop the run:
    /// the failure is reported once and the run goes on without one.
    pub fn create(dir: &Path, run: &str) -> Self {
        let path = dir.join(format!("{run}.jsonl"));
        let file = std::fs::create_dir_all(dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create_new(true)
                    .append(true)
                    .open(&path)
            })
            .ok();
        Transcript {
            path,
            file,
            held: None,
        }
    }

    /// A transcript that keeps its events for the one at `path` to write later, in one piece
    /// (for parts of a run that go on at the same time, whose events would interleave).
    pub fn held(path: &Path) -> Self {
        Transcript {
            path: path.to_path_buf(),
            file: None,
            held: Some(Vec::new()),
        }
    }

    /// The events a held transcript kept, in order; none for one written to a file.
    pub fn take_held(&mut self) -> Vec<Event> {
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_written(&self) -> bool {
        self.file.is_some()
    }

    pub fn write(&mut self, event: &Event) {
        if let Some(held) = self.held.as_mut() {
            held.push(event.clone());
            return;
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        if file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| file.flush())
            .is_err()
        {
            self.file = None;
        }
    }
}

/// Reads a transcript back; lines that do not parse (a run killed mid-write) are skipped.
pub fn read(path: &Path) -> std::io::Result<Vec<Event>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// A run as `bugloop runs list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run: String,
    pub task: String,
    pub model: String,
    pub started: String,
    pub turns: u32,
    pub tool_calls: usize,
    pub outcome: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

pub fn summarize(events: &[Event]) -> Option<RunSummary> {
    let Some(Event::Start {
        run,
        task,
        model,
        at,
        ..
    }) = events.first()
    else {
        return None;
    };
    let mut summary = RunSummary {
        run: run.clone(),
        task: task.clone(),
        model: model.clone(),
        started: at.clone(),
        turns: 0,
        tool_calls: 0,
        outcome: "unfinished (killed or still running)".into(),
        input_tokens: 0,
        output_tokens: 0,
    };
    for event in events {
        match event {
            Event::Response {
                turn,
                input_tokens,
                output_tokens,
                ..
            } => {
                summary.turns = summary.turns.max(*turn);
                summary.input_tokens += input_tokens;
                summary.output_tokens += output_tokens;
            }
            Event::Tool { .. } => summary.tool_calls += 1,
            Event::End { outcome, .. } => summary.outcome = outcome.clone(),
            _ => {}
        }
    }
    Some(summary)
}

/// Every run in a directory, newest first.
pub fn list(dir: &Path) -> Vec<RunSummary> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut runs: Vec<RunSummary> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|p| read(&p).ok().and_then(|events| summarize(&events)))
        .collect();
    runs.sort_by(|a, b| b.run.cmp(&a.run));
    runs
}
