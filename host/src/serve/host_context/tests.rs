//! The context as a plugin sees it: every call is polled with `futures`' executor, no tokio
//! runtime anywhere, as a plugin's threads would.

use futures::executor::block_on;
use rmcp::model::NumberOrString;
use serde_json::json;

use std::sync::Arc;

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RString},
};
use plugin_abi::{HostContext, HostContextBox, LogLevel};
use rmcp::model::LoggingLevel;
use rmcp::model::{ProgressToken, ProtocolVersion};
use serde_json::Value;

use crate::serve::{
    host_context::rounds::{self, Round},
    mcp::subscriptions::Updates,
};
use crate::{
    call::level::{LEVELS, level_number},
    selection::{ActiveSet, Resolution},
};

use super::{context::*, level::*, *};

/// A context in a session (or not), with these client capabilities and, if `token`, a
/// progress token; and the receiving end of its events.
fn context(in_session: bool, capabilities: Value, token: bool) -> (HostContextBox, EventReceiver) {
    let (context, receiver) = call_context(in_session, capabilities, token);
    (
        HostContextBox::from_ptr(RArc::new(context), TD_Opaque),
        receiver,
    )
}

fn call_context(
    in_session: bool,
    capabilities: Value,
    token: bool,
) -> (CallContext, EventReceiver) {
    let (events, receiver) = EventSender::channel();
    let context = CallContext {
        events,
        level: SessionLevel::default(),
        progress_token: token.then(|| ProgressToken(NumberOrString::String("t".into()))),
        resolution: Arc::new(Resolution {
            active: ActiveSet::from_names(["a", "b"]),
            ..Resolution::default()
        }),
        capabilities: Arc::new(serde_json::from_value(capabilities).ok()),
        session: in_session.then(|| Arc::from("session-1")),
        identity: None,
        no_requests: (!in_session).then_some(NO_SESSION),
        undeclared: Arc::default(),
        updates: Updates::channel().0,
        tells_parent: false,
        parent: None,
        round: None,
        requests_made: Arc::default(),
        becomes_task: false,
        in_task: false,
        availability: None,
        trace: None,
        plugin: Some(Arc::from("called")),
        span: super::context::CallSpan::default(),
    };
    (context, receiver)
}

#[test]
fn a_plugin_event_is_written_in_the_calls_span_though_the_plugin_is_not_in_it() {
    let lines = crate::observe::plugin_logs::tests::json_lines("info", || {
        let (mut context, _events) = call_context(true, json!({}), false);
        context.span =
            super::context::CallSpan::of(tracing::info_span!("tools/call", tool = "count"));
        context.plugin_event(plugin_abi::FfiLogEvent {
            plugin: "".into(),
            level: plugin_abi::TraceLevel::Warn as u8,
            target: "counter".into(),
            message: "outside the span".into(),
            fields_json: "{}".into(),
        });
    });
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["target"], "plugin::called", "the call's plugin");
    assert_eq!(lines[0]["span"]["name"], "tools/call", "{}", lines[0]);
    assert_eq!(lines[0]["span"]["tool"], "count");
}

#[test]
fn a_childs_plugin_event_goes_to_its_parent_under_the_calls_token() {
    let (mut context, mut events) = call_context(true, json!({}), true);
    context.tells_parent = true;
    context.plugin_event(plugin_abi::FfiLogEvent {
        plugin: "counter".into(),
        level: plugin_abi::TraceLevel::Info as u8,
        target: "counter::tools".into(),
        message: "counting".into(),
        fields_json: r#"{"n":3}"#.into(),
    });
    let Ok(Event::PluginLogToParent(params)) = events.try_recv().map(|e| *e) else {
        panic!("the event is not handed to the parent");
    };
    assert_eq!(
        params,
        json!({"level": 3, "target": "counter::tools", "message": "counting",
               "fields": {"n": 3}, "progressToken": "t"})
    );
}

#[test]
fn the_first_undeclared_capability_is_recorded_even_without_a_session() {
    let (context, _events) = call_context(false, json!({"elicitation": {}}), false);
    assert!(context.client_request("elicitation/create", "{}").is_err());
    assert_eq!(context.undeclared.get(), None, "declared: only no session");
    assert!(context.client_request("roots/list", "{}").is_err());
    assert!(
        context
            .client_request("sampling/createMessage", "{}")
            .is_err()
    );
    assert_eq!(context.undeclared.get(), Some(&"roots"));
}

fn request_error(context: &HostContextBox, method: &str, params: Value) -> String {
    match block_on(context.request(method.into(), params.to_string().into())) {
        RResult::RErr(error) => error.message.into_string(),
        RResult::ROk(answer) => panic!("{method} was answered: {answer}"),
    }
}

fn sampling_params() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5})
}

#[test]
fn levels_map_in_order() {
    for (n, level) in LEVELS.into_iter().enumerate() {
        assert_eq!(usize::from(level_number(level)), n);
        assert_eq!(
            serde_json::to_value(level).unwrap(),
            LogLevel::from_u8(level_number(level)).as_str()
        );
    }
}

#[test]
fn the_session_level_filters_below_it() {
    let level = SessionLevel::default();
    assert!(!level.lets_through(LogLevel::Debug.to_u8()));
    assert!(level.lets_through(LogLevel::Info.to_u8()));
    level.set(LoggingLevel::Warning);
    assert!(!level.lets_through(LogLevel::Notice.to_u8()));
    assert!(level.lets_through(LogLevel::Warning.to_u8()));
    assert!(level.lets_through(LogLevel::Emergency.to_u8()));
}

#[test]
fn a_2026_request_logs_at_its_own_level_and_only_when_it_asks() {
    let session = SessionLevel::default();
    session.set(LoggingLevel::Debug);
    let legacy = session.for_version(Some(ProtocolVersion::V_2025_11_25), None);
    assert!(legacy.lets_through(LogLevel::Debug.to_u8()));
    let current = Some(ProtocolVersion::V_2026_07_28);
    let silent = session.for_version(current.clone(), None);
    assert!(!silent.lets_through(LogLevel::Emergency.to_u8()));
    let asked = session.for_version(current, Some(LoggingLevel::Warning));
    assert!(!asked.lets_through(LogLevel::Notice.to_u8()));
    assert!(asked.lets_through(LogLevel::Warning.to_u8()));
}

#[test]
fn a_request_the_client_cannot_take_fails_at_once_naming_why() {
    let (plain, _events) = context(true, json!({}), false);
    assert_eq!(
        request_error(&plain, "sampling/createMessage", sampling_params()),
        "cannot send sampling/createMessage: the client did not declare the `sampling` capability"
    );
    assert_eq!(
        request_error(&plain, "elicitation/create", json!({})),
        "cannot send elicitation/create: the client did not declare the `elicitation` capability"
    );
    assert_eq!(
        request_error(&plain, "roots/list", json!({})),
        "cannot send roots/list: the client did not declare the `roots` capability"
    );
    assert!(
        request_error(&plain, "ping", json!({}))
            .starts_with("the server does not send `ping` to clients")
    );
    let (stateless, _events) = context(false, json!({"sampling": {}}), false);
    assert_eq!(
        request_error(&stateless, "sampling/createMessage", sampling_params()),
        format!("cannot send sampling/createMessage to the client: {NO_SESSION}")
    );
    let (capable, _events) = context(true, json!({"sampling": {}}), false);
    assert!(
        request_error(&capable, "sampling/createMessage", json!({"maxTokens": 5}))
            .starts_with("invalid params for sampling/createMessage: missing field `messages`")
    );
}

#[test]
fn a_request_goes_through_the_channel_and_its_answer_comes_back() {
    let (capable, mut events) = context(true, json!({"elicitation": {}}), false);
    let asked = capable.request(
        "elicitation/create".into(),
        json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}})
            .to_string()
            .into(),
    );
    let Ok(Event::Ask { requests, reply }) = events.try_recv().map(|e| *e) else {
        panic!("no request was queued")
    };
    assert_eq!(requests[0].method, "elicitation/create");
    assert_eq!(requests[0].key, "elicitation-1");
    reply
        .send(Ok(r#"{"elicitation-1":{"action":"decline"}}"#.to_owned()))
        .unwrap();
    assert_eq!(block_on(asked).unwrap().as_str(), r#"{"action":"decline"}"#);
    // A request left unanswered when the call ends fails, it does not hang.
    let abandoned = capable.request(
        "elicitation/create".into(),
        "{\"message\":\"x\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}".into(),
    );
    drop(events);
    let RResult::RErr(error) = block_on(abandoned) else {
        panic!("answered")
    };
    assert!(
        error.message.contains("the tool call has ended"),
        "{}",
        error.message
    );
}

#[test]
fn in_a_round_requests_are_answered_from_it_or_end_the_call_asking_for_what_is_missing() {
    let (mut context, mut events) =
        call_context(false, json!({"elicitation": {}, "roots": {}}), false);
    let sealer = rounds::Sealer::random();
    let binding = rounds::Binding::new("tools/call", "t", &json!({}), None);
    let answers = std::collections::BTreeMap::from([(
        "name".to_owned(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    )]);
    context.round = Some(Round::open(&sealer, &binding, None, Some(answers)).unwrap());
    context.no_requests = None;
    let name = json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}});
    let answered = context.ask(
        json!({"name": {"method": "elicitation/create", "params": name}})
            .to_string()
            .into(),
    );
    let answered: Value = serde_json::from_str(&block_on(answered).unwrap()).unwrap();
    assert_eq!(answered["name"]["content"]["name"], "Ada");
    assert!(events.try_recv().is_err(), "nothing went to the client");

    let both = json!({
        "name": {"method": "elicitation/create", "params": name},
        "roots": {"method": "roots/list", "params": {}}
    });
    let _pending = context.ask(both.to_string().into());
    let Ok(Event::InputRequired(missing)) = events.try_recv().map(|e| *e) else {
        panic!("the call was not ended for its missing input")
    };
    assert_eq!(missing.keys().collect::<Vec<_>>(), ["roots"]);
    // A single request is keyed by its method and its place among the call's requests.
    let _pending = context.request("roots/list".into(), "{}".into());
    let Ok(Event::InputRequired(missing)) = events.try_recv().map(|e| *e) else {
        panic!("the call was not ended for its missing input")
    };
    assert_eq!(missing.keys().collect::<Vec<_>>(), ["roots-1"]);
}

#[test]
fn logs_below_the_level_and_progress_without_a_token_are_dropped() {
    let (without_token, mut events) = context(true, json!({}), false);
    without_token.log(0, ROption::RNone, "\"debug\"".into());
    without_token.progress(1.0, ROption::RNone, ROption::RNone);
    assert!(events.try_recv().is_err(), "nothing is sent");
    without_token.log(4, ROption::RSome("p".into()), r#"{"n":1}"#.into());
    let Ok(Event::Log(message)) = events.try_recv().map(|e| *e) else {
        panic!("an error-level message is sent")
    };
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        json!({"level": "error", "logger": "p", "data": {"n": 1}})
    );

    let (with_token, mut events) = context(true, json!({}), true);
    with_token.progress(2.0, ROption::RSome(4.0), ROption::RSome("half".into()));
    let Ok(Event::Progress(report)) = events.try_recv().map(|e| *e) else {
        panic!("progress is sent")
    };
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"progressToken": "t", "progress": 2.0, "total": 4.0, "message": "half"})
    );
}

#[test]
fn the_active_toolsets_and_capabilities_are_the_requests() {
    let (context, _events) = context(true, json!({"sampling": {}}), false);
    assert_eq!(
        context
            .active_toolsets()
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&context.client_capabilities()).unwrap(),
        json!({"sampling": {}})
    );
}

#[test]
fn the_session_is_the_requests_and_none_outside_one() {
    let (in_session, _events) = context(true, json!({}), false);
    assert_eq!(
        in_session.session().into_option().map(RString::into_string),
        Some("session-1".to_owned())
    );
    let (stateless, _events) = context(false, json!({}), false);
    assert!(stateless.session().is_none());
}

#[test]
fn a_resource_update_goes_to_the_server_even_after_the_call_ended() {
    let (updates, mut server) = Updates::channel();
    let (mut context, call) = call_context(false, json!({}), false);
    context.updates = updates;
    let host = HostContextBox::from_ptr(RArc::new(context), TD_Opaque);
    drop(call);
    // From a plugin's thread, no runtime anywhere.
    std::thread::spawn(move || host.resource_updated("library://note".into()))
        .join()
        .unwrap();
    assert_eq!(server.try_recv().unwrap(), "library://note");
}
