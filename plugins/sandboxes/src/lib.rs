//! `sandboxes`: the seeds' example, with sandboxes kept in the plugin's memory.
//!
//! It shows the authoring API with state: the plugin type holds a registry behind a mutex,
//! tools take `&self` and the call's [`Context`], and each returns a typed record. Nothing is
//! launched for real.
//!
//! Each MCP session has its own sandboxes, keyed by [`Context::session_id`]: a client lists and
//! stops only the sandboxes its session launched. Requests outside a session (a `--stateless`
//! server) share one space, since the server cannot tell their clients apart. Everything is
//! bounded, since the plugin is not told when a session ends: [`MAX_SANDBOXES`] per session,
//! names and variants of at most [`MAX_NAME_CHARS`] characters (the input schema says both
//! with `maxLength`), and the sandboxes of at most [`MAX_SESSIONS`] sessions, the least recently
//! used session's being forgotten to make room for a new one.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use plugin_api::{Context, ToolError, plugin};
use serde::Serialize;

/// The most sandboxes one session keeps. A launch beyond it forgets the session's oldest
/// stopped sandbox, or is refused while all of them run.
pub const MAX_SANDBOXES: usize = 32;

/// The longest sandbox name or variant, in characters (JSON Schema's `maxLength` counts
/// characters): a name is a label, and 128 leaves room for any a person would type.
pub const MAX_NAME_CHARS: usize = 128;

/// The most sessions whose sandboxes are kept; a new session's first launch beyond it forgets
/// the sandboxes of the session least recently used. With the bounds above, the registry stays
/// within a few tens of MiB whatever clients do.
pub const MAX_SESSIONS: usize = 1024;

/// A sandbox as this plugin records it.
#[derive(Debug, Clone, Serialize)]
pub struct Sandbox {
    /// Its identifier, `sbx-N`, unique within its session.
    pub id: String,
    /// The name it was launched with.
    pub name: String,
    /// The variant it runs.
    pub variant: String,
    /// `running` or `stopped`.
    pub status: String,
}

/// The plugin's state: each session's sandboxes.
#[derive(Debug, Default)]
pub struct Sandboxes {
    registry: Mutex<Registry>,
}

/// Every session's sandboxes, and a clock that orders their use.
#[derive(Debug, Default)]
struct Registry {
    /// By session id; `None` holds the sandboxes of requests outside a session.
    spaces: HashMap<Option<String>, Space>,
    /// Counts uses, so the least recently used space can be found.
    clock: u64,
}

/// One session's sandboxes.
#[derive(Debug, Default)]
struct Space {
    sandboxes: Vec<Sandbox>,
    /// The number the next sandbox's id gets.
    next: u64,
    /// The registry's clock when the session last used it.
    used: u64,
}

impl Registry {
    /// The space of `session`, if it has one, marked as used now.
    fn existing(&mut self, session: &Option<String>) -> Option<&mut Space> {
        self.clock += 1;
        let now = self.clock;
        let space = self.spaces.get_mut(session)?;
        space.used = now;
        Some(space)
    }

    /// The space of `session`, made if need be (forgetting the least recently used one when
    /// [`MAX_SESSIONS`] have one), marked as used now.
    fn space(&mut self, session: Option<String>) -> &mut Space {
        if !self.spaces.contains_key(&session) && self.spaces.len() >= MAX_SESSIONS {
            let oldest = self
                .spaces
                .iter()
                .min_by_key(|(_, space)| space.used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.spaces.remove(&oldest);
            }
        }
        self.clock += 1;
        let space = self.spaces.entry(session).or_default();
        space.used = self.clock;
        space
    }
}

impl Space {
    /// Makes room for one more sandbox: under [`MAX_SANDBOXES`], or by forgetting the oldest
    /// stopped one; an error when all of them run.
    fn make_room(&mut self) -> Result<(), ToolError> {
        if self.sandboxes.len() < MAX_SANDBOXES {
            return Ok(());
        }
        let stopped = self.sandboxes.iter().position(|s| s.status == "stopped");
        match stopped {
            Some(index) => {
                self.sandboxes.remove(index);
                Ok(())
            }
            None => Err(ToolError::new(format!(
                "this session has {MAX_SANDBOXES} sandboxes running, the most it may have: \
                 stop one first"
            ))),
        }
    }
}

/// An invalid-arguments error when `value` is longer than [`MAX_NAME_CHARS`].
fn short(argument: &str, value: &str) -> Result<(), ToolError> {
    let chars = value.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(ToolError::invalid_arguments(format!(
            "argument `{argument}`: {chars} characters, longer than the maximum of {MAX_NAME_CHARS}"
        )));
    }
    Ok(())
}

/// Sandboxes for a session to run code in. An example of the plugin API with in-memory state:
/// sandboxes live in the plugin's memory, apart for each session, and nothing is launched for
/// real.
#[plugin(toolset(
    name = "sandboxes",
    title = "Sandboxes",
    description = "Launch, list and stop sandboxes, each session its own (an in-memory example of the plugin API)",
    instructions = "Launch a sandbox with launch_sandbox before running code; stop it when done.",
))]
impl Sandboxes {
    /// Launch a sandbox for this session to run code in.
    ///
    /// A session keeps at most 32 sandboxes: a launch beyond forgets its oldest stopped one, and
    /// is refused while all 32 run. Names and variants are at most 128 characters. Requests
    /// outside a session (a stateless server) share one set of sandboxes.
    #[tool(title = "Launch Sandbox")]
    fn launch_sandbox(
        &self,
        /// A name for the sandbox (at most 128 characters).
        #[schemars(length(max = MAX_NAME_CHARS))]
        sandbox_name: String,
        /// The kind of sandbox (at most 128 characters).
        #[arg(default = "eval")]
        #[schemars(length(max = MAX_NAME_CHARS))]
        variant: String,
        ctx: &Context,
    ) -> Result<Sandbox, ToolError> {
        short("sandbox_name", &sandbox_name)?;
        short("variant", &variant)?;
        let mut registry = self.registry()?;
        let space = registry.space(ctx.session_id());
        space.make_room()?;
        space.next += 1;
        let sandbox = Sandbox {
            id: format!("sbx-{}", space.next),
            name: sandbox_name,
            variant,
            status: "running".to_owned(),
        };
        space.sandboxes.push(sandbox.clone());
        Ok(sandbox)
    }

    /// List this session's sandboxes, with their status.
    #[tool(title = "List Sandboxes", read_only, idempotent, open_world = false)]
    fn list_sandboxes(&self, ctx: &Context) -> Result<Vec<Sandbox>, ToolError> {
        let mut registry = self.registry()?;
        let space = registry.existing(&ctx.session_id());
        Ok(space.map(|s| s.sandboxes.clone()).unwrap_or_default())
    }

    /// Stop one of this session's sandboxes. Stopping a stopped sandbox changes nothing.
    #[tool(title = "Stop Sandbox", destructive, idempotent)]
    fn stop_sandbox(
        &self,
        /// The sandbox's id, as `launch_sandbox` returned it.
        id: String,
        ctx: &Context,
    ) -> Result<Sandbox, ToolError> {
        let mut registry = self.registry()?;
        let sandbox = registry
            .existing(&ctx.session_id())
            .and_then(|space| space.sandboxes.iter_mut().find(|s| s.id == id))
            .ok_or_else(|| ToolError::new(format!("this session has no sandbox with id {id}")))?;
        sandbox.status = "stopped".to_owned();
        Ok(sandbox.clone())
    }
}

impl Sandboxes {
    fn registry(&self) -> Result<MutexGuard<'_, Registry>, ToolError> {
        self.registry
            .lock()
            .map_err(|_| ToolError::new("the sandbox registry is poisoned"))
    }
}

#[cfg(test)]
mod tests {
    use plugin_api::{json, testing::PluginTest};

    use super::*;

    fn launch(test: &PluginTest, name: &str) -> plugin_api::testing::Call {
        test.call("launch_sandbox", json!({"sandbox_name": name}))
    }

    #[test]
    fn each_session_sees_and_stops_only_its_own_sandboxes() {
        let a = PluginTest::new::<Sandboxes>().with_session("a");
        assert_eq!(launch(&a, "mine").value()["id"], "sbx-1");
        // One plugin instance: `with_session` changes the session of the calls that follow.
        let b = a.with_session("b");
        assert_eq!(b.call("list_sandboxes", json!({})).value(), json!([]));
        assert_eq!(
            b.call("stop_sandbox", json!({"id": "sbx-1"}))
                .error()
                .message(),
            "this session has no sandbox with id sbx-1"
        );
        let a = b.with_session("a");
        let listed = a.call("list_sandboxes", json!({})).value();
        assert_eq!(listed[0]["name"], "mine");
        assert_eq!(listed[0]["status"], "running");
    }

    #[test]
    fn requests_outside_a_session_share_one_space() {
        let stateless = PluginTest::new::<Sandboxes>();
        launch(&stateless, "shared");
        let listed = stateless.call("list_sandboxes", json!({})).value();
        assert_eq!(listed[0]["name"], "shared");
        let in_session = stateless.with_session("a");
        assert_eq!(
            in_session.call("list_sandboxes", json!({})).value(),
            json!([])
        );
    }

    #[test]
    fn a_session_keeps_at_most_the_maximum_and_forgets_stopped_ones_first() {
        let test = PluginTest::new::<Sandboxes>().with_session("a");
        for n in 1..=MAX_SANDBOXES {
            assert_eq!(launch(&test, "s").value()["id"], format!("sbx-{n}"));
        }
        let refused = launch(&test, "one too many");
        assert_eq!(
            refused.error().message(),
            "this session has 32 sandboxes running, the most it may have: stop one first"
        );
        test.call("stop_sandbox", json!({"id": "sbx-2"})).value();
        assert_eq!(launch(&test, "again").value()["id"], "sbx-33");
        let listed = test.call("list_sandboxes", json!({})).value();
        let ids: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), MAX_SANDBOXES);
        assert!(!ids.contains(&"sbx-2") && ids.contains(&"sbx-33"));
    }

    #[test]
    fn long_names_are_refused_and_the_schema_says_the_bound() {
        let test = PluginTest::new::<Sandboxes>();
        let schema = test
            .tool("launch_sandbox")
            .unwrap()
            .input_schema
            .clone()
            .unwrap();
        assert_eq!(
            schema["properties"]["sandbox_name"]["maxLength"],
            json!(MAX_NAME_CHARS)
        );
        assert_eq!(
            schema["properties"]["variant"]["maxLength"],
            json!(MAX_NAME_CHARS)
        );
        let long = "é".repeat(MAX_NAME_CHARS + 1);
        assert_eq!(
            launch(&test, &long).error().message(),
            "argument `sandbox_name`: 129 characters, longer than the maximum of 128"
        );
        assert_eq!(
            launch(&test, &"é".repeat(MAX_NAME_CHARS)).value()["id"],
            "sbx-1"
        );
    }

    #[test]
    fn the_least_recently_used_session_is_forgotten_beyond_the_maximum() {
        let mut registry = Registry::default();
        for n in 0..MAX_SESSIONS {
            registry.space(Some(format!("s{n}"))).next = 1;
        }
        registry.existing(&Some("s0".to_owned()));
        registry.space(None);
        assert_eq!(registry.spaces.len(), MAX_SESSIONS);
        assert!(registry.spaces.contains_key(&Some("s0".to_owned())));
        assert!(!registry.spaces.contains_key(&Some("s1".to_owned())));
    }
}
