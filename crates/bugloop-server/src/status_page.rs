//! The App server's status page (`GET /`): the queue's jobs by state, and the newest jobs with
//! who ran them, how long they took and how they ended. Everything shown comes from deliveries
//! and errors, which others wrote: all of it is escaped, and the page's content security policy
//! lets it run no script and load nothing.

use bugloop_queue::{JobState, Queue};

use axum::http::StatusCode;

/// How many jobs the page lists.
const SHOWN: usize = 100;

/// The page's headers: HTML that runs nothing and loads nothing from elsewhere.
const HEADERS: [(&str, &str); 2] = [
    ("content-type", "text/html; charset=utf-8"),
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'",
    ),
];

/// Text for HTML, in an element or a quoted attribute.
fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    html_escape::encode_quoted_attribute(text)
}

fn time(millis: i64) -> String {
    jiff::Timestamp::from_millisecond(millis)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

/// The page, or what kept it from being made.
pub(crate) async fn render(
    queue: &Queue,
) -> (StatusCode, [(&'static str, &'static str); 2], String) {
    let (jobs, counts) = match (queue.jobs().await, queue.counts().await) {
        (Ok(jobs), Ok(counts)) => (jobs, counts),
        (Err(error), _) | (_, Err(error)) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                HEADERS,
                format!(
                    "<!doctype html><title>bugloop jobs</title><p>The job queue does not answer: {}</p>",
                    escape(&error.to_string())
                ),
            );
        }
    };
    let mut totals = Vec::new();
    for state in [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Dead,
        JobState::Superseded,
    ] {
        let count: i64 = counts
            .iter()
            .filter(|(_, s, _)| *s == state)
            .map(|(_, _, n)| n)
            .sum();
        totals.push(format!(
            "<li class=\"{state}\"><b>{count}</b> {state}</li>",
            state = state.as_str()
        ));
    }
    let mut rows = String::new();
    for job in jobs.iter().take(SHOWN) {
        let took = match (job.started_at, job.finished_at) {
            (Some(start), Some(end)) if end >= start => {
                format!("{:.1} s", (end - start) as f64 / 1000.0)
            }
            _ => String::new(),
        };
        rows.push_str(&format!(
            "<tr class=\"{state}\"><td><code>{id}</code></td><td>{kind}</td><td>{conversation}</td>\
             <td>{state}</td><td>{attempts}</td><td>{worker}</td><td>{created}</td><td>{took}</td>\
             <td>{error}</td></tr>\n",
            id = escape(&job.id),
            kind = job.kind.name(),
            conversation = escape(&job.conversation),
            state = job.state.as_str(),
            attempts = job.attempts,
            worker = escape(job.lease_owner.as_deref().unwrap_or("")),
            created = time(job.created_at),
            error = escape(job.error.as_deref().unwrap_or("")),
        ));
    }
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>bugloop jobs</title>\n\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}\
         td:nth-child(1),td:nth-child(6),td:nth-child(7),td:nth-child(8){{white-space:nowrap}}\
         ul.totals{{list-style:none;padding:0;display:flex;gap:1.5em}}\
         tr.dead td{{background:#fdd}}tr.running td{{background:#ffd}}tr.done td{{background:#dfd}}\
         tr.superseded td{{color:#777}}</style>\n\
         </head><body><h1>bugloop jobs</h1>\n<ul class=\"totals\">{totals}</ul>\n\
         <p>{shown} of {total} jobs, newest first.</p>\n\
         <table><thead><tr><th>job</th><th>kind</th><th>conversation</th><th>state</th>\
         <th>attempts</th><th>worker</th><th>queued</th><th>took</th><th>error</th></tr></thead>\
         <tbody>\n{rows}</tbody></table>\n</body></html>\n",
        totals = totals.join(""),
        shown = jobs.len().min(SHOWN),
        total = jobs.len(),
    );
    (StatusCode::OK, HEADERS, body)
}
