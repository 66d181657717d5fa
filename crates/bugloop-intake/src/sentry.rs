//! Sentry's webhooks (an internal integration's issue alerts, `Sentry-Hook-Resource:
//! event_alert`, and its `error` resource) read into a report: the event's exception and stack
//! frames written as the trace its platform prints (a Python traceback, a JavaScript or Java
//! stack, a Go panic), so it is parsed, fingerprinted and counted exactly as the same error sent
//! to `bugloop report` would be. Sentry lists frames oldest first.

use serde::Deserialize;

/// What a Sentry delivery was, when it files nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SentryError {
    #[error("Sentry's {0:?} resource carries no error event (only event_alert and error do)")]
    Resource(String),
    #[error("the Sentry payload is not the JSON of an event alert: {0}")]
    Payload(String),
    #[error("the Sentry event has neither an exception nor a message")]
    Empty,
}

/// A Sentry event, as a report to file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentryReport {
    /// The report's text (a trace in the platform's own format, or the message).
    pub text: String,
    /// The Sentry project: its numeric id, and its slug where the event's API URL names it.
    pub project_id: Option<String>,
    pub project_slug: Option<String>,
    /// The event on Sentry, for the issue.
    pub web_url: Option<String>,
}

#[derive(Deserialize)]
struct Delivery {
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    #[serde(default)]
    event: Option<Event>,
    #[serde(default)]
    error: Option<Event>,
}

#[derive(Deserialize, Default)]
struct Event {
    #[serde(default)]
    platform: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    exception: Option<Exceptions>,
    #[serde(default)]
    project: Option<serde_json::Value>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    web_url: Option<String>,
    #[serde(default)]
    level: Option<String>,
}

#[derive(Deserialize, Default)]
struct Exceptions {
    #[serde(default)]
    values: Vec<Exception>,
}

#[derive(Deserialize, Default)]
struct Exception {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    stacktrace: Option<Stacktrace>,
}

#[derive(Deserialize, Default)]
struct Stacktrace {
    #[serde(default)]
    frames: Vec<SentryFrame>,
}

#[derive(Deserialize, Default)]
struct SentryFrame {
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    abs_path: Option<String>,
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    lineno: Option<u64>,
    #[serde(default)]
    colno: Option<u64>,
    #[serde(default)]
    context_line: Option<String>,
}

impl SentryFrame {
    fn file(&self) -> &str {
        self.abs_path
            .as_deref()
            .filter(|p| !p.is_empty())
            .or(self.filename.as_deref())
            .unwrap_or("<unknown>")
    }

    fn function(&self) -> &str {
        self.function.as_deref().unwrap_or("<module>")
    }

    fn line(&self) -> u64 {
        self.lineno.unwrap_or(0)
    }
}

/// Reads a Sentry delivery of `resource` (the `Sentry-Hook-Resource` header).
pub fn report(resource: &str, payload: &[u8]) -> Result<SentryReport, SentryError> {
    if !matches!(resource, "event_alert" | "error") {
        return Err(SentryError::Resource(resource.to_owned()));
    }
    let delivery: Delivery =
        serde_json::from_slice(payload).map_err(|e| SentryError::Payload(e.to_string()))?;
    let event = delivery
        .data
        .event
        .or(delivery.data.error)
        .ok_or_else(|| SentryError::Payload("it has no data.event".to_owned()))?;
    let exception = event
        .exception
        .as_ref()
        .and_then(|e| e.values.last())
        .filter(|e| e.kind.is_some() || e.value.is_some());
    let text = match exception {
        Some(exception) => trace(event.platform.as_deref().unwrap_or_default(), exception),
        None => {
            let message = event
                .message
                .as_deref()
                .filter(|m| !m.trim().is_empty())
                .or(event.title.as_deref())
                .filter(|m| !m.trim().is_empty())
                .ok_or(SentryError::Empty)?;
            // A message event: a JSON log line, so its level is read as a log's.
            serde_json::json!({"level": event.level.as_deref().unwrap_or("error"), "message": message})
                .to_string()
        }
    };
    let project_id = match &event.project {
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    // `https://sentry.io/api/0/projects/<org>/<project>/events/<id>/`.
    let project_slug = event.url.as_deref().and_then(|url| {
        let rest = &url[url.find("/projects/")? + "/projects/".len()..];
        let mut parts = rest.split('/');
        let (_org, slug) = (parts.next()?, parts.next()?);
        (!slug.is_empty()).then(|| slug.to_owned())
    });
    Ok(SentryReport {
        text,
        project_id,
        project_slug,
        web_url: event.web_url,
    })
}

/// The exception as its platform prints it (frames oldest first, as Sentry lists them).
fn trace(platform: &str, exception: &Exception) -> String {
    let kind = exception.kind.as_deref().unwrap_or("Error");
    let value = exception.value.as_deref().unwrap_or_default();
    let frames: &[SentryFrame] = exception
        .stacktrace
        .as_ref()
        .map_or(&[], |s| s.frames.as_slice());
    let one_line = |text: &str| text.replace(['\r', '\n'], " ");
    let value = one_line(value);
    let mut out = String::new();
    match platform {
        "javascript" | "node" => {
            out.push_str(&format!("{kind}: {value}\n"));
            for frame in frames.iter().rev() {
                out.push_str(&format!(
                    "    at {} ({}:{}:{})\n",
                    frame.function.as_deref().unwrap_or("<anonymous>"),
                    frame.file(),
                    frame.line(),
                    frame.colno.unwrap_or(0)
                ));
            }
        }
        "java" => {
            let qualified = match &exception.module {
                Some(module) if !module.is_empty() => format!("{module}.{kind}"),
                _ => kind.to_owned(),
            };
            out.push_str(&format!("{qualified}: {value}\n"));
            for frame in frames.iter().rev() {
                let class = frame.module.as_deref().unwrap_or("Unknown");
                let file = frame.filename.as_deref().unwrap_or("Unknown Source");
                out.push_str(&format!(
                    "\tat {class}.{}({file}:{})\n",
                    frame.function(),
                    frame.line()
                ));
            }
        }
        "go" => {
            out.push_str(&format!("panic: {value}\n\ngoroutine 1 [running]:\n"));
            for frame in frames.iter().rev() {
                let function = match &frame.module {
                    Some(module) if !module.is_empty() => format!("{module}.{}", frame.function()),
                    _ => frame.function().to_owned(),
                };
                out.push_str(&format!(
                    "{function}(...)\n\t{}:{} +0x0\n",
                    frame.file(),
                    frame.line()
                ));
            }
        }
        // Python, and the platforms whose traces the intake does not read: a traceback, whose
        // frames it does.
        _ => {
            out.push_str("Traceback (most recent call last):\n");
            for frame in frames {
                out.push_str(&format!(
                    "  File \"{}\", line {}, in {}\n",
                    frame.file().replace('"', "'"),
                    frame.line(),
                    frame.function()
                ));
                if let Some(context) = frame.context_line.as_deref().map(str::trim)
                    && !context.is_empty()
                {
                    out.push_str(&format!("    {}\n", one_line(context)));
                }
            }
            out.push_str(&format!("{kind}: {value}\n"));
        }
    }
    out
}
