//! `ask` with a model that cannot call tools: it is shown what the question names, read as its
//! tools would read it, and the answer says what it saw.

use super::*;

/// `ask` of `question` on `repo`'s branch with `model`.
async fn ask(
    repo: &Repo,
    model: Arc<ScriptedProvider>,
    question: &str,
) -> Result<String, act::ActError> {
    support::with_env(repo, support::config(), model, async |env| {
        act::ask(env, &env.git.conversation_key(), question).await
    })
    .await
}

/// A scripted model that cannot call tools and answers with a JSON schema, its answers to come.
fn without_tools() -> ScriptedProvider {
    ScriptedProvider::new([]).with_capabilities(Capabilities {
        tools: false,
        json_schema: true,
        streaming: false,
        context_tokens: None,
        cache_at_breakpoints: false,
    })
}

/// The question names `stats.rs` (found at any depth, as `glob` finds a name) and `leak.py`, a
/// link out of the repository: the model is shown the first, numbered as `read_file` numbers it,
/// never the second; the answer says what the model saw.
#[tokio::test]
async fn a_model_without_tools_is_shown_the_files_the_question_names() {
    let repo = Repo::with_feature();
    std::os::unix::fs::symlink("/etc/hostname", repo.path().join("leak.py")).unwrap();
    let outside = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let model = Arc::new(support::structured_session(
        &json!({"answer": "It returns the element at the percentile's index."}),
    ));
    let question = "What does `stats.rs` return for an empty list, and what is in leak.py?";
    let answer = ask(&repo, model.clone(), question).await.unwrap();
    let system = model.requests()[0].system.clone().unwrap_or_default();
    assert!(system.contains("### src/stats.rs"), "{system}");
    assert!(
        system.contains("     1\tpub fn average(values: &[f64]) -> f64 {"),
        "{system}"
    );
    assert!(!system.contains("leak.py"), "{system}");
    if !outside.trim().is_empty() {
        assert!(!system.contains(outside.trim()), "{system}");
    }
    assert!(
        answer.starts_with("It returns the element at the percentile's index."),
        "{answer}"
    );
    assert!(
        answer.contains("cannot open files itself; it was shown `src/stats.rs`."),
        "{answer}"
    );
}

/// A question that names no file: the model is told it sees no code, and so is the one who asked.
#[tokio::test]
async fn a_question_naming_no_file_says_the_model_saw_no_code() {
    let repo = Repo::with_feature();
    let model = Arc::new(support::structured_session(
        &json!({"answer": "I cannot tell."}),
    ));
    let answer = ask(&repo, model.clone(), "Is this code any good? *.rs")
        .await
        .unwrap();
    let system = model.requests()[0].system.clone().unwrap_or_default();
    assert!(
        system.contains("None: the question names no file of the repository."),
        "{system}"
    );
    assert!(answer.contains("it was shown no code"), "{answer}");
}

/// Code the model's context cannot hold (dense data tokenizes poorly) is shown again, shorter,
/// until it fits: the question is answered, not refused.
#[tokio::test]
async fn code_the_context_cannot_hold_is_shown_shorter_until_it_fits() {
    let repo = Repo::with_feature();
    let numbers: String = (0..5_000).map(|i| format!("{i},")).collect();
    repo.write("data.py", &format!("TABLE = [{numbers}]\n"));
    let model = without_tools();
    for _ in 0..2 {
        model.push_error(|| bugloop_llm::LlmError::ContextTooLong {
            message: "4554 prompt tokens do not fit the local context of 4096".to_owned(),
        });
    }
    model.push(text_reply(r#"{"answer": "A table of numbers."}"#, usage()));
    let model = Arc::new(model);
    let answer = ask(&repo, model.clone(), "What is in data.py?")
        .await
        .unwrap();
    assert!(answer.starts_with("A table of numbers."), "{answer}");
    let sizes: Vec<usize> = model
        .requests()
        .iter()
        .map(|r| r.system.as_deref().unwrap_or_default().len())
        .collect();
    assert!(
        sizes.len() == 3 && sizes[0] > sizes[1] && sizes[1] > sizes[2],
        "{sizes:?}"
    );
    assert!(answer.contains("it was shown `data.py`"), "{answer}");
}

/// A model that never takes the question, however short the code: asked a few times, then an
/// error that says why, never an endless loop (a long path's header used to stop the shrinking).
#[tokio::test]
async fn a_question_that_never_fits_ends_with_an_error() {
    let repo = Repo::with_feature();
    let model = without_tools();
    for _ in 0..20 {
        model.push_error(|| bugloop_llm::LlmError::ContextTooLong {
            message: "the prompt does not fit".to_owned(),
        });
    }
    let model = Arc::new(model);
    let error = ask(&repo, model.clone(), "What does src/stats.rs do?")
        .await
        .unwrap_err();
    let asked = model.requests().len();
    assert!((2..=7).contains(&asked), "asked {asked} times");
    assert!(
        error.to_string().contains("fit") && error.to_string().contains("context"),
        "{error}"
    );
}
