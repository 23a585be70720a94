//! The MCP handler: [`Handler`] dispatches each request to the file of its capability and holds
//! nothing else. `initialize` and `server/discover` say what the request's URL is served
//! (`request`); `tools/list` and `tools/call` are `tools` (with `calls`, `outcome`, `params` and
//! `validate`); `resources/*`, `prompts/*` and `completion/complete` are `resources`, `prompts`
//! and `completion`; subscriptions (`resources/subscribe` in a session, `subscriptions/listen`
//! under 2026-07-28) are `subscriptions`; tasks are `tasks`; `skills/list`, `skills/get` and
//! skill files are `skills`; list changes are `notifications`;
//! the host's own `list_server_toolsets` is `toolsets_tool`; `search_tools`, `call_tool` and
//! discovery mode's `tools/list` are `discover`.
//!
//! rmcp hands every request the HTTP request parts it came with; the handler reads the URL's
//! query from them on each request, so sessions (stateful mode) and lone requests (stateless
//! mode, protocol 2026-07-28) are served alike. Host errors become MCP answers here: bad
//! arguments, a tool's error and a panic are `isError` results the model can read; an unknown
//! tool is the JSON-RPC error the specification gives (`-32602`).

pub(crate) mod audit;
mod calls;
mod completion;
pub(crate) mod contributions;
pub(crate) mod direct;
pub(crate) mod discover;
mod measured;
pub(crate) mod notifications;
mod outcome;
pub(crate) mod params;
pub(crate) mod policed;
mod prompts;
mod request;
mod resources;
mod skills;
pub(crate) mod subscriptions;
mod task_records;
pub(crate) mod tasks;
mod tools;
mod toolsets_tool;
pub(crate) mod validate;
use std::sync::{Arc, OnceLock};

use axum::http::request::Parts;

use crate::reports::search::SEARCH_TOOL;
#[allow(deprecated)] // logging is deprecated by SEP-2577, still in 2025-11-25
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetSkillRequestParams, GetSkillResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ReadResourceRequestParams, ReadResourceResponse,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest,
        CustomResult, DiscoverResult, ErrorCode, GetTaskParams, GetTaskResult,
        InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
        ServerConfig, UpdateTaskParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::Value;
use tracing::Instrument as _;

use crate::serve::{
    ServeState,
    host_context::{self, SessionLevel},
    mcp::notifications::{Lists, Registration, Target},
    mcp::subscriptions::{Session, Subscriber},
};

use crate::auth::{Identity, RequestIdentity};

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
    /// The session's requests the host answers itself, for the client to cancel.
    in_flight: Arc<direct::InFlight>,
}
impl Handler {
    /// A handler over the server's shared state.
    pub(crate) fn new(state: Arc<ServeState>) -> Self {
        Self {
            subscriptions: Arc::new(state.subscriptions.session()),
            state,
            level: SessionLevel::default(),
            listening: Arc::default(),
            in_flight: Arc::default(),
        }
    }
}

impl ServerHandler for Handler {
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .state
            .tasks
            .get(&owner(&context), &request.task_id)
            .await?;
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
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state
            .tasks
            .cancel(&owner(&context), &request.task_id)
            .await
    }

    /// A tool whose argument is mirrored into a header, for rmcp's check of `Mcp-Param-*`
    /// headers against the body; no other tool (rmcp then checks nothing more).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.state.generation().header_tool(name)
    }

    /// The server's description before a URL is known: every list may change (plugins come
    /// and go), skills are served if a plugin has one (rmcp reads it to accept `skills/*`), and
    /// resources may be subscribed to, which rmcp reads to accept a
    /// `subscriptions/listen` filter; a URL's `initialize` says what it has.
    fn get_info(&self) -> ServerConfig {
        let mut info = self.state.info.clone();
        info.capabilities.resources = Some(resources::resources_capability());
        info.capabilities.prompts = Some(prompts::prompts_capability());
        skills::declare_any(&self.state.generation(), &mut info.capabilities);
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
        self.fill_slot(&context);
        measured::measure("initialize", None, &context, async {
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
        })
        .await
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
        measured::measure("tools/list", None, &context, async {
            let (generation, resolved) = self.resolved(&context);
            let resolution = &resolved.resolution;
            if resolution.mode.discover {
                let tools = self.discovery_tools(&context, &generation, resolution);
                return Ok(hinted!(ListToolsResult::with_all_items(tools), &context));
            }
            let view = self.view_of(&generation, &resolved).await?;
            let searching = resolution.mode.search && resolution.filter.allows(SEARCH_TOOL, true);
            if let Some(listed) = context.extensions.get::<direct::ListedJson>()
                && !searching
                && policed::lists_all(&self.state.policy())
            {
                listed.leave(view.tools_json(!host_context::speaks_2026(&context)));
                return Ok(hinted!(
                    ListToolsResult::with_all_items(Vec::new()),
                    &context
                ));
            }
            let set = view.set();
            let who = policed::Who::new(caller(&context));
            let mut tools =
                policed::listable(&self.state.policy(), &who.caller(), view.tools(), |name| {
                    set.table().get(name)
                });
            if searching {
                tools.retain(|t| t.name != SEARCH_TOOL);
                tools.push(discover::search_tool_description());
            }
            let listed = ListToolsResult::with_all_items(tools);
            Ok(hinted!(listed, &context))
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = std::time::Instant::now();
        let request = self.through_call_tool(request, &context)?;
        let name = request.name.to_string();
        let span = measured::span("tools/call", Some(&name), &context);
        let mut plugin = None;
        // Boxed: rmcp spawns a task per request holding this future, and moves it as it goes;
        // the call's own state machine is kilobytes, a box is a pointer.
        let answer = Box::pin(self.call(request, &context, &mut plugin))
            .instrument(span.clone())
            .await;
        measured::record_call(&name, &context, &span, &answer, started.elapsed());
        span.in_scope(|| {
            audit::tool_call(
                caller(&context).as_deref(),
                &name,
                plugin.as_deref(),
                &answer,
                started.elapsed(),
            );
        });
        answer
    }

    /// A request the host answers itself is cancelled here (rmcp cancels its own).
    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.in_flight.cancel(id);
        }
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
        measured::measure("resources/list", None, &context, async {
            let (generation, active) = &self.active(&context);
            let mut listed =
                resources::list_resources(generation.registry(), active, generation.hidden());
            listed
                .resources
                .extend(skills::resources(generation, active));
            Ok(hinted!(listed, &context))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        measured::measure("resources/templates/list", None, &context, async {
            let (generation, active) = &self.active(&context);
            let listed = resources::list_resource_templates(
                generation.registry(),
                active,
                generation.hidden(),
            );
            Ok(hinted!(listed, &context))
        })
        .await
    }

    async fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let target = request.uri.clone();
        measured::measure("resources/read", Some(&target), &context, async {
            let (generation, resolved) = self.resolved(&context);
            let uri = request.uri.as_str();
            if let Some(read) = skills::read(&generation, &resolved.resolution.active, uri) {
                return Ok(ReadResourceResponse::Complete(read));
            }
            let asked = (request.request_state.take(), request.input_responses.take());
            let round = self.round(&asked, "resources/read", uri, &Value::Null, &context)?;
            let call = self.call_of(&context, &resolved.resolution, &round);
            let finished = match skills::relayed(&generation, &resolved.resolution.active, uri) {
                Some((server, upstream)) => {
                    let served = skills::served_as(&server);
                    resources::read_from(&generation, &server, &upstream, call, served).await?
                }
                None => resources::read_resource(&generation, uri, call).await?,
            };
            Ok(match self.answered(finished, round, &context)? {
                Ok(read) => ReadResourceResponse::Complete(read),
                Err(needs) => ReadResourceResponse::InputRequired(needs),
            })
        })
        .await
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

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        measured::measure("skills/list", None, &context, async {
            let (generation, active) = &self.active(&context);
            let listed = ListSkillsResult::with_all_items(skills::visible(generation, active));
            Ok(hinted!(listed, &context))
        })
        .await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let uri = request.uri.clone();
        measured::measure("skills/get", Some(&uri), &context, async {
            let (generation, active) = &self.active(&context);
            let got = skills::get(generation, active, &request.uri).await?;
            Ok(hinted!(got, &context))
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        measured::measure("prompts/list", None, &context, async {
            let (generation, active) = &self.active(&context);
            let listed = prompts::list_prompts(generation.registry(), active, generation.hidden());
            Ok(hinted!(listed, &context))
        })
        .await
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name.clone();
        measured::measure("prompts/get", Some(&name), &context, async {
            let (generation, resolved) = self.resolved(&context);
            let asked = (request.request_state.take(), request.input_responses.take());
            let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
            let round = self.round(&asked, "prompts/get", &name, &arguments, &context)?;
            let call = self.call_of(&context, &resolved.resolution, &round);
            let finished = prompts::get_prompt(&generation, request, call).await?;
            Ok(match self.answered(finished, round, &context)? {
                Ok(got) => GetPromptResponse::Complete(got),
                Err(needs) => GetPromptResponse::InputRequired(needs),
            })
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        measured::measure("completion/complete", None, &context, async {
            let (generation, active) = &self.active(&context);
            completion::complete(generation, active, request, &context.ct).await
        })
        .await
    }

    /// rmcp hands over as custom any request whose `params` do not fit its method: a known
    /// method gets the `-32602` naming the field, any other `-32601`, and so does a method
    /// 2026-07-28 removed, asked for in 2026-07-28.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let removed =
            host_context::speaks_2026(&context) && params::removed_in_2026(&request.method);
        let invalid = (!removed)
            .then(|| params::invalid_params(&request.method, request.params.as_ref()))
            .flatten();
        Err(invalid
            .unwrap_or_else(|| ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)))
    }
}

/// The request's caller, when authentication is on.
fn caller(context: &RequestContext<RoleServer>) -> Option<Arc<Identity>> {
    parts(context)?
        .extensions
        .get::<RequestIdentity>()?
        .0
        .clone()
}

/// A list with the cache hints of 2026-07-28 (SEP-2549), for a request of that version: fresh
/// for no time (plugins and `mcp.json` may change it at any moment; `list_changed` says when),
/// and private to the caller when it is filtered by who asks, else public (the URL alone
/// decides it). The list types share the setters but no trait.
macro_rules! hinted {
    ($listed:expr, $context:expr) => {{
        let listed = $listed;
        if host_context::speaks_2026($context) {
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
        session: host_context::session_of(context),
        caller: caller(context).map(|c| c.owner()),
    }
}

/// The HTTP request parts rmcp attached to the request.
fn parts(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
}
