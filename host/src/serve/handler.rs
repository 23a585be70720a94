//! The MCP handler: `initialize` and `server/discover` (instructions and capabilities),
//! `tools/list` and `tools/call`, answered from the tool table of the request's own URL;
//! resources, prompts and completions, answered by [`super::contributions`] for the same URL;
//! `logging/setLevel` for the session; resource subscriptions, by `resources/subscribe` in a
//! session and by `subscriptions/listen` (2026-07-28), through [`super::subscriptions`].
//!
//! rmcp hands every request the HTTP request parts it came with; the handler reads the URL's
//! query from them on each request, so sessions (stateful mode) and lone requests (stateless
//! mode, protocol 2026-07-28) are served alike. Host errors become MCP answers here: bad
//! arguments, a tool's error and a panic are `isError` results the model can read; an unknown
//! tool is the JSON-RPC error the specification gives (`-32602`).

use std::sync::{Arc, OnceLock};

use axum::http::{header, request::Parts};
#[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ContentBlock, CreateTaskResult, CustomRequest, CustomResult, DiscoverResult, ErrorCode,
        GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
        InputRequiredResult, InputResponses, ListToolsResult, PaginatedRequestParams, ResultType,
        ServerConfig, UpdateTaskParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::{Value, json};

use super::{
    ServeState, audit,
    context::{self, Call, ClientRequests, Finished, Interrupted, SessionLevel},
    contributions::{self as contributed},
    generation::Generation,
    jsonrpc,
    listeners::{Lists, Registration, Selection, Target},
    rounds::{Binding, Missing, Round},
    selection_headers,
    served::{Resolved, ServedView, TOOLSETS_TOOL},
    subscriptions::{Session, Subscriber},
    tasks,
};
use plugin_manifest::TaskSupport;
use rmcp::task_manager::TaskExit;
use tokio_util::sync::CancellationToken;

use crate::{
    auth::{Caller, Identity},
    build::LoadedTool,
    call::{CallError, CallOutput},
    selection::{ActiveSet, Resolution},
};

/// One MCP connection's handler (one per session; one per request when stateless).
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    state: Arc<ServeState>,
    /// The session's logging level (`logging/setLevel`).
    level: SessionLevel,
    /// The session's entry in the server's subscriptions; dropped with the session.
    subscriptions: Arc<Session<Subscriber>>,
    /// The session's registration to hear that its lists changed, made at `initialize`;
    /// dropped with the session.
    listening: Arc<OnceLock<Registration>>,
}

impl Handler {
    /// A handler over the server's shared state.
    pub(crate) fn new(state: Arc<ServeState>) -> Self {
        Self {
            subscriptions: Arc::new(state.subscriptions.session()),
            state,
            level: SessionLevel::default(),
            listening: Arc::default(),
        }
    }

    /// The request's selection as a listener keeps it: its URL's query and selection headers.
    fn selection(context: &RequestContext<RoleServer>) -> Selection {
        let parts = parts(context);
        Selection {
            query: parts
                .and_then(|p| p.uri.query())
                .unwrap_or_default()
                .to_owned(),
            headers: parts
                .map(|p| selection_headers(&p.headers))
                .unwrap_or_default(),
            bound: caller(context).map(|c| c.bound.clone()),
        }
    }

    /// The current generation, and the request's selection (its URL and selection headers,
    /// within its caller's bound) in it, from manifests alone. The request is served from that generation to its end.
    fn resolved(&self, context: &RequestContext<RoleServer>) -> (Arc<Generation>, Arc<Resolved>) {
        let parts = parts(context);
        let query = parts.and_then(|p| p.uri.query()).unwrap_or_default();
        let no_headers = axum::http::HeaderMap::new();
        let caller = caller(context);
        let generation = self.state.generation();
        let resolved = self.state.resolve(
            &generation,
            query,
            parts.map_or(&no_headers, |p| &p.headers),
            caller.as_ref().map(|c| &c.bound),
        );
        (generation, resolved)
    }

    /// The current generation, and the request's selection's active set in it.
    /// Subscribes `session`, reached through `subscriber`, to `uri` as `active` serves it on
    /// `generation`, and the process serving it there, if one does.
    async fn subscribe_to(
        &self,
        generation: &Generation,
        active: &ActiveSet,
        session: &Session<Subscriber>,
        uri: &str,
        subscriber: Subscriber,
    ) -> Result<(), ErrorData> {
        let hidden = generation.hidden();
        let registry = generation.registry();
        let process = contributed::subscribe(registry, active, hidden, session, uri, subscriber)?;
        if let Some(plugin) = process {
            let state = &self.state;
            contributed::subscribe_upstream(
                generation,
                plugin,
                uri,
                &state.subscriptions,
                &state.updates,
            )
            .await;
        }
        Ok(())
    }

    fn active(&self, context: &RequestContext<RoleServer>) -> (Arc<Generation>, ActiveSet) {
        let (generation, resolved) = self.resolved(context);
        (generation, resolved.resolution.active.clone())
    }

    /// The current generation, the request's selection and its view of its served set
    /// (opening plugins on first use).
    async fn served(&self, context: &RequestContext<RoleServer>) -> Result<Served, ErrorData> {
        let (generation, resolved) = self.resolved(context);
        let view = generation.sets.view(&resolved).await.map_err(|e| {
            tracing::error!("{e}");
            ErrorData::internal_error(e, None)
        })?;
        Ok(Served {
            generation,
            resolution: Arc::clone(&resolved.resolution),
            view,
        })
    }

    /// Fills in what `initialize` and `server/discover` say per URL: the instructions of the
    /// served set, and the capabilities of what its active set has.
    async fn describe_url(
        &self,
        context: &RequestContext<RoleServer>,
        info: &mut ServerConfig,
    ) -> Result<(), ErrorData> {
        let served = self.served(context).await?;
        info.instructions = served.view.set().instructions();
        // What `get_info` says of resources and prompts is the whole server's; this URL says
        // its own.
        info.capabilities.resources = None;
        info.capabilities.prompts = None;
        contributed::declare_capabilities(
            served.generation.registry(),
            &served.resolution.active,
            &mut info.capabilities,
        );
        Ok(())
    }

    /// The answer of `list_server_toolsets` for the request's URL.
    fn toolsets_result(
        &self,
        context: &RequestContext<RoleServer>,
        generation: &Generation,
        resolution: &Resolution,
    ) -> CallToolResult {
        let report = self
            .state
            .toolsets_report(generation, resolution, caller(context).as_deref());
        let inactive: Vec<&str> = report
            .toolsets
            .iter()
            .filter(|t| !t.active)
            .map(|t| t.name.as_str())
            .collect();
        let mut value = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut value {
            map.insert(
                "server_bounds".to_owned(),
                serde_json::to_value(&self.state.bounds).unwrap_or_default(),
            );
            map.insert(
                "how_to_ask_for_more".to_owned(),
                Value::from(match parts(context) {
                    Some(parts) => how_to_ask_for_more(&base_url(parts), &inactive),
                    None => how_to_restart_with_more(&inactive),
                }),
            );
            map.insert(
                "how_to_filter_tools".to_owned(),
                Value::from(if parts(context).is_some() {
                    HOW_TO_FILTER_TOOLS
                } else {
                    HOW_TO_RESTART_WITH_OTHER_FILTERS
                }),
            );
        }
        CallToolResult::structured(value)
    }
    /// Under 2026-07-28, the round of a call of `method` for `name` with `arguments`: the
    /// answers its request carries (`requestState`, `inputResponses`), and what a next state
    /// is bound to. `None` for a request of 2025-11-25, which asks the client directly.
    fn round(
        &self,
        (state, responses): &(Option<String>, Option<InputResponses>),
        method: &str,
        name: &str,
        arguments: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<(Arc<Round>, Binding)>, ErrorData> {
        if !context::speaks_2026(context) {
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
    fn call_of<'a>(
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
    fn parent_caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<crate::call::wire::Caller> {
        self.state
            .for_parent
            .then(|| crate::call::wire::caller_of(&context.meta))
            .flatten()
    }

    /// How a call's requests to the client are served, answered from `round` when it has one.
    fn client_requests(&self, round: Option<Arc<Round>>) -> ClientRequests {
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
    fn answered<T>(
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
            Ok(Err(_)) if finished.undeclared.is_some() && context::speaks_2026(context) => {
                Err(missing_capability(finished.undeclared.unwrap_or_default()))
            }
            Ok(answer) => answer.map(Ok),
        }
    }

    /// The input-required result of a call that needs `missing` first, with the state of its
    /// `round` for the next.
    fn input_required(
        &self,
        missing: Missing,
        round: Option<(Arc<Round>, Binding)>,
    ) -> InputRequiredResult {
        let state = round.map(|(round, binding)| round.seal(&self.state.sealer, &binding));
        InputRequiredResult::new(Some(missing), state)
    }

    /// A `tools/call`: `plugin` is set to the plugin that served it, once one does.
    async fn call(
        &self,
        mut request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        plugin: &mut Option<String>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request_round = (request.request_state.take(), request.input_responses.take());
        let name = request.name.as_ref();
        let Served {
            generation,
            resolution,
            view,
        } = self.served(context).await?;
        let served = view.set();
        if self.state.toolsets_tool && name == TOOLSETS_TOOL {
            if !resolution.filter.allows(name, true) {
                return Err(unknown_tool(&generation, name, &resolution, context));
            }
            return Ok(self
                .toolsets_result(context, &generation, &resolution)
                .into());
        }
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
        // An isolated plugin's child runs plain calls: its parent runs the task.
        let as_task = match tool.decl.task {
            _ if self.state.for_parent => false,
            TaskSupport::Forbidden => false,
            support => {
                let declared = context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks());
                if !declared && support == TaskSupport::Required {
                    return Err(tasks::missing_extension());
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
            return self.call_as_task(tool.clone(), arguments, context, &resolution, None);
        }
        let mut call = self.call_of(context, &resolution, &round);
        call.plugin = Some(Arc::from(tool.plugin.as_str()));
        call.client.becomes_task = input_first;
        // Over a session, the answers the client gives are kept for the task.
        let session_answers = (input_first && round.is_none()).then(Round::gathering);
        call.client.gathered.clone_from(&session_answers);
        let finished = call
            .run(|host| tool.call_with(arguments.clone(), host))
            .await;
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
            Ok(outcome) => outcome,
            Err(Interrupted::NeedsInput(missing)) => {
                return Ok(self.input_required(missing, round).into());
            }
            Err(Interrupted::BecomesTask) => {
                let gathered = round.map(|(round, _)| round).or(session_answers);
                return self.call_as_task(tool.clone(), arguments, context, &resolution, gathered);
            }
        };
        // 2026-07-28: a call that failed for want of a capability the client did not declare is
        // the protocol's error, which names the capability.
        if let (Err(_), Some(capability)) = (&outcome, finished.undeclared)
            && context::speaks_2026(context)
        {
            return Err(missing_capability(capability));
        }
        let output = self
            .state
            .for_parent
            .then(|| crate::call::wire::output_meta(&outcome))
            .flatten();
        let mut result = call_result(name, outcome);
        if let Some(output) = output {
            result
                .meta
                .get_or_insert_default()
                .insert(crate::call::wire::OUTPUT_META.to_owned(), output);
        }
        Ok(result.into())
    }
}

impl Handler {
    /// Starts a call of `tool` as a task of the request's session and caller, and answers with
    /// the task. It runs as a plain call would (progress, logs, its context), except that it
    /// outlives the request, `tasks/cancel` cancels it, and its requests to the client wait in
    /// the task's `inputRequests` for `tasks/update`.
    fn call_as_task(
        &self,
        tool: LoadedTool,
        arguments: String,
        context: &RequestContext<RoleServer>,
        resolution: &Arc<Resolution>,
        gathered: Option<Arc<Round>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut request = context.clone();
        // The request ends now; the call ends with the task.
        request.ct = CancellationToken::new();
        let (level, resolution) = (self.level.clone(), Arc::clone(resolution));
        let updates = self.state.updates.clone();
        // A task's requests wait in its `inputRequests`, unless the round it started from has
        // their answers.
        let client = self.client_requests(gathered);
        let caller = self.parent_caller(context);
        let name = tool.decl.name.clone();
        let (availability, plugin) = (
            self.state.availability.clone(),
            Arc::from(tool.plugin.as_str()),
        );
        let task = self
            .state
            .tasks
            .spawn(owner(context), &name.clone(), move |task| {
                request.extensions.insert(tasks::Input::new(task.clone()));
                Box::pin(async move {
                    let run = Call {
                        request: &request,
                        level: &level,
                        resolution: &resolution,
                        updates: &updates,
                        client,
                        caller,
                        availability: Some(availability),
                        plugin: Some(plugin),
                    }
                    .run(|host| tool.call_with(arguments, host));
                    tokio::select! {
                        () = task.cancelled() => Err(TaskExit::Cancelled),
                        finished = run => task_outcome(&name, finished),
                    }
                })
            })?;
        tracing::info!(task = %task.task_id, "a call runs as a task");
        Ok(CreateTaskResult::new(task).into())
    }
}

impl ServerHandler for Handler {
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self.state.tasks.get(&owner(&context), &request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let answers = request.input_responses;
        self.state
            .tasks
            .update(&owner(&context), &request.task_id, answers)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state.tasks.cancel(&owner(&context), &request.task_id)
    }

    /// A tool whose argument is mirrored into a header, for rmcp's check of `Mcp-Param-*`
    /// headers against the body; no other tool (rmcp then checks nothing more).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.state.generation().header_tool(name)
    }

    /// The server's description before a URL is known: every list may change (plugins come
    /// and go) and resources may be subscribed to, which rmcp reads to accept a
    /// `subscriptions/listen` filter; a URL's `initialize` says what it has.
    fn get_info(&self) -> ServerConfig {
        let mut info = self.state.info.clone();
        info.capabilities.resources = Some(contributed::resources_capability());
        info.capabilities.prompts = Some(contributed::prompts_capability());
        info
    }

    /// 2026-07-28's `subscriptions/listen`: resource updates, and the changes of the tools,
    /// resources and prompts lists. Which of its URIs the request's URL serves is known in
    /// [`Self::listen`].
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted
            .resource_subscriptions
            .clone_from(&requested.resource_subscriptions);
        accepted.tools_list_changed = requested.tools_list_changed;
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.prompts_list_changed = requested.prompts_list_changed;
        Some(accepted)
    }

    /// One `subscriptions/listen` stream: an entry of its own in the server's subscriptions,
    /// holding each accepted URI the request's URL serves (within the per-session bounds; the
    /// others are logged and never heard of), and a listener for the lists it accepted, until
    /// the stream ends.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = context.accepted();
        let wants = Lists {
            tools: accepted.tools_list_changed == Some(true),
            resources: accepted.resources_list_changed == Some(true),
            prompts: accepted.prompts_list_changed == Some(true),
        };
        let _listening = (wants != Lists::default()).then(|| {
            self.state.listeners.register(
                Self::selection(context.request_context()),
                Target::Stream(context.sink().clone()),
                wants,
            )
        });
        let (generation, active) = &self.active(context.request_context());
        let stream = self.state.subscriptions.session();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            let subscriber = Subscriber::Stream(context.sink().clone());
            let subscribed = self
                .subscribe_to(generation, active, &stream, uri, subscriber)
                .await;
            if let Err(error) = subscribed {
                tracing::info!(
                    "subscriptions/listen: not subscribed to {uri}: {}",
                    error.message
                );
            }
        }
        context.cancelled().await;
        Ok(())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        self.describe_url(&context, &mut result).await?;
        if self.state.sessions {
            let _ = self.listening.set(self.state.listeners.register(
                Self::selection(&context),
                Target::Session(context.peer.clone()),
                Lists::ALL,
            ));
        }
        Ok(result)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        self.describe_url(&context, &mut info).await?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let served = self.served(&context).await?;
        let listed = ListToolsResult::with_all_items(served.view.tools());
        Ok(hinted!(listed, &context))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = std::time::Instant::now();
        let name = request.name.to_string();
        let mut plugin = None;
        let answer = self.call(request, &context, &mut plugin).await;
        audit::tool_call(
            caller(&context).as_deref(),
            &name,
            plugin.as_deref(),
            &answer,
            started.elapsed(),
        );
        answer
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.level.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (generation, active) = &self.active(&context);
        let listed =
            contributed::list_resources(generation.registry(), active, generation.hidden());
        Ok(hinted!(listed, &context))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (generation, active) = &self.active(&context);
        let listed = contributed::list_resource_templates(
            generation.registry(),
            active,
            generation.hidden(),
        );
        Ok(hinted!(listed, &context))
    }

    async fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (generation, resolved) = self.resolved(&context);
        let asked = (request.request_state.take(), request.input_responses.take());
        let uri = request.uri.as_str();
        let round = self.round(&asked, "resources/read", uri, &Value::Null, &context)?;
        let call = self.call_of(&context, &resolved.resolution, &round);
        let finished = contributed::read_resource(&generation, uri, call).await?;
        Ok(match self.answered(finished, round, &context)? {
            Ok(read) => ReadResourceResponse::Complete(read),
            Err(needs) => ReadResourceResponse::InputRequired(needs),
        })
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (generation, active) = &self.active(&context);
        let subscriber = Subscriber::Session(context.peer);
        self.subscribe_to(
            generation,
            active,
            &self.subscriptions,
            &request.uri,
            subscriber,
        )
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let (generation, active) = &self.active(&context);
        let listed = contributed::list_prompts(generation.registry(), active, generation.hidden());
        Ok(hinted!(listed, &context))
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (generation, resolved) = self.resolved(&context);
        let asked = (request.request_state.take(), request.input_responses.take());
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let name = request.name.clone();
        let round = self.round(&asked, "prompts/get", &name, &arguments, &context)?;
        let call = self.call_of(&context, &resolved.resolution, &round);
        let finished = contributed::get_prompt(&generation, request, call).await?;
        Ok(match self.answered(finished, round, &context)? {
            Ok(got) => GetPromptResponse::Complete(got),
            Err(needs) => GetPromptResponse::InputRequired(needs),
        })
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let (generation, active) = &self.active(&context);
        contributed::complete(generation, active, request, &context.ct).await
    }

    /// rmcp hands over as custom any request whose `params` do not fit its method: a known
    /// method gets the `-32602` naming the field, any other `-32601`, and so does a method
    /// 2026-07-28 removed, asked for in 2026-07-28.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let removed = context::speaks_2026(&context) && jsonrpc::removed_in_2026(&request.method);
        let invalid = (!removed)
            .then(|| jsonrpc::invalid_params(&request.method, request.params.as_ref()))
            .flatten();
        Err(invalid
            .unwrap_or_else(|| ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)))
    }
}

/// The request's caller, when authentication is on.
fn caller(context: &RequestContext<RoleServer>) -> Option<Arc<Identity>> {
    parts(context)?.extensions.get::<Caller>()?.0.clone()
}

/// A list with the cache hints of 2026-07-28 (SEP-2549), for a request of that version: fresh
/// for no time (plugins and `mcp.json` may change it at any moment; `list_changed` says when),
/// and private to the caller when it is filtered by who asks, else public (the URL alone
/// decides it). The list types share the setters but no trait.
macro_rules! hinted {
    ($listed:expr, $context:expr) => {{
        let listed = $listed;
        if context::speaks_2026($context) {
            let scope = if caller($context).is_some() {
                CacheScope::Private
            } else {
                CacheScope::Public
            };
            listed.with_ttl_ms(0).with_cache_scope(scope)
        } else {
            listed
        }
    }};
}
use hinted;

/// Whom a task the request creates belongs to, and who may see one: its session (the
/// `mcp-session-id` header; over stdio, the one session) and its authenticated caller.
fn owner(context: &RequestContext<RoleServer>) -> tasks::Owner {
    tasks::Owner {
        session: context::session_of(context),
        caller: caller(context).map(|c| c.owner()),
    }
}

/// How a call run as a task ended: a panic (the host's failure, not the tool's answer) and a
/// capability the client lacks fail the task; any other outcome completes it with the result
/// a plain call gives.
fn task_outcome(
    tool: &str,
    finished: Option<context::Finished<Result<CallOutput, CallError>>>,
) -> Result<CallToolResult, TaskExit> {
    let Some(finished) = finished else {
        return Err(TaskExit::Cancelled);
    };
    // A task's requests wait in its `inputRequests`: it never ends for input.
    let Ok(outcome) = finished.outcome else {
        return Err(TaskExit::Error(ErrorData::internal_error(
            format!("task of tool {tool} ended asking for input"),
            None,
        )));
    };
    match (outcome, finished.undeclared) {
        (Err(_), Some(capability)) => Err(TaskExit::Error(missing_capability(capability))),
        (Err(CallError::Panicked(message)), None) => Err(TaskExit::Error(
            ErrorData::internal_error(panicked(tool, message), None),
        )),
        (outcome, _) => Ok(call_result(tool, outcome)),
    }
}

/// What a request is served from: the generation it took, its selection, and its view of its
/// served set.
struct Served {
    generation: Arc<Generation>,
    resolution: Arc<Resolution>,
    view: Arc<ServedView>,
}

/// The HTTP request parts rmcp attached to the request.
fn parts(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
}

/// The URL the client used, without its query: `http://host:port/path`.
fn base_url(parts: &Parts) -> String {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(ToString::to_string));
    match host {
        Some(host) => format!("http://{host}{}", parts.uri.path()),
        None => parts.uri.path().to_owned(),
    }
}

/// The sentence `list_server_toolsets` ends with.
fn how_to_ask_for_more(url: &str, inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    naming_the_inactive(
        format!(
            "Add ?toolsets=NAME to the server URL to turn on more toolsets (for example \
             {url}?toolsets={example}); ?only=NAME serves just those and ?without=NAME drops \
             one. Reconnect with the new URL to use them."
        ),
        inactive,
    )
}

/// `text`, then which toolsets are not active, if any.
fn naming_the_inactive(mut text: String, inactive: &[&str]) -> String {
    if !inactive.is_empty() {
        text.push_str(&format!(" Not active here: {}.", inactive.join(", ")));
    }
    text
}

/// The sentence `list_server_toolsets` ends with over stdio, where no URL can change.
fn how_to_restart_with_more(inactive: &[&str]) -> String {
    let example = inactive.first().copied().unwrap_or("NAME");
    naming_the_inactive(
        format!(
            "The selection comes from the server's --toolsets option (REACTOR_MCP_TOOLSETS): \
             restart it with, for example, --toolsets toolsets={example} to turn on more \
             toolsets, or --toolsets only=NAME to serve just those."
        ),
        inactive,
    )
}

/// How `list_server_toolsets` says tools are filtered.
const HOW_TO_FILTER_TOOLS: &str = "Narrow the tools with ?tools=NAME,NAME (only those; * \
     stands for any characters), ?exclude_tools=NAME (never those) and ?readonly (only read-only \
     tools), or with the headers X-MCP-Tools, X-MCP-Exclude-Tools and X-MCP-Readonly \
     (X-MCP-Toolsets selects toolsets as ?only= does). They narrow each other and the server's \
     bounds (server_bounds), never widen them. Reconnect to change them.";

/// How `list_server_toolsets` says tools are filtered over stdio, where no URL can change.
const HOW_TO_RESTART_WITH_OTHER_FILTERS: &str = "The tools are filtered by the server's \
     --tools, --exclude-tools and --read-only options (REACTOR_MCP_TOOLS, \
     REACTOR_MCP_EXCLUDE_TOOLS, REACTOR_MCP_READ_ONLY), shown as server_bounds: restart it with \
     others to change them.";

/// The JSON-RPC error for a tool the request is not served: invalid params, `Unknown tool: X`,
/// with the toolset that has it when another URL (over stdio, other flags) would serve it. A
/// tool of an active toolset that is not served was hidden by the request's filter, or left
/// out when its table was built (an extension of it failed).
fn unknown_tool(
    generation: &Generation,
    name: &str,
    resolution: &Resolution,
    context: &RequestContext<RoleServer>,
) -> ErrorData {
    let registry = generation.registry();
    // A caller learns nothing of toolsets outside its bound.
    let bound = caller(context).map(|c| c.bound.clone());
    let declared = registry.tools().iter().find(|t| {
        t.decl.name == name
            && bound
                .as_ref()
                .is_none_or(|b| b.allows_toolset(&t.decl.toolset))
    });
    let data = declared.map(|entry| {
        let toolset = &entry.decl.toolset;
        let served = registry.extensions().apply_to(&entry.decl);
        let failure = generation.builder().failure(&entry.plugin);
        let hint = if !resolution.active.contains(toolset) {
            if parts(context).is_some() {
                format!("tool `{name}` is in toolset `{toolset}`, which this URL does not serve; add ?toolsets={toolset} to the server URL")
            } else {
                format!("tool `{name}` is in toolset `{toolset}`, which this server does not serve; start it with --toolsets toolsets={toolset}")
            }
        } else if !resolution
            .filter
            .allows(name, served.annotations.read_only == Some(true))
        {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL serves, but this request's tool filters hide it (tools, exclude_tools, readonly, their X-MCP-* headers, or the server's bounds)")
        } else if let Some(failure) = failure {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL serves, but its provider did not open: {failure}")
        } else {
            format!("tool `{name}` is in toolset `{toolset}`, which this URL serves, but it could not be built: an extension of it failed (see the server's log)")
        };
        json!({"toolset": toolset, "hint": hint})
    });
    ErrorData::invalid_params(format!("Unknown tool: {name}"), data)
}

/// `MissingRequiredClientCapability` (`-32021`) for `capability` (`sampling`, ...).
fn missing_capability(capability: &str) -> ErrorData {
    let required = serde_json::from_value(json!({capability: {}})).unwrap_or_default();
    ErrorData::missing_required_client_capability(required)
}

/// What a panic of `tool` says: its message, naming the tool once.
fn panicked(tool: &str, message: String) -> String {
    let prefix = format!("tool {tool} panicked");
    if message.starts_with(&prefix) {
        message
    } else {
        format!("{prefix}: {message}")
    }
}

/// A tool result that reports an error to the model.
fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A plugin's answer as a tool result: an object as structured content plus its JSON as text, a
/// string as text, anything else as its JSON text; a result the tool built as it is, once it
/// reads as a `CallToolResult`; errors as `isError` results.
///
/// Every result says `resultType: "complete"`, which 2026-07-28 requires: rmcp's constructors
/// set it, but a result read from a plugin's JSON has it only if the plugin wrote it, so it is
/// filled in here. rmcp strips it again for clients of older versions.
pub(crate) fn call_result(tool: &str, outcome: Result<CallOutput, CallError>) -> CallToolResult {
    match outcome {
        Ok(CallOutput::Value(Value::Object(object))) => {
            CallToolResult::structured(Value::Object(object))
        }
        Ok(CallOutput::Value(Value::String(text))) => {
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Ok(CallOutput::Value(other)) => {
            CallToolResult::success(vec![ContentBlock::text(other.to_string())])
        }
        Ok(CallOutput::Result(json)) => match serde_json::from_str::<CallToolResult>(&json) {
            Ok(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                result
            }
            Err(e) => error_result(format!(
                "tool {tool} returned a result that is not a valid CallToolResult: {e}"
            )),
        },
        Err(CallError::Panicked(message)) => error_result(panicked(tool, message)),
        Err(error) => error_result(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;

    fn object(json: Value) -> Map<String, Value> {
        match json {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn wire(result: CallToolResult) -> Value {
        let mut value = serde_json::to_value(result).unwrap();
        value.as_object_mut().unwrap().remove("resultType");
        value
    }

    #[test]
    fn an_object_is_structured_content_plus_its_json_as_text() {
        let result = call_result(
            "t",
            Ok(CallOutput::Value(Value::Object(object(
                json!({"id": "sbx-1"}),
            )))),
        );
        assert_eq!(
            wire(result),
            json!({
                "content": [{"type": "text", "text": r#"{"id":"sbx-1"}"#}],
                "structuredContent": {"id": "sbx-1"},
                "isError": false
            })
        );
    }

    #[test]
    fn a_string_is_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!("slept 5 ms"))))),
            json!({"content": [{"type": "text", "text": "slept 5 ms"}], "isError": false})
        );
    }

    #[test]
    fn other_json_is_its_text() {
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!([1, 2]))))),
            json!({"content": [{"type": "text", "text": "[1,2]"}], "isError": false})
        );
        assert_eq!(
            wire(call_result("t", Ok(CallOutput::Value(json!(3.5))))),
            json!({"content": [{"type": "text", "text": "3.5"}], "isError": false})
        );
    }

    #[test]
    fn a_result_the_tool_built_is_complete() {
        let built = r#"{"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}"#;
        let result = call_result("t", Ok(CallOutput::Result(built.to_owned())));
        assert_eq!(result.result_type, Some(ResultType::COMPLETE));
        assert_eq!(
            serde_json::to_value(result).unwrap()["resultType"],
            "complete"
        );
    }

    #[test]
    fn a_tool_error_is_an_error_result_with_its_message() {
        assert_eq!(
            wire(call_result(
                "t",
                Err(CallError::Tool("no sandbox has id x".into()))
            )),
            json!({"content": [{"type": "text", "text": "no sandbox has id x"}], "isError": true})
        );
    }

    #[test]
    fn a_panic_names_the_tool_once() {
        let text = |r: CallToolResult| wire(r)["content"][0]["text"].clone();
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("tool boom panicked: kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
        assert_eq!(
            text(call_result(
                "boom",
                Err(CallError::Panicked("kaboom".into()))
            )),
            "tool boom panicked: kaboom"
        );
    }

    #[test]
    fn a_missing_capability_is_named_as_an_object() {
        let error = missing_capability("sampling");
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
    }

    #[test]
    fn the_hint_names_an_inactive_toolset_in_an_example_url() {
        let text = how_to_ask_for_more("http://127.0.0.1:4040/mcp", &["benchmarks"]);
        assert!(
            text.contains("http://127.0.0.1:4040/mcp?toolsets=benchmarks"),
            "{text}"
        );
        assert!(text.ends_with("Not active here: benchmarks."), "{text}");
    }
}
