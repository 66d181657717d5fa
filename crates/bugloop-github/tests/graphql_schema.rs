//! Every GraphQL document the client sends validates against GitHub's own schema
//! (`@octokit/graphql-schema`, printed as SDL by `scripts/test-assets`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};

fn github_schema() -> Valid<Schema> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let file = cache.join("bugloop/test-assets/github-schema.graphql");
    let sdl = std::fs::read_to_string(&file).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; `scripts/setup --test` installs GitHub's GraphQL schema",
            file.display()
        )
    });
    Schema::parse_and_validate(sdl, "github-schema.graphql")
        .unwrap_or_else(|errors| panic!("GitHub's schema: {errors}"))
}

#[test]
fn every_document_validates_against_githubs_schema() {
    let schema = github_schema();
    for (name, document) in bugloop_github::DOCUMENTS {
        if let Err(errors) =
            ExecutableDocument::parse_and_validate(&schema, document, format!("{name}.graphql"))
        {
            panic!("{name}: {errors}");
        }
    }
    // The check can fail: a field GitHub does not have.
    let wrong = bugloop_github::DOCUMENTS[0]
        .1
        .replace("isOutdated", "isStale");
    assert!(ExecutableDocument::parse_and_validate(&schema, wrong, "wrong.graphql").is_err());
}
