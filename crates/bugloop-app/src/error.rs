//! What can stop a job before it has an outcome. Each variant names what was wrong and where;
//! [`AppError::AfterStoring`] marks errors that happened after the developer's comment was
//! stored, so a front end does not report "nothing happened".

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Git(Box<bugloop_git::GitError>),
    #[error(transparent)]
    Config(Box<bugloop_config::ConfigError>),
    #[error("the local store of {}: {source}", repository.display())]
    Store {
        repository: PathBuf,
        source: bugloop_forge::ForgeError,
    },
    #[error(transparent)]
    Forge(Box<bugloop_forge::ForgeError>),
    #[error(transparent)]
    GitHub(Box<bugloop_github::GitHubError>),
    #[error("cannot use the model {model}: {source}")]
    Model {
        model: String,
        source: Box<bugloop_llm::LlmError>,
    },
    #[error(transparent)]
    Checkout(Box<bugloop_loops::checkout::CheckoutError>),
    #[error(transparent)]
    Review(Box<bugloop_loops::review::ReviewError>),
    #[error(transparent)]
    Act(Box<bugloop_loops::act::ActError>),
    #[error(transparent)]
    Thread(Box<bugloop_domain::thread::FindThreadError>),
    #[error(transparent)]
    StoreFile(Box<bugloop_store::StoreError>),
    #[error("{0}")]
    Invalid(String),
    /// The server's clone of a repository could not be made or given its token.
    #[error("cannot prepare the clone of {repository}: {source}")]
    Workspace {
        repository: String,
        source: Box<AppError>,
    },
    /// The developer's comment (or reply) is in the conversation; acting on it failed.
    #[error("your comment was stored (comment {comment} of {change}), but acting on it failed")]
    AfterStoring {
        comment: String,
        change: String,
        #[source]
        source: Box<AppError>,
    },
}

impl AppError {
    /// Whether waiting may help: GitHub or the network failing, a rate limit, a write that may
    /// or may not have happened (the next attempt looks first), a clone that could not be made.
    pub fn is_transient(&self) -> bool {
        use bugloop_forge::ForgeError;
        use bugloop_github::GitHubError;
        match self {
            AppError::GitHub(error) => matches!(
                **error,
                GitHubError::Transient { .. }
                    | GitHubError::Refused { .. }
                    | GitHubError::RateLimited { .. }
                    | GitHubError::Ambiguous { .. }
            ),
            AppError::Forge(error) => matches!(
                **error,
                ForgeError::Transient { .. }
                    | ForgeError::RateLimited { .. }
                    | ForgeError::Ambiguous(_)
            ),
            AppError::Review(error) => error.to_string().contains("rate limited"),
            AppError::Workspace { .. } => true,
            _ => false,
        }
    }

    /// Whether GitHub itself failed: it could not be reached, or answered with a server error,
    /// after the retries that were safe. Unlike [`AppError::is_transient`] this says nothing of
    /// one installation or repository (its rate limit, a refusal, a clone that could not be
    /// made), which a writer of that repository can cause: a server may slow every job on
    /// this, never on those.
    pub fn github_unreachable(&self) -> bool {
        use bugloop_forge::ForgeError;
        match self {
            AppError::GitHub(error) => {
                matches!(**error, bugloop_github::GitHubError::Transient { .. })
            }
            AppError::Forge(error) => matches!(
                **error,
                ForgeError::Transient {
                    unreachable: true,
                    ..
                }
            ),
            AppError::Workspace { source, .. } | AppError::AfterStoring { source, .. } => {
                source.github_unreachable()
            }
            _ => false,
        }
    }
}

/// The sources are boxed: a job's error travels through every layer, and the largest of them
/// would otherwise make every `Result` of the application that large.
macro_rules! boxed_from {
    ($($variant:ident: $source:ty),* $(,)?) => {
        $(impl From<$source> for AppError {
            fn from(error: $source) -> Self {
                AppError::$variant(Box::new(error))
            }
        })*
    };
}

boxed_from!(
    Git: bugloop_git::GitError,
    Config: bugloop_config::ConfigError,
    Forge: bugloop_forge::ForgeError,
    Checkout: bugloop_loops::checkout::CheckoutError,
    Review: bugloop_loops::review::ReviewError,
    Act: bugloop_loops::act::ActError,
    Thread: bugloop_domain::thread::FindThreadError,
    StoreFile: bugloop_store::StoreError,
);
