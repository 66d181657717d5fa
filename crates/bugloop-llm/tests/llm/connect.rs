use bugloop_llm::{LlmError, LlmSettings, ModelSpec, ProviderSettings, connect};

fn no_env(_: &str) -> Option<String> {
    None
}

/// Why connecting to `model` with `settings` and no environment fails.
fn refusal(model: &str, settings: &LlmSettings) -> String {
    connect(model, settings, &no_env).unwrap_err().to_string()
}

#[test]
fn model_strings() {
    assert_eq!(
        ModelSpec::parse("openai:gpt-4o").unwrap(),
        ModelSpec {
            provider: "openai".into(),
            model: "gpt-4o".into()
        }
    );
    assert_eq!(
        ModelSpec::parse("ollama:qwen2.5-coder:7b").unwrap().model,
        "qwen2.5-coder:7b"
    );
    assert!(
        ModelSpec::parse("gpt-4o")
            .unwrap_err()
            .to_string()
            .contains("provider:model")
    );
    assert!(ModelSpec::parse("openai:").is_err());
}

#[test]
fn connecting_checks_keys_and_providers() {
    let settings = LlmSettings::default();
    let error = connect("openai:gpt-4o", &settings, &no_env).unwrap_err();
    assert!(matches!(error, LlmError::Config(_)));
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
    let error = refusal("anthropic:claude-sonnet-4-5", &settings);
    assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");
    let with_key = |var: &str| (var == "OPENAI_API_KEY").then(|| "sk".to_owned());
    assert_eq!(
        connect("openai:gpt-4o", &settings, &with_key)
            .unwrap()
            .name(),
        "openai:gpt-4o"
    );
    // Ollama needs no key; an unknown provider needs a base URL.
    assert!(connect("ollama:llama3", &settings, &no_env).is_ok());
    let error = refusal("groq:llama-3.3-70b", &settings);
    assert!(error.contains("model.providers.groq.base_url"), "{error}");
    let mut settings = LlmSettings::default();
    settings.providers.insert(
        "groq".into(),
        ProviderSettings {
            base_url: Some("https://api.groq.com/openai/v1".into()),
            api_key_env: Some("GROQ_API_KEY".into()),
            json_schema: None,
        },
    );
    assert!(connect("groq:llama-3.3-70b", &settings, &no_env).is_ok());
    let error = refusal("replay:/nonexistent/cassette.jsonl", &settings);
    assert!(error.contains("cannot read"), "{error}");
}
