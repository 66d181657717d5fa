//! The reviewer's web tools (pr-reviewer-design.md 4.2, "External Intelligence Tools"):
//! `web_fetch(url)` and, when a search endpoint is configured, `web_search(query)`. Off unless
//! `review.enable_web`.
//!
//! The code under review is written by whoever opened the change and it steers the model, so a
//! prompt injection could ask for `https://attacker.example/?code=...` or for the cloud metadata
//! service. What stops it is here: only hosts on `review.web.allow` (and the configured search
//! endpoint) are contacted; a name that resolves to a private, loopback or link-local address is
//! refused after resolution (and the connection goes to the addresses checked, so a second lookup
//! cannot swap them) unless the host is on `review.web.allow_private`; redirects are checked like
//! the first URL; no proxy from the environment is used; responses are text only, cut at
//! `review.web.max_kib`, and a request takes at most `review.web.timeout_seconds`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bugloop_config::ReviewConfig;
use bugloop_tools::{ToolContext, ToolError, TypedTool};
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;

/// Shown to the model when web access is on (`{hosts}`, `{search}`).
pub(crate) const PROMPT: &str = include_str!("../../prompts/review-web.md");

/// At most this many redirects per request.
const MAX_REDIRECTS: usize = 5;
/// Search results shown.
const MAX_RESULTS: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("the reviewer's web client cannot be built: {0}")]
    Client(#[from] reqwest::Error),
}

/// Which hosts may be contacted.
#[derive(Debug, Clone)]
struct HostRules {
    allow: Vec<String>,
    allow_private: Vec<String>,
    /// The search endpoint's host, contacted for searches only.
    search_host: Option<String>,
}

fn matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        None => host == pattern,
    }
}

/// The host as written in a URL, lower-cased, without the brackets of an IPv6 literal.
fn host_of(url: &Url) -> Option<String> {
    let host = url.host_str()?.to_ascii_lowercase();
    Some(
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map_or(host.clone(), str::to_owned),
    )
}

impl HostRules {
    fn private_allowed(&self, host: &str) -> bool {
        self.allow_private.iter().any(|p| matches(p, host))
    }

    /// Refuses a URL the reviewer may not contact; `search` allows the search endpoint's host.
    fn check(&self, url: &Url, search: bool) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{url}: only http and https URLs are fetched"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!("{url}: URLs with credentials are not fetched"));
        }
        let Some(host) = host_of(url) else {
            return Err(format!("{url}: the URL has no host"));
        };
        let allowed = self.allow.iter().any(|p| matches(p, &host))
            || (search && self.search_host.as_deref() == Some(host.as_str()));
        if !allowed {
            return Err(format!(
                "{host} is not on the allow-list (review.web.allow: {})",
                if self.allow.is_empty() {
                    "empty".to_owned()
                } else {
                    self.allow.join(", ")
                }
            ));
        }
        // An address literal is never resolved, so it is checked here.
        if let Ok(ip) = host.parse::<IpAddr>()
            && !is_public(ip)
            && !self.private_allowed(&host)
        {
            return Err(format!(
                "{host} is a private, loopback or link-local address (not on \
                 review.web.allow_private)"
            ));
        }
        Ok(())
    }
}

/// Whether an address is on the public internet: not loopback, private, link-local, shared,
/// multicast, documentation, benchmarking or reserved space (IPv4-mapped and NAT64 IPv6 addresses
/// are judged by the IPv4 address inside).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (segments[0] & 0xfe00) == 0xfc00
                || (segments[0] & 0xffc0) == 0xfe80
                || (segments[0] & 0xffc0) == 0xfec0
                || (segments[0] == 0x2001 && segments[1] == 0x0db8))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

/// Resolves names for the client and refuses those that lead to non-public addresses; the
/// connection uses exactly the addresses returned here.
#[derive(Debug)]
struct CheckedResolver {
    rules: HostRules,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let private_allowed = self.rules.private_allowed(&host);
        Box::pin(async move {
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addresses.iter().find(|a| !is_public(a.ip()))
                && !private_allowed
            {
                return Err(format!(
                    "{host} resolves to {}, a private, loopback or link-local address (not on \
                     review.web.allow_private)",
                    bad.ip()
                )
                .into());
            }
            let addresses: reqwest::dns::Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

/// The reviewer's access to the web, as configured.
#[derive(Debug)]
pub(crate) struct WebAccess {
    rules: HostRules,
    search_url: Option<String>,
    max_bytes: usize,
    client: reqwest::Client,
}

/// What a fetch read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// Where the text came from, after redirects.
    pub url: String,
    pub text: String,
    pub truncated: bool,
}

impl WebAccess {
    /// `None` when `review.enable_web` is off. The configuration was validated.
    pub fn new(review: &ReviewConfig) -> Result<Option<Arc<Self>>, WebError> {
        if !review.enable_web {
            return Ok(None);
        }
        let web = &review.web;
        let search_host = web
            .search_url
            .as_deref()
            .and_then(|u| Url::parse(&u.replace("{query}", "q")).ok())
            .and_then(|u| host_of(&u));
        let rules = HostRules {
            allow: web.allow.iter().map(|h| h.to_ascii_lowercase()).collect(),
            allow_private: web
                .allow_private
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            search_host,
        };
        let redirect_rules = rules.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            // A redirect from the search endpoint is not a search: the allow-list applies.
            match redirect_rules.check(attempt.url(), false) {
                Ok(()) => attempt.follow(),
                Err(refused) => attempt.error(format!("redirect refused: {refused}")),
            }
        });
        let timeout = Duration::from_secs(u64::from(web.timeout_seconds));
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(redirects)
            .dns_resolver(Arc::new(CheckedResolver {
                rules: rules.clone(),
            }))
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!(
                "bugloop/",
                env!("CARGO_PKG_VERSION"),
                " (code review)"
            ))
            .build()?;
        Ok(Some(Arc::new(WebAccess {
            rules,
            search_url: web.search_url.clone(),
            max_bytes: usize::try_from(web.max_kib)
                .unwrap_or(usize::MAX)
                .saturating_mul(1024),
            client,
        })))
    }

    pub fn can_search(&self) -> bool {
        self.search_url.is_some()
    }

    /// The allowed hosts, for the prompt.
    pub fn allowed_hosts(&self) -> &[String] {
        &self.rules.allow
    }

    /// Reads a page as text. Every refusal and failure is a message for the model.
    pub async fn fetch(&self, url: &str) -> Result<Page, String> {
        let url = Url::parse(url.trim()).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        self.get(url, false).await
    }

    async fn get(&self, url: Url, search: bool) -> Result<Page, String> {
        self.rules.check(&url, search)?;
        let mut response = self
            .client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/plain, text/markdown, application/json, application/xml;q=0.9",
            )
            .send()
            .await
            .map_err(|e| describe(&url, &e))?;
        let status = response.status();
        let final_url = response.url().to_string();
        if !status.is_success() {
            return Err(format!("{final_url} answered HTTP {status}"));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/plain")
            .to_ascii_lowercase();
        let html =
            content_type.starts_with("text/html") || content_type.starts_with("application/xhtml");
        let textual = content_type.starts_with("text/")
            || html
            || content_type.starts_with("application/json")
            || content_type.starts_with("application/xml")
            || content_type.contains("+json")
            || content_type.contains("+xml");
        if !textual {
            return Err(format!(
                "{final_url} is {content_type}, not text; only text is read"
            ));
        }
        let mut bytes = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| describe(&url, &e))? {
            let room = self.max_bytes.saturating_sub(bytes.len());
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        let raw = String::from_utf8_lossy(&bytes);
        let text = if html {
            html_to_text(&raw)
        } else {
            raw.into_owned()
        };
        Ok(Page {
            url: final_url,
            text,
            truncated,
        })
    }

    /// Asks the search endpoint; results as a Markdown list.
    pub async fn search(&self, query: &str) -> Result<String, String> {
        let Some(template) = &self.search_url else {
            return Err("no search endpoint is configured (review.web.search_url)".to_owned());
        };
        let url = template.replace("{query}", &percent_encode(query.trim()));
        let url = Url::parse(&url).map_err(|e| format!("the search URL is not a URL: {e}"))?;
        let page = self.get(url, true).await?;
        let answer: SearchAnswer = serde_json::from_str(&page.text)
            .map_err(|e| format!("the search endpoint's answer is not SearXNG JSON: {e}"))?;
        if answer.results.is_empty() {
            return Ok(format!("No results for {query:?}."));
        }
        let mut out = String::new();
        for result in answer.results.iter().take(MAX_RESULTS) {
            out.push_str(&format!(
                "- [{}]({})\n  {}\n",
                one_line(&result.title),
                result.url,
                one_line(&result.content)
            ));
        }
        Ok(out)
    }
}

#[derive(Debug, Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    results: Vec<SearchResult>,
}

#[derive(Debug, Deserialize)]
struct SearchResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::context::cut(&flat, 300).0
}

/// An error with its causes (a refused redirect or address is the innermost one).
fn describe(url: &Url, error: &reqwest::Error) -> String {
    let mut message = if error.is_timeout() {
        format!("{url}: timed out")
    } else {
        format!("{url}: {error}")
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The readable text of an HTML page: scripts, styles and tags removed, common entities decoded,
/// blank runs collapsed. Not a renderer: enough for documentation pages.
pub(crate) fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let lower = html.to_ascii_lowercase();
    let mut rest = 0;
    while rest < html.len() {
        let Some(open) = html[rest..].find('<').map(|i| rest + i) else {
            out.push_str(&html[rest..]);
            break;
        };
        out.push_str(&html[rest..open]);
        let Some(close) = html[open..].find('>').map(|i| open + i) else {
            break;
        };
        let tag = &lower[open + 1..close];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        rest = close + 1;
        if !tag.starts_with('/') && matches!(name.as_str(), "script" | "style" | "noscript") {
            let end = format!("</{name}");
            rest = lower[rest..].find(&end).map_or(html.len(), |i| rest + i);
            continue;
        }
        if matches!(
            name.as_str(),
            "p" | "br" | "div" | "li" | "tr" | "h1" | "h2" | "h3" | "h4" | "pre" | "section"
        ) {
            out.push('\n');
        }
    }
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    let mut text = String::new();
    let mut blank = false;
    for line in decoded.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            if !blank && !text.is_empty() {
                text.push('\n');
            }
            blank = true;
        } else {
            text.push_str(line);
            text.push('\n');
            blank = false;
        }
    }
    text
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WebFetchParams {
    /// An http(s) URL on one of the allowed hosts.
    pub url: String,
}

/// `web_fetch(url)`.
#[derive(Debug)]
pub(crate) struct WebFetch {
    pub web: Arc<WebAccess>,
}

#[async_trait]
impl TypedTool for WebFetch {
    type Params = WebFetchParams;
    bugloop_tools::tool_named!("web_fetch");

    async fn run(&self, _: &ToolContext, params: WebFetchParams) -> Result<String, ToolError> {
        let page = self
            .web
            .fetch(&params.url)
            .await
            .map_err(ToolError::Model)?;
        let cut = if page.truncated {
            "\n[... cut at the size limit ...]"
        } else {
            ""
        };
        Ok(format!("{}\n\n{}{cut}", page.url, page.text.trim_end()))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WebSearchParams {
    /// What to look for: a library and API name, an error, a CVE id.
    pub query: String,
}

/// `web_search(query)`, offered only with a search endpoint.
#[derive(Debug)]
pub(crate) struct WebSearch {
    pub web: Arc<WebAccess>,
}

#[async_trait]
impl TypedTool for WebSearch {
    type Params = WebSearchParams;
    bugloop_tools::tool_named!("web_search");

    async fn run(&self, _: &ToolContext, params: WebSearchParams) -> Result<String, ToolError> {
        self.web
            .search(&params.query)
            .await
            .map_err(ToolError::Model)
    }
}

#[cfg(test)]
mod tests;
