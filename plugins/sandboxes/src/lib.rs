//! `sandboxes`: the seeds' example, with sandboxes kept in the plugin's memory.
//!
//! It shows the authoring API with state: the plugin type holds a registry behind a mutex,
//! tools take `&self`, and each returns a typed record. Nothing is launched for real.

use std::sync::Mutex;

use plugin_api::{ToolError, plugin};
use serde::Serialize;

/// A sandbox as this plugin records it.
#[derive(Debug, Clone, Serialize)]
pub struct Sandbox {
    /// Its identifier, `sbx-N`.
    pub id: String,
    /// The name it was launched with.
    pub name: String,
    /// The variant it runs.
    pub variant: String,
    /// `running` or `stopped`.
    pub status: String,
}

/// The plugin's state: every sandbox launched since the host started.
#[derive(Debug, Default)]
pub struct Sandboxes {
    sandboxes: Mutex<Vec<Sandbox>>,
}

/// Sandboxes for a session to run code in. An example of the plugin API with in-memory state:
/// sandboxes live in the plugin's memory and nothing is launched for real.
#[plugin(toolset(
    name = "sandboxes",
    title = "Sandboxes",
    description = "Launch, list and stop sandboxes (an in-memory example of the plugin API)",
    instructions = "Launch a sandbox with launch_sandbox before running code; stop it when done.",
))]
impl Sandboxes {
    /// Launch a sandbox for this session to run code in.
    #[tool(title = "Launch Sandbox")]
    fn launch_sandbox(
        &self,
        /// A name for the sandbox.
        sandbox_name: String,
        /// The kind of sandbox.
        #[arg(default = "eval")]
        variant: String,
    ) -> Result<Sandbox, ToolError> {
        let mut sandboxes = self
            .sandboxes
            .lock()
            .map_err(|_| ToolError::new("the sandbox registry is poisoned"))?;
        let sandbox = Sandbox {
            id: format!("sbx-{}", sandboxes.len() + 1),
            name: sandbox_name,
            variant,
            status: "running".to_owned(),
        };
        sandboxes.push(sandbox.clone());
        Ok(sandbox)
    }

    /// List the sandboxes launched so far, with their status.
    #[tool(title = "List Sandboxes", read_only, idempotent, open_world = false)]
    fn list_sandboxes(&self) -> Result<Vec<Sandbox>, ToolError> {
        let sandboxes = self
            .sandboxes
            .lock()
            .map_err(|_| ToolError::new("the sandbox registry is poisoned"))?;
        Ok(sandboxes.clone())
    }

    /// Stop a sandbox. Stopping a stopped sandbox changes nothing.
    #[tool(title = "Stop Sandbox", destructive, idempotent)]
    fn stop_sandbox(
        &self,
        /// The sandbox's id, as `launch_sandbox` returned it.
        id: String,
    ) -> Result<Sandbox, ToolError> {
        let mut sandboxes = self
            .sandboxes
            .lock()
            .map_err(|_| ToolError::new("the sandbox registry is poisoned"))?;
        let sandbox = sandboxes
            .iter_mut()
            .find(|s| s.id == id)
            .ok_or_else(|| ToolError::new(format!("no sandbox has id {id}")))?;
        sandbox.status = "stopped".to_owned();
        Ok(sandbox.clone())
    }
}
