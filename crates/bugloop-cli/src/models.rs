//! Glue from configuration to the model layer.

use std::path::PathBuf;
use std::time::Duration;

use bugloop_config::Config;
use bugloop_llm::{HttpSettings, LlmSettings, ProviderSettings};

pub fn llm_settings(config: &Config) -> LlmSettings {
    let model = &config.model;
    let providers = model
        .providers
        .iter()
        .map(|(name, p)| {
            (
                name.clone(),
                ProviderSettings {
                    base_url: p.base_url.clone(),
                    api_key_env: p.api_key_env.clone(),
                    json_schema: p.json_schema,
                },
            )
        })
        .collect();
    LlmSettings {
        providers,
        http: HttpSettings {
            connect_timeout: Duration::from_secs(model.connect_timeout_seconds),
            idle_timeout: Duration::from_secs(model.idle_timeout_seconds),
            max_retries: model.max_retries,
            ..HttpSettings::default()
        },
        model_dir: model
            .local_dir
            .as_ref()
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("BUGLOOP_MODEL_DIR").map(PathBuf::from)),
        // Record every model exchange of this run for `replay:` (tests, bug reports).
        record_to: std::env::var_os("BUGLOOP_RECORD").map(PathBuf::from),
    }
}
