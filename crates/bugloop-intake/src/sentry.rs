//! Sentry's webhooks (an internal integration's issue alerts, `Sentry-Hook-Resource:
//! event_alert`, and its `error` resource) read into a report: the event's exception and stack
//! frames written as the trace its platform prints (a Python traceback, a JavaScript or Java
//! stack, a Go panic), so it is parsed, fingerprinted and counted exactly as the same error sent
//! to `bugloop report` would be. Sentry lists frames oldest first.

use serde_json::Value;

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
    /// The event's id (32 hex digits), which Sentry signs with the body.
    pub event_id: Option<String>,
}

/// The most characters of one field written into the trace (a name, a path, a message).
const MAX_FIELD_CHARS: usize = 300;

/// A field as one inert line of at most [`MAX_FIELD_CHARS`]: control characters (a newline
/// that would start a frame of another language's trace) become spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_FIELD_CHARS)
        .collect()
}

/// A text field of `value`, leniently: a string, or a number written out; anything else none.
fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) if !text.trim().is_empty() => Some(one_line(text)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A line or column number, leniently (a string of digits too); none when it is not one.
fn number_of(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// One stack frame of the payload.
#[derive(Debug, Default)]
struct SentryFrame {
    filename: Option<String>,
    abs_path: Option<String>,
    function: Option<String>,
    module: Option<String>,
    lineno: Option<u64>,
    colno: Option<u64>,
    context_line: Option<String>,
}

impl SentryFrame {
    fn of(value: &Value) -> Option<SentryFrame> {
        let field = |name: &str| text_of(value.get(name));
        value.is_object().then(|| SentryFrame {
            filename: field("filename"),
            abs_path: field("abs_path"),
            function: field("function"),
            module: field("module"),
            lineno: number_of(value.get("lineno")),
            colno: number_of(value.get("colno")),
            context_line: field("context_line"),
        })
    }

    fn file(&self) -> &str {
        self.abs_path
            .as_deref()
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

/// The exception the event reports (the last of its chain, the one raised), leniently.
struct Exception {
    kind: Option<String>,
    value: Option<String>,
    module: Option<String>,
    /// Oldest first, at most [`crate::MAX_FRAMES`] (the innermost kept).
    frames: Vec<SentryFrame>,
}

fn exception_of(event: &Value) -> Option<Exception> {
    let last = event
        .get("exception")?
        .get("values")?
        .as_array()?
        .iter()
        .rev()
        .find(|e| e.is_object())?;
    let mut frames: Vec<SentryFrame> = last
        .get("stacktrace")
        .and_then(|s| s.get("frames"))
        .and_then(Value::as_array)
        .map(|frames| frames.iter().filter_map(SentryFrame::of).collect())
        .unwrap_or_default();
    if frames.len() > crate::MAX_FRAMES {
        frames.drain(..frames.len() - crate::MAX_FRAMES);
    }
    let exception = Exception {
        kind: text_of(last.get("type")),
        value: text_of(last.get("value")),
        module: text_of(last.get("module")),
        frames,
    };
    (exception.kind.is_some() || exception.value.is_some()).then_some(exception)
}

/// Reads a Sentry delivery of `resource` (the `Sentry-Hook-Resource` header).
pub fn report(resource: &str, payload: &[u8]) -> Result<SentryReport, SentryError> {
    if !matches!(resource, "event_alert" | "error") {
        return Err(SentryError::Resource(resource.to_owned()));
    }
    let delivery: Value =
        serde_json::from_slice(payload).map_err(|e| SentryError::Payload(e.to_string()))?;
    let data = delivery.get("data");
    let event = data
        .and_then(|d| d.get("event").or_else(|| d.get("error")))
        .filter(|e| e.is_object())
        .ok_or_else(|| SentryError::Payload("it has no data.event".to_owned()))?;
    let platform = text_of(event.get("platform")).unwrap_or_default();
    let text = match exception_of(event) {
        Some(exception) => {
            let (text, language) = trace(&platform, &exception);
            // What the intake reads back must be what Sentry reported: the same language and
            // every frame, or the payload was made to read as something else.
            let read =
                crate::read(text.as_bytes()).map_err(|e| SentryError::Payload(e.to_string()))?;
            let frames = exception.frames.len().min(crate::MAX_FRAMES);
            if read.language != language
                || (read.frames.len() != frames && language != crate::Language::Go)
            {
                return Err(SentryError::Payload(format!(
                    "its exception does not read back as the {language:?} trace it is \
                     ({} of {frames} frames)",
                    read.frames.len()
                )));
            }
            text
        }
        None => {
            let message = text_of(event.get("message"))
                .or_else(|| text_of(event.get("title")))
                .ok_or(SentryError::Empty)?;
            // A message event: a JSON log line, so its level is read as a log's.
            let level = text_of(event.get("level")).unwrap_or_else(|| "error".to_owned());
            serde_json::json!({"level": level, "message": message}).to_string()
        }
    };
    let project_id = text_of(event.get("project"));
    // `https://sentry.io/api/0/projects/<org>/<project>/events/<id>/`.
    let project_slug = text_of(event.get("url")).and_then(|url| {
        let rest = &url[url.find("/projects/")? + "/projects/".len()..];
        let mut parts = rest.split('/');
        let (_org, slug) = (parts.next()?, parts.next()?);
        (!slug.is_empty()).then(|| slug.to_owned())
    });
    let event_id = text_of(event.get("event_id"))
        .filter(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    Ok(SentryReport {
        text,
        project_id,
        project_slug,
        web_url: text_of(event.get("web_url")),
        event_id,
    })
}

/// The exception as its platform prints it (frames oldest first, as Sentry lists them).
fn trace(platform: &str, exception: &Exception) -> (String, crate::Language) {
    use crate::Language;
    let kind = exception.kind.as_deref().unwrap_or("Error");
    let value = exception.value.as_deref().unwrap_or_default();
    let frames: &[SentryFrame] = &exception.frames;
    let mut out = String::new();
    let language = match platform {
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
            Language::JavaScript
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
            Language::Java
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
            Language::Go
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
                    out.push_str(&format!("    {context}\n"));
                }
            }
            out.push_str(&format!("{kind}: {value}\n"));
            Language::Python
        }
    };
    (out, language)
}
