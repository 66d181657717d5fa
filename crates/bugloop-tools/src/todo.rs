//! The model's own todo list for a run.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ToolContext, ToolError, TypedTool};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteParams {
    /// The whole list; it replaces the previous one.
    pub items: Vec<Todo>,
}

pub struct TodoWrite;

#[async_trait]
impl TypedTool for TodoWrite {
    type Params = TodoWriteParams;
    crate::tool_named!("todo_write");

    async fn run(
        &self,
        context: &ToolContext,
        params: TodoWriteParams,
    ) -> Result<String, ToolError> {
        let count = params.items.len();
        *context
            .todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = params.items;
        Ok(format!("todo list saved ({count} items)"))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoReadParams {}

pub struct TodoRead;

#[async_trait]
impl TypedTool for TodoRead {
    type Params = TodoReadParams;
    crate::tool_named!("todo_read");

    async fn run(&self, context: &ToolContext, _: TodoReadParams) -> Result<String, ToolError> {
        let todos = context
            .todos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if todos.is_empty() {
            return Ok("the todo list is empty".into());
        }
        Ok(todos
            .iter()
            .map(|t| {
                let mark = match t.status {
                    TodoStatus::Pending => "[ ]",
                    TodoStatus::InProgress => "[~]",
                    TodoStatus::Done => "[x]",
                };
                format!("{mark} {}", t.content)
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
