//! bugloop's loops. Each loop loads its state from a [`bugloop_forge::Forge`], runs agent tasks,
//! grounds and filters what the model said, and publishes through the forge. One implementation
//! serves the command line, the Action and the server: nothing here prints or knows its caller.

pub mod context;
pub mod plan;
