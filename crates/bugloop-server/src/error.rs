//! What can stop the server or one of its jobs: a job's own error (from the application layer),
//! the queue failing, or a setting, file or address that is wrong (the message names which).

/// The server's errors.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    App(Box<bugloop_app::AppError>),
    #[error(transparent)]
    Queue(Box<bugloop_queue::QueueError>),
    #[error("{0}")]
    Invalid(String),
}

impl ServerError {
    /// Whether waiting may help (see [`bugloop_app::AppError::is_transient`]).
    pub fn is_transient(&self) -> bool {
        match self {
            ServerError::App(error) => error.is_transient(),
            ServerError::Queue(_) | ServerError::Invalid(_) => false,
        }
    }

    /// Whether GitHub itself failed (see [`bugloop_app::AppError::github_unreachable`]).
    pub fn github_unreachable(&self) -> bool {
        match self {
            ServerError::App(error) => error.github_unreachable(),
            ServerError::Queue(_) | ServerError::Invalid(_) => false,
        }
    }
}

impl From<bugloop_app::AppError> for ServerError {
    fn from(error: bugloop_app::AppError) -> Self {
        ServerError::App(Box::new(error))
    }
}

impl From<bugloop_queue::QueueError> for ServerError {
    fn from(error: bugloop_queue::QueueError) -> Self {
        ServerError::Queue(Box::new(error))
    }
}
