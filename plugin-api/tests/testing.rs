//! `plugin_api::testing` on a small `#[plugin]`: listing and calling its tools (sync, async,
//! dynamic), what their context records, the client's canned answers, errors and panics, its
//! resources, prompts and completions, and its extension of a stand-in tool.

use std::{
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
    time::Duration,
};

use plugin_api::{
    Content, Context, LogLevel, Original, Tool, ToolError, ToolOutput, ToolResult, Value, Wrapped,
    error::ErrorKind, json, plugin, testing::PluginTest, tokio,
};

/// How many times a `Kitchen` was stopped.
static STOPS: AtomicUsize = AtomicUsize::new(0);

/// The kitchen's state: how many dishes it cooked.
#[derive(Debug, Default)]
pub struct Kitchen {
    cooked: AtomicU64,
}

/// A kitchen to test the tests with.
#[plugin(
    name = "kitchen",
    toolset(name = "kitchen", description = "Cooking"),
    toolset(name = "pantry", description = "Stock", default = false),
    extend(tool = "serve_dish", description = "Serve a dish, warm.")
)]
impl Kitchen {
    /// Cook a dish.
    #[tool]
    fn cook(
        &self,
        /// What to cook.
        dish: String,
        /// How many portions.
        #[arg(default = 1)]
        portions: u32,
    ) -> Result<String, ToolError> {
        if portions == 0 {
            return Err(ToolError::new("no portions to cook"));
        }
        let n = self.cooked.fetch_add(1, Ordering::Relaxed);
        Ok(format!("{portions} x {dish} (order {n})"))
    }

    /// Bake for a few (very short) minutes, saying how it goes.
    #[tool]
    async fn bake(&self, minutes: u32, ctx: Context) -> Value {
        ctx.info(json!({"baking": minutes}));
        for minute in 1..=minutes {
            tokio::time::sleep(Duration::from_millis(1)).await;
            ctx.progress(f64::from(minute), Some(f64::from(minutes)), Some("baking"));
        }
        ctx.with_logger("oven").warning("hot");
        ctx.resource_updated("kitchen://menu");
        json!({"baked": minutes})
    }

    /// Ask the client's model for the dish's name.
    #[tool]
    async fn name_dish(&self, ctx: Context) -> Result<String, ToolError> {
        let answer = ctx.sample(json!({"messages": [], "maxTokens": 10})).await?;
        Ok(answer["content"]["text"].as_str().unwrap_or("?").to_owned())
    }

    /// What the request has on.
    #[tool(toolset = "pantry")]
    fn request_info(ctx: &Context) -> Value {
        json!({"toolsets": ctx.active_toolsets(), "capabilities": ctx.client_capabilities()})
    }

    /// Drop the pan.
    #[tool]
    fn drop_pan(&self) -> String {
        panic!("the pan is hot")
    }

    /// A plated dish, as a result built by hand.
    #[tool]
    fn plate(&self) -> ToolResult {
        ToolResult::new([Content::text("plated"), Content::text("garnished")])
    }

    /// Tools made at run time.
    #[dynamic_tools]
    fn specials(&self) -> Vec<Tool> {
        vec![Tool::new("special", "Today's special.").sync(|_: Value| Ok::<_, ToolError>("soup"))]
    }

    /// The menu.
    #[resource(uri = "kitchen://menu", mime_type = "text/plain")]
    fn menu(&self) -> String {
        "soup\nbread".to_owned()
    }

    /// A recipe, by dish.
    #[resource_template(uri_template = "kitchen://recipes/{dish}")]
    async fn recipe(&self, dish: String) -> Result<String, ToolError> {
        match dish.as_str() {
            "soup" => Ok("boil water".to_owned()),
            _ => Err(ToolError::not_found(format!("no recipe for {dish}"))),
        }
    }

    /// Suggest a dish.
    #[prompt]
    fn suggest(
        &self,
        /// For whom.
        guest: String,
        /// In what mood.
        mood: Option<String>,
    ) -> String {
        let mood = mood.unwrap_or_else(|| "hungry".to_owned());
        format!("Suggest a dish for {guest}, who is {mood}.")
    }

    /// Guests, for the prompt's `guest`.
    #[complete(prompt = "suggest", argument = "guest")]
    fn guests(&self, value: String) -> Vec<String> {
        ["ada", "alan", "grace"]
            .into_iter()
            .filter(|g| g.starts_with(&value))
            .map(String::from)
            .collect()
    }

    /// Dishes, for the template's `dish`.
    #[complete(resource = "kitchen://recipes/{dish}", argument = "dish")]
    fn dishes(&self, value: String) -> Vec<String> {
        ["soup", "stew"]
            .into_iter()
            .filter(|d| d.starts_with(&value))
            .map(String::from)
            .collect()
    }

    /// Serve every dish warm.
    #[extend(tool = "serve_dish")]
    fn warm(&self, original: Original) -> Wrapped {
        Wrapped::asynchronous(move |arguments: Value| {
            let original = original.clone();
            async move {
                let mut served = original.call(arguments).await?;
                served["warm"] = json!(true);
                Ok(served)
            }
        })
    }

    /// Refuse to wrap the fragile tool.
    #[extend(tool = "fragile")]
    fn refuse(&self, _original: Original) -> Result<Wrapped, ToolError> {
        Err(ToolError::new("fragile tools are not wrapped"))
    }

    #[on_stop]
    fn close(&self) {
        STOPS.fetch_add(1, Ordering::SeqCst);
    }
}

fn kitchen() -> PluginTest {
    PluginTest::new::<Kitchen>()
}

#[test]
fn tools_are_listed_with_their_descriptions_and_schemas() {
    let kitchen = kitchen();
    let names: Vec<&str> = kitchen.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cook",
            "bake",
            "name_dish",
            "request_info",
            "drop_pan",
            "plate",
            "special"
        ]
    );
    let cook = kitchen.tool("cook").unwrap();
    assert_eq!(cook.description, "Cook a dish.");
    assert_eq!(cook.toolset, "kitchen");
    let schema = Value::Object(cook.input_schema.clone().unwrap());
    assert_eq!(schema["properties"]["dish"]["description"], "What to cook.");
    assert_eq!(schema["required"], json!(["dish"]));
    assert_eq!(kitchen.tool("request_info").unwrap().toolset, "pantry");
    assert!(kitchen.tool("nope").is_none());
}

#[test]
fn a_sync_tool_answers_and_keeps_its_state() {
    let kitchen = kitchen();
    let first = kitchen.call("cook", json!({"dish": "soup"}));
    assert_eq!(first.text(), "1 x soup (order 0)");
    assert_eq!(first.value(), json!("1 x soup (order 0)"));
    let second = kitchen.call("cook", json!({"dish": "stew", "portions": 2}));
    assert_eq!(second.text(), "2 x stew (order 1)");
    assert!(second.logs().is_empty());
}

#[test]
fn an_async_tool_runs_without_a_runtime_of_the_tests_and_its_context_records() {
    let call = kitchen().call("bake", json!({"minutes": 3}));
    assert_eq!(call.value(), json!({"baked": 3}));
    let logs = call.logs();
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0].level, LogLevel::Info);
    assert_eq!(logs[0].logger.as_deref(), Some("kitchen"));
    assert_eq!(logs[0].data, json!({"baking": 3}));
    assert_eq!(logs[1].level, LogLevel::Warning);
    assert_eq!(logs[1].logger.as_deref(), Some("oven"));
    assert_eq!(logs[1].data, json!("hot"));
    let progress = call.progress();
    assert_eq!(progress.len(), 3);
    assert_eq!(progress[2].progress, 3.0);
    assert_eq!(progress[2].total, Some(3.0));
    assert_eq!(progress[2].message.as_deref(), Some("baking"));
    assert_eq!(call.resources_updated(), ["kitchen://menu"]);
}

#[test]
fn results_are_what_the_host_serves() {
    let kitchen = kitchen();
    let object = kitchen
        .call("bake", json!({"minutes": 0}))
        .result()
        .to_json();
    assert_eq!(object["structuredContent"], json!({"baked": 0}));
    assert_eq!(object["content"][0]["text"], r#"{"baked":0}"#);
    let plated = kitchen.call("plate", json!({}));
    assert_eq!(plated.text(), "plated\ngarnished");
    assert!(matches!(plated.output(), Ok(ToolOutput::Result(_))));
    assert_eq!(plated.value()["content"][1]["text"], "garnished");
    let failed = kitchen.call("cook", json!({"dish": "soup", "portions": 0}));
    assert!(failed.result().is_error());
    assert_eq!(
        failed.result().to_json()["content"][0]["text"],
        "no portions to cook"
    );
}

#[test]
fn a_built_result_is_read_as_the_host_reads_it() {
    let raw = Tool::new("serve_raw", "Serve the result given.")
        .sync(|result: Value| ToolResult::from_json(result));
    let kitchen = kitchen().with_tool(raw);
    let untyped = kitchen.call("serve_raw", json!({"content": [{"text": "soup"}]}));
    assert_eq!(untyped.error().kind(), ErrorKind::Tool);
    assert_eq!(
        untyped.error().message(),
        "tool serve_raw returned a result that is not a valid CallToolResult: \
         missing field `type` at line 1 column 27"
    );
    assert_eq!(
        untyped.result().to_json()["content"][0]["text"],
        untyped.error().message()
    );
    let contentless = kitchen.call("serve_raw", json!({"isError": true}));
    assert!(matches!(contentless.output(), Ok(ToolOutput::Result(_))));
    assert_eq!(
        contentless.result().to_json(),
        json!({"content": [], "isError": true})
    );
}

#[test]
fn a_tool_error_keeps_its_message_and_kind() {
    let call = kitchen().call("cook", json!({"dish": "soup", "portions": 0}));
    assert_eq!(call.error().kind(), ErrorKind::Tool);
    assert_eq!(call.error().message(), "no portions to cook");
}

#[test]
fn bad_arguments_are_an_error_naming_the_field() {
    let kitchen = kitchen();
    let wrong = kitchen.call("cook", json!({"dish": 5}));
    assert_eq!(wrong.error().kind(), ErrorKind::InvalidArguments);
    assert!(
        wrong
            .error()
            .message()
            .starts_with("invalid argument `dish`"),
        "{}",
        wrong.error().message()
    );
    let missing = kitchen.call("cook", json!({}));
    assert!(
        missing.error().message().contains("missing field `dish`"),
        "{}",
        missing.error().message()
    );
}

#[test]
fn a_panic_is_an_error_and_the_next_call_works() {
    let kitchen = kitchen();
    let dropped = kitchen.call("drop_pan", json!({}));
    assert_eq!(dropped.error().kind(), ErrorKind::Panicked);
    assert_eq!(
        dropped.error().message(),
        "tool drop_pan panicked: the pan is hot"
    );
    assert_eq!(
        kitchen.call("cook", json!({"dish": "soup"})).text(),
        "1 x soup (order 0)"
    );
}

#[test]
#[should_panic(expected = "tool cook failed (Tool): no portions to cook")]
fn the_text_of_a_failed_call_panics_with_its_error() {
    kitchen()
        .call("cook", json!({"dish": "soup", "portions": 0}))
        .text();
}

#[test]
#[should_panic(expected = "plugin kitchen has no tool `nope`; it has: cook, bake")]
fn calling_an_unknown_tool_panics_naming_the_tools() {
    kitchen().call("nope", json!({}));
}

#[test]
fn a_dynamic_tool_is_called_like_the_others() {
    assert_eq!(kitchen().call("special", json!({})).text(), "soup");
}

#[test]
fn the_client_answers_what_the_test_set_and_nothing_else() {
    let unanswered = kitchen().call("name_dish", json!({}));
    assert_eq!(
        unanswered.error().message(),
        "cannot send sampling/createMessage: the test's client has no answer for it \
         (give one with PluginTest::with_client_answer)"
    );
    assert_eq!(unanswered.requests()[0].method, "sampling/createMessage");

    let kitchen = kitchen().with_client_answer(
        "sampling/createMessage",
        json!({"role": "assistant", "content": {"type": "text", "text": "Velvet soup"}}),
    );
    let named = kitchen.call("name_dish", json!({}));
    assert_eq!(named.text(), "Velvet soup");
    let requests = named.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].params, json!({"messages": [], "maxTokens": 10}));
}

#[test]
fn capabilities_the_test_sets_refuse_the_requests_they_leave_out() {
    let soup = json!({"role": "assistant", "content": {"type": "text", "text": "Velvet soup"}});
    let declaring = |capabilities: Value| {
        kitchen()
            .with_client_answer("sampling/createMessage", soup.clone())
            .with_client_capabilities(capabilities)
            .call("name_dish", json!({}))
    };
    let refused = declaring(json!({"roots": {}, "sampling": null}));
    assert_eq!(refused.error().kind(), ErrorKind::Tool);
    assert_eq!(
        refused.error().message(),
        "cannot send sampling/createMessage: the client did not declare the `sampling` capability"
    );
    assert_eq!(refused.requests()[0].method, "sampling/createMessage");
    assert_eq!(declaring(json!({"sampling": {}})).text(), "Velvet soup");
}

#[test]
fn capabilities_and_toolsets_have_defaults_the_test_can_replace() {
    let info = |kitchen: PluginTest| kitchen.call("request_info", json!({})).value();
    assert_eq!(
        info(kitchen()),
        json!({"toolsets": ["kitchen", "pantry"], "capabilities": {}})
    );
    let answering = kitchen().with_client_answer("roots/list", json!({"roots": []}));
    assert_eq!(info(answering)["capabilities"], json!({"roots": {}}));
    let set = kitchen()
        .with_client_answer("roots/list", json!({"roots": []}))
        .with_client_capabilities(json!({"sampling": {}}))
        .with_active_toolsets(["pantry"]);
    assert_eq!(
        info(set),
        json!({"toolsets": ["pantry"], "capabilities": {"sampling": {}}})
    );
}

#[test]
fn resources_are_read_by_uri_and_template() {
    let kitchen = kitchen();
    assert_eq!(
        kitchen.read_resource("kitchen://menu").unwrap(),
        json!({"contents": [{"uri": "kitchen://menu", "mimeType": "text/plain", "text": "soup\nbread"}]})
    );
    let recipe = kitchen.read_resource("kitchen://recipes/soup").unwrap();
    assert_eq!(recipe["contents"][0]["text"], "boil water");
    let missing = kitchen.read_resource("kitchen://recipes/cake").unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert_eq!(missing.message(), "no recipe for cake");
    let unknown = kitchen.read_resource("kitchen://nothing").unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::NotFound);
}

#[test]
fn prompts_are_got_with_their_arguments() {
    let kitchen = kitchen();
    let prompt = kitchen
        .get_prompt("suggest", json!({"guest": "Ada", "mood": "cold"}))
        .unwrap();
    assert_eq!(prompt["description"], "Suggest a dish.");
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Suggest a dish for Ada, who is cold."
    );
    let missing = kitchen.get_prompt("suggest", json!({})).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        missing.message(),
        "missing required argument `guest` of prompt suggest"
    );
}

#[test]
fn arguments_are_completed() {
    let kitchen = kitchen();
    assert_eq!(
        kitchen.complete_prompt("suggest", "guest", "a").unwrap(),
        ["ada", "alan"]
    );
    assert!(
        kitchen
            .complete_prompt("suggest", "mood", "a")
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        kitchen
            .complete_resource("kitchen://recipes/{dish}", "dish", "st")
            .unwrap(),
        ["stew"]
    );
    let completion = kitchen
        .complete(json!({
            "ref": {"type": "ref/prompt", "name": "suggest"},
            "argument": {"name": "guest", "value": "g"},
        }))
        .unwrap();
    assert_eq!(
        completion,
        json!({"values": ["grace"], "total": 1, "hasMore": false})
    );
}

/// A stand-in for another plugin's `serve_dish`: it answers the dish, logging as it does.
fn serve_dish() -> Tool {
    Tool::new("serve_dish", "Serve a dish.").sync(|arguments: Value| {
        if let Some(ctx) = Context::current() {
            ctx.info("serving");
        }
        Ok::<_, ToolError>(json!({"dish": arguments["dish"]}))
    })
}

#[test]
fn the_plugins_extension_wraps_a_stand_in_tool() {
    let kitchen = kitchen().with_tool(serve_dish());
    assert_eq!(kitchen.tools().last().unwrap().name, "serve_dish");
    let call = kitchen.call("serve_dish", json!({"dish": "soup"}));
    assert_eq!(call.value(), json!({"dish": "soup", "warm": true}));
    assert_eq!(call.logs()[0].data, json!("serving"));
}

#[test]
fn a_tool_no_extension_targets_is_served_as_it_is() {
    let plain = Tool::new("serve_drink", "").sync(|_: Value| Ok::<_, ToolError>("water"));
    assert_eq!(
        kitchen()
            .with_tool(plain)
            .call("serve_drink", json!({}))
            .text(),
        "water"
    );
}

#[test]
fn a_wrap_that_fails_is_an_error() {
    let fragile = Tool::new("fragile", "").sync(|_: Value| Ok::<_, ToolError>("ok"));
    let error = kitchen().try_with_tool(fragile).unwrap_err();
    assert_eq!(error.message(), "fragile tools are not wrapped");
}

#[test]
fn dropping_the_test_stops_the_plugin() {
    let kitchen = kitchen();
    let before = STOPS.load(Ordering::SeqCst);
    drop(kitchen);
    assert!(STOPS.load(Ordering::SeqCst) > before);
}
