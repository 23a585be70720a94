//! `sandboxes`: the seeds' example, with sandboxes kept in the plugin's memory.
//!
//! It shows the authoring API with state: the plugin type holds a registry behind a mutex,
//! tools take `&self` and the call's [`Context`], and each returns a typed record. Nothing is
//! launched for real.
//!
//! Each client has its own sandboxes, keyed by [`Context::client_key`] and the optional `space`
//! argument: a 2025-11-25 client by its MCP session, an authenticated client by its name (in
//! both protocol eras), and a client the server cannot tell apart from others (a 2026-07-28
//! client or a `--stateless` server, without authentication) by the `space` it chooses; such
//! clients that choose none share one set. Everything is bounded, since the plugin is not told
//! when a client goes: [`MAX_SANDBOXES`] per space, names, variants and spaces of at most
//! [`MAX_NAME_CHARS`] characters (the input schema says so with `maxLength`), and at most
//! [`MAX_SPACES`] spaces, the least recently used one forgotten to make room for a new one.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use plugin_api::{ClientKey, Context, ToolError, plugin};
use serde::Serialize;

/// The most sandboxes one space keeps. A launch beyond it forgets the space's oldest stopped
/// sandbox, or is refused while all of them run.
pub const MAX_SANDBOXES: usize = 32;

/// The longest sandbox name, variant or space, in characters (JSON Schema's `maxLength` counts
/// characters): a name is a label, and 128 leaves room for any a person would type.
pub const MAX_NAME_CHARS: usize = 128;

/// The most spaces whose sandboxes are kept; a new space's first launch beyond it forgets the
/// sandboxes of the space least recently used. With the bounds above, the registry stays
/// within a few tens of MiB whatever clients do.
pub const MAX_SPACES: usize = 1024;

/// A sandbox as this plugin records it.
#[derive(Debug, Clone, Serialize)]
pub struct Sandbox {
    /// Its identifier, `sbx-N`, unique within its space.
    pub id: String,
    /// The name it was launched with.
    pub name: String,
    /// The variant it runs.
    pub variant: String,
    /// `running` or `stopped`.
    pub status: String,
}

/// The plugin's state: each space's sandboxes.
#[derive(Debug, Default)]
pub struct Sandboxes {
    registry: Mutex<Registry>,
}

/// Whose sandboxes: the client as the server knows it (none when it cannot tell), and the
/// space the client chose (none when it chose none).
type SpaceKey = (Option<ClientKey>, Option<String>);

/// Every space's sandboxes, and a clock that orders their use.
#[derive(Debug, Default)]
struct Registry {
    spaces: HashMap<SpaceKey, Space>,
    /// Counts uses, so the least recently used space can be found.
    clock: u64,
}

/// One space's sandboxes.
#[derive(Debug, Default)]
struct Space {
    sandboxes: Vec<Sandbox>,
    /// The number the next sandbox's id gets.
    next: u64,
    /// The registry's clock when it was last used.
    used: u64,
}

impl Registry {
    /// The space `key`, if it has sandboxes, marked as used now.
    fn existing(&mut self, key: &SpaceKey) -> Option<&mut Space> {
        self.clock += 1;
        let now = self.clock;
        let space = self.spaces.get_mut(key)?;
        space.used = now;
        Some(space)
    }

    /// The space `key`, made if need be (forgetting the least recently used one when there are
    /// [`MAX_SPACES`]), marked as used now.
    fn space(&mut self, key: SpaceKey) -> &mut Space {
        if !self.spaces.contains_key(&key) && self.spaces.len() >= MAX_SPACES {
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
        let space = self.spaces.entry(key).or_default();
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
                "this space has {MAX_SANDBOXES} sandboxes running, the most it may have: \
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

/// The space of a call: the client as the server knows it, and the space it chose, checked.
fn space_key(space: Option<String>, ctx: &Context) -> Result<SpaceKey, ToolError> {
    if let Some(space) = &space {
        short("space", space)?;
    }
    Ok((ctx.client_key(), space))
}

/// Sandboxes for a client to run code in. An example of the plugin API with in-memory state:
/// sandboxes live in the plugin's memory, apart for each client, and nothing is launched for
/// real.
#[plugin(toolset(
    name = "sandboxes",
    title = "Sandboxes",
    description = "Launch, list and stop sandboxes, each client its own (an in-memory example of the plugin API)",
    instructions = "Launch a sandbox with launch_sandbox before running code; stop it when done.",
))]
impl Sandboxes {
    /// Launch a sandbox to run code in.
    ///
    /// Each client has its own sandboxes: by its MCP session, else by its authenticated name,
    /// else by the `space` it names (clients naming none share one set). A space keeps at most
    /// 32 sandboxes: a launch beyond forgets its oldest stopped one, and is refused while all 32
    /// run. Names, variants and spaces are at most 128 characters.
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
        /// Keeps your sandboxes apart where the server cannot tell clients apart (no session,
        /// no authentication): any name you choose, the same on every call (at most 128
        /// characters).
        #[schemars(length(max = MAX_NAME_CHARS))]
        space: Option<String>,
        ctx: &Context,
    ) -> Result<Sandbox, ToolError> {
        short("sandbox_name", &sandbox_name)?;
        short("variant", &variant)?;
        let key = space_key(space, ctx)?;
        let mut registry = self.registry()?;
        let space = registry.space(key);
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

    /// List this client's sandboxes, with their status.
    #[tool(title = "List Sandboxes", read_only, idempotent, open_world = false)]
    fn list_sandboxes(
        &self,
        /// The space named at launch, if any.
        #[schemars(length(max = MAX_NAME_CHARS))]
        space: Option<String>,
        ctx: &Context,
    ) -> Result<Vec<Sandbox>, ToolError> {
        let key = space_key(space, ctx)?;
        let mut registry = self.registry()?;
        let space = registry.existing(&key);
        Ok(space.map(|s| s.sandboxes.clone()).unwrap_or_default())
    }

    /// Stop one of this client's sandboxes. Stopping a stopped sandbox changes nothing.
    #[tool(title = "Stop Sandbox", destructive, idempotent)]
    fn stop_sandbox(
        &self,
        /// The sandbox's id, as `launch_sandbox` returned it.
        id: String,
        /// The space named at launch, if any.
        #[schemars(length(max = MAX_NAME_CHARS))]
        space: Option<String>,
        ctx: &Context,
    ) -> Result<Sandbox, ToolError> {
        let key = space_key(space, ctx)?;
        let mut registry = self.registry()?;
        let sandbox = registry
            .existing(&key)
            .and_then(|space| space.sandboxes.iter_mut().find(|s| s.id == id))
            .ok_or_else(|| ToolError::new(format!("you have no sandbox with id {id}")))?;
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
            "you have no sandbox with id sbx-1"
        );
        let a = b.with_session("a");
        let listed = a.call("list_sandboxes", json!({})).value();
        assert_eq!(listed[0]["name"], "mine");
        assert_eq!(listed[0]["status"], "running");
    }

    #[test]
    fn clients_without_session_or_name_share_one_space_unless_they_choose_one() {
        let stateless = PluginTest::new::<Sandboxes>();
        launch(&stateless, "shared");
        let mine = stateless.call(
            "launch_sandbox",
            json!({"sandbox_name": "mine", "space": "ada-7f3"}),
        );
        assert_eq!(mine.value()["id"], "sbx-1");
        let listed = stateless.call("list_sandboxes", json!({"space": "ada-7f3"}));
        assert_eq!(listed.value()[0]["name"], "mine");
        let shared = stateless.call("list_sandboxes", json!({})).value();
        assert_eq!(shared.as_array().unwrap().len(), 1, "{shared}");
        assert_eq!(shared[0]["name"], "shared");
        let in_session = stateless.with_session("a");
        assert_eq!(
            in_session.call("list_sandboxes", json!({})).value(),
            json!([])
        );
    }

    #[test]
    fn an_authenticated_client_keeps_its_sandboxes_without_a_session() {
        let ada = PluginTest::new::<Sandboxes>().with_caller("ada", Vec::<String>::new());
        launch(&ada, "ada's");
        let bob = ada.with_caller("bob", Vec::<String>::new());
        assert_eq!(bob.call("list_sandboxes", json!({})).value(), json!([]));
        let ada = bob.with_caller("ada", Vec::<String>::new());
        let listed = ada.call("list_sandboxes", json!({})).value();
        assert_eq!(listed[0]["name"], "ada's");
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
            "this space has 32 sandboxes running, the most it may have: stop one first"
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
    fn the_least_recently_used_space_is_forgotten_beyond_the_maximum() {
        let session = |n: usize| (Some(ClientKey::Session(format!("s{n}"))), None);
        let mut registry = Registry::default();
        for n in 0..MAX_SPACES {
            registry.space(session(n)).next = 1;
        }
        registry.existing(&session(0));
        registry.space((None, None));
        assert_eq!(registry.spaces.len(), MAX_SPACES);
        assert!(registry.spaces.contains_key(&session(0)));
        assert!(!registry.spaces.contains_key(&session(1)));
    }
}
