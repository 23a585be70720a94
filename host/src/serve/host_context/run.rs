//! Running a call ([`Call::run`] and its siblings): polling the plugin's future in the request
//! handler's own task, sending what the plugin sends as it comes, and flushing it before the
//! answer, so a client sees a tool's logs and progress before its result.

use std::{pin::pin, sync::Arc};

use abi_stable::{sabi_trait::TD_Opaque, std_types::RArc};
use futures::{FutureExt as _, StreamExt, stream::FuturesUnordered};
use plugin_abi::HostContextBox;
use rmcp::{RoleServer, service::RequestContext};

use super::{asks::*, context::*, level::*, outlet::Outlet};
use crate::serve::{
    generation::availability, host_context::rounds::Missing, mcp::subscriptions::Updates,
};
use crate::{call::wire::RelayedCaller, selection::Resolution};

/// Why a call ended before the plugin answered.
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// Under 2026-07-28, the tool asked for these inputs, which the request did not carry.
    NeedsInput(Missing),
    /// The tool of an `input_first` task call gathered its input: it runs again as a task.
    BecomesTask,
}

/// A finished call.
#[derive(Debug)]
pub(crate) struct Finished<T> {
    /// What the plugin answered; under 2026-07-28, or the inputs it needs first.
    pub(crate) outcome: Result<T, Interrupted>,
    /// The first client capability the tool asked for (sampling, elicitation, roots) that the
    /// client had not declared.
    pub(crate) undeclared: Option<&'static str>,
}

/// What one call of a plugin (a tool call, a prompt got, a resource read) is served with.
pub(crate) struct Call<'a> {
    /// The request it serves.
    pub(crate) request: &'a RequestContext<RoleServer>,
    /// The session's log level.
    pub(crate) level: &'a SessionLevel,
    /// The request's selection.
    pub(crate) resolution: &'a Arc<Resolution>,
    /// Where resource changes go.
    pub(crate) updates: &'a Updates,
    /// How its requests to the client are served.
    pub(crate) client: ClientRequests,
    /// The request an isolated plugin's parent made, when the call comes from one.
    pub(crate) caller: Option<RelayedCaller>,
    /// Where plugins turn their tools and prompts on and off.
    pub(crate) availability: Option<availability::Toggles>,
    /// The plugin called, once known.
    pub(crate) plugin: Option<Arc<str>>,
}

impl Call<'_> {
    /// Runs the call: `call` starts it with its context; the future resolves to its outcome,
    /// or to `None` as soon as the request is cancelled (the plugin's future is then dropped,
    /// which cancels it). Requests to the client wait at most the client timeout.
    pub(crate) async fn run<F: Future>(
        self,
        call: impl FnOnce(HostContextBox) -> F,
    ) -> Option<Finished<F::Output>> {
        let (request, timeout) = (self.request, self.client.timeout);
        let (round, gathered) = (self.client.round.clone(), self.client.gathered.clone());
        let (context, mut events) = CallContext::new(self);
        let undeclared = Arc::clone(&context.undeclared);
        let _span_ends = SpanEnds(context.span.clone());
        let route = match task_input(request) {
            Some(task) => Route::Task(task, round.as_deref()),
            None if context.tells_parent => Route::Parent,
            None => Route::Client,
        };
        let peer = &request.peer;
        let outlet = request.extensions.get::<Outlet>();
        let mut plugin = pin!(call(HostContextBox::from_ptr(
            RArc::new(context),
            TD_Opaque
        )));
        let mut asked = FuturesUnordered::new();
        let outcome = loop {
            tokio::select! {
                biased;
                () = request.ct.cancelled() => return None,
                outcome = &mut plugin => break Ok(outcome),
                Some(event) = events.recv() => match *event {
                    Event::Ask { requests, reply } => {
                        let gathered = gathered.as_deref();
                        let asked_all = ask_all(peer, requests, timeout, reply, route, gathered);
                        asked.push(asked_all.boxed());
                    }
                    Event::InputRequired(missing) => break Err(Interrupted::NeedsInput(missing)),
                    Event::BecomesTask => break Err(Interrupted::BecomesTask),
                    Event::AskParentForTask(told) => {
                        asked.push(ask_parent_for_task(peer, timeout, told).boxed());
                    }
                    other => send(outlet, peer, other).await,
                },
                Some(()) = asked.next(), if !asked.is_empty() => {}
            }
        };
        // What the tool sent before it finished goes out before its answer; later sends fail.
        events.close();
        while let Ok(event) = events.try_recv().map(|e| *e) {
            if matches!(
                event,
                Event::Log(_)
                    | Event::Progress(_)
                    | Event::PluginLogToParent(_)
                    | Event::SetAvailableOnParent { .. }
            ) {
                send(outlet, peer, event).await;
            }
        }
        Some(Finished {
            outcome,
            undeclared: undeclared.get().copied(),
        })
    }
}

/// Sends `event` into the request's outlet when it takes it, else through the peer.
async fn send(outlet: Option<&Outlet>, peer: &rmcp::Peer<RoleServer>, event: Event) {
    let event = match outlet {
        Some(outlet) => outlet.take(event),
        None => Some(event),
    };
    if let Some(event) = event {
        notify(peer, event).await;
    }
}

/// Where the requests of a call run as a task go ([`crate::serve::mcp::tasks`]), if it is one.
pub(super) fn task_input(
    request: &RequestContext<RoleServer>,
) -> Option<&crate::serve::mcp::tasks::Input> {
    request.extensions.get::<crate::serve::mcp::tasks::Input>()
}

/// Ends the call's span when the call ends, however it ends.
struct SpanEnds(super::context::CallSpan);

impl Drop for SpanEnds {
    fn drop(&mut self) {
        self.0.end();
    }
}
