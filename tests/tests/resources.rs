//! Resources, resource templates, prompts and completions from a plugin, end to end: the real
//! host binary serving `fixture-library` (toolset `library`, off by default, no tools; toolset
//! `librarian`, one tool that rewrites `library://note`) to rmcp's own client over streamable
//! HTTP. Subscriptions: a client that records `notifications/resources/updated` hears of a
//! change another session made, until it unsubscribes; a 2026-07-28 client hears of it on its
//! `subscriptions/listen` stream.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use e2e::{
    HostProcess, PluginDir, library_file_name,
    mcp::{Client, call_tool, connect, connect_2026, connect_as, get_ok_json, text},
};
use rmcp::{
    ClientHandler, RoleClient, ServiceError,
    model::{
        ClientConfig, CompletionContext, ErrorCode, GetPromptRequestParams,
        ReadResourceRequestParams, ResourceUpdatedNotificationParam, ServerNotification,
        SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{NotificationContext, RunningService},
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const LIBRARY: &str = "fixture-library";

/// The host's flags that run `fixture-library` in a child process.
const ISOLATED: &[&str] = &["--isolate", "library"];

/// A host serving `crates` (with `host_args`), and a client of `/mcp?QUERY`.
async fn serve(
    crates: &[&str],
    query: &str,
    host_args: &[&str],
) -> (PluginDir, HostProcess, Client) {
    let dir = PluginDir::with(crates);
    let host = HostProcess::serve(&dir, host_args);
    let client = connect(&format!("{}/mcp{query}", host.base_url())).await;
    (dir, host, client)
}

fn wire(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

async fn read(client: &Client, uri: &str) -> Result<Value, ServiceError> {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    Ok(wire(result.contents))
}

async fn prompt(client: &Client, name: &str, arguments: Value) -> Result<Value, ServiceError> {
    let mut request = GetPromptRequestParams::new(name);
    if let Value::Object(arguments) = arguments {
        request.arguments = Some(arguments);
    }
    let mut result = wire(client.get_prompt(request).await?);
    result.as_object_mut().unwrap().remove("resultType");
    Ok(result)
}

/// The code and message of a JSON-RPC error, and its data.
fn mcp_error<T: std::fmt::Debug>(outcome: Result<T, ServiceError>) -> (i32, String, Value) {
    match outcome {
        Err(ServiceError::McpError(error)) => (
            error.code.0,
            error.message.into_owned(),
            error.data.unwrap_or(Value::Null),
        ),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn uris(resources: Vec<rmcp::model::Resource>) -> Vec<String> {
    resources.into_iter().map(|r| r.uri).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts_are_served_only_under_urls_that_select_their_toolset() {
    let dir = PluginDir::with(&["sandboxes", LIBRARY]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();

    let plain = connect(&format!("{base}/mcp")).await;
    assert!(plain.list_all_resources().await.unwrap().is_empty());
    assert!(
        plain
            .list_all_resource_templates()
            .await
            .unwrap()
            .is_empty()
    );
    assert!(plain.list_all_prompts().await.unwrap().is_empty());
    let capabilities = plain.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.resources.is_none() && capabilities.prompts.is_none());
    assert!(capabilities.completions.is_none());
    let (code, _, data) = mcp_error(read(&plain, "library://catalogue").await);
    assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND.0);
    assert_eq!(data, json!({"uri": "library://catalogue"}));
    let (code, message, _) = mcp_error(prompt(&plain, "good_morning", json!({})).await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
    assert_eq!(message, "Unknown prompt: good_morning");

    for query in ["?library", "?toolsets=library", "?only=library"] {
        let client = connect(&format!("{base}/mcp{query}")).await;
        assert_eq!(
            uris(client.list_all_resources().await.unwrap()),
            [
                "library://note",
                "library://catalogue",
                "library://cover.png",
                "library://panics"
            ],
            "{query}"
        );
        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(
            wire(&templates),
            json!([{
            "uriTemplate": "library://books/{id}", "name": "book",
            "description": "One book, by its number.", "mimeType": "text/markdown"}])
        );
        let prompts = client.list_all_prompts().await.unwrap();
        assert_eq!(
            wire(&prompts[0]),
            json!({"name": "review", "title": "Review a book",
                   "description": "Ask for a review of a book.", "arguments": [
                       {"name": "id", "description": "The book's number.", "required": true},
                       {"name": "style", "description": "How to write it (default: briefly).",
                        "required": false}]})
        );
        assert_eq!(prompts[1].name, "good_morning");
        let capabilities = wire(&client.peer_info().unwrap().capabilities);
        assert_eq!(
            capabilities["resources"],
            json!({"subscribe": true, "listChanged": true}),
            "{query}"
        );
        assert_eq!(capabilities["prompts"], json!({"listChanged": true}));
        assert_eq!(capabilities["completions"], json!({}));
    }

    let toolsets = get_ok_json(&format!("{base}/toolsets?library")).await;
    assert_eq!(
        toolsets["resources"],
        json!([
            "library://catalogue",
            "library://cover.png",
            "library://note",
            "library://panics"
        ])
    );
    assert_eq!(
        toolsets["resource_templates"],
        json!(["library://books/{id}"])
    );
    assert_eq!(toolsets["prompts"], json!(["good_morning", "review"]));
    let toolsets = get_ok_json(&format!("{base}/toolsets")).await;
    assert_eq!(toolsets["resources"], json!([]));
    assert_eq!(toolsets["prompts"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_opens_no_library_and_reading_opens_it() {
    let (dir, host, client) = serve(&["sandboxes", LIBRARY], "?library", &[]).await;
    let library = library_file_name("fixture_library");
    let sandboxes = library_file_name("sandboxes");
    client.list_all_tools().await.unwrap();
    client.list_all_resources().await.unwrap();
    client.list_all_resource_templates().await.unwrap();
    client.list_all_prompts().await.unwrap();
    // Answered by the host from the manifest: a missing argument, an argument nobody completes.
    let (code, ..) = mcp_error(prompt(&client, "review", json!({})).await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
    let values = client
        .complete_prompt_simple("review", "style", "b")
        .await
        .unwrap();
    assert!(values.is_empty());
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        std::slice::from_ref(&sandboxes),
        "after listing"
    );

    read(&client, "library://catalogue").await.unwrap();
    let mut expected = vec![library, sandboxes];
    expected.sort();
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        expected,
        "after a read"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_opens_the_library_too() {
    let (dir, host, client) = serve(&[LIBRARY], "?library", &[]).await;
    assert!(host.mapped_plugin_file_names(&dir).is_empty());
    prompt(&client, "good_morning", json!({})).await.unwrap();
    assert_eq!(
        host.mapped_plugin_file_names(&dir),
        [library_file_name("fixture_library")]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn text_binary_and_template_resources_are_read() {
    text_binary_and_template_resources_are_read_in(&[]).await;
}

/// The same with `fixture-library` isolated.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_text_binary_and_template_resources_are_read() {
    text_binary_and_template_resources_are_read_in(ISOLATED).await;
}

async fn text_binary_and_template_resources_are_read_in(host_args: &[&str]) {
    let (_dir, _host, client) = serve(&[LIBRARY], "?only=library", host_args).await;
    assert_eq!(
        read(&client, "library://catalogue").await.unwrap(),
        json!([{"uri": "library://catalogue", "mimeType": "text/plain",
                "text": "1: Dune\n2: Emma\n12: Ulysses"}])
    );
    // COVER, in base64.
    assert_eq!(
        read(&client, "library://cover.png").await.unwrap(),
        json!([{"uri": "library://cover.png", "mimeType": "image/png", "blob": "iVBORwD/"}])
    );
    assert_eq!(
        read(&client, "library://books/12").await.unwrap(),
        json!([{"uri": "library://books/12", "mimeType": "text/markdown", "text": "# Ulysses"}])
    );

    // A template's variable naming nothing, a URI nothing serves: "Resource not found".
    let (code, message, data) = mcp_error(read(&client, "library://books/99").await);
    assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND.0);
    assert_eq!(message, "no book 99 in the library");
    assert_eq!(data, json!({"uri": "library://books/99"}));
    let (code, message, data) = mcp_error(read(&client, "library://books/1/2").await);
    assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND.0);
    assert_eq!(message, "Resource not found");
    assert_eq!(data, json!({"uri": "library://books/1/2"}));

    // A panic is an internal error naming the resource; the next read works.
    let (code, message, _) = mcp_error(read(&client, "library://panics").await);
    assert_eq!(code, ErrorCode::INTERNAL_ERROR.0);
    assert_eq!(
        message,
        "resource library://panics panicked: the shelf collapsed"
    );
    read(&client, "library://books/1").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn prompts_are_got_with_and_without_arguments() {
    prompts_are_got_with_and_without_arguments_in(&[]).await;
}

/// The same with `fixture-library` isolated.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_prompts_are_got_with_and_without_arguments() {
    prompts_are_got_with_and_without_arguments_in(ISOLATED).await;
}

async fn prompts_are_got_with_and_without_arguments_in(host_args: &[&str]) {
    let (_dir, _host, client) = serve(&[LIBRARY], "?library", host_args).await;
    let embedded = json!({"role": "user", "content": {"type": "resource", "resource": {
        "uri": "library://books/2", "mimeType": "text/markdown", "text": "book 2"}}});
    assert_eq!(
        prompt(&client, "review", json!({"id": "2"})).await.unwrap(),
        json!({"description": "Ask for a review of a book.", "messages": [
            embedded,
            {"role": "user", "content": {"type": "text", "text": "Review book 2, briefly."}}]})
    );
    let styled = prompt(&client, "review", json!({"id": "2", "style": "in verse"}))
        .await
        .unwrap();
    assert_eq!(
        styled["messages"][1]["content"]["text"],
        "Review book 2, in verse."
    );
    assert_eq!(
        prompt(&client, "good_morning", json!({})).await.unwrap()["messages"],
        json!([
            {"role": "user", "content": {"type": "image", "data": "iVBORw0KGgo=",
                                         "mimeType": "image/png"}},
            {"role": "assistant", "content": {"type": "text",
                                              "text": "Good morning! What shall we read?"}}
        ])
    );

    let (code, message, _) = mcp_error(prompt(&client, "review", json!({"style": "x"})).await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
    assert_eq!(message, "missing required argument `id` of prompt review");
    let (code, message, _) = mcp_error(prompt(&client, "nope", json!({})).await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
    assert_eq!(message, "Unknown prompt: nope");
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_are_filtered_by_prefix_and_see_the_other_arguments() {
    completions_are_filtered_by_prefix_and_see_the_other_arguments_in(&[]).await;
}

/// The same with `fixture-library` isolated.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_completions_are_filtered_by_prefix_and_see_the_other_arguments() {
    completions_are_filtered_by_prefix_and_see_the_other_arguments_in(ISOLATED).await;
}

async fn completions_are_filtered_by_prefix_and_see_the_other_arguments_in(host_args: &[&str]) {
    let (_dir, _host, client) = serve(&[LIBRARY], "?library", host_args).await;
    let prompt_values = async |argument: &str, value: &str| {
        client
            .complete_prompt_simple("review", argument, value)
            .await
            .unwrap()
    };
    assert_eq!(prompt_values("id", "1").await, ["1", "12"]);
    assert_eq!(prompt_values("id", "").await, ["1", "2", "12"]);
    assert!(prompt_values("id", "9").await.is_empty());
    assert!(prompt_values("style", "").await.is_empty());

    let template = "library://books/{id}";
    let info = client
        .complete_resource_argument(template, "id", "2", None)
        .await
        .unwrap();
    assert_eq!(
        wire(&info),
        json!({"values": ["2"], "total": 1, "hasMore": false})
    );
    let context = CompletionContext::with_arguments(
        [("shelf".to_owned(), "empty".to_owned())]
            .into_iter()
            .collect(),
    );
    let info = client
        .complete_resource_argument(template, "id", "", Some(context))
        .await
        .unwrap();
    assert_eq!(info.values, ["none"]);

    let (code, ..) = mcp_error(client.complete_prompt_simple("nope", "id", "").await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
    let (code, ..) = mcp_error(
        client
            .complete_resource_simple("library://nothing/{id}", "id", "")
            .await,
    );
    assert_eq!(code, ErrorCode::INVALID_PARAMS.0);
}

#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)] // resources/subscribe is legacy-only: the client speaks 2025-11-25
async fn subscribe_and_unsubscribe_succeed_for_resources_served_here() {
    let (_dir, _host, client) = serve(&[LIBRARY], "?library", &[]).await;
    for uri in ["library://catalogue", "library://books/2"] {
        client
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("subscribe {uri}: {e}"));
        client
            .unsubscribe(UnsubscribeRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("unsubscribe {uri}: {e}"));
    }
    let (code, _, data) = mcp_error(
        client
            .subscribe(SubscribeRequestParams::new("library://elsewhere"))
            .await,
    );
    assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND.0);
    assert_eq!(data, json!({"uri": "library://elsewhere"}));
}

/// How long a notification that should come may take.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long to listen for a notification that should not come.
const QUIET: Duration = Duration::from_millis(500);

/// A client that passes on the URIs of the `notifications/resources/updated` it gets.
#[derive(Debug, Clone)]
struct Listener(Arc<Mutex<mpsc::UnboundedSender<String>>>);

impl ClientHandler for Listener {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(params.uri);
    }
}

/// A listening client of `url`, and the URIs it hears of.
async fn listen(
    url: &str,
) -> (
    RunningService<RoleClient, Listener>,
    mpsc::UnboundedReceiver<String>,
) {
    let (sender, heard) = mpsc::unbounded_channel();
    let client = connect_as(url, Listener(Arc::new(Mutex::new(sender)))).await;
    (client, heard)
}

/// The next URI heard within [`PATIENCE`].
async fn next_update(heard: &mut mpsc::UnboundedReceiver<String>, what: &str) -> String {
    tokio::time::timeout(PATIENCE, heard.recv())
        .await
        .unwrap_or_else(|_| {
            panic!("{what}: no notifications/resources/updated within {PATIENCE:?}")
        })
        .expect("the client is gone")
}

/// Asserts nothing is heard within [`QUIET`].
async fn nothing_heard(heard: &mut mpsc::UnboundedReceiver<String>, what: &str) {
    if let Ok(Some(uri)) = tokio::time::timeout(QUIET, heard.recv()).await {
        panic!("{what}: heard of {uri}");
    }
}

async fn read_note(client: &Peer) -> Value {
    let contents = client
        .read_resource(ReadResourceRequestParams::new("library://note"))
        .await
        .unwrap();
    wire(contents.contents)[0]["text"].clone()
}

type Peer = rmcp::service::Peer<RoleClient>;

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_listen_stream_hears_of_the_resources_it_names_that_its_url_serves() {
    let dir = PluginDir::with(&[LIBRARY]);
    let host = HostProcess::serve(&dir, &[]);
    let base = host.base_url();
    let listener = connect_2026(&format!("{base}/mcp?library"), ClientConfig::default()).await;
    let writer = connect_2026(
        &format!("{base}/mcp?only=librarian"),
        ClientConfig::default(),
    )
    .await;
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["library://note".to_owned()]);
    filter.tools_list_changed = Some(true);
    let mut stream = listener
        .listen(filter)
        .await
        .expect("the stream is acknowledged");
    assert_eq!(
        stream.acknowledged().resource_subscriptions,
        Some(vec!["library://note".to_owned()])
    );
    assert_eq!(
        stream.acknowledged().tools_list_changed,
        Some(true),
        "lists change when the plugins do"
    );
    // The writer's URL does not serve the note: it cannot listen to it.
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["library://note".to_owned()]);
    let mut deaf = writer
        .listen(filter)
        .await
        .expect("acknowledged all the same");

    call_tool(&writer, "write_note", json!({"text": "closed on Sunday"})).await;
    let heard = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("an update within the patience")
        .expect("the stream is open")
        .expect("a notification");
    let ServerNotification::ResourceUpdatedNotification(update) = heard else {
        panic!("not a resource update: {heard:?}");
    };
    assert_eq!(update.params.uri, "library://note");
    assert!(
        tokio::time::timeout(QUIET, deaf.next()).await.is_err(),
        "a URL that does not serve the note hears nothing of it"
    );
    stream.cancel().await.expect("the stream ends");
}

#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)] // resources/subscribe is legacy-only: the client speaks 2025-11-25
async fn a_subscriber_hears_of_a_change_another_session_made_until_it_unsubscribes() {
    a_subscriber_hears_of_a_change_another_session_made_until_it_unsubscribes_in(&[]).await;
}

/// The same with `fixture-library` isolated.
#[tokio::test(flavor = "multi_thread")]
async fn a_change_a_plugin_makes_after_its_call_answered_reaches_the_subscriber() {
    a_change_a_plugin_makes_after_its_call_answered_reaches_the_subscriber_in(&[]).await;
}

/// The same with `fixture-library` isolated: the child tells its parent, which subscribed
/// there for its session.
#[tokio::test(flavor = "multi_thread")]
async fn isolated_a_change_a_plugin_makes_after_its_call_answered_reaches_the_subscriber() {
    a_change_a_plugin_makes_after_its_call_answered_reaches_the_subscriber_in(ISOLATED).await;
}

#[allow(deprecated)] // resources/subscribe is legacy-only: the client speaks 2025-11-25
async fn a_change_a_plugin_makes_after_its_call_answered_reaches_the_subscriber_in(
    host_args: &[&str],
) {
    let dir = PluginDir::with(&[LIBRARY]);
    let host = HostProcess::serve(&dir, host_args);
    let base = host.base_url();
    let (subscriber, mut heard) = listen(&format!("{base}/mcp?library")).await;
    let (writer, _) = listen(&format!("{base}/mcp?only=librarian")).await;
    subscriber
        .subscribe(SubscribeRequestParams::new("library://note"))
        .await
        .unwrap();
    let answered = call_tool(
        &writer,
        "write_note_later",
        json!({"text": "back at noon", "ms": 300}),
    )
    .await;
    assert_eq!(text(&answered), "library://note to be rewritten in 300 ms");
    assert_eq!(
        next_update(&mut heard, "the subscriber, after the call").await,
        "library://note"
    );
    assert_eq!(read_note(&subscriber).await, "back at noon");
    nothing_heard(&mut heard, "the subscriber, after its one update").await;
}

#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)] // resources/subscribe is legacy-only: the client speaks 2025-11-25
async fn isolated_a_subscriber_hears_of_a_change_another_session_made_until_it_unsubscribes() {
    a_subscriber_hears_of_a_change_another_session_made_until_it_unsubscribes_in(ISOLATED).await;
}

#[allow(deprecated)]
async fn a_subscriber_hears_of_a_change_another_session_made_until_it_unsubscribes_in(
    host_args: &[&str],
) {
    let dir = PluginDir::with(&[LIBRARY]);
    let host = HostProcess::serve(&dir, host_args);
    let base = host.base_url();
    let (subscriber, mut heard) = listen(&format!("{base}/mcp?library")).await;
    let (bystander, mut bystander_heard) = listen(&format!("{base}/mcp?library")).await;
    // The writer connects with another URL: only the `librarian` toolset, not `library`.
    let (writer, mut writer_heard) = listen(&format!("{base}/mcp?only=librarian")).await;
    assert_eq!(read_note(&subscriber).await, "");
    subscriber
        .subscribe(SubscribeRequestParams::new("library://note"))
        .await
        .unwrap();
    // A URI the writer's set does not serve cannot be subscribed to there.
    let (code, ..) = mcp_error(
        writer
            .subscribe(SubscribeRequestParams::new("library://note"))
            .await,
    );
    assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND.0);

    let written = call_tool(&writer, "write_note", json!({"text": "closed on Sunday"})).await;
    assert_eq!(text(&written), "library://note rewritten");
    assert_eq!(
        next_update(&mut heard, "the subscriber").await,
        "library://note"
    );
    assert_eq!(read_note(&subscriber).await, "closed on Sunday");
    nothing_heard(&mut bystander_heard, "a session that never subscribed").await;
    nothing_heard(&mut writer_heard, "the writer, not subscribed").await;
    nothing_heard(&mut heard, "the subscriber, after its one update").await;

    // Two changes, two notifications.
    for text in ["open at nine", "open at ten"] {
        call_tool(&writer, "write_note", json!({"text": text})).await;
        assert_eq!(next_update(&mut heard, text).await, "library://note");
    }
    assert_eq!(read_note(&bystander).await, "open at ten");

    subscriber
        .unsubscribe(UnsubscribeRequestParams::new("library://note"))
        .await
        .unwrap();
    call_tool(&writer, "write_note", json!({"text": "gone fishing"})).await;
    nothing_heard(&mut heard, "the subscriber, after unsubscribing").await;
    assert_eq!(read_note(&subscriber).await, "gone fishing");

    // A session that ends takes its subscriptions with it; the others still hear.
    bystander
        .subscribe(SubscribeRequestParams::new("library://note"))
        .await
        .unwrap();
    subscriber
        .subscribe(SubscribeRequestParams::new("library://note"))
        .await
        .unwrap();
    subscriber.cancel().await.unwrap();
    call_tool(&writer, "write_note", json!({"text": "back"})).await;
    assert_eq!(
        next_update(&mut bystander_heard, "the bystander, now subscribed").await,
        "library://note"
    );
    assert!(
        !host.stderr_so_far().contains("panicked"),
        "{}",
        host.stderr_so_far()
    );
}
