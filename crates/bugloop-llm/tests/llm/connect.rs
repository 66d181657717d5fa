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

/// A provider is printed in errors and logs (and inside every layer and agent that holds it):
/// never its API key.
#[test]
fn a_connected_provider_prints_no_api_key() {
    let settings = LlmSettings::default();
    let key = |var: &str| {
        var.ends_with("_API_KEY")
            .then(|| "sk-s3cret-key".to_owned())
    };
    for model in ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"] {
        let printed = format!("{:?}", connect(model, &settings, &key).unwrap());
        assert!(printed.contains("REDACTED"), "{model}: {printed}");
        assert!(!printed.contains("s3cret"), "{model}: {printed}");
    }
}
