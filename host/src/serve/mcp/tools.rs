//! `tools/call`: look the tool up in the request's view, check its arguments, open its round,
//! call the plugin (or run it as a task), and map what it answered to the MCP result.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse},
    service::RequestContext,
};
use serde_json::Value;

use crate::serve::{
    generation::served::TOOLSETS_TOOL,
    host_context::rounds::Round,
    host_context::{self, Interrupted},
};
use plugin_manifest::TaskSupport;

use super::outcome::{call_result, error_result, missing_capability};
use super::policed::{self, Who};
use super::toolsets_tool::unknown_tool;
use super::{Handler, caller, parts};
use crate::call::{CallError, CallOutput};
use crate::policy::{Denial, Held, Policy, ResultCap, ToolFacts};
use crate::reports::search::SEARCH_TOOL;
use std::time::Instant;

impl Handler {
    /// A `tools/call`: `plugin` is set to the plugin that served it, once one does.
    pub(super) async fn call(
        &self,
        mut request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        plugin: &mut Option<String>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request_round = (request.request_state.take(), request.input_responses.take());
        let name = request.name.as_ref();
        let (generation, resolved) = self.resolved(context);
        let resolution = Arc::clone(&resolved.resolution);
        let mode = resolution.mode;
        if self.state.toolsets_tool && name == TOOLSETS_TOOL {
            if !resolution.filter.allows(name, true) {
                return Err(unknown_tool(&generation, name, &resolution, context));
            }
            return Ok(self
                .toolsets_result(context, &generation, &resolution)
                .into());
        }
        if mode.searches() && name == SEARCH_TOOL {
            if !(mode.discover || resolution.filter.allows(name, true)) {
                return Err(unknown_tool(&generation, name, &resolution, context));
            }
            let arguments = request.arguments.take().unwrap_or_default();
            let result = self.search_result(context, &generation, &resolution, &arguments);
            return Ok(result.into());
        }
        let view = if mode.discover {
            self.tool_view(context, &generation, &resolution, name)
                .await?
        } else {
            self.view_of(&generation, &resolved).await?
        };
        let served = view.set();
        let (Some(tool), Some(validator)) = (served.table().get(name), served.validator(name))
        else {
            return Err(unknown_tool(&generation, name, &resolution, context));
        };
        if !resolution
            .filter
            .allows(name, tool.decl.annotations.read_only == Some(true))
        {
            return Err(unknown_tool(&generation, name, &resolution, context));
        }
        let policy = self.state.policy();
        let who = Who::new(caller(context));
        let facts = policed::facts(tool);
        if let Err(denial) = police(&policy, &who, &facts, context) {
            return Err(policed::refused(who.identity.as_deref(), name, &denial));
        }
        // An isolated plugin's child runs plain calls: its parent runs the task.
        let as_task = match tool.decl.task {
            _ if self.state.for_parent => false,
            TaskSupport::Forbidden => false,
            support => {
                let declared = context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks());
                if !declared && support == TaskSupport::Required {
                    return Err(super::tasks::missing_extension());
                }
                declared
            }
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if let Err(problem) = validator.check(&arguments) {
            return Ok(
                error_result(format!("invalid arguments for tool `{name}`: {problem}")).into(),
            );
        }
        let round = self.round(&request_round, "tools/call", name, &arguments, context)?;
        let arguments = arguments.to_string();
        // An `input_first` task tool gathers its input in a plain call first.
        let input_first = as_task && tool.decl.input_first;
        if as_task && !input_first {
            *plugin = Some(tool.plugin.clone());
            let policed = TaskPolicy::enter(&policy, &who, &facts, name).await?;
            return self.call_as_task(tool.clone(), arguments, context, &resolution, None, policed);
        }
        let mut call = self.call_of(context, &resolution, &round);
        call.plugin = Some(Arc::from(tool.plugin.as_str()));
        call.client.becomes_task = input_first;
        // Over a session, the answers the client gives are kept for the task.
        let session_answers = (input_first && round.is_none()).then(Round::gathering);
        call.client.gathered.clone_from(&session_answers);
        let held = match policy.caps.enter(&who.caller(), &facts).await {
            Ok(held) => held,
            Err(denial) => return Err(policed::refused(who.identity.as_deref(), name, &denial)),
        };
        let in_flight = crate::observe::metrics::call_in_flight(&tool.plugin);
        let finished = call
            .run(|host| tool.call_with(arguments.clone(), host))
            .await;
        drop((in_flight, held));
        *plugin = Some(tool.plugin.clone());
        let Some(finished) = finished else {
            tracing::info!(
                tool = name,
                "call cancelled (by the client, or its session ended): stopped waiting for the plugin"
            );
            let cancelled = CallError::Cancelled(format!("tool {name} was cancelled"));
            return Ok(call_result(name, Err(cancelled)).into());
        };
        let outcome = match finished.outcome {
            Ok(outcome) => {
                record_breaker(&policy, &tool.plugin, &outcome);
                outcome
            }
            Err(Interrupted::NeedsInput(missing)) => {
                return Ok(self.input_required(missing, round).into());
            }
            Err(Interrupted::BecomesTask) => {
                let gathered = round.map(|(round, _)| round).or(session_answers);
                let policed = TaskPolicy::enter(&policy, &who, &facts, name).await?;
                return self.call_as_task(
                    tool.clone(),
                    arguments,
                    context,
                    &resolution,
                    gathered,
                    policed,
                );
            }
        };
        // 2026-07-28: a call that failed for want of a capability the client did not declare is
        // the protocol's error, which names the capability.
        if let (Err(_), Some(capability)) = (&outcome, finished.undeclared)
            && host_context::speaks_2026(context)
        {
            return Err(missing_capability(capability));
        }
        let output = self
            .state
            .for_parent
            .then(|| crate::call::wire::output_meta(&outcome))
            .flatten();
        // An isolated plugin's parent reads what the tool answered from `_meta` and makes the
        // result itself, so the answer crosses the pipe once, not also as content.
        let result = match output {
            Some(output) => {
                let mut carried = rmcp::model::CallToolResult::success(Vec::new());
                carried
                    .meta
                    .get_or_insert_default()
                    .insert(crate::call::wire::OUTPUT_META.to_owned(), output);
                carried
            }
            None => policed::capped(
                call_result(name, outcome),
                name,
                policy.results.cap(&who.caller(), &facts),
            ),
        };
        Ok(result.into())
    }
}

/// The policy's checks before a call of the tool `facts` by `who`: a rule that hides it, the
/// rate limits and quotas (unless the front door counted the request), the plugin's breaker.
fn police(
    policy: &Policy,
    who: &Who,
    facts: &ToolFacts<'_>,
    context: &RequestContext<RoleServer>,
) -> Result<(), Denial> {
    let caller = who.caller();
    if let Some(denial) = policy.hides(&caller, facts) {
        return Err(denial);
    }
    let counted = parts(context).is_some_and(|p| p.extensions.get::<policed::Counted>().is_some());
    if !counted {
        policy.admit(&caller, facts)?;
    }
    if !policy.breakers.is_empty() {
        policy.breakers.check(facts.plugin, Instant::now())?;
    }
    Ok(())
}

/// What the policy asks of a call run as a task, taken when the task starts: its places in
/// the concurrency caps, held until it ends; the breaker to tell how it ended; the cap on its
/// result.
pub(super) struct TaskPolicy {
    policy: Arc<Policy>,
    held: Held,
    cap: ResultCap,
}

impl TaskPolicy {
    /// Enters the caps for a task of the tool `facts` called by `who`: refused as a plain call
    /// is when they are full.
    async fn enter(
        policy: &Arc<Policy>,
        who: &Who,
        facts: &ToolFacts<'_>,
        name: &str,
    ) -> Result<Self, ErrorData> {
        let caller = who.caller();
        let held = policy
            .caps
            .enter(&caller, facts)
            .await
            .map_err(|denial| policed::refused(who.identity.as_deref(), name, &denial))?;
        Ok(Self {
            policy: Arc::clone(policy),
            held,
            cap: policy.results.cap(&caller, facts).clone(),
        })
    }

    /// Lets go of the caps once the task of `tool` (served by `plugin`) finished, tells its
    /// breaker how, and caps its result.
    pub(super) fn finish(
        self,
        tool: &str,
        plugin: &str,
        finished: Option<host_context::Finished<Result<CallOutput, CallError>>>,
    ) -> Result<rmcp::model::CallToolResult, rmcp::task_manager::TaskExit> {
        drop(self.held);
        if let Some(Ok(outcome)) = finished.as_ref().map(|f| &f.outcome) {
            record_breaker(&self.policy, plugin, outcome);
        }
        super::tasks::task_outcome(tool, finished)
            .map(|result| policed::capped(result, tool, &self.cap))
    }
}

/// Tells `plugin`'s circuit breaker, if it has one, how a call of it ended: a tool error, a
/// panic or output that is not JSON is a failure; bad arguments and a cancelled call are not.
fn record_breaker(policy: &Policy, plugin: &str, outcome: &Result<CallOutput, CallError>) {
    if policy.breakers.is_empty() {
        return;
    }
    let failure = match outcome {
        Ok(_) => Ok(()),
        Err(CallError::InvalidArguments(_) | CallError::Cancelled(_) | CallError::NotFound(_)) => {
            return;
        }
        Err(error) => Err(error.to_string()),
    };
    policy.breakers.record(
        plugin,
        failure.as_ref().copied().map_err(String::as_str),
        Instant::now(),
    );
}
