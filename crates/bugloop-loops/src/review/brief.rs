//! Stages 3 and 4 of a review: what the reviewer is told besides the change (rule files, the
//! sensitive-data verdict, the open findings, a converge auditor's focus, web access) and the plan
//! of model sessions that fits the per-call budget.

use std::sync::Arc;

use bugloop_domain::filter::FilterSettings;
use bugloop_domain::thread::ThreadState;
use bugloop_llm::Capabilities;
use bugloop_report::review::{RefusedFile, ReviewedScope};

use super::conversation::Conversation;
use super::increment::Shown;
use super::{ReviewError, ReviewRequest, web};
use crate::ProgressEvent;
use crate::context::{ContextReader, RuleFile, SensitivityVerdict, read_rules, sensitivity};
use crate::env::LoopEnv;
use crate::plan::{Batch, Plan, Reader, estimate_tokens, plan};
use crate::prompt;

/// Below this many tokens of context a model gets the compact prompt.
const SMALL_CONTEXT: u32 = 16_000;
/// Output tokens per call in a tools session.
const TOOLS_MAX_OUTPUT: u32 = 4_096;
/// Diff tokens in one of a small model's questions: a few hunks, so its short context holds the
/// question whole and its answer comes quickly.
const SMALL_QUESTION_TOKENS: u64 = 600;
/// Output tokens of a small model's answer: at most one finding, its strings bounded.
const SMALL_ANSWER_TOKENS: u32 = 192;

/// Everything the sessions are given.
pub(super) struct Brief {
    pub system: String,
    /// The model calls tools (four passes); otherwise it gives one structured answer.
    pub tools_mode: bool,
    /// A small model answering without tools: short questions about code, each answered with
    /// at most one finding (`crate::plan::Reader::SmallModel`).
    pub questions: bool,
    pub output_tokens: u32,
    pub web: Option<Arc<web::WebAccess>>,
    /// The filter pipeline's settings, the comment limit already reduced by the open findings.
    pub filter: FilterSettings,
    /// The comment limit per change, as configured.
    pub comment_limit: usize,
    pub sensitivity: SensitivityVerdict,
    pub refused_context: Vec<RefusedFile>,
    pub plan: Plan,
    /// What the change's prompt says first about the diff it shows (an incremental review's
    /// note), or nothing.
    pub preface: String,
}

pub(super) fn prepare(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
    shown: &Shown,
) -> Result<Brief, ReviewError> {
    // 3. What the reviewer is told besides the change: the open findings it is asked about.
    let config = env.config();
    let open = open_findings_asked(conversation, shown);
    let told = read_context(env, request, conversation)?;

    // 4. Model calls within the budget.
    let capabilities = env.provider.capabilities();
    let tools_mode = capabilities.tools;
    let compact = capabilities
        .context_tokens
        .is_some_and(|context| context < SMALL_CONTEXT);
    let questions = compact && !tools_mode;
    let system = if questions {
        small_system_prompt(request, &told)
    } else {
        system_prompt(request, &told, &open, tools_mode, compact)
    };
    // Web access needs tools; a model answering in one structured reply cannot use it.
    let web = if tools_mode {
        web::WebAccess::new(&config.review)?
    } else {
        None
    };
    let system = match &web {
        Some(web) => format!("{system}\n\n{}", web_prompt(web)),
        None => system,
    };
    let output_tokens = output_tokens(capabilities, config.review.max_output_tokens_per_call);
    let (budget, ceiling) = call_budget(
        capabilities,
        &system,
        output_tokens,
        config.review.max_tokens_per_call,
    );
    let (budget, ceiling, reader) = if questions {
        // A small model's questions are short on purpose: nothing stretches them.
        let budget = budget.min(SMALL_QUESTION_TOKENS);
        (budget, budget, Reader::SmallModel)
    } else {
        (budget, ceiling, Reader::Reviewer)
    };
    let plan = plan_calls(env, shown, &told.settings, (budget, ceiling), reader);
    Ok(Brief {
        system,
        tools_mode,
        questions,
        output_tokens,
        web,
        filter: told.settings,
        comment_limit: told.comment_limit,
        sensitivity: told.verdict,
        refused_context: told.refused_context,
        plan,
        preface: preface(shown),
    })
}

/// The unresolved findings this review asks the model about again: they go into the prompt so
/// the model does not report them twice.
fn open_findings_asked<'a>(conversation: &'a Conversation, shown: &Shown) -> Vec<&'a ThreadState> {
    conversation
        .state
        .unresolved()
        .filter(|thread| {
            thread
                .finding_id
                .as_ref()
                .is_some_and(|id| shown.asked_ids.iter().any(|asked| asked == id.as_str()))
        })
        .collect()
}

/// What the workspace tells the reviewer: its rule files and the sensitive-data verdict, and the
/// filter settings that verdict leads to.
struct ContextTold {
    rules: Vec<RuleFile>,
    verdict: SensitivityVerdict,
    refused_context: Vec<RefusedFile>,
    /// The comment limit already reduced by the open findings.
    settings: FilterSettings,
    /// The comment limit per change, as configured.
    comment_limit: usize,
}

/// Reads the rule files and the sensitivity of the workspace, and sets the filter so that open
/// findings count against the comment limit.
fn read_context(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Result<ContextTold, ReviewError> {
    let config = env.config();
    let mut context_reader = ContextReader::new(&request.workspace);
    let rules = match &env.settings.rules_root {
        Some(root) => read_rules(&mut ContextReader::new(root)),
        None => read_rules(&mut context_reader),
    };
    let verdict = sensitivity(&mut context_reader, config.review.sensitive_data);
    let refused_context = context_reader.into_refused();
    let mut settings = bugloop_config::filter_settings_for(config, verdict.sensitive)?;
    // The comment limit is per change, as on a pull request: open findings count against it, so
    // re-runs never add comments beyond it.
    let comment_limit = settings.comment_limit;
    settings.comment_limit = comment_limit.saturating_sub(conversation.open_ids.len());
    Ok(ContextTold {
        rules,
        verdict,
        refused_context,
        settings,
        comment_limit,
    })
}

/// The system prompt before any web access: shorter rules and findings for a small model, and a
/// converge auditor's focus at the end.
fn system_prompt(
    request: &ReviewRequest,
    told: &ContextTold,
    open: &[&ThreadState],
    tools_mode: bool,
    compact: bool,
) -> String {
    let previous_chars = if compact { 2_000 } else { 16_000 };
    let rules_text = if compact && !told.rules.is_empty() {
        // A small model cannot take long rule files; give it the first of them, cut.
        let (text, _) = crate::context::cut(&prompt::rules_block(&told.rules), 1_200);
        text
    } else {
        prompt::rules_block(&told.rules)
    };
    let mut system = prompt::system(&prompt::SystemInputs {
        compact,
        tools: tools_mode,
        threshold: told.settings.threshold,
        sensitivity: &told.verdict,
        promotion: told.settings.security_promotion,
        rules: &rules_text,
        previous: &prompt::previous_block(open, previous_chars),
    });
    if let Some(focus) = &request.focus {
        system.push_str("\n\n");
        system.push_str(focus.trim());
        system.push('\n');
    }
    system
}

/// The system prompt of a small model's questions: what a bug is and how to answer, and the
/// start of the repository's rules (a small context cannot take them whole).
fn small_system_prompt(request: &ReviewRequest, told: &ContextTold) -> String {
    let rules = if told.rules.is_empty() {
        String::new()
    } else {
        let (text, _) = crate::context::cut(&prompt::rules_block(&told.rules), 800);
        format!("\n## Repository rules\n\n{text}")
    };
    let mut system = prompt::fill(prompt::SMALL_QUESTION, &[("rules", &rules)]);
    if let Some(focus) = &request.focus {
        system.push_str("\n\n");
        system.push_str(focus.trim());
        system.push('\n');
    }
    system
}

/// The prompt's part on web access: which hosts the model may fetch and whether it can search.
fn web_prompt(web: &web::WebAccess) -> String {
    prompt::fill(
        web::PROMPT,
        &[
            (
                "hosts",
                &if web.allowed_hosts().is_empty() {
                    "none (only search results can be seen)".to_owned()
                } else {
                    web.allowed_hosts().join(", ")
                },
            ),
            (
                "search",
                if web.can_search() {
                    "`web_search(query)` searches the web and returns titles, URLs and \
                     snippets."
                } else {
                    "There is no web search; fetch documentation pages directly."
                },
            ),
        ],
    )
}

/// Output tokens per call: one finding's worth for a small model's question, and never more
/// than configured.
fn output_tokens(capabilities: Capabilities, configured: u32) -> u32 {
    let sized = match capabilities.context_tokens {
        Some(context) if context < SMALL_CONTEXT && !capabilities.tools => SMALL_ANSWER_TOKENS,
        _ => TOOLS_MAX_OUTPUT,
    };
    sized.min(configured)
}

/// Input tokens one call may take: what the model's context leaves after the system prompt, the
/// answer and a margin, and never more than configured; and what the context leaves (the
/// ceiling no call may pass, unbounded for a model whose context is not known).
fn call_budget(
    capabilities: Capabilities,
    system: &str,
    output_tokens: u32,
    max_tokens_per_call: u64,
) -> (u64, u64) {
    match capabilities.context_tokens {
        Some(context) => {
            let room = u64::from(context)
                .saturating_sub(estimate_tokens(system))
                .saturating_sub(u64::from(output_tokens))
                .saturating_sub(300);
            (room.min(max_tokens_per_call), room)
        }
        None => (max_tokens_per_call, u64::MAX),
    }
}

/// Plans the model calls within the budget and tells the progress display about them.
fn plan_calls(
    env: &LoopEnv<'_>,
    shown: &Shown,
    settings: &FilterSettings,
    (budget, ceiling): (u64, u64),
    reader: Reader,
) -> Plan {
    let mut plan = plan(&shown.diff, &settings.ignore, budget, ceiling, reader);
    if plan.batches.is_empty() && !shown.touched.is_empty() {
        // Nothing new to show (the changes since only put lines back as the base had them, or
        // removed them), but findings' code changed: they are asked about all the same.
        let text = prompt::NOTHING_NEW_SHOWN.to_owned();
        plan.batches.push(Batch {
            tokens: estimate_tokens(&text),
            text,
            ..Batch::default()
        });
    }
    env.progress.event(ProgressEvent::Planned {
        calls: plan.batches.len(),
        files: plan.files,
        tokens: plan.batches.iter().map(|b| b.tokens).sum(),
    });
    plan
}

/// What the change's prompt says first about the diff: an incremental review says since when.
fn preface(shown: &Shown) -> String {
    match &shown.scope {
        ReviewedScope::Incremental { since, .. } => format!(
            "{}\n{}",
            prompt::fill(prompt::INCREMENT, &[("since", bugloop_git::short(since))]),
            shown.finding_context
        ),
        ReviewedScope::Full { .. } => shown.finding_context.clone(),
    }
}
