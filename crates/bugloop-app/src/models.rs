//! The model factory: connects the configured model (or the one a job names) and meters it with
//! a fresh budget meter per job, so one job's spending never counts against another's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bugloop_config::Config;
use bugloop_llm::budget::{Meter, Metered, price_for};
use bugloop_llm::{BudgetLimits, HttpSettings, LlmSettings, Price, Provider, ProviderSettings};

use crate::AppError;

/// Model settings, budgets and prices, resolved once from the configuration.
#[derive(Debug, Clone)]
pub struct Models {
    default_model: String,
    settings: LlmSettings,
    limits: BudgetLimits,
    prices: Vec<(String, Price)>,
}

/// A connected model and the meter it spends from.
#[derive(Debug, Clone)]
pub struct Connected {
    pub provider: Arc<dyn Provider>,
    pub meter: Arc<Meter>,
}

impl Models {
    pub fn new(config: &Config) -> Models {
        let b = &config.budgets;
        Models {
            default_model: config.model.default.clone(),
            settings: llm_settings(config),
            limits: BudgetLimits {
                max_input_tokens: Some(b.max_input_tokens),
                max_output_tokens: Some(b.max_output_tokens),
                max_cost_usd: Some(b.max_cost_usd),
                max_turns: Some(b.max_turns),
                max_wall_time: Some(Duration::from_secs(b.max_wall_seconds)),
            },
            prices: config
                .model
                .prices
                .iter()
                .map(|(name, p)| {
                    (
                        name.clone(),
                        Price {
                            input_per_mtok: p.input_per_mtok,
                            cached_input_per_mtok: p.cached_input_per_mtok,
                            output_per_mtok: p.output_per_mtok,
                        },
                    )
                })
                .collect(),
        }
    }

    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// A fresh meter for one job on `model`, with the configured budgets and its price.
    pub fn meter(&self, model: &str) -> Meter {
        Meter::new(model, self.limits, self.price(model))
    }

    /// The configured price of `model`; a model that runs here costs nothing unless the
    /// configuration prices it (its review says $0, not "cost unknown").
    fn price(&self, model: &str) -> Option<Price> {
        price_for(self.prices.iter().map(|(k, v)| (k, v)), model).or_else(|| {
            bugloop_llm::ModelSpec::parse(model)
                .is_ok_and(|spec| spec.runs_in_process())
                .then_some(Price::FREE)
        })
    }

    /// Connects `model` (default: the configured one), metered by a fresh meter.
    pub fn connect(&self, model: Option<&str>) -> Result<Connected, AppError> {
        let model = model.unwrap_or(&self.default_model);
        let meter = Arc::new(self.meter(model));
        let provider = self
            .connect_metered(model, meter.clone())
            .map_err(|source| AppError::Model {
                model: model.to_owned(),
                source: Box::new(source),
            })?;
        Ok(Connected { provider, meter })
    }

    /// Connects `model` spending from `meter` (a converge auditor on a model of its own spends
    /// from the run's one budget).
    pub fn connect_metered(
        &self,
        model: &str,
        meter: Arc<Meter>,
    ) -> Result<Arc<dyn Provider>, bugloop_llm::LlmError> {
        let inner = bugloop_llm::connect(model, &self.settings, &|var| std::env::var(var).ok())?;
        Ok(Arc::new(Metered::new(inner, meter)))
    }
}

/// The model layer's settings from the configuration (and `BUGLOOP_MODEL_DIR`,
/// `BUGLOOP_RECORD`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_that_runs_here_costs_nothing_unless_priced_and_a_remote_one_is_unknown() {
        let mut config = Config::default();
        let models = Models::new(&config);
        for here in [
            "local:smollm2",
            "script:/tmp/a.jsonl",
            "replay:/tmp/c.jsonl",
        ] {
            assert_eq!(models.price(here), Some(Price::FREE), "{here}");
            assert_eq!(models.meter(here).summary().cost_usd, Some(0.0), "{here}");
        }
        assert_eq!(models.price("ollama:qwen2.5-coder"), None);
        assert_eq!(
            models.meter("ollama:qwen2.5-coder").summary().cost_usd,
            None
        );
        config.model.prices.insert(
            "local:".into(),
            bugloop_config::Price {
                input_per_mtok: 2.0,
                cached_input_per_mtok: None,
                output_per_mtok: 3.0,
            },
        );
        let priced = Models::new(&config).price("local:smollm2");
        assert_eq!(priced.map(|p| p.output_per_mtok), Some(3.0));
    }
}
