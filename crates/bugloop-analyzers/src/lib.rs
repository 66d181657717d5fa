//! Static analyzers as a source of findings: well-kept tools (ruff, ty, shellcheck, zizmor,
//! hadolint, biome, tsc, clippy, go vet, and any tool that writes SARIF)
//! run in bugloop's sandbox on the code at head, with bugloop's own rule sets (never the
//! branch's configuration), and their hits on the lines the change adds become candidate
//! findings. A suppression comment the change adds (`# noqa`, `eslint-disable`, ...) and a key
//! committed in a documented format (`secrets`) are candidates of bugloop's own, and so are
//! the hits of `bugloop-python` (`own.rs`), a rule set of ours for certain bugs no such tool
//! has a rule for, run in the sandbox like the tools.
//!
//! What a tool prints is data: it is read through the tool's own structured output (SARIF, its
//! JSON, or tsc's one-line diagnostics), never followed, and every text of it is neutralised
//! where it is shown.
//!
//! **Invariants:** a tool never reads the branch's configuration of itself (`--isolated`, `--norc`,
//! `--no-config`, bugloop's own file, or bugloop's own tsconfig); a tool's output is data read through
//! its SARIF, its JSON, tsc's one-line diagnostics or the Go compiler's `file:line:column:` errors,
//! and its words reach a comment only one line long, quieted and neutralised; a hit on lines the
//! change did not add is never a candidate, but a type checker's in a file importing the change,
//! or a compile error in the project, that it did not report with the change's files as the base
//! has them; a tool that is missing,
//! crashes, hangs or floods is "not run", never an error.

mod analyze;
mod biome;
mod breakage;
mod builtin;
mod candidate;
mod compilers;
mod copy;
mod custom;
mod file_wide;
mod fix;
mod formats;
mod hit;
mod importers;
mod imports;
mod input;
mod invocation;
mod keys;
mod locate;
mod overlap;
mod own;
mod parse_errors;
mod place;
mod run;
mod sarif;
mod scope;
mod scripts;
mod secrets;
mod shadow;
mod suppression;
mod tree;
mod tsconfig;
mod ty;
mod typescript;
mod unknown_bases;
mod weight;
mod workspaces;

pub use analyze::analyze;
pub use builtin::{BUILT_IN, BuiltIn, built_in};
pub use custom::{CustomAnalyzer, CustomError};
pub use fix::{FixRequest, apply_fix, has_fix, still_reports};
pub use hit::{Candidate, Hit, Level};
pub use importers::{BaseFile, BaseTree, ImportersChecked};
pub use keys::{mask_keys, safe_evidence, secret_rules};
pub use locate::{Installed, Toolbox, installed_versions};
pub use run::{Analysis, AnalyzerRun, Request, RunStatus, Unchecked};
pub use scope::ChangedLines;
pub use secrets::secrets_added;
pub use suppression::suppressions_added;

/// One analyzer a configuration names (`review.analyzers`): a built-in or a SARIF tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    BuiltIn(&'static BuiltIn),
    Custom(CustomAnalyzer),
}

impl Choice {
    pub fn name(&self) -> &str {
        match self {
            Choice::BuiltIn(tool) => tool.name,
            Choice::Custom(custom) => &custom.name,
        }
    }
}

/// `auto`: every built-in analyzer (each runs where its tool is installed and the change
/// touches its files).
pub fn auto() -> Vec<Choice> {
    BUILT_IN.iter().map(Choice::BuiltIn).collect()
}
