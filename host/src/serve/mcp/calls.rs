//! What a plugin call is served with, for tools, prompts and resources alike: the request's
//! selection and, under 2026-07-28, its round's answers; and what an answer or a call that
//! needs input becomes.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{InputRequiredResult, InputResponses},
    service::RequestContext,
};
use serde_json::Value;

use crate::serve::{
    host_context::rounds::{Binding, Missing, Round},
    host_context::{self, Call, ClientRequests, Finished, Interrupted},
};

use super::outcome::missing_capability;
use super::{Handler, caller};
use crate::selection::Resolution;

impl Handler {
    /// Under 2026-07-28, the round of a call of `method` for `name` with `arguments`: the
    /// answers its request carries (`requestState`, `inputResponses`), and what a next state
    /// is bound to. `None` for a request of 2025-11-25, which asks the client directly.
    pub(super) fn round(
        &self,
        (state, responses): &(Option<String>, Option<InputResponses>),
        method: &str,
        name: &str,
        arguments: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<(Arc<Round>, Binding)>, ErrorData> {
        if !host_context::speaks_2026(context) {
            return Ok(None);
        }
        let caller = caller(context);
        let binding = Binding::new(
            method,
            name,
            arguments,
            caller.as_ref().map(|c| c.name.as_str()),
        );
        let round = Round::open(
            &self.state.sealer,
            &binding,
            state.as_deref(),
            responses.clone(),
        )?;
        Ok(Some((round, binding)))
    }

    /// What a call of a plugin for `context` is served with: the request's selection, and,
    /// under 2026-07-28, its round's answers.
    pub(super) fn call_of<'a>(
        &'a self,
        context: &'a RequestContext<RoleServer>,
        resolution: &'a Arc<Resolution>,
        round: &Option<(Arc<Round>, Binding)>,
    ) -> Call<'a> {
        Call {
            request: context,
            level: &self.level,
            resolution,
            updates: &self.state.updates,
            client: self.client_requests(round.as_ref().map(|(round, _)| Arc::clone(round))),
            caller: self.parent_caller(context),
            availability: Some(self.state.availability.clone()),
            plugin: None,
        }
    }

    /// In an isolated plugin's child, the request the parent made.
    pub(super) fn parent_caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::call::wire::RelayedCaller> {
        self.state
            .for_parent
            .then(|| crate::call::wire::caller_of(&context.meta))
            .flatten()
    }

    /// How a call's requests to the client are served, answered from `round` when it has one.
    pub(super) fn client_requests(&self, round: Option<Arc<Round>>) -> ClientRequests {
        ClientRequests {
            timeout: self.state.limits.client_request_timeout,
            round,
            becomes_task: false,
            gathered: None,
        }
    }

    /// What a prompt got or a resource read answered: its result, or the input-required
    /// result of its round; the protocol's error for a capability the client did not declare
    /// (2026-07-28), or for a cancelled request.
    pub(super) fn answered<T>(
        &self,
        finished: Option<Finished<Result<T, ErrorData>>>,
        round: Option<(Arc<Round>, Binding)>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<T, InputRequiredResult>, ErrorData> {
        let Some(finished) = finished else {
            return Err(ErrorData::internal_error("the request was cancelled", None));
        };
        match finished.outcome {
            Err(Interrupted::NeedsInput(missing)) => Ok(Err(self.input_required(missing, round))),
            Err(Interrupted::BecomesTask) => Err(ErrorData::internal_error(
                "only a tool call can become a task",
                None,
            )),
            Ok(Err(_)) if finished.undeclared.is_some() && host_context::speaks_2026(context) => {
                Err(missing_capability(finished.undeclared.unwrap_or_default()))
            }
            Ok(answer) => answer.map(Ok),
        }
    }

    /// The input-required result of a call that needs `missing` first, with the state of its
    /// `round` for the next.
    pub(super) fn input_required(
        &self,
        missing: Missing,
        round: Option<(Arc<Round>, Binding)>,
    ) -> InputRequiredResult {
        let state = round.map(|(round, binding)| round.seal(&self.state.sealer, &binding));
        InputRequiredResult::new(Some(missing), state)
    }
}
