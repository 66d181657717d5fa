//! Analyzers a trusted configuration adds: any tool that writes SARIF (semgrep with the
//! repository's own rules, CodeQL's results file). A command runs in the sandbox like a verify
//! command (split like a shell would, run without one); its rule files are read from the base
//! commit (`{base}`), never from the change.

use bugloop_domain::safety::{VerifyCommandError, parse_verify_commands};

/// `{name, command, sarif, files, config}` of `review.analyzers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomAnalyzer {
    pub name: String,
    /// The program and its arguments; `{files}` becomes the changed files it reads (one
    /// argument each), `{base}` the directory holding the base commit's `config` paths. Its
    /// SARIF is read from standard output unless `sarif` names a file.
    pub command: Option<Vec<String>>,
    /// A SARIF file on the host, read after the command (or alone, such as CodeQL's results
    /// written by an earlier step).
    pub sarif: Option<String>,
    /// Globs of the files it reads (default: every file); it runs only when the change touches
    /// one.
    pub files: Vec<String>,
    /// Paths of the repository (rule files) given to the command from the base commit, under
    /// `{base}`.
    pub config: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CustomError {
    #[error("analyzer {name:?}: {source}")]
    Command {
        name: String,
        source: VerifyCommandError,
    },
    #[error("analyzer {name:?} has neither a command nor a sarif file")]
    Nothing { name: String },
    #[error("analyzer {name:?}: a shell script cannot be an analyzer's command")]
    Shell { name: String },
}

impl CustomAnalyzer {
    /// Checks and splits `command` (no shell, no shell operators).
    pub fn new(
        name: String,
        command: Option<&str>,
        sarif: Option<String>,
        files: Vec<String>,
        config: Vec<String>,
    ) -> Result<CustomAnalyzer, CustomError> {
        let command = match command {
            Some(text) => {
                let parsed =
                    parse_verify_commands(&[text]).map_err(|source| CustomError::Command {
                        name: name.clone(),
                        source,
                    })?;
                let Some(parsed) = parsed.into_iter().next() else {
                    return Err(CustomError::Nothing { name });
                };
                if parsed.shell {
                    return Err(CustomError::Shell { name });
                }
                let mut argv = vec![parsed.program];
                argv.extend(parsed.args);
                Some(argv)
            }
            None => None,
        };
        if command.is_none() && sarif.is_none() {
            return Err(CustomError::Nothing { name });
        }
        Ok(CustomAnalyzer {
            name,
            command,
            sarif,
            files,
            config,
        })
    }

    /// The arguments with `{files}` and `{base}` filled in.
    pub(crate) fn expand(&self, files: &[String], base: &str) -> Option<Vec<String>> {
        let command = self.command.as_ref()?;
        let mut argv = Vec::with_capacity(command.len() + files.len());
        for arg in command {
            if arg == "{files}" {
                argv.extend(files.iter().cloned());
            } else {
                argv.push(arg.replace("{base}", base));
            }
        }
        Some(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_split_and_filled_in() {
        let semgrep = CustomAnalyzer::new(
            "semgrep".into(),
            Some("semgrep scan --sarif --config {base}/.semgrep.yml {files}"),
            None,
            vec!["**/*.py".into()],
            vec![".semgrep.yml".into()],
        )
        .unwrap();
        let argv = semgrep
            .expand(&["a.py".into(), "b c.py".into()], "/run/base")
            .unwrap();
        assert_eq!(
            argv,
            [
                "semgrep",
                "scan",
                "--sarif",
                "--config",
                "/run/base/.semgrep.yml",
                "a.py",
                "b c.py"
            ]
        );
    }

    #[test]
    fn shells_and_empty_entries_are_refused() {
        let err = CustomAnalyzer::new(
            "x".into(),
            Some("semgrep && curl evil"),
            None,
            vec![],
            vec![],
        );
        assert!(matches!(err, Err(CustomError::Command { .. })), "{err:?}");
        let err = CustomAnalyzer::new("x".into(), None, None, vec![], vec![]);
        assert_eq!(err, Err(CustomError::Nothing { name: "x".into() }));
    }
}
