//! What the loops read from the configuration, resolved once when a job starts: a bad marker
//! prefix or an unparsable command list fails before any model is called or any file changed,
//! instead of halfway through a loop.

use bugloop_config::{Config, ConfigError};
use bugloop_domain::marker::MarkerSyntax;
use bugloop_domain::safety::VerifyCommand;

/// The configuration and what is derived from it.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    pub config: Config,
    /// The finding marker syntax (`identity.marker_prefix` and the legacy prefixes).
    pub markers: MarkerSyntax,
    /// `fix.verify_commands`, parsed.
    pub verify_commands: Vec<VerifyCommand>,
    /// `gate.commands`, parsed.
    pub gate_commands: Vec<VerifyCommand>,
    /// Where the repository's rule files (`AGENTS.md` and the like) are read: on a pull request,
    /// a copy of the base commit's (the head must not write the reviewer's or the agent's
    /// instructions); `None`, the tree being worked on.
    pub rules_root: Option<std::path::PathBuf>,
    /// The repository's prompts (`.bugloop/prompts/`), read from the trusted base commit.
    pub repository_prompts: bugloop_config::RepositoryPrompts,
}

impl LoopSettings {
    /// The error is boxed: it is rare and large, and every caller passes it on.
    pub fn resolve(config: Config) -> Result<LoopSettings, Box<ConfigError>> {
        Ok(LoopSettings {
            markers: bugloop_config::marker_syntax(&config)?,
            verify_commands: bugloop_config::verify_commands(&config)?,
            gate_commands: bugloop_config::commands("gate.commands", &config.gate.commands)?,
            rules_root: None,
            repository_prompts: bugloop_config::RepositoryPrompts::default(),
            config,
        })
    }
}
