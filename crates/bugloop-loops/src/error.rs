//! The error of the acting loops (fix, do, ask, a comment, a dispute, converge).

use bugloop_forge::ForgeError;

use crate::build::BuildError;

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Config(Box<bugloop_config::ConfigError>),
    #[error("{0}")]
    Agent(#[from] bugloop_agent::AgentError),
    #[error("{0}")]
    Invalid(String),
}

impl From<bugloop_config::ConfigError> for ActError {
    fn from(error: bugloop_config::ConfigError) -> Self {
        ActError::Config(Box::new(error))
    }
}
