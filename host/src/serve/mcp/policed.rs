//! The policy on the MCP side of a call (`crate::policy` decides): who the caller is to the
//! policy, a tool hidden from a listing, a refusal as the JSON-RPC error it becomes, and a
//! result cut to its cap.
//!
//! Refusals for a rate limit, a quota or a full concurrency cap are code [`TOO_MANY`] (429,
//! outside the range -32000..-32099 JSON-RPC and MCP 2026-07-28 keep for themselves, as
//! ToolHive does); an open circuit breaker is [`UNAVAILABLE`] (503). Both carry
//! `data: {reason, rule, retryAfterSeconds}`. A tool a rule denies is unknown to its caller:
//! `-32602 Unknown tool`, as a tool outside its bound.

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{CallToolResult, ContentBlock, ErrorCode, Tool},
};
use serde_json::json;

use crate::{
    auth::Identity,
    build::LoadedTool,
    policy::{
        ANONYMOUS, Caller, Denial, DenialKind, Policy, ToolFacts, file::OverCap, results::ResultCap,
    },
};

/// The JSON-RPC code of a call refused for a rate limit, a quota or a full concurrency cap.
pub(crate) const TOO_MANY: i32 = 429;

/// The JSON-RPC code of a call refused by an open circuit breaker.
pub(crate) const UNAVAILABLE: i32 = 503;

/// Marks a request the front door already counted against the rate limits and quotas.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted;

/// A request's caller, held for the policy to see ([`Who::caller`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Who {
    /// The identity, when authentication is on.
    pub(crate) identity: Option<Arc<Identity>>,
    /// Its [`Identity::owner`].
    key: String,
}

impl Who {
    /// `identity`, held.
    pub(crate) fn new(identity: Option<Arc<Identity>>) -> Self {
        let key = identity.as_ref().map(|i| i.owner()).unwrap_or_default();
        Self { identity, key }
    }

    /// The caller as the policy sees it (the anonymous caller without an identity).
    pub(crate) fn caller(&self) -> Caller<'_> {
        self.identity
            .as_ref()
            .map_or(ANONYMOUS, |identity| identity.as_caller(&self.key))
    }
}

/// The policy's view of the loaded tool `tool`.
pub(crate) fn facts(tool: &LoadedTool) -> ToolFacts<'_> {
    ToolFacts {
        name: &tool.decl.name,
        toolset: &tool.decl.toolset,
        plugin: &tool.plugin,
        annotations: &tool.decl.annotations,
    }
}

/// Whether no rule of `policy` hides a tool from anyone.
pub(super) fn lists_all(policy: &Policy) -> bool {
    policy.rules.allow_all()
}

/// `tools`, less those a rule hides from `caller`; `table` finds each one's plugin tool (the
/// host's own tool is not a plugin's, and no rule hides it).
pub(super) fn listable<'t>(
    policy: &Policy,
    caller: &Caller<'_>,
    tools: Vec<Tool>,
    table: impl Fn(&str) -> Option<&'t LoadedTool>,
) -> Vec<Tool> {
    if lists_all(policy) {
        return tools;
    }
    tools
        .into_iter()
        .filter(|tool| {
            table(&tool.name).is_none_or(|loaded| policy.hides(caller, &facts(loaded)).is_none())
        })
        .collect()
}

/// The JSON-RPC error of a refusal, after logging it as an audit event that names its rule.
pub(super) fn refused(caller: Option<&Identity>, tool: &str, denial: &Denial) -> ErrorData {
    super::audit::denied(caller, tool, denial);
    crate::observe::metrics::policy_denial(denial.kind.as_str());
    let data = json!({
        "reason": denial.kind.as_str(),
        "rule": denial.rule,
        "retryAfterSeconds": denial.retry_after_seconds(),
    });
    match denial.kind {
        DenialKind::Rule => ErrorData::invalid_params(format!("Unknown tool: {tool}"), None),
        DenialKind::BreakerOpen => {
            ErrorData::new(ErrorCode(UNAVAILABLE), denial.message.clone(), Some(data))
        }
        _ => ErrorData::new(ErrorCode(TOO_MANY), denial.message.clone(), Some(data)),
    }
}

/// `result` within `cap`: unchanged when it fits; else cut (the structured content dropped,
/// text cut, other blocks past the cap dropped, and a notice added saying what and how much),
/// or an error result saying its size and the cap, as the cap says.
pub(super) fn capped(mut result: CallToolResult, tool: &str, cap: &ResultCap) -> CallToolResult {
    let blocks: Vec<usize> = result.content.iter().map(json_len).collect();
    let structured = result.structured_content.as_ref().map_or(0, json_len);
    let total = blocks.iter().sum::<usize>() + structured;
    if total <= cap.bytes {
        return result;
    }
    if cap.over == OverCap::Refuse {
        return super::outcome::error_result(format!(
            "the result of tool `{tool}` is {total} bytes, over the cap of {} bytes the policy \
             `{}` sets; ask for less",
            cap.bytes, cap.rule
        ));
    }
    // Room is left for the notice, so the cut result stays within the cap.
    let mut budget = cap.bytes.saturating_sub(NOTICE_BYTES);
    let mut dropped = 0;
    let mut cut_text = 0;
    result.structured_content = None;
    let content = std::mem::take(&mut result.content);
    for (mut block, size) in content.into_iter().zip(blocks) {
        if size <= budget {
            budget -= size;
            result.content.push(block);
            continue;
        }
        // What the block takes besides its text's JSON.
        let overhead = block
            .as_text()
            .map_or(0, |t| size.saturating_sub(json_len(t.text.as_str())));
        if let ContentBlock::Text(text) = &mut block
            && budget > overhead
        {
            // Escaped characters take more room as JSON: the text kept is cut to what fits.
            let mut keep = floor_char_boundary(&text.text, budget - overhead);
            loop {
                let over = (json_len(&text.text[..keep]) + overhead).saturating_sub(budget);
                if over == 0 || keep == 0 {
                    break;
                }
                keep = floor_char_boundary(&text.text, keep.saturating_sub(over));
            }
            cut_text += text.text.len() - keep;
            text.text.truncate(keep);
            budget = 0;
            result.content.push(block);
            continue;
        }
        dropped += 1;
    }
    let notice = json!({
        "cut": {
            "rule": cap.rule,
            "capBytes": cap.bytes,
            "resultBytes": total,
            "textBytesCut": cut_text,
            "blocksDropped": dropped,
            "structuredContentDropped": structured > 0,
        }
    });
    result.content.push(ContentBlock::text(format!(
        "[The result of tool `{tool}` was {total} bytes, over the cap of {} bytes; it was cut: \
         {notice}]",
        cap.bytes
    )));
    result
}

/// The room kept in a cut result for the notice saying what was cut.
const NOTICE_BYTES: usize = 512;

/// The length of `value` as JSON, counted without writing it.
fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The largest index at most `at` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(bytes: usize, over: OverCap) -> ResultCap {
        ResultCap {
            rule: "small".into(),
            bytes,
            over,
        }
    }

    #[test]
    fn a_result_over_its_cap_is_cut_with_a_notice() {
        let result = CallToolResult::success(vec![ContentBlock::text("é".repeat(600))]);
        let cut = capped(result, "big", &cap(700, OverCap::Cut));
        assert!(json_len(&cut.content) <= 700, "within the cap");
        let texts: Vec<&str> = cut
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
            .collect();
        assert!(
            !texts[0].is_empty() && texts[0].chars().all(|c| c == 'é'),
            "cut at a character boundary: {}",
            texts[0]
        );
        let cut_bytes = format!("\"textBytesCut\":{}", 1200 - texts[0].len());
        assert!(
            texts[1].contains(&cut_bytes) && texts[1].contains("\"rule\":\"small\""),
            "{}",
            texts[1]
        );
    }

    #[test]
    fn a_result_within_its_cap_is_left_and_one_over_a_refusing_cap_is_an_error() {
        let result = CallToolResult::success(vec![ContentBlock::text("abc")]);
        assert_eq!(
            capped(result.clone(), "t", &cap(100, OverCap::Refuse)),
            result
        );
        let refused = capped(result, "t", &cap(3, OverCap::Refuse));
        assert_eq!(refused.is_error, Some(true));
        let text = &refused.content[0].as_text().unwrap().text;
        assert!(text.contains("over the cap of 3 bytes"), "{text}");
    }
}
